import type { App } from '../../app.js';
import { errors, GatewayError } from '../../core/errors.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireManagementKey } from '../guards.js';
import { queryString } from '../query.js';
import { requireAdmin, scopedAccount } from './access.js';

/**
 * The response cache for `akm-` keys: what it holds (admins), and purges: every entry
 * (admins), or one account's (`?account=`: an admin any account's, a user its own).
 */
export function registerManagementCacheRoutes(router: Router<Route>, app: App): void {
  router.add('GET', '/api/management/cache', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      requireAdmin(principal);
      const cache = app.cache;
      if (!cache) {
        ctx.send(200, { object: 'cache', enabled: false });
        return;
      }
      const stats = await cache.stats();
      ctx.send(200, {
        object: 'cache',
        enabled: true,
        scope: cache.config.scope,
        ttl_seconds: Math.floor(cache.config.ttlMs / 1000),
        max_entries: cache.config.maxEntries,
        max_bytes: cache.config.maxBytes,
        exact_models: cache.config.exact.models,
        semantic_models: cache.config.semantic.models,
        entries: stats.entries,
        bytes: stats.bytes,
        semantic_entries: stats.semanticEntries,
        ...(stats.redis ? { redis: { entries: stats.redis.entries, bytes: stats.redis.bytes } } : {}),
      });
    },
  });

  router.add('DELETE', '/api/management/cache', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      // `?account=` left empty is a mistake, not a request to empty every account's cache.
      if (ctx.query.has('account') && queryString(ctx.query, 'account') === undefined) throw errors.invalidQuery('account', 'must be an account id or e-mail, or me (leave it out to purge every account)');
      const ref = queryString(ctx.query, 'account');
      if (ref === undefined) requireAdmin(principal);
      const account = ref === undefined ? undefined : await scopedAccount(app, principal, ref);
      if (!app.cache) throw new GatewayError({ status: 409, type: 'invalid_request_error', reason: 'cache_disabled', message: 'the response cache is not enabled on this gateway (cache.enabled in its config)' });
      const removed = await app.cache.purge(account?.id);
      app.logger.info({ account: account?.id ?? 'all', removed, by: principal.key.id }, 'response cache purged');
      ctx.send(200, { object: 'cache.purge', account_id: account?.id ?? null, removed });
    },
  });
}
