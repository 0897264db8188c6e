import { requestIdBody } from '../../core/ids.js';
import type { App } from '../../app.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireApiKey } from '../guards.js';
import { serveChatCall } from '../inference.js';
import { decodeMessagesRequest } from './decode.js';
import { encodeMessage, encodeMessagesError, MessagesStreamEncoder } from './encode.js';

/**
 * POST /v1/messages (Anthropic Messages) for every catalog chat model. Auth by x-api-key or
 * Authorization: Bearer; anthropic-version and anthropic-beta are accepted (the gateway picks
 * the version it sends upstream). Errors carry Anthropic's error types and a top-level `"type": "error"`.
 */
export function registerMessagesRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/messages', {
    renderError: encodeMessagesError,
    handle: async (ctx) => {
      const key = await requireApiKey(app, ctx);
      const draft = decodeMessagesRequest(await ctx.json());
      const id = `msg_${requestIdBody(ctx.requestId)}`;
      await serveChatCall(app, ctx, key, draft, 'messages', {
        json: (outcome) => encodeMessage(outcome.result, outcome.usage, { id, model: outcome.model.id }),
        stream: (model) => new MessagesStreamEncoder({ id, model }),
      });
    },
  });
}
