import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import pino, { type Logger } from 'pino';
import t from 'tap';
import { VectorIndex, type VectorTuning } from '../../src/core/cache/vector-index.js';

const DIM = 256;

/** A seeded generator (mulberry32), so that a failure can be reproduced. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(next: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

function unit(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  return vector.map((x) => x / norm);
}

/** A random unit vector (uniform on the sphere). */
function randomUnit(next: () => number, dim = DIM): Float32Array {
  return unit(Float32Array.from({ length: dim }, () => gaussian(next)));
}

/** `vector` moved by noise of about `amount` (relative), back to unit length. */
function perturb(next: () => number, vector: Float32Array, amount: number): Float32Array {
  const sigma = amount / Math.sqrt(vector.length);
  return unit(vector.map((x) => x + sigma * gaussian(next)));
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
}

/** A unit vector whose cosine similarity with the unit vector `base` is exactly `cosine`. */
function atCosine(next: () => number, base: Float32Array, cosine: number): Float32Array {
  const other = randomUnit(next, base.length);
  const along = dot(other, base);
  const orthogonal = unit(other.map((x, i) => x - along * (base[i] as number)));
  const sine = Math.sqrt(1 - cosine * cosine);
  return base.map((x, i) => cosine * x + sine * (orthogonal[i] as number));
}

interface LogLine {
  level: number;
  msg: string;
}

function capture(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

const silent = pino({ level: 'silent' });

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

function open(test: Test, tuning?: Partial<VectorTuning>, databasePath?: string, logger: Logger = silent): VectorIndex {
  const index = VectorIndex.open({ logger, tuning, databasePath });
  test.teardown(() => index.close());
  return index;
}

// Every behaviour, with small partitions kept flat (the default) and with HNSW from the first entry.
const MODES: Array<[string, Partial<VectorTuning>]> = [
  ['flat', {}],
  ['hnsw', { flatLimit: 0 }],
];

for (const [mode, tuning] of MODES) {
  t.test(`${mode}: the best match in the partition`, async (t) => {
    const next = random(1);
    const index = open(t, tuning);
    const stored = Array.from({ length: 50 }, () => randomUnit(next));
    stored.forEach((vector, i) => index.add('p', i + 1, vector));
    t.equal(await index.size(), 50);
    for (const target of [0, 17, 49]) {
      const query = perturb(next, stored[target] as Float32Array, 0.3);
      const match = await index.search('p', query, 0.5);
      t.equal(match?.id, target + 1, `entry ${target + 1} is found`);
      t.ok(Math.abs((match?.similarity ?? 0) - dot(query, stored[target] as Float32Array)) < 1e-5, 'its similarity is the cosine');
    }
    t.equal(await index.search('p', randomUnit(next), 0.5), undefined, 'nothing similar: a miss');
  });

  t.test(`${mode}: the threshold`, async (t) => {
    const next = random(2);
    const index = open(t, tuning);
    const base = randomUnit(next);
    index.add('p', 7, base);
    for (const cosine of [0.95, 0.8, 0.3, -0.2]) {
      const query = atCosine(next, base, cosine);
      const match = await index.search('p', query, cosine - 0.001);
      t.equal(match?.id, 7, `similarity ${cosine} against a threshold just below`);
      t.ok(Math.abs((match?.similarity ?? 9) - cosine) < 1e-5, 'reported as the cosine');
      t.equal(await index.search('p', query, cosine + 0.001), undefined, `not against a threshold just above ${cosine}`);
    }
    t.equal((await index.search('p', base, 1 - 1e-5))?.id, 7, 'the vector itself: similarity 1');
    t.equal(await index.search('p', base, NaN), undefined, 'a NaN threshold lets nothing through');
    t.equal((await index.search('p', base.map((x) => x * 3), 0.999))?.id, 7, 'a query that is not unit length is compared by angle');
  });

  t.test(`${mode}: partitions are isolated`, async (t) => {
    const next = random(3);
    const index = open(t, tuning);
    const shared = randomUnit(next);
    index.add('account-a', 1, shared);
    index.add('account-b', 2, atCosine(next, shared, 0.6));
    for (let i = 0; i < 30; i++) index.add('account-b', 100 + i, randomUnit(next));
    t.equal((await index.search('account-a', shared, 0.9))?.id, 1);
    t.equal(await index.search('account-b', shared, 0.9), undefined, 'another partition\'s identical vector is never returned');
    t.equal((await index.search('account-b', shared, 0.5))?.id, 2, 'only the partition\'s own best');
    t.equal(await index.search('account-c', shared, -1), undefined, 'an unknown partition: a miss');
    t.equal(await index.search('account-a', randomUnit(next, 128), -1), undefined, 'a query of another dimension: a miss');
  });

  t.test(`${mode}: remove, replace, move`, async (t) => {
    const next = random(4);
    const index = open(t, tuning);
    const first = randomUnit(next);
    const second = atCosine(next, first, 0.9);
    index.add('p', 1, first);
    index.add('p', 2, second);
    index.add('q', 3, randomUnit(next));
    t.equal((await index.search('p', first, 0.5))?.id, 1);
    index.remove([1, 999]);
    const match = await index.search('p', first, 0.5);
    t.equal(match?.id, 2, 'the next best once the best is removed; an unknown id is ignored');
    t.equal(await index.size(), 2);

    index.add('p', 2, randomUnit(next));
    t.equal(await index.search('p', first, 0.5), undefined, 'an id added again replaces its vector');
    index.add('p', 4, first);
    index.add('q', 4, first);
    t.equal(await index.search('p', first, 0.5), undefined, 'an id added to another partition leaves the first one');
    t.equal((await index.search('q', first, 0.5))?.id, 4);

    index.remove([2, 3, 4]);
    t.equal(await index.size(), 0);
    t.equal(await index.search('p', first, -1), undefined, 'an emptied partition is gone');
    index.add('p', 5, first);
    t.equal((await index.search('p', first, 0.5))?.id, 5, 'and can start again');
  });
}

t.test('a partition grows into an HNSW index and shrinks back, staying exact', async (t) => {
  const next = random(5);
  // HNSW from 16 entries, back to flat under 4; a small M, so that removals disturb the graph.
  const index = open(t, { flatLimit: 16, m: 4, efConstruction: 20 });
  const stored = new Map<number, Float32Array>();
  const check = async (label: string): Promise<void> => {
    let misses = 0;
    for (const [id, vector] of stored) if ((await index.search('p', perturb(next, vector, 0.2), 0.5))?.id !== id) misses += 1;
    t.equal(misses, 0, `${label}: every entry is found (${stored.size})`);
  };
  for (let id = 1; id <= 200; id++) {
    const vector = randomUnit(next);
    stored.set(id, vector);
    index.add('p', id, vector);
  }
  await check('grown');
  const ids = [...stored.keys()];
  for (const id of ids.slice(0, 150)) stored.delete(id);
  index.remove(ids.slice(0, 150));
  await check('shrunk');
  for (const id of ids.slice(150, 198)) stored.delete(id);
  index.remove(ids.slice(150, 198));
  await check('back to flat');
  for (let id = 1000; id < 1100; id++) {
    const vector = randomUnit(next);
    stored.set(id, vector);
    index.add('p', id, vector);
  }
  await check('grown again, reusing deleted slots');
  t.equal(await index.size(), stored.size);
});

t.test('the exact nearest neighbour of 99% of near-duplicate queries among 2,000 entries', async (t) => {
  const next = random(6);
  const index = open(t); // the default tuning: 2,000 entries are an HNSW index
  const stored = Array.from({ length: 2000 }, () => randomUnit(next));
  stored.forEach((vector, i) => index.add('p', i + 1, vector));
  let found = 0;
  for (let q = 0; q < 100; q++) {
    const query = perturb(next, stored[Math.floor(next() * stored.length)] as Float32Array, 0.5);
    let best = -Infinity;
    let bestId = 0;
    stored.forEach((vector, i) => {
      const similarity = dot(query, vector);
      if (similarity > best) [best, bestId] = [similarity, i + 1];
    });
    if ((await index.search('p', query, 0))?.id === bestId) found += 1;
  }
  t.ok(found >= 99, `found ${found} of 100`);
});

t.test('loads the unexpired vectors from the database at start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vector-index-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'gateway.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE cache_entries (id INTEGER PRIMARY KEY, partition TEXT NOT NULL, vector BLOB, expires_at INTEGER NOT NULL)');
  const insert = db.prepare<[number, string, Buffer | null, number]>('INSERT INTO cache_entries (id, partition, vector, expires_at) VALUES (?, ?, ?, ?)');
  const blob = (vector: Float32Array): Buffer => {
    const buffer = Buffer.alloc(vector.length * 4);
    vector.forEach((x, i) => buffer.writeFloatLE(x, i * 4));
    return buffer;
  };
  const next = random(7);
  const later = Date.now() + 3_600_000;
  const kept = randomUnit(next);
  const expired = randomUnit(next);
  const wrongDimension = randomUnit(next, 128);
  const many = Array.from({ length: 1500 }, () => randomUnit(next)); // pages of 256 rows; an HNSW index from 512
  db.transaction(() => {
    insert.run(1, 'a', blob(kept), later);
    insert.run(2, 'a', blob(expired), Date.now() - 1000);
    insert.run(3, 'a', blob(wrongDimension), later);
    insert.run(4, 'a', null, later);
    many.forEach((vector, i) => insert.run(10 + i, 'b', blob(vector), later));
  })();
  db.close();

  const { logger, lines } = capture();
  const index = open(t, {}, path, logger);
  await index.loaded();
  t.equal(await index.size(), 1 + many.length, 'the unexpired vectors of the partition\'s dimension');
  t.equal((await index.search('a', kept, 0.99))?.id, 1);
  t.equal(await index.search('a', expired, 0.99), undefined, 'an expired row is not loaded');
  t.equal(await index.search('a', wrongDimension, -1), undefined, 'a vector of another dimension is not loaded');
  t.equal((await index.search('b', many[1234] as Float32Array, 0.99))?.id, 1244);
  t.ok(lines.some((line) => line.level === 20 && /another dimension/.test(line.msg)), 'the wrong dimension is logged at debug');
  t.same(lines.filter((line) => line.level >= 40), [], 'no warning');

  // The load yields between chunks: requests sent at once are answered before it ends.
  const second = open(t, {}, path, silent);
  // Rows load in id order: when `size` answers with at least one entry, row 1 is in, and the
  // search sent after it (answered after it) finds it. (Searching for a later row raced the load.)
  const [early, during] = await Promise.all([second.size(), second.search('a', kept, 0.99)]);
  t.ok(early < 1 + many.length, `answered during the load (${early} entries loaded then)`);
  t.ok(early === 0 || during?.id === 1, `a search during the load finds what is loaded already (${early} loaded, found ${during?.id})`);
  await second.loaded();
  t.equal(await second.size(), 1 + many.length);
});

t.test('no database file or no cache table: empty, nothing alarming logged', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vector-index-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { logger, lines } = capture();
  const missing = open(t, {}, join(dir, 'missing.db'), logger);
  await missing.loaded();
  t.equal(await missing.size(), 0);
  const path = join(dir, 'other.db');
  new Database(path).exec('CREATE TABLE other (x)');
  const noTable = open(t, {}, path, logger);
  await noTable.loaded();
  t.equal(await noTable.size(), 0);
  t.same(lines.filter((line) => line.level >= 40), [], 'no warning or error');
  t.equal(new Database(path).prepare('SELECT count(*) AS n FROM sqlite_master').pluck().get(), 1, 'the file is left as it was');
});

t.test('a dead worker: searches miss, nothing throws, logged once', async (t) => {
  const next = random(8);
  const { logger, lines } = capture();
  const index = open(t, {}, undefined, logger);
  const vector = randomUnit(next);
  index.add('p', 1, vector);
  t.equal((await index.search('p', vector, 0.9))?.id, 1);
  // As a crash would: the worker goes away without close(), before it answers a search that is
  // waiting (it exits on the message queued before the search: deterministic, and never inside
  // hnswlib, where terminating a worker can abort the process).
  const keepAlive = setInterval(() => undefined, 1000);
  t.teardown(() => clearInterval(keepAlive));
  (index as unknown as { post(message: { type: 'close' }): void }).post({ type: 'close' });
  const pending = index.search('p', vector, 0.9);
  t.equal(await pending, undefined, 'a search waiting when it died resolves as a miss');
  t.equal(await index.search('p', vector, 0.9), undefined, 'and every search after');
  index.add('p', 2, vector);
  index.remove([1]);
  t.equal(await index.size(), 0);
  await index.loaded();
  t.equal(lines.filter((line) => line.level >= 50).length, 1, 'logged once, as an error');
  await index.close();
});

t.test('close: waiting searches resolve as misses', async (t) => {
  const next = random(9);
  const index = VectorIndex.open({ logger: silent });
  for (let i = 1; i <= 3000; i++) index.add('p', i, randomUnit(next));
  const pending = index.search('p', randomUnit(next), 0);
  await index.close();
  t.equal(await pending, undefined);
  t.equal(await index.search('p', randomUnit(next), 0), undefined);
  await index.close(); // twice is fine
});

t.test('close while the worker is busy in hnswlib: it exits between two messages, the process lives on', async (t) => {
  const next = random(10);
  const index = VectorIndex.open({ logger: silent, tuning: { flatLimit: 0 } });
  // A long run of HNSW inserts queued: close() arrives while the worker is inside addPoint.
  for (let i = 1; i <= 4000; i++) index.add('p', i, randomUnit(next));
  await new Promise((resolve) => setTimeout(resolve, 20));
  const worker = (index as unknown as { worker: Worker }).worker;
  let exitCode: number | undefined;
  worker.once('exit', (code) => {
    exitCode = code;
  });
  await index.close();
  t.equal(exitCode, 0, 'the worker exited by itself (not terminated mid-call)');
});
