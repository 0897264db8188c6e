import type { App } from '../../app.js';
import { errors } from '../../core/errors.js';
import { microsToInr, parseInr } from '../../core/money.js';
import {
  optionalEnum,
  optionalString,
  rejectUnknownFields,
  requiredEmail,
  requiredString,
  requireObject,
  type JsonObject,
} from '../../core/validate.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requiredPassword } from '../auth.js';
import { requireManagementKey } from '../guards.js';
import { presentAccount, presentAlert, presentKey, presentLedgerEntry } from '../presenters.js';
import { queryInt, queryOptionalInt, queryString } from '../query.js';
import { requireAdmin, scopedAccount } from './access.js';
import { parseAccountUpdate } from '../account-bodies.js';

/** Accounts, balances, top-ups and the ledger, for `akm-` keys. */
export function registerManagementAccountRoutes(router: Router<Route>, app: App): void {
  router.add('GET', '/api/management/me', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      ctx.send(200, { account: presentAccount(principal.account, { timeZone: app.config.governance.timeZone }), key: presentKey(principal.key, Date.now(), app.config.governance.timeZone) });
    },
  });

  router.add('GET', '/api/management/accounts', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      requireAdmin(principal);
      const email = queryString(ctx.query, 'email');
      if (email !== undefined) {
        const account = await app.store.accounts.byEmail(email.toLowerCase());
        ctx.send(200, { object: 'list', data: account ? [presentAccount(account, { timeZone: app.config.governance.timeZone })] : [] });
        return;
      }
      const limit = queryInt(ctx.query, 'limit', 1, 1000, 100);
      const offset = queryInt(ctx.query, 'offset', 0, Number.MAX_SAFE_INTEGER, 0);
      ctx.send(200, { object: 'list', data: (await app.accounts.list(limit, offset)).map((account) => presentAccount(account, { timeZone: app.config.governance.timeZone })) });
    },
  });

  router.add('GET', '/api/management/alerts', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      requireAdmin(principal);
      const limit = queryInt(ctx.query, 'limit', 1, 500, 50);
      ctx.send(200, { object: 'list', data: (await app.store.alerts.recent(limit)).map(presentAlert) });
    },
  });

  router.add('POST', '/api/management/accounts', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      requireAdmin(principal);
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

  router.add('GET', '/api/management/accounts/:account', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      ctx.send(200, presentAccount(await scopedAccount(app, principal, ctx.params.account as string), { timeZone: app.config.governance.timeZone }));
    },
  });

  router.add('PATCH', '/api/management/accounts/:account', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      requireAdmin(principal);
      const account = await scopedAccount(app, principal, ctx.params.account as string);
      const updated = await app.accounts.setSpendLimit(account, parseAccountUpdate(await ctx.json()));
      ctx.send(200, presentAccount(updated, { timeZone: app.config.governance.timeZone }));
    },
  });

  router.add('GET', '/api/management/accounts/:account/balance', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      const account = await scopedAccount(app, principal, ctx.params.account as string);
      ctx.send(200, { account_id: account.id, email: account.email, balance: microsToInr(account.balanceMicros), currency: 'INR' });
    },
  });

  router.add('POST', '/api/management/accounts/:account/topups', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      requireAdmin(principal);
      const account = await scopedAccount(app, principal, ctx.params.account as string);
      const body = requireObject(await ctx.json());
      rejectUnknownFields(body, ['amount', 'reference', 'note']);
      const amountMicros = positiveAmount(body);
      const reference = topupReference(body, ctx.req.headers['idempotency-key']);
      const note = optionalString(body, 'note', { max: 500 });
      const result = await app.wallet.topup({
        accountId: account.id,
        amountMicros,
        createdBy: principal.account.id,
        ...(reference === undefined ? {} : { reference }),
        ...(note === undefined ? {} : { note }),
      });
      ctx.send(result.replayed ? 200 : 201, {
        topup: presentLedgerEntry(result.entry),
        balance: microsToInr(result.balanceMicros),
        replayed: result.replayed,
      });
    },
  });

  router.add('GET', '/api/management/accounts/:account/ledger', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      const account = await scopedAccount(app, principal, ctx.params.account as string);
      const limit = queryInt(ctx.query, 'limit', 1, 1000, 100);
      const entries = await app.wallet.ledger(account.id, limit, queryOptionalInt(ctx.query, 'before'));
      ctx.send(200, { object: 'list', data: entries.map(presentLedgerEntry) });
    },
  });
}

export function positiveAmount(body: JsonObject): number {
  if (body.amount === undefined || body.amount === null) throw errors.missingField('amount');
  if (typeof body.amount !== 'number') throw errors.invalidField('amount', 'must be a number (INR)');
  const parsed = parseInr(body.amount);
  if (!parsed.ok) throw errors.invalidField('amount', parsed.rule);
  if (parsed.micros === 0) throw errors.invalidField('amount', 'must be greater than 0');
  return parsed.micros;
}

/** The `Idempotency-Key` header, or `reference` in the body; both given must agree. */
export function topupReference(body: JsonObject, header: string | string[] | undefined): string | undefined {
  const fromBody = optionalString(body, 'reference', { max: 200 });
  const fromHeader = typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
  if (fromHeader !== undefined && fromHeader.length > 200) throw errors.invalidField('Idempotency-Key', 'must be at most 200 characters');
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    throw errors.invalidField('reference', 'must equal the Idempotency-Key header when both are given');
  }
  return fromHeader ?? fromBody;
}
