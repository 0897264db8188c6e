import type { ModelConfig } from '../../config/types.js';
import type { UpstreamRequest } from '../../providers/types.js';
import type { EmbeddingInput, EmbeddingResult, ImageResult, SpeechFormat, TranscriptionFormat, TranscriptionRequest, TranscriptionResult } from '../media.js';

/** The decoded media calls (src/api/<kind>/) and what the media services answer. */

export interface EmbeddingDraft {
  model: string;
  input: EmbeddingInput;
  dimensions?: number;
  encodingFormat: 'float' | 'base64';
  user?: string;
}

export interface SpeechDraft {
  model: string;
  input: string;
  voice: string;
  format: SpeechFormat;
  speed?: number;
  instructions?: string;
}

export interface TranscriptionDraft {
  model: string;
  audio: Buffer;
  filename: string;
  mimeType: string;
  language?: string;
  prompt?: string;
  responseFormat: TranscriptionFormat;
  temperature?: number;
  timestampGranularities: Array<'word' | 'segment'>;
}

export interface ImageDraft {
  model?: string;
  prompt: string;
  n?: number;
  size?: string;
  quality?: string;
  style?: string;
  responseFormat: 'url' | 'b64_json';
  user?: string;
}

/** Every media outcome: the model that served, the response headers (rate limit, routing, cost), what was billed. */
interface Outcome {
  model: ModelConfig;
  headers: Record<string, string>;
  costMicros: number;
}

export interface EmbeddingOutcome extends Outcome {
  result: EmbeddingResult;
  inputTokens: number;
}

export interface TranscriptionOutcome extends Outcome {
  result: TranscriptionResult;
  request: TranscriptionRequest;
}

export interface ImageOutcome extends Outcome {
  result: ImageResult;
  created: number;
}

export interface SpeechOutcome {
  model: ModelConfig;
  headers: Record<string, string>;
  contentType: string;
  /**
   * The audio as the upstream sends it. The call settles when it ends (before the client's
   * response ends); a consumer that stops early (the client left) bills what it took.
   */
  audio: AsyncGenerator<Buffer, void, undefined>;
}

/** The keys of `source` that are set, copied (optional fields stay absent rather than undefined). */
export function optional<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}

/** A request field name as it may appear in a response header (a client's keys can hold anything). */
const HEADER_SAFE_NAME = /^[A-Za-z0-9_.[\]-]{1,64}$/;

/**
 * Adds field names to `x-gateway-ignored-params`: only names a header can carry, at most 20
 * (a key such as "€" or "a\nb" would make the response headers invalid after the call was billed).
 */
export function addIgnoredParams(headers: Record<string, string>, names: readonly string[]): void {
  const all = new Set([...(headers['x-gateway-ignored-params']?.split(', ') ?? []), ...names.filter((name) => HEADER_SAFE_NAME.test(name))]);
  if (all.size > 0) headers['x-gateway-ignored-params'] = [...all].slice(0, 20).join(', ');
}

/** Names the parameters a provider cannot take (dropped) in `x-gateway-ignored-params`. */
export function addIgnoredCalls(headers: Record<string, string>, calls: readonly UpstreamRequest[]): void {
  addIgnoredParams(headers, calls.flatMap((call) => call.ignoredParams));
}
