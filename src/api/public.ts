import type { App } from '../app.js';
import { errors, GatewayError } from '../core/errors.js';
import { checkReadiness } from '../core/health.js';
import { microsToInr } from '../core/money.js';
import { KeyPolicy } from '../core/key-policy.js';
import { keyKindOf } from '../core/keys.js';
import type { RequestContext, Route } from '../http/server.js';
import type { Router } from '../http/router.js';
import { presentedCredential, requireApiKey } from './guards.js';
import { presentCatalogList, presentOpenAiAlias, presentOpenAiList, presentOpenAiModel } from './presenters.js';

/** Health, the model catalog (no auth) and the credits of an `sk-` key. */
export function registerPublicRoutes(router: Router<Route>, app: App): void {
  router.add('GET', '/health', { handle: (ctx) => ctx.send(200, { status: 'ok' }) });

  router.add('GET', '/health/ready', {
    handle: async (ctx) => {
      const readiness = await checkReadiness(app.store, app.redis, app.lifecycle.shuttingDown, app.settlement);
      ctx.send(readiness.ready ? 200 : 503, readiness.body);
    },
  });

  // Built once: the catalog is frozen for the daemon's life (aliases listed after the models).
  const openAiList = presentOpenAiList(app.catalog);
  const catalogList = presentCatalogList(app.catalog);

  router.add('GET', '/v1/models', {
    handle: async (ctx) => {
      // A key with a models list sees what it may call; without a key (or with any other), the catalog.
      const policy = await presentedKeyPolicy(app, ctx);
      ctx.send(200, policy ? presentOpenAiList(app.catalog, (model) => policy.allowsModel(model)) : openAiList);
    },
  });
  router.add('GET', '/v1/models/*id', {
    handle: async (ctx) => {
      const id = ctx.params.id as string;
      const model = app.catalog.get(id);
      // An alias (a name a pattern matches included) answers as its own entry.
      const aliasOf = model ? undefined : app.catalog.alias(id);
      const target = aliasOf === undefined ? undefined : app.catalog.get(aliasOf);
      if (target) {
        ctx.send(200, presentOpenAiAlias(id, target));
        return;
      }
      if (!model) {
        throw new GatewayError({
          status: 404,
          type: 'not_found_error',
          reason: 'model_not_found',
          param: 'model',
          message: `The model '${ctx.params.id}' does not exist: GET /v1/models lists the available models`,
        });
      }
      ctx.send(200, presentOpenAiModel(model));
    },
  });
  router.add('GET', '/api/models', { handle: (ctx) => ctx.send(200, catalogList) });

  router.add('GET', '/v1/credits', {
    handle: async (ctx) => {
      // Read fresh from the store, so settled charges show at once.
      const key = await requireApiKey(app, ctx);
      const account = await app.accounts.get(key.accountId);
      if (!account) throw errors.invalidApiKey();
      ctx.send(200, { balance: microsToInr(account.balanceMicros), currency: 'INR' });
    },
  });
}

/** The policy of the sk- key the request presents, if it is valid and restricts models (the list endpoint needs no key). */
async function presentedKeyPolicy(app: App, ctx: RequestContext): Promise<KeyPolicy | undefined> {
  const credential = presentedCredential(ctx.req);
  if (!credential || keyKindOf(credential) !== 'api') return undefined;
  try {
    const key = await app.keyAuth.api.authenticate(credential, false);
    return key.models.length > 0 ? KeyPolicy.of(key, app.catalog) : undefined;
  } catch {
    return undefined;
  }
}
