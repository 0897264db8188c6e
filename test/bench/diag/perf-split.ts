import { spawn, spawnSync } from 'node:child_process';
import { closedLoop, makeTarget, specFor } from '../load.js';
import { gatewayRunsCompiled, startFloor, startGatewayProc, startSimulator, type GatewayProc } from '../procs.js';

/**
 * Where the CPU of a chat call goes, floor against gateway, by the kernel's own sampler: Linux
 * `perf record` on each target's process (every thread) while CONC (50) connections send chat
 * JSON for MS (5000) ms, after WARM_MS (10,000) of the same; then its samples by symbol,
 * sorted into kinds (the kernel, V8's garbage collector, its compilers, malloc, SQLite, JSON,
 * promises and async functions, inline caches, strings, the rest: JIT code and other
 * builtins), in µs per call, and the symbols that differ most. Unlike --cpu-prof (V8's
 * sampler, wall time of the main thread) it sees the helper threads and the time spent in the
 * kernel, and counts only CPU time. Needs `perf` (linux-perf) and the right to profile another
 * process (root, or kernel.perf_event_paranoid <= 1). AGAINST=metrics-off puts a second
 * gateway, with metrics.enabled: false, in the floor's place (its lines still say "floor").
 *
 *   npm run build && node --import tsx test/bench/diag/perf-split.ts
 */

const concurrency = Number(process.env.CONC ?? 50);
const windowMs = Number(process.env.MS ?? 5000);
/** Closed-loop load before the window (10 s): the gateway's code takes several seconds to be optimized. */
const warmMs = Number(process.env.WARM_MS ?? 10_000);
const HZ = 2999;

if (spawnSync('perf', ['--version']).status !== 0) {
  console.error('perf-split: `perf` is not installed (Debian: apt-get install linux-perf)');
  process.exit(2);
}

/** Kinds of symbol, first match wins; `[k]` symbols are the kernel's. */
const KINDS: Array<[string, RegExp]> = [
  ['gc', /Scaveng|MarkCompact|Marking|Sweep|Heap::|Evacuat|GCTracer|RememberedSet|SlotSet|MemoryAllocator|PagedSpace|NewSpace|MinorMC|Worklist|LargeObject|Compactor|RecordWrite|Marker|ArrayBufferSweeper/],
  ['compile', /Compile|compiler::|Maglev|Sparkplug|Baseline/],
  ['sqlite', /sqlite|pcache|btree|Vdbe|vdbe|pager/i],
  ['malloc', /malloc|free\b|cfree|unlink_chunk|_int_|realloc|calloc/],
  ['json', /Json/],
  ['promise/async', /Promise|Microtask|Generator|Async|Await/],
  ['inline caches', /IC\b|IC_|Megamorphic/],
  ['strings', /String/],
];

interface Split {
  requests: number;
  total: number;
  kinds: Map<string, number>;
  symbols: Map<string, number>;
}

function split(file: string, requests: number): Split {
  const out = spawnSync('perf', ['report', '-i', file, '--sort', 'sym', '--stdio', '-n'], { encoding: 'utf8', maxBuffer: 64 << 20 }).stdout;
  const kinds = new Map<string, number>();
  const symbols = new Map<string, number>();
  let total = 0;
  for (const line of out.split('\n')) {
    const m = /^\s+[\d.]+%\s+(\d+)\s+(\[[k.]\])\s+(.*)$/.exec(line);
    if (!m) continue;
    const samples = Number(m[1]);
    const symbol = (m[3] as string).trim();
    total += samples;
    symbols.set(symbol, samples);
    const kind = m[2] === '[k]' ? 'kernel' : (KINDS.find(([, re]) => re.test(symbol))?.[0] ?? 'the rest (JIT code, other builtins)');
    kinds.set(kind, (kinds.get(kind) ?? 0) + samples);
  }
  return { requests, total, kinds, symbols };
}

// From src/ through tsx, every closure also goes through esbuild's name helper: not what runs in production.
if (!gatewayRunsCompiled()) {
  console.error('perf-split: dist/ is missing or older than src/: run npm run build first');
  process.exit(2);
}

const us = (samples: number, requests: number): number => (samples / HZ) * 1e6 / requests;

const sim = await startSimulator();
// AGAINST=metrics-off: the first target is a second gateway with metrics.enabled: false.
const metricsOff = process.env.AGAINST === 'metrics-off';
const floor = metricsOff ? await startGatewayProc({ name: 'metrics-off', simUrl: sim.url, simKey: sim.key, keys: 16, extra: { metrics: { enabled: false } } }) : await startFloor(sim.url, sim.key);
const gw = await startGatewayProc({ name: 'gateway', simUrl: sim.url, simKey: sim.key, keys: 16 });
const splits = new Map<string, Split>();
const first = metricsOff ? makeTarget('floor', 'gateway', floor.url, floor.pid, (floor as GatewayProc).keys) : makeTarget('floor', 'floor', floor.url, floor.pid, ['x']);
for (const t of [first, makeTarget('gateway', 'gateway', gw.url, gw.pid, gw.keys)]) {
  await closedLoop(t, specFor(t, 'chat'), concurrency, 0, warmMs);
  const file = `/tmp/perf-split-${t.id}.data`;
  const perf = spawn('perf', ['record', '-F', String(HZ), '-p', String(t.pid), '-o', file], { stdio: 'ignore' });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const result = await closedLoop(t, specFor(t, 'chat'), concurrency, 0, windowMs);
  perf.kill('SIGINT');
  await new Promise((resolve) => perf.once('exit', resolve));
  // perf started before the window and stopped after it: a few samples outside it, both targets alike.
  splits.set(t.id, split(file, result.completed));
  console.log(`${t.id}: ${result.completed} calls, ${result.rps.toFixed(0)} req/s`);
}
for (const p of [sim, floor, gw]) p.child.kill('SIGTERM');

const f = splits.get('floor') as Split;
const g = splits.get('gateway') as Split;
console.log(`\nCPU µs per call (perf, every thread): floor ${us(f.total, f.requests).toFixed(0)}, gateway ${us(g.total, g.requests).toFixed(0)}`);
console.log('   floor  gateway     diff  kind');
const kinds = [...new Set([...g.kinds.keys(), ...f.kinds.keys()])].map((k) => [k, us(f.kinds.get(k) ?? 0, f.requests), us(g.kinds.get(k) ?? 0, g.requests)] as const);
for (const [kind, a, b] of kinds.sort((x, y) => y[2] - y[1] - (x[2] - x[1]))) console.log(`${a.toFixed(1).padStart(8)} ${b.toFixed(1).padStart(8)} ${(b - a >= 0 ? '+' : '') + (b - a).toFixed(1).padStart(7)}  ${kind}`);
console.log('\nlargest differences by symbol (µs per call):');
const symbols = [...new Set([...g.symbols.keys(), ...f.symbols.keys()])].map((s) => [s, us(g.symbols.get(s) ?? 0, g.requests) - us(f.symbols.get(s) ?? 0, f.requests)] as const);
for (const [symbol, d] of symbols.sort((x, y) => y[1] - x[1]).slice(0, Number(process.env.TOP ?? 20))) console.log(`${((d >= 0 ? '+' : '') + d.toFixed(1)).padStart(7)}  ${symbol.slice(0, 110)}`);
process.exit(0);
