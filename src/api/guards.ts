import type { IncomingMessage } from 'node:http';
import type { App } from '../app.js';
import { errors } from '../core/errors.js';
import { keyKindOf } from '../core/keys.js';
import { readCookie } from '../http/cookies.js';
import type { RequestContext } from '../http/server.js';
import type { Account } from '../store/accounts.js';
import type { KeyRecord } from '../store/keys.js';

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

function accountOf(app: App, key: KeyRecord): Account {
  const account = app.accounts.get(key.accountId);
  // A key always has its account (foreign key); this guards a hand-edited database.
  if (!account) throw key.kind === 'api' ? errors.invalidApiKey() : errors.invalidManagementKey();
  return account;
}

/**
 * For `/v1/*`: an `sk-` key (from the memory cache on the hot path: no store read; the
 * gateway reads the account's balance itself when it admits a call). A valid `akm-` key gets
 * 403, anything else 401.
 */
export function requireApiKey(app: App, ctx: RequestContext): KeyRecord {
  const credential = presentedCredential(ctx.req);
  if (!credential) throw errors.missingCredentials('Authorization: Bearer sk-… or x-api-key: sk-…');
  if (keyKindOf(credential) === 'management') {
    app.keyAuth.management.authenticate(credential, false);
    throw errors.managementKeyOnInference();
  }
  const key = app.keyAuth.api.authenticate(credential);
  ctx.logFields.key_id = key.id;
  ctx.logFields.account_id = key.accountId;
  return key;
}

/** For `/api/management/*`: an `akm-` key. A valid `sk-` key gets 403, anything else 401. */
export function requireManagementKey(app: App, ctx: RequestContext): KeyPrincipal {
  const credential = presentedCredential(ctx.req);
  if (!credential) throw errors.missingCredentials('Authorization: Bearer akm-…');
  if (keyKindOf(credential) === 'api') {
    app.keyAuth.api.authenticate(credential, false);
    throw errors.apiKeyOnManagement();
  }
  const key = app.keyAuth.management.authenticate(credential);
  ctx.logFields.mgmt_key_id = key.id;
  ctx.logFields.account_id = key.accountId;
  return { account: accountOf(app, key), key };
}

/** For the session endpoints: the `token` cookie or a bearer JWT. */
export async function requireSession(app: App, ctx: RequestContext): Promise<Account> {
  const bearer = presentedCredential(ctx.req);
  if (bearer && keyKindOf(bearer) !== null) throw errors.keyOnSessionEndpoint();
  const token = bearer ?? readCookie(ctx.req.headers.cookie, 'token');
  if (!token) throw errors.missingCredentials('the session cookie token or Authorization: Bearer <session token>');
  const accountId = await app.sessions.verify(token);
  const account = accountId === undefined ? undefined : app.accounts.get(accountId);
  if (!account) throw errors.invalidSession();
  ctx.logFields.account_id = account.id;
  return account;
}
