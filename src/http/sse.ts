import type { ServerResponse } from 'node:http';
import { responseHeaders } from './respond.js';

/**
 * Writes Server-Sent Events to a response, one event per write, waiting for `drain` when the
 * socket buffer is full so that a slow client slows the producer instead of growing memory.
 */
export class SseWriter {
  private closed = false;

  constructor(private readonly res: ServerResponse) {
    res.once('close', () => {
      this.closed = true;
    });
  }

  get isClosed(): boolean {
    return this.closed || this.res.destroyed;
  }

  open(status = 200, headers: Record<string, string> = {}): void {
    this.res.writeHead(
      status,
      responseHeaders(this.res, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' }, headers),
    );
    this.res.flushHeaders();
  }

  /** Sends one event; `data` is written as is (callers pass JSON text). */
  send(data: string, event?: string): Promise<void> {
    const frame = event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
    return this.write(frame);
  }

  /** A comment line, used as a keep-alive that clients ignore. */
  comment(text: string): Promise<void> {
    return this.write(`: ${text}\n\n`);
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }

  private write(frame: string): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    if (this.res.write(frame)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.once('drain', done);
      this.res.once('close', done);
    });
  }
}
