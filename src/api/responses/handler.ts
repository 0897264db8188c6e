import { requestIdBody } from '../../core/ids.js';
import type { App } from '../../app.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireCallingKey } from '../guards.js';
import { serveChatCall } from '../inference.js';
import { decodeResponsesRequest } from './decode.js';
import { encodeResponse } from './encode.js';
import { ResponsesStreamEncoder } from './encode-stream.js';
import { encodeNativeResponse, NativeResponsesStream } from './native.js';

/**
 * POST /v1/responses, stateless (nothing is stored; `store` is treated as false). An answer an
 * upstream gave natively (a provider marked `responses: true`) is relayed as the upstream
 * gave it (native.ts); any other is encoded from the canonical result (encode.ts).
 */
export function registerResponsesRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/responses', {
    handle: async (ctx) => {
      const key = await requireCallingKey(app, ctx);
      const { draft, echo } = decodeResponsesRequest(await ctx.json());
      const id = `resp_${requestIdBody(ctx.requestId)}`;
      const createdAt = Math.floor(Date.now() / 1000);
      await serveChatCall(app, ctx, key, draft, 'responses', {
        json: (outcome) =>
          outcome.result.native
            ? encodeNativeResponse(outcome.result, outcome.usage, { id, model: outcome.model.id })
            : encodeResponse(outcome.result, outcome.usage, { id, createdAt, model: outcome.model.id, echo }),
        stream: (outcome) => (outcome.native ? new NativeResponsesStream({ id, model: outcome.model.id }) : new ResponsesStreamEncoder({ id, createdAt, model: outcome.model.id, echo })),
      });
    },
  });
}
