import type { HrTime } from '@opentelemetry/api';

/**
 * A protobuf writer for the OTLP encoder (otlp-proto.ts): varints, fixed-width numbers, UTF-8
 * strings and length-delimited fields written in place into one growing buffer. A field's
 * length is reserved before its body is written (`open`) and filled in after (`close`),
 * moving the body when the length needs more or fewer bytes than reserved.
 */

/** A hex digit's value by character code (ids come from the SDK's generator or a validated traceparent). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) HEX[65 + i] = HEX[97 + i] = 10 + i;

const MIN_BUFFER = 16 * 1024;
const EMPTY = Buffer.alloc(0);

export class Writer {
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
