import type { App } from '../app.js';
import { errors } from '../core/errors.js';
import { microsToInr } from '../core/money.js';
import { routesFor } from '../core/routing/view.js';
import { optionalEnum, optionalString, rejectUnknownFields, requiredEmail, requiredString, requireObject } from '../core/validate.js';
import type { RequestContext, Route } from '../http/server.js';
import type { Router } from '../http/router.js';
import type { Account } from '../store/accounts.js';
import { requiredPassword } from './auth.js';
import { parseAccountUpdate } from './account-bodies.js';
import { usageFilter, usagePage } from './dashboard.js';
import { requireSession } from './guards.js';
import { positiveAmount, topupReference } from './management/accounts.js';
import { presentAccount, presentAlert, presentKey, presentLedgerEntry } from './presenters.js';
import { queryInt, queryString } from './query.js';

/**
 * The dashboard's admin pages, for a session of an admin account (403 otherwise): accounts
 * with balances, creating one, an idempotent top-up, any account's keys and usage, the
 * router's routes. The same services and rules as the management API's for `akm-` admin keys.
 */

async function requireAdminSession(app: App, ctx: RequestContext): Promise<Account> {
  const account = await requireSession(app, ctx);
  if (account.role !== 'admin') throw errors.adminOnly();
  return account;
}

async function accountParam(app: App, ctx: RequestContext): Promise<Account> {
  return await app.accounts.resolve(ctx.params.id as string);
}

export function registerAdminRoutes(router: Router<Route>, app: App): void {
  router.add('GET', '/api/admin/accounts', {
    handle: async (ctx) => {
      await requireAdminSession(app, ctx);
      app.store.barrier.pass();
      const limit = queryInt(ctx.query, 'limit', 1, 1000, 200);
      const offset = queryInt(ctx.query, 'offset', 0, Number.MAX_SAFE_INTEGER, 0);
      ctx.send(200, { object: 'list', data: (await app.accounts.list(limit, offset)).map((account) => presentAccount(account, { timeZone: app.config.governance.timeZone })) });
    },
  });
  router.add('POST', '/api/admin/accounts', {
    handle: async (ctx) => {
      await requireAdminSession(app, ctx);
      const body = requireObject(await ctx.json());
      rejectUnknownFields(body, ['email', 'name', 'password', 'role']);
      const email = requiredEmail(body);
      const name = requiredString(body, 'name', { max: 200 });
      const password = body.password === undefined ? undefined : requiredPassword(body);
      const role = optionalEnum(body, 'role', ['user', 'admin'] as const) ?? 'user';
      const account = await app.accounts.create({ email, name, role, ...(password === undefined ? {} : { password }) });
      ctx.send(201, presentAccount(account, { timeZone: app.config.governance.timeZone }));
    },
  });
  router.add('PATCH', '/api/admin/accounts/:id', {
    handle: async (ctx) => {
      await requireAdminSession(app, ctx);
      const account = await accountParam(app, ctx);
      const updated = await app.accounts.setSpendLimit(account, parseAccountUpdate(await ctx.json()));
      ctx.send(200, presentAccount(updated, { timeZone: app.config.governance.timeZone }));
    },
  });
  router.add('GET', '/api/admin/alerts', {
    handle: async (ctx) => {
      await requireAdminSession(app, ctx);
      const limit = queryInt(ctx.query, 'limit', 1, 500, 50);
      ctx.send(200, { object: 'list', data: (await app.store.alerts.recent(limit)).map(presentAlert) });
    },
  });
  router.add('POST', '/api/admin/accounts/:id/topups', {
    handle: async (ctx) => {
      const admin = await requireAdminSession(app, ctx);
      const account = await accountParam(app, ctx);
      const body = requireObject(await ctx.json());
      rejectUnknownFields(body, ['amount', 'reference', 'note']);
      const amountMicros = positiveAmount(body);
      const reference = topupReference(body, ctx.req.headers['idempotency-key']);
      const note = optionalString(body, 'note', { max: 500 });
      const result = await app.wallet.topup({ accountId: account.id, amountMicros, createdBy: admin.id, ...(reference === undefined ? {} : { reference }), ...(note === undefined ? {} : { note }) });
      const entry = presentLedgerEntry(result.entry);
      ctx.send(result.replayed ? 200 : 201, { topup: entry, entry, balance: microsToInr(result.balanceMicros), replayed: result.replayed });
    },
  });
  router.add('GET', '/api/admin/accounts/:id/api-keys', {
    handle: async (ctx) => {
      await requireAdminSession(app, ctx);
      const account = await accountParam(app, ctx);
      const now = Date.now();
      ctx.send(200, { object: 'list', data: (await app.keys.list('api', account.id)).map((key) => presentKey(key, now, app.config.governance.timeZone)) });
    },
  });
  router.add('GET', '/api/admin/usage', {
    handle: async (ctx) => {
      await requireAdminSession(app, ctx);
      const accountRef = queryString(ctx.query, 'account_id');
      const accountId = accountRef === undefined ? undefined : (await app.accounts.resolve(accountRef)).id;
      ctx.send(200, await usagePage(app, ctx, usageFilter(ctx, accountId)));
    },
  });
  // GET /api/management/routes for a session: `?model=` one model, `?active=true` only the active ones.
  router.add('GET', '/api/admin/routes', {
    handle: async (ctx) => {
      await requireAdminSession(app, ctx);
      ctx.send(200, routesFor(app.config, app.catalog, app.routes, { model: queryString(ctx.query, 'model'), activeOnly: queryString(ctx.query, 'active') === 'true' }));
    },
  });
}
