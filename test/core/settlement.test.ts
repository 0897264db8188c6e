import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import t from 'tap';
import type { ModelConfig } from '../../src/config/types.js';
import { Settlement, type SettleInput } from '../../src/core/gateway/settlement.js';
import { MemoryHoldStore, type HoldRef } from '../../src/core/limits/holds.js';
import { UsageService } from '../../src/core/management/usage.js';
import { BillingJournal, JOURNAL_TRIM_BYTES, journalDir } from '../../src/store/billing-journal.js';
import { SqliteStore as Store } from '../../src/store/store.js';
import type { NewUsage, UsageRecord } from '../../src/store/usage.js';
import { tempDir } from '../support/gateway.js';

// 1 µINR per input token, 2 per output token (prices are µINR per million tokens).
const MODEL = {
  id: 'openai/test-model',
  provider: 'openai',
  pricing: { inputPer1M: 1_000_000, outputPer1M: 2_000_000 },
} as unknown as ModelConfig;

const silent = pino({ level: 'silent' });

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

interface World {
  dir: string;
  dbPath: string;
  store: Store;
  holds: MemoryHoldStore;
  usage: UsageService;
  published: UsageRecord[];
  settlement: Settlement;
}

function world(t: Tap, options: { dir?: string; busyTimeoutMs?: number; applyDelayMs?: number; memory?: boolean } = {}): World {
  const dir = options.memory ? '' : (options.dir ?? tempDir().path);
  const dbPath = options.memory ? ':memory:' : join(dir, 'gateway.db');
  const store = Store.open(dbPath, { busyTimeoutMs: options.busyTimeoutMs ?? 5000 });
  if (!store.accounts.byId('acc_1')) {
    store.accounts.insert({ id: 'acc_1', email: 'a@example.com', name: 'A', passwordHash: null, role: 'user', now: 1 });
    store.apiKeys.insert({ id: 'key_1', accountId: 'acc_1', name: 'k', keyHash: 'a'.repeat(64), maskedKey: 'sk-…', budgetMicros: 50_000_000, expiresAt: null, now: 1 });
    store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 10_000_000, now: 2 });
  }
  const holds = new MemoryHoldStore();
  const usage = new UsageService(store);
  const published: UsageRecord[] = [];
  usage.subscribe((record) => published.push(record));
  // A long delay by default: the tests decide when batches apply (drain), unless they wait for the timer.
  const settlement = new Settlement(store, holds, usage, silent, { applyDelayMs: options.applyDelayMs ?? 60_000, orphanScanMs: 0 });
  t.teardown(async () => {
    await settlement.close();
    await store.close();
  });
  return { dir, dbPath, store, holds, usage, published, settlement };
}


let seq = 0;
async function call(w: World, tokens: { input: number; output: number } | undefined, holdMicros = 1000, status = 200): Promise<{ input: SettleInput; hold: HoldRef }> {
  seq += 1;
  const hold: HoldRef = { id: `req_${String(seq).padStart(6, '0')}`, accountId: 'acc_1', keyId: 'key_1', amountMicros: holdMicros };
  await w.holds.acquire(hold);
  const input: SettleInput = {
    requestId: hold.id,
    accountId: 'acc_1',
    apiKeyId: 'key_1',
    model: MODEL,
    endpoint: 'chat.completions',
    stream: false,
    usage: tokens && { inputTokens: tokens.input, outputTokens: tokens.output, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
    status,
    startedAt: Date.now(),
    hold,
  };
  return { input, hold };
}

/** Rows as they are in SQLite, without passing the read barrier. */
function rawCounts(w: World): { usage: number; charges: number; balance: number; spent: number } {
  const db = w.store.db;
  return {
    usage: (db.prepare('SELECT count(*) AS n FROM usage').get() as { n: number }).n,
    charges: (db.prepare("SELECT count(*) AS n FROM ledger WHERE kind = 'charge'").get() as { n: number }).n,
    balance: (db.prepare("SELECT balance_micros AS b FROM accounts WHERE id = 'acc_1'").get() as { b: number }).b,
    spent: (db.prepare("SELECT spent_micros AS s FROM api_keys WHERE id = 'key_1'").get() as { s: number }).s,
  };
}

function journalLines(w: World): string[] {
  const dir = journalDir(w.dbPath);
  return readdirSync(dir)
    .filter((name) => name.endsWith('.log') && name !== 'rejected.log')
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean));
}

/** Journal lines whose call is not in the usage table: what a replay would still apply. */
function unappliedLines(w: World): string[] {
  const applied = w.store.db.prepare('SELECT 1 FROM usage WHERE request_id = ?').pluck();
  return journalLines(w).filter((line) => applied.get((JSON.parse(line) as NewUsage).requestId) === undefined);
}

t.test('a settled call is journaled at once, held at its cost, and in the ledger after its batch', async (t) => {
  const w = world(t);
  const { input, hold } = await call(w, { input: 100, output: 50 }, 1000);
  const settled = await w.settlement.settle(input);
  t.equal(settled.costMicros, 200, '100 in × 1 + 50 out × 2 µINR');
  t.equal(journalLines(w).length, 1, 'one journal line before settle() resolved');
  t.same(JSON.parse(journalLines(w)[0] as string), { ...settled.row }, 'the line is the usage row');
  t.same(rawCounts(w), { usage: 0, charges: 0, balance: 10_000_000, spent: 0 }, 'not yet in SQLite');
  t.equal(w.settlement.backlog, 1);
  t.equal(hold.amountMicros, 200, 'the hold is lowered to the cost');
  t.same(await w.holds.held('acc_1', 'key_1'), { accountHeldMicros: 200, keyHeldMicros: 200 }, 'and stays until the charge is in the ledger');
  t.same(w.published, [], 'nothing published yet');

  t.equal(w.settlement.drain(), true);
  t.same(rawCounts(w), { usage: 1, charges: 1, balance: 9_999_800, spent: 200 }, 'charge, balance, key spend and usage row applied');
  t.same(await w.holds.held('acc_1', 'key_1'), { accountHeldMicros: 0, keyHeldMicros: 0 }, 'hold released after the commit');
  t.same(unappliedLines(w), [], 'nothing in the journal left to apply');
  t.equal(w.published.length, 1, 'published once applied');
  t.equal(w.published[0]?.requestId, input.requestId);
  t.ok((w.published[0]?.id ?? 0) > 0, 'with its row id');
  t.equal(w.settlement.drain(), false, 'nothing left');
});

t.test('reads that show money pass the barrier: they see every settled call', async (t) => {
  const w = world(t);
  for (let i = 0; i < 3; i++) await w.settlement.settle((await call(w, { input: 10, output: 0 })).input);
  t.equal(rawCounts(w).usage, 0);
  t.equal(w.store.usage.list({ accountId: 'acc_1', limit: 10 }).length, 3, 'usage list');
  for (let i = 0; i < 2; i++) await w.settlement.settle((await call(w, { input: 10, output: 0 })).input);
  t.equal(w.store.accounts.byId('acc_1')?.balanceMicros, 10_000_000 - 50, 'balance');
  await w.settlement.settle((await call(w, { input: 7, output: 0 })).input);
  t.equal(w.store.apiKeys.byId('key_1')?.spentMicros, 57, 'key spend');
  await w.settlement.settle((await call(w, { input: 3, output: 0 })).input);
  t.equal(w.store.ledger.sum('acc_1'), 10_000_000 - 60, 'ledger sum');
  t.equal(w.store.ledger.list('acc_1', 100).filter((e) => e.kind === 'charge').length, 7, 'ledger list');
  await w.settlement.settle((await call(w, { input: 1, output: 0 })).input);
  const topup = w.store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 1000, now: Date.now() });
  t.equal(topup.entry.balanceAfterMicros, 10_000_000 - 61 + 1000, 'a top-up goes into the ledger after the calls settled before it');
  t.same(w.store.funds('acc_1', 'key_1')?.balanceMicros, 10_000_000 - 61 + 1000);
});

t.test('the timer applies a batch; calls of one turn share one journal write and one transaction', async (t) => {
  const w = world(t, { applyDelayMs: 30 });
  const { settlement, holds, published } = w;
  const inputs = await Promise.all(Array.from({ length: 20 }, () => call(w, { input: 5, output: 5 })));
  await Promise.all(inputs.map(({ input }) => settlement.settle(input)));
  t.equal(settlement.backlog, 20, 'one batch pending');
  t.equal(rawCounts(w).usage, 0);
  await new Promise((resolve) => setTimeout(resolve, 120));
  t.equal(settlement.backlog, 0, 'applied by the timer');
  t.same(rawCounts(w), { usage: 20, charges: 20, balance: 10_000_000 - 300, spent: 300 });
  t.equal(published.length, 20);
  t.same(await holds.held('acc_1', 'key_1'), { accountHeldMicros: 0, keyHeldMicros: 0 });
});

t.test('a charge is capped at its hold; a failed call costs nothing but has its usage row', async (t) => {
  const w = world(t);
  const big = await call(w, { input: 1000, output: 1000 }, 500);
  t.equal((await w.settlement.settle(big.input)).costMicros, 500, 'capped at the hold');
  const failed = await call(w, undefined, 500, 502);
  t.equal((await w.settlement.settle({ ...failed.input, errorType: 'upstream_error' })).costMicros, 0);
  w.settlement.drain();
  t.same(rawCounts(w), { usage: 2, charges: 1, balance: 10_000_000 - 500, spent: 500 }, 'one charge, two usage rows');
  const rows = w.store.usage.list({ accountId: 'acc_1', limit: 10 });
  t.same(rows.map((r) => [r.status, r.costMicros, r.errorType]), [[502, 0, 'upstream_error'], [200, 500, null]]);
});

t.test('a batch the database cannot take now stays pending, held and journaled, and is retried', async (t) => {
  const w = world(t, { busyTimeoutMs: 50 });
  const { input } = await call(w, { input: 100, output: 0 });
  await w.settlement.settle(input);
  // Another connection holds the write lock: the apply fails with SQLITE_BUSY after 50 ms.
  const other = new Database(w.dbPath);
  other.pragma('busy_timeout = 0');
  other.prepare('BEGIN IMMEDIATE').run();
  t.equal(w.settlement.drain(), true);
  t.equal(w.settlement.failing, true, 'failing');
  t.equal(w.settlement.backlog, 1, 'still pending');
  t.same(await w.holds.held('acc_1', 'key_1'), { accountHeldMicros: 100, keyHeldMicros: 100 }, 'its hold stays');
  t.equal(journalLines(w).length, 1, 'still in the journal');
  other.prepare('ROLLBACK').run();
  other.close();
  // The retry timer (100 ms first) applies it.
  await new Promise((resolve) => setTimeout(resolve, 400));
  t.equal(w.settlement.backlog, 0, 'applied on retry');
  t.equal(w.settlement.failing, false);
  t.same(rawCounts(w), { usage: 1, charges: 1, balance: 10_000_000 - 100, spent: 100 });
  t.same(await w.holds.held('acc_1', 'key_1'), { accountHeldMicros: 0, keyHeldMicros: 0 });
  t.same(unappliedLines(w), []);
});

t.test('a row the ledger refuses is set aside in rejected.log; the rest of its batch applies', async (t) => {
  const w = world(t);
  const good = await call(w, { input: 10, output: 0 });
  const bad = await call(w, { input: 10, output: 0 });
  await Promise.all([w.settlement.settle(good.input), w.settlement.settle({ ...bad.input, accountId: 'acc_gone' })]);
  w.settlement.drain();
  t.equal(w.settlement.backlog, 0, 'nothing left pending');
  t.equal(rawCounts(w).usage, 1, 'the good call applied');
  const rejected = readFileSync(join(journalDir(w.dbPath), 'rejected.log'), 'utf8').trim().split('\n');
  t.equal(rejected.length, 1);
  t.match(JSON.parse(rejected[0] as string), { requestId: bad.input.requestId, accountId: 'acc_gone', costMicros: 10 });
  t.same(await w.holds.held('acc_1', 'key_1'), { accountHeldMicros: 0, keyHeldMicros: 0 }, 'both holds released');
});

t.test('a stopped daemon\'s journal is applied at the next start, each call once', async (t) => {
  const first = world(t);
  const calls = await Promise.all(Array.from({ length: 3 }, () => call(first, { input: 100, output: 0 })));
  for (const { input } of calls) await first.settlement.settle(input);
  // One of the three made it into the ledger before the "crash".
  const applied = calls[0]?.input as SettleInput;
  const lines = journalLines(first).map((line) => JSON.parse(line) as NewUsage);
  t.equal(lines.length, 3);
  first.store.transaction(() => {
    const row = lines.find((l) => l.requestId === applied.requestId) as NewUsage;
    first.store.ledger.chargeInTransaction({ accountId: 'acc_1', amountMicros: row.costMicros, requestId: row.requestId, apiKeyId: 'key_1', now: 3 });
    first.store.usage.insert(row);
  });
  // A dead daemon's journal: nobody holds its lock (it has no lock file yet). A write cut
  // short by the crash leaves a partial last line.
  const orphan = join(journalDir(first.dbPath), "4194999.0badc0ffee00.log");
  writeFileSync(orphan, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n{"requestId":"req_torn","accou`);

  const second = world(t, { dir: first.dir });
  const result = second.settlement.recoverOrphans();
  t.same(result, { applied: 2, skipped: 1, rejected: 0, complete: true }, 'two applied, the one already in the ledger skipped');
  t.notOk(existsSync(orphan), 'the orphan journal is removed');
  const counts = rawCounts(second);
  t.equal(counts.charges, 3, 'three charges, one per call');
  t.equal(counts.usage, 3);
  t.equal(counts.balance, 10_000_000 - 300);
  t.equal(second.store.ledger.sum('acc_1'), counts.balance, 'balance = ledger sum');
  t.same(second.settlement.recoverOrphans(), { applied: 0, skipped: 0, rejected: 0, complete: true }, 'nothing left to recover');
  // The first daemon's own journal is not an orphan (its process is alive).
  t.equal(journalLines(first).length >= 3, true, 'a live daemon\'s journal is left alone');
});

t.test('close applies everything and removes the journal', async (t) => {
  const w = world(t);
  for (let i = 0; i < 4; i++) await w.settlement.settle((await call(w, { input: 1, output: 1 })).input);
  const dir = journalDir(w.dbPath);
  t.equal(readdirSync(dir).filter((n) => n.endsWith('.log')).length, 1);
  await w.settlement.close();
  t.equal(rawCounts(w).usage, 4);
  t.same(readdirSync(dir).filter((n) => n.endsWith('.log')), [], 'journal file removed');
  await t.rejects(w.settlement.settle((await call(w, { input: 1, output: 1 })).input), /closed/, 'no settling after close');
  t.same(await w.holds.held('acc_1', 'key_1'), { accountHeldMicros: 0, keyHeldMicros: 0 }, 'a refused settle releases its hold');
});

t.test('an in-memory store has no journal; calls still settle and apply', async (t) => {
  const w = world(t, { memory: true });
  await w.settlement.settle((await call(w, { input: 10, output: 0 })).input);
  t.equal(w.store.accounts.byId('acc_1')?.balanceMicros, 10_000_000 - 10);
});

t.test('a journal is an orphan when nobody holds its lock, whatever its pid', async (t) => {
  const w = world(t, { busyTimeoutMs: 50 });
  const dir = journalDir(w.dbPath);
  const row = (n: number): NewUsage => ({
    requestId: `req_orphan_${n}`, accountId: 'acc_1', apiKeyId: 'key_1', model: MODEL.id, provider: 'openai', endpoint: 'chat.completions', stream: false,
    inputTokens: 10, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 10, unchargedMicros: 0, status: 200, errorType: null, latencyMs: 1, createdAt: Date.now(),
  });
  // A live daemon in another container is pid 1 too: it holds its journal's lock.
  const live = join(dir, '1.aaaaaaaaaaaa.log');
  writeFileSync(live, `${JSON.stringify(row(1))}\n`);
  const lock = new Database(join(dir, '1.aaaaaaaaaaaa.lock'));
  lock.exec('BEGIN EXCLUSIVE');
  // A previous run of a daemon that had this very pid (a restarted container): nobody's lock.
  const previous = join(dir, `${process.pid}.bbbbbbbbbbbb.log`);
  writeFileSync(previous, `${JSON.stringify(row(2))}\n`);
  t.same(w.settlement.recoverOrphans(), { applied: 1, skipped: 0, rejected: 0, complete: true }, 'only the unlocked journal');
  t.ok(existsSync(live), 'the live daemon\'s journal is left alone');
  t.notOk(existsSync(previous), 'the previous run\'s journal is applied and removed, although it has this pid');

  // The database is busy: the orphan is kept (and its lock let go) for the next scan.
  lock.close();
  const writer = new Database(w.dbPath);
  writer.exec('BEGIN IMMEDIATE');
  const busy = w.settlement.recoverOrphans();
  t.equal(busy.complete, false, 'incomplete while the database is busy');
  t.ok(existsSync(live), 'kept');
  writer.exec('ROLLBACK');
  writer.close();
  t.same(w.settlement.recoverOrphans(), { applied: 1, skipped: 0, rejected: 0, complete: true }, 'applied once the owner is gone and the database free');
  t.notOk(existsSync(live));
  t.notOk(existsSync(join(dir, '1.aaaaaaaaaaaa.lock')), 'its lock file too');
  t.equal(w.store.usage.list({ accountId: 'acc_1', limit: 10 }).length, 2);
});

t.test('while batches fail, reads do not wait on the database; a top-up still comes after the calls settled before it', async (t) => {
  const w = world(t, { busyTimeoutMs: 200 });
  await w.settlement.settle((await call(w, { input: 30, output: 0 })).input);
  const writer = new Database(w.dbPath);
  writer.exec('BEGIN IMMEDIATE');
  w.settlement.drain(); // fails after 200 ms: now retrying
  t.equal(w.settlement.failing, true);
  const started = performance.now();
  t.equal(w.store.accounts.byId('acc_1')?.balanceMicros, 10_000_000, 'a read answers with the ledger as it is');
  t.ok(performance.now() - started < 150, 'without waiting for the busy timeout');
  writer.exec('ROLLBACK');
  writer.close();
  await new Promise((resolve) => setTimeout(resolve, 400));
  t.equal(w.settlement.failing, false, 'the retry applied it');

  await w.settlement.settle((await call(w, { input: 20, output: 0 })).input);
  const { WalletService } = await import('../../src/core/management/wallet.js');
  const topup = await new WalletService(w.store).topup({ accountId: 'acc_1', amountMicros: 1000 });
  t.equal(topup.balanceMicros, 10_000_000 - 50 + 1000, 'the top-up answers the balance with every settled call');
  const entries = w.store.ledger.list('acc_1', 3).map((e) => [e.kind, e.amountMicros]);
  t.same(entries, [['topup', 1000], ['charge', -20], ['charge', -30]], 'in the order they happened');
});

t.test('closing while the database refuses batches keeps the calls in the journal for the next start', async (t) => {
  const dir = tempDir().path;
  const first = world(t, { dir, busyTimeoutMs: 50 });
  await first.settlement.settle((await call(first, { input: 40, output: 0 })).input);
  const writer = new Database(first.dbPath);
  writer.exec('BEGIN IMMEDIATE');
  await first.settlement.close();
  t.equal(first.settlement.backlog, 1, 'not applied');
  t.equal(journalLines(first).length, 1, 'still journaled');
  t.notOk(existsSync(join(journalDir(first.dbPath), 'rejected.log')), 'nothing rejected');
  await new Promise((resolve) => setTimeout(resolve, 300)); // no retry timer fires after close
  writer.exec('ROLLBACK');
  writer.close();
  const second = world(t, { dir });
  t.match(second.settlement.recoverOrphans(), { applied: 1, complete: true }, 'the next start applies it');
  t.equal(second.store.accounts.byId('acc_1')?.balanceMicros, 10_000_000 - 40);
});

t.test('the journal file keeps applied lines until it passes its trim size; a clean stop removes it', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const dbPath = join(dir.path, 'gateway.db');
  const row = (n: number): NewUsage => ({
    requestId: `req_${n}`, accountId: 'acc_1', apiKeyId: 'key_1', model: 'm', provider: 'p', endpoint: 'chat.completions', stream: false,
    inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 1, unchargedMicros: 0, status: 200, errorType: null, latencyMs: 1, createdAt: n,
  });
  const files = () => readdirSync(journalDir(dbPath)).filter((name) => name.endsWith('.log'));
  const size = () => readFileSync(join(journalDir(dbPath), files()[0] as string)).length;

  const journal = BillingJournal.open(dbPath) as BillingJournal;
  journal.append([row(1), row(2)]);
  const small = size();
  journal.clear();
  t.equal(size(), small, 'below the trim size the applied lines stay (a replay skips them)');
  let n = 3;
  while (size() < JOURNAL_TRIM_BYTES) journal.append(Array.from({ length: 500 }, () => row(n++)));
  journal.clear();
  t.equal(size(), 0, 'past it, the file is cut back');
  journal.append([row(n++)]);
  journal.close();
  t.equal(files().length, 1, 'a stop with unapplied lines keeps the file for the next start');

  const next = BillingJournal.open(dbPath) as BillingJournal;
  next.append([row(n++)]);
  next.clear();
  next.close();
  t.equal(files().length, 1, 'a clean stop with everything applied removes its file (the other is an orphan)');
});
