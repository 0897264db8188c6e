import type { PeriodCounter } from '../store/types.js';
import { parsePeriod, periodWindow, type PeriodWindow } from './periods.js';

/**
 * A spend counter (a key's budget, an account's spend limit) in its current period: what was
 * spent since the period began, and when it renews. A counter whose stored period began before
 * the current one has spent nothing in it yet (admission starts the new period on the next
 * call: Store.beginPeriods). Without a period, the lifetime spend, renewing never.
 */
export interface PeriodSpend {
  spentMicros: number;
  /** The current period; undefined without one. */
  window: PeriodWindow | undefined;
  /** Whether the store still holds an earlier period (the next admission begins this one). */
  stale: boolean;
}

export function periodSpend(counter: PeriodCounter, period: string | null, now: number, timeZone: string): PeriodSpend {
  const spec = period === null ? undefined : parsePeriod(period);
  if (spec === undefined) return { spentMicros: counter.spentMicros, window: undefined, stale: false };
  const window = periodWindow(spec, now, counter.createdAt, timeZone);
  // A period begun by a daemon whose clock runs a little ahead counts as the current one.
  if (counter.periodStart >= window.start) return { spentMicros: Math.max(0, counter.spentMicros - counter.periodBaseMicros), window, stale: false };
  return { spentMicros: 0, window, stale: true };
}
