import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
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

export class SessionTokens {
  constructor(
    private readonly secret: string,
    readonly ttlSeconds: number,
  ) {}

  async issue(accountId: string): Promise<string> {
    const jwt = await loadJwt();
    return jwt.sign({}, this.secret, { algorithm: 'HS256', subject: accountId, issuer: ISSUER, audience: AUDIENCE, expiresIn: this.ttlSeconds });
  }

  /** The account id the token names, or undefined for a bad, foreign or expired token. */
  async verify(token: string): Promise<string | undefined> {
    const jwt = await loadJwt();
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
