import { errors } from '../errors.js';
import { hashKey, isWellFormedKey, KEY_LENGTH, type KeyKind } from '../keys.js';
import type { KeyRecord } from '../../store/keys.js';
import type { KeyStore } from '../../store/types.js';

/**
 * Resolves a presented key to its record. Records are cached in memory by the key's SHA-256
 * for a short time (the hot path does no avoidable I/O); this process's updates and
 * revocations invalidate at once, other daemons' through Redis pub/sub (key-invalidation.ts),
 * or within `ttlMs` without it. Last-use times are kept in
 * memory and written in batches.
 */
export class KeyAuthenticator {
  private readonly cache = new Map<string, { record: KeyRecord; cachedAt: number }>();
  private readonly lastUsed = new Map<string, number>();
  /** Told of every change this process makes (key-invalidation.ts tells the other daemons). */
  onInvalidate: ((hash: string) => void) | undefined;

  constructor(
    private readonly repo: KeyStore,
    private readonly ttlMs = 5000,
    private readonly now: () => number = Date.now,
  ) {}

  get kind(): KeyKind {
    return this.repo.kind;
  }

  /**
   * Throws 401 for a malformed, unknown, revoked or expired key. `use: false` checks a key
   * that is about to be refused for the surface (403) without recording a use.
   */
  async authenticate(presented: string, use = true): Promise<KeyRecord> {
    // Every well-formed key has one length: anything else is refused before it is hashed. The
    // full format check runs on a cache miss only: a cached hash is a stored key's own.
    if (presented.length !== KEY_LENGTH[this.repo.kind]) throw this.invalid();
    const hash = hashKey(presented);
    const now = this.now();
    let entry = this.cache.get(hash);
    if (!entry || now - entry.cachedAt > this.ttlMs) {
      if (!isWellFormedKey(this.repo.kind, presented)) throw this.invalid();
      const record = await this.repo.byHash(hash);
      if (!record) {
        this.cache.delete(hash);
        throw this.invalid();
      }
      entry = { record, cachedAt: now };
      if (this.cache.size >= 50_000) this.cache.clear();
      this.cache.set(hash, entry);
    }
    const record = entry.record;
    if (record.revokedAt !== null) throw this.repo.kind === 'api' ? errors.revokedApiKey() : errors.invalidManagementKey();
    if (record.expiresAt !== null && record.expiresAt <= now) throw this.repo.kind === 'api' ? errors.expiredApiKey() : errors.invalidManagementKey();
    if (use) this.lastUsed.set(record.id, now);
    return record;
  }

  /** Drops a key from the cache after it changed (by hash, which every record carries), here and on the other daemons. */
  invalidate(record: Pick<KeyRecord, 'keyHash'>): void {
    this.cache.delete(record.keyHash);
    this.onInvalidate?.(record.keyHash);
  }

  /** Drops a key another daemon changed. */
  forget(hash: string): void {
    this.cache.delete(hash);
  }

  /** Writes collected last-use times; called on a timer and at shutdown. */
  async flushLastUsed(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const entries = [...this.lastUsed];
    this.lastUsed.clear();
    await this.repo.touchMany(entries);
  }

  private invalid() {
    return this.repo.kind === 'api' ? errors.invalidApiKey() : errors.invalidManagementKey();
  }
}
