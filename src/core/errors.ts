import type { UpstreamFailure } from './routing/decide.js';

/**
 * One error class for the whole gateway, and every message string in one place.
 * Each ingress renders a GatewayError as `{error: {message, type, code, reason, param}}`:
 * `code` is the integer HTTP status (the spec's contract), `reason` the precise,
 * machine-readable cause (`insufficient_credits`, `upstream_timeout`, ...).
 */

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'method_not_allowed'
  | 'conflict_error'
  | 'request_too_large'
  | 'unsupported_media_type'
  | 'rate_limit_exceeded'
  | 'insufficient_credits'
  | 'budget_exceeded'
  | 'api_error'
  | 'service_unavailable'
  | 'overloaded'
  | 'upstream_error'
  | 'timeout_error';

/** The error object of every error response: `code` mirrors the HTTP status. */
export interface ErrorBody {
  message: string;
  type: string;
  code: number;
  reason: string;
  param: string | null;
}

export interface GatewayErrorInit {
  status: number;
  type: ErrorType;
  /** The precise cause, machine-readable; rendered as `error.reason`. */
  reason: string;
  message: string;
  param?: string | null;
  retryable?: boolean;
  headers?: Record<string, string>;
  cause?: unknown;
  /** Set on an upstream's failure: what the router reads to retry, rest or give up (src/core/routing/). */
  upstream?: UpstreamFailure;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly reason: string;
  readonly param: string | null;
  readonly retryable: boolean;
  readonly headers: Record<string, string>;
  readonly upstream: UpstreamFailure | undefined;

  constructor(init: GatewayErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'GatewayError';
    this.status = init.status;
    this.type = init.type;
    this.reason = init.reason;
    this.param = init.param ?? null;
    this.retryable = init.retryable ?? false;
    this.headers = init.headers ?? {};
    this.upstream = init.upstream;
  }

  toBody(): { error: ErrorBody } {
    return { error: { message: this.message, type: this.type, code: this.status, reason: this.reason, param: this.param } };
  }
}

/** The client went away mid-call: the call ends (billed for what was delivered), nothing is rendered. */
export class CallAborted extends Error {
  override name = 'CallAborted';
}

export function isGatewayError(value: unknown): value is GatewayError {
  return value instanceof GatewayError;
}

const invalid = (param: string | null, reason: string, message: string): GatewayError =>
  new GatewayError({ status: 400, type: 'invalid_request_error', reason, message, param });

/** Factories: every user-visible error message lives here. */
export const errors = {
  // request shape
  invalidJson: () => invalid(null, 'invalid_json', 'request body is not valid JSON'),
  bodyNotObject: () => invalid(null, 'invalid_body', 'request body must be a JSON object'),
  missingField: (field: string) => invalid(field, 'missing_field', `${field}: is required`),
  invalidField: (field: string, rule: string) => invalid(field, 'invalid_field', `${field}: ${rule}`),
  unknownField: (field: string, allowed: readonly string[]) =>
    invalid(field, 'unknown_field', `${field}: unknown field (allowed: ${allowed.join(', ')})`),
  invalidQuery: (field: string, rule: string) => invalid(field, 'invalid_query', `query parameter ${field}: ${rule}`),
  invalidHeader: (header: string, rule: string) => invalid(header, 'invalid_header', `header ${header}: ${rule}`),
  bodyTooLarge: (limit: number) =>
    new GatewayError({
      status: 413,
      type: 'request_too_large',
      reason: 'body_too_large',
      message: `request body exceeds the limit of ${limit} bytes`,
    }),
  bodyTimeout: (idleMs: number) =>
    new GatewayError({
      status: 408,
      type: 'timeout_error',
      reason: 'body_timeout',
      message: `the request body stalled: no bytes for ${idleMs} ms`,
    }),
  /** Node's HTTP parser refused the request before any route saw it (http/client-error.ts). */
  malformedRequest: (detail: string) =>
    new GatewayError({ status: 400, type: 'invalid_request_error', reason: 'malformed_request', message: `the request is not valid HTTP/1.1: ${detail}` }),
  missingHost: () => invalid('host', 'missing_host', 'header host: required in an HTTP/1.1 request'),
  headersTooLarge: (limitBytes: number) =>
    new GatewayError({
      status: 431,
      type: 'invalid_request_error',
      reason: 'headers_too_large',
      message: `the request line and headers exceed the limit of ${limitBytes} bytes`,
    }),
  chunkExtensionsTooLarge: () =>
    new GatewayError({ status: 413, type: 'request_too_large', reason: 'chunk_extensions_too_large', message: 'a chunk of the body carries more extension bytes than allowed' }),
  headersTimeout: () =>
    new GatewayError({ status: 408, type: 'timeout_error', reason: 'request_timeout', message: 'the request was not received in time (server.headers_timeout or server.request_timeout)' }),
  expectationFailed: () =>
    new GatewayError({
      status: 417,
      type: 'invalid_request_error',
      reason: 'expectation_failed',
      message: 'header expect: only 100-continue is supported',
      param: 'expect',
    }),
  unsupportedMediaType: (expected: string) =>
    new GatewayError({
      status: 415,
      type: 'unsupported_media_type',
      reason: 'unsupported_media_type',
      message: `content-type must be ${expected}`,
    }),

  // routing
  routeNotFound: (method: string, path: string) =>
    new GatewayError({
      status: 404,
      type: 'not_found_error',
      reason: 'route_not_found',
      message: `no route for ${method} ${path}`,
    }),
  methodNotAllowed: (method: string, path: string, allowed: readonly string[]) =>
    new GatewayError({
      status: 405,
      type: 'method_not_allowed',
      reason: 'method_not_allowed',
      message: `${method} is not allowed on ${path} (allowed: ${allowed.join(', ')})`,
      headers: { allow: allowed.join(', ') },
    }),
  notFound: (what: string, id: string) =>
    new GatewayError({ status: 404, type: 'not_found_error', reason: `${what}_not_found`, message: `${what.replace(/_/g, ' ')} '${id}' not found` }),

  // authentication and authorization
  missingCredentials: (expected: string) =>
    new GatewayError({
      status: 401,
      type: 'authentication_error',
      reason: 'missing_credentials',
      message: `missing credentials: send ${expected}`,
    }),
  invalidApiKey: () =>
    new GatewayError({ status: 401, type: 'authentication_error', reason: 'invalid_api_key', message: 'invalid API key' }),
  revokedApiKey: () =>
    new GatewayError({ status: 401, type: 'authentication_error', reason: 'revoked_api_key', message: 'this API key has been revoked' }),
  expiredApiKey: () =>
    new GatewayError({ status: 401, type: 'authentication_error', reason: 'expired_api_key', message: 'this API key has expired' }),
  invalidManagementKey: () =>
    new GatewayError({
      status: 401,
      type: 'authentication_error',
      reason: 'invalid_management_key',
      message: 'invalid management key',
    }),
  invalidSession: () =>
    new GatewayError({
      status: 401,
      type: 'authentication_error',
      reason: 'invalid_session',
      message: 'invalid or ended session token: log in again with POST /api/auth/login',
    }),
  sessionExpired: () =>
    new GatewayError({
      status: 401,
      type: 'authentication_error',
      reason: 'session_expired',
      message: 'the session expired: log in again with POST /api/auth/login',
    }),
  csrfFailed: (why: string) =>
    new GatewayError({
      status: 403,
      type: 'permission_error',
      reason: 'csrf_failed',
      message: `${why}: a change made with the session cookie must carry the session's X-CSRF-Token header (from GET /api/auth/me), from the gateway's own origin`,
    }),
  managementKeyOnInference: () =>
    new GatewayError({
      status: 403,
      type: 'permission_error',
      reason: 'management_key_not_allowed',
      message: 'management keys cannot make inference calls: use an sk- API key',
    }),
  apiKeyOnManagement: () =>
    new GatewayError({
      status: 403,
      type: 'permission_error',
      reason: 'api_key_not_allowed',
      message: 'API keys cannot use the management API: use an akm- management key',
    }),
  keyOnSessionEndpoint: () =>
    new GatewayError({
      status: 403,
      type: 'permission_error',
      reason: 'session_required',
      message: 'this endpoint takes a session token (cookie token or Authorization: Bearer <jwt>), not an API key',
    }),
  adminOnly: () =>
    new GatewayError({ status: 403, type: 'permission_error', reason: 'admin_only', message: 'this operation needs an admin account' }),
  badCredentials: () =>
    new GatewayError({ status: 401, type: 'authentication_error', reason: 'invalid_credentials', message: 'invalid email or password' }),
  loginThrottled: (retryAfterSeconds: number) =>
    new GatewayError({
      status: 429,
      type: 'rate_limit_exceeded',
      reason: 'too_many_login_attempts',
      message: `too many failed login attempts: try again in ${retryAfterSeconds} seconds`,
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
  /** A key's max_parallel: as many of its calls in flight as it allows. */
  tooManyInFlight: (limit: number) =>
    new GatewayError({
      status: 429,
      type: 'rate_limit_exceeded',
      reason: 'max_parallel_exceeded',
      message: `this API key allows ${limit} call${limit === 1 ? '' : 's'} in flight at once (max_parallel), and ${limit === 1 ? 'one is' : 'that many are'} running: retry when one ends`,
      retryable: true,
      headers: { 'retry-after': '1' },
    }),
  /** The shared limits store (Redis) could not answer: refuse rather than admit unchecked. */
  limitsUnavailable: (cause: unknown) =>
    new GatewayError({
      status: 503,
      type: 'service_unavailable',
      reason: 'limits_unavailable',
      message: 'the gateway cannot check rate limits and wallet holds right now (its Redis is unreachable); retry shortly',
      retryable: true,
      cause,
    }),
  signupDisabled: () =>
    new GatewayError({ status: 403, type: 'permission_error', reason: 'signup_disabled', message: 'sign-up is disabled on this gateway' }),
  /** `auth.signup.email_domains`: the address's domain is not one of them. */
  emailDomainNotAllowed: (domains: readonly string[]) =>
    new GatewayError({
      status: 403,
      type: 'permission_error',
      reason: 'email_domain_not_allowed',
      message: `email: sign-up on this gateway is limited to addresses at ${domains.join(', ')}`,
      param: 'email',
    }),
  /** Past `auth.signup.per_address` (this client) or `auth.signup.per_minute` (every client). */
  signupLimited: (scope: 'address' | 'gateway', retryAfterSeconds: number) =>
    new GatewayError({
      status: 429,
      type: 'rate_limit_exceeded',
      reason: scope === 'address' ? 'too_many_signups_from_address' : 'too_many_signups',
      message:
        scope === 'address'
          ? `too many sign-ups from this address: try again in ${retryAfterSeconds} seconds`
          : `too many sign-ups on this gateway right now: try again in ${retryAfterSeconds} seconds`,
      retryable: true,
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
  /** The shared sign-up counters (Redis) could not be read: refuse rather than sign up unchecked. */
  loginThrottleUnavailable: (cause: unknown) =>
    new GatewayError({
      status: 503,
      type: 'service_unavailable',
      reason: 'limits_unavailable',
      message: 'the gateway cannot check failed-login counts right now (its Redis is unreachable); retry shortly',
      retryable: true,
      headers: { 'retry-after': '1' },
      cause,
    }),
  signupLimitsUnavailable: (cause: unknown) =>
    new GatewayError({
      status: 503,
      type: 'service_unavailable',
      reason: 'limits_unavailable',
      message: 'the gateway cannot check sign-up limits right now (its Redis is unreachable); retry shortly',
      retryable: true,
      headers: { 'retry-after': '1' },
      cause,
    }),

  // conflicts
  emailTaken: (email: string) =>
    new GatewayError({ status: 409, type: 'conflict_error', reason: 'email_taken', message: `email '${email}' is already registered`, param: 'email' }),
  keyRevoked: (id: string) =>
    new GatewayError({ status: 409, type: 'conflict_error', reason: 'key_revoked', message: `key '${id}' is revoked and cannot be changed` }),
  idempotencyConflict: (reference: string) =>
    new GatewayError({
      status: 409,
      type: 'conflict_error',
      reason: 'idempotency_conflict',
      message: `idempotency key '${reference}' was already used for a different top-up`,
      param: 'reference',
    }),

  // service state
  notReady: (what: string) =>
    new GatewayError({ status: 503, type: 'service_unavailable', reason: 'not_ready', message: `${what} is not available` }),
  /** More calls in flight than `server.max_in_flight`: refused at once, before any work. */
  overloaded: () =>
    new GatewayError({
      status: 503,
      type: 'overloaded',
      reason: 'overloaded',
      message: 'the gateway is at its limit of calls in flight: retry shortly',
      retryable: true,
      headers: { 'retry-after': '1' },
    }),
  /** Every password worker busy and its queue full (core/auth/password-pool.ts): refused at once. */
  passwordQueueFull: () =>
    new GatewayError({
      status: 503,
      type: 'overloaded',
      reason: 'password_queue_full',
      message: 'too many sign-ups and logins are being checked right now: retry shortly',
      retryable: true,
      headers: { 'retry-after': '1' },
    }),
  shuttingDown: () =>
    new GatewayError({ status: 503, type: 'service_unavailable', reason: 'shutting_down', message: 'the gateway is shutting down' }),
  databaseUnavailable: () =>
    new GatewayError({ status: 503, type: 'service_unavailable', reason: 'database_unavailable', message: 'the database did not answer: retry shortly' }),
  internal: () =>
    new GatewayError({ status: 500, type: 'api_error', reason: 'internal_error', message: 'internal error' }),
};
