import { readFileSync } from 'node:fs';

/**
 * Summaries of the profiles the benchmark's tools write, per request:
 *
 *   node --import tsx test/bench/diag/profile-report.ts cpu <requests> <gateway.cpuprofile> [floor.cpuprofile]
 *     CPU by source file or package (µs per request), busiest first; with a second profile
 *     (the floor's, from PROF=1 NOWARM=1 probe.ts: both saw the same requests), the
 *     difference, largest first: where the gateway's extra time per call goes.
 *   node --import tsx test/bench/diag/profile-report.ts alloc <requests> <alloc-N.heapprofile>
 *     Bytes allocated by function (self) per request, from diag/alloc-profile.cjs (its JSON
 *     file gives the request count).
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}
interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

/** A frame's source: a package under node_modules, a node: module, the file name, or the V8 pseudo-frame. */
function sourceOf(frame: CallFrame): string {
  const { url } = frame;
  if (url.includes('node_modules/')) return `pkg ${url.split('node_modules/').at(-1)?.split('/')[0] ?? url}`;
  if (url.startsWith('node:')) return url;
  if (url !== '') return url.split('/').at(-1) ?? url;
  return frame.functionName || '(unknown)';
}

function cpuBySource(path: string): Map<string, number> {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const out = new Map<string, number>();
  profile.samples.forEach((id, index) => {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === '(idle)') return;
    const key = sourceOf(node.callFrame);
    out.set(key, (out.get(key) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  return out;
}

function cpu(requests: number, gatewayPath: string, floorPath: string | undefined): void {
  const gateway = cpuBySource(gatewayPath);
  const floor = floorPath ? cpuBySource(floorPath) : new Map<string, number>();
  const total = (m: Map<string, number>): number => [...m.values()].reduce((s, v) => s + v, 0) / requests;
  console.log(`busy µs per request: ${total(gateway).toFixed(1)}${floorPath ? ` (floor ${total(floor).toFixed(1)})` : ''}`);
  const keys = [...new Set([...gateway.keys(), ...floor.keys()])];
  const rows = keys.map((key) => ({ key, gw: (gateway.get(key) ?? 0) / requests, floor: (floor.get(key) ?? 0) / requests }));
  rows.sort((a, b) => b.gw - b.floor - (a.gw - a.floor));
  console.log(floorPath ? '  floor  gateway     diff  source' : '  gateway  source');
  for (const row of rows.slice(0, 40)) {
    if (floorPath) console.log(`${row.floor.toFixed(2).padStart(7)} ${row.gw.toFixed(2).padStart(8)} ${(row.gw - row.floor >= 0 ? '+' : '') + (row.gw - row.floor).toFixed(2).padStart(7)}  ${row.key}`);
    else console.log(`${row.gw.toFixed(2).padStart(9)}  ${row.key}`);
  }
}

function alloc(requests: number, path: string): void {
  const head = (JSON.parse(readFileSync(path, 'utf8')) as { head: HeapNode }).head;
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode): void => {
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${sourceOf(f)}:${f.lineNumber + 1}`;
    bySite.set(key, (bySite.get(key) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(head);
  console.log(`bytes allocated per request: ${(total / requests).toFixed(0)}`);
  for (const [key, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${(bytes / requests).toFixed(0).padStart(8)}  ${key}`);
}

const [mode, count, first, second] = process.argv.slice(2);
const requests = Number(count);
if (!first || !Number.isFinite(requests) || requests <= 0 || (mode !== 'cpu' && mode !== 'alloc')) {
  console.error('usage: profile-report.ts cpu <requests> <profile> [floor profile] | alloc <requests> <heapprofile>');
  process.exit(2);
}
if (mode === 'cpu') cpu(requests, first, second);
else alloc(requests, first);
