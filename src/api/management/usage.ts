import type { App } from '../../app.js';
import { errors } from '../../core/errors.js';
import { SseWriter } from '../../http/sse.js';
import type { RequestContext, Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import type { UsageFilter, UsageRecord } from '../../store/usage.js';
import { requireManagementKey, type KeyPrincipal } from '../guards.js';
import { presentUsage, type UsageNames } from '../presenters.js';
import { queryInt, queryOptionalInt, queryString, queryTime } from '../query.js';
import { scopedAccount } from './access.js';

const HEARTBEAT_MS = 15_000;

/** Which rows a caller wants (`account`, `key`, `model`); a user's key sees only its own account. */
function scopeFilter(app: App, principal: KeyPrincipal, ctx: RequestContext): Omit<UsageFilter, 'limit'> {
  const filter: Omit<UsageFilter, 'limit'> = {};
  const accountRef = queryString(ctx.query, 'account');
  if (accountRef !== undefined) filter.accountId = scopedAccount(app, principal, accountRef).id;
  else if (principal.account.role !== 'admin') filter.accountId = principal.account.id;
  const key = queryString(ctx.query, 'key');
  if (key !== undefined) filter.apiKeyId = key;
  const model = queryString(ctx.query, 'model');
  if (model !== undefined) filter.model = model;
  return filter;
}

/** The list filter: the scope plus a time range (`since` inclusive, `until` exclusive) and paging. */
function listFilter(app: App, principal: KeyPrincipal, ctx: RequestContext): UsageFilter {
  const filter: UsageFilter = { ...scopeFilter(app, principal, ctx), limit: queryInt(ctx.query, 'limit', 1, 1000, 100) };
  const since = queryTime(ctx.query, 'since');
  if (since !== undefined) filter.since = since;
  const until = queryTime(ctx.query, 'until');
  if (until !== undefined) filter.until = until;
  if (since !== undefined && until !== undefined && until <= since) throw errors.invalidQuery('until', 'must be after since');
  const before = queryOptionalInt(ctx.query, 'before');
  if (before !== undefined) filter.before = before;
  return filter;
}

export function matches(filter: Omit<UsageFilter, 'limit'>, record: UsageRecord): boolean {
  return (
    (filter.accountId === undefined || record.accountId === filter.accountId) &&
    (filter.apiKeyId === undefined || record.apiKeyId === filter.apiKeyId) &&
    (filter.model === undefined || record.model === filter.model) &&
    (filter.endpoint === undefined || record.endpoint === filter.endpoint) &&
    (filter.outcome === undefined || (filter.outcome === 'ok') === record.status < 400)
  );
}

/** Looks up account emails and key names for usage rows, each once per list or stream. */
export function namer(app: App): (record: UsageRecord) => UsageNames {
  const emails = new Map<string, string | null>();
  const keys = new Map<string, string | null>();
  return (record) => {
    if (!emails.has(record.accountId)) emails.set(record.accountId, app.accounts.get(record.accountId)?.email ?? null);
    if (record.apiKeyId !== null && !keys.has(record.apiKeyId)) keys.set(record.apiKeyId, app.store.apiKeys.byId(record.apiKeyId)?.name ?? null);
    return { accountEmail: emails.get(record.accountId) ?? null, apiKeyName: record.apiKeyId === null ? null : (keys.get(record.apiKeyId) ?? null) };
  };
}

/** Usage rows (newest first, paged by `before`) and the live SSE feed of new rows. */
export function registerManagementUsageRoutes(router: Router<Route>, app: App): void {
  router.add('GET', '/api/management/usage', {
    handle: (ctx) => {
      const principal = requireManagementKey(app, ctx);
      const filter = listFilter(app, principal, ctx);
      // One row more than asked tells whether another page exists.
      const rows = app.usage.list({ ...filter, limit: filter.limit + 1 });
      const names = namer(app);
      const hasMore = rows.length > filter.limit;
      const page = hasMore ? rows.slice(0, filter.limit) : rows;
      ctx.send(200, {
        object: 'list',
        data: page.map((record) => presentUsage(record, names(record))),
        has_more: hasMore,
        next_before: hasMore ? (page.at(-1)?.id ?? null) : null,
      });
    },
  });

  router.add('GET', '/api/management/usage/stream', {
    handle: async (ctx) => {
      const principal = requireManagementKey(app, ctx);
      // The live feed only has new rows: time range and paging do not apply.
      for (const name of ['since', 'until', 'before', 'limit']) {
        if (ctx.query.has(name)) throw errors.invalidQuery(name, 'does not apply to the live stream (use GET /api/management/usage)');
      }
      await streamUsage(app, ctx, scopeFilter(app, principal, ctx));
    },
  });
}

/** The live feed of usage rows matching `filter`, as SSE (`event: usage`), until the client leaves or the daemon stops. */
export async function streamUsage(app: App, ctx: RequestContext, filter: Omit<UsageFilter, 'limit'>): Promise<void> {
  const names = namer(app);
  const sse = new SseWriter(ctx.res);
  sse.open();
  await sse.comment('usage stream open');
  await new Promise<void>((resolve) => {
    const unsubscribe = app.usage.subscribe((record) => {
      if (matches(filter, record)) void sse.send(JSON.stringify(presentUsage(record, names(record))), 'usage');
    });
    const heartbeat = setInterval(() => void sse.comment('keep-alive'), HEARTBEAT_MS);
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearInterval(heartbeat);
      unsubscribe();
      removeHook();
      sse.end();
      resolve();
    };
    const removeHook = app.lifecycle.onShutdown(finish);
    ctx.res.once('close', finish);
  });
}
