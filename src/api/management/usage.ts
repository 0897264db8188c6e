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
async function scopeFilter(app: App, principal: KeyPrincipal, ctx: RequestContext): Promise<Omit<UsageFilter, 'limit'>> {
  const filter: Omit<UsageFilter, 'limit'> = {};
  const accountRef = queryString(ctx.query, 'account');
  if (accountRef !== undefined) filter.accountId = (await scopedAccount(app, principal, accountRef)).id;
  else if (principal.account.role !== 'admin') filter.accountId = principal.account.id;
  const key = queryString(ctx.query, 'key');
  if (key !== undefined) filter.apiKeyId = key;
  const model = queryString(ctx.query, 'model');
  if (model !== undefined) filter.model = model;
  return filter;
}

/** The list filter: the scope plus a time range (`since` inclusive, `until` exclusive) and paging. */
async function listFilter(app: App, principal: KeyPrincipal, ctx: RequestContext): Promise<UsageFilter> {
  const filter: UsageFilter = { ...(await scopeFilter(app, principal, ctx)), limit: queryInt(ctx.query, 'limit', 1, 1000, 100) };
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
    (filter.model === undefined || record.model === filter.model || record.requestedModel === filter.model) &&
    (filter.endpoint === undefined || record.endpoint === filter.endpoint) &&
    (filter.outcome === undefined || (filter.outcome === 'ok') === record.status < 400)
  );
}

/** Looks up account emails and key names for usage rows, each once per list or stream. */
export function namer(app: App): (record: UsageRecord) => Promise<UsageNames> {
  const emails = new Map<string, Promise<string | null>>();
  const keys = new Map<string, Promise<string | null>>();
  return async (record) => {
    let email = emails.get(record.accountId);
    if (!email) emails.set(record.accountId, (email = Promise.resolve(app.accounts.get(record.accountId)).then((account) => account?.email ?? null)));
    let keyName: Promise<string | null> | undefined;
    if (record.apiKeyId !== null) {
      keyName = keys.get(record.apiKeyId);
      if (!keyName) keys.set(record.apiKeyId, (keyName = Promise.resolve(app.store.apiKeys.byId(record.apiKeyId)).then((key) => key?.name ?? null)));
    }
    return { accountEmail: await email, apiKeyName: keyName ? await keyName : null };
  };
}

/** Rows in the API's shape, with their account emails and key names. */
export async function presentUsagePage(app: App, rows: readonly UsageRecord[]): Promise<ReturnType<typeof presentUsage>[]> {
  const names = namer(app);
  return Promise.all(rows.map(async (record) => presentUsage(record, await names(record))));
}

/** Usage rows (newest first, paged by `before`) and the live SSE feed of new rows. */
export function registerManagementUsageRoutes(router: Router<Route>, app: App): void {
  router.add('GET', '/api/management/usage', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      const filter = await listFilter(app, principal, ctx);
      // One row more than asked tells whether another page exists.
      const rows = await app.usage.list({ ...filter, limit: filter.limit + 1 });
      const hasMore = rows.length > filter.limit;
      const page = hasMore ? rows.slice(0, filter.limit) : rows;
      ctx.send(200, {
        object: 'list',
        data: await presentUsagePage(app, page),
        has_more: hasMore,
        next_before: hasMore ? (page.at(-1)?.id ?? null) : null,
      });
    },
  });

  router.add('GET', '/api/management/usage/stream', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      // The live feed only has new rows: time range and paging do not apply.
      for (const name of ['since', 'until', 'before', 'limit']) {
        if (ctx.query.has(name)) throw errors.invalidQuery(name, 'does not apply to the live stream (use GET /api/management/usage)');
      }
      await streamUsage(app, ctx, await scopeFilter(app, principal, ctx));
    },
  });
}

/** The live feed of usage rows matching `filter`, as SSE (`event: usage`), until the client leaves or the daemon stops. */
export async function streamUsage(app: App, ctx: RequestContext, filter: Omit<UsageFilter, 'limit'>): Promise<void> {
  const names = namer(app);
  let sent: Promise<void> = Promise.resolve();
  const sse = new SseWriter(ctx.res);
  sse.open();
  await sse.comment('usage stream open');
  await new Promise<void>((resolve) => {
    const unsubscribe = app.usage.subscribe((record) => {
      // In order: each row waits for the one before it (its names may need a store read).
      if (matches(filter, record)) sent = sent.then(async () => void (await sse.send(JSON.stringify(presentUsage(record, await names(record))), 'usage'))).catch(() => undefined);
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
