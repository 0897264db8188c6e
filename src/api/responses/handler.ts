import { requestIdBody } from '../../core/ids.js';
import type { App } from '../../app.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireApiKey } from '../guards.js';
import { serveChatCall } from '../inference.js';
import { decodeResponsesRequest } from './decode.js';
import { encodeResponse, ResponsesStreamEncoder } from './encode.js';

/** POST /v1/responses, stateless (nothing is stored; `store` is treated as false). */
export function registerResponsesRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/responses', {
    handle: async (ctx) => {
      const key = await requireApiKey(app, ctx);
      const { draft, echo } = decodeResponsesRequest(await ctx.json());
      const id = `resp_${requestIdBody(ctx.requestId)}`;
      const createdAt = Math.floor(Date.now() / 1000);
      await serveChatCall(app, ctx, key, draft, 'responses', {
        json: (outcome) => encodeResponse(outcome.result, outcome.usage, { id, createdAt, model: outcome.model.id, echo }),
        stream: (model) => new ResponsesStreamEncoder({ id, createdAt, model, echo }),
      });
    },
  });
}
