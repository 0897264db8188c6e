import type { App } from '../app.js';
import type { KeyKind } from '../core/keys.js';
import type { Route } from '../http/server.js';
import type { Router } from '../http/router.js';
import type { Account } from '../store/accounts.js';
import type { KeyRecord } from '../store/keys.js';
import { requireSession } from './guards.js';
import { parseKeyCreate, parseKeyUpdate } from './key-bodies.js';
import { presentKey } from './presenters.js';

/** The secret's field in a creation response. */
export const SECRET_FIELD: Record<KeyKind, string> = { api: 'api_key', management: 'management_key' };

/** A creation response: the one and only time the secret is shown. */
export function presentCreatedKey(kind: KeyKind, record: KeyRecord, secret: string, now: number, timeZone?: string) {
  return { [SECRET_FIELD[kind]]: secret, ...presentKey(record, now, timeZone) };
}

/**
 * Session endpoints for a user's own keys: `/api/api-keys` (`sk-`) and `/api/management-keys`
 * (`akm-`). The management API offers the same operations to `akm-` keys.
 */
export function registerSessionKeyRoutes(router: Router<Route>, app: App): void {
  const surfaces: [KeyKind, string][] = [
    ['api', '/api/api-keys'],
    ['management', '/api/management-keys'],
  ];
  for (const [kind, base] of surfaces) {
    const own = (account: Account, id: string): Promise<KeyRecord> => app.keys.get(kind, id, (record) => record.accountId === account.id);

    router.add('POST', base, {
      handle: async (ctx) => {
        const account = await requireSession(app, ctx);
        const now = Date.now();
        const input = parseKeyCreate(kind, await ctx.json(), now, app.catalog);
        const { record, secret } = await app.keys.create(kind, account.id, input);
        ctx.send(200, presentCreatedKey(kind, record, secret, now, app.config.governance.timeZone));
      },
    });
    router.add('GET', base, {
      handle: async (ctx) => {
        const account = await requireSession(app, ctx);
        const now = Date.now();
        ctx.send(200, { object: 'list', data: (await app.keys.list(kind, account.id)).map((key) => presentKey(key, now, app.config.governance.timeZone)) });
      },
    });
    router.add('GET', `${base}/:id`, {
      handle: async (ctx) => {
        const account = await requireSession(app, ctx);
        ctx.send(200, presentKey(await own(account, ctx.params.id as string), Date.now(), app.config.governance.timeZone));
      },
    });
    if (kind === 'api') {
      router.add('PATCH', `${base}/:id`, {
        handle: async (ctx) => {
          const account = await requireSession(app, ctx);
          const record = await own(account, ctx.params.id as string);
          const now = Date.now();
          const changes = parseKeyUpdate(kind, await ctx.json(), now, app.catalog);
          ctx.send(200, presentKey(await app.keys.update(record, changes), now, app.config.governance.timeZone));
        },
      });
    }
    router.add('DELETE', `${base}/:id`, {
      handle: async (ctx) => {
        const account = await requireSession(app, ctx);
        const record = await own(account, ctx.params.id as string);
        ctx.send(200, presentKey(await app.keys.revoke(record), Date.now(), app.config.governance.timeZone));
      },
    });
  }
}
