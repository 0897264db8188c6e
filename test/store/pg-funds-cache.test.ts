import t, { type Test } from 'tap';
import postgres from 'postgres';
import { connectPostgres, type PgSql } from '../../src/store/pg/db.js';
import { PgLedger } from '../../src/store/pg/ledger.js';
import { PgStore } from '../../src/store/pg/store.js';
import type { Funds } from '../../src/store/types.js';
import { until } from '../support/e2e.js';
import { postgresSkipReason, scratchForFile, seedTwoWallets, type ScratchDatabase } from '../support/postgres.js';

/**
 * Admission's funds cache on PostgreSQL (issue 32, funds-cache.ts): a daemon serving the
 * database alone reads a wallet once, applies its own settlement batches in place, and starts
 * over on any other change: its own writes at once, other processes' through the notices
 * migration 9's triggers send (settlement batches send none). A refusal's second look
 * (the barrier) reads the database; a cut listening session turns the cache off until it
 * listens again.
 */

const skip = postgresSkipReason();
let db: ScratchDatabase;
let sql: PgSql;
scratchForFile({ max: 4, migrate: true }, async (database, pool) => {
  db = database;
  sql = pool;
  await seedTwoWallets(sql);
});

/** A store with its funds cache on, listening. */
async function cachingStore(t: Test): Promise<PgStore> {
  const store = await PgStore.open(db.url, { max: 2 });
  t.teardown(() => store.close());
  store.cacheFunds();
  await until('the cache to listen', () => store.fundsCache.isListening);
  return store;
}

/** What admission reads, from the database itself. */
async function fromDb(accountId: string, keyId: string): Promise<{ balance: number; accountSpent: number; budget: number | null; keySpent: number | null; limit: number | null }> {
  const [row] = await sql<Array<{ balance: number; account_spent: number; budget: number | null; key_spent: number | null; spend_limit: number | null }>>`
    SELECT a.balance_micros AS balance, a.spent_micros AS account_spent, a.spend_limit_micros AS spend_limit, k.budget_micros AS budget, k.spent_micros AS key_spent
      FROM accounts a LEFT JOIN api_keys k ON k.id = ${keyId} AND k.account_id = a.id WHERE a.id = ${accountId}`;
  if (!row) throw new Error(`no account ${accountId}`);
  return { balance: row.balance, accountSpent: row.account_spent, budget: row.budget, keySpent: row.key_spent, limit: row.spend_limit };
}

function seen(funds: Funds | undefined): { balance: number; accountSpent: number; budget: number | null; keySpent: number | null; limit: number | null } {
  if (!funds) throw new Error('no funds');
  return { balance: funds.balanceMicros, accountSpent: funds.account.spentMicros, budget: funds.key?.budgetMicros ?? null, keySpent: funds.key?.spentMicros ?? null, limit: funds.account.spendLimitMicros };
}

let requests = 0;
const charge = (accountId: string, keyId: string, amountMicros: number) => ({ accountId, apiKeyId: keyId, amountMicros, requestId: `req_cache_${++requests}`, now: Date.now() });

t.test('a wallet is read once; own settlement batches are applied in place, and agree with the database', { skip }, async (t) => {
  const store = await cachingStore(t);
  const cache = store.fundsCache;
  const first = await store.funds('acc_a', 'key_a');
  t.same(seen(first), await fromDb('acc_a', 'key_a'));
  const misses = cache.misses;
  await store.funds('acc_a', 'key_a');
  await store.funds('acc_a', 'key_a');
  t.equal(cache.misses, misses, 'the next reads come from memory');
  t.equal(cache.hits, 2);

  // Mutating what a read returned does not change the cache.
  const copy = await store.funds('acc_a', 'key_a');
  if (copy) copy.balanceMicros = 1;
  t.not((await store.funds('acc_a', 'key_a'))?.balanceMicros, 1, 'callers get copies');

  await store.settle([charge('acc_a', 'key_a', 1_000), charge('acc_a', 'key_a', 250), charge('acc_b', 'key_b', 40)], []);
  const hits = cache.hits;
  t.same(seen(await store.funds('acc_a', 'key_a')), await fromDb('acc_a', 'key_a'), 'the batch applied in place: balance, account spend, key spend');
  t.equal(cache.hits, hits + 1, 'without a read');
  t.same(seen(await store.funds('acc_b', 'key_b')), await fromDb('acc_b', 'key_b'), 'an account read after the batch');
});

t.test("own writes to what admission reads start the cache over at once", { skip }, async (t) => {
  const store = await cachingStore(t);
  await store.funds('acc_a', 'key_a');
  await store.ledger.credit('topup', { accountId: 'acc_a', amountMicros: 500, now: Date.now() });
  t.same(seen(await store.funds('acc_a', 'key_a')), await fromDb('acc_a', 'key_a'), 'a top-up');
  await store.apiKeys.update('key_a', { budgetMicros: 8_000_000 });
  t.equal((await store.funds('acc_a', 'key_a'))?.key?.budgetMicros, 8_000_000, "a key's budget");
  await store.accounts.setSpendLimit('acc_a', 5_000_000, null, Date.now());
  t.equal((await store.funds('acc_a', 'key_a'))?.account.spendLimitMicros, 5_000_000, "the account's spend limit");
  await store.ledger.charge(charge('acc_a', 'key_a', 70));
  t.same(seen(await store.funds('acc_a', 'key_a')), await fromDb('acc_a', 'key_a'), 'a single charge');
  const starts = Date.now();
  await store.beginPeriods({ accountId: 'acc_a', accountStart: starts, apiKeyId: 'key_a', keyStart: starts });
  t.equal((await store.funds('acc_a', 'key_a'))?.account.periodStart, starts, 'a new period');
  await store.accounts.setSpendLimit('acc_a', null, null, Date.now());
  await store.apiKeys.update('key_a', { budgetMicros: 9_000_000 });
});

t.test("other processes' changes arrive as notices; settlement batches send none", { skip }, async (t) => {
  const store = await cachingStore(t);
  const notices: string[] = [];
  const listener = postgres(db.url, { max: 1, onnotice: () => undefined });
  t.teardown(() => listener.end({ timeout: 1 }));
  await listener.listen('gateway_funds', (payload) => notices.push(payload));

  const other = connectPostgres(db.url, { max: 1 });
  t.teardown(() => other.end({ timeout: 1 }));
  await store.funds('acc_b', 'key_b');
  // Another daemon's settlement batch (no daemon does that beside one without Redis: the
  // statement's own marker is what is tested).
  await new PgLedger(other).chargeMany([charge('acc_b', 'key_b', 5)], []);
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.same(notices, [], 'a settlement batch sends no notice');

  await new PgLedger(other).credit('topup', { accountId: 'acc_b', amountMicros: 1_000, now: Date.now() });
  await until('the top-up notice', () => notices.length > 0);
  t.same(notices, ['accounts'], 'a top-up sends one');
  await until('the cache to see the top-up', async () => (await store.funds('acc_b', 'key_b'))?.balanceMicros === (await fromDb('acc_b', 'key_b')).balance);

  notices.length = 0;
  await other`UPDATE api_keys SET budget_micros = 4000000 WHERE id = 'key_b'`;
  await until("the key's notice", () => notices.includes('api_keys'));
  await until('the cache to see the budget', async () => (await store.funds('acc_b', 'key_b'))?.key?.budgetMicros === 4_000_000);

  // A batch of calls that cost nothing (usage rows only): no notice either.
  notices.length = 0;
  const [usage] = await sql<Array<{ n: number }>>`SELECT count(*)::int AS n FROM usage`;
  await new PgLedger(other).chargeMany([], [{ requestId: `req_cache_${++requests}`, accountId: 'acc_b', apiKeyId: 'key_b', model: 'openai/gpt-4o-mini', provider: 'openai', endpoint: 'chat.completions', stream: false, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 0, unchargedMicros: 0, status: 502, errorType: 'upstream_error', latencyMs: 3, createdAt: Date.now() }]);
  const [after] = await sql<Array<{ n: number }>>`SELECT count(*)::int AS n FROM usage`;
  t.equal(after?.n, (usage?.n ?? 0) + 1, 'its usage row is written');
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.same(notices, [], 'a batch without charges sends no notice');

  notices.length = 0;
  await other`UPDATE api_keys SET last_used_at = 1 WHERE id = 'key_b'`;
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.same(notices, [], 'a column admission does not read sends none');
  await other`UPDATE api_keys SET budget_micros = NULL WHERE id = 'key_b'`;
});

t.test("a refusal's second look reads the database, before any notice", { skip }, async (t) => {
  const store = await cachingStore(t);
  const before = (await store.funds('acc_a', 'key_a'))?.balanceMicros ?? 0;
  const other = connectPostgres(db.url, { max: 1 });
  t.teardown(() => other.end({ timeout: 1 }));
  // A top-up elsewhere, and the barrier passed before its notice can have been handled.
  await new PgLedger(other).credit('topup', { accountId: 'acc_a', amountMicros: 2_000, now: Date.now() });
  // (Its notice may have emptied the cache already: either way the barrier's read is fresh.)
  store.barrier.pass();
  t.equal((await store.funds('acc_a', 'key_a'))?.balanceMicros, before + 2_000, 'and the second look sees the top-up');
  await store.funds('acc_a', 'key_a');
  t.equal(store.barrier.pass(), true);
  t.equal(store.barrier.pass(), false, 'nothing held: nothing to look at again');
});

t.test('a read that an own write overlapped is not kept', { skip }, async (t) => {
  const store = await cachingStore(t);
  const cache = store.fundsCache;
  // Figures from before the batch below, returned once it has committed.
  const stale = await store.funds('acc_a', 'key_a');
  if (!stale) throw new Error('no funds');
  cache.drop();
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let loaded = false;
  const read = cache.read('acc_a', 'key_a', async () => {
    loaded = true;
    await gate;
    return stale;
  });
  t.equal(loaded, true, 'an empty cache asks the database');
  await store.settle([charge('acc_a', 'key_a', 300)], []);
  release();
  t.equal((await read)?.balanceMicros, stale.balanceMicros, 'the caller gets what it read');
  const misses = cache.misses;
  t.same(seen(await store.funds('acc_a', 'key_a')), await fromDb('acc_a', 'key_a'), 'the next read is fresh, with the batch');
  t.equal(cache.misses, misses + 1, 'because the overlapped read was not kept');
});

t.test('a read is used for a while at most (ten seconds; one here)', { skip }, async (t) => {
  const store = await cachingStore(t);
  const cache = store.fundsCache;
  t.equal(cache.maxAgeMs, 10_000);
  cache.maxAgeMs = 1000;
  cache.drop();
  await store.funds('acc_b', 'key_b');
  const misses = cache.misses;
  await store.funds('acc_b', 'key_b');
  t.equal(cache.misses, misses, 'at once: from memory');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await store.funds('acc_b', 'key_b');
  t.equal(cache.misses, misses + 1, 'after it: read again');
});

t.test('a cut listening session turns the cache off until it listens again, on a new one, empty', { skip }, async (t) => {
  const store = await cachingStore(t);
  const cache = store.fundsCache;
  await store.funds('acc_a', 'key_a');
  const sessions = cache.sessions;
  const [row] = await sql<Array<{ n: number }>>`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE '%pg_backend_pid%' AND pid <> pg_backend_pid()`;
  t.ok((row?.n ?? 0) >= 1, 'the listening session is cut');
  await until('the cache to listen again', () => cache.sessions > sessions && cache.isListening);
  const misses = cache.misses;
  t.same(seen(await store.funds('acc_a', 'key_a')), await fromDb('acc_a', 'key_a'));
  t.equal(cache.misses, misses + 1, 'what it held before the cut is gone');
  await new PgLedger(sql).credit('topup', { accountId: 'acc_a', amountMicros: 3_000, now: Date.now() });
  await until('the cache to see a top-up made after', async () => (await store.funds('acc_a', 'key_a'))?.balanceMicros === (await fromDb('acc_a', 'key_a')).balance);
});

t.test('with shared writers (Redis) nothing is cached', { skip }, async (t) => {
  const store = await PgStore.open(db.url, { max: 2 });
  t.teardown(() => store.close());
  store.cacheFunds({ sharedWriters: true });
  await store.funds('acc_b', 'key_b');
  await store.funds('acc_b', 'key_b');
  t.equal(store.fundsCache.hits, 0);
  t.equal(store.fundsCache.misses, 2);
  t.equal(store.fundsCache.isListening, false);
});
