import type { ProviderConfig, ProviderType } from '../config/types.js';
import type {
  EmbeddingRequest,
  EmbeddingResult,
  ImageRequest,
  ImageResult,
  SpeechRequest,
  TranscriptionRequest,
  TranscriptionResult,
} from '../core/media.js';
import type { UpstreamRequest } from './types.js';

/**
 * A wire family's converters for the media kinds of call: canonical ⇄ upstream, pure (no
 * I/O), fixture-tested like the chat converters. A family serves the kinds it has an adapter
 * for; the catalog refuses a model of another kind on it (config/catalog.ts FAMILY_KINDS).
 */

export interface EmbeddingAdapter {
  /** One upstream call, or several when the upstream takes fewer inputs per call (Gemini: 100). */
  build(request: EmbeddingRequest, provider: ProviderConfig): UpstreamRequest[];
  /** The answers of those calls, in the same order. */
  parse(bodies: unknown[], request: EmbeddingRequest, provider: ProviderConfig): EmbeddingResult;
}

export interface SpeechAdapter {
  build(request: SpeechRequest, provider: ProviderConfig): UpstreamRequest;
  /** The characters the upstream says it billed, when it says (Deepgram's `dg-char-count`). */
  billedCharacters?(headers: Readonly<Record<string, string | string[] | undefined>>): number | undefined;
}

export interface TranscriptionAdapter {
  build(request: TranscriptionRequest, provider: ProviderConfig): UpstreamRequest;
  parse(body: Buffer, contentType: string, request: TranscriptionRequest, provider: ProviderConfig): TranscriptionResult;
}

export interface ImageAdapter {
  /** One upstream call, or one per image where the upstream makes one at a time (Gemini). */
  build(request: ImageRequest, provider: ProviderConfig): UpstreamRequest[];
  parse(bodies: unknown[], request: ImageRequest, provider: ProviderConfig): ImageResult;
}

export interface MediaFamily {
  embeddings?: EmbeddingAdapter;
  speech?: SpeechAdapter;
  transcription?: TranscriptionAdapter;
  images?: ImageAdapter;
  /** The human message inside the family's error body, if there is one. */
  errorMessage(body: unknown): string | undefined;
}

export type MediaFamilies = Readonly<Record<ProviderType, MediaFamily>>;
