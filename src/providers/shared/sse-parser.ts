/**
 * Incremental Server-Sent Events parser (the WHATWG event-stream rules): lines end with
 * \n, \r\n or \r (Gemini uses \r\n); `data:` lines of one event join with \n; a blank line
 * dispatches; `:` lines are comments. Bytes in, events out, no I/O.
 */

export interface SseEvent {
  event?: string;
  data: string;
}

export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event: string | undefined;
  private readonly decoder = new TextDecoder('utf-8');
  /** A chunk ended with \r: a following \n belongs to the same line break. */
  private skipLeadingNewline = false;

  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (this.skipLeadingNewline && text.startsWith('\n')) text = text.slice(1);
    this.skipLeadingNewline = false;
    this.buffer += text;
    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      if (ch === 13 && i === this.buffer.length - 1) {
        this.skipLeadingNewline = true;
      }
      this.line(this.buffer.slice(start, i), events);
      if (ch === 13 && this.buffer.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** The end of the stream: an event without its blank line is still dispatched. */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    const rest = this.buffer + this.decoder.decode();
    this.buffer = '';
    if (rest !== '') this.line(rest, events);
    this.dispatch(events);
    return events;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === '') {
      this.dispatch(events);
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
  }

  private dispatch(events: SseEvent[]): void {
    if (this.data.length > 0) {
      const event: SseEvent = { data: this.data.join('\n') };
      if (this.event !== undefined) event.event = this.event;
      events.push(event);
    }
    this.data = [];
    this.event = undefined;
  }
}
