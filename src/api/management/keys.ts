import type { App } from '../../app.js';
import type { KeyKind } from '../../core/keys.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import type { KeyRecord } from '../../store/keys.js';
import { requireManagementKey, type KeyPrincipal } from '../guards.js';
import { parseKeyCreate, parseKeyUpdate } from '../key-bodies.js';
import { presentCreatedKey } from '../keys.js';
import { presentKey } from '../presenters.js';
import { canSee, scopedAccount } from './access.js';

/** API keys and management keys of an account, for `akm-` keys. */
export function registerManagementKeyRoutes(router: Router<Route>, app: App): void {
  const surfaces: [KeyKind, string][] = [
    ['api', 'api-keys'],
    ['management', 'management-keys'],
  ];
  for (const [kind, segment] of surfaces) {
    const visible = (principal: KeyPrincipal, id: string): Promise<KeyRecord> => app.keys.get(kind, id, (record) => canSee(principal, record.accountId));

    router.add('POST', `/api/management/accounts/:account/${segment}`, {
      handle: async (ctx) => {
        const principal = await requireManagementKey(app, ctx);
        const account = await scopedAccount(app, principal, ctx.params.account as string);
        const now = Date.now();
        const input = parseKeyCreate(kind, await ctx.json(), now, app.catalog);
        const { record, secret } = await app.keys.create(kind, account.id, input);
        ctx.send(201, presentCreatedKey(kind, record, secret, now, app.config.governance.timeZone));
      },
    });
    router.add('GET', `/api/management/accounts/:account/${segment}`, {
      handle: async (ctx) => {
        const principal = await requireManagementKey(app, ctx);
        const account = await scopedAccount(app, principal, ctx.params.account as string);
        const now = Date.now();
        ctx.send(200, { object: 'list', data: (await app.keys.list(kind, account.id)).map((key) => presentKey(key, now, app.config.governance.timeZone)) });
      },
    });
    router.add('GET', `/api/management/${segment}/:id`, {
      handle: async (ctx) => {
        const principal = await requireManagementKey(app, ctx);
        ctx.send(200, presentKey(await visible(principal, ctx.params.id as string), Date.now(), app.config.governance.timeZone));
      },
    });
    if (kind === 'api') {
      router.add('PATCH', `/api/management/${segment}/:id`, {
        handle: async (ctx) => {
          const principal = await requireManagementKey(app, ctx);
          const record = await visible(principal, ctx.params.id as string);
          const now = Date.now();
          const changes = parseKeyUpdate(kind, await ctx.json(), now, app.catalog);
          ctx.send(200, presentKey(await app.keys.update(record, changes), now, app.config.governance.timeZone));
        },
      });
    }
    router.add('DELETE', `/api/management/${segment}/:id`, {
      handle: async (ctx) => {
        const principal = await requireManagementKey(app, ctx);
        const record = await visible(principal, ctx.params.id as string);
        ctx.send(200, presentKey(await app.keys.revoke(record), Date.now(), app.config.governance.timeZone));
      },
    });
  }
}
