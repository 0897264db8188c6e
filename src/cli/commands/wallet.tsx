import type { Command } from 'commander';
import { emit, inr, when } from '../render.js';
import type { Io } from '../io.js';
import { inrArg, intArg, managementClient, withClientOptions, type ClientFlags } from '../options.js';
import type { LedgerView, ListOf } from './types.js';

interface TopupResult {
  topup: LedgerView;
  balance: number;
  replayed: boolean;
}

const accountPath = (email: string): string => `/api/management/accounts/${encodeURIComponent(email)}`;

export function registerWalletCommands(program: Command, io: Io): void {
  const wallet = program.command('wallet').description('top up wallets and read balances');

  withClientOptions(wallet.command('topup').description('add INR to an account\'s wallet (admin key)'))
    .requiredOption('--email <email>', 'the account')
    .requiredOption('--amount <inr>', 'amount in INR, up to 6 decimals', inrArg)
    .option('--reference <ref>', 'idempotency reference: a retried top-up with the same reference applies once')
    .option('--note <text>', 'note kept in the ledger')
    .action(async (flags: ClientFlags & { email: string; amount: number; reference?: string; note?: string }) => {
      const body: Record<string, unknown> = { amount: flags.amount };
      if (flags.note !== undefined) body.note = flags.note;
      const headers: Record<string, string> = flags.reference ? { 'idempotency-key': flags.reference } : {};
      const result = await (await managementClient(flags, io)).post<TopupResult>(`${accountPath(flags.email)}/topups`, body, headers);
      await emit(io, flags.json, result, (ui) => (
        <>
          <ui.Success
            message={result.replayed ? `top-up ${flags.reference} was already applied; nothing changed` : `added ${inr(result.topup.amount)} to ${flags.email}`}
          />
          <ui.Details entries={[['balance', inr(result.balance)], ['ledger entry', String(result.topup.id)], ['reference', result.topup.reference ?? '—']]} />
        </>
      ));
    });

  withClientOptions(wallet.command('balance').description('show an account\'s balance'))
    .option('--email <email>', 'the account (default: the key\'s own account)')
    .action(async (flags: ClientFlags & { email?: string }) => {
      const result = await (await managementClient(flags, io)).get<{ account_id: string; email: string; balance: number }>(`${accountPath(flags.email ?? 'me')}/balance`);
      await emit(io, flags.json, result, (ui) => <ui.Details entries={[['account', result.email], ['balance', inr(result.balance)]]} />);
    });

  withClientOptions(wallet.command('ledger').description('list an account\'s ledger entries, newest first'))
    .option('--email <email>', 'the account (default: the key\'s own account)')
    .option('--limit <n>', 'rows to show', intArg(1, 1000), 50)
    .action(async (flags: ClientFlags & { email?: string; limit: number }) => {
      const list = await (await managementClient(flags, io)).get<ListOf<LedgerView>>(`${accountPath(flags.email ?? 'me')}/ledger`, { limit: flags.limit });
      await emit(io, flags.json, list, (ui) => (
        <ui.Table
          rows={list.data}
          empty="no ledger entries"
          columns={[
            { title: 'ID', value: (e) => String(e.id), align: 'right' },
            { title: 'TIME', value: (e) => when(e.created_at) },
            { title: 'KIND', value: (e) => e.kind },
            { title: 'AMOUNT', value: (e) => inr(e.amount), align: 'right' },
            { title: 'BALANCE', value: (e) => inr(e.balance_after), align: 'right' },
            { title: 'REFERENCE', value: (e) => e.reference ?? '' },
          ]}
        />
      ));
    });
}
