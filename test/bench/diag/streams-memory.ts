import { closedLoop, makeTarget, specFor, type WorkloadId } from '../load.js';
import { memory, startFloor, startGatewayProc, startSimulator } from '../procs.js';
import { slowStreams } from '../streams.js';
import { formatResident } from './smaps.js';

/**
 * What 1,000 open streams cost in memory (issue 32: under 200 MB RSS for the plain gateway),
 * without the rest of the benchmark: the simulator, the minimal floor and the gateway (dist/,
 * embedded default), each target's RSS idle and then with STREAMS (1000) slow streams open
 * (test/bench/streams.ts, the benchmark's own phase). GW_NODE_ARGS adds Node flags to the
 * gateway (e.g. `--max-semi-space-size=4`). LOAD_MS=10000 runs that long of chat JSON and then of
 * streams at 50 connections through each target first, as the benchmark's earlier phases do;
 * LOAD_WORKLOADS=chat,stream,messages,embeddings,speech gives the gateway those in turn (the
 * floor runs the chat ones only; the gateway has no response cache here). SMAPS=1 prints the
 * gateway's resident memory by mapping before and with the streams.
 *
 *   npm run build && node --import tsx test/bench/diag/streams-memory.ts
 */

const streams = Number(process.env.STREAMS ?? 1000);
const sim = await startSimulator();
const floor = await startFloor(sim.url, sim.key);
const gw = await startGatewayProc({ name: 'gateway', simUrl: sim.url, simKey: sim.key, keys: 16, ...(process.env.GW_NODE_ARGS ? { nodeArgs: process.env.GW_NODE_ARGS.split(' ') } : {}) });
/** The gateway's V8 heap and external memory from its /metrics (loopback), MB: where its RSS is. */
async function heap(url: string): Promise<string> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const mb = (name: string): string => {
    const line = text.split('\n').find((l) => l.startsWith(name));
    return line ? (Number(line.split(' ').at(-1)) / 2 ** 20).toFixed(0) : '?';
  };
  const spaces = text.split('\n').filter((l) => l.startsWith('nodejs_heap_space_size_total_bytes{')).map((l) => `${/space="(\w+)"/.exec(l)?.[1]}=${(Number(l.split(' ').at(-1)) / 2 ** 20).toFixed(0)}`);
  return `heap total ${mb('nodejs_heap_size_total_bytes')} MB, used ${mb('nodejs_heap_size_used_bytes')}, external ${mb('nodejs_external_memory_bytes')} (${spaces.join(' ')})`;
}
/** The workloads LOAD_MS runs through the gateway, in turn (default chat,stream). */
const loadWorkloads = (process.env.LOAD_WORKLOADS ?? 'chat,stream').split(',') as WorkloadId[];
const targets = [makeTarget('floor', 'floor', floor.url, floor.pid, ['x']), makeTarget('gateway', 'gateway', gw.url, gw.pid, gw.keys)];
await new Promise((resolve) => setTimeout(resolve, 1000));
for (const t of targets) {
  // LOAD_MS: that long of chat JSON at 50 connections first (the benchmark's earlier phases, in short).
  if (process.env.LOAD_MS) {
    const before = memory(t.pid).rssMb;
    for (const workload of t.id === 'gateway' ? loadWorkloads : loadWorkloads.filter((w) => w === 'chat' || w === 'stream')) await closedLoop(t, specFor(t, workload), 50, 0, Number(process.env.LOAD_MS));
    console.log(`${t.id}: ${before.toFixed(0)} MB before the load, ${memory(t.pid).rssMb.toFixed(0)} MB after${t.id === 'gateway' ? `; ${await heap(gw.url)}` : ''}`);
  }
  if (process.env.QUIET_MS) await new Promise((resolve) => setTimeout(resolve, Number(process.env.QUIET_MS)));
  const idle = memory(t.pid).rssMb;
  if (t.id === 'gateway' && process.env.SMAPS) console.log(`gateway before the streams, by mapping:\n${formatResident(t.pid)}`);
  const result = await slowStreams(t, sim.pid, { streams, chunkDelayMs: 1000, waitMs: 10_000, settleMs: 2000 });
  if (t.id === 'gateway') console.log(`gateway after the streams: ${await heap(gw.url)}`);
  if (t.id === 'gateway' && process.env.SMAPS) console.log(formatResident(t.pid));
  console.log(`${t.id}: idle ${idle.toFixed(0)} MB, ${result.receiving}/${streams} streams receiving: RSS ${result.rssMb.toFixed(0)} MB (${(((result.rssMb - idle) * 1024) / streams).toFixed(0)} KB per stream), failed ${result.failed}${result.errors.length ? ` ${result.errors.join('; ')}` : ''}`);
  await new Promise((resolve) => setTimeout(resolve, 1000));
}
for (const p of [sim, floor, gw]) p.child.kill('SIGTERM');
await Promise.all([sim, floor, gw].map((p) => new Promise((resolve) => p.child.once('exit', resolve))));
process.exit(0);
