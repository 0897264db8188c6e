import jwt from 'jsonwebtoken';
import type { ServiceAccount } from '../../config/types.js';
import { CallSignal } from '../../core/abort.js';
import { CallAborted, GatewayError } from '../../core/errors.js';
import type { Authenticator, TokenPost } from '../types.js';

/** Google's scope for Vertex AI (and every Cloud API). */
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** A token is used until this long before it expires (Google's own libraries refresh 5 minutes early). */
const REFRESH_EARLY_MS = 5 * 60_000;
/** The assertion's lifetime: Google takes at most an hour. */
const ASSERTION_SECONDS = 3600;

/**
 * OAuth2 access tokens for a service account (RFC 7523, Google's "service account" flow): an
 * RS256 JWT assertion signed with the key file's private key, audience and destination the key
 * file's `token_uri` as written (google-auth-library would post to Google's own endpoint
 * whatever the file says), exchanged for a bearer token. One exchange at a time per provider,
 * its token shared by every call until shortly before it expires; forgotten when the upstream
 * answers 401, and the call asks once more.
 */
export class ServiceAccountTokens implements Authenticator {
  private token: { value: string; refreshAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly provider: string,
    private readonly account: ServiceAccount,
    private readonly post: TokenPost,
    private readonly now: () => number = Date.now,
  ) {}

  async headers(_request: unknown, signal: CallSignal): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.current(signal)}` };
  }

  /** Forgets the token the refused request carried (not a newer one another call already fetched). */
  refused(sent: Readonly<Record<string, string>>): boolean {
    if (this.token && sent.authorization === `Bearer ${this.token.value}`) this.token = undefined;
    return true;
  }

  private current(signal: CallSignal): Promise<string> {
    const token = this.token;
    if (token && this.now() < token.refreshAt) return Promise.resolve(token.value);
    // Calls waiting for the exchange share it, which runs on a signal of its own (one caller
    // leaving does not fail the others); a failed one is not cached.
    this.pending ??= this.exchange(new CallSignal()).finally(() => {
      this.pending = undefined;
    });
    return untilAborted(this.pending, signal);
  }

  private async exchange(signal: CallSignal): Promise<string> {
    const issuedAt = Math.floor(this.now() / 1000);
    const assertion = jwt.sign({ iss: this.account.clientEmail, sub: this.account.clientEmail, scope: SCOPE, aud: this.account.tokenUri, iat: issuedAt, exp: issuedAt + ASSERTION_SECONDS }, this.account.privateKey, {
      algorithm: 'RS256',
      ...(this.account.privateKeyId ? { keyid: this.account.privateKeyId } : {}),
    });
    const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString();
    const answer = await this.post(this.account.tokenUri, form, signal);
    let body: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = JSON.parse(answer.text);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    if (answer.status !== 200 || typeof body?.access_token !== 'string') {
      const said = typeof body?.error === 'string' ? `: ${body.error}${typeof body.error_description === 'string' ? ` (${body.error_description.slice(0, 300)})` : ''}` : '';
      const refused = answer.status === 400 || answer.status === 401 || answer.status === 403;
      throw new GatewayError({
        status: 502,
        type: 'upstream_error',
        reason: refused ? 'upstream_auth_failed' : 'upstream_error',
        // The account's email is the operator's to see (in the key file), not an API client's.
        message: refused
          ? `${this.provider} could not get an access token for its service account (HTTP ${answer.status}${said}): an administrator must check the provider's credentials`
          : `${this.provider}'s token endpoint failed (HTTP ${answer.status}${said})`,
        retryable: !refused,
        // A refused assertion is the credential's fault, as a 401 from the API would be.
        upstream: { kind: 'http', status: refused ? 401 : answer.status },
      });
    }
    const lifetime = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : 3600_000;
    // A short-lived token is used for half its life rather than not at all.
    this.token = { value: body.access_token, refreshAt: this.now() + Math.max(lifetime - REFRESH_EARLY_MS, lifetime / 2) };
    return body.access_token;
  }
}

/** The shared exchange, or CallAborted as soon as this caller leaves. */
function untilAborted(pending: Promise<string>, signal: CallSignal): Promise<string> {
  if (signal.aborted) return Promise.reject(new CallAborted('client disconnected'));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(new CallAborted('client disconnected'));
    signal.once('abort', onAbort);
    pending.then(
      (token) => {
        signal.off('abort', onAbort);
        resolve(token);
      },
      (error: unknown) => {
        signal.off('abort', onAbort);
        reject(error);
      },
    );
  });
}
