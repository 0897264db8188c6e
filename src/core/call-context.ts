import type { CallSignal } from './abort.js';
import type { KeyPolicy } from './key-policy.js';
import type { ChatRequest } from './canonical.js';
import type { Observation } from './telemetry/observation.js';

/**
 * What every part of a call shares, above the gateway's services: who calls (the context) and
 * a decoded chat call (the draft). Here, not in core/gateway/, so that core/cache reads them
 * without depending on the services that use the cache.
 */

/** A decoded chat call before the gateway resolved its model and output limit. */
export interface ChatDraft extends Omit<ChatRequest, 'model' | 'upstreamModel' | 'maxTokens'> {
  model: string;
  maxTokens?: number;
  /** The client's name for the output limit (max_tokens, max_completion_tokens, max_output_tokens), for messages. */
  maxTokensField?: string;
  /** Request fields the ingress accepted but no provider can act on. */
  ignoredParams?: string[];
  /** Hosted tools (by type) left out for an upstream that cannot run them: `x-gateway-dropped-tools`. */
  droppedTools?: string[];
  /** `no_cache: true`, or the `x-gateway-cache: no-cache` header: neither read nor write the response cache. */
  noCache?: boolean;
  /** Models to fall back to, in order (the body's `models`, OpenRouter's convention). */
  fallbacks?: string[];
  /**
   * A max_tokens above the model's output limit is lowered to the limit instead of refused
   * (the messages format, where the field is required and clients set it high; or
   * `routing.clamp_max_tokens`). Admission decides, per model tried.
   */
  clampMaxTokens?: boolean;
}

/** Who calls and how; the gateway never sees the HTTP request itself. */
export interface CallContext {
  requestId: string;
  endpoint: string;
  accountId: string;
  apiKeyId: string;
  rateLimit: number;
  /** The key's tokens per minute (tpm_limit), when it has one. */
  tpmLimit?: number;
  /** Aborted when the client goes away. */
  signal: CallSignal;
  startedAt: number;
  /** false: the key opted out of the response cache. */
  cache?: boolean;
  /** Part of another call (the semantic cache's embedding lookup): takes no rate-limit slot. */
  unmetered?: boolean;
  /** Models to fall back to, in order, from the `x-gateway-fallbacks` header. */
  fallbacks?: readonly string[];
  /** The alias the client named the model by (`aliases:` in the config), resolved at the ingress; recorded on the usage row. */
  requestedModel?: string;
  /** The key's models list (and addresses), when it has one: every model of the call is checked against it. */
  policy?: KeyPolicy;
  /** The request's metrics and traces (the HTTP server's): attempts, first tokens and settlement report to it. */
  observation?: Observation;
}

