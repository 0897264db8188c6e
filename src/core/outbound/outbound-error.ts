/**
 * Why a fetch of a caller's URL was refused or failed: the detail is for the gateway's log
 * only. Callers answer every one of these with one and the same message (see
 * src/core/gateway/images.ts), so that the answer says nothing about the operator's network.
 * Kept apart from fetch-url.ts so that callers can test for it without loading undici.
 */

export type OutboundFailureKind =
  | 'bad_url'
  | 'forbidden_scheme'
  | 'credentials'
  | 'forbidden_port'
  | 'forbidden_address'
  | 'dns_failed'
  | 'request_failed'
  | 'timeout'
  | 'aborted'
  | 'too_many_redirects'
  | 'http_status'
  | 'content_type'
  | 'too_large';

/** The kinds that are the policy refusing, as opposed to the remote end failing. */
export const POLICY_REFUSALS: ReadonlySet<OutboundFailureKind> = new Set(['forbidden_scheme', 'credentials', 'forbidden_port', 'forbidden_address']);

export class OutboundFetchError extends Error {
  override name = 'OutboundFetchError';

  constructor(
    readonly kind: OutboundFailureKind,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
  }
}

export function isOutboundFetchError(value: unknown): value is OutboundFetchError {
  return value instanceof OutboundFetchError;
}
