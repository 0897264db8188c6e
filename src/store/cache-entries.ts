import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Logger } from 'pino';
import type { CacheEntryStore } from './types.js';

/**
 * The response cache's entries, in their own SQLite file next to the gateway's database
 * (`gateway.db` ► `gateway-cache.db`): cache writes never wait for the ledger's write lock nor
 * the ledger for theirs, and a cache file that is lost or corrupted costs answers, not money.
 * It is a cache: a file of another layout, or one SQLite cannot read, is set aside and a new
 * one started.
 *
 * One row per answer: the exact tier finds it by `exact_key` (unless Redis holds that tier),
 * the semantic tier by its `partition` and `vector` (searched in vector-index.ts).
 */

const LAYOUT = 2;

export interface NewEntry {
  /** The account the answer belongs to (for purges; the keys already include the scope). */
  accountId: string;
  exactKey: string | undefined;
  partition: string | undefined;
  vector: Float32Array | undefined;
  model: string;
  answer: string;
  now: number;
  ttlMs: number;
}

export interface StoredEntry {
  id: number;
  answer: string;
  expiresAt: number;
}

export interface VectorRow {
  id: number;
  partition: string;
  vector: Buffer;
}

export interface CacheStoreLimits {
  maxEntries: number;
  maxBytes: number;
}

/** Where the cache file of a database lives (`:memory:` stays in memory). */
export function cacheFileOf(databasePath: string): string {
  if (databasePath === ':memory:') return ':memory:';
  return databasePath.endsWith('.db') ? `${databasePath.slice(0, -3)}-cache.db` : `${databasePath}-cache.db`;
}

export class CacheStore implements CacheEntryStore {
  readonly idLookback = 0;
  private readonly db: Database.Database;
  private readonly byExact;
  private readonly byId;
  private readonly insertStmt;
  private readonly deleteExact;
  private readonly deleteId;
  private readonly touchStmt;
  private readonly oldest;
  private readonly expired;
  private readonly totals;
  private readonly since;
  private entries = 0;
  private bytes = 0;
  /** Last use times to write (one transaction per second, not one write per hit). */
  private touched = new Map<number, number>();

  private constructor(
    readonly path: string,
    db: Database.Database,
    private readonly limits: CacheStoreLimits,
  ) {
    this.db = db;
    this.byExact = db.prepare('SELECT id, answer, expires_at AS expiresAt FROM cache_entries WHERE exact_key = ?');
    this.byId = db.prepare('SELECT id, answer, expires_at AS expiresAt FROM cache_entries WHERE id = ?');
    this.insertStmt = db.prepare(
      `INSERT INTO cache_entries (account_id, exact_key, partition, vector, model, answer, bytes, created_at, expires_at, used_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.deleteExact = db.prepare('DELETE FROM cache_entries WHERE exact_key = ? RETURNING id, bytes');
    this.deleteId = db.prepare('DELETE FROM cache_entries WHERE id = ? RETURNING id, bytes');
    this.touchStmt = db.prepare('UPDATE cache_entries SET used_at = max(used_at, ?) WHERE id = ?');
    this.oldest = db.prepare('DELETE FROM cache_entries WHERE id IN (SELECT id FROM cache_entries ORDER BY used_at, id LIMIT ?) RETURNING id, bytes');
    this.expired = db.prepare('DELETE FROM cache_entries WHERE expires_at <= ? RETURNING id, bytes');
    this.totals = db.prepare('SELECT count(*) AS entries, coalesce(sum(bytes), 0) AS bytes FROM cache_entries');
    this.since = db.prepare('SELECT id, partition, vector FROM cache_entries WHERE id > ? AND vector IS NOT NULL AND expires_at > ? ORDER BY id LIMIT 1000');
    this.recount();
  }

  /**
   * Opens the cache file (creating it). A file SQLite cannot read, or of another layout, is
   * renamed aside (`.corrupt-<time>`) and replaced: a broken cache is a cold cache.
   */
  static open(path: string, limits: CacheStoreLimits, logger: Logger): CacheStore {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    try {
      return new CacheStore(path, CacheStore.openFile(path), limits);
    } catch (error) {
      if (path === ':memory:' || !existsSync(path)) throw error;
      const aside = `${path}.corrupt-${Date.now()}`;
      logger.error({ err: error, path, moved_to: aside }, 'the response cache file could not be used; set aside, starting an empty one');
      for (const suffix of ['', '-wal', '-shm']) if (existsSync(path + suffix)) renameSync(path + suffix, aside + suffix);
      return new CacheStore(path, CacheStore.openFile(path), limits);
    }
  }

  private static openFile(path: string): Database.Database {
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 1000');
      // A cache: losing the last writes to an OS crash costs nothing but answers.
      db.pragma('synchronous = OFF');
      const layout = db.pragma('user_version', { simple: true }) as number;
      if (layout !== LAYOUT) {
        db.exec(`
DROP TABLE IF EXISTS cache_entries;
CREATE TABLE cache_entries (
  id         INTEGER PRIMARY KEY,
  account_id TEXT NOT NULL,
  exact_key  TEXT UNIQUE,
  partition  TEXT,
  vector     BLOB,
  model      TEXT NOT NULL,
  answer     TEXT NOT NULL,
  bytes      INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX cache_entries_lru ON cache_entries(used_at);
CREATE INDEX cache_entries_expiry ON cache_entries(expires_at);
CREATE INDEX cache_entries_account ON cache_entries(account_id);
PRAGMA user_version = ${LAYOUT};`);
      }
      // A read that fails here (not a database, corrupted pages) sets the file aside.
      db.prepare('SELECT count(*) FROM cache_entries').get();
    } catch (error) {
      db.close();
      throw error;
    }
    return db;
  }

  get file(): string | undefined {
    return this.path === ':memory:' ? undefined : this.path;
  }

  maxId(): number {
    return (this.db.prepare('SELECT coalesce(max(id), 0) AS id FROM cache_entries').get() as { id: number }).id;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries, bytes: this.bytes };
  }

  /** A live entry by its exact key. */
  getExact(key: string, now: number): StoredEntry | undefined {
    const row = this.byExact.get(key) as StoredEntry | undefined;
    return row && row.expiresAt > now ? row : undefined;
  }

  get(id: number, now: number): StoredEntry | undefined {
    const row = this.byId.get(id) as StoredEntry | undefined;
    return row && row.expiresAt > now ? row : undefined;
  }

  touch(id: number, now: number): void {
    this.touched.set(id, now);
  }

  /**
   * Stores an answer (replacing an entry of the same exact key), then evicts the least
   * recently used entries beyond the limits. Returns the new id and the ids that left (for
   * the vector index).
   */
  put(entry: NewEntry): { id: number; removed: number[] } {
    const { ids, removed } = this.putMany([entry]);
    return { id: ids[0] as number, removed };
  }

  /**
   * Stores answers in one transaction (the response cache batches the answers of a few
   * milliseconds: one commit for all), then evicts beyond the limits. Returns the new ids in
   * order and the ids that left, none of the new ones among them.
   */
  putMany(entries: readonly NewEntry[]): { ids: number[]; removed: number[] } {
    const removed: number[] = [];
    const write = this.db.transaction(() => {
      const ids: number[] = [];
      for (const entry of entries) {
        const vector = entry.vector ? Buffer.from(entry.vector.buffer, entry.vector.byteOffset, entry.vector.byteLength) : null;
        const bytes = entry.answer.length + (vector?.length ?? 0) + 64;
        if (entry.exactKey !== undefined) for (const row of this.deleteExact.all(entry.exactKey) as Array<{ id: number; bytes: number }>) this.forget(row, removed);
        const result = this.insertStmt.run(entry.accountId, entry.exactKey ?? null, entry.partition ?? null, vector, entry.model, entry.answer, bytes, entry.now, entry.now + entry.ttlMs, entry.now);
        this.entries += 1;
        this.bytes += bytes;
        ids.push(Number(result.lastInsertRowid));
      }
      this.flushTouched();
      while (this.entries > this.limits.maxEntries || this.bytes > this.limits.maxBytes) {
        const over = Math.max(1, this.entries - this.limits.maxEntries);
        const rows = this.oldest.all(Math.min(over, 1000)) as Array<{ id: number; bytes: number }>;
        if (rows.length === 0) break;
        for (const row of rows) this.forget(row, removed);
      }
      return ids;
    });
    let ids: number[];
    try {
      ids = write();
    } catch (error) {
      // Rolled back: the counters follow the file again.
      this.recount();
      throw error;
    }
    const fresh = new Set(ids);
    return { ids, removed: removed.filter((gone) => !fresh.has(gone)) };
  }

  /** Removes one entry (a corrupted one). */
  delete(id: number): void {
    const removed: number[] = [];
    for (const row of this.deleteId.all(id) as Array<{ id: number; bytes: number }>) this.forget(row, removed);
  }

  /** Removes every entry, or one account's; returns the ids removed. */
  purge(accountId: string | undefined): number[] {
    const rows = (accountId === undefined ? this.db.prepare('DELETE FROM cache_entries RETURNING id, bytes').all() : this.db.prepare('DELETE FROM cache_entries WHERE account_id = ? RETURNING id, bytes').all(accountId)) as Array<{ id: number; bytes: number }>;
    const removed: number[] = [];
    for (const row of rows) this.forget(row, removed);
    return removed;
  }

  /** Entries and bytes, and how many carry a vector (the semantic tier). */
  stats(): { entries: number; bytes: number; semanticEntries: number } {
    const row = this.db.prepare('SELECT count(*) AS entries, coalesce(sum(bytes), 0) AS bytes, count(vector) AS semantic FROM cache_entries').get() as { entries: number; bytes: number; semantic: number };
    return { entries: row.entries, bytes: row.bytes, semanticEntries: row.semantic };
  }

  /** Drops expired entries and writes pending last-use times; returns the ids removed. */
  sweep(now: number): number[] {
    const removed: number[] = [];
    this.db.transaction(() => {
      this.flushTouched();
      for (const row of this.expired.all(now) as Array<{ id: number; bytes: number }>) removed.push(row.id);
    })();
    // Other daemons sharing the file add and evict too: the counters are re-read here.
    this.recount();
    return removed;
  }

  /** Semantic entries with an id above `afterId` (start-up load, entries other daemons added). */
  vectorsAfter(afterId: number, now: number): VectorRow[] {
    return this.since.all(afterId, now) as VectorRow[];
  }

  flushTouched(): void {
    if (this.touched.size === 0) return;
    const touched = this.touched;
    this.touched = new Map();
    // One transaction (a savepoint inside put's): one commit a second, not one per hit.
    this.db.transaction(() => {
      for (const [id, at] of touched) this.touchStmt.run(at, id);
    })();
  }

  close(): void {
    try {
      this.flushTouched();
    } finally {
      this.db.close();
    }
  }

  /** Test hook: the raw database (to corrupt an entry, or fill the disk with max_page_count). */
  get raw(): Database.Database {
    return this.db;
  }

  private forget(row: { id: number; bytes: number }, removed: number[]): void {
    removed.push(row.id);
    this.entries = Math.max(0, this.entries - 1);
    this.bytes = Math.max(0, this.bytes - row.bytes);
  }

  private recount(): void {
    const totals = this.totals.get() as { entries: number; bytes: number };
    this.entries = totals.entries;
    this.bytes = totals.bytes;
  }
}

/** Pages of a cache file's semantic entries, read-only (the vector worker's start-up load). */
export interface VectorFileReader {
  /** Unexpired entries with a vector and an id above `after`, in id order. */
  page(now: number, after: number): VectorRow[];
  close(): void;
}

/** Throws when the file or its table is missing (the caller starts empty). */
export function openVectorReader(path: string, pageRows: number): VectorFileReader {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const page = db.prepare<[number, number], VectorRow>(
      `SELECT id, partition, vector FROM cache_entries WHERE vector IS NOT NULL AND partition IS NOT NULL AND expires_at > ? AND id > ? ORDER BY id LIMIT ${Math.floor(pageRows)}`,
    );
    return { page: (now, after) => page.all(now, after), close: () => db.close() };
  } catch (error) {
    db.close();
    throw error;
  }
}
