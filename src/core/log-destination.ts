import { write as fsWrite, writeSync } from 'node:fs';

/** How a destination writes: fs.write's signature for a Buffer (tests pass their own). */
export type WriteFn = (fd: number, buffer: Buffer, offset: number, length: number, position: null, callback: (error: NodeJS.ErrnoException | null, written: number) => void) => void;

export interface LogDestinationOptions {
  /** Pending characters that start a write without waiting for the next flush (64 KiB). */
  flushAt?: number;
  /** Pending characters past which new lines are dropped (and counted) while the fd is slow (16 MiB). */
  maxPending?: number;
  /** Milliseconds between retries when the fd answers EAGAIN (a full non-blocking pipe). */
  retryMs?: number;
  write?: WriteFn;
}

const DEFAULT_FLUSH_AT = 64 * 1024;
const DEFAULT_MAX_PENDING = 16 * 1024 * 1024;
const DEFAULT_RETRY_MS = 10;

/** Every open destination, for one process 'exit' listener that writes what they still hold. */
const open = new Set<LogDestination>();
let exitHooked = false;

/**
 * The daemon's log output (stdout by default), given to pino as its stream. Lines gather in
 * memory and go out in one write(2) per 64 KiB, at each flush() (the daemon flushes every
 * second and at shutdown) and synchronously when the process exits. pino.destination (sonic-boom,
 * 4 KiB batches) cost ~5.5 µs per line here (it re-measures its whole pending buffer with
 * Buffer.byteLength on every line, then writes the string); this costs ~1 µs.
 *
 * Partial writes continue where they stopped; EAGAIN (a non-blocking pipe that is full) is
 * retried; any other error (the reader went away: EPIPE) stops the output for good rather than
 * fail the daemon over its logs. While the fd cannot keep up, pending lines are capped at 16 MiB;
 * lines past that are dropped and a warning line says how many, once writing resumes.
 */
export class LogDestination {
  private lines: string[] = [];
  private pendingChars = 0;
  private writing = false;
  private broken = false;
  private dropped = 0;
  private waiters: (() => void)[] = [];
  private readonly flushAt: number;
  private readonly maxPending: number;
  private readonly retryMs: number;
  private readonly writeFn: WriteFn;

  constructor(
    private readonly fd: number,
    options: LogDestinationOptions = {},
  ) {
    this.flushAt = options.flushAt ?? DEFAULT_FLUSH_AT;
    this.maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
    this.retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
    this.writeFn = options.write ?? (fsWrite as unknown as WriteFn);
    open.add(this);
    if (!exitHooked) {
      exitHooked = true;
      process.on('exit', () => {
        for (const destination of open) destination.flushSync();
      });
    }
  }

  /** pino's stream interface: one serialized line (with its newline). */
  write(line: string): boolean {
    if (this.broken) return true;
    if (this.pendingChars + line.length > this.maxPending) {
      this.dropped++;
      return false;
    }
    this.lines.push(line);
    this.pendingChars += line.length;
    if (!this.writing && this.pendingChars >= this.flushAt) this.writeOut();
    return true;
  }

  /** Writes what is pending; `done` once it (and any write in flight) is on the fd. */
  flush(done?: () => void): void {
    if (done) {
      if (this.broken || (!this.writing && this.lines.length === 0 && this.dropped === 0)) {
        done();
        return;
      }
      this.waiters.push(done);
    }
    if (!this.writing) this.writeOut();
  }

  /**
   * At exit: the pending lines, synchronously. A write already in flight on libuv's pool is
   * not waited for (the process is ending), so its lines may land after these.
   */
  flushSync(): void {
    if (this.broken || (this.lines.length === 0 && this.dropped === 0)) return;
    const buffer = this.take();
    let offset = 0;
    try {
      while (offset < buffer.length) offset += writeSync(this.fd, buffer, offset, buffer.length - offset);
    } catch {
      this.broken = true;
    }
  }

  /**
   * Writes what is pending and forgets the fd (for a caller about to close it: the exit hook
   * must not write to a number the system may have given to another file since).
   */
  end(): void {
    this.flushSync();
    open.delete(this);
  }

  /** Pending lines as one Buffer, with the dropped-lines warning first when lines were dropped. */
  private take(): Buffer {
    if (this.dropped > 0) {
      this.lines.unshift(`${JSON.stringify({ level: 40, time: Date.now(), dropped: this.dropped, msg: 'log lines dropped: the log output could not keep up' })}\n`);
      this.dropped = 0;
    }
    const text = this.lines.length === 1 ? (this.lines[0] as string) : this.lines.join('');
    this.lines = [];
    this.pendingChars = 0;
    return Buffer.from(text, 'utf8');
  }

  private writeOut(): void {
    if (this.broken) return this.release();
    if (this.lines.length === 0 && this.dropped === 0) return this.release();
    this.writing = true;
    this.send(this.take(), 0);
  }

  private send(buffer: Buffer, offset: number): void {
    this.writeFn(this.fd, buffer, offset, buffer.length - offset, null, (error, written) => {
      if (error) {
        if (error.code === 'EAGAIN') {
          setTimeout(() => this.send(buffer, offset), this.retryMs);
          return;
        }
        this.broken = true;
        this.lines = [];
        this.pendingChars = 0;
        this.writing = false;
        this.release();
        return;
      }
      if (offset + written < buffer.length) {
        this.send(buffer, offset + written);
        return;
      }
      this.writing = false;
      // More came meanwhile: a full batch, or a flush is waiting for it.
      if (this.pendingChars >= this.flushAt || (this.waiters.length > 0 && (this.lines.length > 0 || this.dropped > 0))) this.writeOut();
      else this.release();
    });
  }

  private release(): void {
    if (this.writing) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const done of waiters) done();
  }
}
