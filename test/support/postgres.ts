import postgres from 'postgres';
import t from 'tap';
import { connectPostgres, migratePostgres, type PgSql } from '../../src/store/pg/db.js';
import { PgLedger } from '../../src/store/pg/ledger.js';
import { PG_ADMIN_URL, scratchDatabase, type ScratchDatabase } from './pg-scratch.js';

export { PG_ADMIN_URL, scratchDatabase, type ScratchDatabase };

/**
 * Tests that need PostgreSQL use the real server at PG_ADMIN_URL (a role that may create
 * databases) and a scratch database of their own, dropped afterwards. When the server is not
 * reachable they are skipped with the reason, except under CI=true, where they run (and fail).
 */

async function reachable(): Promise<boolean> {
  const sql = postgres(PG_ADMIN_URL, { max: 1, connect_timeout: 2, onnotice: () => undefined });
  try {
    await sql`SELECT 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const up = await reachable();

/** `false` to run, or the reason to skip. */
export function postgresSkipReason(): string | false {
  if (up || process.env.CI === 'true') return false;
  return `PostgreSQL is not reachable at ${PG_ADMIN_URL} (set PG_ADMIN_URL; under CI=true this test fails instead)`;
}

/**
 * A scratch database for a whole test file, opened before its tests (skipped when PostgreSQL
 * is unreachable, as postgresSkipReason says) and dropped after: `opened` receives it and a
 * pool of `max` connections, the schema migrated when `migrate` is set.
 */
export function scratchForFile(options: { max: number; migrate: boolean }, opened: (database: ScratchDatabase, sql: PgSql) => void | Promise<void>): void {
  if (postgresSkipReason()) return;
  let database: ScratchDatabase | undefined;
  let sql: PgSql | undefined;
  t.before(async () => {
    database = await scratchDatabase();
    sql = connectPostgres(database.url, { max: options.max });
    if (options.migrate) await migratePostgres(sql);
    await opened(database, sql);
  });
  t.teardown(async () => {
    await sql?.end({ timeout: 2 });
    await database?.drop();
  });
}

/**
 * Two funded wallets for admission's funds tests: acc_a (7 INR) with key_a (a 9 INR budget),
 * acc_b (3 INR) with key_b (no budget).
 */
export async function seedTwoWallets(sql: PgSql): Promise<void> {
  const now = Date.now();
  for (const id of ['acc_a', 'acc_b']) await sql`INSERT INTO accounts (id, email, name, role, created_at, updated_at) VALUES (${id}, ${`${id}@example.com`}, ${id}, 'user', ${now}, ${now})`;
  await sql`INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, budget_micros, created_at) VALUES ('key_a', 'acc_a', 'k', 'hash-a', 'sk-…', 100, 9000000, ${now})`;
  await sql`INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, created_at) VALUES ('key_b', 'acc_b', 'k', 'hash-b', 'sk-…', 100, ${now})`;
  await new PgLedger(sql).credit('topup', { accountId: 'acc_a', amountMicros: 7_000_000, now });
  await new PgLedger(sql).credit('topup', { accountId: 'acc_b', amountMicros: 3_000_000, now });
}
