import type { CallContext } from '../core/gateway/chat.js';
import type { RequestContext } from '../http/server.js';
import type { KeyPrincipal } from './guards.js';

/**
 * The gateway's view of an inference request: who calls, and a signal that aborts the
 * upstream call when the client disconnects before the response is complete.
 */
export function callContext(ctx: RequestContext, principal: KeyPrincipal, endpoint: string): CallContext {
  const controller = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort();
  });
  return {
    requestId: ctx.requestId,
    endpoint,
    accountId: principal.account.id,
    apiKeyId: principal.key.id,
    rateLimit: principal.key.rateLimit ?? 10_000,
    signal: controller.signal,
    startedAt: Date.now(),
  };
}
