import type { AttributeValue, Attributes, HrTime, Link } from '@opentelemetry/api';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';

/**
 * OTLP/protobuf encoding of a batch of spans (an ExportTraceServiceRequest), the bytes the
 * exporter posts. It writes what `@opentelemetry/otlp-transformer`'s ProtobufTraceSerializer
 * writes, byte for byte (test/core/otlp-proto.test.ts compares them), in about a third of its
 * CPU: one pass instead of a size estimate and a write, strings written in place, the resource
 * and scope encoded once, no buffer per id. At 100% sampling the serializer was half of what
 * traces cost a chat call (issue 31's +10% budget).
 *
 * Field numbers are opentelemetry-proto's (trace/v1/trace.proto, common/v1/common.proto).
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

// Span flags (trace.proto SpanFlags): the W3C flags, and whether the parent was remote.
const FLAGS_HAS_IS_REMOTE = 0x100;
const FLAGS_IS_REMOTE = 0x200;

const INT64_MIN = -(2 ** 63);
const INT64_END = 2 ** 63;

/** A hex digit's value by character code (ids come from the SDK's generator or a validated traceparent). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) HEX[65 + i] = HEX[97 + i] = 10 + i;

const MIN_BUFFER = 16 * 1024;
const EMPTY = Buffer.alloc(0);

class Writer {
  buf: Buffer = EMPTY;
  pos = 0;
  /** The last request's size. */
  last = 0;

  ensure(bytes: number): void {
    const needed = this.pos + bytes;
    if (needed <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < needed) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A varint of a non-negative integer below 2^32 (tags, lengths, counts, enums). */
  uint32(value: number): void {
    this.ensure(5);
    const buf = this.buf;
    let v = value >>> 0;
    while (v > 0x7f) {
      buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[this.pos++] = v;
  }

  tag(field: number, wire: number): void {
    this.uint32((field << 3) | wire);
  }

  /** An int64 varint (two's complement for negatives: ten bytes). */
  int64(value: number): void {
    if (value >= 0 && value <= 0xffffffff) {
      this.uint32(value);
      return;
    }
    this.ensure(10);
    let low: number;
    let high: number;
    if (value >= 0) {
      low = value >>> 0;
      high = (value / 0x100000000) >>> 0;
    } else {
      const abs = Math.abs(value);
      low = ~(abs >>> 0) >>> 0;
      high = ~((abs / 0x100000000) >>> 0) >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    const buf = this.buf;
    while (high > 0 || low > 0x7f) {
      buf[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    buf[this.pos++] = low & 0x7f;
  }

  fixed32(value: number): void {
    this.ensure(4);
    this.buf.writeUInt32LE(value >>> 0, this.pos);
    this.pos += 4;
  }

  /** An HrTime as fixed64 nanoseconds, without a BigInt (every product stays below 2^53). */
  hrTime(time: HrTime): void {
    const seconds = time[0];
    const low16 = (seconds & 0xffff) * 1_000_000_000;
    const high = ((seconds / 0x10000) >>> 0) * 1_000_000_000;
    const lowWithCarry = (low16 >>> 0) + (((high & 0xffff) * 0x10000) >>> 0) + time[1];
    const carry = Math.floor(lowWithCarry / 0x100000000);
    this.ensure(8);
    this.buf.writeUInt32LE(lowWithCarry >>> 0, this.pos);
    this.buf.writeUInt32LE((Math.floor(low16 / 0x100000000) + ((high / 0x10000) >>> 0) + carry) >>> 0, this.pos + 4);
    this.pos += 8;
  }

  double(value: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** A length-prefixed UTF-8 string: ASCII up to 127 characters copied in place, the rest by Buffer's encoder. */
  string(text: string): void {
    const length = text.length;
    if (length < 128) {
      this.ensure(length + 1);
      const buf = this.buf;
      let at = this.pos + 1;
      let i = 0;
      for (; i < length; i++) {
        const code = text.charCodeAt(i);
        if (code > 0x7f) break;
        buf[at++] = code;
      }
      if (i === length) {
        buf[this.pos] = length;
        this.pos = at;
        return;
      }
    }
    const bytes = Buffer.byteLength(text, 'utf8');
    this.uint32(bytes);
    this.ensure(bytes);
    this.pos += this.buf.write(text, this.pos, bytes, 'utf8');
  }

  /** A trace or span id (hex) as bytes. */
  hexId(id: string): void {
    const bytes = id.length >>> 1;
    this.ensure(bytes + 1);
    const buf = this.buf;
    let at = this.pos;
    buf[at++] = bytes;
    for (let i = 0; i < id.length; i += 2) buf[at++] = (HEX[id.charCodeAt(i)]! << 4) | HEX[id.charCodeAt(i + 1)]!;
    this.pos = at;
  }

  bytes(value: Uint8Array): void {
    this.uint32(value.length);
    this.ensure(value.length);
    this.buf.set(value, this.pos);
    this.pos += value.length;
  }

  /** Opens a length-delimited field: `reserve` bytes for its length, written by `close`. */
  open(reserve: number): number {
    this.ensure(reserve);
    const start = this.pos;
    this.pos += reserve;
    return start;
  }

  close(start: number, reserve: number): void {
    const length = this.pos - start - reserve;
    const size = length < 0x80 ? 1 : length < 0x4000 ? 2 : length < 0x200000 ? 3 : length < 0x10000000 ? 4 : 5;
    if (size !== reserve) {
      this.ensure(size - reserve);
      this.buf.copy(this.buf, start + size, start + reserve, this.pos);
      this.pos += size - reserve;
    }
    const buf = this.buf;
    let at = start;
    let v = length;
    while (v > 0x7f) {
      buf[at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[at] = v;
  }

  /** Starts a request in a buffer of its own, sized from the last one (the exporter keeps it until sent). */
  begin(): void {
    this.buf = Buffer.allocUnsafe(Math.max(MIN_BUFFER, this.last + (this.last >>> 2)));
    this.pos = 0;
  }

  /** The request written since begin(), without a copy. */
  take(): Uint8Array {
    this.last = this.pos;
    const out = this.buf.subarray(0, this.pos);
    this.buf = EMPTY;
    return out;
  }
}

function anyValue(w: Writer, value: unknown): void {
  switch (typeof value) {
    case 'string':
      w.tag(1, WIRE_LEN);
      w.string(value);
      return;
    case 'boolean':
      w.tag(2, WIRE_VARINT);
      w.uint32(value ? 1 : 0);
      return;
    case 'number':
      if (Number.isInteger(value) && value >= INT64_MIN && value < INT64_END) {
        w.tag(3, WIRE_VARINT);
        w.int64(value);
      } else {
        w.tag(4, WIRE_FIXED64);
        w.double(value);
      }
      return;
    default:
  }
  if (value instanceof Uint8Array) {
    w.tag(7, WIRE_LEN);
    w.bytes(value);
  } else if (Array.isArray(value)) {
    w.tag(5, WIRE_LEN);
    const array = w.open(1);
    for (const item of value as unknown[]) {
      w.tag(1, WIRE_LEN);
      const start = w.open(1);
      anyValue(w, item);
      w.close(start, 1);
    }
    w.close(array, 1);
  } else if (typeof value === 'object' && value !== null) {
    w.tag(6, WIRE_LEN);
    const list = w.open(1);
    const object = value as Record<string, unknown>;
    for (const key in object) {
      if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
      w.tag(1, WIRE_LEN);
      keyValue(w, key, object[key]);
    }
    w.close(list, 1);
  }
}

/** ASCII `text` at `at` in `buf`; false (and part written) when it is not ASCII. */
function ascii(buf: Buffer, at: number, text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) return false;
    buf[at + i] = code;
  }
  return true;
}

/**
 * A KeyValue message's body in its own length-delimited field (the tag written by the caller).
 * Most attributes are a short ASCII key with a short ASCII string or a small integer: their
 * lengths are known before writing, and the message is written in one go.
 */
function keyValue(w: Writer, key: string, value: unknown): void {
  const keyLength = key.length;
  if (typeof value === 'string' && keyLength + value.length <= 120) {
    const valueLength = value.length;
    const size = keyLength + valueLength + 6;
    w.ensure(size + 1);
    const buf = w.buf;
    const at = w.pos;
    buf[at] = size;
    buf[at + 1] = 0x0a; // key: field 1, length-delimited
    buf[at + 2] = keyLength;
    const valueAt = at + 3 + keyLength;
    buf[valueAt] = 0x12; // value: field 2, length-delimited AnyValue
    buf[valueAt + 1] = valueLength + 2;
    buf[valueAt + 2] = 0x0a; // string_value: field 1
    buf[valueAt + 3] = valueLength;
    if (ascii(buf, at + 3, key) && ascii(buf, valueAt + 4, value)) {
      w.pos = valueAt + 4 + valueLength;
      return;
    }
  } else if (typeof value === 'number' && keyLength <= 100 && value >= 0 && value < 0x10000000 && Number.isInteger(value)) {
    const valueSize = value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : 4;
    const size = keyLength + valueSize + 5;
    w.ensure(size + 1);
    const buf = w.buf;
    const at = w.pos;
    buf[at] = size;
    buf[at + 1] = 0x0a;
    buf[at + 2] = keyLength;
    if (ascii(buf, at + 3, key)) {
      let p = at + 3 + keyLength;
      buf[p++] = 0x12;
      buf[p++] = valueSize + 1;
      buf[p++] = 0x18; // int_value: field 3, varint
      let v = value;
      while (v > 0x7f) {
        buf[p++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      buf[p++] = v;
      w.pos = p;
      return;
    }
  }
  const start = w.open(1);
  w.tag(1, WIRE_LEN);
  w.string(key);
  w.tag(2, WIRE_LEN);
  const inner = w.open(1);
  anyValue(w, value);
  w.close(inner, 1);
  w.close(start, 1);
}

function attributes(w: Writer, field: number, values: Attributes): void {
  for (const key in values) {
    if (!Object.prototype.hasOwnProperty.call(values, key)) continue;
    w.tag(field, WIRE_LEN);
    keyValue(w, key, values[key] as AttributeValue | undefined);
  }
}

function flagsOf(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | FLAGS_HAS_IS_REMOTE | (isRemote ? FLAGS_IS_REMOTE : 0);
}

function event(w: Writer, value: TimedEvent): void {
  w.tag(11, WIRE_LEN);
  const start = w.open(2);
  w.tag(1, WIRE_FIXED64);
  w.hrTime(value.time);
  w.tag(2, WIRE_LEN);
  w.string(value.name);
  if (value.attributes) attributes(w, 3, value.attributes);
  w.tag(4, WIRE_VARINT);
  w.uint32(value.droppedAttributesCount ?? 0);
  w.close(start, 2);
}

function link(w: Writer, value: Link): void {
  w.tag(13, WIRE_LEN);
  const start = w.open(1);
  const context = value.context;
  w.tag(1, WIRE_LEN);
  w.hexId(context.traceId);
  w.tag(2, WIRE_LEN);
  w.hexId(context.spanId);
  const state = context.traceState?.serialize();
  if (state) {
    w.tag(3, WIRE_LEN);
    w.string(state);
  }
  if (value.attributes) attributes(w, 4, value.attributes);
  w.tag(5, WIRE_VARINT);
  w.uint32(value.droppedAttributesCount ?? 0);
  w.tag(6, WIRE_FIXED32);
  w.fixed32(flagsOf(context.traceFlags, context.isRemote));
  w.close(start, 1);
}

function span(w: Writer, value: ReadableSpan): void {
  w.tag(2, WIRE_LEN);
  const start = w.open(2);
  const context = value.spanContext();
  w.tag(1, WIRE_LEN);
  w.hexId(context.traceId);
  w.tag(2, WIRE_LEN);
  w.hexId(context.spanId);
  const state = context.traceState?.serialize();
  if (state) {
    w.tag(3, WIRE_LEN);
    w.string(state);
  }
  const parent = value.parentSpanContext;
  if (parent?.spanId) {
    w.tag(4, WIRE_LEN);
    w.hexId(parent.spanId);
  }
  w.tag(5, WIRE_LEN);
  w.string(value.name);
  // The API's kinds start at INTERNAL = 0, the protocol's at UNSPECIFIED = 0.
  w.tag(6, WIRE_VARINT);
  w.uint32(value.kind + 1);
  w.tag(7, WIRE_FIXED64);
  w.hrTime(value.startTime);
  w.tag(8, WIRE_FIXED64);
  w.hrTime(value.endTime);
  attributes(w, 9, value.attributes);
  w.tag(10, WIRE_VARINT);
  w.uint32(value.droppedAttributesCount);
  for (const item of value.events) event(w, item);
  w.tag(12, WIRE_VARINT);
  w.uint32(value.droppedEventsCount);
  for (const item of value.links) link(w, item);
  w.tag(14, WIRE_VARINT);
  w.uint32(value.droppedLinksCount);
  w.tag(15, WIRE_LEN);
  const status = w.open(1);
  if (value.status.message) {
    w.tag(2, WIRE_LEN);
    w.string(value.status.message);
  }
  w.tag(3, WIRE_VARINT);
  w.uint32(value.status.code);
  w.close(status, 1);
  w.tag(16, WIRE_FIXED32);
  w.fixed32(flagsOf(context.traceFlags, parent?.isRemote));
  w.close(start, 2);
}

type Resource = ReadableSpan['resource'];
type Scope = ReadableSpan['instrumentationScope'];

function resource(w: Writer, value: Resource): void {
  w.tag(1, WIRE_LEN);
  const start = w.open(2);
  attributes(w, 1, value.attributes);
  w.tag(2, WIRE_VARINT);
  w.uint32(0);
  w.close(start, 2);
}

function scope(w: Writer, value: Scope): void {
  w.tag(1, WIRE_LEN);
  const start = w.open(1);
  w.tag(1, WIRE_LEN);
  w.string(value.name);
  if (value.version) {
    w.tag(2, WIRE_LEN);
    w.string(value.version);
  }
  const extra = value as { attributes?: Attributes; droppedAttributesCount?: number };
  if (extra.attributes) attributes(w, 3, extra.attributes);
  if (extra.droppedAttributesCount) {
    w.tag(4, WIRE_VARINT);
    w.uint32(extra.droppedAttributesCount);
  }
  w.close(start, 1);
}

const writer = new Writer();

/** The ExportTraceServiceRequest for `spans`, grouped by resource and scope as they came. */
export function encodeTraceRequest(spans: readonly ReadableSpan[]): Uint8Array {
  const byResource = new Map<Resource, Map<Scope, ReadableSpan[]>>();
  for (const item of spans) {
    let byScope = byResource.get(item.resource);
    if (!byScope) byResource.set(item.resource, (byScope = new Map()));
    const list = byScope.get(item.instrumentationScope);
    if (list) list.push(item);
    else byScope.set(item.instrumentationScope, [item]);
  }
  const w = writer;
  w.begin();
  for (const [res, byScope] of byResource) {
    w.tag(1, WIRE_LEN);
    const resourceSpans = w.open(3);
    resource(w, res);
    for (const [sc, list] of byScope) {
      w.tag(2, WIRE_LEN);
      const scopeSpans = w.open(3);
      scope(w, sc);
      for (const item of list) span(w, item);
      if (sc.schemaUrl) {
        w.tag(3, WIRE_LEN);
        w.string(sc.schemaUrl);
      }
      w.close(scopeSpans, 3);
    }
    if (res.schemaUrl) {
      w.tag(3, WIRE_LEN);
      w.string(res.schemaUrl);
    }
    w.close(resourceSpans, 3);
  }
  return w.take();
}
