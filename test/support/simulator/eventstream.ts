import { crc32 } from 'node:zlib';

/**
 * The AWS event-stream binary framing (application/vnd.amazon.eventstream), encoded by hand so the
 * simulator does not share code with the gateway's decoder (@smithy/eventstream-codec). A message:
 *
 *   prelude   total length (uint32 BE) | headers length (uint32 BE) | prelude CRC32 (uint32 BE, over the first 8 bytes)
 *   headers   each: name length (1 byte) | name | value type (1 byte; 7 = string) | value length (uint16 BE) | value
 *   payload   the bytes (Bedrock: JSON)
 *   trailer   message CRC32 (uint32 BE) over everything before it
 *
 * Only string headers are written: the only kind Bedrock sends.
 */

const PRELUDE_BYTES = 12;
const CRC_BYTES = 4;
const STRING_TYPE = 7;

function encodeHeaders(headers: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const nameBytes = Buffer.from(name, 'utf8');
    const valueBytes = Buffer.from(value, 'utf8');
    if (nameBytes.length > 255) throw new Error(`event-stream header name too long: ${name}`);
    if (valueBytes.length > 0xffff) throw new Error(`event-stream header value too long: ${name}`);
    const head = Buffer.alloc(1 + nameBytes.length + 1 + 2);
    head.writeUInt8(nameBytes.length, 0);
    nameBytes.copy(head, 1);
    head.writeUInt8(STRING_TYPE, 1 + nameBytes.length);
    head.writeUInt16BE(valueBytes.length, 2 + nameBytes.length);
    parts.push(head, valueBytes);
  }
  return Buffer.concat(parts);
}

/** One event-stream message with string headers and the given payload. */
export function encodeMessage(headers: Record<string, string>, payload: Buffer | string): Buffer {
  const headerBytes = encodeHeaders(headers);
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const total = PRELUDE_BYTES + headerBytes.length + body.length + CRC_BYTES;
  const message = Buffer.alloc(total);
  message.writeUInt32BE(total, 0);
  message.writeUInt32BE(headerBytes.length, 4);
  message.writeUInt32BE(crc32(message.subarray(0, 8)), 8);
  headerBytes.copy(message, PRELUDE_BYTES);
  body.copy(message, PRELUDE_BYTES + headerBytes.length);
  message.writeUInt32BE(crc32(message.subarray(0, total - CRC_BYTES)), total - CRC_BYTES);
  return message;
}

/** An event message, as Bedrock sends each ConverseStream event: `:event-type`, JSON, `:message-type` event. */
export function eventMessage(eventType: string, payload: Buffer | string): Buffer {
  return encodeMessage({ ':event-type': eventType, ':content-type': 'application/json', ':message-type': 'event' }, payload);
}

/** A modelled exception mid-stream (`:message-type` exception), e.g. `throttlingException`. */
export function exceptionMessage(exceptionType: string, payload: Buffer | string): Buffer {
  return encodeMessage({ ':exception-type': exceptionType, ':content-type': 'application/json', ':message-type': 'exception' }, payload);
}

/** A decoded message: for the simulator's own checks; the gateway and the tests use smithy's codec. */
export interface DecodedMessage {
  headers: Record<string, string>;
  payload: Buffer;
}

/** Splits a buffer of whole messages (CRCs checked); throws on a broken frame. */
export function decodeMessages(data: Buffer): DecodedMessage[] {
  const out: DecodedMessage[] = [];
  for (let at = 0; at < data.length; ) {
    if (data.length - at < PRELUDE_BYTES + CRC_BYTES) throw new Error('event-stream: truncated prelude');
    const total = data.readUInt32BE(at);
    const headersLength = data.readUInt32BE(at + 4);
    if (crc32(data.subarray(at, at + 8)) !== data.readUInt32BE(at + 8)) throw new Error('event-stream: prelude CRC mismatch');
    if (at + total > data.length) throw new Error('event-stream: truncated message');
    if (crc32(data.subarray(at, at + total - CRC_BYTES)) !== data.readUInt32BE(at + total - CRC_BYTES)) throw new Error('event-stream: message CRC mismatch');
    const headers: Record<string, string> = {};
    let h = at + PRELUDE_BYTES;
    const end = h + headersLength;
    while (h < end) {
      const nameLength = data.readUInt8(h);
      const name = data.toString('utf8', h + 1, h + 1 + nameLength);
      const type = data.readUInt8(h + 1 + nameLength);
      if (type !== STRING_TYPE) throw new Error(`event-stream: header type ${type} not supported`);
      const valueLength = data.readUInt16BE(h + 2 + nameLength);
      headers[name] = data.toString('utf8', h + 4 + nameLength, h + 4 + nameLength + valueLength);
      h += 4 + nameLength + valueLength;
    }
    out.push({ headers, payload: data.subarray(end, at + total - CRC_BYTES) });
    at += total;
  }
  return out;
}
