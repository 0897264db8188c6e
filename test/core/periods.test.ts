import t from 'tap';
import {
  DEFAULT_PERIOD_TIME_ZONE,
  formatPeriod,
  parsePeriod,
  periodProblem,
  periodWindow,
  timeZoneProblem,
  type PeriodSpec,
} from '../../src/core/periods.js';

const ms = (iso: string) => Date.parse(iso);
const iso = (instant: number) => new Date(instant).toISOString();
const daily: PeriodSpec = { kind: 'daily' };
const weekly: PeriodSpec = { kind: 'weekly' };
const monthly: PeriodSpec = { kind: 'monthly' };
const HOUR = 3_600_000;

/** The window as ISO strings, so failures read as instants. */
function window(spec: PeriodSpec, now: string, zone = 'Asia/Kolkata', anchor = 0) {
  const { start, resetsAt } = periodWindow(spec, ms(now), anchor, zone);
  return { start: iso(start), resetsAt: iso(resetsAt) };
}

t.test('parsePeriod and formatPeriod', async (t) => {
  t.same(parsePeriod('daily'), { kind: 'daily' });
  t.same(parsePeriod('weekly'), { kind: 'weekly' });
  t.same(parsePeriod('monthly'), { kind: 'monthly' });
  t.same(parsePeriod('30m'), { kind: 'duration', ms: 30 * 60_000 });
  t.same(parsePeriod('12h'), { kind: 'duration', ms: 12 * HOUR });
  t.same(parsePeriod('7d'), { kind: 'duration', ms: 7 * 24 * HOUR });
  t.same(parsePeriod('1m'), { kind: 'duration', ms: 60_000 }, 'the shortest');
  t.same(parsePeriod('365d'), { kind: 'duration', ms: 365 * 24 * HOUR }, 'the longest');
  t.same(parsePeriod('8760h'), { kind: 'duration', ms: 365 * 24 * HOUR }, '365d in hours');
  for (const bad of ['0m', '366d', '8761h', '1.5h', '1w', 'Daily', 'monthly ', ' 7d', '7 d', '', 'd', '-1d', '7D', '1toString', '1constructor']) {
    t.equal(parsePeriod(bad), undefined, `refuses ${JSON.stringify(bad)}`);
  }
  const round = ['daily', 'weekly', 'monthly', '1m', '30m', '90m', '12h', '25h', '1d', '7d', '365d'];
  for (const text of round) t.equal(formatPeriod(parsePeriod(text) as PeriodSpec), text, `${text} round-trips`);
  t.equal(formatPeriod(parsePeriod('1440m') as PeriodSpec), '1d', 'largest exact unit');
  t.equal(formatPeriod(parsePeriod('24h') as PeriodSpec), '1d');
  t.equal(formatPeriod(parsePeriod('120m') as PeriodSpec), '2h');
  t.equal(formatPeriod(parsePeriod('007d') as PeriodSpec), '7d', 'leading zeros are read, not kept');
  t.throws(() => formatPeriod({ kind: 'duration', ms: 90_000 }), RangeError, 'not whole minutes');
});

t.test('periodProblem says the rule and what was wrong', async (t) => {
  for (const ok of ['daily', 'weekly', 'monthly', '30m', '12h', '7d']) t.equal(periodProblem(ok), undefined, `${ok} is fine`);
  const rule = 'must be daily, weekly, monthly or a duration from 1m to 365d (30m, 12h, 7d)';
  t.equal(periodProblem('yearly'), rule);
  t.equal(periodProblem('0d'), `${rule}; 0d is below 1m`);
  t.equal(periodProblem('0m'), `${rule}; 0m is below 1m`);
  t.equal(periodProblem('400d'), `${rule}; 400d is above 365d`);
  t.equal(periodProblem('366d'), `${rule}; 366d is above 365d`);
  t.equal(periodProblem('1.5h'), `${rule}; 1.5 is not a whole number`);
  t.match(periodProblem('1w'), /w is not a unit: units are m \(minutes\), h \(hours\) and d \(days\)/);
  t.match(periodProblem('7D'), /D is not a unit: write d in lowercase/);
  t.match(periodProblem('Daily'), /write daily in lowercase/, 'case-sensitive, with a hint');
  t.match(periodProblem('monthly '), /remove the spaces/);
  t.match(periodProblem(''), /empty/);
});

t.test('timeZoneProblem', async (t) => {
  t.equal(DEFAULT_PERIOD_TIME_ZONE, 'Asia/Kolkata');
  t.equal(timeZoneProblem('Asia/Kolkata'), undefined);
  t.equal(timeZoneProblem('America/New_York'), undefined);
  t.equal(timeZoneProblem('UTC'), undefined);
  t.match(timeZoneProblem('Mars/Base'), /must be an IANA time zone.*"Mars\/Base" is not one/);
  t.match(timeZoneProblem(''), /must be an IANA time zone/);
});

t.test('daily starts at local midnight, not UTC midnight', async (t) => {
  t.same(window(daily, '2026-11-28T18:29:59.999Z'), { start: '2026-11-27T18:30:00.000Z', resetsAt: '2026-11-28T18:30:00.000Z' });
  t.same(window(daily, '2026-11-28T18:30:00.000Z'), { start: '2026-11-28T18:30:00.000Z', resetsAt: '2026-11-29T18:30:00.000Z' });
  t.same(window(daily, '2026-11-28T00:00:00.000Z'), { start: '2026-11-27T18:30:00.000Z', resetsAt: '2026-11-28T18:30:00.000Z' }, 'UTC midnight is mid-day IST');
  t.same(window(daily, '2026-11-28T18:14:59Z', 'Asia/Kathmandu'), { start: '2026-11-27T18:15:00.000Z', resetsAt: '2026-11-28T18:15:00.000Z' }, '+05:45');
  t.same(window(daily, '2026-11-28T18:15:00Z', 'Asia/Kathmandu'), { start: '2026-11-28T18:15:00.000Z', resetsAt: '2026-11-29T18:15:00.000Z' });
  t.same(window(daily, '2026-11-28T23:59:59Z', 'UTC'), { start: '2026-11-28T00:00:00.000Z', resetsAt: '2026-11-29T00:00:00.000Z' });
});

t.test('weekly starts on Monday 00:00 local', async (t) => {
  // 2026-11-28 is a Saturday; its week began on Monday the 23rd.
  t.same(window(weekly, '2026-11-28T06:00:00Z'), { start: '2026-11-22T18:30:00.000Z', resetsAt: '2026-11-29T18:30:00.000Z' });
  t.same(window(weekly, '2026-11-22T18:30:00Z'), { start: '2026-11-22T18:30:00.000Z', resetsAt: '2026-11-29T18:30:00.000Z' }, 'Monday 00:00 IST opens it');
  t.same(window(weekly, '2026-11-22T18:29:59.999Z'), { start: '2026-11-15T18:30:00.000Z', resetsAt: '2026-11-22T18:30:00.000Z' }, 'Sunday 23:59 IST is the week before');
  t.same(window(weekly, '2026-11-29T18:29:59.999Z'), { start: '2026-11-22T18:30:00.000Z', resetsAt: '2026-11-29T18:30:00.000Z' }, 'last instant of Sunday');
  t.same(window(weekly, '2026-11-29T20:00:00Z'), { start: '2026-11-29T18:30:00.000Z', resetsAt: '2026-12-06T18:30:00.000Z' }, 'Monday IST while still Sunday UTC');
  t.same(window(weekly, '2026-12-30T12:00:00Z'), { start: '2026-12-27T18:30:00.000Z', resetsAt: '2027-01-03T18:30:00.000Z' }, 'across the year end');
});

t.test('monthly starts on the 1st 00:00 local', async (t) => {
  t.same(window(monthly, '2026-11-28T06:00:00Z'), { start: '2026-10-31T18:30:00.000Z', resetsAt: '2026-11-30T18:30:00.000Z' });
  t.same(window(monthly, '2026-12-31T18:29:59.999Z'), { start: '2026-11-30T18:30:00.000Z', resetsAt: '2026-12-31T18:30:00.000Z' }, 'December');
  t.same(window(monthly, '2026-12-31T18:30:00Z'), { start: '2026-12-31T18:30:00.000Z', resetsAt: '2027-01-31T18:30:00.000Z' }, 'January 2027 (UTC still says 2026)');
  t.same(window(monthly, '2028-02-15T00:00:00Z'), { start: '2028-01-31T18:30:00.000Z', resetsAt: '2028-02-29T18:30:00.000Z' }, 'leap February');
  t.same(window(monthly, '2028-02-29T18:29:59Z'), { start: '2028-01-31T18:30:00.000Z', resetsAt: '2028-02-29T18:30:00.000Z' }, 'Feb 29 is in it');
  t.same(window(monthly, '2027-02-15T00:00:00Z'), { start: '2027-01-31T18:30:00.000Z', resetsAt: '2027-02-28T18:30:00.000Z' }, 'common February');
});

t.test('DST: calendar periods follow the wall clock in America/New_York', async (t) => {
  const ny = 'America/New_York';
  const spring = periodWindow(daily, ms('2026-03-08T12:00:00Z'), 0, ny);
  t.same({ start: iso(spring.start), resetsAt: iso(spring.resetsAt) }, { start: '2026-03-08T05:00:00.000Z', resetsAt: '2026-03-09T04:00:00.000Z' });
  t.equal(spring.resetsAt - spring.start, 23 * HOUR, 'spring forward day is 23 hours');
  const fall = periodWindow(daily, ms('2026-11-01T05:30:00Z'), 0, ny); // 01:30 EDT, the first of the two
  t.same({ start: iso(fall.start), resetsAt: iso(fall.resetsAt) }, { start: '2026-11-01T04:00:00.000Z', resetsAt: '2026-11-02T05:00:00.000Z' });
  t.equal(fall.resetsAt - fall.start, 25 * HOUR, 'fall back day is 25 hours');
  t.same(window(daily, '2026-11-01T06:30:00Z', ny), window(daily, '2026-11-01T05:30:00Z', ny), 'both 01:30s are the same day');
  t.same(window(daily, '2026-03-07T12:00:00Z', ny), { start: '2026-03-07T05:00:00.000Z', resetsAt: '2026-03-08T05:00:00.000Z' }, 'the day before is 24 hours');
  t.same(window(weekly, '2026-03-05T12:00:00Z', ny), { start: '2026-03-02T05:00:00.000Z', resetsAt: '2026-03-09T04:00:00.000Z' }, 'a week of 167 hours');
  t.same(window(monthly, '2026-11-15T12:00:00Z', ny), { start: '2026-11-01T04:00:00.000Z', resetsAt: '2026-12-01T05:00:00.000Z' }, 'November starts in EDT and ends in EST');
});

t.test('DST at midnight: a day that has no 00:00, and one with two', async (t) => {
  // Havana springs forward 00:00 -> 01:00 and falls back 01:00 -> 00:00; Santiago springs forward at 00:00.
  t.same(window(daily, '2026-03-08T12:00:00Z', 'America/Havana'), { start: '2026-03-08T05:00:00.000Z', resetsAt: '2026-03-09T04:00:00.000Z' }, 'starts at 01:00 CDT');
  t.same(window(daily, '2026-03-08T04:59:59Z', 'America/Havana'), { start: '2026-03-07T05:00:00.000Z', resetsAt: '2026-03-08T05:00:00.000Z' });
  t.same(window(daily, '2026-11-01T12:00:00Z', 'America/Havana'), { start: '2026-11-01T04:00:00.000Z', resetsAt: '2026-11-02T05:00:00.000Z' }, 'the first midnight');
  t.same(window(daily, '2026-09-06T12:00:00Z', 'America/Santiago'), { start: '2026-09-06T04:00:00.000Z', resetsAt: '2026-09-07T03:00:00.000Z' });
  t.same(window(monthly, '2026-09-01T12:00:00Z', 'America/Santiago'), { start: '2026-09-01T04:00:00.000Z', resetsAt: '2026-10-01T03:00:00.000Z' });
});

t.test('calendar windows are contiguous local days all year, in zones with odd offsets and DST', async (t) => {
  const zones = ['Asia/Kolkata', 'Asia/Kathmandu', 'America/New_York', 'America/Havana', 'America/Santiago', 'Australia/Lord_Howe', 'Pacific/Chatham', 'Europe/London'];
  for (const zone of zones) {
    const dateOf = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
    let failures = 0;
    let previous: { start: number; resetsAt: number } | undefined;
    for (let now = ms('2026-01-01T00:00:00Z'); now < ms('2027-01-01T00:00:00Z'); now += 5 * HOUR + 7 * 60_000) {
      const w = periodWindow(daily, now, 0, zone);
      const ok = w.start <= now && now < w.resetsAt
        && dateOf.format(w.start) === dateOf.format(now)
        && dateOf.format(w.start - 1) !== dateOf.format(w.start)
        && dateOf.format(w.resetsAt - 1) === dateOf.format(now)
        && dateOf.format(w.resetsAt) !== dateOf.format(now)
        && (!previous || previous.resetsAt === w.start || previous.start === w.start);
      if (!ok) failures++;
      previous = w;
    }
    t.equal(failures, 0, `${zone}: every window is the local day containing now`);
  }
});

t.test('durations count from the anchor', async (t) => {
  const anchor = ms('2026-11-28T10:07:00Z');
  const half = parsePeriod('30m') as PeriodSpec;
  const week = parsePeriod('7d') as PeriodSpec;
  t.same(window(half, '2026-11-28T11:42:00Z', 'UTC', anchor), { start: '2026-11-28T11:37:00.000Z', resetsAt: '2026-11-28T12:07:00.000Z' });
  t.same(window(half, '2026-11-28T11:07:00Z', 'UTC', anchor), { start: '2026-11-28T11:07:00.000Z', resetsAt: '2026-11-28T11:37:00.000Z' }, 'a boundary opens the next period');
  t.same(window(half, '2026-11-28T11:06:59.999Z', 'UTC', anchor), { start: '2026-11-28T10:37:00.000Z', resetsAt: '2026-11-28T11:07:00.000Z' });
  t.same(window(half, '2026-11-28T10:07:00Z', 'UTC', anchor), { start: '2026-11-28T10:07:00.000Z', resetsAt: '2026-11-28T10:37:00.000Z' }, 'at the anchor');
  t.same(window(half, '2026-11-28T09:00:00Z', 'UTC', anchor), { start: '2026-11-28T10:07:00.000Z', resetsAt: '2026-11-28T10:37:00.000Z' }, 'before the anchor is the first period');
  t.same(window(week, '2026-12-20T00:00:00Z', 'UTC', anchor), { start: '2026-12-19T10:07:00.000Z', resetsAt: '2026-12-26T10:07:00.000Z' });
  t.same(window(week, '2026-12-05T10:07:00Z', 'America/New_York', anchor), { start: '2026-12-05T10:07:00.000Z', resetsAt: '2026-12-12T10:07:00.000Z' }, 'a duration ignores the zone');
});

t.test('the cached window is reused but never stale', async (t) => {
  const zone = 'Asia/Kolkata';
  const first = periodWindow(daily, ms('2026-11-28T06:00:00Z'), 0, zone);
  const again = periodWindow(daily, ms('2026-11-28T07:00:00Z'), 0, zone);
  t.same(again, first, 'same window within the day');
  t.not(again, first, 'a copy, so a caller cannot change the cache');
  again.start = 0;
  t.same(periodWindow(daily, ms('2026-11-28T07:00:00Z'), 0, zone), first);
  t.same(window(daily, iso(first.resetsAt)), { start: '2026-11-28T18:30:00.000Z', resetsAt: '2026-11-29T18:30:00.000Z' }, 'at resetsAt: the next day');
  t.same(window(daily, '2026-11-28T06:00:00Z'), { start: iso(first.start), resetsAt: iso(first.resetsAt) }, 'going back in time recomputes too');
  t.same(window(weekly, '2026-11-28T06:00:00Z'), { start: '2026-11-22T18:30:00.000Z', resetsAt: '2026-11-29T18:30:00.000Z' }, 'kinds are cached apart');
  t.same(window(daily, '2026-11-28T06:00:00Z', 'UTC'), { start: '2026-11-28T00:00:00.000Z', resetsAt: '2026-11-29T00:00:00.000Z' }, 'zones are cached apart');
  t.same(window(daily, '2026-11-28T06:00:00Z'), { start: iso(first.start), resetsAt: iso(first.resetsAt) });
  const later = periodWindow(daily, ms('2027-03-01T00:00:00Z'), 0, zone);
  t.same({ start: iso(later.start), resetsAt: iso(later.resetsAt) }, { start: '2027-02-28T18:30:00.000Z', resetsAt: '2027-03-01T18:30:00.000Z' }, 'a jump of months');
});
