import type { ModelConfig, ModelType, ProviderConfig } from '../../config/types.js';
import type { Catalog } from '../catalog.js';
import { GatewayError, isGatewayError } from '../errors.js';
import type { Rest } from '../routing/decide.js';
import type { CallContext } from './call.js';

/** A fallback model a request names, and where (for the 400 when it names none). */
export interface FallbackName {
  name: string;
  /** `models[1]`, or the header `x-gateway-fallbacks`. */
  field: string;
}

/** The fallbacks a request names: a chat body's `models`, then the `x-gateway-fallbacks` header (every endpoint). */
export function fallbackNames(draft: { fallbacks?: readonly string[] }, ctx: CallContext): readonly FallbackName[] {
  if (draft.fallbacks === undefined && ctx.fallbacks === undefined) return NONE;
  const names: FallbackName[] = [];
  draft.fallbacks?.forEach((name, index) => names.push({ name, field: `models[${index}]` }));
  for (const name of ctx.fallbacks ?? []) names.push({ name, field: 'x-gateway-fallbacks' });
  return names;
}

const NONE: readonly FallbackName[] = Object.freeze([]);

/** The most models one call may go through. */
export const MAX_CHAIN = 12;

/**
 * The models a call may be served by, in order: the one asked for, the request's fallbacks
 * (`models`, `x-gateway-fallbacks`), then the config's `routing.fallbacks` of each model
 * already in the chain, each model once. A requested fallback that is not a catalog model of
 * the endpoint's kind is the client's 400, naming where it was given.
 */
export function buildChain(catalog: Catalog, configured: Readonly<Record<string, readonly string[]>>, asked: ModelConfig, type: ModelType, requested: readonly FallbackName[]): ModelConfig[] {
  const chain = [asked];
  for (const { name, field } of requested) {
    let model: ModelConfig;
    try {
      model = catalog.resolve(name, type);
    } catch (error) {
      if (!isGatewayError(error)) throw error;
      throw new GatewayError({ status: 400, type: 'invalid_request_error', reason: error.reason, param: field, message: `${field}: ${error.message}` });
    }
    if (!chain.includes(model)) chain.push(model);
  }
  for (let index = 0; index < chain.length && chain.length < MAX_CHAIN; index++) {
    for (const id of configured[(chain[index] as ModelConfig).id] ?? []) {
      const model = catalog.get(id);
      if (model && !chain.includes(model) && chain.length < MAX_CHAIN) chain.push(model);
    }
  }
  return chain;
}

export function providerNotConfigured(provider: ProviderConfig): GatewayError {
  return new GatewayError({
    status: 503,
    type: 'service_unavailable',
    reason: 'provider_not_configured',
    message: `provider '${provider.name}' has no API key: set ${provider.apiKeyEnv ?? 'its api_key'} in the gateway's environment and restart it`,
  });
}

const WHY: Record<Rest['reason'], string> = {
  failures: 'after repeated failures',
  auth: 'its provider refused the gateway\'s key',
  quota: 'its provider\'s quota or spend limit is exhausted',
  'retry-after': 'its provider asked the gateway to wait',
};

/**
 * Every deployment of the model asked for rests, and nothing else could serve: 429 when the
 * upstream asked the gateway to wait (a long Retry-After, an exhausted quota), else 503.
 */
export function restingError(model: ModelConfig, rest: Rest | undefined): GatewayError {
  const seconds = rest ? Math.max(1, Math.ceil((rest.until - Date.now()) / 1000)) : 1;
  const limited = rest?.reason === 'retry-after' || rest?.reason === 'quota';
  return new GatewayError({
    status: limited ? 429 : 503,
    type: limited ? 'rate_limit_exceeded' : 'service_unavailable',
    reason: 'deployments_resting',
    message: `every deployment of ${model.id} is resting${rest ? ` (${WHY[rest.reason]})` : ''}: retry in ${seconds} s`,
    retryable: true,
    headers: { 'retry-after': String(seconds) },
  });
}

export function routingTimeout(timeoutMs: number): GatewayError {
  return new GatewayError({
    status: 504,
    type: 'timeout_error',
    reason: 'routing_timeout',
    message: `no upstream answered within the gateway's routing timeout (${Math.round(timeoutMs / 1000)} s, every attempt included)`,
    retryable: true,
  });
}
