import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

/**
 * A real PNG encoder (8-bit RGB, no interlace, every row with filter byte 0) for the simulator's
 * generated images: a base colour derived from the seed plus a stepped gradient, so a 1024×1024
 * image deflates to a few KB. Results are cached by (width, height, seed), a few at a time.
 */

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const MAX_SIDE = 8192;

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))), 0);
  return Buffer.concat([head, data, crc]);
}

/** The base colour for a seed (stable across runs). */
function baseColour(seed: string): [number, number, number] {
  const digest = createHash('sha256').update(seed).digest();
  return [digest[0] ?? 0, digest[1] ?? 0, digest[2] ?? 0];
}

/** Encodes an RGB image of width×height: the seed's colour, red growing left to right and green top to bottom in 32 steps. */
export function encodePng(width: number, height: number, seed: string): Buffer {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > MAX_SIDE || height > MAX_SIDE) {
    throw new RangeError(`invalid PNG size ${width}x${height}`);
  }
  const [r0, g0, b0] = baseColour(seed);
  const stride = width * 3 + 1;
  const raw = Buffer.alloc(stride * height);
  // One row per distinct green step, copied down: rows only differ where the step changes.
  const row = Buffer.alloc(stride);
  let lastStep = -1;
  for (let y = 0; y < height; y++) {
    const gStep = Math.floor((y * 32) / height);
    if (gStep !== lastStep) {
      row[0] = 0; // filter: None
      for (let x = 0; x < width; x++) {
        const rStep = Math.floor((x * 32) / width);
        const at = 1 + x * 3;
        row[at] = (r0 + rStep * 4) & 0xff;
        row[at + 1] = (g0 + gStep * 4) & 0xff;
        row[at + 2] = b0;
      }
      lastStep = gStep;
    }
    row.copy(raw, y * stride);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour (RGB)
  ihdr[10] = 0; // compression: deflate
  ihdr[11] = 0; // filter method 0
  ihdr[12] = 0; // no interlace
  return Buffer.concat([SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

const CACHE_ENTRIES = 16;
const cache = new Map<string, Buffer>();

/** encodePng, remembered: the last CACHE_ENTRIES images (least recently used dropped first). */
export function png(width: number, height: number, seed: string): Buffer {
  const key = `${width}x${height}:${seed}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const image = encodePng(width, height, seed);
  if (cache.size >= CACHE_ENTRIES) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  cache.set(key, image);
  return image;
}

/** Width and height from a PNG's IHDR; undefined when the bytes are not a PNG. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 24 || !buf.subarray(0, 8).equals(SIGNATURE) || buf.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}
