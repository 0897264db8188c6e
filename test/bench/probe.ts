import { readFileSync, readdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { startSimulator, startFloor, startGatewayProc, CLK_TCK } from './procs.js';
import { makeTarget, closedLoop, openLoop, specFor, median, WORKLOADS, type ClosedResult, type WorkloadId } from './load.js';

/**
 * A quicker, narrower probe than run.ts, for working on the gateway's CPU per call: the floor
 * (the minimal proxy, floor-minimal.ts; FLOOR=abort: floor-abort.ts) and the gateway (embedded
 * default) only, chat JSON only, open loop at RATE req/s (600) for
 * ROUNDS rounds (5) of 3 s, in turns; prints each round's CPU µs per request split by thread
 * (main, libuv/V8 workers, the checkpointer) and the median ratio. PROF=1 adds --cpu-prof to
 * both (profiles in /tmp/prof and /tmp/prof-floor); NOWARM=1 replaces the closed-loop warm-up
 * with 2 s of the open loop, so both profiles cover the same requests. BASE=/other/checkout adds
 * a third target, the daemon from that checkout (built, node_modules in place), for A/B work;
 * BASE_BATCH_WINDOW sets that daemon's billing batch window (BASE may be this checkout).
 * WORKLOAD=stream|messages|embeddings|speech probes another workload instead of chat JSON.
 * CSW=1 adds the main thread's voluntary context switches per request (csw=, not in the total).
 * REDIS=1 configures both daemons with Redis (redis://127.0.0.1:6379, a key prefix each).
 * PG=1 puts each daemon on a scratch PostgreSQL database of its own (PG_URL, default
 *   postgres://postgres@127.0.0.1:5432/postgres; dropped at the end); PG=gateway, the gateway only
 *   (with BASE=.: the gateway on PostgreSQL over the same daemon on SQLite).
 * DEPLOYMENTS=3 gives the gateway (not the base) three weighted deployments of openai/gpt-4o-mini
 *   (procs.ts): with BASE=. (this checkout) it measures what routing over several costs.
 * ALERTS=hang configures the gateway (not the base) with alerts to a webhook that accepts and
 *   never answers, and balance_low_inr above every wallet, so every call is watched and alerts
 *   wait on the webhook: with BASE=. it measures what a dead webhook costs the calls (issue 30).
 * METRICS=off configures the gateway (not the base) with metrics.enabled: false; with BASE=. the
 *   ratio gateway/base is metrics off over on (issue 31: on costs at most 3%).
 * TRACES=on configures the gateway (not the base) with OpenTelemetry traces at 100% sampling to
 *   a collector that answers every export at once (TRACES_PROTOCOL=http/json for OTLP JSON); with
 *   BASE=. the ratio gateway/base is traces on over off (issue 31: at most +10%).
 * GW_NODE_ARGS adds Node flags to the floor and the gateway (not the base), e.g. `--require
 *   ./test/bench/diag/alloc-profile.cjs` or `./test/bench/diag/stall-probe.cjs` (see test/bench/diag/).
 *
 *   node --import tsx test/bench/probe.ts          (after npm run build)
 */

/** An OTLP collector that reads each export and answers 200 at once (TRACES=on); counts the bytes it took. */
async function listenCollector(): Promise<{ url: string; bytes: () => number }> {
  const { createServer: createHttp } = await import('node:http');
  let bytes = 0;
  const server = createHttp((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, bytes: () => bytes };
}

/** A webhook that takes connections and never answers (ALERTS=hang). */
async function listenHanging(): Promise<string> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

function threads(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const us = ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK;
    const k = tid === String(pid) ? 'main' : comm;
    out.set(k, (out.get(k) ?? 0) + us);
    if (tid === String(pid) && process.env.CSW) {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      out.set('csw', Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0));
    }
  }
  return out;
}
const rate = Number(process.env.RATE ?? 600);
const workload = (process.env.WORKLOAD ?? 'chat') as WorkloadId;
if (!(workload in WORKLOADS)) throw new Error(`WORKLOAD: one of ${Object.keys(WORKLOADS).join(', ')}`);
const rounds = Number(process.env.ROUNDS ?? 5);
// CONC=50: a closed loop of that many connections per round instead of the open loop at RATE
// (the issue-32 target's shape); the line adds each target's req/s.
const conc = Number(process.env.CONC ?? 0);
/** A closed round in the open round's terms (no latencies: the closed loop keeps none). */
function closedAsOpen(res: ClosedResult): { sent: number; latency: number[]; errors: number; rps: number } {
  return { sent: res.completed, latency: [], errors: res.errors, rps: res.rps };
}
// ROUND_MS: each round's length per target (3000).
const roundMs = Number(process.env.ROUND_MS ?? 3000);
const sim = await startSimulator();
const floorP = await startFloor(sim.url, sim.key, process.env.PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof-floor'] : process.env.GW_NODE_ARGS ? process.env.GW_NODE_ARGS.split(' ') : [], process.env.FLOOR === 'abort' ? 'abort' : 'minimal');
const redisFor = (name: string) => (process.env.REDIS ? { redis: { url: 'redis://127.0.0.1:6379', keyPrefix: `probe-${name}-${process.pid}:` } } : {});
// PG=1: each daemon on a scratch PostgreSQL database of its own (PG_URL, an admin URL that may CREATE DATABASE), dropped at the end.
const pgAdmin = process.env.PG ? (process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres') : undefined;
const scratch: string[] = [];
async function pgFor(): Promise<{ databaseUrl?: string }> {
  if (!pgAdmin) return {};
  const { default: postgres } = await import('postgres');
  const name = `probe_${process.pid}_${scratch.length}`;
  const admin = postgres(pgAdmin, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end({ timeout: 1 });
  scratch.push(name);
  const url = new URL(pgAdmin);
  url.pathname = `/${name}`;
  return { databaseUrl: url.toString() };
}
const hangingWebhook = process.env.ALERTS === 'hang' ? await listenHanging() : undefined;
const alerts = hangingWebhook ? { alerts: { webhook_url: hangingWebhook, webhook_secret: 'bench-secret', balance_low_inr: 1_000_000_000 } } : {};
const collector = process.env.TRACES === 'on' ? await listenCollector() : undefined;
const extra: Record<string, unknown> = {
  ...(process.env.METRICS === 'off' ? { metrics: { enabled: false } } : {}),
  ...(collector ? { telemetry: { enabled: true, endpoint: collector.url, protocol: process.env.TRACES_PROTOCOL ?? 'http/protobuf', sample_ratio: Number(process.env.TRACES_RATIO ?? 1) } } : {}),
};
const gw = await startGatewayProc({ name: 'gateway', simUrl: sim.url, simKey: sim.key, keys: 16, ...(await pgFor()), ...alerts, extra, ...(process.env.DEPLOYMENTS ? { deployments: Number(process.env.DEPLOYMENTS) } : {}), ...redisFor('gateway'), ...(process.env.PROF ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] } : process.env.GW_NODE_ARGS ? { nodeArgs: process.env.GW_NODE_ARGS.split(' ') } : {}) });
// BASE_BATCH_WINDOW: the base daemon's billing batch window (A/B of a setting: BASE may be this checkout).
if (process.env.BASE_BATCH_WINDOW) process.env.BENCH_BATCH_WINDOW = process.env.BASE_BATCH_WINDOW;
const base = process.env.BASE ? await startGatewayProc({ name: 'base', simUrl: sim.url, simKey: sim.key, keys: 16, root: process.env.BASE, ...(process.env.PG === 'gateway' ? {} : await pgFor()), ...redisFor('base') }) : undefined;
const targets = [makeTarget('floor', 'floor', floorP.url, floorP.pid, ['x']), makeTarget('gateway', 'gateway', gw.url, gw.pid, gw.keys)];
if (base) targets.push(makeTarget('base', 'gateway', base.url, base.pid, base.keys));
for (const t of targets) if (!process.env.NOWARM) await closedLoop(t, specFor(t, workload), 8, 0, 3000); else await openLoop(t, specFor(t, workload), rate, 2000, [t.pid]);
const per: Record<string, number[]> = { floor: [], gateway: [], base: [] };
const rps: Record<string, number[]> = { floor: [], gateway: [], base: [] };
const ratios: number[] = [];
const baseRatios: number[] = [];
for (let r = 0; r < rounds; r++) {
  const line: string[] = [];
  // With a base, gateway and base swap places every other round (no order bias).
  const order = base && r % 2 === 1 ? [targets[0], targets[2], targets[1]] : targets;
  for (const t of order) {
    if (!t) continue;
    const a = threads(t.pid);
    const res: { sent: number; latency: number[]; errors: number; rps?: number } = conc > 0 ? closedAsOpen(await closedLoop(t, specFor(t, workload), conc, 0, roundMs)) : await openLoop(t, specFor(t, workload), rate, roundMs, [t.pid]);
    const b = threads(t.pid);
    const parts = [...b].map(([k, v]) => [k, (v - (a.get(k) ?? 0)) / res.sent] as const).filter(([, v]) => v > 0).sort((x, y) => y[1] - x[1]);
    const total = parts.reduce((s, [k, v]) => (k === 'csw' ? s : s + v), 0);
    per[t.id]?.push(total);
    if (res.rps !== undefined) rps[t.id]?.push(res.rps);
    line.push(`${t.id} ${total.toFixed(0)} (${parts.map(([k, v]) => `${k}=${v.toFixed(0)}`).join(' ')})${res.rps !== undefined ? ` ${res.rps.toFixed(0)} req/s` : ` p50 ${res.latency[res.latency.length >> 1]?.toFixed(2)} p99 ${res.latency[Math.floor(res.latency.length * 0.99)]?.toFixed(2)}ms`} err ${res.errors}`);
  }
  ratios.push((per.gateway?.at(-1) ?? 0) / (per.floor?.at(-1) ?? 1));
  if (base) baseRatios.push((per.base?.at(-1) ?? 0) / (per.floor?.at(-1) ?? 1));
  console.log(`round ${r + 1}: ${line.join(' | ')} ratio ${ratios.at(-1)?.toFixed(2)}${base ? ` base ${baseRatios.at(-1)?.toFixed(2)}` : ''}`);
}
console.log(`median: floor ${median(per.floor ?? []).toFixed(0)} µs, gateway ${median(per.gateway ?? []).toFixed(0)} µs, ratio ${median(ratios).toFixed(2)}`);
if (conc > 0) console.log(`req/s median: floor ${median(rps.floor ?? []).toFixed(0)}, gateway ${median(rps.gateway ?? []).toFixed(0)} (${((100 * median(rps.gateway ?? [])) / median(rps.floor ?? [1])).toFixed(0)}%)${base ? `, base ${median(rps.base ?? []).toFixed(0)}` : ''}`);
if (base) console.log(`base (${process.env.BASE}): ${median(per.base ?? []).toFixed(0)} µs, ratio ${median(baseRatios).toFixed(2)}; gateway ÷ base per round, median ${median(per.gateway?.map((g, i) => g / (per.base?.[i] ?? g)) ?? []).toFixed(3)}`);
if (collector) console.log(`the collector took ${(collector.bytes() / 1024).toFixed(0)} KiB of spans`);
const procs = [sim, floorP, gw, ...(base ? [base] : [])];
for (const p of procs) p.child.kill('SIGTERM');
await Promise.all(procs.map((p) => new Promise((r) => p.child.once('exit', r))));
if (pgAdmin && scratch.length > 0) {
  const { default: postgres } = await import('postgres');
  const admin = postgres(pgAdmin, { max: 1, onnotice: () => undefined });
  for (const name of scratch) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end({ timeout: 1 });
}
process.exit(0);
