import type { IncomingMessage } from 'node:http';
import { CallAborted, errors } from '../core/errors.js';

/** One body being read, watched for a stall: `touch` on each chunk, `stop` once it ended. */
export interface BodyIdleWatch {
  touch(): void;
  stop(): void;
}

const NO_WATCH: BodyIdleWatch = { touch() {}, stop() {} };

/**
 * The body reads in progress under one idle timeout, swept by one interval (a quarter of the
 * timeout, running only while there are reads) instead of a timer for each: a read costs a
 * Set insertion and deletion, a chunk an integer store. A read is cut after 4 to 5 sweeps
 * without a chunk: the timeout, at most a quarter late.
 */
class IdleSweep {
  tick = 0;
  private readonly reads = new Set<WatchedRead>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly idleMs: number) {}

  add(onIdle: () => void): WatchedRead {
    const read = new WatchedRead(this, onIdle);
    this.reads.add(read);
    this.timer ??= setInterval(() => this.sweep(), Math.max(10, Math.floor(this.idleMs / 4))).unref();
    return read;
  }

  remove(read: WatchedRead): void {
    this.reads.delete(read);
  }

  private sweep(): void {
    this.tick++;
    for (const read of this.reads) {
      if (this.tick - read.tick > 4) {
        this.reads.delete(read);
        read.onIdle();
      }
    }
    if (this.reads.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

class WatchedRead implements BodyIdleWatch {
  tick: number;
  constructor(
    private readonly sweep: IdleSweep,
    readonly onIdle: () => void,
  ) {
    this.tick = sweep.tick;
  }
  touch(): void {
    this.tick = this.sweep.tick;
  }
  stop(): void {
    this.sweep.remove(this);
  }
}

/** One sweep per idle timeout in use (one per daemon's config; tests run several). */
const sweeps = new Map<number, IdleSweep>();

/**
 * Watches a body being read: `onIdle` is called once when no byte of it arrives for `idleMs`
 * (0: never) before `stop`. A body the parser already holds whole needs no watch at all.
 */
export function bodyIdleWatch(req: IncomingMessage, idleMs: number, onIdle: () => void): BodyIdleWatch {
  if (idleMs <= 0 || req.complete) return NO_WATCH;
  let sweep = sweeps.get(idleMs);
  if (!sweep) {
    sweep = new IdleSweep(idleMs);
    sweeps.set(idleMs, sweep);
  }
  return sweep.add(onIdle);
}

/**
 * bodyIdleWatch for a body another reader consumes (multipart): its chunks are seen through
 * a `data` listener of its own, and the watch stops when the body ends or the request closes.
 */
export function watchBodyIdle(req: IncomingMessage, idleMs: number, onIdle: () => void): () => void {
  const watch = bodyIdleWatch(req, idleMs, onIdle);
  if (watch === NO_WATCH) return noop;
  const touch = (): void => watch.touch();
  const stop = (): void => {
    watch.stop();
    req.off('data', touch);
  };
  req.on('data', touch);
  req.once('end', stop);
  req.once('close', stop);
  return stop;
}

const noop = (): void => {};

/**
 * Reads a request body into memory up to `limit` bytes: 413 as soon as the declared length
 * or the bytes received pass it (without buffering the rest); 408 when it stalls for
 * `idleMs` (the server then closes the connection: the rest of the body is never read).
 */
export function readBody(req: IncomingMessage, limit: number, idleMs = 0): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(errors.bodyTooLarge(limit));
  }
  // Events, not `for await`: the async iterator costs more than the read on small bodies.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const watch = bodyIdleWatch(req, idleMs, () => {
      req.off('data', onData);
      req.pause();
      reject(errors.bodyTimeout(idleMs));
    });
    const onData = (chunk: Buffer): void => {
      watch.touch();
      size += chunk.length;
      if (size > limit) {
        watch.stop();
        req.off('data', onData);
        req.resume();
        reject(errors.bodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      watch.stop();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    });
    // The client went away mid-body (or node's request_timeout cut it): an abort, not a server error.
    req.once('error', () => {
      watch.stop();
      reject(new CallAborted('client disconnected during the body'));
    });
  });
}

/**
 * Reads and parses a JSON body. Any content type but multipart/form-data is tried as JSON
 * (curl -d sends application/x-www-form-urlencoded by default). An empty body is `undefined`.
 */
export async function readJson(req: IncomingMessage, limit: number, idleMs = 0): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (type.startsWith('multipart/form-data')) throw errors.unsupportedMediaType('application/json');
  const body = await readBody(req, limit, idleMs);
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw errors.invalidJson();
  }
}
