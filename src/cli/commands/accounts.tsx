import type { Command } from 'commander';
import { emit, inr, when } from '../render.js';
import type { Io } from '../io.js';
import { inrArg, intArg, managementClient, withClientOptions, type ClientFlags } from '../options.js';
import type { AccountView, ListOf } from './types.js';

function accountEntries(account: AccountView): [string, string][] {
  const entries: [string, string][] = [['id', account.id], ['name', account.name], ['role', account.role], ['balance', inr(account.balance)]];
  if (account.spend_limit != null) {
    entries.push(['spend limit', `${inr(account.spend_limit)}${account.spend_period ? ` ${account.spend_period}` : ' (lifetime)'}`], ['spent this period', inr(account.spent_this_period ?? 0)]);
    if (account.period_resets_at) entries.push(['renews', when(account.period_resets_at)]);
  }
  return entries;
}

export function registerAccountCommands(program: Command, io: Io): void {
  const accounts = program.command('accounts').description('create, list and update accounts (admin key)');

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
          <ui.Details entries={accountEntries(account)} />
        </>
      ));
    });

  withClientOptions(accounts.command('update').description("set an account's spend limit: what all of its keys together may spend per period").argument('<account>', 'account id or e-mail'))
    .option('--spend-limit <inr>', 'INR per period (0 removes the limit)', inrArg)
    .option('--spend-period <period>', 'daily, weekly, monthly (governance.timezone) or a duration like 30d; "none": for the account\'s life')
    .action(async (ref: string, flags: ClientFlags & { spendLimit?: number; spendPeriod?: string }) => {
      const body: Record<string, unknown> = {};
      if (flags.spendLimit !== undefined) body.spend_limit = flags.spendLimit;
      if (flags.spendPeriod !== undefined) body.spend_period = flags.spendPeriod === 'none' ? null : flags.spendPeriod;
      const account = await (await managementClient(flags, io)).patch<AccountView>(`/api/management/accounts/${encodeURIComponent(ref)}`, body);
      await emit(io, flags.json, account, (ui) => (
        <>
          <ui.Success message={`account ${account.email} updated`} />
          <ui.Details entries={accountEntries(account)} />
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
            { title: 'SPEND LIMIT', value: (a) => (a.spend_limit != null ? `${inr(a.spent_this_period ?? 0)} of ${inr(a.spend_limit)}${a.spend_period ? `/${a.spend_period}` : ''}` : '-'), align: 'right' },
            { title: 'CREATED', value: (a) => when(a.created_at) },
          ]}
        />
      ));
    });
}
