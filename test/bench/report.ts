import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import type { ClosedResult, OpenResult } from './load.js';
import { median, percentile } from './load.js';
import type { Memory } from './procs.js';
import type { SlowStreamsResult } from './streams.js';
import type { DashboardPathResult } from './dashboard.js';

/** Result types, summaries, the targets of issue 5, the printed table and the JSON file. */

export interface OpenSummary {
  rate: number;
  sent: number;
  errors: number;
  p50: number;
  p99: number;
  p999: number;
  ttft50: number;
  ttft99: number;
  cpuUsPerReq: number;
  simCpuUsPerReq: number;
  /** The local redis-server's CPU per request (Redis-configured gateways only). */
  redisCpuUsPerReq?: number;
  /** The local PostgreSQL server's CPU per request, all its processes (PostgreSQL-configured gateways only). */
  postgresCpuUsPerReq?: number;
  harnessCpuUsPerReq: number;
  sendLagP99: number;
  chunkCounts: Record<number, number>;
}

/** `postgresCpuUs`: the CPU of every local `postgres` process over the open loop, µs (PostgreSQL targets). */
export function summarizeOpen(result: OpenResult, targetPid: number, simPid: number, harnessCpuUs: number, redisPid?: number, postgresCpuUs?: number): OpenSummary {
  return {
    ...(redisPid ? { redisCpuUsPerReq: result.cpuUsPerReq[redisPid] ?? NaN } : {}),
    ...(postgresCpuUs !== undefined ? { postgresCpuUsPerReq: postgresCpuUs / result.sent } : {}),
    rate: result.rate,
    sent: result.sent,
    errors: result.errors,
    p50: percentile(result.latency, 0.5),
    p99: percentile(result.latency, 0.99),
    p999: percentile(result.latency, 0.999),
    ttft50: percentile(result.ttft, 0.5),
    ttft99: percentile(result.ttft, 0.99),
    cpuUsPerReq: result.cpuUsPerReq[targetPid] ?? NaN,
    simCpuUsPerReq: result.cpuUsPerReq[simPid] ?? NaN,
    harnessCpuUsPerReq: harnessCpuUs / result.sent,
    sendLagP99: result.sendLagP99,
    chunkCounts: result.chunkCounts,
  };
}

export type Added = { p50: number; p99: number; p999: number; ttft50: number; ttft99: number };

export interface TargetWorkload {
  closed: ClosedResult[];
  open: OpenSummary[];
  /** Medians over the rounds. */
  maxRps: number;
  cpuAtMaxUsPerReq: number;
  cpuUsPerReq: number;
  simCpuUsPerReq: number;
  redisCpuUsPerReq?: number;
  postgresCpuUsPerReq?: number;
  p50: number;
  p99: number;
  p999: number;
  ttft50: number;
  ttft99: number;
  /** Over direct, round by round (paired), then the median. */
  added?: Added;
  /** Content chunks per response → responses. */
  chunkCounts: Record<string, number>;
  errors: number;
  /** Response-cache workloads, cache-enabled gateway: completed calls by `x-gateway-cache`. */
  cache?: CacheOutcomes;
}

export interface CacheOutcomes {
  /** During the warm-up (the first calls of cache-hit miss: they run before any answer is stored). */
  warmup: Record<string, number>;
  /** During the measured closed- and open-loop rounds. */
  measured: Record<string, number>;
  /** Measured calls answered with the outcome the workload expects (exact for cache-hit, miss for cache-miss), 0-1. */
  ratio: number;
  expected: 'exact' | 'miss';
}

/** The median of per-round ratios of CPU per call, a ÷ b (the rounds interleave the targets, so round i of each is paired). */
export function roundRatio(a: ReadonlyArray<{ cpuUsPerReq: number }>, b: ReadonlyArray<{ cpuUsPerReq: number }>): number {
  return median(a.flatMap((x, i) => (b[i] ? [x.cpuUsPerReq / (b[i] as { cpuUsPerReq: number }).cpuUsPerReq] : [])));
}

export function summarizeTarget(closed: ClosedResult[], open: OpenSummary[], direct: OpenSummary[] | undefined): TargetWorkload {
  const m = (pick: (o: OpenSummary) => number): number => median(open.map(pick));
  const chunkCounts: Record<string, number> = {};
  for (const round of open) for (const [k, v] of Object.entries(round.chunkCounts)) chunkCounts[k] = (chunkCounts[k] ?? 0) + v;
  const result: TargetWorkload = {
    closed,
    open,
    maxRps: median(closed.map((c) => c.rps)),
    cpuAtMaxUsPerReq: median(closed.map((c) => c.cpuUsPerReq)),
    cpuUsPerReq: m((o) => o.cpuUsPerReq),
    simCpuUsPerReq: m((o) => o.simCpuUsPerReq),
    ...(open.some((o) => o.redisCpuUsPerReq !== undefined) ? { redisCpuUsPerReq: m((o) => o.redisCpuUsPerReq ?? NaN) } : {}),
    ...(open.some((o) => o.postgresCpuUsPerReq !== undefined) ? { postgresCpuUsPerReq: m((o) => o.postgresCpuUsPerReq ?? NaN) } : {}),
    p50: m((o) => o.p50),
    p99: m((o) => o.p99),
    p999: m((o) => o.p999),
    ttft50: m((o) => o.ttft50),
    ttft99: m((o) => o.ttft99),
    chunkCounts,
    errors: closed.reduce((s, c) => s + c.errors, 0) + open.reduce((s, o) => s + o.errors, 0),
  };
  if (direct) {
    const diff = (pick: (o: OpenSummary) => number): number => median(open.map((o, i) => pick(o) - pick(direct[i] as OpenSummary)));
    result.added = { p50: diff((o) => o.p50), p99: diff((o) => o.p99), p999: diff((o) => o.p999), ttft50: diff((o) => o.ttft50), ttft99: diff((o) => o.ttft99) };
  }
  return result;
}

export interface WorkloadResult {
  id: string;
  label: string;
  stream: boolean;
  /** Streams: what ttft50/ttft99 time, the first text delta (TTFT) or the first audio byte (TTFB). */
  first?: 'TTFT' | 'TTFB';
  /** The gateway's model id. */
  model?: string;
  /** A media endpoint (embeddings, speech). */
  media?: boolean;
  /** A response-cache workload (cache-hit, cache-miss). */
  cache?: 'hit' | 'miss';
  concurrency: number;
  /** The open-loop rate, the same for every target: 50% of the slowest gateway's maximum. */
  rate: number;
  targets: Record<string, TargetWorkload>;
  /** The chat-format workloads also run open-loop rounds at a fixed rate (200 req/s): no closed loop there. */
  fixedRate?: number;
  fixed?: Record<string, TargetWorkload>;
}

/** The CLI's start (issue 17): wall time of each command, medians over `runs`, beside a bare `node -e 0`. */
export interface CliStartResult {
  runs: number;
  nodeBareMs: number;
  commands: Array<{ command: string; medianMs: number; p90Ms: number; ratio: number }>;
}

export interface LedgerCheck {
  target: string;
  okCalls: number;
  abortedReceiving: number;
  abortedEarly: number;
  failed: number;
  charges: number;
  expectedCharges: number;
  usageByStatus: Record<string, number>;
  chargesWithoutUsage: number;
  /** Calls whose admission computed the tight prompt bound (the fast one did not fit). */
  tightBound: number;
  /** Calls whose cost went past their hold (charged the hold). */
  overHold: number;
  /** One charge per completed call (charges, usage rows with status 200). */
  pass: boolean;
  /** µINR: the ledger's charges, and the usage rows' costs (equal when every charge is its row's cost). */
  chargedMicros?: number;
  usageCostMicros?: number;
  /** Charges whose amount differs from their usage row's cost. */
  chargesOffUsage?: number;
  /** Media calls: each billed exactly its units at the catalog's price. */
  media?: ModelBilling[];
  /** The cache-enabled gateway: hits (cost 0 at hit_price 0) have a usage row each and no charge. */
  cache?: CacheBilling;
}

export interface CacheBilling {
  /** Completed calls answered `x-gateway-cache: exact` / `semantic` / `miss` (harness count). */
  hits: number;
  misses: number;
  /** Usage rows (status 200) with cache = exact or semantic, and with cache = miss. */
  hitRows: number;
  missRows: number;
  /** Hit rows whose cost is not 0 (hit_price 0), and ledger charges for hit rows. */
  hitRowsCosted: number;
  hitCharges: number;
  pass: boolean;
}

/** A media model's bill in one run: each completed call's usage row and charge against the exact amount. */
export interface ModelBilling {
  model: string;
  unit: string;
  unitsPerCall: number;
  costMicrosPerCall: number;
  /** Completed calls through this gateway (warm-up included). */
  okCalls: number;
  /** Usage rows with status 200 for the model. */
  usageRows: number;
  /** Of those, rows whose unit, units or cost is not the expected one. */
  rowsOffPrice: number;
  chargedMicros: number;
  expectedMicros: number;
  pass: boolean;
}

export interface TargetCheck {
  name: string;
  value: string;
  limit: string;
  pass: boolean;
}

export interface BenchResult {
  date: string;
  durationSec: number;
  mode: { quick: boolean; redis: boolean; postgres: boolean; profile: boolean; only?: string };
  machine: Record<string, string | number>;
  gatewayEntry: string;
  plan: Record<string, number>;
  workloads: WorkloadResult[];
  /** `started`: a second after the setup; `idle`: after the processes sat idle (absent from runs before issue 17). */
  memory: { started?: Record<string, Memory>; idle: Record<string, Memory>; peak: Record<string, Memory> };
  slowStreams: SlowStreamsResult[];
  ledger: LedgerCheck[];
  failures: Record<string, { failed: number; errors: Record<string, number> }>;
  checks: TargetCheck[];
  caveats: string[];
  profile?: ProfileEntry[];
  /** test/bench/cache-lookup.ts: the response cache's lookup cost per tier. */
  cacheLookup?: CacheLookupResult;
  /** Why the lookup phase has no figures (it failed). */
  cacheLookupError?: string;
  /** The CLI's start times (absent with --only). */
  cliStart?: CliStartResult;
  /** The dashboard's paths through the plain gateway (absent with --only). */
  dashboard?: DashboardPathResult[];
  /** Metrics off and traces on against the default daemon, by interleaved A/B (telemetry-ab.ts). */
  telemetry?: { variant: string; rounds: number[]; median: number; baseUs: number }[];
}

/** µs, nearest rank. */
export interface LookupTiming {
  p50: number;
  p99: number;
  samples: number;
}

export interface CacheLookupSize {
  entries: number;
  /** Exact tier in SQLite (CacheStore.getExact): stored keys (hit) and absent keys. */
  sqlite?: { fillSec: number; hit: LookupTiming; absent: LookupTiming; fileMb: number };
  /** Exact tier in Redis (RedisExactTier.get, one round trip). */
  redis?: { fillSec: number; hit: LookupTiming; absent: LookupTiming; usedMemoryMb?: number };
  /** Semantic tier (HNSW in its worker; from vector-lookup.ts): µs, a near-duplicate query (hit), an unrelated one (miss). */
  semantic?: { p50: number; p99: number; missP50?: number; insertPerSec: number; recall?: number };
}

export interface CacheLookupResult {
  /** Timed lookups per kind and size. */
  lookups: number;
  /** Bytes of one stored answer. */
  answerBytes: number;
  /** cacheKeys() of a 3-message call (exact key and semantic partition), µs. */
  keys: LookupTiming;
  /** decodeAnswer() of one stored answer (every hit does it), µs. */
  decode: LookupTiming;
  sizes: CacheLookupSize[];
  redis: { url: string; skipped?: string };
  semantic: { dimensions: number; skipped?: string };
  durationSec: number;
}

export function machineInfo(): Record<string, string | number> {
  let model = cpus()[0]?.model ?? 'unknown';
  try {
    model = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? model;
  } catch {
    // not Linux
  }
  return { cpu: model, cores: cpus().length, ramGb: Math.round((totalmem() / 2 ** 30) * 10) / 10, node: process.version, kernel: release() };
}

const ms = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(2));
const int = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? '-' : Math.round(v).toString());
/** µINR as INR, exact (six decimals, trailing zeros dropped). */
const inr = (micros: number): string => {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const frac = String(abs % 1_000_000).padStart(6, '0').replace(/0+$/, '');
  return `${sign}${Math.floor(abs / 1_000_000)}${frac ? `.${frac}` : ''}`;
};

/** The issue's targets, computed from this run. */
export function evaluate(result: Pick<BenchResult, 'workloads' | 'memory' | 'slowStreams' | 'ledger' | 'failures' | 'cliStart' | 'dashboard'>, gateways: string[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  if (result.dashboard) {
    const failed = result.dashboard.reduce((sum, d) => sum + d.failed, 0);
    checks.push({ name: 'dashboard paths: every request answered 200', value: `${failed} failed of ${result.dashboard.reduce((sum, d) => sum + d.requests + d.failed, 0)}`, limit: '0', pass: failed === 0 });
  }
  for (const c of result.cliStart?.commands ?? []) {
    checks.push({ name: `CLI: ${c.command}`, value: `${int(c.medianMs)} ms (${c.ratio.toFixed(1)}x node -e 0's ${int(result.cliStart?.nodeBareMs)} ms)`, limit: '≤ 3x', pass: c.ratio <= 3 });
  }
  const byId = (id: string): WorkloadResult | undefined => result.workloads.find((w) => w.id === id);
  const chat = byId('chat');
  const portkey = chat?.targets.portkey;
  for (const gw of gateways) {
    const g = chat?.targets[gw];
    if (portkey && g && !gw.includes('postgres') && !gw.includes('-pg')) {
      const ratio = g.maxRps / portkey.maxRps;
      checks.push({ name: `${gw}: max req/s ÷ Portkey's (chat JSON, closed c=${chat?.concurrency})`, value: `${ratio.toFixed(1)}x (${int(g.maxRps)} vs ${int(portkey.maxRps)})`, limit: '≥ 8x', pass: ratio >= 8 });
    }
    // Issue 32's limits, against the minimal floor (floor-minimal.ts): CPU per chat call 1.5x
    // for the embedded default; a gateway on PostgreSQL within 2x of the SQLite one. Against
    // the floor with abort propagation (floor-abort.ts), issue 17's: 1.3x the embedded default,
    // 1.6x with Redis, 2x on PostgreSQL. Each ratio is the median of the per-round ratios.
    const postgres = gw.includes('postgres') || gw.includes('-pg');
    const abortLimit = postgres ? 2 : gw.includes('redis') ? 1.6 : 1.3;
    if (chat?.targets[gw] && chat.targets.floor) {
      const g = chat.targets[gw] as TargetWorkload;
      const f = chat.targets.floor;
      const open = roundRatio(g.open, f.open);
      const atMax = roundRatio(g.closed, f.closed);
      const minimal = `${gw}: CPU/call ÷ minimal floor`;
      if (gw === 'gateway') {
        checks.push({ name: `${minimal} (chat JSON, 50% load)`, value: `${open.toFixed(2)}x (${int(g.cpuUsPerReq)} vs ${int(f.cpuUsPerReq)} µs)`, limit: '≤ 1.5x', pass: open <= 1.5 });
        checks.push({ name: `${minimal} (chat JSON, closed c=${chat.concurrency})`, value: `${atMax.toFixed(2)}x (${int(g.cpuAtMaxUsPerReq)} vs ${int(f.cpuAtMaxUsPerReq)} µs)`, limit: '≤ 1.5x', pass: atMax <= 1.5 });
      } else {
        checks.push({ name: `${minimal} (chat JSON, 50% load)`, value: `${open.toFixed(2)}x (${int(g.cpuUsPerReq)} vs ${int(f.cpuUsPerReq)} µs)`, limit: 'reported', pass: true });
      }
      const plain = chat.targets.gateway;
      if (postgres && plain) {
        const pg = roundRatio(g.open, plain.open);
        const pgMax = roundRatio(g.closed, plain.closed);
        checks.push({ name: `${gw}: CPU/call ÷ gateway on SQLite (chat JSON, 50% load)`, value: `${pg.toFixed(2)}x (${int(g.cpuUsPerReq)} vs ${int(plain.cpuUsPerReq)} µs)`, limit: '≤ 2x', pass: pg <= 2 });
        checks.push({ name: `${gw}: CPU/call ÷ gateway on SQLite (chat JSON, closed c=${chat.concurrency})`, value: `${pgMax.toFixed(2)}x (${int(g.cpuAtMaxUsPerReq)} vs ${int(plain.cpuAtMaxUsPerReq)} µs)`, limit: '≤ 2x', pass: pgMax <= 2 });
      }
      const fa = chat.targets['floor-abort'];
      if (fa) {
        const abortOpen = roundRatio(g.open, fa.open);
        const abortMax = roundRatio(g.closed, fa.closed);
        checks.push({ name: `${gw}: CPU/call ÷ floor-abort (chat JSON, 50% load)`, value: `${abortOpen.toFixed(2)}x (${int(g.cpuUsPerReq)} vs ${int(fa.cpuUsPerReq)} µs)`, limit: `≤ ${abortLimit}x`, pass: abortOpen <= abortLimit });
        checks.push({ name: `${gw}: CPU/call ÷ floor-abort (chat JSON, closed c=${chat.concurrency})`, value: `${abortMax.toFixed(2)}x (${int(g.cpuAtMaxUsPerReq)} vs ${int(fa.cpuAtMaxUsPerReq)} µs)`, limit: `≤ ${abortLimit}x`, pass: abortMax <= abortLimit });
      }
      const latency = (label: string, a: Added, fa: Added): void => {
        checks.push({ name: `${gw}: added p50 (chat JSON, ${label})`, value: `${ms(a.p50)} ms`, limit: `≤ floor ${ms(fa.p50)} + 0.10`, pass: a.p50 <= fa.p50 + 0.1 });
        checks.push({ name: `${gw}: added p99 (chat JSON, ${label})`, value: `${ms(a.p99)} ms`, limit: `≤ 2 × floor ${ms(fa.p99)}`, pass: a.p99 <= 2 * Math.max(0, fa.p99) });
      };
      latency('50% load', g.added as Added, f.added as Added);
      const gf = chat.fixed?.[gw]?.added;
      const ff = chat.fixed?.floor?.added;
      if (gf && ff) latency(`${chat.fixedRate} req/s`, gf, ff);
    }
    for (const id of ['stream', 'messages']) {
      const w = byId(id);
      const g = w?.targets[gw];
      const f = w?.targets.floor;
      const d = w?.targets.direct;
      if (!w || !g || !f || !d) continue;
      const a = g.added as Added;
      const fa = f.added as Added;
      checks.push({ name: `${gw}: TTFT added p50 (${id}, 50% load)`, value: `${ms(a.ttft50)} ms`, limit: `≤ floor ${ms(fa.ttft50)} + 0.30`, pass: a.ttft50 <= fa.ttft50 + 0.3 });
      const gf = w.fixed?.[gw]?.added;
      const ff = w.fixed?.floor?.added;
      if (gf && ff) checks.push({ name: `${gw}: TTFT added p50 (${id}, ${w.fixedRate} req/s)`, value: `${ms(gf.ttft50)} ms`, limit: `≤ floor ${ms(ff.ttft50)} + 0.30`, pass: gf.ttft50 <= ff.ttft50 + 0.3 });
      const directCounts = Object.keys(d.chunkCounts);
      const gwCounts = Object.keys(g.chunkCounts);
      const same = directCounts.length === 1 && gwCounts.length === 1 && directCounts[0] === gwCounts[0];
      checks.push({ name: `${gw}: chunks one for one (${id})`, value: `direct ${directCounts.join('/')}, gateway ${gwCounts.join('/')} per response`, limit: 'equal', pass: same });
    }
    const slow = result.slowStreams.find((s) => s.target === gw);
    if (slow) {
      checks.push({
        name: `${gw}: RSS with ${slow.requested} open streams`,
        value: `${slow.rssMb.toFixed(0)} MB, ${slow.receiving}/${slow.requested} receiving`,
        limit: `< 200 MB, all receiving`,
        pass: slow.rssMb < 200 && slow.allReceiving,
      });
    }
    const idle = result.memory.idle[gw];
    const started = result.memory.started?.[gw];
    if (idle) checks.push({ name: `${gw}: idle RSS`, value: `${idle.rssMb.toFixed(0)} MB${started ? ` (${started.rssMb.toFixed(0)} MB right after start)` : ''}`, limit: '< 70 MB', pass: idle.rssMb < 70 });
  }
  for (const w of result.workloads) {
    for (const [id, t] of Object.entries(w.targets)) {
      if (!t.cache) continue;
      const measured = Object.values(t.cache.measured).reduce((a, b) => a + b, 0);
      const pct = (100 * t.cache.ratio).toFixed(2);
      checks.push({
        name: `${id}: ${w.id === 'cache-hit' ? 'exact hits (cache-hit)' : 'misses (cache-miss)'}`,
        value: `${pct}% of ${measured} measured calls ${JSON.stringify(t.cache.measured)}`,
        limit: w.id === 'cache-hit' ? '≥ 99%' : '100%',
        pass: w.id === 'cache-hit' ? t.cache.ratio >= 0.99 : t.cache.ratio === 1,
      });
    }
  }
  const failed = Object.entries(result.failures).filter(([, f]) => f.failed > 0);
  checks.push({ name: 'no request failed (all targets)', value: failed.length ? failed.map(([t, f]) => `${t}: ${f.failed}`).join(', ') : '0 failed', limit: '0', pass: failed.length === 0 });
  for (const l of result.ledger) {
    checks.push({ name: `${l.target}: one charge per completed call`, value: `${l.charges} charges / ${l.expectedCharges} calls`, limit: 'equal', pass: l.pass });
    if (l.chargedMicros !== undefined && l.usageCostMicros !== undefined) {
      checks.push({
        name: `${l.target}: ledger charges = usage costs`,
        value: `${inr(l.chargedMicros)} / ${inr(l.usageCostMicros)} INR${l.chargesOffUsage ? `, ${l.chargesOffUsage} charges off their row` : ''}`,
        limit: 'equal',
        pass: l.chargedMicros === l.usageCostMicros && l.chargesOffUsage === 0,
      });
    }
    if (l.cache) {
      const c = l.cache;
      checks.push({
        name: `${l.target}: cache hits billed 0, a usage row each`,
        value: `${c.hitRows} hit rows / ${c.hits} hits, ${c.hitRowsCosted} costed, ${c.hitCharges} charged; ${c.missRows} miss rows / ${c.misses} misses`,
        limit: 'rows = calls, 0 costed, 0 charged',
        pass: c.pass,
      });
    }
    for (const b of l.media ?? []) {
      checks.push({
        name: `${l.target}: ${b.model} billed per ${b.unit === 'characters' ? 'character' : 'token'}`,
        value: `${b.usageRows} rows / ${b.okCalls} calls, ${inr(b.chargedMicros)} INR${b.rowsOffPrice ? `, ${b.rowsOffPrice} rows off price` : ''}`,
        limit: `${b.unitsPerCall} ${b.unit} × ${inr(b.costMicrosPerCall)} INR per call`,
        pass: b.pass,
      });
    }
  }
  return checks;
}

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join('  ')).join('\n');
}

/** ' with Redis', ' with PostgreSQL', ' with Redis and PostgreSQL' or '' (a JSON file from before --postgres has no mode.postgres). */
function withStores(mode: BenchResult['mode']): string {
  const stores = [...(mode.redis ? ['Redis'] : []), ...(mode.postgres ? ['PostgreSQL'] : [])];
  return stores.length > 0 ? ` with ${stores.join(' and ')}` : '';
}

export function render(result: BenchResult): string {
  const out: string[] = [];
  const m = result.machine;
  out.push(`LLM gateway benchmark — ${result.date} — ${m.cpu}, ${m.cores} cores, ${m.ramGb} GB, Node ${m.node} — gateway from ${result.gatewayEntry}`);
  out.push(`${result.mode.quick ? 'quick' : 'full'} run${withStores(result.mode)}${result.mode.profile ? ' (PROFILED: CPU numbers inflated)' : ''}, ${result.durationSec.toFixed(0)} s`);
  for (const w of result.workloads) {
    const ids = Object.keys(w.targets);
    const t = (id: string): TargetWorkload => w.targets[id] as TargetWorkload;
    const counts = (id: string): string => Object.entries(t(id).chunkCounts).map(([k, v]) => (w.stream ? `${k}×${v}` : `${v}`)).join(' ');
    const rows: string[][] = [
      ['', ...ids],
      [`max req/s (closed, c=${w.concurrency})`, ...ids.map((id) => int(t(id).maxRps))],
      ['CPU µs/req at max', ...ids.map((id) => int(t(id).cpuAtMaxUsPerReq))],
      [`CPU µs/req @ ${int(w.rate)} req/s`, ...ids.map((id) => int(t(id).cpuUsPerReq))],
      // Media tables: the ratio to the floor's CPU per call (the chat ones have it in the targets below).
      ...(w.media && w.targets.floor
        ? [['  ÷ floor', ...ids.map((id) => (id === 'direct' ? '-' : `${(t(id).cpuUsPerReq / t('floor').cpuUsPerReq).toFixed(2)}x`))]]
        : []),
      ['  simulator CPU µs/req', ...ids.map((id) => int(t(id).simCpuUsPerReq))],
      ...(ids.some((id) => t(id).redisCpuUsPerReq !== undefined) ? [['  redis-server CPU µs/req', ...ids.map((id) => int(t(id).redisCpuUsPerReq))]] : []),
      ...(ids.some((id) => t(id).postgresCpuUsPerReq !== undefined) ? [['  postgres CPU µs/req', ...ids.map((id) => int(t(id).postgresCpuUsPerReq))]] : []),
      ['latency p50 / p99 / p99.9 ms', ...ids.map((id) => `${ms(t(id).p50)} / ${ms(t(id).p99)} / ${ms(t(id).p999)}`)],
      ['added p50 / p99 / p99.9 ms', ...ids.map((id) => (t(id).added ? `${ms(t(id).added?.p50)} / ${ms(t(id).added?.p99)} / ${ms(t(id).added?.p999)}` : '-'))],
    ];
    if (w.stream) {
      const first = w.first ?? 'TTFT';
      rows.push([`${first} p50 / p99 ms`, ...ids.map((id) => `${ms(t(id).ttft50)} / ${ms(t(id).ttft99)}`)]);
      rows.push([`${first} added p50 / p99 ms`, ...ids.map((id) => (t(id).added ? `${ms(t(id).added?.ttft50)} / ${ms(t(id).added?.ttft99)}` : '-'))]);
      rows.push([first === 'TTFB' ? 'audio reads × responses' : 'content chunks × responses', ...ids.map(counts)]);
    } else rows.push(['responses checked', ...ids.map(counts)]);
    rows.push(['failed', ...ids.map((id) => String(t(id).errors))]);
    out.push('', `== ${w.label} — open loop at ${int(w.rate)} req/s (50% of the slowest gateway's max), ${w.targets.direct?.open.length ?? 0} rounds, medians`, table(rows));
    if (w.fixed) {
      const f = (id: string): TargetWorkload => w.fixed?.[id] as TargetWorkload;
      const fixedIds = Object.keys(w.fixed);
      const fixedRows: string[][] = [
        ['', ...fixedIds],
        ['CPU µs/req', ...fixedIds.map((id) => int(f(id).cpuUsPerReq))],
        ['latency p50 / p99 / p99.9 ms', ...fixedIds.map((id) => `${ms(f(id).p50)} / ${ms(f(id).p99)} / ${ms(f(id).p999)}`)],
        ['added p50 / p99 / p99.9 ms', ...fixedIds.map((id) => (f(id).added ? `${ms(f(id).added?.p50)} / ${ms(f(id).added?.p99)} / ${ms(f(id).added?.p999)}` : '-'))],
        ...(w.stream ? [[`${w.first ?? 'TTFT'} added p50 / p99 ms`, ...fixedIds.map((id) => (f(id).added ? `${ms(f(id).added?.ttft50)} / ${ms(f(id).added?.ttft99)}` : '-'))]] : []),
      ];
      out.push(`   same workload, open loop at a fixed ${int(w.fixedRate)} req/s, ${w.fixed.direct?.open.length ?? 0} rounds, medians`, table(fixedRows));
    }
  }
  if (result.dashboard) {
    out.push(
      '',
      '== dashboard paths through the plain gateway (closed loop, signed in with a session token)',
      table([
        ['path', 'req/s', 'p50 / p99 ms', 'CPU µs/req', 'bytes', 'failed'],
        ...result.dashboard.map((d) => [d.path, int(d.rps), `${ms(d.p50Ms)} / ${ms(d.p99Ms)}`, int(d.cpuUsPerReq), int(d.bytes), String(d.failed)]),
      ]),
    );
  }
  if (result.cliStart) {
    const c = result.cliStart;
    out.push('', `== CLI start (wall time to exit, or to the first MCP answer; median of ${c.runs} runs; node -e 0: ${int(c.nodeBareMs)} ms)`, table([['command', 'median ms', 'p90 ms', '÷ node -e 0'], ...c.commands.map((x) => [x.command, int(x.medianMs), int(x.p90Ms), `${x.ratio.toFixed(1)}x`])]));
  }
  const procs = Object.keys(result.memory.idle);
  const memRows: string[][] = [
    ['memory (MB)', ...procs],
    ...(result.memory.started ? [['RSS 1 s after start', ...procs.map((p) => result.memory.started?.[p]?.rssMb.toFixed(0) ?? '-')]] : []),
    [result.memory.started ? 'idle RSS (after sitting idle)' : 'idle RSS (after start)', ...procs.map((p) => result.memory.idle[p]?.rssMb.toFixed(0) ?? '-')],
    ['peak RSS under load (VmHWM)', ...procs.map((p) => result.memory.peak[p]?.hwmMb.toFixed(0) ?? '-')],
  ];
  for (const s of result.slowStreams) {
    memRows.push([
      `${s.requested} slow streams via ${s.target}`,
      ...procs.map((p) => (p === s.target ? `${s.rssMb.toFixed(0)} (${s.receiving} recv)` : p === 'simulator' ? s.simRssMb.toFixed(0) : '')),
    ]);
  }
  out.push('', table(memRows));
  for (const s of result.slowStreams) {
    out.push(`  via ${s.target}: ${s.receiving}/${s.requested} receiving after ${(s.openMs / 1000).toFixed(1)} s; max chunks per read ${s.maxChunksPerRead}; aborted ${s.abortedReceiving} receiving + ${s.abortedEarly} before content; failed ${s.failed}${s.errors.length ? ` (${s.errors.join('; ')})` : ''}`);
    if (!s.allReceiving) out.push(`    ${s.requested - s.receiving} streams were open but got no content within the wait: they were queued inside ${s.target} (an upstream connection limit?)`);
  }
  for (const l of result.ledger) {
    out.push(`  ledger ${l.target}: ${l.charges} charges; calls: ${l.okCalls} ok + ${l.abortedReceiving} aborted after content = ${l.expectedCharges}; usage rows by status ${JSON.stringify(l.usageByStatus)}; charges without usage row ${l.chargesWithoutUsage}; tight prompt bound computed ${l.tightBound} times; calls above their hold ${l.overHold}`);
    if (l.cache) out.push(`    cache: ${l.cache.hits} hits (${l.cache.hitRows} usage rows with cache exact/semantic, ${l.cache.hitRowsCosted} of them costed, ${l.cache.hitCharges} charged), ${l.cache.misses} misses (${l.cache.missRows} rows with cache miss)`);
    for (const b of l.media ?? []) {
      out.push(`    ${b.model}: ${b.usageRows} usage rows (200) for ${b.okCalls} completed calls, each ${b.unitsPerCall} ${b.unit} = ${inr(b.costMicrosPerCall)} INR; charged ${inr(b.chargedMicros)} of ${inr(b.expectedMicros)} INR; rows off price ${b.rowsOffPrice}`);
    }
  }
  const cacheSection = renderCacheSection(result);
  if (cacheSection) out.push('', cacheSection);
  out.push('', table([['target (issues 5, 17, 31 and 32)', 'value', 'limit', ''], ...result.checks.map((c) => [c.name, c.value, c.limit, c.pass ? 'PASS' : 'MISS'])]));
  if (result.profile) {
    out.push('', 'gateway CPU profile (whole run, main thread), top self time, % of busy time:', table([['function', 'self ms', '%', 'where'], ...result.profile.map((p) => [p.fn, p.selfMs.toFixed(0), p.pct.toFixed(1), p.where])]));
  }
  out.push('', ...result.caveats.map((c) => `note: ${c}`));
  return out.join('\n');
}

/**
 * "Response cache": a hit's and a miss's cost through the cache-enabled gateway next to the
 * plain gateway's chat call, then the lookup cost per tier (cache-lookup.ts).
 */
function renderCacheSection(result: BenchResult): string | undefined {
  const byId = (id: string): WorkloadResult | undefined => result.workloads.find((w) => w.id === id);
  const hit = byId('cache-hit');
  const miss = byId('cache-miss');
  const chat = byId('chat');
  if (!hit && !miss && !result.cacheLookup && !result.cacheLookupError) return undefined;
  const out: string[] = ['== Response cache'];
  const columns: Array<{ name: string; t: TargetWorkload; rate: number }> = [];
  // The plain gateway's figures for the same call, measured beside the hits (the chat workload's
  // when cache-hit did not run).
  const plain = hit?.targets.gateway ? { name: 'gateway (no cache), same call', t: hit.targets.gateway, rate: hit.rate } : chat?.targets.gateway ? { name: 'gateway, chat', t: chat.targets.gateway, rate: chat.rate } : undefined;
  if (plain) columns.push(plain);
  if (hit?.targets['gateway-cache']) columns.push({ name: 'gateway-cache, hit', t: hit.targets['gateway-cache'], rate: hit.rate });
  if (miss?.targets.gateway) columns.push({ name: 'gateway (no cache), unique', t: miss.targets.gateway, rate: miss.rate });
  if (miss?.targets['gateway-cache']) columns.push({ name: 'gateway-cache, miss', t: miss.targets['gateway-cache'], rate: miss.rate });
  if (columns.length > 0) {
    const ratio = (c: { t: TargetWorkload }): string => (c.t.cache ? `${(100 * c.t.cache.ratio).toFixed(2)}% ${c.t.cache.expected}` : '-');
    out.push(
      table([
        ['chat JSON, openai/gpt-4o-mini', ...columns.map((c) => c.name)],
        ['CPU µs/call (open loop)', ...columns.map((c) => `${int(c.t.cpuUsPerReq)} @ ${int(c.rate)}/s`)],
        ['CPU µs/call at max', ...columns.map((c) => int(c.t.cpuAtMaxUsPerReq))],
        ['max req/s (closed)', ...columns.map((c) => int(c.t.maxRps))],
        ['added p50 / p99 ms', ...columns.map((c) => (c.t.added ? `${ms(c.t.added.p50)} / ${ms(c.t.added.p99)}` : '-'))],
        ['latency p50 / p99 ms', ...columns.map((c) => `${ms(c.t.p50)} / ${ms(c.t.p99)}`)],
        ['measured calls by x-gateway-cache', ...columns.map(ratio)],
      ]),
    );
    const h = hit?.targets['gateway-cache'];
    const m = miss?.targets['gateway-cache'];
    if (h && m) {
      out.push(
        `  a hit costs ${int(h.cpuUsPerReq)} µs of gateway CPU against ${int(m.cpuUsPerReq)} µs for a miss` +
          `${plain ? ` (${int(plain.t.cpuUsPerReq)} µs for the plain gateway's call)` : ''}; at saturation ${int(h.cpuAtMaxUsPerReq)} vs ${int(m.cpuAtMaxUsPerReq)} µs, ${int(h.maxRps)} vs ${int(m.maxRps)} req/s.`,
      );
    }
    for (const [label, w] of [['cache-hit', hit], ['cache-miss', miss]] as const) {
      const c = w?.targets['gateway-cache']?.cache;
      if (c) out.push(`  ${label} through gateway-cache: warm-up ${JSON.stringify(c.warmup)}, measured ${JSON.stringify(c.measured)}`);
    }
  }
  if (result.cacheLookup) out.push('', renderCacheLookup(result.cacheLookup));
  if (result.cacheLookupError) out.push('', `lookup cost per tier: not measured (${result.cacheLookupError})`);
  return out.join('\n');
}

/** The lookup cost per tier and size (cache-lookup.ts), µs. */
export function renderCacheLookup(r: CacheLookupResult): string {
  const pp = (t: LookupTiming | undefined): string => (t ? `${t.p50.toFixed(1)} / ${t.p99.toFixed(1)}` : '-');
  const rows: string[][] = [
    [`lookup cost, µs p50 / p99 (${r.lookups} lookups each)`, ...r.sizes.map((s) => `${s.entries} entries`)],
    ['exact, SQLite getExact, stored key', ...r.sizes.map((s) => pp(s.sqlite?.hit))],
    ['exact, SQLite getExact, absent key', ...r.sizes.map((s) => pp(s.sqlite?.absent))],
    ['  SQLite fill s / file MB', ...r.sizes.map((s) => (s.sqlite ? `${s.sqlite.fillSec} / ${s.sqlite.fileMb}` : '-'))],
  ];
  if (!r.redis.skipped) {
    rows.push(['exact, Redis get (round trip), stored', ...r.sizes.map((s) => pp(s.redis?.hit))]);
    rows.push(['exact, Redis get (round trip), absent', ...r.sizes.map((s) => pp(s.redis?.absent))]);
    rows.push(['  Redis fill s (500 in flight)', ...r.sizes.map((s) => (s.redis ? `${s.redis.fillSec}` : '-'))]);
  }
  if (!r.semantic.skipped || r.sizes.some((s) => s.semantic)) {
    rows.push([`semantic, HNSW search (${r.semantic.dimensions}d, worker), hit`, ...r.sizes.map((s) => (s.semantic ? `${int(s.semantic.p50)} / ${int(s.semantic.p99)}` : '-'))]);
    rows.push(['semantic, unrelated query (miss), p50', ...r.sizes.map((s) => (s.semantic?.missP50 !== undefined ? int(s.semantic.missP50) : '-'))]);
    rows.push(['  semantic recall@1 / inserts per s', ...r.sizes.map((s) => (s.semantic ? `${s.semantic.recall !== undefined ? `${Math.round(100 * s.semantic.recall)}%` : '-'} / ${s.semantic.insertPerSec}` : '-'))]);
  }
  const out = [table(rows)];
  out.push(`  keys of a 3-message call (cacheKeys: exact key + semantic partition): p50 ${r.keys.p50.toFixed(1)} µs, p99 ${r.keys.p99.toFixed(1)} µs; decoding a ${r.answerBytes}-byte stored answer: p50 ${r.decode.p50.toFixed(1)} µs, p99 ${r.decode.p99.toFixed(1)} µs`);
  if (r.redis.skipped) out.push(`  Redis tier skipped: ${r.redis.skipped}`);
  if (r.semantic.skipped) out.push(`  semantic tier: ${r.semantic.skipped}`);
  out.push(`  measured in ${r.durationSec} s; the semantic figures are from test/bench/vector-lookup.ts (random unit vectors, near-duplicate queries).`);
  return out.join('\n');
}

/** bench-results/latest.json and a timestamped copy (profiled runs: only the copy). */
export function writeResults(dir: string, result: BenchResult): string[] {
  mkdirSync(dir, { recursive: true });
  const text = JSON.stringify(result, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n';
  const stamp = result.date.replace(/[:.]/g, '-');
  const files = [join(dir, `${result.mode.profile ? 'profile' : 'bench'}-${stamp}.json`)];
  if (!result.mode.profile) files.unshift(join(dir, 'latest.json'));
  for (const file of files) writeFileSync(file, text);
  return files;
}

export interface ProfileEntry {
  fn: string;
  where: string;
  selfMs: number;
  pct: number;
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

/** Top self-time entries of a V8 .cpuprofile (by function and location), idle time left out. */
export function topSelfTime(file: string, root: string, n = 10): ProfileEntry[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byNode = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const self = new Map<string, { fn: string; where: string; us: number }>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const frame = byNode.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    // Idle time is not work: percentages are of the time the process was busy.
    if (!frame || frame.functionName === '(idle)') return;
    total += us;
    const url = frame.url.startsWith('file://') ? relative(root, new URL(frame.url).pathname) : frame.url;
    const where = url ? `${url}:${frame.lineNumber + 1}` : '';
    const key = `${frame.functionName}@${where}`;
    const entry = self.get(key) ?? { fn: frame.functionName || '(anonymous)', where, us: 0 };
    entry.us += us;
    self.set(key, entry);
  });
  return [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, n)
    .map((e) => ({ fn: e.fn, where: e.where, selfMs: e.us / 1000, pct: (100 * e.us) / Math.max(1, total) }));
}
