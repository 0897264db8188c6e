/**
 * Deterministic embedding vectors in which similar texts land close together: a random projection
 * of the bag of words. Every lowercased word adds its own dense ±1 vector (a PRNG seeded by the
 * word's hash gives the signs, across all the native dimensions), every pair of adjacent words adds
 * its own at half weight; the sum is L2-normalized. Texts sharing most words therefore have a high
 * cosine, unrelated texts a cosine near 0 (about ±1/sqrt(dimensions)). Dense rather than a few
 * hashed positions per word, so that a vector cut to its first `dimensions` values (OpenAI's
 * `dimensions`, Gemini's `outputDimensionality`) still carries every word. Values are rounded to
 * float32 (as the APIs' vectors are), so a base64 answer decodes to exactly the float answer.
 */

const BIGRAM_WEIGHT = 0.5;

/** FNV-1a over the UTF-16 code units, seeded, with a final avalanche (murmur3 fmix32). */
function hash(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ Math.imul(seed + 1, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Adds the feature's ±weight vector: 32 signs per step of a mulberry32 generator seeded by the feature's hash. */
function add(vector: Float64Array, feature: string, weight: number): void {
  let state = hash(feature, 0);
  for (let base = 0; base < vector.length; base += 32) {
    state = (state + 0x6d2b79f5) >>> 0;
    let r = Math.imul(state ^ (state >>> 15), state | 1);
    r ^= r + Math.imul(r ^ (r >>> 7), r | 61);
    const bits = (r ^ (r >>> 14)) >>> 0;
    const end = Math.min(32, vector.length - base);
    for (let b = 0; b < end; b++) vector[base + b] = (vector[base + b] ?? 0) + (((bits >>> b) & 1) === 1 ? weight : -weight);
  }
}

/** The words of a text: lowercased runs of letters and digits. */
export function wordsOf(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function normalize(values: Float64Array | number[]): number[] {
  let sum = 0;
  for (const v of values) sum += v * v;
  const norm = Math.sqrt(sum);
  const out: number[] = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) out[i] = norm > 0 ? Math.fround((values[i] ?? 0) / norm) : 0;
  return out;
}

/**
 * The unit vector of `text` with `native` dimensions, truncated to `dimensions` when given.
 * `renormalize` (default true) rescales a truncated vector to unit length, as OpenAI does for
 * `dimensions`; Gemini leaves truncated vectors as they are.
 */
export function embedText(text: string, native: number, dimensions?: number, renormalize = true): number[] {
  const vector = new Float64Array(native);
  const words = wordsOf(text);
  if (words.length === 0) add(vector, `\u0000${text}`, 1); // no words (punctuation only): the raw text decides
  for (const word of words) add(vector, word, 1);
  for (let i = 1; i < words.length; i++) add(vector, `${words[i - 1]} ${words[i]}`, BIGRAM_WEIGHT);
  const full = normalize(vector);
  if (dimensions === undefined || dimensions >= native) return full;
  const cut = full.slice(0, dimensions);
  return renormalize ? normalize(cut) : cut;
}

/** Base64 of the vector as little-endian float32 bytes (OpenAI's `encoding_format: "base64"`). */
export function float32Base64(values: number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString('base64');
}

/** Cosine similarity of two equally long vectors. */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
}
