import { GatewayError } from '../../core/errors.js';

/**
 * Upstream failures, normalized once for every family: the client learns what it can act on
 * and never sees the gateway's provider key.
 */

export function upstreamHttpError(provider: string, status: number, upstreamMessage: string | undefined, retryAfter?: string): GatewayError {
  const detail = upstreamMessage ? `: ${truncate(upstreamMessage)}` : '';
  if (status === 400 || status === 404 || status === 409 || status === 413 || status === 422) {
    return new GatewayError({
      status: status === 413 ? 413 : 400,
      type: 'invalid_request_error',
      reason: 'upstream_invalid_request',
      message: `${provider} rejected the request${detail}`,
    });
  }
  if (status === 401 || status === 403) {
    return new GatewayError({
      status: 502,
      type: 'upstream_error',
      reason: 'upstream_auth_failed',
      message: `${provider} refused the gateway's credentials (HTTP ${status}): an administrator must check the provider's api_key`,
    });
  }
  if (status === 429) {
    return new GatewayError({
      status: 429,
      type: 'rate_limit_exceeded',
      reason: 'upstream_rate_limited',
      message: `${provider} is rate limiting the gateway${detail}`,
      retryable: true,
      headers: retryAfter ? { 'retry-after': retryAfter } : {},
    });
  }
  if (status === 408 || status === 504) return upstreamTimeout(provider, 'the response');
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    reason: 'upstream_error',
    message: `${provider} failed (HTTP ${status})${detail}`,
    retryable: true,
  });
}

export function upstreamTimeout(provider: string, what: string): GatewayError {
  return new GatewayError({ status: 504, type: 'timeout_error', reason: 'upstream_timeout', message: `${provider} timed out waiting for ${what}`, retryable: true });
}

export function upstreamBroken(provider: string, what: string): GatewayError {
  return new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_connection_failed', message: `${provider}: ${what}`, retryable: true });
}

export function upstreamMalformed(provider: string, what: string): GatewayError {
  return new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_malformed_response', message: `${provider} sent ${what}` });
}

/** An error event inside an upstream stream (after its headers). */
export function upstreamStreamError(provider: string, message: string | undefined): GatewayError {
  return new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_stream_error', message: `${provider} failed mid-stream${message ? `: ${truncate(message)}` : ''}`, retryable: true });
}

function truncate(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
