import { requestIdBody } from '../../core/ids.js';
import type { App } from '../../app.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireCallingKey } from '../guards.js';
import { serveChatCall } from '../inference.js';
import { decodeChatCompletion } from './decode.js';
import { ChatChunkEncoder, encodeChatCompletion } from './encode.js';

/** POST /v1/chat/completions: decode ► gateway ► encode, as JSON or SSE. */
export function registerChatRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/chat/completions', {
    handle: async (ctx) => {
      const key = await requireCallingKey(app, ctx);
      const { draft, includeUsage } = decodeChatCompletion(await ctx.json());
      const id = `chatcmpl-${requestIdBody(ctx.requestId)}`;
      const created = Math.floor(Date.now() / 1000);
      await serveChatCall(app, ctx, key, draft, 'chat.completions', {
        json: (outcome) => encodeChatCompletion(outcome.result, outcome.usage, { id, created, model: outcome.model.id }),
        stream: (outcome) => new ChatChunkEncoder({ id, created, model: outcome.model.id }, includeUsage),
      });
    },
  });
}
