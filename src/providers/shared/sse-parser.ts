/**
 * Incremental Server-Sent Events parser (the WHATWG event-stream rules): lines end with
 * \n, \r\n or \r (Gemini uses \r\n); `data:` lines of one event join with \n; a blank line
 * dispatches; `:` lines are comments. Bytes in, events out, no I/O.
 */
import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  event?: string;
  data: string;
}

export class SseParser {
  private buffer = '';
  private readonly data: string[] = [];
  private event: string | undefined;
  /** Keeps a character split between two chunks whole (a third of TextDecoder's cost per chunk). */
  private readonly decoder = new StringDecoder('utf8');
  /** A chunk ended with \r: a following \n belongs to the same line break. */
  private skipLeadingNewline = false;

  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.write(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if (this.skipLeadingNewline && text.charCodeAt(0) === 10) text = text.slice(1);
    this.skipLeadingNewline = false;
    const buffer = this.buffer === '' ? text : this.buffer + text;
    const events: SseEvent[] = [];
    let start = 0;
    if (buffer.indexOf('\r') === -1) {
      // Lines end with \n only (OpenAI, Anthropic): the native search finds them.
      for (let end = buffer.indexOf('\n'); end !== -1; end = buffer.indexOf('\n', start)) {
        this.line(buffer.slice(start, end), events);
        start = end + 1;
      }
    } else {
      for (let i = 0; i < buffer.length; i++) {
        const ch = buffer.charCodeAt(i);
        if (ch !== 10 && ch !== 13) continue;
        if (ch === 13 && i === buffer.length - 1) {
          this.skipLeadingNewline = true;
        }
        this.line(buffer.slice(start, i), events);
        if (ch === 13 && buffer.charCodeAt(i + 1) === 10) i++;
        start = i + 1;
      }
    }
    this.buffer = start === 0 ? buffer : buffer.slice(start);
    return events;
  }

  /** The end of the stream: an event without its blank line is still dispatched. */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    const rest = this.buffer + this.decoder.end();
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
      const event: SseEvent = { data: this.data.length === 1 ? (this.data[0] as string) : this.data.join('\n') };
      if (this.event !== undefined) event.event = this.event;
      events.push(event);
      this.data.length = 0;
    }
    this.event = undefined;
  }
}
