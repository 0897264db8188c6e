import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { loadConfig } from '../../src/config/load.js';
import { completionTokens } from '../support/simulator/tokens.js';
import { closedLoop, EMBEDDING_INPUT, makeTarget, openLoop, SPEECH_INPUT, specFor, WORKLOADS, type ClosedResult, type Target, type WorkloadId } from './load.js';
import { CLK_TCK, cleanRedisPrefix, gatewayRunsCompiled, localPostgresCpu, localRedisPid, memory, postgresCpuSince, startFloor, startGatewayProc, startPortkey, startSimulator, PORTKEY_VERSION, type GatewayProc, type Memory, type Proc } from './procs.js';
import { evaluate, machineInfo, render, summarizeOpen, summarizeTarget, topSelfTime, writeResults, type BenchResult, type CacheBilling, type CacheLookupResult, type CacheOutcomes, type CliStartResult, type LedgerCheck, type ModelBilling, type OpenSummary, type WorkloadResult } from './report.js';
import { slowStreams, type SlowStreamsResult } from './streams.js';
import { cliStart } from './cli-start.js';
import { dashboardPaths, type DashboardPathResult } from './dashboard.js';
import { redisReachable } from '../support/redis.js';
import { telemetryAb, telemetryChecks, type AbResult } from './telemetry-ab.js';

/**
 * The benchmark (issue 5): the gateway against a bare pass-through floor and the simulator
 * called directly, side by side in one run.
 *
 *   node --import tsx test/bench/run.ts [--quick] [--redis] [--redis-url URL] [--postgres] [--postgres-url URL] [--profile]
 *
 * --only chat,stream,messages,embeddings,speech,cache-hit,cache-miss,cache-lookup limits the
 * workloads and skips the slow-streams phase (e.g. `--only chat --profile`); `--only
 * embeddings-float` runs the float form of the embeddings call, left out of a full run.
 *
 * The response cache: cache-hit and cache-miss run against one more daemon, `gateway-cache`
 * (cache on, exact tier for every model, semantic tier off), next to the plain `gateway` and
 * direct (not the floor: the plain gateway is the reference); cache-lookup runs
 * test/bench/cache-lookup.ts (each tier's lookup cost at 10k and 100k entries; 10k with
 * --quick) after the processes are stopped.
 * --postgres adds `gateway-postgres`, a daemon whose store is PostgreSQL (`database.url`: a
 * scratch database `bench_<hex>` created through --postgres-url, an admin URL that may CREATE
 * DATABASE, default postgres://postgres@127.0.0.1:5432/postgres), and with --redis also
 * `gateway-pg-redis` (its own scratch database, plus Redis under its own key prefix). The
 * ledger checks read those databases; a local server's CPU per request is the sum over every
 * `postgres` process (server, background processes, one backend per connection). The scratch
 * databases are dropped at the end (WITH (FORCE)), also when the run fails or is interrupted.
 * --portkey adds Portkey's open-source gateway (@portkey-ai/gateway, the version the independent
 * benchmark of issue 17 ran; installed into bench-results/.portkey from the npm registry on first
 * use) to the chat JSON workload, pointed at the simulator (its streams fail on Node 20).
 * Metrics and traces (issue 31): a full run (not --only, not --profile) ends with two interleaved
 * A/B probes of this checkout's daemon against itself (test/bench/telemetry-ab.ts): metrics off,
 * and traces on at 100% sampling, each against the default (metrics on, traces off).
 * --profile runs the gateway under --cpu-prof and prints its top self-time functions (its CPU
 * numbers are then inflated; results go to bench-results/profile-*.json, not latest.json).
 */

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    redis: { type: 'boolean', default: false },
    'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379' },
    postgres: { type: 'boolean', default: false },
    'postgres-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    profile: { type: 'boolean', default: false },
    portkey: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});

const ROOT = new URL('../../', import.meta.url).pathname;
const OUT_DIR = join(ROOT, 'bench-results');

// The media workloads (embeddings, speech) run fewer rounds than the chat ones in a full run,
// so that they add under two minutes to it.
// The cache workloads (three targets each) take the media workloads' rounds: together with the
// extra daemon they add about a minute and a half to a full run.
const plan = args.quick
  ? { rounds: 2, openRounds: 2, fixedRounds: 2, mediaRounds: 2, mediaOpenRounds: 2, warmupMs: 500, closedWarmMs: 150, closedMs: 600, openMs: 1000, concurrency: 50, fixedRate: 200, streams: 1000, chunkDelayMs: 1000, streamWaitMs: 5000, streamSettleMs: 1000, keys: 64, floorStreams: 0, cliRuns: 5, dashboardConcurrency: 8, dashboardMs: 1000 }
  : { rounds: 3, openRounds: 5, fixedRounds: 3, mediaRounds: 2, mediaOpenRounds: 3, warmupMs: 1500, closedWarmMs: 300, closedMs: 2500, openMs: 3000, concurrency: 50, fixedRate: 200, streams: 1000, chunkDelayMs: 1000, streamWaitMs: 10_000, streamSettleMs: 2000, keys: 64, floorStreams: 1, cliRuns: 15, dashboardConcurrency: 8, dashboardMs: 3000 };
/** cache-lookup.ts sizes (entries per tier). */
const LOOKUP_SIZES = args.quick ? '10000' : '10000,100000';
/** The cache-enabled daemon's `cache:` section: exact tier for every model, no semantic tier. */
const CACHE_CONFIG = { enabled: true, exact: { models: ['*'] }, semantic: { models: [] } };
const CACHE_GATEWAY = 'gateway-cache';
const POSTGRES_GATEWAY = 'gateway-postgres';
/** How long every process is left without work before its idle RSS is read. */
const IDLE_WAIT_MS = args.quick ? 5000 : 15_000;
const PG_REDIS_GATEWAY = 'gateway-pg-redis';

const began = performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const say = (text: string): void => {
  process.stderr.write(`[bench ${((performance.now() - began) / 1000).toFixed(0).padStart(3)}s] ${text}\n`);
};

const procs: Proc[] = [];
const tempDirs: string[] = [];
let stopping = false;
async function stopAll(): Promise<void> {
  for (const proc of [...procs].reverse()) await proc.stop(5000).catch(() => null);
}
process.on('SIGINT', () => {
  if (stopping) process.exit(130);
  stopping = true;
  say('interrupted: stopping the children');
  void stopAll()
    .then(dropScratchDatabases)
    .then(() => {
      for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
});

/** The admin URL with its password masked (for messages). */
function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

async function postgresReachable(url: string): Promise<string | undefined> {
  const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => undefined });
  try {
    await sql`SELECT 1`;
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
}

/** Scratch databases created by this run (dropped by dropScratchDatabases). */
const scratchDatabases: string[] = [];

/** A new, empty database `bench_<hex>` on the --postgres-url server; returns its URL. */
async function createScratchDatabase(adminUrl: string): Promise<string> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, connect_timeout: 5, onnotice: () => undefined });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
    scratchDatabases.push(name);
  } finally {
    await admin.end({ timeout: 1 });
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops this run's scratch databases (ending the connections still open to them); never throws. */
async function dropScratchDatabases(): Promise<void> {
  if (scratchDatabases.length === 0) return;
  const admin = postgres(args['postgres-url'], { max: 1, connect_timeout: 5, onnotice: () => undefined });
  try {
    for (const name of scratchDatabases.splice(0)) {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((error: Error) => say(`could not drop the scratch database ${name}: ${error.message}`));
    }
  } finally {
    await admin.end({ timeout: 1 }).catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const only = args.only?.split(',').map((w) => w.trim());
  for (const w of only ?? []) if (!(w in WORKLOADS) && w !== 'cache-lookup') throw new Error(`--only: unknown workload "${w}" (${[...Object.keys(WORKLOADS), 'cache-lookup'].join(', ')})`);
  const selected = (Object.keys(WORKLOADS) as WorkloadId[]).filter((w) => (only ? only.includes(w) : !WORKLOADS[w].optIn));
  const cacheWorkloads = selected.some((w) => WORKLOADS[w].cache);
  const lookupPhase = only ? only.includes('cache-lookup') : true;
  const redisUrl = args['redis-url'];
  if (args.redis && !(await redisReachable(redisUrl))) throw new Error(`--redis: no Redis at ${redisUrl}`);
  const postgresUrl = args['postgres-url'];
  if (args.postgres) {
    const problem = await postgresReachable(postgresUrl);
    if (problem) throw new Error(`--postgres: no PostgreSQL at ${redacted(postgresUrl)} (${problem})`);
  }
  const gatewayEntry = `${gatewayRunsCompiled() ? 'dist/ (compiled)' : 'src/ through tsx (dist/ missing or stale)'}, ${sourceState()}`;
  say(`starting the simulator, the floor and the gateway${args.redis || args.postgres ? 's' : ''} (gateway runs ${gatewayEntry})`);
  const sim = await startSimulator();
  procs.push(sim);
  const profileDir = join(OUT_DIR, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
  if (args.profile) mkdirSync(profileDir, { recursive: true });
  // The floor and every gateway run under the same Node flags (none, or --cpu-prof for --profile).
  const nodeArgs = args.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  // Two floors (issue 32): the minimal proxy (judged against) and the same with abort propagation.
  const floorProc = await startFloor(sim.url, sim.key, nodeArgs, 'minimal');
  procs.push(floorProc);
  const floorAbortProc = await startFloor(sim.url, sim.key, nodeArgs, 'abort');
  procs.push(floorAbortProc);
  const portkeyProc = args.portkey ? await startPortkey(nodeArgs) : undefined;
  if (portkeyProc) procs.push(portkeyProc);
  const gateways: GatewayProc[] = [];
  const start = async (name: string, store: { redis?: { url: string; keyPrefix: string }; databaseUrl?: string; cache?: Record<string, unknown> } = {}): Promise<void> => {
    const { redis, databaseUrl, cache } = store;
    const gw = await startGatewayProc({
      name,
      simUrl: sim.url,
      simKey: sim.key,
      keys: plan.keys,
      ...(redis ? { redis } : {}),
      ...(databaseUrl ? { databaseUrl } : {}),
      ...(cache ? { cache } : {}),
      nodeArgs,
    });
    procs.push(gw);
    tempDirs.push(gw.dir);
    gateways.push(gw);
  };
  await start('gateway');
  const redisPrefix = `bench-${randomBytes(4).toString('hex')}:`;
  const redisPid = args.redis ? localRedisPid(redisUrl) : undefined;
  if (args.redis) await start('gateway-redis', { redis: { url: redisUrl, keyPrefix: redisPrefix } });
  // gateway-pg-redis gets its own key prefix (cleaned at the end like gateway-redis's).
  const pgRedisPrefix = `bench-${randomBytes(4).toString('hex')}:`;
  const pgGateways = new Set<string>();
  if (args.postgres) {
    await start(POSTGRES_GATEWAY, { databaseUrl: await createScratchDatabase(postgresUrl) });
    pgGateways.add(POSTGRES_GATEWAY);
    if (args.redis) {
      await start(PG_REDIS_GATEWAY, { databaseUrl: await createScratchDatabase(postgresUrl), redis: { url: redisUrl, keyPrefix: pgRedisPrefix } });
      pgGateways.add(PG_REDIS_GATEWAY);
    }
  }
  // Whether the PostgreSQL server's processes can be read here (a local server): their CPU is
  // then reported for the PostgreSQL targets.
  const postgresLocal = args.postgres && localPostgresCpu(postgresUrl) !== undefined;
  if (args.postgres && !postgresLocal) say(`PostgreSQL at ${redacted(postgresUrl)} is not a local server with readable processes: its CPU is not measured`);
  const redisGateways = new Set(['gateway-redis', PG_REDIS_GATEWAY]);
  /** One open-loop round with the CPU of the target, the simulator, Redis and PostgreSQL (where they serve it) and the harness. */
  const measuredOpenLoop = async (t: Target, spec: ReturnType<typeof specFor>, rate: number): Promise<OpenSummary> => {
    const harness0 = process.cpuUsage();
    const redis = redisGateways.has(t.id) ? redisPid : undefined;
    // Every local postgres process, read around the open loop (backends come and go).
    const postgres0 = postgresLocal && pgGateways.has(t.id) ? localPostgresCpu(postgresUrl) : undefined;
    const result = await openLoop(t, spec, rate, plan.openMs, [...new Set([t.pid, sim.pid, ...(redis ? [redis] : [])])]);
    const postgresCpu = postgres0 ? postgresCpuSince(postgres0, postgresUrl) : undefined;
    const harness = process.cpuUsage(harness0);
    return summarizeOpen(result, t.pid, sim.pid, harness.user + harness.system, redis, postgresCpu);
  };
  const cacheStartMs = performance.now();
  if (cacheWorkloads) await start(CACHE_GATEWAY, { cache: CACHE_CONFIG });
  const cacheGatewayStartMs = performance.now() - cacheStartMs;

  await sleep(1000);
  const readAll = (): Record<string, Memory> => {
    const out: Record<string, Memory> = { floor: memory(floorProc.pid), 'floor-abort': memory(floorAbortProc.pid), ...(portkeyProc ? { portkey: memory(portkeyProc.pid) } : {}) };
    for (const gw of gateways) out[gw.name] = memory(gw.pid);
    out.simulator = memory(sim.pid);
    return out;
  };
  // RSS twice: a second after the setup (its accounts, keys and top-ups) and again once every
  // process has been idle for IDLE_WAIT_MS, when V8 has released what starting up allocated
  // (its memory reducer runs after a few seconds without work, in every process alike).
  const started = readAll();
  say(`RSS after start: ${Object.entries(started).map(([k, v]) => `${k} ${v.rssMb.toFixed(0)} MB`).join(', ')}; idle for ${IDLE_WAIT_MS / 1000} s`);
  await sleep(IDLE_WAIT_MS);
  const idle = readAll();
  say(`idle RSS: ${Object.entries(idle).map(([k, v]) => `${k} ${v.rssMb.toFixed(0)} MB`).join(', ')}`);

  // The CLI's start, while the daemons are idle (the figures are wall times).
  let cliStartResult: CliStartResult | undefined;
  if (!only) {
    const gw = gateways[0] as GatewayProc;
    say(`CLI start times (${plan.cliRuns} runs of each command against ${gw.name})`);
    cliStartResult = await cliStart(gw.url, gw.adminKey, plan.cliRuns);
    say(`  ${cliStartResult.commands.map((c) => `${c.command} ${c.medianMs.toFixed(0)} ms`).join(', ')}; node -e 0 ${cliStartResult.nodeBareMs.toFixed(0)} ms`);
  }

  const direct = makeTarget('direct', 'direct', sim.url, sim.pid, [sim.key]);
  const floor = makeTarget('floor', 'floor', floorProc.url, floorProc.pid, ['floor-needs-no-key']);
  const floorAbort = makeTarget('floor-abort', 'floor', floorAbortProc.url, floorAbortProc.pid, ['floor-needs-no-key']);
  const gwTargets = gateways.map((gw) => makeTarget(gw.name, 'gateway', gw.url, gw.pid, gw.keys));
  // Portkey gets the simulator as a custom OpenAI host, per request (its documented headers).
  const portkey = portkeyProc ? makeTarget('portkey', 'portkey', portkeyProc.url, portkeyProc.pid, [sim.key], 64, { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${sim.url}/v1` }) : undefined;
  const targets: Target[] = [direct, floor, floorAbort, ...(portkey ? [portkey] : []), ...gwTargets];
  // The cache-enabled daemon takes part in the cache workloads only; those run against it, the
  // plain gateway (the reference) and direct (for the added latency).
  const plainGwTargets = gwTargets.filter((t) => t.id !== CACHE_GATEWAY);
  const targetsFor = (id: WorkloadId): Target[] =>
    WORKLOADS[id].cache
      ? targets.filter((t) => t.id === 'direct' || t.id === 'gateway' || t.id === CACHE_GATEWAY)
      : targets.filter((t) => t.id !== CACHE_GATEWAY && (t.kind !== 'portkey' || id === 'chat'));

  const workloads: WorkloadResult[] = [];
  // Completed calls per target and workload (warm-up included), for the ledger check by model.
  const okCalls = new Map<string, Partial<Record<WorkloadId, number>>>(targets.map((t) => [t.id, {}]));
  let cacheWorkloadsMs = 0;
  for (const id of selected) {
    const { label, media, cache } = WORKLOADS[id];
    const workloadStarted = performance.now();
    const targets = targetsFor(id);
    const gwTargets = targets.filter((t) => t.kind === 'gateway');
    const rounds = media || cache ? plan.mediaRounds : plan.rounds;
    const openRounds = media || cache ? plan.mediaOpenRounds : plan.openRounds;
    const okBefore = new Map(targets.map((t) => [t.id, t.counts.ok]));
    const specs = new Map(targets.map((t) => [t.id, specFor(t, id)]));
    const spec = (t: Target) => specs.get(t.id) as ReturnType<typeof specFor>;
    const outcomes0 = new Map(targets.map((t) => [t.id, { ...t.cacheOutcomes }]));
    say(`${label}: warm-up`);
    // The cache workloads warm up twice as long: gateway-cache sees its first calls here, and a
    // daemon's first workload is slower until its hot paths are compiled.
    const warmupMs = cache ? 2 * plan.warmupMs : plan.warmupMs;
    for (const t of targets) await closedLoop(t, spec(t), plan.concurrency, 0, warmupMs);
    const outcomes1 = new Map(targets.map((t) => [t.id, { ...t.cacheOutcomes }]));
    const closed = new Map<string, ClosedResult[]>(targets.map((t) => [t.id, []]));
    for (let round = 0; round < rounds; round++) {
      for (const t of targets) closed.get(t.id)?.push(await closedLoop(t, spec(t), plan.concurrency, plan.closedWarmMs, plan.closedMs));
      say(`${label}: closed loop round ${round + 1}: ${targets.map((t) => `${t.id} ${closed.get(t.id)?.at(-1)?.rps.toFixed(0)}/s`).join(', ')}`);
    }
    const maxOf = (t: Target): number => {
      const values = (closed.get(t.id) ?? []).map((c) => c.rps).sort((a, b) => a - b);
      return values[values.length >> 1] ?? 0;
    };
    const rate = Math.max(10, Math.floor(0.5 * Math.min(...gwTargets.map(maxOf))));
    const open = new Map<string, OpenSummary[]>(targets.map((t) => [t.id, []]));
    // Five open-loop rounds (medians; three for media): a latency percentile from one round on a
    // shared VM is mostly that round's noise.
    for (let round = 0; round < openRounds; round++) {
      for (const t of targets) open.get(t.id)?.push(await measuredOpenLoop(t, spec(t), rate));
      say(`${label}: open loop at ${rate}/s round ${round + 1}: ${targets.map((t) => `${t.id} p50 ${open.get(t.id)?.at(-1)?.p50.toFixed(2)} ms, ${open.get(t.id)?.at(-1)?.cpuUsPerReq.toFixed(0)} µs`).join('; ')}`);
    }
    // The fixed rate (the independent benchmark's 200 req/s) for the chat-format workloads: the
    // added latency there does not move with this machine's maximum.
    const fixed = new Map<string, OpenSummary[]>(targets.map((t) => [t.id, []]));
    const fixedRounds = media || cache ? 0 : plan.fixedRounds;
    for (let round = 0; round < fixedRounds; round++) {
      for (const t of targets) fixed.get(t.id)?.push(await measuredOpenLoop(t, spec(t), plan.fixedRate));
      say(`${label}: open loop at ${plan.fixedRate}/s round ${round + 1}: ${targets.map((t) => `${t.id} p50 ${fixed.get(t.id)?.at(-1)?.p50.toFixed(2)} ms, ${fixed.get(t.id)?.at(-1)?.cpuUsPerReq.toFixed(0)} µs`).join('; ')}`);
    }
    const directOpen = open.get('direct');
    const summaries = Object.fromEntries(
      targets.map((t) => [t.id, summarizeTarget(closed.get(t.id) ?? [], open.get(t.id) ?? [], t.kind === 'direct' ? undefined : directOpen)]),
    );
    if (cache) {
      const target = summaries[CACHE_GATEWAY];
      const t = targets.find((x) => x.id === CACHE_GATEWAY);
      if (target && t) {
        target.cache = cacheOutcomes(outcomes0.get(t.id) ?? {}, outcomes1.get(t.id) ?? {}, t.cacheOutcomes, cache === 'hit' ? 'exact' : 'miss');
        say(`${label}: ${CACHE_GATEWAY} answered ${(100 * target.cache.ratio).toFixed(2)}% of the measured calls ${target.cache.expected} ${JSON.stringify(target.cache.measured)} (warm-up ${JSON.stringify(target.cache.warmup)})`);
      }
    }
    const { stream, first, model } = WORKLOADS[id];
    const directFixed = fixed.get('direct');
    const fixedSummaries =
      fixedRounds > 0 ? { fixedRate: plan.fixedRate, fixed: Object.fromEntries(targets.map((t) => [t.id, summarizeTarget([], fixed.get(t.id) ?? [], t.kind === 'direct' ? undefined : directFixed)])) } : {};
    workloads.push({ id, label, stream, ...(first ? { first } : {}), model, ...(media ? { media } : {}), ...(cache ? { cache } : {}), concurrency: plan.concurrency, rate, targets: summaries, ...fixedSummaries });
    for (const t of targets) (okCalls.get(t.id) as Partial<Record<WorkloadId, number>>)[id] = t.counts.ok - (okBefore.get(t.id) ?? 0);
    if (cache) cacheWorkloadsMs += performance.now() - workloadStarted;
  }
  if (cacheWorkloads) say(`the cache workloads took ${(cacheWorkloadsMs / 1000).toFixed(0)} s, ${CACHE_GATEWAY}'s start ${(cacheGatewayStartMs / 1000).toFixed(1)} s`);

  // The dashboard's page, script and JSON through the plain gateway (full runs).
  let dashboard: DashboardPathResult[] | undefined;
  if (!only) {
    const gw = gateways[0] as GatewayProc;
    say(`dashboard paths through ${gw.name} (closed loop, ${plan.dashboardConcurrency} concurrent, ${plan.dashboardMs / 1000} s each)`);
    dashboard = await dashboardPaths(gw.url, gw.pid, { email: 'admin@bench.local', password: 'bench-password-1' }, { concurrency: plan.dashboardConcurrency, durationMs: plan.dashboardMs });
    say(`  ${dashboard.map((d) => `${d.path} ${d.rps.toFixed(0)}/s p50 ${d.p50Ms.toFixed(2)} ms`).join(', ')}`);
  }

  const peak: Record<string, Memory> = { floor: memory(floorProc.pid), 'floor-abort': memory(floorAbortProc.pid) };
  for (const gw of gateways) peak[gw.name] = memory(gw.pid);
  peak.simulator = memory(sim.pid);

  const slow: SlowStreamsResult[] = [];
  for (const t of only ? [] : [...(plan.floorStreams ? [floor] : []), ...plainGwTargets]) {
    say(`${plan.streams} slow streams through ${t.id}`);
    const result = await slowStreams(t, sim.pid, { streams: plan.streams, chunkDelayMs: plan.chunkDelayMs, waitMs: plan.streamWaitMs, settleMs: plan.streamSettleMs });
    slow.push(result);
    say(`  ${result.receiving}/${result.requested} receiving after ${(result.openMs / 1000).toFixed(1)} s, RSS ${result.rssMb.toFixed(0)} MB`);
    await sleep(500);
  }

  const ledger: LedgerCheck[] = [];
  for (const [i, gw] of gateways.entries()) {
    const target = gwTargets[i] as Target;
    await waitForSettlement(gw);
    await gw.stop();
    ledger.push(await checkLedger(gw, target, okCalls.get(target.id) ?? {}));
  }
  await floorProc.stop();
  await floorAbortProc.stop();
  await portkeyProc?.stop();
  await sim.stop();
  if (args.redis) await cleanRedisPrefix(redisUrl, redisPrefix).catch(() => 0);
  if (args.redis && args.postgres) await cleanRedisPrefix(redisUrl, pgRedisPrefix).catch(() => 0);
  await dropScratchDatabases();
  await Promise.all(targets.map((t) => t.pool.close()));

  let cacheLookup: CacheLookupResult | undefined;
  let cacheLookupError: string | undefined;
  if (lookupPhase) {
    // After the processes are stopped: the lookups have the machine to themselves.
    say(`response cache lookup cost per tier (test/bench/cache-lookup.ts --sizes ${LOOKUP_SIZES})`);
    const started = performance.now();
    try {
      cacheLookup = await runCacheLookup(['--sizes', LOOKUP_SIZES, '--redis-url', redisUrl]);
    } catch (error) {
      cacheLookupError = (error as Error).message;
      say(`cache-lookup failed: ${cacheLookupError}`);
    }
    say(`cache lookup phase took ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }

  // Metrics and traces by interleaved A/B (probe.ts), also with the machine to itself.
  let telemetry: AbResult[] | undefined;
  if (!only && !args.profile) {
    try {
      // 16 rounds: on a shared 2-vCPU VM one round of a 10% effect moves by ±15% (issue 31's runs: 0.97–1.34).
      telemetry = await telemetryAb(args.quick ? 4 : 16, say);
    } catch (error) {
      say(`telemetry A/B failed: ${(error as Error).message}`);
    }
  }

  let profile;
  if (args.profile) {
    // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: the plain gateway's main thread (0).
    const files = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'));
    const gatewayPid = String(gateways[0]?.pid);
    const file = files.find((f) => f.split('.')[3] === gatewayPid && f.split('.')[4] === '0');
    if (file) profile = topSelfTime(join(profileDir, file), ROOT, 10);
  }

  const failures = Object.fromEntries(targets.map((t) => [t.id, { failed: t.counts.failed, errors: t.counts.errors }]));
  const partial = { workloads, memory: { started, idle, peak }, slowStreams: slow, ledger, failures, ...(cliStartResult ? { cliStart: cliStartResult } : {}), ...(dashboard ? { dashboard } : {}) };
  const result: BenchResult = {
    date: new Date().toISOString(),
    durationSec: (performance.now() - began) / 1000,
    mode: { quick: args.quick, redis: args.redis, postgres: args.postgres, profile: args.profile, ...(only ? { only: only.join(',') } : {}) },
    machine: machineInfo(),
    gatewayEntry,
    plan,
    ...partial,
    checks: [...evaluate(partial, gateways.map((g) => g.name)), ...(telemetry ? telemetryChecks(telemetry) : [])],
    caveats: [
      `harness, simulator, floor and gateway${args.redis || args.postgres ? `s (and ${[...(args.redis ? ['Redis'] : []), ...(args.postgres ? ['PostgreSQL'] : [])].join(', ')})` : ''} share the same ${machineInfo().cores} cores: "max req/s" is what the whole loop reaches, not the target alone; CPU µs/req is the target process alone (utime+stime from /proc, ${1000 / CLK_TCK} ms ticks).`,
      'the gateway logs one JSON access line per request (level info, to a file); the floors log nothing, check no key and write no usage.',
      'added latency = target minus direct-to-simulator in the same round, at the same rate, measured from the scheduled send time.',
      ...(args.portkey ? [`portkey is @portkey-ai/gateway ${PORTKEY_VERSION} (its Node build, default settings) with x-portkey-provider: openai and x-portkey-custom-host pointing at the simulator; it runs the chat JSON workload only (its streamed answers fail on Node 20 with "TypeError: immutable" from its header handling: HTTP 500 for every streamed call).`] : []),
      'the floor is test/bench/floor-minimal.ts (node:http in, one undici Pool per upstream origin out, JSON parsed and re-serialized once: the CPU limits are ratios to it) and floor-abort is test/bench/floor-abort.ts (the same through undici.request on an Agent with a per-call AbortController aborted on the client\'s close), each compiled to plain JavaScript (esbuild); the gateway is dist/ (tsc): all run by node with the same flags, no loader; the simulator runs through the tsx loader (the same upstream for every target). A CPU ratio is the median of the per-round ratios (the rounds interleave the targets); after each target\'s loop the harness waits for its CPU to settle (at most 1 s), so its deferred work is its own.',
      `closed loop: ${plan.concurrency} connections back to back, the gateway's ${plan.keys} sk- keys rotated per request; open loops: requests on a clock at 50% of the slowest gateway's maximum and, for the chat-format workloads, at a fixed ${plan.fixedRate} req/s.`,
      ...(gatewayEntry.startsWith('dist/')
        ? []
        : ['the gateway ran from src/ through tsx because dist/ is missing or older than src/ (`npm run build` first): its RSS includes the tsx loader and esbuild, ~25-30 MB more than from dist/.']),
    ],
    ...(profile ? { profile } : {}),
    ...(cacheLookup ? { cacheLookup } : {}),
    ...(telemetry ? { telemetry } : {}),
    ...(cacheLookupError ? { cacheLookupError } : {}),
  };
  if (args.postgres) {
    result.caveats.push(
      `${[...pgGateways].join(' and ')} store${pgGateways.size > 1 ? '' : 's'} in PostgreSQL (${redacted(postgresUrl)}, a scratch database each, dropped afterwards; the daemon's default pool of 10 connections); each call commits its settlement there before its answer ends.` +
        (postgresLocal
          ? ' "postgres CPU µs/req" is every local postgres process (server, background writers, all backends, other databases\' too) over the open loop, per request.'
          : ' The server is not local: its CPU is not measured.'),
    );
  }
  if (cacheWorkloads) {
    result.caveats.push(
      `${CACHE_GATEWAY} runs with cache: ${JSON.stringify(CACHE_CONFIG)} (SQLite exact tier, hit_price 0) and takes part in the cache workloads only, beside the plain gateway and direct (no floor); cache-hit repeats one request (the first calls of its warm-up miss), cache-miss sends a prompt no call sent before.`,
    );
  }
  process.stdout.write(`${render(result)}\n`);
  const files = writeResults(OUT_DIR, result);
  say(`wrote ${files.join(', ')}`);
  for (const gw of gateways) rmSync(gw.dir, { recursive: true, force: true });
}

/** Outcome counts of the warm-up and of the measured rounds, from the target's running totals. */
function cacheOutcomes(before: Record<string, number>, afterWarmup: Record<string, number>, end: Record<string, number>, expected: 'exact' | 'miss'): CacheOutcomes {
  const diff = (a: Record<string, number>, b: Record<string, number>): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const n = (b[key] ?? 0) - (a[key] ?? 0);
      if (n !== 0) out[key] = n;
    }
    return out;
  };
  const measured = diff(afterWarmup, end);
  const total = Object.values(measured).reduce((s, n) => s + n, 0);
  return { warmup: diff(before, afterWarmup), measured, ratio: total > 0 ? (measured[expected] ?? 0) / total : 0, expected };
}

/** test/bench/cache-lookup.ts in a child process: its progress to stderr, its last stdout line parsed. */
function runCacheLookup(extraArgs: string[]): Promise<CacheLookupResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/cache-lookup.ts', ...extraArgs], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => (out += text));
    child.once('error', reject);
    child.once('exit', (code) => {
      try {
        const parsed = JSON.parse(out.trim().split('\n').at(-1) ?? '') as { cacheLookup?: CacheLookupResult };
        if (code !== 0 || !parsed.cacheLookup) throw new Error(`exit code ${code}`);
        resolve(parsed.cacheLookup);
      } catch (error) {
        reject(new Error(`cache-lookup.ts failed (${(error as Error).message})`));
      }
    });
  });
}

/** The commit measured, and whether src/ had uncommitted changes. */
function sourceState(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return `commit ${commit}${dirty ? ` + uncommitted changes in ${dirty.split('\n').length} src file(s)` : ''}`;
  } catch {
    return 'commit unknown';
  }
}

type Param = string | number;
type Row = Record<string, unknown>;

/**
 * Read-only queries on a gateway's store, SQLite or PostgreSQL alike: `?` placeholders (numbered
 * $1..$n for PostgreSQL); `one` is the first row's `n` as a number (PostgreSQL answers count()
 * as bigint and sum(bigint) as numeric, both as strings).
 */
interface StoreQueries {
  one(sql: string, ...params: Param[]): Promise<number>;
  all(sql: string, ...params: Param[]): Promise<Row[]>;
  close(): Promise<void>;
}

function openStore(gw: GatewayProc): StoreQueries {
  if (gw.databaseUrl) {
    const sql = postgres(gw.databaseUrl, { max: 1, connect_timeout: 5, onnotice: () => undefined });
    const numbered = (text: string): string => {
      let i = 0;
      return text.replace(/\?/g, () => `$${++i}`);
    };
    const all = async (text: string, ...params: Param[]): Promise<Row[]> => [...(await sql.unsafe<Row[]>(numbered(text), params))];
    return {
      all,
      one: async (text, ...params) => Number((await all(text, ...params))[0]?.n),
      close: () => sql.end({ timeout: 1 }),
    };
  }
  const db = new Database(gw.dbPath, { readonly: true, fileMustExist: true });
  const all = async (text: string, ...params: Param[]): Promise<Row[]> => db.prepare(text).all(...params) as Row[];
  return {
    all,
    one: async (text, ...params) => Number((db.prepare(text).get(...params) as Row | undefined)?.n),
    close: async () => void db.close(),
  };
}

/** Waits until the gateway has written its last usage rows (aborted streams settle after the abort). */
async function waitForSettlement(gw: GatewayProc): Promise<void> {
  const db = openStore(gw);
  try {
    let last = -1;
    let stableSince = performance.now();
    const deadline = performance.now() + 15_000;
    while (performance.now() < deadline) {
      const rows = await db.one('SELECT count(*) AS n FROM usage');
      if (rows !== last) {
        last = rows;
        stableSince = performance.now();
      } else if (performance.now() - stableSince > 1000) return;
      await sleep(200);
    }
  } finally {
    await db.close();
  }
}

/**
 * The media calls' exact bill, per completed call: speech by the characters of its input at the
 * catalog's price per 1M characters, embeddings by the tokens the upstream (the simulator)
 * reports at the price per 1M input tokens, each rounded up to the µINR once.
 */
function mediaExpectations(gw: GatewayProc, ran: Partial<Record<WorkloadId, number>>): Array<{ model: string; unit: string; units: number; costMicros: number; calls: number }> {
  const models = loadConfig({ file: join(gw.dir, 'gateway.yaml'), env: {} }).models;
  const price = (id: string) => {
    const model = models.find((m) => m.id === id);
    if (!model) throw new Error(`ledger check: model ${id} is not in the gateway's catalog`);
    return model.pricing;
  };
  const perMillion = (units: number, microsPer1M: number): number => Number((BigInt(units) * BigInt(microsPer1M) + 999_999n) / 1_000_000n);
  const out: Array<{ model: string; unit: string; units: number; costMicros: number; calls: number }> = [];
  const calls = (ids: WorkloadId[]): number | undefined => (ids.some((id) => ran[id] !== undefined) ? ids.reduce((sum, id) => sum + (ran[id] ?? 0), 0) : undefined);
  const embeddingCalls = calls(['embeddings', 'embeddings-float']);
  if (embeddingCalls !== undefined) {
    const id = WORKLOADS.embeddings.model;
    const tokens = completionTokens('openai', id.slice(id.indexOf('/') + 1), EMBEDDING_INPUT);
    out.push({ model: id, unit: 'tokens', units: tokens, costMicros: perMillion(tokens, price(id).inputPer1M), calls: embeddingCalls });
  }
  const speechCalls = calls(['speech']);
  if (speechCalls !== undefined) {
    const id = WORKLOADS.speech.model;
    const chars = [...SPEECH_INPUT].length;
    out.push({ model: id, unit: 'characters', units: chars, costMicros: perMillion(chars, price(id).inputPer1MChars ?? 0), calls: speechCalls });
  }
  return out;
}

async function checkLedger(gw: GatewayProc, target: Target, ran: Partial<Record<WorkloadId, number>>): Promise<LedgerCheck> {
  const expectations = mediaExpectations(gw, ran);
  const db = openStore(gw);
  try {
    const one = db.one;
    const charges = await one("SELECT count(*) AS n FROM ledger WHERE kind = 'charge'");
    const chargesWithoutUsage = await one("SELECT count(*) AS n FROM ledger l WHERE kind = 'charge' AND NOT EXISTS (SELECT 1 FROM usage u WHERE u.request_id = l.request_id)");
    const overHold = await one('SELECT count(*) AS n FROM usage WHERE uncharged_micros > 0');
    // The daemon logs each time admission computes the tight prompt bound (near a wallet's limit).
    const tightBound = readFileSync(gw.logPath, 'utf8').split('"msg":"tight prompt bound"').length - 1;
    const usageByStatus: Record<string, number> = {};
    for (const row of await db.all('SELECT status, count(*) AS n FROM usage GROUP BY status')) usageByStatus[String(row.status)] = Number(row.n);
    const c = target.counts;
    // A cache hit at hit_price 0 costs 0: it has its usage row (cache = exact) but no charge.
    const hits = (target.cacheOutcomes.exact ?? 0) + (target.cacheOutcomes.semantic ?? 0);
    const expectedCharges = c.ok + c.abortedReceiving - hits;
    const cacheRows = (which: string): Promise<number> => one(`SELECT count(*) AS n FROM usage WHERE status = 200 AND cache IN (${which})`);
    const cache: CacheBilling | undefined =
      Object.keys(target.cacheOutcomes).length > 0
        ? await (async () => {
            const hitRows = await cacheRows("'exact', 'semantic'");
            const missRows = await cacheRows("'miss'");
            const hitRowsCosted = await one("SELECT count(*) AS n FROM usage WHERE cache IN ('exact', 'semantic') AND cost_micros <> 0");
            const hitCharges = await one("SELECT count(*) AS n FROM ledger l JOIN usage u ON u.request_id = l.request_id WHERE l.kind = 'charge' AND u.cache IN ('exact', 'semantic')");
            const misses = target.cacheOutcomes.miss ?? 0;
            return { hits, misses, hitRows, missRows, hitRowsCosted, hitCharges, pass: hitRows === hits && missRows === misses && hitRowsCosted === 0 && hitCharges === 0 };
          })()
        : undefined;
    // Every charge in the ledger is its usage row's cost (amounts are negative in the ledger).
    const chargedMicros = -(await one("SELECT coalesce(sum(amount_micros), 0) AS n FROM ledger WHERE kind = 'charge'"));
    const usageCostMicros = await one('SELECT coalesce(sum(cost_micros), 0) AS n FROM usage');
    const chargesOffUsage = await one("SELECT count(*) AS n FROM ledger l JOIN usage u ON u.request_id = l.request_id WHERE l.kind = 'charge' AND -l.amount_micros <> u.cost_micros");
    const media: ModelBilling[] = [];
    for (const e of expectations) {
      const rows = await one('SELECT count(*) AS n FROM usage WHERE model = ? AND status = 200', e.model);
      const wrong = await one('SELECT count(*) AS n FROM usage WHERE model = ? AND status = 200 AND (unit <> ? OR units <> ? OR cost_micros <> ?)', e.model, e.unit, e.units, e.costMicros);
      const charged = -(await one(
        "SELECT coalesce(sum(l.amount_micros), 0) AS n FROM ledger l JOIN usage u ON u.request_id = l.request_id WHERE l.kind = 'charge' AND u.model = ? AND u.status = 200",
        e.model,
      ));
      media.push({
        model: e.model,
        unit: e.unit,
        unitsPerCall: e.units,
        costMicrosPerCall: e.costMicros,
        okCalls: e.calls,
        usageRows: rows,
        rowsOffPrice: wrong,
        chargedMicros: charged,
        expectedMicros: e.calls * e.costMicros,
        pass: rows === e.calls && wrong === 0 && charged === e.calls * e.costMicros,
      });
    }
    return {
      target: gw.name,
      okCalls: c.ok,
      abortedReceiving: c.abortedReceiving,
      abortedEarly: c.abortedEarly,
      failed: c.failed,
      charges,
      expectedCharges,
      usageByStatus,
      chargesWithoutUsage,
      tightBound,
      overHold,
      pass: charges === expectedCharges && chargesWithoutUsage === 0 && (usageByStatus['200'] ?? 0) === c.ok && (cache?.pass ?? true),
      chargedMicros,
      usageCostMicros,
      chargesOffUsage,
      ...(media.length > 0 ? { media } : {}),
      ...(cache ? { cache } : {}),
    };
  } finally {
    await db.close();
  }
}

main().then(
  () => process.exit(0),
  async (error: unknown) => {
    if (stopping) return; // interrupted: the SIGINT handler stops the children and exits
    process.stderr.write(`benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
    await stopAll();
    await dropScratchDatabases();
    if (tempDirs.length > 0) process.stderr.write(`gateway files (logs, database) kept in ${tempDirs.join(', ')}\n`);
    process.exit(1);
  },
);
