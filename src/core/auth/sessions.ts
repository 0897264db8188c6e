import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { default as Jwt } from 'jsonwebtoken';

/**
 * Session tokens: HS256 JWTs naming the account, for the `/api/` endpoints. jsonwebtoken
 * (~11 MB of heap with its dependencies) is loaded on the first session call, so a daemon
 * that only serves API keys never pays for it.
 */

const ISSUER = 'llm-gateway';
const AUDIENCE = 'session';

let jwtModule: Promise<typeof Jwt> | undefined;
const loadJwt = (): Promise<typeof Jwt> => (jwtModule ??= import('jsonwebtoken').then((m) => m.default));

/** A verified session: whose it is, the token's id and when it expires. */
export interface Session {
  accountId: string;
  /** The token's id (`jti`): what logout revokes and what the CSRF token is bound to. */
  id: string;
  expiresAt: number;
}

export type SessionCheck = { ok: true; session: Session } | { ok: false; reason: 'expired' | 'invalid' };

export class SessionTokens {
  /**
   * The secret as a KeyObject: given a string, jsonwebtoken first tries it as a PEM public key
   * (createPublicKey, which throws), and that attempt cost ~330 µs of every session check
   * against ~8 µs for the HMAC itself.
   */
  private readonly key: KeyObject;

  constructor(
    private readonly secret: string,
    readonly ttlSeconds: number,
  ) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  async issue(accountId: string): Promise<{ token: string; session: Session }> {
    const jwt = await loadJwt();
    const id = randomBytes(16).toString('base64url');
    const token = jwt.sign({}, this.key, { algorithm: 'HS256', subject: accountId, issuer: ISSUER, audience: AUDIENCE, expiresIn: this.ttlSeconds, jwtid: id });
    return { token, session: { accountId, id, expiresAt: Date.now() + this.ttlSeconds * 1000 } };
  }

  /** The session a token carries; `expired` when it ran out, `invalid` for a bad or foreign token. */
  async verify(token: string): Promise<SessionCheck> {
    const jwt = await loadJwt();
    try {
      const payload = jwt.verify(token, this.key, { algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE });
      if (typeof payload !== 'object' || typeof payload.sub !== 'string') return { ok: false, reason: 'invalid' };
      // Tokens issued before sessions had ids are bound to their issue time instead.
      const id = typeof payload.jti === 'string' ? payload.jti : `iat:${payload.sub}:${payload.iat ?? 0}`;
      return { ok: true, session: { accountId: payload.sub, id, expiresAt: (payload.exp ?? 0) * 1000 } };
    } catch (error) {
      return { ok: false, reason: (error as Error).name === 'TokenExpiredError' ? 'expired' : 'invalid' };
    }
  }

  /**
   * The CSRF token of a session: an HMAC of its id, so it needs no storage, differs per
   * session and cannot be made without the secret. Cookie-authenticated writes must send it.
   */
  csrfToken(session: Session): string {
    return createHmac('sha256', this.secret).update(`csrf:${session.id}`).digest('base64url');
  }

  csrfMatches(session: Session, presented: string): boolean {
    const expected = Buffer.from(this.csrfToken(session));
    const given = Buffer.from(presented);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

/**
 * The configured secret, or one generated on first start and kept (mode 0600) next to the
 * database, so sessions survive restarts. An in-memory database gets a per-process secret.
 */
export function resolveJwtSecret(configured: string | undefined, databasePath: string): string {
  if (configured) return configured;
  if (databasePath === ':memory:') return randomBytes(32).toString('hex');
  const file = join(dirname(databasePath), 'jwt-secret');
  if (existsSync(file)) {
    const secret = readFileSync(file, 'utf8').trim();
    if (secret.length >= 32) return secret;
  }
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomBytes(32).toString('hex');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
