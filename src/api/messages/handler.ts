import { requestIdBody } from '../../core/ids.js';
import type { App } from '../../app.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireCallingKey } from '../guards.js';
import { serveChatCall } from '../inference.js';
import { registerCountTokensRoute } from './count-tokens.js';
import { decodeMessagesRequest } from './decode.js';
import { encodeMessage, encodeMessagesError, MessagesStreamEncoder } from './encode.js';

/**
 * POST /v1/messages (Anthropic Messages) for every catalog chat model. Auth by x-api-key or
 * Authorization: Bearer; anthropic-version and anthropic-beta are accepted (the gateway picks
 * the version it sends upstream). Errors carry Anthropic's error types and a top-level `"type": "error"`.
 * A query string (Claude Code's `?beta=true`) is accepted on every messages route (the server
 * routes on the path alone). POST /v1/messages/count_tokens: count-tokens.ts.
 */
export function registerMessagesRoutes(router: Router<Route>, app: App): void {
  registerCountTokensRoute(router, app);
  router.add('POST', '/v1/messages', {
    renderError: encodeMessagesError,
    handle: async (ctx) => {
      const key = await requireCallingKey(app, ctx);
      const draft = decodeMessagesRequest(await ctx.json(), ctx.req.headers['anthropic-beta'], ctx.req.headers['anthropic-version']);
      // max_tokens is required here and clients set it high (Claude Code: 32000, 128000): above
      // the model's output limit it is lowered to it (x-gateway-max-tokens-clamped), not refused.
      draft.clampMaxTokens = true;
      const id = `msg_${requestIdBody(ctx.requestId)}`;
      await serveChatCall(app, ctx, key, draft, 'messages', {
        json: (outcome) => encodeMessage(outcome.result, outcome.usage, { id, model: outcome.model.id }),
        stream: async (outcome) => new MessagesStreamEncoder({ id, model: outcome.model.id, promptUsage: outcome.promptUsage ?? (await outcome.estimatePrompt()) }),
      });
    },
  });
}
