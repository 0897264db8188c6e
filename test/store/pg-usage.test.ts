import t from 'tap';
import { openDatabase } from '../../src/store/db.js';
import { UsageRepo, type NewUsage, type UsageFilter, type UsageRecord } from '../../src/store/usage.js';
import { connectPostgres, migratePostgres, type PgSql } from '../../src/store/pg/db.js';
import { PgUsage } from '../../src/store/pg/usage.js';
import { PgLedger } from '../../src/store/pg/ledger.js';
import { postgresSkipReason, scratchForFile, type ScratchDatabase } from '../support/postgres.js';

/** Usage rows on PostgreSQL answer every query exactly as the SQLite repo does on the same rows. */

const skip = postgresSkipReason();
let db: ScratchDatabase;
let sql: PgSql;
scratchForFile({ max: 2, migrate: true }, async (database, pool) => {
  db = database;
  sql = pool;
});

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 20, 23, 0, 0); // 23:00 UTC: calls an hour apart cross midnight

function rows(): NewUsage[] {
  const out: NewUsage[] = [];
  for (let i = 0; i < 40; i++) {
    const row: NewUsage = {
      requestId: `req_${i}`,
      accountId: i % 3 === 0 ? 'acc_b' : 'acc_a',
      apiKeyId: i % 4 === 0 ? null : `key_${i % 2}`,
      model: ['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5', 'openai/tts-1'][i % 3] as string,
      provider: i % 3 === 1 ? 'anthropic' : 'openai',
      endpoint: i % 3 === 2 ? 'audio.speech' : 'chat.completions',
      stream: i % 2 === 0,
      inputTokens: 10 * i,
      outputTokens: 3 * i,
      cacheReadTokens: i % 5,
      cacheWriteTokens: i % 7,
      costMicros: 1000 + 37 * i,
      unchargedMicros: i === 7 ? 12 : 0,
      status: i % 9 === 0 ? 502 : 200,
      errorType: i % 9 === 0 ? 'upstream_error' : null,
      latencyMs: 5 + i,
      createdAt: T0 + i * 3_600_000,
    };
    if (i % 3 === 2) {
      row.unit = 'characters';
      row.units = 100 + i;
    }
    if (i % 5 === 0) {
      row.cache = i % 10 === 0 ? 'semantic' : 'exact';
      row.cacheSimilarity = i % 10 === 0 ? 0.975 : null;
      row.cacheSavedMicros = 500 + i;
    }
    out.push(row);
  }
  return out;
}

const withoutId = (records: UsageRecord[]) => records.map(({ id: _id, ...rest }) => rest);

t.test('the same answers as SQLite: rows, filters, paging, totals, days, tops', { skip }, async (t) => {
  const sqlite = openDatabase(':memory:');
  t.teardown(() => sqlite.close());
  const now = Date.now();
  for (const id of ['acc_a', 'acc_b']) {
    sqlite.prepare("INSERT INTO accounts (id, email, name, role, created_at, updated_at) VALUES (?, ?, ?, 'user', ?, ?)").run(id, `${id}@x.com`, id, now, now);
    await sql`INSERT INTO accounts (id, email, name, role, created_at, updated_at) VALUES (${id}, ${`${id}@x.com`}, ${id}, 'user', ${now}, ${now})`;
  }
  for (const [key, account] of [['key_0', 'acc_a'], ['key_1', 'acc_a']] as const) {
    sqlite.prepare('INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, created_at) VALUES (?, ?, ?, ?, ?, 100, ?)').run(key, account, key, `h-${key}`, 'm', now);
    await sql`INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, created_at) VALUES (${key}, ${account}, ${key}, ${`h-${key}`}, 'm', 100, ${now})`;
  }
  const lite = new UsageRepo(sqlite);
  const pg = new PgUsage(sql);
  const input = rows();
  const liteRows = input.map((row) => lite.insert(row));
  const pgRows = await pg.insertMany(input);
  t.same(withoutId(pgRows), withoutId(liteRows), 'inserted rows read back the same (booleans, units, cache fields)');
  t.ok(await pg.has('req_3'));
  t.notOk(await pg.has('req_nope'));
  await t.rejects(pg.insertMany([input[0] as NewUsage]), { code: '23505' }, 'one row per request id');
  // The settlement's statement (charges and usage rows in one, PgLedger.chargeMany) writes the
  // rows as the repo does: every column, the table's defaults filled alike.
  const settled = input.map((row) => ({ ...row, requestId: `settled_${row.requestId}` }));
  const settledRows = await new PgLedger(sql).chargeMany(
    settled.map((row) => ({ accountId: row.accountId, amountMicros: row.costMicros, requestId: row.requestId, apiKeyId: row.apiKeyId, now: row.createdAt })),
    settled,
  );
  t.same(
    withoutId(settledRows),
    withoutId(liteRows).map((row) => ({ ...row, requestId: `settled_${row.requestId}` })),
    "the settlement's rows read back the same",
  );
  await sql`DELETE FROM usage WHERE request_id LIKE 'settled_%'`;

  const filters: UsageFilter[] = [
    { limit: 100 },
    { limit: 5 },
    { accountId: 'acc_a', limit: 100 },
    { apiKeyId: 'key_1', limit: 100 },
    { accountId: 'acc_a', apiKeyId: 'key_0', limit: 100 },
    { model: 'anthropic/claude-haiku-4-5', limit: 100 },
    { since: T0 + 10 * 3_600_000, until: T0 + 20 * 3_600_000, limit: 100 },
    { endpoint: 'audio.speech', limit: 100 },
    { outcome: 'error', limit: 100 },
    { outcome: 'ok', accountId: 'acc_b', limit: 3 },
  ];
  for (const filter of filters) {
    t.same(withoutId(await pg.list(filter)), withoutId(lite.list(filter)), `list ${JSON.stringify(filter)}`);
  }
  // Paging by id: the same pages (ids differ between the stores, positions do not).
  const firstPage = await pg.list({ limit: 7 });
  const next = await pg.list({ limit: 7, before: firstPage.at(-1)?.id as number });
  const liteFirst = lite.list({ limit: 7 });
  t.same(withoutId(next), withoutId(lite.list({ limit: 7, before: liteFirst.at(-1)?.id as number })), 'the second page');

  for (const account of ['acc_a', 'acc_b']) {
    t.same(await pg.totals(account, T0, T0 + 2 * DAY), lite.totals(account, T0, T0 + 2 * DAY), `${account}: totals`);
    t.same(await pg.daily(account, T0 - DAY), lite.daily(account, T0 - DAY), `${account}: per UTC day and model`);
    t.same(await pg.top(account, T0, 'model', 2), lite.top(account, T0, 'model', 2), `${account}: top models`);
    t.same(await pg.top(account, T0, 'key', 5), lite.top(account, T0, 'key', 5), `${account}: top keys (the keyless calls as null)`);
  }
  t.equal((await pg.daily('acc_b', T0 - DAY))[0]?.day, '2026-11-20', 'days in UTC (23:00 UTC is the 20th)');
  t.equal((await pg.daily('acc_a', T0 - DAY))[0]?.day, '2026-11-21', 'and an hour later the 21st');
});
