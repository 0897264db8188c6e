import t from 'tap';
import { postgresSkipReason } from '../support/postgres.js';
import { redisSkipReason } from '../support/redis.js';
import { formatReport } from './report.js';
import { runSoak, type SoakOptions } from './soak.js';

/**
 * A short soak in the suite (issue 28): two daemons in processes of their own on one store and
 * one Redis, mixed traffic with upstream faults and clients that leave, then the books to the
 * µINR. Once on SQLite and once on PostgreSQL, in this file only (the store backend is the
 * soak's own choice, so it is not run again by test:postgres). `npm run soak` runs it longer.
 */

// Paced at 100 calls a second (the soak's own pace is 200+): tap runs test files two at a time,
// and a soak at full speed would starve the file beside it.
const runs: [SoakOptions['backend'], number, string | false][] = [
  ['sqlite', 30_000, redisSkipReason()],
  ['postgres', 20_000, redisSkipReason() || postgresSkipReason()],
];

for (const [backend, durationMs, skip] of runs) {
  t.test(`soak on ${backend}: the books balance to the µINR under faults and aborts`, { skip, timeout: 180_000 }, async (t) => {
    const report = await runSoak({ backend, durationMs, concurrency: 24, faultRate: 0.3, abortRate: 0.06, rate: 100 });
    for (const line of formatReport(report)) t.comment(line);
    t.ok(report.verdict.figures.calls > 1000, `a soak's worth of calls (${report.verdict.figures.calls})`);
    t.ok(report.verdict.figures.faulted > 100, `upstream faults injected (${report.verdict.figures.faulted})`);
    t.ok(report.verdict.figures.aborted > 50, `clients that left (${report.verdict.figures.aborted})`);
    for (const check of report.verdict.checks) t.ok(check.ok, `${check.name}: ${check.detail}`);
  });
}
