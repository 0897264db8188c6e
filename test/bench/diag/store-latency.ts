import postgres from 'postgres';
import { makeTarget, openLoop, specFor } from '../load.js';
import { startGatewayProc, startSimulator } from '../procs.js';

/**
 * Where a gateway's added latency goes on its store: chat JSON at a fixed rate through one
 * gateway (dist/, embedded default), then the calls' p50/p99 beside the store's own timings
 * from the daemon's /metrics (gateway_store_duration_seconds: `settle`, a batch into the
 * ledger, on PostgreSQL before the batch's answers end; `funds`, admission's wallet read),
 * their mean and the share of them over 10 ms.
 *
 *   npm run build && RATE=200 MS=8000 node --import tsx test/bench/diag/store-latency.ts
 *
 * PG=1 puts the gateway on a scratch PostgreSQL database (PG_URL, an admin URL that may
 * CREATE DATABASE; its query string is passed on, e.g. `?synchronous_commit=off` to see what
 * the commit's flush costs), dropped at the end. Without it the gateway is on SQLite.
 * GW_NODE_ARGS adds Node flags to the gateway (e.g. `--require ./a-preload.cjs`).
 */

const rate = Number(process.env.RATE ?? 200);
const durationMs = Number(process.env.MS ?? 8000);
const adminUrl = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const scratch = process.env.PG ? `store_latency_${process.pid}` : undefined;
const admin = scratch ? postgres(adminUrl, { max: 1, onnotice: () => undefined }) : undefined;
let databaseUrl: string | undefined;
if (admin && scratch) {
  await admin.unsafe(`CREATE DATABASE ${scratch}`);
  const url = new URL(adminUrl);
  url.pathname = `/${scratch}`;
  databaseUrl = url.toString();
}

const sim = await startSimulator();
const gw = await startGatewayProc({ name: 'gateway', simUrl: sim.url, simKey: sim.key, keys: 16, ...(databaseUrl ? { databaseUrl } : {}), ...(process.env.GW_NODE_ARGS ? { nodeArgs: process.env.GW_NODE_ARGS.split(' ') } : {}) });
const target = makeTarget('gateway', 'gateway', gw.url, gw.pid, gw.keys);

/** gateway_store_duration_seconds' series (bucket, sum, count) by name and labels. */
async function storeSeries(): Promise<Map<string, number>> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('gateway_store_duration_seconds')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

try {
  await openLoop(target, specFor(target, 'chat'), Math.min(rate, 100), 2000, [gw.pid]);
  const before = await storeSeries();
  const result = await openLoop(target, specFor(target, 'chat'), rate, durationMs, [gw.pid]);
  const after = await storeSeries();
  const latency = [...result.latency].sort((a, b) => a - b);
  const at = (q: number): string => (latency[Math.min(latency.length - 1, Math.floor(latency.length * q))] ?? NaN).toFixed(2);
  console.log(`${databaseUrl ? 'PostgreSQL' : 'SQLite'}, ${rate} req/s for ${durationMs / 1000} s: ${latency.length} calls, ${result.errors} failed, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`);
  const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0);
  for (const op of ['settle', 'funds']) {
    const labels = `backend="${databaseUrl ? 'postgres' : 'sqlite'}",op="${op}"`;
    const count = delta(`gateway_store_duration_seconds_count{${labels}}`);
    if (count === 0) {
      console.log(`  ${op}: none`);
      continue;
    }
    const mean = (delta(`gateway_store_duration_seconds_sum{${labels}}`) / count) * 1000;
    const within10 = delta(`gateway_store_duration_seconds_bucket{${labels},le="0.01"}`);
    console.log(`  ${op}: ${count} timed, mean ${mean.toFixed(2)} ms, ${(((count - within10) / count) * 100).toFixed(1)}% over 10 ms`);
  }
} finally {
  for (const proc of [sim, gw]) proc.child.kill('SIGTERM');
  await Promise.all([sim, gw].map((proc) => new Promise((resolve) => (proc.child.exitCode !== null ? resolve(null) : proc.child.once('exit', resolve)))));
  if (admin && scratch) {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${scratch} WITH (FORCE)`);
    await admin.end();
  }
}
process.exit(0);
