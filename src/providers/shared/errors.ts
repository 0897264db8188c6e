import { GatewayError } from '../../core/errors.js';
import type { UpstreamFailure } from '../../core/routing/decide.js';

/**
 * Upstream failures, normalized once for every family: the client learns what it can act on
 * and never sees the gateway's provider key.
 */

/** What an upstream's error answer says, for the client's error and for the router. */
export interface UpstreamErrorAnswer {
  status: number;
  /** The human message inside the family's error body. */
  message: string | undefined;
  /** The parsed body (for the quota check), undefined when it was not JSON. */
  body: unknown;
  /** `retry-after-ms`, else `retry-after` (seconds or an HTTP date), in ms. */
  retryAfterMs: number | undefined;
}

export function upstreamHttpError(provider: string, answer: UpstreamErrorAnswer): GatewayError {
  const { status, retryAfterMs } = answer;
  const detail = answer.message ? `: ${truncate(answer.message)}` : '';
  const upstream: UpstreamFailure = { kind: 'http', status };
  if (retryAfterMs !== undefined) upstream.retryAfterMs = retryAfterMs;
  const code = errorCode(answer.body);
  if (status === 404 && code === 'DeploymentNotFound') {
    // Azure OpenAI: the model's upstream_model names no deployment of the resource. The
    // gateway's configuration, not the client's request: another deployment may serve it.
    upstream.misconfigured = true;
    return new GatewayError({
      status: 502,
      type: 'upstream_error',
      reason: 'upstream_deployment_not_found',
      message: `${provider} has no deployment of that name${detail}: an administrator must check the model's upstream_model`,
      upstream,
    });
  }
  if (status === 400 && code === 'content_filter') {
    // Azure OpenAI's content filter refused the prompt: the client's to change, and the same
    // prompt would be refused by every deployment of the resource.
    return new GatewayError({ status: 400, type: 'invalid_request_error', reason: 'content_filter', param: 'messages', message: answer.message ? truncate(answer.message) : `${provider}'s content filter refused the prompt`, upstream });
  }
  if (status === 400 || status === 404 || status === 409 || status === 413 || status === 422) {
    return new GatewayError({
      status: status === 413 ? 413 : 400,
      type: 'invalid_request_error',
      reason: 'upstream_invalid_request',
      // The upstream's own words, unchanged (x-gateway-provider says whose): clients act on
      // them (Claude Code drops system turns on Claude's 'Unexpected role "system"').
      message: answer.message ? truncate(answer.message) : `${provider} rejected the request (HTTP ${status})`,
      upstream,
    });
  }
  if (status === 401 || status === 403) {
    return new GatewayError({
      status: 502,
      type: 'upstream_error',
      reason: 'upstream_auth_failed',
      message: `${provider} refused the gateway's credentials (HTTP ${status}): an administrator must check the provider's api_key`,
      upstream,
    });
  }
  if (status === 429) {
    if (quotaExhausted(answer.body)) upstream.quota = true;
    return new GatewayError({
      status: 429,
      type: 'rate_limit_exceeded',
      reason: upstream.quota ? 'upstream_quota_exhausted' : 'upstream_rate_limited',
      message: upstream.quota ? `${provider} says the gateway's quota or spend limit is exhausted${detail}` : `${provider} is rate limiting the gateway${detail}`,
      retryable: true,
      headers: retryAfterMs !== undefined ? { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) } : {},
      upstream,
    });
  }
  if (status === 408 || status === 504) return upstreamTimeout(provider, 'the response', upstream);
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    reason: 'upstream_error',
    message: `${provider} failed (HTTP ${status})${detail}`,
    retryable: true,
    upstream,
  });
}

/**
 * Whether a 429 says the account is out of quota or past its spend limit rather than over a
 * rate: OpenAI's `insufficient_quota` (type or code), and the wording Anthropic and
 * OpenAI-compatible vendors use for spend limits and exhausted credit.
 */
export function quotaExhausted(body: unknown): boolean {
  const error = asRecord(asRecord(body)?.error);
  if (!error) return false;
  if (error.code === 'insufficient_quota' || error.type === 'insufficient_quota') return true;
  const message = typeof error.message === 'string' ? error.message : '';
  return /spend(ing)? limit|usage limits?\b.*\bregain access|credit balance is too low|billing hard limit|insufficient (credits|balance|quota)/i.test(message);
}

/** An upstream's wait, from `retry-after-ms` (OpenAI, Azure) or `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: Readonly<Record<string, string | string[] | undefined>>, now: number): number | undefined {
  const ms = headerValue(headers['retry-after-ms']);
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  const value = headerValue(headers['retry-after']);
  if (value === undefined) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined ? undefined : text.trim();
}

export function upstreamTimeout(provider: string, what: string, upstream: UpstreamFailure = { kind: 'timeout' }): GatewayError {
  return new GatewayError({ status: 504, type: 'timeout_error', reason: 'upstream_timeout', message: `${provider} timed out waiting for ${what}`, retryable: true, upstream });
}

/** No answer: the connection could not be made or broke (`connect` for the router, as a connection timeout). */
export function upstreamBroken(provider: string, what: string): GatewayError {
  return new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_connection_failed', message: `${provider}: ${what}`, retryable: true, upstream: { kind: 'connect' } });
}

export function upstreamMalformed(provider: string, what: string): GatewayError {
  return new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_malformed_response', message: `${provider} sent ${what}`, upstream: { kind: 'malformed' } });
}

/** An error event inside an upstream stream (after its headers). */
export function upstreamStreamError(provider: string, message: string | undefined): GatewayError {
  return new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_stream_error', message: `${provider} failed mid-stream${message ? `: ${truncate(message)}` : ''}`, retryable: true, upstream: { kind: 'stream' } });
}

/** The `error.code` of an OpenAI-shaped error body (Azure puts its own codes there). */
function errorCode(body: unknown): string | undefined {
  const code = asRecord(asRecord(body)?.error)?.code;
  return typeof code === 'string' ? code : undefined;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function truncate(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
