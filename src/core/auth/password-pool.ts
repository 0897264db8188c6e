import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { errors } from '../errors.js';
// Types only: bcryptjs is loaded in the workers alone.
import type { PasswordJob, PasswordReply, PasswordWorkerInit } from './password-worker.js';

/** Workers by default: one per core, at most 4 (bcrypt at the default 10 rounds is 0.1–0.2 s of one core in bcryptjs). */
export const DEFAULT_PASSWORD_WORKERS = Math.max(1, Math.min(4, availableParallelism()));
/** Jobs waiting for a worker, at most; past it a call fails at once (503) instead of queueing without bound. */
export const DEFAULT_PASSWORD_QUEUE = 64;
/**
 * Added to the workers' nice value (Linux: per thread; not done elsewhere). At +10 a worker gets
 * about a tenth of a core the event loop also wants: calls in flight come first, hashing takes
 * the rest (all of it while the daemon is otherwise idle).
 */
export const PASSWORD_WORKER_NICE = 10;
/**
 * A worker idle this long stops; the next job starts another (about 50 ms, beside a hash's
 * 100 ms). Each worker holds a V8 isolate of about 16 MB, of which about half goes back to the
 * system when it stops: a burst of logins should not keep that for the daemon's lifetime.
 */
export const DEFAULT_PASSWORD_IDLE_MS = 10_000;

export interface PasswordPoolOptions {
  /** Worker threads, at most (started as jobs arrive). */
  workers?: number;
  /** Jobs waiting for a free worker, at most. */
  maxQueued?: number;
  /** Added to the workers' nice value (Linux); 0 runs them at the process's priority. */
  nice?: number;
  /** Where a worker's failure is told. */
  logger?: Logger;
  /** An idle worker stops after this long; 0 keeps workers until close(). */
  idleMs?: number;
}

type JobInput = { op: 'hash'; password: string; rounds: number } | { op: 'compare'; password: string; hash: string };

interface Pending {
  input: JobInput;
  resolve: (value: string | boolean) => void;
  reject: (error: unknown) => void;
}

interface Slot {
  worker: Worker;
  /** The job this worker is running; undefined: idle. */
  job: Pending | undefined;
  seq: number;
  /** Stops this worker once it has been idle for idleMs. */
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * The worker's module: the compiled .js next to this file, or, when this file runs as
 * TypeScript under tsx (tests, an edited checkout), the .ts source (as vector-index.ts does).
 */
function startWorker(workerData: PasswordWorkerInit): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./password-worker.js', import.meta.url), { workerData });
  // Node 20 loads a worker's entry before any --import hook applies: a JavaScript stub
  // registers tsx in the worker first, then imports the source.
  const tsx = import.meta.resolve('tsx/esm/api');
  const source = new URL('./password-worker.ts', import.meta.url).href;
  const stub = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(stub, { eval: true, workerData });
}

/**
 * bcrypt off the event loop: hash and compare run in a few worker threads, so a flood of
 * signups or logins costs those threads' time, not every call in flight. Workers start on
 * first use (a daemon serving only API keys never hashes) and hold the process open only while
 * they run a job. Jobs beyond the free workers wait in a bounded queue; when it is full a call
 * fails at once with 503 `overloaded` and `retry-after: 1`.
 */
export class PasswordPool {
  readonly size: number;
  readonly maxQueued: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private readonly logger: Logger | undefined;
  private readonly nice: number;
  private readonly idleMs: number;
  private nextSeq = 1;
  private closed = false;

  constructor(options: PasswordPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(options.workers ?? DEFAULT_PASSWORD_WORKERS));
    this.maxQueued = Math.max(0, Math.floor(options.maxQueued ?? DEFAULT_PASSWORD_QUEUE));
    this.logger = options.logger;
    this.nice = Math.max(0, Math.min(19, Math.floor(options.nice ?? PASSWORD_WORKER_NICE)));
    this.idleMs = Math.max(0, Math.floor(options.idleMs ?? DEFAULT_PASSWORD_IDLE_MS));
  }

  /** A bcrypt hash of `password` at `rounds` (a fresh salt). */
  async hash(password: string, rounds: number): Promise<string> {
    return (await this.submit({ op: 'hash', password, rounds })) as string;
  }

  /** Whether `password` matches the bcrypt `hash`. */
  async compare(password: string, hash: string): Promise<boolean> {
    return (await this.submit({ op: 'compare', password, hash })) as boolean;
  }

  /** Workers started, jobs running and jobs waiting (for tests and metrics). */
  stats(): { workers: number; running: number; queued: number } {
    return { workers: this.slots.length, running: this.slots.filter((slot) => slot.job).length, queued: this.queue.length };
  }

  /** Stops the workers; jobs running or waiting fail (503 shutting down), later calls too. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const stopped = errors.shuttingDown();
    for (const pending of this.queue.splice(0)) pending.reject(stopped);
    const slots = this.slots.splice(0);
    for (const slot of slots) {
      clearTimeout(slot.idleTimer);
      slot.job?.reject(stopped);
      slot.job = undefined;
    }
    await Promise.all(slots.map((slot) => slot.worker.terminate().catch(() => undefined)));
  }

  private submit(input: JobInput): Promise<string | boolean> {
    if (this.closed) return Promise.reject(errors.shuttingDown());
    const slot = this.freeSlot();
    if (!slot && this.queue.length >= this.maxQueued) return Promise.reject(errors.passwordQueueFull());
    return new Promise((resolve, reject) => {
      const pending: Pending = { input, resolve, reject };
      if (slot) this.run(slot, pending);
      else this.queue.push(pending);
    });
  }

  /** An idle worker, or a new one while the pool has room; undefined when all are busy. */
  private freeSlot(): Slot | undefined {
    const idle = this.slots.find((slot) => !slot.job);
    if (idle) return idle;
    if (this.slots.length >= this.size) return undefined;
    const slot: Slot = { worker: startWorker({ nice: this.nice }), job: undefined, seq: 0, idleTimer: undefined };
    slot.worker.unref();
    slot.worker.on('message', (reply: PasswordReply) => this.receive(slot, reply));
    slot.worker.on('error', (error) => this.lose(slot, error));
    slot.worker.on('exit', (code) => this.lose(slot, new Error(`password worker exited with code ${code}`)));
    this.slots.push(slot);
    return slot;
  }

  private run(slot: Slot, pending: Pending): void {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    slot.job = pending;
    slot.seq = this.nextSeq++;
    // A job awaited keeps the process alive (a CLI's one hash), an idle worker does not.
    slot.worker.ref();
    slot.worker.postMessage({ seq: slot.seq, ...pending.input } satisfies PasswordJob);
  }

  private receive(slot: Slot, reply: PasswordReply): void {
    const job = slot.job;
    if (!job || reply.seq !== slot.seq) return;
    slot.job = undefined;
    slot.worker.unref();
    if (reply.ok) job.resolve(reply.value);
    else job.reject(new Error(reply.message));
    this.next(slot);
  }

  /** Hands the next waiting job to `slot` (idle), or to a new worker when `slot` is gone. */
  private next(slot?: Slot): void {
    const pending = this.queue.shift();
    if (!pending) {
      if (slot) this.retireWhenIdle(slot);
      return;
    }
    const target = slot && this.slots.includes(slot) ? slot : this.freeSlot();
    if (target) this.run(target, pending);
    else this.queue.unshift(pending);
  }

  /** Stops `slot`'s worker if it is still idle after idleMs (taken out of the pool first, so its exit is no failure). */
  private retireWhenIdle(slot: Slot): void {
    if (this.idleMs === 0 || slot.job) return;
    clearTimeout(slot.idleTimer);
    slot.idleTimer = setTimeout(() => {
      slot.idleTimer = undefined;
      const index = this.slots.indexOf(slot);
      if (slot.job || index === -1) return;
      this.slots.splice(index, 1);
      void slot.worker.terminate().catch(() => undefined);
    }, this.idleMs);
    slot.idleTimer.unref();
  }

  /** A worker failed or exited: its job fails, the next job gets a new worker. */
  private lose(slot: Slot, error: unknown): void {
    const index = this.slots.indexOf(slot);
    if (index === -1) return;
    this.slots.splice(index, 1);
    const job = slot.job;
    slot.job = undefined;
    clearTimeout(slot.idleTimer);
    void slot.worker.terminate().catch(() => undefined);
    this.logger?.error({ err: error }, 'a password worker failed; starting another for the next job');
    job?.reject(errors.internal());
    if (!this.closed) this.next();
  }
}

let shared: PasswordPool | undefined;

/** The process's pool for callers without one of their own (`gateway init`, tests). */
export function sharedPasswordPool(): PasswordPool {
  return (shared ??= new PasswordPool());
}
