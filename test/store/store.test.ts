import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { migrate, MigrationError, openDatabase, schemaVersion } from '../../src/store/db.js';
import { SqliteStore as Store } from '../../src/store/store.js';
import type { Funds } from '../../src/store/types.js';
import { tempDir } from '../support/gateway.js';

const latest = MIGRATIONS.at(-1)?.version ?? 0;

function seedAccount(store: Store, id = 'acc_1', email = 'a@example.com') {
  return store.accounts.insert({ id, email, name: 'A', passwordHash: null, role: 'user', now: 1000 });
}

/** An API key of the account (its hash derived from the id, so each is unique). */
function seedKey(store: Store, id: string, accountId: string, budgetMicros?: number) {
  const keyHash = createHash('sha256').update(id).digest('hex');
  return store.apiKeys.insert({ id, accountId, name: id, keyHash, maskedKey: 'sk-…', ...(budgetMicros === undefined ? {} : { budgetMicros }), expiresAt: null, now: 1 });
}


/** core() and the account's lifetime spend (charges add to it, in the cache too). */
function withSpend(funds: Funds | undefined) {
  return funds && { ...core(funds), accountSpent: funds.account.spentMicros };
}

/** The wallet and key budget of a funds read (the period fields are the periods tests'). */
function core(funds: Funds | undefined) {
  return funds && { balanceMicros: funds.balanceMicros, key: funds.key && { budgetMicros: funds.key.budgetMicros, spentMicros: funds.key.spentMicros } };
}

t.test('a fresh file gets every migration, WAL and foreign keys', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const path = join(dir.path, 'nested/dir/gateway.db');
  const db = openDatabase(path);
  t.teardown(() => db.close());
  t.equal(schemaVersion(db), latest);
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(db.pragma('foreign_keys', { simple: true }), 1);
  t.equal(db.pragma('busy_timeout', { simple: true }), 5000);
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name);
  for (const table of ['accounts', 'api_keys', 'management_keys', 'ledger', 'usage', 'schema_migrations']) t.ok(tables.includes(table), `has ${table}`);
});

t.test('an existing file: reopening is a no-op, new migrations apply once, data stays', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const path = join(dir.path, 'gateway.db');
  const first = new Store(openDatabase(path));
  seedAccount(first);
  first.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 5_000_000, now: 1 });
  first.close();

  const again = openDatabase(path);
  t.same(migrate(again, MIGRATIONS), { applied: [] }, 'nothing to apply on reopen');
  again.close();

  const extra = { version: latest + 1, name: 'test: add a column', sql: 'ALTER TABLE accounts ADD COLUMN nickname TEXT;' };
  const upgraded = openDatabase(path, { migrations: [...MIGRATIONS, extra] });
  t.equal(schemaVersion(upgraded), latest + 1);
  const row = upgraded.prepare('SELECT email, balance_micros, nickname FROM accounts').get();
  t.same(row, { email: 'a@example.com', balance_micros: 5_000_000, nickname: null }, 'data survives the upgrade');
  upgraded.close();

  t.throws(() => openDatabase(path), MigrationError, 'an older gateway refuses a newer schema');
  t.throws(() => openDatabase(path), /schema version \d+ is newer than this gateway knows/);
});

t.test('a failing migration leaves the file at the previous version', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const path = join(dir.path, 'gateway.db');
  openDatabase(path).close();
  const broken = { version: latest + 1, name: 'broken', sql: 'CREATE TABLE half (x INTEGER); SELECT * FROM no_such_table;' };
  t.throws(() => openDatabase(path, { migrations: [...MIGRATIONS, broken] }));
  const db = new Database(path);
  t.teardown(() => db.close());
  t.equal(schemaVersion(db), latest, 'version unchanged');
  const half = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'half'").get() as { n: number };
  t.equal(half.n, 0, 'the half-applied table was rolled back');
});

t.test('ledger: balance updated with every entry, in one transaction', async (t) => {
  const store = Store.open(':memory:');
  t.teardown(() => store.close());
  seedAccount(store);
  seedKey(store, 'key_1', 'acc_1');

  const topup = store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 10_000_000, reference: 'ref-1', note: 'first', createdBy: 'acc_admin', now: 2 });
  t.same({ replayed: topup.replayed, balance: topup.entry.balanceAfterMicros, kind: topup.entry.kind }, { replayed: false, balance: 10_000_000, kind: 'topup' });

  const replay = store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 10_000_000, reference: 'ref-1', now: 3 });
  t.equal(replay.replayed, true, 'a reference applies once');
  t.equal(replay.entry.id, topup.entry.id);

  const charge = store.ledger.charge({ accountId: 'acc_1', amountMicros: 1_234_567, requestId: 'req_a', apiKeyId: 'key_1', now: 4 });
  t.equal(charge.entry.amountMicros, -1_234_567, 'charges are negative');
  t.equal(charge.entry.balanceAfterMicros, 8_765_433);
  t.equal(store.ledger.charge({ accountId: 'acc_1', amountMicros: 1_234_567, requestId: 'req_a', apiKeyId: 'key_1', now: 5 }).replayed, true, 'a request is charged once');
  t.equal(store.apiKeys.byId('key_1')?.spentMicros, 1_234_567, 'the key spent follows the charge, once');

  store.ledger.credit('refund', { accountId: 'acc_1', amountMicros: 234_567, note: 'goodwill', now: 6 });
  const account = store.accounts.byId('acc_1');
  t.equal(account?.balanceMicros, 9_000_000);
  t.equal(store.ledger.sum('acc_1'), account?.balanceMicros, 'balance equals the sum of the ledger');
  t.same(store.ledger.list('acc_1', 10).map((e) => e.kind), ['refund', 'charge', 'topup'], 'newest first');
  t.same(store.ledger.list('acc_1', 10, charge.entry.id).map((e) => e.kind), ['topup'], 'paging with before');

  t.throws(() => store.db.prepare('UPDATE ledger SET amount_micros = 1').run(), /append-only/, 'the ledger refuses updates');
  t.throws(() => store.db.prepare('DELETE FROM ledger').run(), /append-only/, 'and deletes');
  t.throws(() => store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 0, now: 7 }), RangeError, 'no zero top-ups');
  t.throws(() => store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 1.5, now: 7 }), RangeError, 'no fractional µINR');
  t.throws(() => store.ledger.credit('topup', { accountId: 'acc_nope', amountMicros: 1, now: 7 }), /does not exist/);
  t.equal(store.ledger.sum('acc_1'), store.accounts.byId('acc_1')?.balanceMicros, 'failed writes left no trace');
});

t.test('ledger: a failure inside a caller transaction rolls back balance and entry together', async (t) => {
  const store = Store.open(':memory:');
  t.teardown(() => store.close());
  seedAccount(store);
  t.throws(() =>
    store.transaction(() => {
      store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 7, now: 1 });
      throw new Error('later step failed');
    }),
  );
  t.equal(store.accounts.byId('acc_1')?.balanceMicros, 0);
  t.equal(store.ledger.list('acc_1', 10).length, 0);
});

t.test('accounts: emails are unique regardless of case', async (t) => {
  const store = Store.open(':memory:');
  t.teardown(() => store.close());
  seedAccount(store);
  t.throws(() => seedAccount(store, 'acc_2', 'A@EXAMPLE.COM'), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
  t.equal(store.accounts.byEmail('A@Example.com')?.id, 'acc_1');
});

t.test('funds: balance and key budget in one read; only the account\'s own key counts', async (t) => {
  const store = Store.open(':memory:');
  t.teardown(() => store.close());
  seedAccount(store);
  seedAccount(store, 'acc_2', 'b@example.com');
  seedKey(store, 'key_1', 'acc_1', 5_000_000);
  seedKey(store, 'key_2', 'acc_2');
  store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 9_000_000, now: 2 });
  store.ledger.charge({ accountId: 'acc_1', amountMicros: 1_500_000, requestId: 'req_a', apiKeyId: 'key_1', now: 3 });
  t.same(core(store.funds('acc_1', 'key_1')), { balanceMicros: 7_500_000, key: { budgetMicros: 5_000_000, spentMicros: 1_500_000 } });
  t.same(core(store.funds('acc_2', 'key_2')), { balanceMicros: 0, key: { budgetMicros: null, spentMicros: 0 } }, 'no budget reads as null');
  t.same(core(store.funds('acc_1', 'key_2')), { balanceMicros: 7_500_000, key: undefined }, 'another account\'s key is not read');
  t.equal(store.funds('acc_nope', 'key_1'), undefined, 'an unknown account has no funds');
});

t.test('funds cache: reads once, takes batch charges in place, and starts over after any other write', async (t) => {
  const store = Store.open(':memory:');
  t.teardown(() => store.close());
  store.cacheFunds();
  seedAccount(store);
  seedKey(store, 'key_1', 'acc_1', 5_000_000);
  store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 9_000_000, now: 2 });
  const fromDb = () => {
    const row = store.db.prepare('SELECT a.balance_micros AS b, a.spent_micros AS a_spent, k.budget_micros AS budget, k.spent_micros AS spent FROM accounts a JOIN api_keys k ON k.account_id = a.id WHERE a.id = ?').get('acc_1') as { b: number; a_spent: number; budget: number | null; spent: number };
    return { balanceMicros: row.b, accountSpent: row.a_spent, key: { budgetMicros: row.budget, spentMicros: row.spent } };
  };
  t.same(core(store.funds('acc_1', 'key_1')), { balanceMicros: 9_000_000, key: { budgetMicros: 5_000_000, spentMicros: 0 } });

  // A settlement batch: the cache takes the charges (two on one key) without a read.
  const charges = [
    { accountId: 'acc_1', amountMicros: 1_000_000, requestId: 'req_1', apiKeyId: 'key_1', now: 3 },
    { accountId: 'acc_1', amountMicros: 250_000, requestId: 'req_2', apiKeyId: 'key_1', now: 3 },
  ];
  store.charge(charges, () => store.ledger.chargeManyInTransaction(charges));
  t.same(core(store.funds('acc_1', 'key_1')), { balanceMicros: 7_750_000, key: { budgetMicros: 5_000_000, spentMicros: 1_250_000 } });
  t.same(withSpend(store.funds('acc_1', 'key_1')), fromDb(), 'the cache agrees with the database after a batch');

  // Other writes through this connection: a top-up, a budget change, a single charge.
  store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 1_000_000, now: 4 });
  t.equal(store.funds('acc_1', 'key_1')?.balanceMicros, 8_750_000, 'a top-up is seen');
  store.apiKeys.update('key_1', { budgetMicros: 2_000_000 });
  t.same(core(store.funds('acc_1', 'key_1'))?.key, { budgetMicros: 2_000_000, spentMicros: 1_250_000 }, 'a budget change is seen');
  store.ledger.charge({ accountId: 'acc_1', amountMicros: 500_000, requestId: 'req_3', apiKeyId: 'key_1', now: 5 });
  t.same(withSpend(store.funds('acc_1', 'key_1')), fromDb(), 'a charge outside a batch is seen');

  // A batch after an unannounced write: the cache starts over rather than apply deltas to stale values.
  store.db.prepare('UPDATE accounts SET balance_micros = balance_micros - 1 WHERE id = ?').run('acc_1');
  const more = [{ accountId: 'acc_1', amountMicros: 100, requestId: 'req_4', apiKeyId: 'key_1', now: 6 }];
  store.charge(more, () => store.ledger.chargeManyInTransaction(more));
  t.same(withSpend(store.funds('acc_1', 'key_1')), fromDb(), 'right after a batch that followed another write');

  // A batch that fails changes nothing in the cache's view.
  const failing = [{ accountId: 'acc_1', amountMicros: 100, requestId: 'req_4', apiKeyId: 'key_1', now: 7 }];
  t.throws(() => store.charge(failing, () => store.ledger.chargeManyInTransaction(failing)), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
  t.same(withSpend(store.funds('acc_1', 'key_1')), fromDb(), 'a rolled-back batch is not taken');

  // Another account's key is not this account's, cached or not.
  seedAccount(store, 'acc_2', 'b@example.com');
  t.same(core(store.funds('acc_2', 'key_1')), { balanceMicros: 0, key: undefined });
  t.same(core(store.funds('acc_2', 'key_1')), { balanceMicros: 0, key: undefined }, 'the same from the cache');
  t.same(withSpend(store.funds('acc_1', 'key_1')), fromDb());
});

t.test('funds cache with shared writers: another daemon\'s commits on the same file are seen', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const path = join(dir.path, 'gateway.db');
  const mine = Store.open(path);
  const theirs = Store.open(path);
  t.teardown(() => {
    mine.close();
    theirs.close();
  });
  mine.cacheFunds({ sharedWriters: true });
  seedAccount(theirs);
  seedKey(theirs, 'key_1', 'acc_1', 5_000_000);
  theirs.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 9_000_000, now: 2 });
  t.same(core(mine.funds('acc_1', 'key_1')), { balanceMicros: 9_000_000, key: { budgetMicros: 5_000_000, spentMicros: 0 } });
  // Count the funds query's reads (the cache is used: not one per call).
  const stmt = (mine as unknown as { fundsStmt: { get: (...args: unknown[]) => unknown } }).fundsStmt;
  const get = stmt.get.bind(stmt);
  let reads = 0;
  stmt.get = (...args: unknown[]) => {
    reads++;
    return get(...args);
  };
  mine.funds('acc_1', 'key_1');
  t.equal(reads, 0, 'a second read comes from the cache');
  // Cached: an own batch is taken in place.
  const own = [{ accountId: 'acc_1', amountMicros: 1_000_000, requestId: 'req_1', apiKeyId: 'key_1', now: 3 }];
  mine.charge(own, () => mine.ledger.chargeManyInTransaction(own));
  t.same(core(mine.funds('acc_1', 'key_1')), { balanceMicros: 8_000_000, key: { budgetMicros: 5_000_000, spentMicros: 1_000_000 } }, 'own batch');
  t.equal(reads, 0, 'own batch taken without a read');
  // The other daemon charges, tops up and changes the budget: each is seen at the next read.
  const other = [{ accountId: 'acc_1', amountMicros: 250_000, requestId: 'req_2', apiKeyId: 'key_1', now: 4 }];
  theirs.charge(other, () => theirs.ledger.chargeManyInTransaction(other));
  t.same(core(mine.funds('acc_1', 'key_1')), { balanceMicros: 7_750_000, key: { budgetMicros: 5_000_000, spentMicros: 1_250_000 } }, "the other daemon's charge");
  t.equal(reads, 1, 'read again after their commit');
  theirs.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 1_000_000, now: 5 });
  t.equal(mine.funds('acc_1', 'key_1')?.balanceMicros, 8_750_000, "the other daemon's top-up");
  theirs.apiKeys.update('key_1', { budgetMicros: 2_000_000 });
  t.same(core(mine.funds('acc_1', 'key_1'))?.key, { budgetMicros: 2_000_000, spentMicros: 1_250_000 }, "the other daemon's budget change");
  // An own batch right after another daemon's commit: started over, not deltas on stale values.
  theirs.ledger.charge({ accountId: 'acc_1', amountMicros: 5, requestId: 'req_3', apiKeyId: 'key_1', now: 6 });
  const again = [{ accountId: 'acc_1', amountMicros: 100, requestId: 'req_4', apiKeyId: 'key_1', now: 7 }];
  mine.charge(again, () => mine.ledger.chargeManyInTransaction(again));
  t.same(core(mine.funds('acc_1', 'key_1')), { balanceMicros: 8_749_895, key: { budgetMicros: 2_000_000, spentMicros: 1_250_105 } }, 'both charges');
});

t.test('usage: filters by key without an index of their own', async (t) => {
  const store = Store.open(':memory:');
  t.teardown(() => store.close());
  seedAccount(store);
  seedAccount(store, 'acc_2', 'b@example.com');
  seedKey(store, 'key_1', 'acc_1');
  seedKey(store, 'key_3', 'acc_1');
  seedKey(store, 'key_2', 'acc_2');
  const row = (n: number, accountId: string, apiKeyId: string, model = 'openai/gpt-4o-mini') => ({
    requestId: `req_${n}`, accountId, apiKeyId, model, provider: 'openai', endpoint: 'chat.completions', stream: false,
    inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 1, unchargedMicros: 0, status: 200, errorType: null, latencyMs: 1, createdAt: 1000 + n,
  });
  store.transaction(() => {
    for (let n = 0; n < 30; n++) store.usage.insert(row(n, n % 3 === 2 ? 'acc_2' : 'acc_1', n % 3 === 0 ? 'key_1' : n % 3 === 1 ? 'key_3' : 'key_2', n % 2 ? 'anthropic/claude-haiku-4-5' : 'openai/gpt-4o-mini'));
  });
  const ids = (rows: { requestId: string }[]) => rows.map((r) => Number(r.requestId.slice(4)));
  t.same(ids(store.usage.list({ apiKeyId: 'key_1', limit: 100 })), [27, 24, 21, 18, 15, 12, 9, 6, 3, 0], 'by key alone, newest first');
  t.same(ids(store.usage.list({ apiKeyId: 'key_1', accountId: 'acc_1', limit: 3 })), [27, 24, 21], 'by key and account');
  t.same(store.usage.list({ apiKeyId: 'key_1', accountId: 'acc_2', limit: 100 }), [], 'a key and another account match nothing');
  t.same(store.usage.list({ apiKeyId: 'key_nope', limit: 100 }), [], 'an unknown key matches nothing');
  t.same(ids(store.usage.list({ model: 'openai/gpt-4o-mini', apiKeyId: 'key_2', limit: 100 })), [26, 20, 14, 8, 2], 'by model and key');
  t.same(ids(store.usage.list({ apiKeyId: 'key_3', since: 1010, until: 1020, limit: 100 })), [19, 16, 13, 10], 'by key and time');
  const plan = store.db.prepare("EXPLAIN QUERY PLAN SELECT * FROM usage WHERE api_key_id = 'key_1' AND account_id = (SELECT account_id FROM api_keys WHERE id = 'key_1') ORDER BY id DESC LIMIT 5").all() as { detail: string }[];
  t.ok(plan.some((step) => /usage_by_account/.test(step.detail)), `the key filter walks the account index (${plan.map((s) => s.detail).join('; ')})`);
  const indexes = (store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage' AND sql IS NOT NULL").all() as { name: string }[]).map((r) => r.name).sort();
  t.same(indexes, ['usage_by_account', 'usage_by_time'], 'migration 2 dropped the per-key and per-model indexes');
});

t.test('ledger: a batch of charges, one balance update per account, running balances per entry', async (t) => {
  const store = Store.open(':memory:');
  t.teardown(() => store.close());
  seedAccount(store);
  seedAccount(store, 'acc_2', 'b@example.com');
  seedKey(store, 'key_1', 'acc_1');
  seedKey(store, 'key_2', 'acc_2');
  store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 1000, now: 2 });
  store.ledger.credit('topup', { accountId: 'acc_2', amountMicros: 500, now: 2 });
  store.transaction(() =>
    store.ledger.chargeManyInTransaction([
      { accountId: 'acc_1', amountMicros: 100, requestId: 'req_1', apiKeyId: 'key_1', now: 3 },
      { accountId: 'acc_2', amountMicros: 50, requestId: 'req_2', apiKeyId: 'key_2', now: 3 },
      { accountId: 'acc_1', amountMicros: 0, requestId: 'req_3', apiKeyId: 'key_1', now: 4 },
      { accountId: 'acc_1', amountMicros: 250, requestId: 'req_4', apiKeyId: null, now: 5 },
    ]),
  );
  const entries = store.ledger.list('acc_1', 10).reverse();
  t.same(entries.map((e) => [e.kind, e.amountMicros, e.balanceAfterMicros]), [['topup', 1000, 1000], ['charge', -100, 900], ['charge', -0, 900], ['charge', -250, 650]], 'each entry carries the balance after it');
  t.equal(store.accounts.byId('acc_1')?.balanceMicros, 650);
  t.equal(store.ledger.sum('acc_1'), 650, 'balance = ledger sum');
  t.equal(store.accounts.byId('acc_2')?.balanceMicros, 450);
  t.equal(store.apiKeys.byId('key_1')?.spentMicros, 100, 'a key is charged only for its own calls');
  t.equal(store.apiKeys.byId('key_2')?.spentMicros, 50);

  t.throws(
    () =>
      store.transaction(() =>
        store.ledger.chargeManyInTransaction([
          { accountId: 'acc_1', amountMicros: 10, requestId: 'req_5', apiKeyId: 'key_1', now: 6 },
          { accountId: 'acc_1', amountMicros: 10, requestId: 'req_1', apiKeyId: 'key_1', now: 6 },
        ]),
      ),
    { code: 'SQLITE_CONSTRAINT_UNIQUE' },
    'a request charged twice fails the batch',
  );
  t.throws(() => store.transaction(() => store.ledger.chargeManyInTransaction([{ accountId: 'acc_gone', amountMicros: 1, requestId: 'req_6', now: 6 }])), /does not exist/);
  t.equal(store.accounts.byId('acc_1')?.balanceMicros, 650, 'failed batches leave no trace');
  t.equal(store.apiKeys.byId('key_1')?.spentMicros, 100);
  t.throws(() => store.ledger.chargeManyInTransaction([]), /open transaction/);
});
