import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';

/** Session tokens: HS256 JWTs naming the account, for the `/api/` endpoints. */

const ISSUER = 'llm-gateway';
const AUDIENCE = 'session';

export class SessionTokens {
  constructor(
    private readonly secret: string,
    readonly ttlSeconds: number,
  ) {}

  issue(accountId: string): string {
    return jwt.sign({}, this.secret, { algorithm: 'HS256', subject: accountId, issuer: ISSUER, audience: AUDIENCE, expiresIn: this.ttlSeconds });
  }

  /** The account id the token names, or undefined for a bad, foreign or expired token. */
  verify(token: string): string | undefined {
    try {
      const payload = jwt.verify(token, this.secret, { algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE });
      return typeof payload === 'object' && typeof payload.sub === 'string' ? payload.sub : undefined;
    } catch {
      return undefined;
    }
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
