import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type postgres from 'postgres';
import { journalDir } from '../billing-journal.js';
import { MIGRATIONS } from '../migrations.js';
import { connectPostgres, migratePostgres, type PgSql } from './db.js';

/**
 * `gateway db migrate --from ./data/gateway.db --to postgres://…`: copies an SQLite
 * deployment into an empty PostgreSQL database, in one transaction, and proves the money is
 * the same on both sides (every balance equals its ledger's sum, on each side, and the
 * balances, ledger and usage match row for row in count and sum).
 */

export class CopyRefused extends Error {
  override name = 'CopyRefused';
}

export interface TableCount {
  table: string;
  rows: number;
}

export interface CopyReport {
  tables: TableCount[];
  accounts: number;
  /** Σ balances, µINR (equal on both sides, and equal to Σ ledger). */
  balanceMicros: number;
  ledgerMicros: number;
  usageCostMicros: number;
}

type Row = Record<string, unknown>;

/** Copied in this order (foreign keys), with the columns that change type on the way. */
const TABLES: ReadonlyArray<{ name: string; order: string; booleans?: readonly string[]; identity?: boolean }> = [
  { name: 'accounts', order: 'created_at, id' },
  { name: 'api_keys', order: 'created_at, id', booleans: ['cache'] },
  { name: 'management_keys', order: 'created_at, id' },
  { name: 'ledger', order: 'id', identity: true },
  { name: 'usage', order: 'id', booleans: ['stream'], identity: true },
  { name: 'session_revocations', order: 'jti' },
  { name: 'alerts', order: 'created_at, id' },
];

const BATCH = 1000;

interface Sums {
  accounts: number;
  balanceMicros: number;
  ledgerMicros: number;
  usageCostMicros: number;
  /** Accounts whose balance is not their ledger's sum. */
  mismatched: Array<{ id: string; balance: number; ledger: number }>;
}

export async function copySqliteToPostgres(sqlitePath: string, postgresUrl: string): Promise<CopyReport> {
  if (!existsSync(sqlitePath)) throw new CopyRefused(`--from: no SQLite database at ${sqlitePath}`);
  const pending = pendingJournal(sqlitePath);
  if (pending) throw new CopyRefused(`the billing journal ${pending} holds settled calls not yet in the ledger: start the gateway on ${sqlitePath} once (it applies them) and stop it, then copy`);
  const source = new Database(sqlitePath, { readonly: true, fileMustExist: true });
  let target: PgSql | undefined;
  try {
    const version = (source.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null }).version ?? 0;
    const latest = MIGRATIONS.at(-1)?.version ?? 0;
    if (version !== latest) {
      throw new CopyRefused(
        version < latest
          ? `${sqlitePath} is at schema version ${version}, this gateway's is ${latest}: start the gateway on it once (it migrates), then copy`
          : `${sqlitePath} is at schema version ${version}, newer than this gateway knows (${latest}): copy with the gateway that wrote it`,
      );
    }
    const before = sqliteSums(source);
    if (before.mismatched.length > 0) {
      throw new CopyRefused(`the source does not add up: ${before.mismatched.length} account(s) whose balance is not the sum of their ledger (first: ${describe(before.mismatched[0])}); nothing copied`);
    }
    target = connectPostgres(postgresUrl, { max: 2 });
    await migratePostgres(target);
    const tables: TableCount[] = [];
    const db = target;
    await db.begin(async (tx) => {
      for (const table of TABLES) {
        const [existing] = await tx<Array<{ any: boolean }>>`SELECT EXISTS (SELECT 1 FROM ${tx(table.name)}) AS any`;
        if (existing?.any) throw new CopyRefused(`--to: the PostgreSQL database already holds ${table.name} rows; the copy goes into an empty database only`);
      }
      for (const table of TABLES) {
        let rows = 0;
        let batch: Row[] = [];
        const flush = async (): Promise<void> => {
          if (batch.length === 0) return;
          // Every row of a table has the same columns (SELECT *): the first one's name them.
          const values = batch as Array<Record<string, postgres.ParameterOrJSON<never>>>;
          // Ids kept (identity columns are BY DEFAULT); the sequences move past them below.
          await tx`INSERT INTO ${tx(table.name)} ${tx(values)}`.catch(rethrowPlain);
          rows += batch.length;
          batch = [];
        };
        for (const raw of source.prepare(`SELECT * FROM ${table.name} ORDER BY ${table.order}`).iterate() as IterableIterator<Row>) {
          const row: Row = { ...raw };
          for (const column of table.booleans ?? []) row[column] = row[column] === 1;
          batch.push(row);
          if (batch.length >= BATCH) await flush();
        }
        await flush();
        if (table.identity) await tx.unsafe(`SELECT setval(pg_get_serial_sequence('${table.name}', 'id'), coalesce((SELECT max(id) FROM ${table.name}), 0) + 1, false)`);
        tables.push({ table: table.name, rows });
      }
      // Verified inside the transaction: a difference rolls the whole copy back.
      const after = await postgresSums(tx as unknown as PgSql);
      if (after.mismatched.length > 0) throw new CopyRefused(`after the copy, ${after.mismatched.length} account(s) do not add up in PostgreSQL (first: ${describe(after.mismatched[0])}); rolled back`);
      for (const field of ['accounts', 'balanceMicros', 'ledgerMicros', 'usageCostMicros'] as const) {
        if (after[field] !== before[field]) throw new CopyRefused(`after the copy, ${field} is ${after[field]} in PostgreSQL against ${before[field]} in SQLite; rolled back`);
      }
      for (const { table, rows } of tables) {
        const [count] = await tx<Array<{ n: number }>>`SELECT count(*)::bigint AS n FROM ${tx(table)}`;
        if (count?.n !== rows) throw new CopyRefused(`after the copy, ${table} holds ${count?.n} rows against ${rows}; rolled back`);
      }
    });
    return { tables, accounts: before.accounts, balanceMicros: before.balanceMicros, ledgerMicros: before.ledgerMicros, usageCostMicros: before.usageCostMicros };
  } finally {
    source.close();
    await target?.end({ timeout: 5 });
  }
}

function describe(mismatch: { id: string; balance: number; ledger: number } | undefined): string {
  return mismatch ? `${mismatch.id}: balance ${mismatch.balance} µINR, ledger ${mismatch.ledger} µINR` : '';
}

/** A non-empty journal file next to the database, if any. */
function pendingJournal(sqlitePath: string): string | undefined {
  const dir = journalDir(sqlitePath);
  if (!existsSync(dir)) return undefined;
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.log') || name === 'rejected.log') continue;
    const file = join(dir, name);
    if (statSync(file).size > 0) return file;
  }
  return undefined;
}

function sqliteSums(db: Database.Database): Sums {
  const totals = db
    .prepare(
      `SELECT (SELECT count(*) FROM accounts) AS accounts, (SELECT coalesce(sum(balance_micros), 0) FROM accounts) AS balance,
              (SELECT coalesce(sum(amount_micros), 0) FROM ledger) AS ledger, (SELECT coalesce(sum(cost_micros), 0) FROM usage) AS usage`,
    )
    .get() as { accounts: number; balance: number; ledger: number; usage: number };
  const mismatched = db
    .prepare(
      `SELECT a.id, a.balance_micros AS balance, coalesce(l.total, 0) AS ledger FROM accounts a
       LEFT JOIN (SELECT account_id, sum(amount_micros) AS total FROM ledger GROUP BY account_id) l ON l.account_id = a.id
       WHERE a.balance_micros <> coalesce(l.total, 0)`,
    )
    .all() as Array<{ id: string; balance: number; ledger: number }>;
  return { accounts: totals.accounts, balanceMicros: totals.balance, ledgerMicros: totals.ledger, usageCostMicros: totals.usage, mismatched };
}

async function postgresSums(sql: PgSql): Promise<Sums> {
  const [totals] = await sql<Array<{ accounts: number; balance: number; ledger: number; usage: number }>>`
    SELECT (SELECT count(*) FROM accounts)::bigint AS accounts, (SELECT coalesce(sum(balance_micros), 0) FROM accounts)::bigint AS balance,
           (SELECT coalesce(sum(amount_micros), 0) FROM ledger)::bigint AS ledger, (SELECT coalesce(sum(cost_micros), 0) FROM usage)::bigint AS usage`;
  const mismatched = await sql<Array<{ id: string; balance: number; ledger: number }>>`
    SELECT a.id, a.balance_micros AS balance, coalesce(l.total, 0)::bigint AS ledger FROM accounts a
    LEFT JOIN (SELECT account_id, sum(amount_micros) AS total FROM ledger GROUP BY account_id) l ON l.account_id = a.id
    WHERE a.balance_micros <> coalesce(l.total, 0)`;
  return { accounts: totals?.accounts ?? 0, balanceMicros: totals?.balance ?? 0, ledgerMicros: totals?.ledger ?? 0, usageCostMicros: totals?.usage ?? 0, mismatched: [...mismatched] };
}

/** The driver's errors carry the query; the message is enough (and keeps secrets out of logs). */
function rethrowPlain(error: unknown): never {
  if (error instanceof Error) throw new Error(error.message);
  throw error;
}
