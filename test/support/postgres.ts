import postgres from 'postgres';
import t from 'tap';
import { connectPostgres, migratePostgres, type PgSql } from '../../src/store/pg/db.js';
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
