import type { IncomingMessage } from 'node:http';
import type { App } from '../app.js';
import { forwardedValue } from '../core/client-address.js';
import { errors } from '../core/errors.js';
import { KeyPolicy } from '../core/key-policy.js';
import { keyKindOf } from '../core/keys.js';
import { readCookie } from '../http/cookies.js';
import type { RequestContext } from '../http/server.js';
import type { Account } from '../store/accounts.js';
import type { KeyRecord } from '../store/keys.js';
import type { Session } from '../core/auth/sessions.js';

/**
 * Who is calling. Each surface takes exactly one kind of credential: `/v1/*` an `sk-` key,
 * `/api/management/*` an `akm-` key, the other `/api/*` endpoints a session token.
 */
export interface KeyPrincipal {
  account: Account;
  key: KeyRecord;
}

/** `Authorization: Bearer <x>` (any case of "Bearer"), else `x-api-key` (the Anthropic SDK's header). */
export function presentedCredential(req: IncomingMessage): string | undefined {
  const authorization = req.headers.authorization;
  if (authorization) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return match[1];
  }
  const apiKey = req.headers['x-api-key'];
  return typeof apiKey === 'string' && apiKey.trim() ? apiKey.trim() : undefined;
}

async function accountOf(app: App, key: KeyRecord): Promise<Account> {
  const account = await app.accounts.get(key.accountId);
  // A key always has its account (foreign key); this guards a hand-edited database.
  if (!account) throw key.kind === 'api' ? errors.invalidApiKey() : errors.invalidManagementKey();
  return account;
}

/**
 * For `/v1/*`: an `sk-` key (from the memory cache on the hot path: no store read; the
 * gateway reads the account's balance itself when it admits a call). A valid `akm-` key gets
 * 403, anything else 401.
 */
export async function requireApiKey(app: App, ctx: RequestContext): Promise<KeyRecord> {
  const credential = presentedCredential(ctx.req);
  if (!credential) throw errors.missingCredentials('Authorization: Bearer sk-… or x-api-key: sk-…');
  if (keyKindOf(credential) === 'management') {
    await app.keyAuth.management.authenticate(credential, false);
    throw errors.managementKeyOnInference();
  }
  const key = await app.keyAuth.api.authenticate(credential);
  ctx.logFields.key_id = key.id;
  ctx.logFields.account_id = key.accountId;
  // A key pinned to networks is refused from elsewhere before any other work.
  if (key.allowedIps.length > 0) KeyPolicy.of(key, app.catalog)?.checkAddress(ctx.clientIp);
  return key;
}

/**
 * For the endpoints that call a model: requireApiKey, then a slot of the key's max_parallel
 * (429 with retry-after past it), given back when the response ends however it ends.
 */
export async function requireCallingKey(app: App, ctx: RequestContext): Promise<KeyRecord> {
  const key = await requireApiKey(app, ctx);
  if (key.maxParallel === null) return key;
  let decision;
  try {
    decision = await app.parallel.acquire(key.id, key.maxParallel, ctx.requestId);
  } catch (error) {
    throw errors.limitsUnavailable(error);
  }
  const slot = decision.slot;
  if (!slot) throw errors.tooManyInFlight(key.maxParallel);
  // 'close' follows the last byte written (and a client that left): the slot is free before the
  // client can send its next call.
  if (ctx.res.destroyed) slot.release();
  else ctx.res.once('close', () => slot.release());
  return key;
}

/** For `/api/management/*`: an `akm-` key. A valid `sk-` key gets 403, anything else 401. */
export async function requireManagementKey(app: App, ctx: RequestContext): Promise<KeyPrincipal> {
  const credential = presentedCredential(ctx.req);
  if (!credential) throw errors.missingCredentials('Authorization: Bearer akm-…');
  if (keyKindOf(credential) === 'api') {
    await app.keyAuth.api.authenticate(credential, false);
    throw errors.apiKeyOnManagement();
  }
  const key = await app.keyAuth.management.authenticate(credential);
  ctx.logFields.mgmt_key_id = key.id;
  ctx.logFields.account_id = key.accountId;
  return { account: await accountOf(app, key), key };
}

/** A session endpoint's caller: the account, its session, and whether the cookie carried it. */
export interface SessionPrincipal {
  account: Account;
  session: Session;
  viaCookie: boolean;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * For the session endpoints: the `token` cookie or a bearer JWT, not logged out, not expired
 * (`session_expired`, so the dashboard can say so). A change (POST, PATCH, DELETE) made with
 * the cookie must carry the session's `X-CSRF-Token` (an HMAC of the session id): SameSite=Lax
 * does not stop a page on a sibling subdomain, and a cross-site page cannot set that header
 * without a CORS preflight the gateway never grants. A bearer token is not ambient: no check.
 */
export async function requireSessionPrincipal(app: App, ctx: RequestContext): Promise<SessionPrincipal> {
  const bearer = presentedCredential(ctx.req);
  if (bearer && keyKindOf(bearer) !== null) throw errors.keyOnSessionEndpoint();
  const cookie = bearer === undefined ? readCookie(ctx.req.headers.cookie, 'token') : undefined;
  const token = bearer ?? cookie;
  if (!token) throw errors.missingCredentials('the session cookie token or Authorization: Bearer <session token>');
  const checked = await app.sessions.verify(token);
  if (!checked.ok) throw checked.reason === 'expired' ? errors.sessionExpired() : errors.invalidSession();
  const session = checked.session;
  if (await app.store.sessions.isRevoked(session.id)) throw errors.invalidSession();
  const account = await app.accounts.get(session.accountId);
  if (!account) throw errors.invalidSession();
  const viaCookie = bearer === undefined;
  if (viaCookie && !SAFE_METHODS.has(ctx.method)) checkCsrf(app, ctx, session);
  ctx.logFields.account_id = account.id;
  return { account, session, viaCookie };
}

/** For the session endpoints: the caller's account (requireSessionPrincipal's rules). */
export async function requireSession(app: App, ctx: RequestContext): Promise<Account> {
  return (await requireSessionPrincipal(app, ctx)).account;
}

function checkCsrf(app: App, ctx: RequestContext, session: Session): void {
  refuseForeignOrigin(app, ctx);
  const header = ctx.req.headers['x-csrf-token'];
  const presented = Array.isArray(header) ? header[0] : header;
  if (!presented) throw errors.csrfFailed('no X-CSRF-Token header');
  if (!app.sessions.csrfMatches(session, presented)) throw errors.csrfFailed('a wrong X-CSRF-Token');
}

/**
 * Refuses a change whose `Origin` is not the gateway's own (the request's Host): browsers send
 * Origin on every cross-origin POST, so a foreign page is refused even before the token check.
 */
export function refuseForeignOrigin(app: App, ctx: RequestContext): void {
  const origin = ctx.req.headers.origin;
  if (origin === undefined) return;
  const host = (app.config.server.trustProxy ? forwardedValue(ctx.req.headers['x-forwarded-host']) : undefined) ?? ctx.req.headers.host;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    throw errors.csrfFailed(`a malformed Origin (${origin.slice(0, 100)})`);
  }
  const hosts = host === undefined ? [] : [host];
  // Behind a proxy that rewrites Host, server.public_url names the gateway's own origin.
  const publicUrl = app.config.server.publicUrl;
  if (publicUrl !== undefined && new URL(publicUrl).host === originHost) return;
  if (!hosts.includes(originHost)) throw errors.csrfFailed(`a request from another origin (${origin.slice(0, 100)})`);
}
