import type { KeyKind } from '../core/keys.js';
import type { ReadBarrier } from './barrier.js';
import type { Db } from './db.js';

/**
 * API keys (`sk-`) and management keys (`akm-`) share one shape; management keys have no
 * rate limit or budget (those columns read as null / 0 for them).
 */
export interface KeyRecord {
  kind: KeyKind;
  id: string;
  accountId: string;
  name: string;
  keyHash: string;
  maskedKey: string;
  rateLimit: number | null;
  budgetMicros: number | null;
  spentMicros: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
  createdAt: number;
  /** Whether the response cache serves and stores this key's calls (API keys; management keys: true). */
  cache: boolean;
}

/** A key row, as both backends read it (`cache` is 0/1 in SQLite, a boolean in PostgreSQL). */
export interface KeyRow {
  id: string;
  account_id: string;
  name: string;
  key_hash: string;
  masked_key: string;
  rate_limit: number | null;
  budget_micros: number | null;
  spent_micros: number;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
  created_at: number;
  cache: number | boolean;
}

export interface NewKey {
  id: string;
  accountId: string;
  name: string;
  keyHash: string;
  maskedKey: string;
  rateLimit?: number;
  budgetMicros?: number | null;
  expiresAt: number | null;
  now: number;
  cache?: boolean;
}

export interface KeyChanges {
  name?: string;
  rateLimit?: number;
  budgetMicros?: number | null;
  expiresAt?: number | null;
  cache?: boolean;
}

const TABLE: Record<KeyKind, string> = { api: 'api_keys', management: 'management_keys' };
const COLUMNS: Record<KeyKind, string> = {
  api: '*',
  management: 'id, account_id, name, key_hash, masked_key, NULL AS rate_limit, NULL AS budget_micros, 0 AS spent_micros, expires_at, revoked_at, last_used_at, created_at, 1 AS cache',
};

export class KeysRepo {
  private readonly table: string;
  private readonly insertStmt;
  private readonly byIdStmt;
  private readonly byHashStmt;
  private readonly byAccountStmt;
  private readonly revokeStmt;
  private readonly touchStmt;

  constructor(
    private readonly db: Db,
    readonly kind: KeyKind,
    private readonly barrier?: ReadBarrier,
  ) {
    this.table = TABLE[kind];
    const cols = COLUMNS[kind];
    this.insertStmt =
      kind === 'api'
        ? db.prepare(
            `INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, budget_micros, expires_at, created_at, cache)
             VALUES (@id, @account_id, @name, @key_hash, @masked_key, @rate_limit, @budget_micros, @expires_at, @now, @cache)`,
          )
        : db.prepare(
            `INSERT INTO management_keys (id, account_id, name, key_hash, masked_key, expires_at, created_at)
             VALUES (@id, @account_id, @name, @key_hash, @masked_key, @expires_at, @now)`,
          );
    this.byIdStmt = db.prepare(`SELECT ${cols} FROM ${this.table} WHERE id = ?`);
    this.byHashStmt = db.prepare(`SELECT ${cols} FROM ${this.table} WHERE key_hash = ?`);
    this.byAccountStmt = db.prepare(`SELECT ${cols} FROM ${this.table} WHERE account_id = ? ORDER BY created_at, id`);
    this.revokeStmt = db.prepare(`UPDATE ${this.table} SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`);
    this.touchStmt = db.prepare(`UPDATE ${this.table} SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?`);
  }

  insert(key: NewKey): KeyRecord {
    const params: Record<string, unknown> = {
      id: key.id,
      account_id: key.accountId,
      name: key.name,
      key_hash: key.keyHash,
      masked_key: key.maskedKey,
      expires_at: key.expiresAt,
      now: key.now,
    };
    if (this.kind === 'api') {
      params.rate_limit = key.rateLimit ?? 10_000;
      params.budget_micros = key.budgetMicros ?? null;
      params.cache = key.cache === false ? 0 : 1;
    }
    this.insertStmt.run(params);
    return this.byId(key.id) as KeyRecord;
  }

  /** Passes the read barrier: `spentMicros` includes calls settled but not yet applied. */
  byId(id: string): KeyRecord | undefined {
    this.barrier?.pass();
    const row = this.byIdStmt.get(id) as KeyRow | undefined;
    return row && this.toRecord(row);
  }

  byHash(hash: string): KeyRecord | undefined {
    const row = this.byHashStmt.get(hash) as KeyRow | undefined;
    return row && this.toRecord(row);
  }

  listByAccount(accountId: string): KeyRecord[] {
    this.barrier?.pass();
    return (this.byAccountStmt.all(accountId) as KeyRow[]).map((row) => this.toRecord(row));
  }

  update(id: string, changes: KeyChanges): KeyRecord | undefined {
    this.barrier?.pass();
    const sets: string[] = [];
    const params: Record<string, unknown> = { id };
    if (changes.name !== undefined) {
      sets.push('name = @name');
      params.name = changes.name;
    }
    if (changes.expiresAt !== undefined) {
      sets.push('expires_at = @expires_at');
      params.expires_at = changes.expiresAt;
    }
    if (this.kind === 'api') {
      if (changes.rateLimit !== undefined) {
        sets.push('rate_limit = @rate_limit');
        params.rate_limit = changes.rateLimit;
      }
      if (changes.budgetMicros !== undefined) {
        sets.push('budget_micros = @budget_micros');
        params.budget_micros = changes.budgetMicros;
      }
      if (changes.cache !== undefined) {
        sets.push('cache = @cache');
        params.cache = changes.cache ? 1 : 0;
      }
    }
    if (sets.length > 0) this.db.prepare(`UPDATE ${this.table} SET ${sets.join(', ')} WHERE id = @id`).run(params);
    return this.byId(id);
  }

  /** Sets revoked_at once; revoking again keeps the first time. */
  revoke(id: string, now: number): KeyRecord | undefined {
    this.revokeStmt.run(now, id);
    return this.byId(id);
  }

  /** Records last use times collected in memory (see KeyUsageTracker), in one transaction. */
  touchMany(entries: Iterable<[string, number]>): void {
    this.db.transaction(() => {
      for (const [id, at] of entries) this.touchStmt.run(at, id);
    })();
  }

  private toRecord(row: KeyRow): KeyRecord {
    return toKeyRecord(this.kind, row);
  }
}

export function toKeyRecord(kind: KeyKind, row: KeyRow): KeyRecord {
  return {
    kind,
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    keyHash: row.key_hash,
    maskedKey: row.masked_key,
    rateLimit: row.rate_limit,
    budgetMicros: row.budget_micros,
    spentMicros: row.spent_micros,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
    createdAt: row.created_at,
    cache: row.cache !== 0 && row.cache !== false,
  };
}

export type KeyStatus = 'active' | 'expired' | 'revoked' | 'exhausted';

export function keyStatus(key: KeyRecord, now: number): KeyStatus {
  if (key.revokedAt !== null) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  if (key.budgetMicros !== null && key.spentMicros >= key.budgetMicros) return 'exhausted';
  return 'active';
}
