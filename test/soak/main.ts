import { parseArgs } from 'node:util';
import { formatReport } from './report.js';
import { runSoak, type SoakOptions } from './soak.js';

/**
 * `npm run soak [-- --duration 10m --backend sqlite|postgres|both --concurrency 32 --rate 150]`: the soak
 * (soak.ts) on each backend in turn, its report on stdout; exit 1 when a check fails.
 * Default: 2 minutes on SQLite, then 1 minute on PostgreSQL (`--duration` sets the SQLite run;
 * the PostgreSQL one takes half of it).
 */

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '2m' },
    backend: { type: 'string', default: 'both' },
    concurrency: { type: 'string', default: '32' },
    'fault-rate': { type: 'string', default: '0.3' },
    'abort-rate': { type: 'string', default: '0.06' },
    rate: { type: 'string' },
  },
});

function duration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!match) throw new Error(`--duration: a number with ms, s, m or h (got ${text})`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? 's'] ?? 1000;
  return Number(match[1]) * unit;
}

const backends: SoakOptions['backend'][] = values.backend === 'both' ? ['sqlite', 'postgres'] : [values.backend as SoakOptions['backend']];
if (!backends.every((backend) => backend === 'sqlite' || backend === 'postgres')) throw new Error('--backend: sqlite, postgres or both');
let failed = false;
for (const backend of backends) {
  const durationMs = duration(values.duration) / (backend === 'postgres' && backends.length === 2 ? 2 : 1);
  const report = await runSoak({
    backend,
    durationMs,
    concurrency: Number(values.concurrency),
    faultRate: Number(values['fault-rate']),
    abortRate: Number(values['abort-rate']),
    ...(values.rate ? { rate: Number(values.rate) } : {}),
    log: (line) => process.stdout.write(`${line}\n`),
  });
  for (const line of formatReport(report)) process.stdout.write(`${line}\n`);
  for (const daemon of report.daemons) for (const line of daemon.errors) process.stdout.write(`daemon ${daemon.name} logged: ${line}\n`);
  if (report.verdict.checks.some((check) => !check.ok)) failed = true;
}
process.exit(failed ? 1 : 0);
