import { ENDPOINTS, type Endpoint, type UsageRow } from './types.js';

/** Whether a call succeeded: an HTTP status below 400 (the API's status=ok filter), or 'ok'. */
export function callSucceeded(row: Pick<UsageRow, 'status'>): boolean {
  return typeof row.status === 'number' ? row.status < 400 : row.status === 'ok';
}

/**
 * The Usage page's filters. They live in the page's URL (/usage?model=…&range=7d), so a
 * filtered view can be reloaded, bookmarked and left with the back button; the API query is
 * made from them (relative ranges resolved against "now" at that moment).
 */

export const RANGES = ['all', '1h', '24h', '7d', '30d', 'custom'] as const;
export type Range = (typeof RANGES)[number];

export const RANGE_LABELS: Record<Range, string> = {
  all: 'All time',
  '1h': 'Last hour',
  '24h': 'Last 24 hours',
  '7d': 'Last 7 days',
  '30d': 'Last 30 days',
  custom: 'Custom range',
};

const RANGE_MS: Record<Exclude<Range, 'all' | 'custom'>, number> = {
  '1h': 3_600_000,
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
};

export interface UsageFilters {
  /** An API key id ('' = any). */
  key: string;
  model: string;
  endpoint: Endpoint | '';
  status: 'ok' | 'error' | '';
  range: Range;
  /** Custom range bounds as `datetime-local` values ("2025-01-31T09:30", local time); '' = open. */
  from: string;
  to: string;
  /** The paging cursor (next_before of the previous page); '' = newest. */
  before: string;
}

export const DEFAULT_FILTERS: UsageFilters = { key: '', model: '', endpoint: '', status: '', range: 'all', from: '', to: '', before: '' };

const LOCAL_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?$/;

/** The filters in a page URL's query; anything unknown or malformed falls back to its default. */
export function filtersFromSearch(search: URLSearchParams): UsageFilters {
  const text = (name: string): string => (search.get(name) ?? '').trim();
  const endpoint = text('endpoint');
  const status = text('status');
  const range = text('range');
  const from = text('from');
  const to = text('to');
  return {
    key: text('key'),
    model: text('model'),
    endpoint: (ENDPOINTS as readonly string[]).includes(endpoint) ? (endpoint as Endpoint) : '',
    status: status === 'ok' || status === 'error' ? status : '',
    range: (RANGES as readonly string[]).includes(range) ? (range as Range) : 'all',
    from: LOCAL_DATETIME.test(from) ? from : '',
    to: LOCAL_DATETIME.test(to) ? to : '',
    before: /^[A-Za-z0-9_-]{1,64}$/.test(text('before')) ? text('before') : '',
  };
}

/** The page URL's query for the filters (defaults left out, so /usage stays /usage). */
export function filtersToSearch(filters: UsageFilters): string {
  const query = new URLSearchParams();
  if (filters.key) query.set('key', filters.key);
  if (filters.model) query.set('model', filters.model);
  if (filters.endpoint) query.set('endpoint', filters.endpoint);
  if (filters.status) query.set('status', filters.status);
  if (filters.range !== 'all') query.set('range', filters.range);
  if (filters.range === 'custom') {
    if (filters.from) query.set('from', filters.from);
    if (filters.to) query.set('to', filters.to);
  }
  if (filters.before) query.set('before', filters.before);
  return query.toString();
}

/** A `datetime-local` value (local time) → ISO 8601 in UTC; null when it is not a date. */
export function localToIso(value: string): string | null {
  if (!LOCAL_DATETIME.test(value)) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** The time bounds the filters mean at `now`: `since` inclusive, `until` exclusive (ms). */
export function timeBounds(filters: UsageFilters, now: number): { since?: number; until?: number } {
  if (filters.range === 'all') return {};
  if (filters.range === 'custom') {
    const bounds: { since?: number; until?: number } = {};
    const from = localToIso(filters.from);
    const to = localToIso(filters.to);
    if (from) bounds.since = Date.parse(from);
    if (to) bounds.until = Date.parse(to);
    return bounds;
  }
  return { since: now - RANGE_MS[filters.range] };
}

/** A problem with the filters to show beside them (the API would refuse the query), or null. */
export function filtersProblem(filters: UsageFilters): string | null {
  if (filters.range !== 'custom') return null;
  const { since, until } = timeBounds(filters, 0);
  if (since !== undefined && until !== undefined && until <= since) return 'The end of the range must be after its start.';
  return null;
}

/**
 * The API query for /api/usage (and /api/usage/export.csv without `limit`): api_key_id, model,
 * endpoint, status, since, until (ISO), limit, before. `accountId` for the admin view.
 */
export function usageQuery(filters: UsageFilters, now: number, options: { limit?: number; accountId?: string } = {}): string {
  const query = new URLSearchParams();
  if (options.accountId) query.set('account_id', options.accountId);
  if (filters.key) query.set('api_key_id', filters.key);
  if (filters.model) query.set('model', filters.model);
  if (filters.endpoint) query.set('endpoint', filters.endpoint);
  if (filters.status) query.set('status', filters.status);
  const { since, until } = timeBounds(filters, now);
  if (since !== undefined) query.set('since', new Date(since).toISOString());
  if (until !== undefined) query.set('until', new Date(until).toISOString());
  if (options.limit !== undefined) {
    query.set('limit', String(options.limit));
    if (filters.before) query.set('before', filters.before);
  }
  return query.toString();
}

/** Whether a row from the live stream belongs in the filtered table. */
export function rowMatches(row: UsageRow, filters: UsageFilters, now: number): boolean {
  if (filters.key && row.api_key_id !== filters.key) return false;
  if (filters.model && row.model !== filters.model) return false;
  if (filters.endpoint && row.endpoint !== filters.endpoint) return false;
  if (filters.status && callSucceeded(row) !== (filters.status === 'ok')) return false;
  const { since, until } = timeBounds(filters, now);
  const at = Date.parse(row.created_at);
  if (since !== undefined && at < since) return false;
  if (until !== undefined && at >= until) return false;
  return true;
}

/** Whether any filter (other than paging) is set. */
export function isFiltered(filters: UsageFilters): boolean {
  return Boolean(filters.key || filters.model || filters.endpoint || filters.status || filters.range !== 'all');
}

/**
 * Paging newest → oldest with `before` cursors. The stack holds the cursors of the pages
 * before this one, so "Newer" goes back exactly one page (a reloaded page without its stack
 * goes to the newest).
 */
export function olderPage(filters: UsageFilters, stack: string[], nextBefore: string | number): { filters: UsageFilters; stack: string[] } {
  return { filters: { ...filters, before: String(nextBefore) }, stack: [...stack, filters.before] };
}

export function newerPage(filters: UsageFilters, stack: string[]): { filters: UsageFilters; stack: string[] } {
  return { filters: { ...filters, before: stack.at(-1) ?? '' }, stack: stack.slice(0, -1) };
}
