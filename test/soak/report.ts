import { growthOverLastHalf } from './books.js';
import type { SoakReport } from './soak.js';

/** The soak's report as lines of text: the traffic, the faults, the books, memory and lag. */
export function formatReport(report: SoakReport): string[] {
  const { options, outcomes, verdict, daemons } = report;
  const f = verdict.figures;
  const lines: string[] = [];
  const seconds = report.elapsedMs / 1000;
  lines.push(`soak on ${options.backend} (two daemons, one Redis): ${f.calls} calls in ${seconds.toFixed(1)} s (${(f.calls / seconds).toFixed(0)}/s), ${options.concurrency} clients, ${report.topups} top-up requests during the run`);

  const byKind = new Map<string, Map<string, number>>();
  for (const outcome of outcomes) {
    const statuses = byKind.get(outcome.plan.kind) ?? new Map<string, number>();
    byKind.set(outcome.plan.kind, statuses);
    const status = outcome.status === undefined ? (outcome.plan.abort ? 'left' : 'no answer') : outcome.plan.abort === 'mid-body' && !outcome.completed ? `${outcome.status}-left` : String(outcome.status);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }
  lines.push('  calls by kind (status: count; "left": the client left before the answer, "200-left": after its first bytes):');
  for (const [kind, statuses] of [...byKind].sort((x, y) => x[0].localeCompare(y[0]))) {
    const total = [...statuses.values()].reduce((sum, n) => sum + n, 0);
    lines.push(`    ${kind.padEnd(26)} ${String(total).padStart(6)}  ${[...statuses].sort().map(([status, n]) => `${status}:${n}`).join(' ')}`);
  }

  const byFault = new Map<string, Map<string, number>>();
  for (const outcome of outcomes) {
    if (!outcome.plan.fault) continue;
    const answers = byFault.get(outcome.plan.fault) ?? new Map<string, number>();
    byFault.set(outcome.plan.fault, answers);
    const answer = outcome.status === undefined ? 'left' : outcome.plan.abort === 'mid-body' && !outcome.completed ? `${outcome.status}, client left mid-body` : outcome.status >= 400 ? `${outcome.status} ${outcome.errorReason ?? ''}`.trim() : outcome.completed ? `${outcome.status} whole` : `${outcome.status} ended early`;
    answers.set(answer, (answers.get(answer) ?? 0) + 1);
  }
  lines.push(`  upstream faults injected: ${f.faulted} calls (what the client got):`);
  for (const [fault, answers] of [...byFault].sort()) {
    lines.push(`    ${fault.padEnd(28)} ${[...answers].sort((x, y) => y[1] - x[1]).map(([answer, n]) => `${answer}: ${n}`).join(', ')}`);
  }
  lines.push(`  clients that left: ${f.aborted} (early or mid-body); charges no client saw: ${f.unseenCharges}`);
  lines.push(`  books: ${f.completed} completed billable calls, ${f.charges} charges, ₹${(f.chargedMicros / 1e6).toFixed(6)} charged, ₹${(f.topupMicros / 1e6).toFixed(2)} topped up`);

  for (const daemon of daemons) {
    const rss = growthOverLastHalf(daemon.samples, 'rssMb');
    const heap = growthOverLastHalf(daemon.samples, 'heapMb');
    const first = daemon.samples[0];
    const last = daemon.samples.at(-1);
    const peak = Math.max(...daemon.samples.map((sample) => sample.rssMb));
    const windowP99 = daemon.samples.map((sample) => sample.lagP99Ms).sort((x, y) => x - y);
    lines.push(
      `  daemon ${daemon.name}: RSS ${first?.rssMb.toFixed(0)} → ${last?.rssMb.toFixed(0)} MB (peak ${peak.toFixed(0)}; last half ${rss.growthMb >= 0 ? '+' : ''}${rss.growthMb.toFixed(1)} MB), heap after GC ${first?.heapMb.toFixed(0)} → ${last?.heapMb.toFixed(0)} MB (last half ${heap.growthMb >= 0 ? '+' : ''}${heap.growthMb.toFixed(1)} MB); event-loop lag p50 ${daemon.lagP50Ms} ms, p99 ${daemon.lagP99Ms} ms, max ${daemon.lagMaxMs} ms (worst window p99 ${windowP99.at(-1) ?? 0} ms); ${daemon.samples.length} samples`,
    );
    const warnings = Object.entries(daemon.warnings);
    if (warnings.length > 0) lines.push(`    warnings logged: ${warnings.sort((x, y) => y[1] - x[1]).map(([msg, n]) => `${msg} ×${n}`).join('; ')}`);
  }
  for (const check of verdict.checks) lines.push(`  ${check.ok ? 'ok  ' : 'FAIL'} ${check.name}: ${check.detail}`);
  return lines;
}
