import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

/**
 * A password worker (see password-pool.ts): one bcrypt job at a time, synchronously (the
 * thread has nothing else to do, and bcryptjs's sync functions skip the async version's
 * yielding between chunks).
 */

export type PasswordJob =
  | { seq: number; op: 'hash'; password: string; rounds: number }
  | { seq: number; op: 'compare'; password: string; hash: string };

export interface PasswordWorkerInit {
  /** Added to the worker thread's nice value (Linux); 0: the process's priority. */
  nice: number;
}

export type PasswordReply = { seq: number; ok: true; value: string | boolean } | { seq: number; ok: false; message: string };

function run(job: PasswordJob): PasswordReply {
  try {
    const value = job.op === 'hash' ? bcrypt.hashSync(job.password, job.rounds) : bcrypt.compareSync(job.password, job.hash);
    return { seq: job.seq, ok: true, value };
  } catch (error) {
    return { seq: job.seq, ok: false, message: error instanceof Error ? error.message : String(error) };
  }
}

const port = parentPort;
if (port === null) throw new Error('password-worker.ts runs as a worker thread (see password-pool.ts)');

/**
 * On Linux a thread has its own nice value (setpriority(2) with pid 0 is the calling thread),
 * so this worker yields its core to the event loop and its calls in flight: a signup flood
 * waits, inference does not. Elsewhere the call would renice the whole process: not done there.
 */
const { nice } = workerData as PasswordWorkerInit;
if (process.platform === 'linux' && nice > 0) {
  try {
    setPriority(0, Math.min(19, getPriority(0) + nice));
  } catch {
    // Not allowed (a sandbox): the worker runs at the process's priority.
  }
}

port.on('message', (job: PasswordJob) => port.postMessage(run(job)));
