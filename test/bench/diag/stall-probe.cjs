'use strict';
// Preloaded into a daemon (or the floor) with `--require`: records every GC pause (by kind) and
// every stretch the event loop was blocked for more than STALL_MS (3) past a 2 ms timer, and
// at exit writes STALL_DIR/stall-<pid>.json: counts, totals and the largest of each. For the
// tail latency: it tells the pauses of the gateway from those every Node process on this
// machine has (run it in the floor too, as probe.ts does with GW_NODE_ARGS).
//
//   GW_NODE_ARGS="--require ./test/bench/diag/stall-probe.cjs" RATE=950 node --import tsx test/bench/probe.ts
const { PerformanceObserver, constants } = require('node:perf_hooks');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.STALL_DIR || '/tmp';
const threshold = Number(process.env.STALL_MS || 3);
const kinds = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak-callbacks' };
const gc = {};
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = kinds[entry.detail?.kind] ?? String(entry.detail?.kind);
    const k = (gc[kind] ??= { count: 0, totalMs: 0, maxMs: 0, over2ms: 0 });
    k.count += 1;
    k.totalMs += entry.duration;
    k.maxMs = Math.max(k.maxMs, entry.duration);
    if (entry.duration > 2) k.over2ms += 1;
  }
}).observe({ entryTypes: ['gc'] });
const stalls = [];
let last = performance.now();
setInterval(() => {
  const now = performance.now();
  const late = now - last - 2;
  if (late > threshold) stalls.push(late);
  last = now;
}, 2).unref();
process.on('exit', () => {
  stalls.sort((a, b) => b - a);
  const round = (n) => Math.round(n * 100) / 100;
  for (const k of Object.values(gc)) {
    k.totalMs = round(k.totalMs);
    k.maxMs = round(k.maxMs);
  }
  const summary = { gc, stalls: { over: threshold, count: stalls.length, totalMs: round(stalls.reduce((s, x) => s + x, 0)), largestMs: stalls.slice(0, 10).map(round) } };
  fs.writeFileSync(path.join(dir, `stall-${process.pid}.json`), `${JSON.stringify(summary)}\n`);
});
