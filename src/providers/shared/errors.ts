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
  /** AWS's error name (`x-amzn-errortype`, before its colon), when the upstream is an AWS service. */
  errorType?: string;
  /** The provider's settings an administrator must check when its credentials are refused. */
  credentials?: string;
}

/** AWS's names for a request whose credentials or signature were refused. */
const AWS_CREDENTIAL_ERRORS = new Set(['InvalidSignatureException', 'UnrecognizedClientException', 'ExpiredTokenException', 'IncompleteSignatureException', 'MissingAuthenticationTokenException', 'InvalidClientTokenId', 'SignatureDoesNotMatch']);

/** The error name an AWS service puts in `x-amzn-errortype` (`Name:namespace`, or `Name`). */
export function awsErrorType(headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
  const value = headerValue(headers['x-amzn-errortype']);
  if (!value) return undefined;
  const name = value.split(':')[0]?.trim();
  return name ? name : undefined;
}

/** The settings that hold a provider type's credentials, for the message when they are refused. */
export function credentialSettings(type: string): string {
  if (type === 'bedrock') return 'access_key_id and secret_access_key (or api_key)';
  if (type === 'vertex') return 'credentials (the service account and its roles)';
  return 'api_key';
}

export function upstreamHttpError(provider: string, answer: UpstreamErrorAnswer): GatewayError {
  const { status, retryAfterMs } = answer;
  const detail = answer.message ? `: ${truncate(answer.message)}` : '';
  const upstream: UpstreamFailure = { kind: 'http', status };
  if (retryAfterMs !== undefined) upstream.retryAfterMs = retryAfterMs;
  const code = errorCode(answer.body);
  const aws = answer.errorType;
  if (aws !== undefined) {
    const refused = awsRefusal(provider, aws, answer, upstream, detail);
    if (refused) return refused;
  }
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
  if (status === 404 && /^Publisher Model .* (was not found|not found)/.test(answer.message ?? '')) {
    // Vertex: the project cannot reach the model there (not enabled, another region): the configuration's mistake.
    upstream.misconfigured = true;
    return new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_model_not_found', message: `${provider} has no such model for the project in its region: an administrator must check the model's upstream_model, the provider's region and the model's enablement`, upstream });
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
      // Not the upstream's words: they may quote the credential.
      message: `${provider} refused the gateway's credentials (HTTP ${status}): an administrator must check the provider's ${answer.credentials ?? 'api_key'}`,
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

/** AWS's answers that its status alone does not classify right. */
function awsRefusal(provider: string, name: string, answer: UpstreamErrorAnswer, upstream: UpstreamFailure, detail: string): GatewayError | undefined {
  if (AWS_CREDENTIAL_ERRORS.has(name)) {
    // The router rests a refused credential as it rests a refused key.
    upstream.status = 401;
    return new GatewayError({
      status: 502,
      type: 'upstream_error',
      reason: 'upstream_auth_failed',
      // AWS's name, not its words: a signature mismatch quotes the canonical request (with any session token).
      message: `${provider} refused the gateway's AWS credentials (${name}): an administrator must check the provider's ${answer.credentials ?? 'credentials'}`,
      upstream,
    });
  }
  if (name === 'AccessDeniedException') {
    upstream.misconfigured = true;
    return new GatewayError({
      status: 502,
      type: 'upstream_error',
      reason: 'upstream_access_denied',
      // Not AWS's words: they name the account and the role.
      message: `${provider} denied access (${name}): an administrator must grant the credentials bedrock:InvokeModel on the model and enable the model in Bedrock's model access`,
      upstream,
    });
  }
  if (name === 'ResourceNotFoundException' || (name === 'ValidationException' && /model identifier is invalid|model (id|identifier).*(not (found|supported))|on-demand throughput isn.t supported/i.test(answer.message ?? ''))) {
    // The model's upstream_model names no model (or a model only an inference profile serves): the configuration's mistake.
    upstream.misconfigured = true;
    return new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_model_not_found', message: `${provider} does not serve that model${detail}: an administrator must check the model's upstream_model`, upstream });
  }
  if (name === 'ServiceQuotaExceededException') {
    // A 400 from AWS, but the account's quota, not the request: another deployment may serve it.
    upstream.status = 429;
    upstream.quota = true;
    return new GatewayError({ status: 429, type: 'rate_limit_exceeded', reason: 'upstream_quota_exhausted', message: `${provider} says the account's quota is exhausted${detail}`, retryable: true, upstream });
  }
  if (name === 'ModelNotReadyException' || name === 'ServiceUnavailableException') {
    return new GatewayError({
      status: 503,
      type: 'upstream_error',
      reason: 'upstream_unavailable',
      message: `${provider} cannot serve the model right now (${name}${detail})`,
      retryable: true,
      headers: answer.retryAfterMs !== undefined ? { 'retry-after': String(Math.max(1, Math.ceil(answer.retryAfterMs / 1000))) } : {},
      upstream,
    });
  }
  return undefined;
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
