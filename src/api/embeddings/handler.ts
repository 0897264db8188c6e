import type { App } from '../../app.js';
import { addIgnoredParams } from '../../core/gateway/media.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireCallingKey } from '../guards.js';
import { resolveAliases } from '../aliases.js';
import { callContext } from '../inference.js';
import { decodeEmbeddings } from './decode.js';
import { encodeEmbeddings } from './encode.js';

/** POST /v1/embeddings (OpenAI's format, for every embedding model of the catalog). */
export function registerEmbeddingRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/embeddings', {
    handle: async (ctx) => {
      const key = await requireCallingKey(app, ctx);
      const { draft, ignored } = decodeEmbeddings(await ctx.json());
      const call = callContext(ctx, key, 'embeddings', app.catalog);
      resolveAliases(app.catalog, 'embedding', draft, call);
      const outcome = await app.media.embed(draft, call);
      addIgnoredParams(outcome.headers, ignored);
      ctx.send(200, encodeEmbeddings(outcome, draft.encodingFormat), outcome.headers);
    },
  });
}
