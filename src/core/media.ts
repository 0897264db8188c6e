/**
 * The canonical forms of the four media kinds of call (embedding, speech, transcription,
 * image). Each ingress decoder (src/api/<kind>/) produces one; each provider family's media
 * converter (src/providers/<family>/media*.ts) turns it into its upstream wire and back.
 * Nothing here knows a wire format.
 */

import type { SpeechFormat, TranscriptionFormat } from '../config/types.js';

export type { SpeechFormat, TranscriptionFormat } from '../config/types.js';

/** What one embedding call embeds: texts, or inputs already tokenized (OpenAI's token arrays). */
export type EmbeddingInput = { kind: 'text'; texts: string[] } | { kind: 'tokens'; tokens: number[][] };

export interface EmbeddingRequest {
  /** The catalog id. */
  model: string;
  upstreamModel: string;
  input: EmbeddingInput;
  /** Asked vector length; absent: the model's own. */
  dimensions?: number;
  /** How the client wants the vectors; the upstream is asked in the same form where it can be. */
  encodingFormat: 'float' | 'base64';
  user?: string;
}

/**
 * A vector as the upstream gave it: JSON numbers, floats, or a base64 string of little-endian
 * float32s (OpenAI's base64 answers), kept as it is so that a base64 client gets it untouched.
 */
export type Vector = number[] | Float32Array | string;

export interface EmbeddingResult {
  /** In input order. */
  vectors: Vector[];
  /** The upstream's count of input tokens; absent when it reports none (Gemini). */
  inputTokens?: number;
}

export interface SpeechRequest {
  model: string;
  upstreamModel: string;
  input: string;
  /** One of the six OpenAI voice names (each family maps them to its own voices). */
  voice: string;
  format: SpeechFormat;
  speed?: number;
  instructions?: string;
}

/** The Content-Type of each speech format (OpenAI's, whichever provider made the audio). */
export const SPEECH_CONTENT_TYPES: Readonly<Record<SpeechFormat, string>> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

export interface TranscriptionRequest {
  model: string;
  upstreamModel: string;
  /** The audio file's bytes, exactly as the client sent them. */
  audio: Buffer;
  filename: string;
  /** The file's media type (from the client, else from its extension). */
  mimeType: string;
  /** Read from the file's own headers before the call (the hold is priced from it). */
  durationSeconds: number;
  language?: string;
  prompt?: string;
  responseFormat: TranscriptionFormat;
  temperature?: number;
  timestampGranularities: Array<'word' | 'segment'>;
}

export interface TranscriptionSegment {
  id: number;
  start: number;
  end: number;
  text: string;
}

export interface TranscriptionWord {
  word: string;
  start: number;
  end: number;
}

/**
 * A transcription: the upstream's own answer in the client's format (an OpenAI-compatible
 * upstream renders every format itself), or text with timings the gateway renders (Deepgram).
 */
export type TranscriptionResult =
  | { kind: 'rendered'; body: Buffer; contentType: string; durationSeconds?: number }
  | { kind: 'canonical'; text: string; language?: string; durationSeconds?: number; segments: TranscriptionSegment[]; words: TranscriptionWord[] };

export interface ImageRequest {
  model: string;
  upstreamModel: string;
  prompt: string;
  n: number;
  size: string;
  quality?: string;
  style?: string;
  responseFormat: 'url' | 'b64_json';
  /** What to ask the upstream for, when the model takes it (dall-e); absent: it answers base64. */
  upstreamResponseFormat?: 'url' | 'b64_json';
  user?: string;
}

export interface GeneratedImage {
  /** A URL of the upstream's own (dall-e); absent when it sent the image itself. */
  url?: string;
  /** The image, base64. */
  b64?: string;
  mimeType: string;
  revisedPrompt?: string;
}

export interface ImageResult {
  images: GeneratedImage[];
  /** The quality the upstream says it used (gpt-image-1 resolves `auto`), for the price. */
  quality?: string;
  /** The size it says it used (`auto` resolved). */
  size?: string;
  /** Prompt tokens the upstream billed (GPT image models bill text input per token). */
  inputTokens?: number;
}
