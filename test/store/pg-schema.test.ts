import t from 'tap';
import { MigrationError } from '../../src/store/db.js';
import { connectPostgres, latestPgVersion, migratePostgres, pgSchemaVersion, type PgSql } from '../../src/store/pg/db.js';
import { PG_MIGRATIONS } from '../../src/store/pg/migrations.js';
import { postgresSkipReason, scratchDatabase, scratchForFile, type ScratchDatabase } from '../support/postgres.js';

/**
 * The PostgreSQL schema (issue 16): migrations applied once when daemons start together, a
 * newer database refused, and the money invariants enforced by the database itself.
 */

const skip = postgresSkipReason();
let db: ScratchDatabase;
let sql: PgSql;
scratchForFile({ max: 4, migrate: false }, async (database, pool) => {
  db = database;
  sql = pool;
});

t.test('three daemons starting together: each migration applied once', { skip }, async (t) => {
  const daemons = [connectPostgres(db.url, { max: 1 }), connectPostgres(db.url, { max: 1 }), connectPostgres(db.url, { max: 1 })];
  t.teardown(() => Promise.all(daemons.map((daemon) => daemon.end({ timeout: 2 }))));
  const results = await Promise.all(daemons.map((daemon) => migratePostgres(daemon)));
  t.same(results.map((r) => r.applied).flat(), PG_MIGRATIONS.map((m) => m.version), 'every version applied by exactly one of them');
  t.equal(await pgSchemaVersion(sql), latestPgVersion());
  t.same((await migratePostgres(sql)).applied, [], 'a later start has nothing to do');
  const rows = await sql<Array<{ version: number }>>`SELECT version FROM schema_migrations ORDER BY version`;
  t.same(rows.map((r) => r.version), PG_MIGRATIONS.map((m) => m.version), 'one row per version');
});

t.test('a database newer than the code is refused', { skip }, async (t) => {
  const newer = [...PG_MIGRATIONS, { version: latestPgVersion() + 1, name: 'from the future', sql: 'CREATE TABLE future (id int)' }];
  const scratch = await scratchDatabase();
  const other = connectPostgres(scratch.url, { max: 1 });
  t.teardown(async () => {
    await other.end({ timeout: 2 });
    await scratch.drop();
  });
  await migratePostgres(other, newer);
  await t.rejects(migratePostgres(other), MigrationError);
  await t.rejects(migratePostgres(other), new RegExp(`database schema version ${latestPgVersion() + 1} is newer than this gateway knows \\(${latestPgVersion()}\\)`));
});

t.test('the database enforces the money invariants', { skip }, async (t) => {
  const now = Date.now();
  await sql`INSERT INTO accounts (id, email, name, role, balance_micros, created_at, updated_at) VALUES ('acc_1', 'Team@Example.com', 'Team', 'user', 0, ${now}, ${now})`;
  await t.rejects(sql`INSERT INTO accounts (id, email, name, role, created_at, updated_at) VALUES ('acc_2', 'team@example.COM', 'Dup', 'user', ${now}, ${now})`, { code: '23505' }, 'one account per e-mail, whatever its case');

  // A top-up: balance and ledger entry in one transaction; bigint µINR beyond 2^31.
  const big = 5_000_000_000_000; // ₹5,000,000
  await sql.begin(async (tx) => {
    await tx`UPDATE accounts SET balance_micros = balance_micros + ${big} WHERE id = 'acc_1'`;
    await tx`INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, reference, created_at) VALUES ('acc_1', 'topup', ${big}, ${big}, 'PO-1', ${now})`;
  });
  const [account] = await sql<Array<{ balance_micros: number }>>`SELECT balance_micros FROM accounts WHERE id = 'acc_1'`;
  t.equal(account?.balance_micros, big, 'bigint money read back exactly, as a number');
  await t.rejects(sql`INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, reference, created_at) VALUES ('acc_1', 'topup', 1, ${big + 1}, 'PO-1', ${now})`, { code: '23505' }, 'one top-up per reference');

  await sql`INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, request_id, created_at) VALUES ('acc_1', 'charge', -100, ${big - 100}, 'req_1', ${now})`;
  await t.rejects(sql`INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, request_id, created_at) VALUES ('acc_1', 'charge', -100, ${big - 200}, 'req_1', ${now})`, { code: '23505' }, 'one charge per request id');
  await t.rejects(sql`INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, created_at) VALUES ('acc_1', 'charge', 5, 0, ${now})`, { code: '23514' }, 'a charge is never positive');

  await t.rejects(sql`UPDATE ledger SET amount_micros = 0`, /ledger is append-only/, 'no update');
  await t.rejects(sql`DELETE FROM ledger`, /ledger is append-only/, 'no delete');
  await t.rejects(sql`TRUNCATE ledger`, /ledger is append-only/, 'no truncate');
  const [{ count } = { count: 0 }] = await sql<Array<{ count: number }>>`SELECT count(*)::bigint AS count FROM ledger`;
  t.equal(count, 2, 'both entries still there');

  await t.rejects(sql`INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, created_at) VALUES ('key_1', 'acc_1', 'k', 'h', 'm', 0, ${now})`, { code: '23514' }, 'rate limit within 1..10000');
  await t.rejects(sql`INSERT INTO usage (request_id, account_id, model, provider, endpoint, unit, status, latency_ms, created_at) VALUES ('r', 'acc_1', 'm', 'p', 'e', 'bytes', 200, 1, ${now})`, { code: '23514' }, 'a known billing unit');
});
