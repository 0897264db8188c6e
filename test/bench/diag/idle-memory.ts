import { readdirSync } from 'node:fs';
import { memory, startGatewayProc, startSimulator } from '../procs.js';
import { formatResident } from './smaps.js';

/**
 * Where an idle gateway's memory is (the benchmark's "idle RSS"): a gateway (dist/, embedded
 * default, set up as the benchmark's are) left alone for WAIT ms (30 s), then its RSS, thread
 * count and V8 heap (from /metrics), and its resident memory by mapping (the node binary's
 * own pages, malloc's heap, anonymous mappings: V8's pages among them).
 *
 *   npm run build && node --import tsx test/bench/diag/idle-memory.ts
 *
 * GW_NODE_ARGS adds Node flags to the gateway, e.g. an `--import` of a module.register() hook
 * that logs each module loaded, to see which packages a daemon loads that it does not use.
 */
const sim = await startSimulator();
const gw = await startGatewayProc({ name: 'gateway', simUrl: sim.url, simKey: sim.key, keys: 16, ...(process.env.GW_NODE_ARGS ? { nodeArgs: process.env.GW_NODE_ARGS.split(' ') } : {}) });

await new Promise((resolve) => setTimeout(resolve, Number(process.env.WAIT ?? 30_000)));
const pid = gw.pid;
const threads = readdirSync(`/proc/${pid}/task`).length;

const metrics = (await (await fetch(`${gw.url}/metrics`)).text()).split('\n');
const mb = (name: string): string => (Number(metrics.find((line) => line.startsWith(`${name} `))?.split(' ')[1]) / 2 ** 20).toFixed(1);
console.log(`RSS ${memory(pid).rssMb.toFixed(0)} MB, ${threads} threads; V8 heap ${mb('nodejs_heap_size_total_bytes')} MB, used ${mb('nodejs_heap_size_used_bytes')}, external ${mb('nodejs_external_memory_bytes')}`);
console.log(formatResident(pid));
for (const proc of [sim, gw]) proc.child.kill('SIGTERM');
process.exit(0);
