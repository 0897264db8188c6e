import type { ServerResponse } from 'node:http';
import { responseHeaders } from './respond.js';

/** One Server-Sent Event: `event` is the `event:` line (absent in the chat-completions format). */
export interface SseEvent {
  event?: string;
  data: string;
}

/**
 * Writes Server-Sent Events to a response, waiting for `drain` when the socket buffer is full
 * so that a slow client slows the producer instead of growing memory.
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

  /**
   * Sends the head now, with the opening events when there are some (one write for both).
   * Undefined when the socket took them, else a promise of `drain`.
   */
  open(status = 200, headers: Record<string, string> = {}, opening: readonly SseEvent[] = []): Promise<void> | undefined {
    this.res.writeHead(
      status,
      responseHeaders(this.res, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' }, headers),
    );
    if (opening.length > 0) return this.sendAll(opening);
    this.res.flushHeaders();
    return undefined;
  }

  /** Sends one event; `data` is written as is (callers pass JSON text). */
  send(data: string, event?: string): Promise<void> {
    return this.write(frame(data, event)) ?? Promise.resolve();
  }

  /**
   * Sends events in one write (the events one upstream read produced: one syscall, as a byte
   * pipe makes). Undefined when the socket took them, else a promise of `drain`.
   */
  sendAll(events: readonly SseEvent[]): Promise<void> | undefined {
    if (events.length === 0) return undefined;
    let text = '';
    for (const { data, event } of events) text += frame(data, event);
    return this.write(text);
  }

  /** A comment line, used as a keep-alive that clients ignore. */
  comment(text: string): Promise<void> {
    return this.write(`: ${text}\n\n`) ?? Promise.resolve();
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }

  /** Undefined when the socket took the text (or the response is closed), else a promise of `drain`. */
  private write(text: string): Promise<void> | undefined {
    if (this.isClosed) return undefined;
    if (this.res.write(text)) return undefined;
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

function frame(data: string, event: string | undefined): string {
  return event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
}
