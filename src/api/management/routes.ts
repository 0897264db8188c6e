import type { App } from '../../app.js';
import { routesFor } from '../../core/routing/view.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireManagementKey } from '../guards.js';
import { queryString } from '../query.js';
import { requireAdmin } from './access.js';

/**
 * GET /api/management/routes (admins' `akm-` keys): every model's deployments with their state,
 * keys, calls and failures in the last window (core/routing/view.ts). `?model=` one model (id
 * or short name); `?active=true` only models with several deployments, fallbacks, a rest or traffic.
 */
export function registerManagementRouteRoutes(router: Router<Route>, app: App): void {
  router.add('GET', '/api/management/routes', {
    handle: async (ctx) => {
      const principal = await requireManagementKey(app, ctx);
      requireAdmin(principal);
      ctx.send(200, routesFor(app.config, app.catalog, app.routes, { model: queryString(ctx.query, 'model'), activeOnly: queryString(ctx.query, 'active') === 'true' }));
    },
  });
}
