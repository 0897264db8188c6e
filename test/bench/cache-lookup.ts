import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { encodeAnswer, decodeAnswer, type CachedAnswer } from '../../src/core/cache/answer.js';
import { cacheKeys } from '../../src/core/cache/keys.js';
import { RedisExactTier } from '../../src/core/cache/redis-exact.js';
import { CacheStore } from '../../src/store/cache-entries.js';
import type { ChatDraft } from '../../src/core/gateway/chat.js';
import { redisReachable } from '../support/redis.js';
import { cleanRedisPrefix } from './procs.js';
import { renderCacheLookup, type CacheLookupResult, type CacheLookupSize, type LookupTiming } from './report.js';

/**
 * The response cache's lookup cost per tier, at N entries (issue: "the lookup cost of each tier
 * at 10k and 100k entries"):
 *
 *   node --import tsx test/bench/cache-lookup.ts [--sizes 10000,100000] [--semantic-sizes ...]
 *     [--lookups 2000] [--redis-url redis://127.0.0.1:6379] [--no-semantic]
 *
 * - exact tier, SQLite: a CacheStore in a temp file filled with N answers of ~1 KB, then
 *   `--lookups` getExact of random stored keys and as many of absent keys, each timed alone.
 * - exact tier, Redis: RedisExactTier under a unique key prefix (deleted after), N answers
 *   stored with `put` (pipelined, 500 in flight), then `get` of stored and absent keys, each a
 *   round trip (skipped, with the reason, when no Redis answers at --redis-url).
 * - semantic tier: test/bench/vector-lookup.ts (HNSW in its worker, 256 dimensions) at each of
 *   --semantic-sizes (default: --sizes), run as a child process; its last line is parsed.
 * - what every lookup computes first: the keys of a typical 3-message call (cacheKeys), and
 *   what every hit decodes (decodeAnswer of a ~1 KB answer).
 *
 * Timings in µs, nearest-rank percentiles. Progress goes to stderr; the table to stdout, then
 * one JSON line `{"cacheLookup": {...}}` (read by run.ts).
 */

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    'semantic-sizes': { type: 'string' },
    lookups: { type: 'string', default: '2000' },
    'redis-url': { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
    'no-semantic': { type: 'boolean', default: false },
  },
});

const parseSizes = (text: string): number[] => {
  const sizes = text.split(',').map((size) => Number(size.trim()));
  if (sizes.some((size) => !Number.isInteger(size) || size < 1)) throw new Error(`sizes take positive integers: "${text}"`);
  return sizes;
};
const sizes = parseSizes(args.sizes);
const semanticSizes = args['no-semantic'] ? [] : parseSizes(args['semantic-sizes'] ?? args.sizes);
const lookups = Number(args.lookups);
if (!Number.isInteger(lookups) || lookups < 1) throw new Error('--lookups takes a positive integer');
const redisUrl = args['redis-url'];
const DIM = 256;
const WARMUP = 200;
const MODEL = 'openai/gpt-4o-mini';
const SCOPE = 'account:acc_bench_lookup';

const began = performance.now();
const say = (text: string): void => {
  process.stderr.write(`[cache-lookup ${((performance.now() - began) / 1000).toFixed(0).padStart(3)}s] ${text}\n`);
};
const logger = pino({ level: 'warn' });

function timing(samples: number[]): LookupTiming {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
  const round = (us: number): number => Math.round(us * 100) / 100;
  return { p50: round(at(0.5)), p99: round(at(0.99)), samples: sorted.length };
}

/** Times `run` once per item (µs each), after untimed calls on `warm` (other items of the same kind). */
function timeSync<T>(items: T[], run: (item: T) => unknown, warm: T[] = items.slice(0, WARMUP)): LookupTiming {
  for (const item of warm) run(item);
  const samples: number[] = [];
  for (const item of items) {
    const started = performance.now();
    run(item);
    samples.push((performance.now() - started) * 1000);
  }
  return timing(samples);
}

async function timeAsync<T>(items: T[], run: (item: T) => Promise<unknown>, warm: T[] = items.slice(0, WARMUP)): Promise<LookupTiming> {
  for (const item of warm) await run(item);
  const samples: number[] = [];
  for (const item of items) {
    const started = performance.now();
    await run(item);
    samples.push((performance.now() - started) * 1000);
  }
  return timing(samples);
}

/** An exact key as the cache makes them (base64url SHA-256), for entry `i`. */
const keyOf = (i: number): string => createHash('sha256').update(`bench-entry-${i}`).digest('base64url');

const FILLER =
  'The response cache keeps a completed answer under the hash of everything that can change it, so that the same call made again is answered from the store without calling the provider. ';
/** A ~1 KB stored answer (encoded as the cache stores it). */
function answerOf(i: number): string {
  const answer: CachedAnswer = {
    text: `Answer ${i}. ${FILLER.repeat(5)}`.slice(0, 900),
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 42, outputTokens: 190, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
    createdAt: Date.now(),
  };
  return encodeAnswer(answer);
}

const randomInt = (n: number): number => Math.floor(Math.random() * n);
/** Untimed lookups of other random stored keys before the timed ones. */
const warmKeys = (entries: number): string[] => Array.from({ length: WARMUP }, () => keyOf(randomInt(entries)));

/** A typical call: a system prompt, the assistant's greeting, the user's question. */
function typicalDraft(i: number): ChatDraft {
  return {
    model: MODEL,
    stream: false,
    messages: [
      {
        role: 'system',
        content: [
          {
            type: 'text',
            text: 'You are the support assistant of an online bookshop. Answer in two or three sentences, politely, and only about orders, deliveries, returns and the catalogue. If you do not know, say so and offer to pass the question to a person.',
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello! How can I help you with your order today?' }], toolCalls: [] },
      { role: 'user', content: [{ type: 'text', text: `My order number ${100_000 + i} was due yesterday and has not arrived yet. Can you tell me where it is?` }] },
    ],
    temperature: 0.2,
  };
}

async function sqliteTier(entries: number, dir: string): Promise<NonNullable<CacheLookupSize['sqlite']>> {
  const path = join(dir, `cache-${entries}.db`);
  const store = CacheStore.open(path, { maxEntries: entries + 1000, maxBytes: 64 * 1024 ** 3 }, logger);
  try {
    const fillStarted = performance.now();
    const now = Date.now();
    for (let i = 0; i < entries; i++) {
      store.put({ accountId: 'acc_bench', exactKey: keyOf(i), partition: undefined, vector: undefined, model: MODEL, answer: answerOf(i), now, ttlMs: 3_600_000 });
    }
    const fillSec = (performance.now() - fillStarted) / 1000;
    if (store.size.entries !== entries) throw new Error(`SQLite store holds ${store.size.entries} entries, expected ${entries}`);
    const at = Date.now();
    let found = 0;
    const hit = timeSync(
      Array.from({ length: lookups }, () => keyOf(randomInt(entries))),
      (key) => (store.getExact(key, at) ? found++ : 0),
      warmKeys(entries),
    );
    found -= WARMUP;
    if (found < lookups) throw new Error(`SQLite: ${lookups - found} stored keys not found`);
    let wrong = 0;
    const absent = timeSync(
      Array.from({ length: lookups }, (_, i) => keyOf(entries + 1_000_000 + i)),
      (key) => (store.getExact(key, at) ? wrong++ : 0),
    );
    if (wrong > 0) throw new Error(`SQLite: ${wrong} absent keys found`);
    const bytes = (file: string): number => (existsSync(file) ? statSync(file).size : 0);
    const fileMb = (bytes(path) + bytes(`${path}-wal`)) / 2 ** 20;
    return { fillSec: Math.round(fillSec * 100) / 100, hit, absent, fileMb: Math.round(fileMb) };
  } finally {
    store.close();
  }
}

async function redisTier(entries: number): Promise<NonNullable<CacheLookupSize['redis']>> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  const prefix = `bench-lookup-${randomBytes(4).toString('hex')}:`;
  const tier = new RedisExactTier(redis, prefix);
  try {
    const fillStarted = performance.now();
    const now = Date.now();
    const inFlight = 500;
    for (let from = 0; from < entries; from += inFlight) {
      const batch: Array<Promise<number>> = [];
      for (let i = from; i < Math.min(entries, from + inFlight); i++) batch.push(tier.put('acc_bench', keyOf(i), answerOf(i), now, 3_600_000, entries + 1000, 64 * 1024 ** 3));
      await Promise.all(batch);
    }
    const fillSec = (performance.now() - fillStarted) / 1000;
    const stored = await redis.zcard(`${prefix}cache:lru`);
    if (stored !== entries) throw new Error(`Redis holds ${stored} entries, expected ${entries}`);
    const at = Date.now();
    let found = 0;
    const hit = await timeAsync(
      Array.from({ length: lookups }, () => keyOf(randomInt(entries))),
      async (key) => ((await tier.get('acc_bench', key, at)) !== undefined ? found++ : 0),
      warmKeys(entries),
    );
    found -= WARMUP;
    if (found < lookups) throw new Error(`Redis: ${lookups - found} stored keys not found`);
    let wrong = 0;
    const absent = await timeAsync(
      Array.from({ length: lookups }, (_, i) => keyOf(entries + 1_000_000 + i)),
      async (key) => ((await tier.get('acc_bench', key, at)) !== undefined ? wrong++ : 0),
    );
    if (wrong > 0) throw new Error(`Redis: ${wrong} absent keys found`);
    const memory = /used_memory:(\d+)/.exec(await redis.info('memory'))?.[1];
    return { fillSec: Math.round(fillSec * 100) / 100, hit, absent, ...(memory ? { usedMemoryMb: Math.round(Number(memory) / 2 ** 20) } : {}) };
  } finally {
    redis.disconnect();
    await cleanRedisPrefix(redisUrl, prefix).catch((error: unknown) => say(`could not delete the Redis keys under ${prefix}: ${(error as Error).message}`));
  }
}

interface VectorLine {
  entries: number;
  p50: number;
  p99: number;
  insertPerSec: number;
  missP50?: number;
  recall?: number;
}

/** test/bench/vector-lookup.ts in a child process (its own heap and worker); its lines go to stderr. */
function semanticTier(entries: number[]): Promise<VectorLine[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/vector-lookup.ts', '--sizes', entries.join(','), '--dim', String(DIM)], {
      cwd: new URL('../../', import.meta.url).pathname,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => {
      out += text;
      for (const line of text.split('\n')) if (line.trim() && !line.startsWith('{')) say(`  ${line.trim()}`);
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      try {
        const parsed = JSON.parse(last) as { vector?: VectorLine[] };
        if (code !== 0 || !Array.isArray(parsed.vector)) throw new Error(`exit code ${code}`);
        resolve(parsed.vector);
      } catch (error) {
        reject(new Error(`vector-lookup.ts failed (${(error as Error).message}): ${out.slice(-400)}`));
      }
    });
  });
}

async function main(): Promise<CacheLookupResult> {
  say(`key hashing and answer decoding (${lookups * 5} calls each)`);
  const drafts = Array.from({ length: lookups * 5 }, (_, i) => typicalDraft(i));
  const keys = timeSync(drafts, (draft) => cacheKeys(draft, MODEL, SCOPE));
  const sample = cacheKeys(typicalDraft(0), MODEL, SCOPE);
  if (!sample.semantic) throw new Error('the typical draft has no semantic key (its last message should be the user text)');
  const encoded = Array.from({ length: lookups * 5 }, (_, i) => answerOf(i));
  const decode = timeSync(encoded, (text) => {
    if (!decodeAnswer(text)) throw new Error('an answer did not decode');
  });
  const answerBytes = Buffer.byteLength(encoded[0] as string);

  const redisUp = await redisReachable(redisUrl);
  const redisSkipped = redisUp ? undefined : `no Redis answered at ${redisUrl}`;
  if (redisSkipped) say(`Redis tier skipped: ${redisSkipped}`);

  const dir = mkdtempSync(join(tmpdir(), 'bench-cache-lookup-'));
  const out: CacheLookupSize[] = [];
  try {
    for (const entries of sizes) {
      say(`exact tier, SQLite: ${entries} entries`);
      const sqlite = await sqliteTier(entries, dir);
      say(`  filled in ${sqlite.fillSec} s (${sqlite.fileMb} MB); getExact stored p50 ${sqlite.hit.p50} µs p99 ${sqlite.hit.p99} µs, absent p50 ${sqlite.absent.p50} µs p99 ${sqlite.absent.p99} µs`);
      for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, `cache-${entries}.db${suffix}`), { force: true });
      let redis: CacheLookupSize['redis'];
      if (redisUp) {
        say(`exact tier, Redis: ${entries} entries`);
        redis = await redisTier(entries);
        if (redis) say(`  filled in ${redis.fillSec} s; get stored p50 ${redis.hit.p50} µs p99 ${redis.hit.p99} µs, absent p50 ${redis.absent.p50} µs p99 ${redis.absent.p99} µs`);
      }
      out.push({ entries, sqlite, ...(redis ? { redis } : {}) });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  let semanticSkipped: string | undefined = args['no-semantic'] ? 'left out (--no-semantic)' : undefined;
  if (semanticSizes.length > 0) {
    say(`semantic tier: test/bench/vector-lookup.ts --sizes ${semanticSizes.join(',')} --dim ${DIM}`);
    const started = performance.now();
    try {
      const vectors = await semanticTier(semanticSizes);
      const semanticSec = Math.round((performance.now() - started) / 100) / 10;
      for (const v of vectors) {
        const semantic = {
          p50: Math.round(v.p50 * 1000),
          p99: Math.round(v.p99 * 1000),
          ...(v.missP50 !== undefined ? { missP50: Math.round(v.missP50 * 1000) } : {}),
          insertPerSec: v.insertPerSec,
          ...(v.recall !== undefined ? { recall: v.recall } : {}),
        };
        const row = out.find((s) => s.entries === v.entries);
        if (row) row.semantic = semantic;
        else out.push({ entries: v.entries, semantic });
      }
      say(`  semantic tier measured in ${semanticSec} s`);
    } catch (error) {
      semanticSkipped = (error as Error).message;
      say(`semantic tier failed: ${semanticSkipped}`);
    }
  }
  out.sort((a, b) => a.entries - b.entries);
  return {
    lookups,
    answerBytes,
    keys,
    decode,
    sizes: out,
    redis: { url: redisUrl, ...(redisSkipped ? { skipped: redisSkipped } : {}) },
    semantic: { dimensions: DIM, ...(semanticSkipped ? { skipped: semanticSkipped } : {}) },
    durationSec: Math.round((performance.now() - began) / 100) / 10,
  };
}

main().then(
  (result) => {
    process.stdout.write(`${renderCacheLookup(result)}\n`);
    process.stdout.write(`${JSON.stringify({ cacheLookup: result })}\n`);
  },
  (error: unknown) => {
    process.stderr.write(`cache-lookup failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
