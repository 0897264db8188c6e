/**
 * Renewal periods for budgets: a key's `budget_period` and an account's `spend_period`.
 * A period is either calendar-aligned (`daily`, `weekly`, `monthly`) in one configured IANA
 * time zone, so that "daily" means the user's day and not UTC's, or a fixed duration
 * (`30m`, `12h`, `7d`) counted from an anchor instant (the key's or account's creation time).
 * Everything here is epoch milliseconds; local dates exist only inside the conversions.
 */

export type PeriodSpec = { kind: 'daily' | 'weekly' | 'monthly' } | { kind: 'duration'; ms: number };

/** Start inclusive, `resetsAt` exclusive: the next period's start. */
export interface PeriodWindow {
  start: number;
  resetsAt: number;
}

/** Zone for calendar periods when none is configured: the wallet is in INR. */
export const DEFAULT_PERIOD_TIME_ZONE = 'Asia/Kolkata';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const UNIT_MS: Readonly<Record<string, number>> = { m: MINUTE, h: HOUR, d: DAY };
const MAX_DURATION = 365 * DAY;
const RULE = 'must be daily, weekly, monthly or a duration from 1m to 365d (30m, 12h, 7d)';
// Digits and a letter, loosely, so that `1.5h` or `1w` get a precise reason instead of the bare rule.
const DURATION = /^(\d+(?:\.\d*)?)([a-z]+)$/i;

/**
 * Why `text` is not a period, or undefined when it is one. Spelling is exact: lowercase and no
 * spaces (`Daily` and `monthly ` are refused), so that each period has one stored and displayed
 * form and config, API and dashboard never disagree about what a key renews on.
 */
export function periodProblem(text: string): string | undefined {
  if (text === 'daily' || text === 'weekly' || text === 'monthly') return undefined;
  if (text !== text.trim() || /\s/.test(text)) return `${RULE}; remove the spaces`;
  const lower = text.toLowerCase();
  if (lower === 'daily' || lower === 'weekly' || lower === 'monthly') return `${RULE}; write ${lower} in lowercase`;
  const match = DURATION.exec(text);
  if (!match) return text === '' ? `${RULE}; got an empty value` : RULE;
  const [count, unit] = [match[1] as string, match[2] as string];
  // hasOwn, not `in`: `1toString` must not find Object.prototype.
  const unitMs = Object.hasOwn(UNIT_MS, unit) ? UNIT_MS[unit] : undefined;
  if (unitMs === undefined) {
    const hint = Object.hasOwn(UNIT_MS, unit.toLowerCase()) ? `write ${unit.toLowerCase()} in lowercase` : 'units are m (minutes), h (hours) and d (days)';
    return `${RULE}; ${unit} is not a unit: ${hint}`;
  }
  if (!/^\d+$/.test(count)) return `${RULE}; ${count} is not a whole number`;
  const ms = Number(count) * unitMs;
  if (ms < MINUTE) return `${RULE}; ${text} is below 1m`;
  if (ms > MAX_DURATION) return `${RULE}; ${text} is above 365d`;
  return undefined;
}

/** The period `text` names, or undefined when `periodProblem` has something to say about it. */
export function parsePeriod(text: string): PeriodSpec | undefined {
  if (periodProblem(text) !== undefined) return undefined;
  if (text === 'daily' || text === 'weekly' || text === 'monthly') return { kind: text };
  const match = DURATION.exec(text) as RegExpExecArray;
  return { kind: 'duration', ms: Number(match[1]) * (UNIT_MS[match[2] as string] as number) };
}

/**
 * The canonical text of a period: the calendar name, or the duration in its largest exact unit
 * (`1440m` and `24h` both come back as `1d`, `90m` stays `90m`), so equal periods print alike.
 */
export function formatPeriod(spec: PeriodSpec): string {
  if (spec.kind !== 'duration') return spec.kind;
  if (!Number.isInteger(spec.ms / MINUTE) || spec.ms <= 0) throw new RangeError(`period of ${spec.ms} ms is not a whole number of minutes`);
  if (spec.ms % DAY === 0) return `${spec.ms / DAY}d`;
  if (spec.ms % HOUR === 0) return `${spec.ms / HOUR}h`;
  return `${spec.ms / MINUTE}m`;
}

/** Why `zone` cannot be used for calendar periods, or undefined when this runtime's Intl knows it. */
export function timeZoneProblem(zone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return undefined;
  } catch {
    return `must be an IANA time zone such as ${DEFAULT_PERIOD_TIME_ZONE} or America/New_York; ${JSON.stringify(zone)} is not one`;
  }
}

/**
 * The period containing `now`. `anchor` matters only for durations; `timeZone` only for calendar
 * periods (it must have passed `timeZoneProblem`, else Intl throws a RangeError). A duration's
 * `now` before its anchor (clock skew between writers) counts as being in the first period.
 */
export function periodWindow(spec: PeriodSpec, now: number, anchor: number, timeZone: string): PeriodWindow {
  if (spec.kind === 'duration') {
    const index = now < anchor ? 0 : Math.floor((now - anchor) / spec.ms);
    const start = anchor + index * spec.ms;
    return { start, resetsAt: start + spec.ms };
  }
  // Runs per request with the same zone: the answer changes once a period, so keep the last one.
  const key = `${spec.kind}|${timeZone}`;
  let window = lastWindows.get(key);
  if (!window || now < window.start || now >= window.resetsAt) {
    window = calendarWindow(spec.kind, now, timeZone);
    remember(lastWindows, key, window);
  }
  return { start: window.start, resetsAt: window.resetsAt };
}

const lastWindows = new Map<string, PeriodWindow>();
const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * Caches are keyed by zone text, which Intl matches case-insensitively, so in theory the set of
 * keys is unbounded; dropping everything past a generous size keeps a bad caller from growing it.
 */
function remember<T>(cache: Map<string, T>, key: string, value: T): void {
  if (cache.size >= 1000 && !cache.has(key)) cache.clear();
  cache.set(key, value);
}

function calendarWindow(kind: 'daily' | 'weekly' | 'monthly', now: number, zone: string): PeriodWindow {
  const { year, month, day } = localParts(now, zone);
  // Local calendar arithmetic on UTC-based dates (Date.UTC normalizes day 0, day 32, month 13).
  let first: number;
  let next: number;
  if (kind === 'daily') {
    first = Date.UTC(year, month - 1, day);
    next = Date.UTC(year, month - 1, day + 1);
  } else if (kind === 'weekly') {
    const sinceMonday = (new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 6) % 7;
    first = Date.UTC(year, month - 1, day - sinceMonday);
    next = Date.UTC(year, month - 1, day - sinceMonday + 7);
  } else {
    first = Date.UTC(year, month - 1, 1);
    next = Date.UTC(year, month, 1);
  }
  return { start: startOfLocalDay(first, zone), resetsAt: startOfLocalDay(next, zone) };
}

/** The zone's wall clock at `instant`, to the second. `hourCycle: 'h23'` avoids a "24" at midnight. */
function localParts(instant: number, zone: string) {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23',
      year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    remember(formatters, zone, formatter);
  }
  const parts = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  for (const { type, value } of formatter.formatToParts(instant)) {
    if (type === 'year' || type === 'month' || type === 'day' || type === 'hour' || type === 'minute' || type === 'second') parts[type] = Number(value);
  }
  return parts;
}

/** The zone's offset from UTC at `instant` (ms, positive east): wall clock read as UTC minus the instant. */
function offsetAt(instant: number, zone: string): number {
  const p = localParts(instant, zone);
  const wholeSecond = instant - (((instant % 1000) + 1000) % 1000);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second) - wholeSecond;
}

/**
 * The first instant of the local date whose midnight, read as UTC, is `wall`. The offset a day
 * earlier and a day later bound the two offsets in play (transitions are months apart). Usually
 * both agree or one of them round-trips; when midnight occurs twice (a fall-back at 01:00) the
 * earlier is the start. When midnight does not occur at all (Havana, Santiago spring forward at
 * 00:00) the day starts at the transition itself, found by bisection on whole seconds. (In
 * tzdata since 1950 every such gap begins exactly at midnight, where that is `wall - before`;
 * the bisection also stays right for a gap that straddles midnight.)
 */
function startOfLocalDay(wall: number, zone: string): number {
  const before = offsetAt(wall - DAY, zone);
  const after = offsetAt(wall + DAY, zone);
  const candidates = [wall - before, wall - after].filter((instant) => instant + offsetAt(instant, zone) === wall);
  if (candidates.length > 0) return Math.min(...candidates);
  let low = wall - after; // still on the old offset
  let high = wall - before; // already on the new one
  while (high - low > 1000) {
    const mid = low + Math.floor((high - low) / 2000) * 1000;
    if (offsetAt(mid, zone) === before) low = mid;
    else high = mid;
  }
  return high;
}
