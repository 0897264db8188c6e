import type { App } from '../../app.js';
import { SseWriter } from '../../http/sse.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireApiKey } from '../guards.js';
import { callContext } from '../inference.js';
import { decodeChatCompletion } from './decode.js';
import { ChatChunkEncoder, encodeChatCompletion } from './encode.js';

/** POST /v1/chat/completions: decode ► gateway ► encode, as JSON or SSE. */
export function registerChatRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/chat/completions', {
    handle: async (ctx) => {
      const principal = requireApiKey(app, ctx);
      const { draft, includeUsage } = decodeChatCompletion(await ctx.json());
      const call = callContext(ctx, principal, 'chat.completions');
      const id = `chatcmpl-${ctx.requestId.replace(/^req_/, '')}`;
      const created = Math.floor(call.startedAt / 1000);

      if (!draft.stream) {
        const outcome = await app.chat.complete(draft, call);
        ctx.send(200, encodeChatCompletion(outcome.result, outcome.usage, { id, created, model: outcome.model.id }), outcome.headers);
        return;
      }

      const outcome = await app.chat.stream(draft, call);
      const sse = new SseWriter(ctx.res);
      sse.open(200, outcome.headers);
      const encoder = new ChatChunkEncoder({ id, created, model: outcome.model.id }, includeUsage);
      await sse.send(encoder.start());
      for await (const event of outcome.events) {
        if (sse.isClosed) break;
        for (const data of encoder.encode(event)) await sse.send(data);
        if (event.type === 'finish') await sse.send('[DONE]');
      }
      sse.end();
    },
  });
}
