import type { Command } from 'commander';
import { emit, inr } from '../render.js';
import type { Io } from '../io.js';
import { UsageError } from '../options.js';

/** `gateway db migrate`: an SQLite deployment copied into PostgreSQL, with its money verified. */
export function registerDbCommands(program: Command, io: Io): void {
  const db = program.command('db').description('the gateway\'s database');
  db.command('migrate')
    .description('copy an SQLite database into an empty PostgreSQL database and verify that the money adds up on both sides')
    .requiredOption('--from <path>', 'the SQLite file (the daemon on it stopped)')
    .requiredOption('--to <url>', 'postgres://user:password@host:5432/database (empty)')
    .option('--json', 'print the report as JSON')
    .action(async (flags: { from: string; to: string; json?: boolean }) => {
      if (!/^postgres(ql)?:\/\//.test(flags.to)) throw new UsageError('--to: must be a postgres:// URL');
      // Loaded here: the PostgreSQL driver only for this command.
      // A refusal (a non-empty target, a source that does not add up) exits 1 with its reason.
      const { copySqliteToPostgres } = await import('../../store/pg/copy.js');
      {
        const report = await copySqliteToPostgres(flags.from, flags.to);
        await emit(io, flags.json, report, (ui) => (
          <>
            <ui.Success message={`copied ${flags.from} into PostgreSQL; every balance equals its ledger on both sides`} />
            <ui.Details
              entries={[
                ...report.tables.map(({ table, rows }): [string, string] => [table, `${rows} rows`]),
                ['balances', `${inr(report.balanceMicros / 1e6)} over ${report.accounts} accounts (= the ledger's sum)`],
                ['usage billed', inr(report.usageCostMicros / 1e6)],
              ]}
            />
          </>
        ));
      }
    });
}
