import { parseArgs } from 'node:util';
import pino from 'pino';
import { DEFAULT_TUNING, VectorIndex } from '../../src/core/cache/vector-index.js';

/**
 * The semantic cache's vector lookup, through the worker (src/core/cache/vector-index.ts):
 *
 *   node --import tsx test/bench/vector-lookup.ts [--sizes 10000,100000] [--dim 256]
 *     [--queries 1000] [--m 16] [--ef 128] [--ef-construction 100]
 *
 * For each size, one partition of N random unit vectors (plus a few small partitions beside
 * it), then `--queries` sequential searches, each a near-duplicate of a stored vector (cosine
 * ≈ 0.96, a cache hit), timed as the caller sees them: post, search, reply. Also: the insert
 * rate (adds until the worker has indexed them all), 200 searches for unrelated vectors (a
 * miss), the recall of the exact nearest neighbour on 100 queries, and a plain JS scan of the
 * same vectors on the main thread for comparison.
 *
 * Random vectors are HNSW's worst case (no clusters), so inserts are slower here than with
 * real embeddings. The last line is JSON for the benchmark runner.
 */

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    dim: { type: 'string', default: '256' },
    queries: { type: 'string', default: '1000' },
    m: { type: 'string' },
    ef: { type: 'string' },
    'ef-construction': { type: 'string', default: '100' },
  },
});

const sizes = args.sizes.split(',').map((size) => Number(size));
const dim = Number(args.dim);
const queries = Number(args.queries);
// The gateway's tuning, except efConstruction: building 100k random vectors with the gateway's
// 200 takes over two minutes on two cores, so the benchmark builds with 100 unless told.
const tuning = {
  m: args.m === undefined ? DEFAULT_TUNING.m : Number(args.m),
  ef: args.ef === undefined ? DEFAULT_TUNING.ef : Number(args.ef),
  efConstruction: Number(args['ef-construction']),
};
const positive = [...sizes, dim, queries, tuning.m, tuning.ef, tuning.efConstruction];
if (positive.some((value) => !Number.isInteger(value) || value < 1)) {
  throw new Error('--sizes, --dim, --queries, --m, --ef and --ef-construction take positive integers');
}

/** A random unit vector (uniform on the sphere: normal coordinates, scaled). */
function randomUnit(into: Float32Array = new Float32Array(dim)): Float32Array {
  let sum = 0;
  for (let i = 0; i < into.length; i += 2) {
    // Box–Muller: two normal values from two uniform ones.
    const radius = Math.sqrt(-2 * Math.log(1 - Math.random()));
    const angle = 2 * Math.PI * Math.random();
    into[i] = radius * Math.cos(angle);
    if (i + 1 < into.length) into[i + 1] = radius * Math.sin(angle);
  }
  for (const x of into) sum += x * x;
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < into.length; i++) into[i] = (into[i] as number) * scale;
  return into;
}

/** `vector` plus noise of relative size `amount`, back to unit length. */
function nearDuplicate(vector: Float32Array, amount: number): Float32Array {
  const noise = randomUnit();
  const moved = vector.map((x, i) => x + amount * (noise[i] as number));
  let sum = 0;
  for (const x of moved) sum += x * x;
  const norm = Math.sqrt(sum);
  return moved.map((x) => x / norm);
}

/** The exact nearest neighbour by a plain scan (what the worker saves us from). */
function bruteForce(data: Float32Array, count: number, query: Float32Array): number {
  let best = -Infinity;
  let bestId = 0;
  for (let slot = 0, offset = 0; slot < count; slot++, offset += dim) {
    let dot = 0;
    for (let i = 0; i < dim; i++) dot += (data[offset + i] as number) * (query[i] as number);
    if (dot > best) {
      best = dot;
      bestId = slot + 1;
    }
  }
  return bestId;
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;

interface SizeResult {
  entries: number;
  p50: number;
  p99: number;
  insertPerSec: number;
  missP50: number;
  recall: number;
  bruteP50: number;
  bruteP99: number;
}

async function measure(entries: number): Promise<SizeResult> {
  const index = VectorIndex.open({ logger: pino({ level: 'warn' }), tuning });
  try {
    const data = new Float32Array(entries * dim);
    for (let slot = 0; slot < entries; slot++) randomUnit(data.subarray(slot * dim, (slot + 1) * dim));
    const vectorOf = (id: number): Float32Array => data.subarray((id - 1) * dim, id * dim);

    // Other partitions beside the measured one, as in a real cache (ids above the main ones).
    let otherId = entries + 1;
    for (let partition = 0; partition < 5; partition++) {
      for (let i = 0; i < 200; i++) index.add(`other-${partition}`, otherId++, randomUnit());
    }
    await index.size();

    const insertStarted = performance.now();
    for (let id = 1; id <= entries; id++) index.add('main', id, vectorOf(id));
    const indexed = await index.size(); // answered after every add before it
    const insertSeconds = (performance.now() - insertStarted) / 1000;
    if (indexed !== entries + 1000) throw new Error(`indexed ${indexed}, expected ${entries + 1000}`);

    const targets = Array.from({ length: queries }, () => 1 + Math.floor(Math.random() * entries));
    const hitQueries = targets.map((id) => nearDuplicate(vectorOf(id), 0.3));
    for (const query of hitQueries.slice(0, 50)) await index.search('main', query, 0.8); // warm-up
    const latencies: number[] = [];
    const found: Array<number | undefined> = [];
    for (const query of hitQueries) {
      const started = performance.now();
      const match = await index.search('main', query, 0.8);
      latencies.push(performance.now() - started);
      found.push(match?.id);
    }
    const missLatencies: number[] = [];
    for (let i = 0; i < 200; i++) {
      const query = randomUnit();
      const started = performance.now();
      await index.search('main', query, 0.8);
      missLatencies.push(performance.now() - started);
    }

    // The JS scan costs up to ~50 ms a query at 100k, so 100 queries (also the recall sample).
    const bruteLatencies: number[] = [];
    let recalled = 0;
    const sample = Math.min(100, queries);
    for (let q = 0; q < sample; q++) {
      const started = performance.now();
      const exact = bruteForce(data, entries, hitQueries[q] as Float32Array);
      bruteLatencies.push(performance.now() - started);
      if (found[q] === exact) recalled += 1;
    }

    return {
      entries,
      p50: round(percentile(latencies, 0.5)),
      p99: round(percentile(latencies, 0.99)),
      insertPerSec: Math.round(entries / insertSeconds),
      missP50: round(percentile(missLatencies, 0.5)),
      recall: recalled / sample,
      bruteP50: round(percentile(bruteLatencies, 0.5)),
      bruteP99: round(percentile(bruteLatencies, 0.99)),
    };
  } finally {
    await index.close();
  }
}

const results: SizeResult[] = [];
for (const entries of sizes) {
  const result = await measure(entries);
  results.push(result);
  console.log(
    `vector lookup, ${entries} × ${dim}d (M ${tuning.m}, efConstruction ${tuning.efConstruction}, ef ${tuning.ef}): ` +
      `search p50 ${result.p50} ms, p99 ${result.p99} ms (miss p50 ${result.missP50} ms), recall@1 ${(result.recall * 100).toFixed(0)}%, ` +
      `insert ${result.insertPerSec}/s; JS scan p50 ${result.bruteP50} ms, p99 ${result.bruteP99} ms`,
  );
}
console.log(JSON.stringify({ vector: results }));
