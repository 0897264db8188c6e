import type { Command } from 'commander';
import { emit, inr, when } from '../render.js';
import type { Io } from '../io.js';
import { intArg, managementClient, withClientOptions, type ClientFlags } from '../options.js';
import type { AccountView, ListOf } from './types.js';

export function registerAccountCommands(program: Command, io: Io): void {
  const accounts = program.command('accounts').description('create and list accounts (admin key)');

  withClientOptions(accounts.command('create').description('create an account'))
    .requiredOption('--email <email>', 'email address (unique)')
    .requiredOption('--name <name>', 'display name')
    .option('--password <password>', 'password for session login (8+ characters); without it the account uses keys only')
    .option('--role <role>', 'user or admin', 'user')
    .action(async (flags: ClientFlags & { email: string; name: string; password?: string; role: string }) => {
      const body: Record<string, string> = { email: flags.email, name: flags.name, role: flags.role };
      if (flags.password !== undefined) body.password = flags.password;
      const account = await (await managementClient(flags, io)).post<AccountView>('/api/management/accounts', body);
      await emit(io, flags.json, account, (ui) => (
        <>
          <ui.Success message={`account ${account.email} created`} />
          <ui.Details entries={[['id', account.id], ['name', account.name], ['role', account.role], ['balance', inr(account.balance)]]} />
        </>
      ));
    });

  withClientOptions(accounts.command('list').description('list accounts'))
    .option('--limit <n>', 'rows to show', intArg(1, 1000), 100)
    .option('--offset <n>', 'rows to skip', intArg(0, Number.MAX_SAFE_INTEGER), 0)
    .action(async (flags: ClientFlags & { limit: number; offset: number }) => {
      const list = await (await managementClient(flags, io)).get<ListOf<AccountView>>('/api/management/accounts', { limit: flags.limit, offset: flags.offset });
      await emit(io, flags.json, list, (ui) => (
        <ui.Table
          rows={list.data}
          empty="no accounts"
          columns={[
            { title: 'ID', value: (a) => a.id },
            { title: 'EMAIL', value: (a) => a.email },
            { title: 'NAME', value: (a) => a.name },
            { title: 'ROLE', value: (a) => a.role },
            { title: 'BALANCE', value: (a) => inr(a.balance), align: 'right' },
            { title: 'CREATED', value: (a) => when(a.created_at) },
          ]}
        />
      ));
    });
}
