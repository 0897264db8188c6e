import type { Db } from './db.js';

/**
 * Sessions ended before their token expired (logout): the token's id until the token's own
 * expiry, after which the JWT is refused anyway and the row is purged.
 */
export class SessionsRepo {
  private readonly revokeStmt;
  private readonly revokedStmt;
  private readonly purgeStmt;

  constructor(db: Db) {
    this.revokeStmt = db.prepare('INSERT OR IGNORE INTO session_revocations (jti, account_id, expires_at) VALUES (?, ?, ?)');
    this.revokedStmt = db.prepare('SELECT 1 FROM session_revocations WHERE jti = ?').pluck();
    this.purgeStmt = db.prepare('DELETE FROM session_revocations WHERE expires_at <= ?');
  }

  revoke(jti: string, accountId: string, expiresAt: number): void {
    this.revokeStmt.run(jti, accountId, expiresAt);
  }

  isRevoked(jti: string): boolean {
    return this.revokedStmt.get(jti) !== undefined;
  }

  purge(now: number): number {
    return this.purgeStmt.run(now).changes;
  }
}
