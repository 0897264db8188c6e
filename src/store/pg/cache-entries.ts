import type { CacheStoreLimits, NewEntry, StoredEntry, VectorRow } from '../cache-entries.js';
import type { CacheEntryStore } from '../types.js';
import type { PgSql } from './db.js';

/** Entries evicted per statement, at most. */
const EVICT_CHUNK = 1000;

/**
 * The response cache's entries on PostgreSQL: one table every daemon shares, so a paraphrase
 * answered on one host is a semantic hit on the others (each daemon's vector index picks up
 * the others' entries every few seconds) and purges reach every host.
 *
 * The limits are kept with counters this daemon updates as it writes and re-reads from the
 * table at every sweep (once a minute) and before it evicts: with several daemons writing, the
 * table can pass `max_entries` or `max_size` by what the others added since the last count.
 * Eviction takes the least recently used rows it can lock (SKIP LOCKED), so daemons evicting
 * at once neither wait for nor deadlock with each other.
 */
export class PgCacheEntries implements CacheEntryStore {
  readonly file = undefined;
  /** Identity values are drawn before commit: a batch can commit after a later one. */
  readonly idLookback = 2000;
  private entries = 0;
  private bytes = 0;
  private touched = new Map<number, number>();

  constructor(
    private readonly sql: PgSql,
    private readonly limits: CacheStoreLimits,
    onError: (error: unknown) => void,
  ) {
    // The counters start from the table (in the background: until then, no eviction runs).
    this.recount().catch(onError);
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries, bytes: this.bytes };
  }

  async getExact(key: string, now: number): Promise<StoredEntry | undefined> {
    const [row] = await this.sql<StoredEntry[]>`SELECT id, answer, expires_at AS "expiresAt" FROM cache_entries WHERE exact_key = ${key} AND expires_at > ${now}`;
    return row;
  }

  async get(id: number, now: number): Promise<StoredEntry | undefined> {
    const [row] = await this.sql<StoredEntry[]>`SELECT id, answer, expires_at AS "expiresAt" FROM cache_entries WHERE id = ${id} AND expires_at > ${now}`;
    return row;
  }

  touch(id: number, now: number): void {
    this.touched.set(id, now);
  }

  async putMany(entries: readonly NewEntry[]): Promise<{ ids: number[]; removed: number[] }> {
    // Within one batch the last answer for an exact key wins (as SQLite's replace would leave
    // it); an earlier one is kept only for its vector.
    const lastOfKey = new Map<string, number>();
    entries.forEach((entry, index) => {
      if (entry.exactKey !== undefined) lastOfKey.set(entry.exactKey, index);
    });
    const rows: Array<{ index: number; row: Record<string, unknown>; bytes: number }> = [];
    entries.forEach((entry, index) => {
      const superseded = entry.exactKey !== undefined && lastOfKey.get(entry.exactKey) !== index;
      if (superseded && !entry.vector) return;
      const vector = entry.vector ? Buffer.from(entry.vector.buffer, entry.vector.byteOffset, entry.vector.byteLength) : null;
      const bytes = entry.answer.length + (vector?.length ?? 0) + 64;
      rows.push({
        index,
        bytes,
        row: {
          account_id: entry.accountId,
          exact_key: superseded ? null : (entry.exactKey ?? null),
          partition: entry.partition ?? null,
          vector,
          model: entry.model,
          answer: entry.answer,
          bytes,
          created_at: entry.now,
          expires_at: entry.now + entry.ttlMs,
          used_at: entry.now,
        },
      });
    });
    const ids: number[] = new Array<number>(entries.length).fill(-1);
    const removed: number[] = [];
    await this.flushTouched();
    await this.sql.begin(async (raw) => {
      const tx = raw as unknown as PgSql;
      const keys = [...lastOfKey.keys()];
      if (keys.length > 0) {
        for (const row of await tx<Array<{ id: number; bytes: number }>>`DELETE FROM cache_entries WHERE exact_key = ANY(${keys}::text[]) RETURNING id, bytes`) this.forget(row, removed);
      }
      if (rows.length > 0) {
        // Ids drawn first and written with their rows: RETURNING's order is not promised, and a
        // vector filed under another row's id could answer with another account's entry.
        const drawn = await tx<Array<{ id: number }>>`SELECT nextval(pg_get_serial_sequence('cache_entries', 'id'))::bigint AS id FROM generate_series(1, ${rows.length})`;
        rows.forEach((at, i) => {
          const id = drawn[i]?.id;
          if (id === undefined) throw new Error('the cache entry ids could not be drawn');
          at.row.id = id;
          ids[at.index] = id;
        });
        await tx`INSERT INTO cache_entries ${tx(rows.map((r) => r.row))}`;
        for (const at of rows) {
          this.entries += 1;
          this.bytes += at.bytes;
        }
      }
    });
    if (this.entries > this.limits.maxEntries || this.bytes > this.limits.maxBytes) await this.evict(removed);
    const fresh = new Set(ids);
    return { ids, removed: removed.filter((gone) => !fresh.has(gone)) };
  }

  async delete(id: number): Promise<void> {
    for (const row of await this.sql<Array<{ id: number; bytes: number }>>`DELETE FROM cache_entries WHERE id = ${id} RETURNING id, bytes`) this.forget(row, []);
  }

  async purge(accountId: string | undefined): Promise<number[]> {
    const rows =
      accountId === undefined
        ? await this.sql<Array<{ id: number; bytes: number }>>`DELETE FROM cache_entries RETURNING id, bytes`
        : await this.sql<Array<{ id: number; bytes: number }>>`DELETE FROM cache_entries WHERE account_id = ${accountId} RETURNING id, bytes`;
    const removed: number[] = [];
    for (const row of rows) this.forget(row, removed);
    return removed;
  }

  async stats(): Promise<{ entries: number; bytes: number; semanticEntries: number }> {
    const [row] = await this.sql<Array<{ entries: number; bytes: number; semantic: number }>>`
      SELECT count(*)::bigint AS entries, coalesce(sum(bytes), 0)::bigint AS bytes, count(vector)::bigint AS semantic FROM cache_entries`;
    return { entries: row?.entries ?? 0, bytes: row?.bytes ?? 0, semanticEntries: row?.semantic ?? 0 };
  }

  async sweep(now: number): Promise<number[]> {
    await this.flushTouched();
    const rows = await this.sql<Array<{ id: number }>>`DELETE FROM cache_entries WHERE expires_at <= ${now} RETURNING id`;
    await this.recount();
    return rows.map((row) => row.id);
  }

  async vectorsAfter(afterId: number, now: number): Promise<VectorRow[]> {
    return this.sql<VectorRow[]>`
      SELECT id, partition, vector FROM cache_entries WHERE id > ${afterId} AND vector IS NOT NULL AND expires_at > ${now} ORDER BY id LIMIT 1000`;
  }

  async maxId(): Promise<number> {
    const [row] = await this.sql<Array<{ id: number }>>`SELECT coalesce(max(id), 0)::bigint AS id FROM cache_entries`;
    return row?.id ?? 0;
  }

  async flushTouched(): Promise<void> {
    if (this.touched.size === 0) return;
    const touched = this.touched;
    this.touched = new Map();
    const ids = [...touched.keys()];
    const times = [...touched.values()];
    await this.sql`
      UPDATE cache_entries AS c SET used_at = greatest(c.used_at, t.at)
        FROM unnest(${ids}::bigint[], ${times}::bigint[]) AS t(id, at) WHERE c.id = t.id`;
  }

  /** Pending last-use times are written; the pool is the store's (closed with it). */
  async close(): Promise<void> {
    await this.flushTouched();
  }

  /** Least recently used first, until under both limits (counted afresh first). */
  private async evict(removed: number[]): Promise<void> {
    await this.recount();
    for (let rounds = 0; rounds < 100 && (this.entries > this.limits.maxEntries || this.bytes > this.limits.maxBytes); rounds++) {
      const over = Math.min(EVICT_CHUNK, Math.max(1, this.entries - this.limits.maxEntries));
      const rows = await this.sql<Array<{ id: number; bytes: number }>>`
        DELETE FROM cache_entries WHERE id IN (
          SELECT id FROM cache_entries ORDER BY used_at, id LIMIT ${over} FOR UPDATE SKIP LOCKED
        ) RETURNING id, bytes`;
      if (rows.length === 0) break;
      for (const row of rows) this.forget(row, removed);
    }
  }

  private forget(row: { id: number; bytes: number }, removed: number[]): void {
    removed.push(row.id);
    this.entries = Math.max(0, this.entries - 1);
    this.bytes = Math.max(0, this.bytes - row.bytes);
  }

  private async recount(): Promise<void> {
    const [row] = await this.sql<Array<{ entries: number; bytes: number }>>`SELECT count(*)::bigint AS entries, coalesce(sum(bytes), 0)::bigint AS bytes FROM cache_entries`;
    this.entries = row?.entries ?? 0;
    this.bytes = row?.bytes ?? 0;
  }
}
