import { createRequire } from 'node:module';
import type { EventStreamCodec } from '@smithy/eventstream-codec';
import type { FrameParser } from '../types.js';
import type { SseEvent } from '../shared/sse-parser.js';
import { upstreamMalformed } from '../shared/errors.js';

/** A frame larger than this is not Bedrock's (its frames carry one event each). */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;

let shared: EventStreamCodec | undefined;

/** Smithy's codec, loaded on the first Bedrock stream (about 1 MB of heap a daemon without Bedrock does not need). */
function codec(): EventStreamCodec {
  if (shared) return shared;
  const { EventStreamCodec: Codec } = createRequire(import.meta.url)('@smithy/eventstream-codec') as typeof import('@smithy/eventstream-codec');
  shared = new Codec(
    (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
    (text) => Buffer.from(text, 'utf8'),
  );
  return shared;
}

/**
 * `application/vnd.amazon.eventstream` (AWS's binary framing: a prelude with the lengths and
 * its CRC32, typed headers, the payload, the message's CRC32), decoded by Smithy's codec (the
 * AWS SDK's own) into the events the stream decoder reads: an event frame's `:event-type`, an
 * exception frame's `:exception-type` (both with their JSON payload), or an error frame as
 * `error` with `{message}`. A frame may span reads, and a read may hold several frames.
 */
export function createEventStreamParser(provider: string): FrameParser {
  // Reads not yet decoded, joined only once a whole frame is in (a large frame over many reads is copied once).
  let pending: Buffer[] = [];
  let size = 0;
  return {
    push(chunk: Buffer): SseEvent[] {
      pending.push(chunk);
      size += chunk.length;
      const events: SseEvent[] = [];
      while (size >= 4) {
        let head = pending[0] as Buffer;
        if (head.length < 4) head = join();
        const total = head.readUInt32BE(0);
        if (total < 16 || total > MAX_FRAME_BYTES) throw upstreamMalformed(provider, `an event-stream frame of ${total} bytes`);
        if (size < total) break;
        const bytes = head.length >= total ? head : join();
        events.push(decodeFrame(provider, bytes.subarray(0, total)));
        const rest = bytes.subarray(total);
        pending = rest.length > 0 ? [rest, ...pending.slice(1)] : pending.slice(1);
        size -= total;
      }
      return events;
    },
    end(): SseEvent[] {
      if (size > 0) throw upstreamMalformed(provider, 'an event stream that ended inside a frame');
      return [];
    },
  };

  function join(): Buffer {
    const whole = Buffer.concat(pending, size);
    pending = [whole];
    return whole;
  }
}

function decodeFrame(provider: string, bytes: Buffer): SseEvent {
  let message;
  try {
    message = codec().decode(bytes);
  } catch {
    throw upstreamMalformed(provider, 'an event-stream frame whose checksum or headers are broken');
  }
  const header = (name: string): string | undefined => {
    const value = message.headers[name];
    return value?.type === 'string' ? value.value : undefined;
  };
  const data = Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength).toString('utf8');
  const type = header(':message-type');
  if (type === 'exception') return { event: header(':exception-type') ?? 'exception', data };
  if (type === 'error') return { event: 'error', data: JSON.stringify({ message: `${header(':error-code') ?? 'error'}: ${header(':error-message') ?? ''}` }) };
  return { event: header(':event-type') ?? '', data };
}
