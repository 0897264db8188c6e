import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from './db.js';

/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside whichever
 * commit crosses the threshold and fsyncs there (2-15 ms here), stalling every request behind
 * it. Once the hot path writes (the first settlement), a worker thread with its own
 * connection takes over: it runs a PASSIVE checkpoint (which never blocks writers) every
 * INTERVAL_MS, and the daemon's connection stops checkpointing. Until then SQLite's own
 * automatic checkpoint stays on, so an idle daemon pays for no thread. Once nothing has been
 * written for IDLE_MS or more, the worker runs a last checkpoint and stops (its isolate holds
 * about 16 MB, about half of which goes back to the system); the next write starts another.
 */

const INTERVAL_MS = 1000;
const IDLE_MS = 60_000;

export interface CheckpointerTiming {
  /** Between the worker's checkpoints. */
  intervalMs?: number;
  /** The worker stops after between one and two of these without a write. */
  idleMs?: number;
}

// Plain JavaScript so it runs the same from the compiled build and under tsx.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path);
db.pragma('busy_timeout = ' + workerData.busyTimeoutMs);
const timer = setInterval(() => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (error) { parentPort.postMessage(String(error && error.message)); }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  db.close();
  parentPort.postMessage('stopped');
});
`;

export class Checkpointer {
  private worker: Worker | undefined;
  /** Writes so far, and as the idle check last saw them. */
  private writes = 0;
  private seen = 0;
  private idleCheck: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly intervalMs: number;
  private readonly idleMs: number;

  constructor(
    private readonly db: Db,
    private readonly path: string,
    private readonly busyTimeoutMs: number,
    private readonly onError: (message: string) => void,
    timing: CheckpointerTiming = {},
  ) {
    this.intervalMs = timing.intervalMs ?? INTERVAL_MS;
    this.idleMs = timing.idleMs ?? IDLE_MS;
  }

  /** Whether the worker runs (for tests). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** Called after each hot-path write; starts the worker when none runs. */
  wrote(): void {
    this.writes++;
    if (this.worker || this.closed || this.path === ':memory:') return;
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: { path: this.path, busyTimeoutMs: this.busyTimeoutMs, intervalMs: this.intervalMs, module: createRequire(import.meta.url).resolve('better-sqlite3') },
    });
    this.db.pragma('wal_autocheckpoint = 0');
    worker.on('message', (message: string) => {
      if (message !== 'stopped') this.onError(message);
    });
    worker.on('error', (error) => this.onError(error.message));
    worker.unref();
    this.worker = worker;
    this.seen = this.writes;
    this.idleCheck = setInterval(() => {
      if (this.writes !== this.seen) this.seen = this.writes;
      else void this.halt();
    }, this.idleMs);
    this.idleCheck.unref();
  }

  /** Stops the worker for good (the store is closing). */
  async stop(): Promise<void> {
    this.closed = true;
    await this.halt();
  }

  /** Stops the worker after its last checkpoint; SQLite's automatic checkpoint takes over. */
  private async halt(): Promise<void> {
    clearInterval(this.idleCheck);
    this.idleCheck = undefined;
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    try {
      this.db.pragma('wal_autocheckpoint = 1000');
    } catch {
      // The connection is closed already: nothing left to checkpoint from it.
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => void worker.terminate().then(() => resolve()), 2000);
      worker.once('message', () => {
        clearTimeout(timer);
        void worker.terminate().then(() => resolve());
      });
      worker.postMessage('stop');
    });
  }
}
