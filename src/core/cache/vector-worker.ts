/**
 * The semantic cache's vector index, in a worker thread (started by vector-index.ts), so that
 * inserts (0.1–1 ms of CPU each), index builds and searches never block the gateway's event loop.
 *
 * Each partition (account + model + parameters + context) has its own index, so a search can
 * only ever return that partition's entries. A partition starts as a flat array searched
 * exhaustively and becomes an HNSW graph (hnswlib) once it holds `flatLimit` entries: every
 * hnswlib index costs about 2.6 MB and 8 ms to create whatever its size (it allocates 65,536
 * label mutexes), and most partitions stay small, where an exact scan is as fast
 * (≈0.13 ms for 512×256) and exact.
 *
 * Messages are handled one at a time, in order; only the start-up load from SQLite yields
 * between chunks, so that searches arriving meanwhile are answered.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openVectorReader, type VectorFileReader } from '../../store/cache-entries.js';
import { FlatPartition, HnswPartition, normalize, type Partition, type VectorMatch, type VectorTuning } from './vector-partitions.js';

export type { VectorMatch, VectorTuning } from './vector-partitions.js';

export interface WorkerInit {
  /** Marks the thread as this worker (see the end of the file). */
  vectorWorker: true;
  databasePath: string | undefined;
  tuning: VectorTuning;
}

export type WorkerRequest =
  | { type: 'add'; partition: string; id: number; vector: Float32Array }
  | { type: 'remove'; ids: readonly number[] }
  | { type: 'search'; seq: number; partition: string; vector: Float32Array; minSimilarity: number }
  | { type: 'size'; seq: number }
  | { type: 'loaded'; seq: number }
  | { type: 'close' };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type WorkerReply =
  | { type: 'search'; seq: number; match: VectorMatch | undefined }
  | { type: 'size'; seq: number; size: number }
  | { type: 'loaded'; seq: number; size: number }
  | { type: 'log'; level: LogLevel; msg: string; data: Record<string, unknown> };

/** Entries a partition keeps after removals before an HNSW index goes back to a flat array. */
const demoteBelow = (tuning: VectorTuning): number => Math.floor(tuning.flatLimit / 4);
/** The load reads this many rows per query and yields to pending messages at least this often. */
const LOAD_PAGE_ROWS = 256;
const LOAD_SLICE_MS = 10;

export class VectorStore {
  private readonly partitions = new Map<string, Partition>();
  /** Which partition each indexed id is in (`remove` gets bare ids). */
  private readonly owners = new Map<number, string>();

  constructor(
    private readonly tuning: VectorTuning,
    private readonly log: (level: LogLevel, msg: string, data?: Record<string, unknown>) => void,
  ) {}

  get size(): number {
    return this.owners.size;
  }

  has(id: number): boolean {
    return this.owners.has(id);
  }

  /** `vector` becomes the store's (it is normalized in place). */
  add(partitionKey: string, id: number, vector: Float32Array): void {
    if (!Number.isSafeInteger(id) || id <= 0 || vector.length === 0) {
      this.log('debug', 'vector index: ignored an entry with an invalid id or an empty vector', { id, dim: vector.length });
      return;
    }
    const owner = this.owners.get(id);
    if (owner !== undefined && owner !== partitionKey) this.remove([id]);
    let partition = this.partitions.get(partitionKey);
    if (partition === undefined) {
      partition = this.tuning.flatLimit > 0 ? new FlatPartition(vector.length) : new HnswPartition(vector.length, 16, this.tuning);
      this.partitions.set(partitionKey, partition);
    } else if (partition.dim !== vector.length) {
      this.log('debug', 'vector index: ignored a vector of another dimension than its partition\'s', { id, dim: vector.length, partitionDim: partition.dim });
      return;
    }
    normalize(vector);
    try {
      partition.add(id, vector);
    } catch (error) {
      // hnswlib refused (out of memory?): the partition may be inconsistent, so it goes.
      this.log('warn', 'vector index: could not add an entry; its partition is dropped', { err: errorText(error), id });
      this.owners.delete(id);
      this.drop(partitionKey, partition);
      return;
    }
    this.owners.set(id, partitionKey);
    if (partition instanceof FlatPartition && partition.size >= this.tuning.flatLimit) {
      this.rebuild(partitionKey, partition, 'hnsw');
    } else if (partition instanceof HnswPartition && partition.full) {
      this.rebuild(partitionKey, partition, 'hnsw');
    }
  }

  remove(ids: readonly number[]): void {
    for (const id of ids) {
      const partitionKey = this.owners.get(id);
      if (partitionKey === undefined) continue;
      this.owners.delete(id);
      const partition = this.partitions.get(partitionKey);
      if (partition === undefined) continue;
      partition.remove(id);
      if (partition.size === 0) this.drop(partitionKey, partition);
      else if (partition instanceof HnswPartition && partition.size < demoteBelow(this.tuning)) this.rebuild(partitionKey, partition, 'flat');
    }
  }

  search(partitionKey: string, query: Float32Array, minSimilarity: number): VectorMatch | undefined {
    const partition = this.partitions.get(partitionKey);
    // NaN compares false with everything, so it would let any entry through.
    if (partition === undefined || partition.dim !== query.length || Number.isNaN(minSimilarity)) return undefined;
    return partition.search(normalize(query), minSimilarity);
  }

  /** Moves a partition to a new index of the given kind (a grown flat array, a shrunk graph). */
  private rebuild(partitionKey: string, from: Partition, kind: 'flat' | 'hnsw'): void {
    const started = performance.now();
    const to: Partition = kind === 'flat' ? new FlatPartition(from.dim, Math.max(8, from.size * 2)) : new HnswPartition(from.dim, from.size * 2, this.tuning);
    try {
      for (const [id, vector] of from.entries()) to.add(id, vector);
    } catch (error) {
      this.log('warn', 'vector index: could not rebuild a partition; it is dropped', { err: errorText(error), entries: from.size });
      to.dispose();
      this.drop(partitionKey, from);
      return;
    }
    from.dispose();
    this.partitions.set(partitionKey, to);
    this.log('debug', 'vector index: partition rebuilt', { kind, entries: to.size, ms: Math.round(performance.now() - started) });
  }

  private drop(partitionKey: string, partition: Partition): void {
    for (const id of partition.keys()) this.owners.delete(id);
    partition.dispose();
    this.partitions.delete(partitionKey);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Loads the unexpired entries that have a vector, a page at a time in id order (keyset
 * pagination on the rowid, so no read transaction stays open across the yields). Entries that
 * messages added or removed meanwhile are newer than the file and are left as they are.
 */
async function load(store: VectorStore, databasePath: string, touched: Set<number>, log: VectorStoreLog): Promise<void> {
  let reader: VectorFileReader;
  try {
    reader = openVectorReader(databasePath, LOAD_PAGE_ROWS);
  } catch (error) {
    log('debug', 'vector index: no cache file (or table) to load from; starting empty', { path: databasePath, err: errorText(error) });
    return;
  }
  const started = performance.now();
  let loaded = 0;
  try {
    const now = Date.now();
    let after = 0;
    let sliceStarted = performance.now();
    for (;;) {
      const rows = reader.page(now, after);
      for (const row of rows) {
        after = row.id;
        if (touched.has(row.id)) continue;
        const vector = decodeVector(row.vector);
        if (vector === undefined) {
          log('debug', 'vector index: ignored a stored vector that is not float32', { id: row.id, bytes: row.vector.length });
          continue;
        }
        store.add(row.partition, row.id, vector);
        if (store.has(row.id)) loaded += 1;
        if (performance.now() - sliceStarted > LOAD_SLICE_MS) {
          await new Promise((resolve) => setImmediate(resolve));
          sliceStarted = performance.now();
        }
      }
      if (rows.length < LOAD_PAGE_ROWS) break;
    }
  } catch (error) {
    log('warn', 'vector index: the start-up load stopped early; the entries not loaded will miss', { err: errorText(error), loaded });
  } finally {
    reader.close();
  }
  log('info', 'vector index loaded', { entries: loaded, ms: Math.round(performance.now() - started) });
}

/** A BLOB of little-endian float32 values (whatever the buffer's alignment). */
function decodeVector(blob: unknown): Float32Array | undefined {
  if (!Buffer.isBuffer(blob) || blob.length === 0 || blob.length % 4 !== 0) return undefined;
  const vector = new Float32Array(blob.length / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = blob.readFloatLE(i * 4);
  return vector;
}

type VectorStoreLog = (level: LogLevel, msg: string, data?: Record<string, unknown>) => void;

function run(): void {
  const port = parentPort;
  if (port === null) throw new Error('vector-worker.ts runs as a worker thread (see vector-index.ts)');
  const init = workerData as WorkerInit;
  const reply = (message: WorkerReply): void => port.postMessage(message);
  const log: VectorStoreLog = (level, msg, data = {}) => reply({ type: 'log', level, msg, data });
  const store = new VectorStore(init.tuning, log);

  let loading = init.databasePath !== undefined;
  const loadWaiters: number[] = [];
  // While loading, the ids that messages added or removed: the load must not undo them.
  const touched = new Set<number>();

  const handle = (message: WorkerRequest): void => {
    switch (message.type) {
      case 'add':
        if (loading) touched.add(message.id);
        store.add(message.partition, message.id, message.vector);
        break;
      case 'remove':
        if (loading) for (const id of message.ids) touched.add(id);
        store.remove(message.ids);
        break;
      case 'search':
        reply({ type: 'search', seq: message.seq, match: store.search(message.partition, message.vector, message.minSimilarity) });
        break;
      case 'size':
        reply({ type: 'size', seq: message.seq, size: store.size });
        break;
      case 'loaded':
        if (loading) loadWaiters.push(message.seq);
        else reply({ type: 'loaded', seq: message.seq, size: store.size });
        break;
      case 'close':
        // Between two messages, never inside hnswlib: a worker terminated while native code
        // runs can abort the whole process (napi_throw during termination).
        process.exit(0);
    }
  };

  port.on('message', (message: WorkerRequest) => {
    try {
      handle(message);
    } catch (error) {
      // hnswlib threw (it does on inconsistent input): this message fails, the index carries on.
      log('warn', 'vector index: a request failed', { err: errorText(error), type: message.type });
      if (message.type === 'search') reply({ type: 'search', seq: message.seq, match: undefined });
    }
  });

  if (init.databasePath !== undefined) {
    void load(store, init.databasePath, touched, log).finally(() => {
      loading = false;
      touched.clear();
      for (const seq of loadWaiters.splice(0)) reply({ type: 'loaded', seq, size: store.size });
    });
  }
}

// Imported (for VectorStore, or in a worker started for something else) it does nothing.
if (parentPort !== null && (workerData as Partial<WorkerInit> | null)?.vectorWorker === true) run();
