import type { App } from '../app.js';
import { Router } from '../http/router.js';
import type { Route } from '../http/server.js';
import { registerAdminRoutes } from './admin.js';
import { registerAuthRoutes } from './auth.js';
import { registerDashboardRoutes } from './dashboard.js';
import { registerMcpRoutes } from './mcp.js';
import { dashboardFallback, registerDashboardStatic } from './dashboard-static.js';
import { registerChatRoutes } from './chat/handler.js';
import { registerEmbeddingRoutes } from './embeddings/handler.js';
import { registerSpeechRoutes } from './audio/speech.js';
import { registerTranscriptionRoutes } from './audio/transcriptions.js';
import { registerImageRoutes } from './images/handler.js';
import { registerMessagesRoutes } from './messages/handler.js';
import { registerResponsesRoutes } from './responses/handler.js';
import { registerSessionKeyRoutes } from './keys.js';
import { registerManagementAccountRoutes } from './management/accounts.js';
import { registerManagementKeyRoutes } from './management/keys.js';
import { registerManagementUsageRoutes } from './management/usage.js';
import { registerManagementCacheRoutes } from './management/cache.js';
import { registerManagementRouteRoutes } from './management/routes.js';
import { registerPublicRoutes } from './public.js';
import { registerMetricsRoute } from './metrics.js';

/** Every public surface of the daemon, and the dashboard's page for its client-side routes. */
export function buildRouter(app: App): { router: Router<Route>; fallback: (path: string, accept: string | undefined) => Route | undefined } {
  const router = new Router<Route>();
  const page = registerDashboardStatic(router, app);
  registerPublicRoutes(router, app);
  registerMetricsRoute(router, app);
  registerAuthRoutes(router, app);
  registerChatRoutes(router, app);
  registerMessagesRoutes(router, app);
  registerResponsesRoutes(router, app);
  registerEmbeddingRoutes(router, app);
  registerSpeechRoutes(router, app);
  registerTranscriptionRoutes(router, app);
  registerImageRoutes(router, app);
  registerSessionKeyRoutes(router, app);
  registerManagementAccountRoutes(router, app);
  registerManagementKeyRoutes(router, app);
  registerManagementUsageRoutes(router, app);
  registerManagementCacheRoutes(router, app);
  registerManagementRouteRoutes(router, app);
  registerDashboardRoutes(router, app);
  registerAdminRoutes(router, app);
  registerMcpRoutes(router, app);
  return { router, fallback: dashboardFallback(page) };
}
