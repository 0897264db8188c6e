import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { closedLoop, makeTarget, openLoop, specFor, WORKLOADS, type ClosedResult, type Target, type WorkloadId } from './load.js';
import { CLK_TCK, cleanRedisPrefix, gatewayRunsCompiled, localRedisPid, memory, startFloor, startGatewayProc, startSimulator, type GatewayProc, type Memory, type Proc } from './procs.js';
import { evaluate, machineInfo, render, summarizeOpen, summarizeTarget, topSelfTime, writeResults, type BenchResult, type LedgerCheck, type OpenSummary, type WorkloadResult } from './report.js';
import { slowStreams, type SlowStreamsResult } from './streams.js';
import { redisReachable } from '../support/redis.js';

/**
 * The benchmark (issue 5): the gateway against a bare pass-through floor and the simulator
 * called directly, side by side in one run.
 *
 *   node --import tsx test/bench/run.ts [--quick] [--redis] [--redis-url URL] [--profile]
 *
 * --only chat,stream,messages limits the workloads and skips the slow-streams phase (e.g. `--only chat --profile`).
 * --profile runs the gateway under --cpu-prof and prints its top self-time functions (its CPU
 * numbers are then inflated; results go to bench-results/profile-*.json, not latest.json).
 */

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    redis: { type: 'boolean', default: false },
    'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379' },
    profile: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});

const ROOT = new URL('../../', import.meta.url).pathname;
const OUT_DIR = join(ROOT, 'bench-results');

const plan = args.quick
  ? { rounds: 2, openRounds: 2, warmupMs: 500, closedWarmMs: 150, closedMs: 600, openMs: 1000, concurrency: 16, streams: 1000, chunkDelayMs: 1000, streamWaitMs: 5000, streamSettleMs: 1000, keys: 48, floorStreams: 0 }
  : { rounds: 3, openRounds: 5, warmupMs: 1500, closedWarmMs: 300, closedMs: 2500, openMs: 3000, concurrency: 16, streams: 1000, chunkDelayMs: 1000, streamWaitMs: 10_000, streamSettleMs: 2000, keys: 48, floorStreams: 1 };

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
  void stopAll().then(() => {
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
    process.exit(130);
  });
});

async function main(): Promise<void> {
  const redisUrl = args['redis-url'];
  if (args.redis && !(await redisReachable(redisUrl))) throw new Error(`--redis: no Redis at ${redisUrl}`);
  const gatewayEntry = `${gatewayRunsCompiled() ? 'dist/ (compiled)' : 'src/ through tsx (dist/ missing or stale)'}, ${sourceState()}`;
  say(`starting the simulator, the floor and the gateway${args.redis ? 's' : ''} (gateway runs ${gatewayEntry})`);
  const sim = await startSimulator();
  procs.push(sim);
  const floorProc = await startFloor(sim.url, sim.key);
  procs.push(floorProc);
  const profileDir = join(OUT_DIR, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
  if (args.profile) mkdirSync(profileDir, { recursive: true });
  const gateways: GatewayProc[] = [];
  const start = async (name: string, redis?: { url: string; keyPrefix: string }): Promise<void> => {
    const gw = await startGatewayProc({
      name,
      simUrl: sim.url,
      simKey: sim.key,
      keys: plan.keys,
      ...(redis ? { redis } : {}),
      ...(args.profile ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
    });
    procs.push(gw);
    tempDirs.push(gw.dir);
    gateways.push(gw);
  };
  await start('gateway');
  const redisPrefix = `bench-${randomBytes(4).toString('hex')}:`;
  const redisPid = args.redis ? localRedisPid(redisUrl) : undefined;
  if (args.redis) await start('gateway-redis', { url: redisUrl, keyPrefix: redisPrefix });

  await sleep(1000);
  const idle: Record<string, Memory> = { floor: memory(floorProc.pid) };
  for (const gw of gateways) idle[gw.name] = memory(gw.pid);
  idle.simulator = memory(sim.pid);
  say(`idle RSS: ${Object.entries(idle).map(([k, v]) => `${k} ${v.rssMb.toFixed(0)} MB`).join(', ')}`);

  const direct = makeTarget('direct', 'direct', sim.url, sim.pid, [sim.key]);
  const floor = makeTarget('floor', 'floor', floorProc.url, floorProc.pid, ['floor-needs-no-key']);
  const gwTargets = gateways.map((gw) => makeTarget(gw.name, 'gateway', gw.url, gw.pid, gw.keys));
  const targets: Target[] = [direct, floor, ...gwTargets];

  const workloads: WorkloadResult[] = [];
  const only = args.only?.split(',').map((w) => w.trim());
  for (const w of only ?? []) if (!(w in WORKLOADS)) throw new Error(`--only: unknown workload "${w}" (${Object.keys(WORKLOADS).join(', ')})`);
  for (const id of (Object.keys(WORKLOADS) as WorkloadId[]).filter((w) => !only || only.includes(w))) {
    const label = WORKLOADS[id].label;
    const specs = new Map(targets.map((t) => [t.id, specFor(t, id)]));
    const spec = (t: Target) => specs.get(t.id) as ReturnType<typeof specFor>;
    say(`${label}: warm-up`);
    for (const t of targets) await closedLoop(t, spec(t), plan.concurrency, 0, plan.warmupMs);
    const closed = new Map<string, ClosedResult[]>(targets.map((t) => [t.id, []]));
    for (let round = 0; round < plan.rounds; round++) {
      for (const t of targets) closed.get(t.id)?.push(await closedLoop(t, spec(t), plan.concurrency, plan.closedWarmMs, plan.closedMs));
      say(`${label}: closed loop round ${round + 1}: ${targets.map((t) => `${t.id} ${closed.get(t.id)?.at(-1)?.rps.toFixed(0)}/s`).join(', ')}`);
    }
    const maxOf = (t: Target): number => {
      const values = (closed.get(t.id) ?? []).map((c) => c.rps).sort((a, b) => a - b);
      return values[values.length >> 1] ?? 0;
    };
    const rate = Math.max(10, Math.floor(0.5 * Math.min(...gwTargets.map(maxOf))));
    const open = new Map<string, OpenSummary[]>(targets.map((t) => [t.id, []]));
    // Five open-loop rounds (medians): a latency percentile from one round on a shared VM is
    // mostly that round's noise.
    for (let round = 0; round < plan.openRounds; round++) {
      for (const t of targets) {
        const harness0 = process.cpuUsage();
        const redis = t.id === 'gateway-redis' ? redisPid : undefined;
        const result = await openLoop(t, spec(t), rate, plan.openMs, [...new Set([t.pid, sim.pid, ...(redis ? [redis] : [])])]);
        const harness = process.cpuUsage(harness0);
        open.get(t.id)?.push(summarizeOpen(result, t.pid, sim.pid, harness.user + harness.system, redis));
      }
      say(`${label}: open loop at ${rate}/s round ${round + 1}: ${targets.map((t) => `${t.id} p50 ${open.get(t.id)?.at(-1)?.p50.toFixed(2)} ms, ${open.get(t.id)?.at(-1)?.cpuUsPerReq.toFixed(0)} µs`).join('; ')}`);
    }
    const directOpen = open.get('direct');
    const summaries = Object.fromEntries(
      targets.map((t) => [t.id, summarizeTarget(closed.get(t.id) ?? [], open.get(t.id) ?? [], t.kind === 'direct' ? undefined : directOpen)]),
    );
    workloads.push({ id, label, stream: WORKLOADS[id].stream, concurrency: plan.concurrency, rate, targets: summaries });
  }

  const peak: Record<string, Memory> = { floor: memory(floorProc.pid) };
  for (const gw of gateways) peak[gw.name] = memory(gw.pid);
  peak.simulator = memory(sim.pid);

  const slow: SlowStreamsResult[] = [];
  for (const t of only ? [] : [...(plan.floorStreams ? [floor] : []), ...gwTargets]) {
    say(`${plan.streams} slow streams through ${t.id}`);
    const result = await slowStreams(t, sim.pid, { streams: plan.streams, chunkDelayMs: plan.chunkDelayMs, waitMs: plan.streamWaitMs, settleMs: plan.streamSettleMs });
    slow.push(result);
    say(`  ${result.receiving}/${result.requested} receiving after ${(result.openMs / 1000).toFixed(1)} s, RSS ${result.rssMb.toFixed(0)} MB`);
    await sleep(500);
  }

  const ledger: LedgerCheck[] = [];
  for (const [i, gw] of gateways.entries()) {
    const target = gwTargets[i] as Target;
    await waitForSettlement(gw.dbPath);
    await gw.stop();
    ledger.push(checkLedger(gw, target));
  }
  await floorProc.stop();
  await sim.stop();
  if (args.redis) await cleanRedisPrefix(redisUrl, redisPrefix).catch(() => 0);
  await Promise.all(targets.map((t) => t.pool.close()));

  let profile;
  if (args.profile) {
    // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread.
    const files = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'));
    const file = files.find((f) => f.split('.')[4] === '0') ?? files[0];
    if (file) profile = topSelfTime(join(profileDir, file), ROOT, 10);
  }

  const failures = Object.fromEntries(targets.map((t) => [t.id, { failed: t.counts.failed, errors: t.counts.errors }]));
  const partial = { workloads, memory: { idle, peak }, slowStreams: slow, ledger, failures };
  const result: BenchResult = {
    date: new Date().toISOString(),
    durationSec: (performance.now() - began) / 1000,
    mode: { quick: args.quick, redis: args.redis, profile: args.profile, ...(only ? { only: only.join(',') } : {}) },
    machine: machineInfo(),
    gatewayEntry,
    plan,
    ...partial,
    checks: evaluate(partial, gateways.map((g) => g.name)),
    caveats: [
      `harness, simulator, floor and gateway${args.redis ? 's (and Redis)' : ''} share the same ${machineInfo().cores} cores: "max req/s" is what the whole loop reaches, not the target alone; CPU µs/req is the target process alone (utime+stime from /proc, ${1000 / CLK_TCK} ms ticks).`,
      'the gateway logs one JSON access line per request (level info, to a file); the floor logs nothing, checks no key and writes no usage.',
      'added latency = target minus direct-to-simulator in the same round, at the same rate, measured from the scheduled send time.',
      'the floor and the simulator run through the tsx loader (startup cost only); RSS of the floor includes it.',
      ...(gatewayEntry.startsWith('dist/')
        ? []
        : ['the gateway ran from src/ through tsx because dist/ is missing or older than src/ (`npm run build` first): its RSS includes the tsx loader and esbuild, ~25-30 MB more than from dist/.']),
    ],
    ...(profile ? { profile } : {}),
  };
  process.stdout.write(`${render(result)}\n`);
  const files = writeResults(OUT_DIR, result);
  say(`wrote ${files.join(', ')}`);
  for (const gw of gateways) rmSync(gw.dir, { recursive: true, force: true });
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

/** Waits until the gateway has written its last usage rows (aborted streams settle after the abort). */
async function waitForSettlement(dbPath: string): Promise<void> {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    let last = -1;
    let stableSince = performance.now();
    const deadline = performance.now() + 15_000;
    while (performance.now() < deadline) {
      const rows = (db.prepare('SELECT count(*) AS n FROM usage').get() as { n: number }).n;
      if (rows !== last) {
        last = rows;
        stableSince = performance.now();
      } else if (performance.now() - stableSince > 1000) return;
      await sleep(200);
    }
  } finally {
    db.close();
  }
}

function checkLedger(gw: GatewayProc, target: Target): LedgerCheck {
  const db = new Database(gw.dbPath, { readonly: true, fileMustExist: true });
  try {
    const one = (sql: string): number => (db.prepare(sql).get() as { n: number }).n;
    const charges = one("SELECT count(*) AS n FROM ledger WHERE kind = 'charge'");
    const chargesWithoutUsage = one("SELECT count(*) AS n FROM ledger l WHERE kind = 'charge' AND NOT EXISTS (SELECT 1 FROM usage u WHERE u.request_id = l.request_id)");
    const overHold = one('SELECT count(*) AS n FROM usage WHERE uncharged_micros > 0');
    // The daemon logs each time admission computes the tight prompt bound (near a wallet's limit).
    const tightBound = readFileSync(gw.logPath, 'utf8').split('"msg":"tight prompt bound"').length - 1;
    const usageByStatus: Record<string, number> = {};
    for (const row of db.prepare('SELECT status, count(*) AS n FROM usage GROUP BY status').all() as Array<{ status: number; n: number }>) usageByStatus[row.status] = row.n;
    const c = target.counts;
    const expectedCharges = c.ok + c.abortedReceiving;
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
      pass: charges === expectedCharges && chargesWithoutUsage === 0 && (usageByStatus['200'] ?? 0) === c.ok,
    };
  } finally {
    db.close();
  }
}

main().then(
  () => process.exit(0),
  async (error: unknown) => {
    if (stopping) return; // interrupted: the SIGINT handler stops the children and exits
    process.stderr.write(`benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
    await stopAll();
    if (tempDirs.length > 0) process.stderr.write(`gateway files (logs, database) kept in ${tempDirs.join(', ')}\n`);
    process.exit(1);
  },
);
