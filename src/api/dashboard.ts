import type { App } from '../app.js';
import { errors } from '../core/errors.js';
import { microsToInr } from '../core/money.js';
import type { RequestContext, Route } from '../http/server.js';
import type { Router } from '../http/router.js';
import type { Account } from '../store/accounts.js';
import type { UsageFilter, UsageRecord } from '../store/usage.js';
import { requireSession } from './guards.js';
import { namer, presentUsagePage, streamUsage } from './management/usage.js';
import { presentLedgerEntry, presentUsage } from './presenters.js';
import { queryInt, queryOptionalInt, queryString, queryTime } from './query.js';

/**
 * The dashboard's own endpoints, for the session's account: an overview (balance, holds,
 * spend and calls today and this month, top keys and models), spend per day by model, usage
 * rows with filters, their CSV export and live feed, and the wallet's ledger. Aggregates are
 * computed in SQL over the usage table's account index; none of this touches the inference path.
 */

const DAY_MS = 86_400_000;
/** The most rows one CSV export holds. */
const CSV_MAX_ROWS = 100_000;
const ENDPOINTS = ['chat.completions', 'responses', 'messages', 'embeddings', 'audio.speech', 'audio.transcriptions', 'images.generations'] as const;

/** The usage filters of the dashboard's queries: key, model, endpoint, outcome, time range. */
export function usageFilter(ctx: RequestContext, accountId: string | undefined): Omit<UsageFilter, 'limit'> {
  const filter: Omit<UsageFilter, 'limit'> = {};
  if (accountId !== undefined) filter.accountId = accountId;
  const key = queryString(ctx.query, 'api_key_id');
  if (key !== undefined) filter.apiKeyId = key;
  const model = queryString(ctx.query, 'model');
  if (model !== undefined) filter.model = model;
  const endpoint = queryString(ctx.query, 'endpoint');
  if (endpoint !== undefined) {
    if (!(ENDPOINTS as readonly string[]).includes(endpoint)) throw errors.invalidQuery('endpoint', `must be one of ${ENDPOINTS.join(', ')}`);
    filter.endpoint = endpoint;
  }
  const status = queryString(ctx.query, 'status');
  if (status !== undefined) {
    if (status !== 'ok' && status !== 'error') throw errors.invalidQuery('status', 'must be ok or error');
    filter.outcome = status;
  }
  const since = queryTime(ctx.query, 'since');
  if (since !== undefined) filter.since = since;
  const until = queryTime(ctx.query, 'until');
  if (until !== undefined) filter.until = until;
  if (since !== undefined && until !== undefined && until <= since) throw errors.invalidQuery('until', 'must be after since');
  return filter;
}

/** One page of usage rows, newest first, in the management API's shape. */
export async function usagePage(app: App, ctx: RequestContext, filter: Omit<UsageFilter, 'limit'>) {
  const limit = queryInt(ctx.query, 'limit', 1, 500, 50);
  const before = queryOptionalInt(ctx.query, 'before');
  const rows = await app.usage.list({ ...filter, limit: limit + 1, ...(before === undefined ? {} : { before }) });
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  return { object: 'list' as const, data: await presentUsagePage(app, page), has_more: hasMore, next_before: hasMore ? (page.at(-1)?.id ?? null) : null };
}

const CSV_COLUMNS = ['created_at', 'request_id', 'endpoint', 'model', 'provider', 'api_key_id', 'api_key_name', 'stream', 'input_tokens', 'output_tokens', 'unit', 'units', 'cost_inr', 'latency_ms', 'status', 'error_type', 'cache_read_tokens', 'cache_write_tokens', 'cache', 'cache_similarity', 'cache_saved_inr', 'requested_model'] as const;

/** A CSV field (RFC 4180), with formula-leading characters neutralized for spreadsheets. */
export function csvField(value: string | number | boolean | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export async function usageCsv(app: App, rows: readonly UsageRecord[]): Promise<string> {
  const names = namer(app);
  const lines = [CSV_COLUMNS.join(',')];
  for (const record of rows) {
    const row = presentUsage(record, await names(record));
    lines.push(
      [row.created_at, row.request_id, row.endpoint, row.model, row.provider, row.api_key_id, row.api_key_name, row.stream, row.input_tokens, row.output_tokens, row.unit, row.units, row.cost, row.latency_ms, row.status, row.error_type, row.cache_read_tokens, row.cache_write_tokens, row.cache, row.cache_similarity, row.cache_saved, row.requested_model]
        .map((value) => csvField(value))
        .join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** The rows of a filter for an export: every page, newest first, at most CSV_MAX_ROWS. */
async function allRows(app: App, filter: Omit<UsageFilter, 'limit'>): Promise<UsageRecord[]> {
  const out: UsageRecord[] = [];
  let before: number | undefined;
  while (out.length < CSV_MAX_ROWS) {
    const page = await app.usage.list({ ...filter, limit: Math.min(5000, CSV_MAX_ROWS - out.length), ...(before === undefined ? {} : { before }) });
    out.push(...page);
    if (page.length === 0 || page.length < 5000) break;
    before = page.at(-1)?.id;
  }
  return out;
}

export async function overview(app: App, account: Account) {
  const now = Date.now();
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const date = new Date(now);
  const month = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  app.store.barrier.pass();
  const fresh = await app.accounts.get(account.id) ?? account;
  const held = await app.holds.held(account.id, '');
  const day = await app.store.usage.totals(account.id, today, now + 1);
  const monthTotals = await app.store.usage.totals(account.id, month, now + 1);
  const keyNames = new Map((await app.keys.list('api', account.id)).map((key) => [key.id, key.name]));
  return {
    balance: microsToInr(fresh.balanceMicros),
    held: microsToInr(held.accountHeldMicros),
    currency: 'INR',
    spent_today: microsToInr(day.costMicros),
    calls_today: day.calls,
    errors_today: day.errors,
    spent_month: microsToInr(monthTotals.costMicros),
    calls_month: monthTotals.calls,
    errors_month: monthTotals.errors,
    top_keys: (await app.store.usage.top(account.id, month, 'key', 5)).map((top) => ({ api_key_id: top.id, name: top.id === null ? null : (keyNames.get(top.id) ?? null), cost: microsToInr(top.costMicros), calls: top.calls, errors: top.errors })),
    top_models: (await app.store.usage.top(account.id, month, 'model', 5)).map((top) => ({ model: top.id, cost: microsToInr(top.costMicros), calls: top.calls, errors: top.errors })),
  };
}

export async function daily(app: App, accountId: string, days: number) {
  const since = Math.floor(Date.now() / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
  return { object: 'list' as const, data: (await app.store.usage.daily(accountId, since)).map((row) => ({ day: row.day, model: row.model, calls: row.calls, errors: row.errors, cost: microsToInr(row.costMicros) })) };
}

export function sendCsv(ctx: RequestContext, csv: string, name: string): void {
  ctx.res.writeHead(200, {
    'content-type': 'text/csv; charset=utf-8',
    'content-disposition': `attachment; filename="${name}"`,
    'content-length': String(Buffer.byteLength(csv)),
    'cache-control': 'no-store',
    'x-request-id': ctx.requestId,
  });
  ctx.res.end(csv);
}

export function registerDashboardRoutes(router: Router<Route>, app: App): void {
  router.add('GET', '/api/dashboard/overview', {
    handle: async (ctx) => ctx.send(200, await overview(app, await requireSession(app, ctx))),
  });
  router.add('GET', '/api/dashboard/daily', {
    handle: async (ctx) => {
      const account = await requireSession(app, ctx);
      ctx.send(200, await daily(app, account.id, queryInt(ctx.query, 'days', 1, 366, 30)));
    },
  });
  router.add('GET', '/api/usage', {
    handle: async (ctx) => {
      const account = await requireSession(app, ctx);
      ctx.send(200, await usagePage(app, ctx, usageFilter(ctx, account.id)));
    },
  });
  router.add('GET', '/api/usage/export.csv', {
    handle: async (ctx) => {
      const account = await requireSession(app, ctx);
      sendCsv(ctx, await usageCsv(app, await allRows(app, usageFilter(ctx, account.id))), 'usage.csv');
    },
  });
  router.add('GET', '/api/usage/stream', {
    handle: async (ctx) => {
      const account = await requireSession(app, ctx);
      const filter = usageFilter(ctx, account.id);
      if (filter.since !== undefined || filter.until !== undefined) throw errors.invalidQuery('since', 'does not apply to the live stream');
      await streamUsage(app, ctx, filter);
    },
  });
  router.add('GET', '/api/wallet/ledger', {
    handle: async (ctx) => {
      const account = await requireSession(app, ctx);
      const limit = queryInt(ctx.query, 'limit', 1, 500, 50);
      const entries = await app.wallet.ledger(account.id, limit + 1, queryOptionalInt(ctx.query, 'before'));
      const hasMore = entries.length > limit;
      const page = hasMore ? entries.slice(0, limit) : entries;
      ctx.send(200, { object: 'list', data: page.map(presentLedgerEntry), has_more: hasMore, next_before: hasMore ? (page.at(-1)?.id ?? null) : null });
    },
  });
}
