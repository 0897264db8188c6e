import type { Logger } from 'pino';
import type { CacheEntryStore } from '../../store/types.js';
import type { VectorIndex } from './vector-index.js';

/**
 * What the semantic tier's vector index is fed from the entry store: the entries other
 * daemons sharing the store add (read every few seconds by `sync`), not the ones this daemon
 * wrote itself (`own`: indexed as they were written). A store whose ids can commit out of
 * order (PostgreSQL) is read again from `idLookback` below the last id seen, skipping the ids
 * indexed lately.
 */
export class VectorFeed {
  /** Highest entry id the index has seen from the store. */
  private seenId = 0;
  /** Ids this daemon wrote and indexed itself, until the store's reads pass them. */
  private readonly ownIds = new Set<number>();
  /** Ids indexed from the store lately (re-read below seenId, by the store's idLookback). */
  private recentIds = new Set<number>();
  private olderIds = new Set<number>();
  private syncing = false;

  constructor(
    private readonly store: CacheEntryStore,
    private readonly vectors: VectorIndex,
    private readonly logger: Logger,
  ) {}

  /** Starts after the store's current entries (a file the index worker loads itself). */
  async skipExisting(): Promise<void> {
    this.seenId = await this.store.maxId();
  }

  /** An entry this daemon wrote and indexed: the next reads skip it. */
  own(id: number): void {
    this.ownIds.add(id);
  }

  /** Indexes the entries added since the last look; a look already under way makes this one a no-op. */
  async sync(): Promise<void> {
    const store = this.store;
    if (this.syncing) return;
    this.syncing = true;
    try {
      let after = Math.max(0, this.seenId - store.idLookback);
      for (;;) {
        const rows = await store.vectorsAfter(after, Date.now());
        for (const row of rows) {
          after = row.id;
          this.seenId = Math.max(this.seenId, row.id);
          if (this.recentIds.has(row.id) || this.olderIds.has(row.id)) continue;
          if (store.idLookback > 0) this.remember(row.id);
          if (this.ownIds.delete(row.id)) continue;
          this.vectors.add(row.partition, row.id, new Float32Array(row.vector.buffer.slice(row.vector.byteOffset, row.vector.byteOffset + row.vector.byteLength)));
        }
        if (rows.length < 1000) break;
      }
      for (const id of this.ownIds) if (id <= this.seenId - store.idLookback) this.ownIds.delete(id);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read new semantic cache entries');
    } finally {
      this.syncing = false;
    }
  }

  /** Two generations of recently indexed ids, enough to cover the lookback window. */
  private remember(id: number): void {
    this.recentIds.add(id);
    if (this.recentIds.size > 4 * this.store.idLookback) {
      this.olderIds = this.recentIds;
      this.recentIds = new Set();
    }
  }
}
