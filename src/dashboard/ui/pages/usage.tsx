import { useMemo, useState, type ReactNode } from 'react';
import { callSucceeded, DEFAULT_FILTERS, newerPage, olderPage, filtersFromSearch, filtersProblem, filtersToSearch, isFiltered, RANGE_LABELS, RANGES, rowMatches, usageQuery, type Range, type UsageFilters } from '../../lib/filters.js';
import { endpointLabel, ENDPOINT_LABELS, formatCacheTokens, formatCallTime, formatDateTime, formatLatency, formatQuantity } from '../../lib/format.js';
import { formatCount } from '../../lib/money.js';
import { ENDPOINTS, type ApiKey, type UsageRow } from '../../lib/types.js';
import { CallStatus, Dialog, Empty, ErrorNotice, Field, Inr, Loading, PageHeader, SelectField } from '../components.js';
import { useApp, useLoad, useNow, usePlace, useTitle, useUsageStream } from '../context.js';

const PAGE_SIZE = 50;
const LIVE_CAP = 500;

/** The Usage page: the session's own calls, filters in the URL, paging, detail, CSV, live. */
export function UsagePage() {
  useTitle('Usage');
  return (
    <>
      <PageHeader title="Usage" lead="Every call made with your keys: what it used, what it cost, how long it took." />
      <UsageExplorer />
    </>
  );
}

/**
 * Filters, table, paging, a call's detail; with `accountId` (admin) any account's calls through
 * /api/admin/usage (no CSV or live feed there: those are the session's own).
 */
export function UsageExplorer({ accountId, keys: givenKeys }: { accountId?: string; keys?: ApiKey[] }) {
  const { api, router } = useApp();
  const place = usePlace();
  const admin = accountId !== undefined;
  const filters = useMemo(() => filtersFromSearch(place.search), [place.search]);
  const problem = filtersProblem(filters);
  // "Now" is taken when the filters change, so a relative range means the same rows while paging.
  const query = useMemo(() => (problem ? null : usageQuery(filters, Date.now(), { limit: PAGE_SIZE, ...(admin ? { accountId } : {}) })), [filters, problem, admin, accountId]);
  const now = useNow(15_000);

  const usage = useLoad((signal) => (query === null ? Promise.resolve(null) : api.usage(query, signal, admin)), [api, query, admin]);
  const ownKeys = useLoad(() => (givenKeys ? Promise.resolve({ data: givenKeys }) : admin ? Promise.resolve({ data: [] as ApiKey[] }) : api.apiKeys()), [api, givenKeys, admin]);
  const models = useLoad((signal) => api.models(signal), [api]);

  const [cursors, setCursors] = useState<string[]>([]);
  const [detail, setDetail] = useState<UsageRow | null>(null);
  const [live, setLive] = useState(false);
  const [liveRows, setLiveRows] = useState<UsageRow[]>([]);
  const [announcement, setAnnouncement] = useState('');

  const go = (next: UsageFilters, replace = false): void => {
    const search = filtersToSearch(next);
    router.navigate(`${place.path}${search ? `?${search}` : ''}`, { replace });
  };
  const setFilter = (change: Partial<UsageFilters>): void => {
    setCursors([]);
    setLiveRows([]);
    go({ ...filters, ...change, before: '' }, true);
  };

  const stream = useUsageStream(live && !admin, (data) => {
    let row: UsageRow;
    try {
      row = JSON.parse(data) as UsageRow;
    } catch {
      return;
    }
    if (!rowMatches(row, filters, Date.now())) return;
    setLiveRows((rows) => (rows.some((r) => r.id === row.id) ? rows : [row, ...rows].slice(0, LIVE_CAP)));
    setAnnouncement(`New call: ${row.model}, ${callSucceeded(row) ? 'OK' : 'error'}.`);
  });

  const page = usage.data ?? null;
  const rows = useMemo(() => {
    const base = page?.data ?? [];
    if (!live) return base;
    const seen = new Set(liveRows.map((row) => row.id));
    return [...liveRows, ...base.filter((row) => !seen.has(row.id))];
  }, [page, live, liveRows]);

  const keyOptions = ownKeys.data?.data ?? [];
  const modelOptions = useMemo(() => {
    const ids = (models.data?.data ?? []).map((model) => model.id);
    if (filters.model && !ids.includes(filters.model)) ids.unshift(filters.model);
    return ids;
  }, [models.data, filters.model]);

  const exportHref = `/api/usage/export.csv${(() => {
    const q = usageQuery(filters, now);
    return q ? `?${q}` : '';
  })()}`;

  return (
    <>
      <form className="filters" aria-label="Filter calls" onSubmit={(event) => event.preventDefault()}>
        {!admin || keyOptions.length > 0 ? (
          <SelectField label="Key" value={filters.key} onChange={(e) => setFilter({ key: e.target.value })}>
            <option value="">All keys</option>
            {keyOptions.map((key) => (
              <option key={key.id} value={key.id}>
                {key.name} ({key.masked_key})
              </option>
            ))}
            {filters.key && !keyOptions.some((key) => key.id === filters.key) ? <option value={filters.key}>{filters.key}</option> : null}
          </SelectField>
        ) : null}
        <SelectField label="Model" value={filters.model} onChange={(e) => setFilter({ model: e.target.value })}>
          <option value="">All models</option>
          {modelOptions.map((id) => (
            <option key={id} value={id}>
              {id}
            </option>
          ))}
        </SelectField>
        <SelectField label="Endpoint" value={filters.endpoint} onChange={(e) => setFilter({ endpoint: e.target.value as UsageFilters['endpoint'] })}>
          <option value="">All endpoints</option>
          {ENDPOINTS.map((endpoint) => (
            <option key={endpoint} value={endpoint}>
              {ENDPOINT_LABELS[endpoint]}
            </option>
          ))}
        </SelectField>
        <SelectField label="Status" value={filters.status} onChange={(e) => setFilter({ status: e.target.value as UsageFilters['status'] })}>
          <option value="">All</option>
          <option value="ok">OK</option>
          <option value="error">Errors</option>
        </SelectField>
        <SelectField label="Time" value={filters.range} onChange={(e) => setFilter({ range: e.target.value as Range })}>
          {RANGES.map((range) => (
            <option key={range} value={range}>
              {RANGE_LABELS[range]}
            </option>
          ))}
        </SelectField>
        {filters.range === 'custom' ? (
          <>
            <Field label="From" type="datetime-local" value={filters.from} onChange={(e) => setFilter({ from: e.target.value })} />
            <Field label="To" type="datetime-local" value={filters.to} onChange={(e) => setFilter({ to: e.target.value })} error={problem} />
          </>
        ) : null}
        {isFiltered(filters) ? (
          <div className="filter-reset">
            <button type="button" className="button secondary small" onClick={() => setFilter(DEFAULT_FILTERS)}>
              Clear filters
            </button>
          </div>
        ) : null}
      </form>

      <div className="toolbar">
        {!admin ? (
          <>
            <label className="switch">
              <input
                type="checkbox"
                checked={live}
                onChange={(event) => {
                  setLive(event.target.checked);
                  setLiveRows([]);
                  if (event.target.checked && filters.before) {
                    setCursors([]);
                    go({ ...filters, before: '' }, true);
                  }
                }}
              />{' '}
              Live
            </label>
            {live ? (
              <span className={`live-dot ${stream}`}>{stream === 'open' ? 'Showing new calls as they settle' : stream === 'connecting' ? 'Connecting…' : 'The live feed closed'}</span>
            ) : null}
            <a className="button secondary small" href={exportHref} download>
              Export CSV
            </a>
          </>
        ) : null}
        <span className="visually-hidden" aria-live="polite">
          {announcement}
        </span>
      </div>

      <ErrorNotice error={usage.error} />
      {usage.loading && !page ? <Loading what="Loading calls" /> : null}
      {page && rows.length === 0 ? <Empty>{isFiltered(filters) ? 'No calls match these filters.' : 'No calls yet.'}</Empty> : null}
      {rows.length > 0 ? <UsageTable rows={rows} now={now} showAccount={false} onDetail={setDetail} busy={usage.loading} /> : null}

      {page && !live && (page.has_more || filters.before) ? (
        <nav className="pager" aria-label="Pages of calls">
          {filters.before ? (
            <button
              type="button"
              className="button secondary small"
              onClick={() => {
                const next = newerPage(filters, cursors);
                setCursors(next.stack);
                go(next.filters);
              }}
            >
              ← Newer
            </button>
          ) : null}
          {page.has_more && page.next_before !== null ? (
            <button
              type="button"
              className="button secondary small"
              onClick={() => {
                const next = olderPage(filters, cursors, page.next_before as string | number);
                setCursors(next.stack);
                go(next.filters);
              }}
            >
              Older →
            </button>
          ) : null}
        </nav>
      ) : null}
      {detail ? <CallDetail row={detail} onClose={() => setDetail(null)} /> : null}
    </>
  );
}

export function UsageTable({ rows, now, showAccount, onDetail, busy }: { rows: UsageRow[]; now: number; showAccount: boolean; onDetail: (row: UsageRow) => void; busy: boolean }) {
  return (
    <div className="table-wrap">
      <table className="responsive usage-table" aria-busy={busy}>
        <caption className="visually-hidden">Calls, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Endpoint</th>
            <th scope="col">Model</th>
            <th scope="col">Key</th>
            <th scope="col">Used</th>
            <th scope="col" className="num">
              Cost
            </th>
            <th scope="col" className="num">
              Latency
            </th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.id} data-request-id={row.request_id}>
              <th scope="row" data-label="Time">
                <button type="button" className="link-button" onClick={() => onDetail(row)} aria-label={`Details of the call at ${formatDateTime(row.created_at)}`}>
                  {formatCallTime(row.created_at, now)}
                </button>
              </th>
              <td data-label="Endpoint">{endpointLabel(row.endpoint)}</td>
              <td data-label="Model">
                <code>{row.model}</code>
                {row.requested_model ? <span className="muted block">as {row.requested_model}</span> : null}
              </td>
              <td data-label="Key">
                {row.api_key_name ?? <span className="muted">—</span>}
                {showAccount && row.account_email ? <span className="muted"> · {row.account_email}</span> : null}
              </td>
              <td data-label="Used">
                {formatQuantity(row)}
                <CacheNote row={row} />
              </td>
              <td data-label="Cost" className="num">
                <Inr value={row.cost} />
              </td>
              <td data-label="Latency" className="num">
                {formatLatency(row.latency_ms)}
              </td>
              <td data-label="Status">
                <CallStatus status={row.status} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Under a call's tokens: what it read from and wrote to the provider's prompt cache (not the response cache), if anything. */
function CacheNote({ row }: { row: UsageRow }) {
  const text = formatCacheTokens(row);
  return text ? <span className="muted block cache-tokens">{text}</span> : null;
}

function CallDetail({ row, onClose }: { row: UsageRow; onClose: () => void }) {
  const items: [string, ReactNode][] = [
    ['Time', formatDateTime(row.created_at)],
    ['Request id', <code key="r">{row.request_id}</code>],
    ['Endpoint', `${endpointLabel(row.endpoint)}${row.stream ? ' (streamed)' : ''}`],
    ['Model', <code key="m">{row.model}</code>],
    ...(row.requested_model ? ([['Requested as', <code key="a">{row.requested_model}</code>]] as [string, ReactNode][]) : []),
    ['Provider', row.provider],
    ['Key', row.api_key_name ?? '—'],
    ['Status', callSucceeded(row) ? `OK${typeof row.status === 'number' ? ` (${row.status})` : ''}` : `Error${typeof row.status === 'number' ? ` ${row.status}` : ''}${row.error_type ? `: ${row.error_type}` : ''}`],
    ['Cost', <Inr key="c" value={row.cost} />],
    ['Latency', formatLatency(row.latency_ms)],
  ];
  if ((row.unit ?? 'tokens') === 'tokens') {
    items.push(['Input tokens', formatCount(row.input_tokens)], ['Output tokens', formatCount(row.output_tokens)]);
    if (row.cache_read_tokens) items.push(['Prompt cache read tokens', formatCount(row.cache_read_tokens)]);
    if (row.cache_write_tokens) items.push(['Prompt cache write tokens', formatCount(row.cache_write_tokens)]);
  } else {
    items.push(['Billed', formatQuantity(row)]);
  }
  return (
    <Dialog title="Call details" onClose={onClose}>
      <dl className="details">
        {items.map(([term, value]) => (
          <div key={term}>
            <dt>{term}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </Dialog>
  );
}
