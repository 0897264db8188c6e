import { parseArgs } from 'node:util';
import { parseDuration } from '../../src/config/fields.js';
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

/** `--duration`, as the config writes durations (30s, 10m, 1h). */
function duration(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms === 0) throw new Error(`--duration: a duration such as 90s, 10m or 1h (got ${text})`);
  return ms;
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
