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
  /** The catalog ids, aliases and patterns the key may call; empty: every model (API keys). */
  models: readonly string[];
  /** The addresses and CIDRs the key may be used from; empty: anywhere (API keys). */
  allowedIps: readonly string[];
  /** Calls in flight at once; null: no limit (API keys). */
  maxParallel: number | null;
  /** Tokens (input + output) per minute; null: no limit (API keys). */
  tpmLimit: number | null;
  /** The period `budgetMicros` renews over (core/periods.ts); null: the budget is for the key's life. */
  budgetPeriod: string | null;
  /** When the key's current budget period began (0: none yet) and its lifetime spend then. */
  periodStart: number;
  periodBaseMicros: number;
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
  /** JSON arrays of strings, NULL when unset. */
  models: string | null;
  allowed_ips: string | null;
  max_parallel: number | null;
  tpm_limit: number | null;
  budget_period: string | null;
  period_start: number;
  period_base_micros: number;
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
  models?: readonly string[];
  allowedIps?: readonly string[];
  maxParallel?: number | null;
  tpmLimit?: number | null;
  budgetPeriod?: string | null;
}

export interface KeyChanges {
  name?: string;
  rateLimit?: number;
  budgetMicros?: number | null;
  expiresAt?: number | null;
  cache?: boolean;
  /** [] clears. */
  models?: readonly string[];
  allowedIps?: readonly string[];
  /** null clears. */
  maxParallel?: number | null;
  tpmLimit?: number | null;
  /** null clears; a change starts the period over (at the next call). */
  budgetPeriod?: string | null;
}

/** A list column's text: NULL for an empty list. */
export function listColumn(list: readonly string[] | undefined): string | null {
  return list && list.length > 0 ? JSON.stringify(list) : null;
}

function listOf(text: string | null | undefined): readonly string[] {
  if (!text) return EMPTY;
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? Object.freeze(parsed.filter((item): item is string => typeof item === 'string')) : EMPTY;
  } catch {
    return EMPTY;
  }
}

const EMPTY: readonly string[] = Object.freeze([]);

const TABLE: Record<KeyKind, string> = { api: 'api_keys', management: 'management_keys' };
const COLUMNS: Record<KeyKind, string> = {
  api: '*',
  management: 'id, account_id, name, key_hash, masked_key, NULL AS rate_limit, NULL AS budget_micros, 0 AS spent_micros, expires_at, revoked_at, last_used_at, created_at, 1 AS cache, NULL AS models, NULL AS allowed_ips, NULL AS max_parallel, NULL AS tpm_limit, NULL AS budget_period, 0 AS period_start, 0 AS period_base_micros',
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
            `INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, budget_micros, expires_at, created_at, cache, models, allowed_ips, max_parallel, tpm_limit, budget_period)
             VALUES (@id, @account_id, @name, @key_hash, @masked_key, @rate_limit, @budget_micros, @expires_at, @now, @cache, @models, @allowed_ips, @max_parallel, @tpm_limit, @budget_period)`,
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
      params.models = listColumn(key.models);
      params.allowed_ips = listColumn(key.allowedIps);
      params.max_parallel = key.maxParallel ?? null;
      params.tpm_limit = key.tpmLimit ?? null;
      params.budget_period = key.budgetPeriod ?? null;
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
      if (changes.models !== undefined) {
        sets.push('models = @models');
        params.models = listColumn(changes.models);
      }
      if (changes.allowedIps !== undefined) {
        sets.push('allowed_ips = @allowed_ips');
        params.allowed_ips = listColumn(changes.allowedIps);
      }
      if (changes.maxParallel !== undefined) {
        sets.push('max_parallel = @max_parallel');
        params.max_parallel = changes.maxParallel;
      }
      if (changes.tpmLimit !== undefined) {
        sets.push('tpm_limit = @tpm_limit');
        params.tpm_limit = changes.tpmLimit;
      }
      if (changes.budgetPeriod !== undefined) {
        // A changed period starts over (SET reads the old budget_period); the same one sent again keeps its spend.
        sets.push('budget_period = @budget_period', 'period_start = CASE WHEN budget_period IS @budget_period THEN period_start ELSE 0 END');
        params.budget_period = changes.budgetPeriod;
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
    models: listOf(row.models),
    allowedIps: listOf(row.allowed_ips),
    maxParallel: row.max_parallel ?? null,
    tpmLimit: row.tpm_limit ?? null,
    budgetPeriod: row.budget_period ?? null,
    periodStart: row.period_start ?? 0,
    periodBaseMicros: row.period_base_micros ?? 0,
  };
}

export type KeyStatus = 'active' | 'expired' | 'revoked' | 'exhausted';

/** `spentMicros`: the spend in the budget's current period (default: the key's lifetime spend). */
export function keyStatus(key: KeyRecord, now: number, spentMicros = key.spentMicros): KeyStatus {
  if (key.revokedAt !== null) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  if (key.budgetMicros !== null && spentMicros >= key.budgetMicros) return 'exhausted';
  return 'active';
}
