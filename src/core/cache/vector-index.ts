import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
// Types only: the worker module (and hnswlib, better-sqlite3) is loaded in the worker alone.
import type { VectorMatch, VectorTuning, WorkerInit, WorkerReply, WorkerRequest } from './vector-worker.js';

export type { VectorMatch, VectorTuning } from './vector-worker.js';

/**
 * Measured on 100k random 256-d vectors (HNSW's worst case) with near-duplicate queries, the
 * exact nearest neighbour is found 87% of the time with efConstruction 100 / ef 64, 97% with
 * 100 / 128 and 99.5% with 200 / 128; a miss costs a provider call, and an insert happens once
 * per cached answer, so inserts pay for it. Below 512 entries an exact scan (≈0.13 ms at 256
 * dimensions) is as fast and avoids an HNSW index's fixed cost (≈2.6 MB each).
 */
export const DEFAULT_TUNING: VectorTuning = { m: 16, efConstruction: 200, ef: 128, flatLimit: 512 };

export interface VectorIndexOptions {
  /** SQLite file to load existing vectors from when the worker starts; undefined: start empty. */
  databasePath?: string;
  logger: Logger;
  /** HNSW parameters and the flat/HNSW threshold (vector-worker.ts); the defaults suit the cache. */
  tuning?: Partial<VectorTuning>;
}

/**
 * The worker's module: the compiled .js next to this file, or, when this file runs as
 * TypeScript under tsx (tests, an edited checkout), the .ts source.
 */
function startWorker(workerData: WorkerInit): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./vector-worker.js', import.meta.url), { workerData });
  // Node 20 loads a worker's entry before any --import hook applies, so a .ts entry fails even
  // with `execArgv: ['--import', 'tsx']`. A JavaScript stub registers tsx in the worker first
  // (as bin/gateway.js does), then imports the source. Both are absolute URLs, so the worker
  // does not depend on the working directory.
  const tsx = import.meta.resolve('tsx/esm/api');
  const source = new URL('./vector-worker.ts', import.meta.url).href;
  const stub = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(stub, { eval: true, workerData });
}

/**
 * The semantic cache's vector index: per partition, the stored vector most similar (cosine) to
 * a query. The index lives in a worker thread (vector-worker.ts); this is its client.
 *
 * It never fails its callers: if the worker dies, that is logged once and every search is a
 * miss from then on. The worker does not keep the process alive, except while a reply is awaited.
 */
export class VectorIndex {
  private readonly waiting = new Map<number, (reply: WorkerReply | undefined) => void>();
  private nextSeq = 1;
  /** The worker died or was closed: every request is answered at once, as a miss. */
  private stopped = false;
  private closed = false;

  private constructor(
    private readonly worker: Worker,
    private readonly logger: Logger,
  ) {
    worker.unref();
    worker.on('message', (reply: WorkerReply) => this.receive(reply));
    worker.on('error', (error) => this.fail({ err: error }, 'the vector index worker failed; semantic cache lookups miss from now on'));
    worker.on('messageerror', (error) => this.fail({ err: error }, 'the vector index worker sent an unreadable message; semantic cache lookups miss from now on'));
    worker.on('exit', (code) => this.fail({ code }, 'the vector index worker stopped; semantic cache lookups miss from now on'));
  }

  /** Starts the worker; the load from `databasePath` happens there, in the background. */
  static open(options: VectorIndexOptions): VectorIndex {
    const tuning: VectorTuning = { ...DEFAULT_TUNING, ...options.tuning };
    return new VectorIndex(startWorker({ vectorWorker: true, databasePath: options.databasePath, tuning }), options.logger);
  }

  /** Indexes `vector` (copied) as entry `id` of `partition`; ids are positive integers, unique across partitions. */
  add(partition: string, id: number, vector: Float32Array): void {
    if (this.stopped) return;
    // A copy of just the view, moved to the worker: the caller keeps its array, and a view into
    // a larger buffer does not send the whole buffer (structured clone would).
    const copy = vector.slice();
    this.post({ type: 'add', partition, id, vector: copy }, [copy.buffer]);
  }

  /** Takes entries out of the index; unknown ids are ignored. */
  remove(ids: readonly number[]): void {
    if (this.stopped || ids.length === 0) return;
    this.post({ type: 'remove', ids });
  }

  /** The partition's entry most similar to `vector` if its cosine similarity is at least `minSimilarity`. */
  async search(partition: string, vector: Float32Array, minSimilarity: number): Promise<VectorMatch | undefined> {
    const copy = vector.slice();
    const reply = await this.request((seq) => ({ type: 'search', seq, partition, vector: copy, minSimilarity }), [copy.buffer]);
    return reply?.type === 'search' ? reply.match : undefined;
  }

  /** Resolves when the start-up load finished (or the worker stopped). */
  async loaded(): Promise<void> {
    await this.request((seq) => ({ type: 'loaded', seq }));
  }

  /** Entries indexed, as of the worker's answer (0 once it stopped). */
  async size(): Promise<number> {
    const reply = await this.request((seq) => ({ type: 'size', seq }));
    return reply?.type === 'size' ? reply.size : 0;
  }

  /**
   * Stops the worker; searches still waiting resolve as misses. The worker is asked to exit
   * between two of its messages (terminating it inside hnswlib's native code can abort the
   * process); only if it has not within `graceMs` (a long rebuild) is it terminated.
   */
  async close(graceMs = 10_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const wasRunning = !this.stopped;
    this.stop();
    if (!wasRunning) {
      await this.worker.terminate();
      return;
    }
    const exited = new Promise<boolean>((resolve) => {
      this.worker.once('exit', () => resolve(true));
      const timer = setTimeout(() => resolve(false), graceMs);
      timer.unref();
    });
    this.worker.ref();
    this.post({ type: 'close' });
    if (!(await exited)) await this.worker.terminate();
  }

  private request(build: (seq: number) => WorkerRequest, transfer: ArrayBuffer[] = []): Promise<WorkerReply | undefined> {
    if (this.stopped) return Promise.resolve(undefined);
    const seq = this.nextSeq++;
    return new Promise((resolve) => {
      // A reply awaited keeps the process alive, so that it arrives.
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(seq, resolve);
      this.post(build(seq), transfer);
    });
  }

  private post(message: WorkerRequest, transfer: ArrayBuffer[] = []): void {
    try {
      this.worker.postMessage(message, transfer);
    } catch (error) {
      this.fail({ err: error }, 'could not message the vector index worker; semantic cache lookups miss from now on');
    }
  }

  private receive(reply: WorkerReply): void {
    if (reply.type === 'log') {
      this.logger[reply.level](reply.data, reply.msg);
      return;
    }
    const resolve = this.waiting.get(reply.seq);
    if (resolve === undefined) return;
    this.waiting.delete(reply.seq);
    if (this.waiting.size === 0) this.worker.unref();
    resolve(reply);
  }

  /** The worker is gone, or must be treated so: logged once, unless it was closed on purpose. */
  private fail(data: Record<string, unknown>, message: string): void {
    if (this.stopped) return;
    this.logger.error(data, message);
    this.stop();
    void this.worker.terminate();
  }

  private stop(): void {
    this.stopped = true;
    this.worker.unref();
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const resolve of waiting) resolve(undefined);
  }
}
