import type { ModelType } from '../config/types.js';
import type { CallContext } from '../core/call-context.js';
import type { Catalog } from '../core/catalog.js';
import { GatewayError } from '../core/errors.js';

/**
 * Model aliases (`aliases:` in the config) resolved at the ingress, before the gateway sees
 * the model: the request's model and its fallbacks (the body's `models`, the
 * `x-gateway-fallbacks` header) become the catalog ids they stand for, in place, and the alias
 * the client named the model by goes on the call (its usage row records both names). Every
 * inference endpoint calls this once it has decoded its body; billing, routing, the response
 * cache and the answer's `model` are then the target's.
 */
export function resolveAliases(catalog: Catalog, type: ModelType, draft: { model?: string | undefined; fallbacks?: string[] | undefined }, call: CallContext): void {
  if (catalog.aliases.length === 0) return;
  const asked = draft.model;
  if (asked !== undefined) {
    const target = catalog.alias(asked);
    if (target !== undefined) {
      const model = catalog.get(target);
      if (model && model.type !== type) {
        throw new GatewayError({
          status: 400,
          type: 'invalid_request_error',
          reason: 'model_not_supported',
          param: 'model',
          message: `model: '${asked}' is an alias of ${target}, a ${model.type} model, which cannot serve this endpoint (it serves ${type} models)`,
        });
      }
      call.requestedModel = asked;
      draft.model = target;
    }
  }
  if (draft.fallbacks) draft.fallbacks = draft.fallbacks.map((name) => catalog.alias(name) ?? name);
  if (call.fallbacks) call.fallbacks = call.fallbacks.map((name) => catalog.alias(name) ?? name);
}
