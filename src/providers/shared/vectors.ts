import { upstreamMalformed } from './errors.js';

/** A base64 string of little-endian float32s (OpenAI's `encoding_format: base64`) as floats. */
export function decodeBase64Floats(provider: string, text: string): Float32Array {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length % 4 !== 0) throw upstreamMalformed(provider, 'a base64 embedding whose length is not a multiple of 4 bytes');
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/** A base64 float32 vector kept as it is, once its length is checked (a whole number of floats). */
export function checkedBase64Floats(provider: string, text: string): string {
  if (Buffer.byteLength(text, 'base64') % 4 !== 0) throw upstreamMalformed(provider, 'a base64 embedding whose length is not a multiple of 4 bytes');
  return text;
}

/** Floats as base64 little-endian float32 bytes, whatever the machine's byte order. */
export function encodeBase64Floats(vector: ArrayLike<number>): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i] as number, i * 4);
  return bytes.toString('base64');
}

/** A JSON number array, every element finite; undefined otherwise. */
export function numberArray(value: unknown): number[] | undefined {
  if (!Array.isArray(value)) return undefined;
  for (const item of value) if (typeof item !== 'number' || !Number.isFinite(item)) return undefined;
  return value as number[];
}

/** A vector scaled to unit length (a shortened Gemini or Vertex vector is not). */
export function unitVector(values: number[]): number[] {
  let sum = 0;
  for (const value of values) sum += value * value;
  const norm = Math.sqrt(sum);
  return norm > 0 ? values.map((value) => value / norm) : values;
}

/**
 * An embedding request's inputs as texts, for upstreams that take no token arrays (the
 * ingress refuses those for models without `token_arrays`; this is the fallback).
 */
export function embeddingTexts(input: { kind: 'text'; texts: string[] } | { kind: 'tokens'; tokens: number[][] }): string[] {
  return input.kind === 'text' ? input.texts : input.tokens.map((tokens) => tokens.join(' '));
}
