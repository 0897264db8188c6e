import t from 'tap';
import { connectPostgres, migratePostgres, type PgSql } from '../../src/store/pg/db.js';
import { PgKeys } from '../../src/store/pg/accounts.js';
import { PgLedger } from '../../src/store/pg/ledger.js';
import { postgresSkipReason, scratchForFile, type ScratchDatabase } from '../support/postgres.js';

/**
 * The wallet on PostgreSQL: top-ups once per reference and charges once per request id even
 * when three daemons (three pools) race, every balance equal to its ledger's sum, and each
 * account's entries a chain of exact running balances.
 */

const skip = postgresSkipReason();
let db: ScratchDatabase;
let sql: PgSql;
scratchForFile({ max: 4, migrate: true }, async (database, pool) => {
  db = database;
  sql = pool;
  const now = Date.now();
  for (const id of ['acc_a', 'acc_b']) await sql`INSERT INTO accounts (id, email, name, role, created_at, updated_at) VALUES (${id}, ${`${id}@example.com`}, ${id}, 'user', ${now}, ${now})`;
  await sql`INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, created_at) VALUES ('key_a', 'acc_a', 'k', 'hash-a', 'sk-…', 100, ${now})`;
});

async function balance(accountId: string): Promise<number> {
  const [row] = await sql<Array<{ balance_micros: number }>>`SELECT balance_micros FROM accounts WHERE id = ${accountId}`;
  return row?.balance_micros ?? Number.NaN;
}

t.test('a top-up applies once per reference, whatever the race', { skip }, async (t) => {
  const daemons = [connectPostgres(db.url, { max: 3 }), connectPostgres(db.url, { max: 3 }), connectPostgres(db.url, { max: 3 })];
  t.teardown(() => Promise.all(daemons.map((daemon) => daemon.end({ timeout: 2 }))));
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) => new PgLedger(daemons[i % 3] as PgSql).credit('topup', { accountId: 'acc_a', amountMicros: 10_000_000, reference: 'PO-1', now: Date.now() })),
  );
  t.equal(results.filter((r) => !r.replayed).length, 1, 'applied once');
  t.equal(new Set(results.map((r) => r.entry.id)).size, 1, 'every caller sees the one entry');
  t.equal(await balance('acc_a'), 10_000_000);
  await new PgLedger(sql).credit('topup', { accountId: 'acc_b', amountMicros: 5_000_000, now: Date.now() });
  await t.rejects(new PgLedger(sql).credit('topup', { accountId: 'acc_a', amountMicros: 0, now: Date.now() }), RangeError);
  await t.rejects(new PgLedger(sql).credit('topup', { accountId: 'acc_nope', amountMicros: 1, now: Date.now() }), /does not exist/);
});

t.test('settlement batches from three daemons: every charge once, balances = ledgers, exact running balances', { skip }, async (t) => {
  const daemons = [connectPostgres(db.url, { max: 3 }), connectPostgres(db.url, { max: 3 }), connectPostgres(db.url, { max: 3 })];
  t.teardown(() => Promise.all(daemons.map((daemon) => daemon.end({ timeout: 2 }))));
  const before = { a: await balance('acc_a'), b: await balance('acc_b') };
  const charged = { a: 0, b: 0 };
  let spent = 0;
  const batches = Array.from({ length: 60 }, (_, batch) =>
    Array.from({ length: 5 }, (_, i) => {
      const accountId = (batch + i) % 2 === 0 ? 'acc_a' : 'acc_b';
      const amountMicros = 1 + ((batch * 7 + i * 13) % 997);
      if (accountId === 'acc_a') {
        charged.a += amountMicros;
        spent += amountMicros;
      } else charged.b += amountMicros;
      return { accountId, amountMicros, requestId: `req_${batch}_${i}`, ...(accountId === 'acc_a' ? { apiKeyId: 'key_a' } : {}), now: Date.now() };
    }),
  );
  await Promise.all(batches.map((batch, i) => new PgLedger(daemons[i % 3] as PgSql).chargeMany(batch)));
  t.equal(await balance('acc_a'), before.a - charged.a, 'wallet a: exactly its charges');
  t.equal(await balance('acc_b'), before.b - charged.b, 'wallet b: exactly its charges');
  const ledger = new PgLedger(sql);
  t.equal(await ledger.sum('acc_a'), await balance('acc_a'), 'a: balance = ledger sum');
  t.equal(await ledger.sum('acc_b'), await balance('acc_b'), 'b: balance = ledger sum');
  const [key] = await sql<Array<{ spent_micros: number }>>`SELECT spent_micros FROM api_keys WHERE id = 'key_a'`;
  t.equal(key?.spent_micros, spent, 'the key\'s spend');
  for (const account of ['acc_a', 'acc_b']) {
    const entries = await sql<Array<{ amount_micros: number; balance_after_micros: number }>>`SELECT amount_micros, balance_after_micros FROM ledger WHERE account_id = ${account} ORDER BY id`;
    let running = 0;
    let chained = true;
    for (const entry of entries) {
      running += entry.amount_micros;
      if (entry.balance_after_micros !== running) chained = false;
    }
    t.ok(chained, `${account}: every entry's balance_after is the running sum (${entries.length} entries)`);
  }

  // A batch with a request id already charged fails whole: nothing of it applies.
  const now = Date.now();
  const balanceBefore = await balance('acc_a');
  await t.rejects(
    ledger.chargeMany([
      { accountId: 'acc_a', amountMicros: 5, requestId: 'req_new_1', now },
      { accountId: 'acc_a', amountMicros: 5, requestId: 'req_0_0', now },
    ]),
    { code: '23505' },
  );
  t.equal(await balance('acc_a'), balanceBefore, 'rolled back, balance included');
  t.same(await sql`SELECT 1 FROM ledger WHERE request_id = 'req_new_1'`, [], 'no entry of the failed batch');
  await t.rejects(ledger.chargeMany([{ accountId: 'acc_a', amountMicros: -1, requestId: 'req_neg', now }]), RangeError);
  // An account that does not exist fails the batch before its COMMIT (its statements were all sent at once).
  await t.rejects(
    ledger.chargeMany([
      { accountId: 'acc_a', amountMicros: 7, requestId: 'req_missing_1', apiKeyId: 'key_a', now },
      { accountId: 'acc_nope', amountMicros: 7, requestId: 'req_missing_2', now },
    ]),
    /account acc_nope does not exist/,
  );
  t.equal(await balance('acc_a'), balanceBefore, 'rolled back: the existing account is not charged');
  t.same(await sql`SELECT 1 FROM ledger WHERE request_id IN ('req_missing_1', 'req_missing_2')`, [], 'no entry of it');
  t.equal((await ledger.list('acc_a', 2)).length, 2, 'newest first, limited');
});

t.test('last-use updates and settlement batches lock keys in one order: no deadlock between daemons', { skip }, async (t) => {
  // Ids whose byte order differs from a locale's (upper and lower case mixed), as real key ids' do.
  const ids = ['key_Zq', 'key_aB', 'key_Mx', 'key_bA', 'key_Cc', 'key_zz'];
  const now = Date.now();
  for (const id of ids) await sql`INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, created_at) VALUES (${id}, 'acc_b', 'k', ${`hash-${id}`}, 'sk-…', 100, ${now})`;
  const daemons = [connectPostgres(db.url, { max: 3 }), connectPostgres(db.url, { max: 3 }), connectPostgres(db.url, { max: 3 })];
  t.teardown(() => Promise.all(daemons.map((daemon) => daemon.end({ timeout: 2 }))));
  const [{ spent: before = 0 } = {}] = await sql<Array<{ spent: number }>>`SELECT coalesce(sum(spent_micros), 0)::bigint AS spent FROM api_keys WHERE id = ANY(${ids}::text[])`;
  let charged = 0;
  const work: Promise<unknown>[] = [];
  for (let round = 0; round < 60; round++) {
    const pool = daemons[round % 3] as PgSql;
    const batch = ids.map((apiKeyId, i) => ({ accountId: 'acc_b', apiKeyId, amountMicros: 1 + i, requestId: `touch_${round}_${i}`, now }));
    charged += batch.reduce((sum, input) => sum + input.amountMicros, 0);
    work.push(new PgLedger(pool).chargeMany(batch));
    // Another daemon's last-use flush, its keys in another order each time.
    const order = round % 2 === 0 ? [...ids].reverse() : [...ids.slice(3), ...ids.slice(0, 3)];
    work.push(new PgKeys(daemons[(round + 1) % 3] as PgSql, 'api').touchMany(order.map((id, i) => [id, now + round * 10 + i])));
  }
  const results = await Promise.allSettled(work);
  const failures = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected').map((result) => String(result.reason));
  t.same(failures, [], 'every batch and every last-use update went through (no "deadlock detected")');
  const [{ spent = 0 } = {}] = await sql<Array<{ spent: number }>>`SELECT coalesce(sum(spent_micros), 0)::bigint AS spent FROM api_keys WHERE id = ANY(${ids}::text[])`;
  t.equal(Number(spent) - Number(before), charged, 'the keys\' spend grew by every charge');
});
