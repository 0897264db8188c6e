/** Date handling at the edges: the store keeps integer milliseconds, the API shows ISO 8601. */

export function toIso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
// Date-time with a required zone: a time without one would mean a different instant per machine.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}:?\d{2})$/;

export type DateParse = { ok: true; ms: number } | { ok: false; rule: string };

/**
 * Parses an ISO 8601 date-time with a zone, or a `YYYY-MM-DD` date (midnight UTC of that day).
 * Calendar-checks the parts so that `2026-02-30` is refused instead of rolling over.
 */
export function parseIsoDate(text: string): DateParse {
  const rule = 'must be an ISO 8601 date-time with a zone (2026-12-31T18:30:00Z) or a date (2026-12-31)';
  const dateOnly = DATE_ONLY.exec(text);
  const dateTime = dateOnly ? null : DATE_TIME.exec(text);
  const parts = dateOnly ?? dateTime;
  if (!parts) return { ok: false, rule };
  const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return { ok: false, rule: `${rule}; ${text} is not a calendar date` };
  if (dateTime) {
    const [hour, minute, second] = [Number(dateTime[4]), Number(dateTime[5]), Number(dateTime[6] ?? 0)];
    if (hour > 23 || minute > 59 || second > 59) return { ok: false, rule: `${rule}; ${text} is not a valid time` };
  }
  const ms = Date.parse(dateOnly ? `${text}T00:00:00Z` : text.replace(' ', 'T').replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
  if (!Number.isFinite(ms)) return { ok: false, rule };
  return { ok: true, ms };
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}
