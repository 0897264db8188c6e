import { Pool } from 'undici';
import { Worker } from 'node:worker_threads';
import type { DaemonOptions, DaemonRequest } from './daemon.js';
import { type Fixture } from './specs.js';
import { BODY_LIMIT } from './values.js';
import { type Answer, type FuzzInput, fuzzPool } from './wire.js';

/** The fuzzer run's bookkeeping: tallies, findings, crashes, and the daemon in its worker thread. */

/** Inputs in flight at once (and the pool's connections). */
export const CONCURRENCY = 16;

export interface Tally {
  count: number;
  statuses: Map<number | string, number>;
  accepted: number;
}

export interface Finding {
  index: number;
  input: FuzzInput;
  answer: Answer;
  problem: string;
  /** The request id of the answer, then the daemon's log lines that name it. */
  logs: string[];
  /** The daemon that answered (another is started after a crash that ends its thread). */
  generation: number;
}

export interface CrashEvent {
  kind: string;
  stack: string;
  /** The thread ended (a restart followed); otherwise the daemon's thread carried on. */
  fatal: boolean;
}

export interface Crash extends CrashEvent {
  generation: number;
  /** The inputs in flight when it happened: one of them did it. */
  inFlight: { index: number; input: FuzzInput }[];
  /** Found by sending those inputs again one at a time. */
  culprit?: { index: number; input: FuzzInput };
}

/** What tells crashes apart: the error's first line and the first frame of its stack. */
export function signature(stack: string): string {
  const lines = stack.split('\n');
  return `${lines[0]} ${lines.find((line) => line.trim().startsWith('at '))?.trim() ?? ''}`;
}

/** A daemon in a worker thread (daemon.ts): its fixture, a pool to it, and its crashes. */
export class Daemon {
  private nextId = 0;
  private readonly pending = new Map<number, (result: unknown) => void>();
  /** The error that ended the daemon's thread, if one did. */
  dead: Error | undefined;
  readonly pool: Pool;

  private constructor(
    private readonly worker: Worker,
    readonly fixture: Fixture,
    readonly generation: number,
    onCrash: (daemon: Daemon, crash: CrashEvent) => void,
  ) {
    this.pool = fuzzPool(fixture.url, CONCURRENCY);
    worker.on('message', (message: { id?: number; result?: unknown; op?: string; kind?: string; stack?: string }) => {
      if (message.op === 'crash') onCrash(this, { kind: message.kind ?? 'uncaughtException', stack: message.stack ?? '', fatal: false });
      else if (message.id !== undefined) this.pending.get(message.id)?.(message.result);
    });
    worker.on('error', (error) => {
      this.dead = error;
      onCrash(this, { kind: 'thread ended', stack: error.stack ?? error.message, fatal: true });
    });
  }

  static start(generation: number, onCrash: (daemon: Daemon, crash: CrashEvent) => void): Promise<Daemon> {
    const options: DaemonOptions & { entry: string } = { entry: new URL('./daemon.ts', import.meta.url).href, bodyLimit: BODY_LIMIT };
    // No inherited --import hooks (the test runner's): worker-boot.mjs registers tsx itself. The
    // stack of a daemon's main thread (V8's default, 984 KB), not a worker's 4 MB: how deep a
    // recursion gets before "Maximum call stack size exceeded" must be the daemon's.
    const worker = new Worker(new URL('./worker-boot.mjs', import.meta.url), { workerData: options, execArgv: [], resourceLimits: { stackSizeMb: 984 / 1024 } });
    return new Promise((resolve, reject) => {
      const onError = (error: Error): void => reject(error);
      worker.once('error', onError);
      worker.once('message', (message: { op?: string; fixture?: Fixture }) => {
        worker.off('error', onError);
        if (message.op === 'ready' && message.fixture) resolve(new Daemon(worker, message.fixture, generation, onCrash));
        else reject(new Error(`daemon worker: unexpected first message ${JSON.stringify(message).slice(0, 2000)}`));
      });
    });
  }

  ask<T>(op: 'final'): Promise<T>;
  ask<T>(op: 'logs', requestIds: string[]): Promise<T>;
  ask<T>(op: 'stop'): Promise<T>;
  ask<T>(op: DaemonRequest['op'], requestIds?: string[]): Promise<T> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.dead) {
        reject(this.dead);
        return;
      }
      const timer = setTimeout(() => reject(new Error(`daemon worker: no answer to ${op}`)), 30_000);
      this.pending.set(id, (result) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(result as T);
      });
      this.worker.postMessage(op === 'logs' ? { id, op, requestIds: requestIds ?? [] } : { id, op });
    });
  }

  async stop(): Promise<void> {
    await this.pool.destroy();
    if (!this.dead) await this.ask('stop').catch(() => undefined);
    await this.worker.terminate();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
