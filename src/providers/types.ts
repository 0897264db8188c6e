import type { ChatRequest, ChatResult, StreamPart } from '../core/canonical.js';
import type { PromptTokenMargin } from '../core/tokens.js';
import type { ProviderConfig } from '../config/types.js';
import type { CallSignal } from '../core/abort.js';
import type { SseEvent } from './shared/sse-parser.js';

/** One request to an upstream, built purely from the canonical request. */
export interface UpstreamRequest {
  url: string;
  headers: Readonly<Record<string, string>>;
  /** Sent as JSON, unless `rawBody` is given. */
  body: unknown;
  /**
   * Bytes sent as they are (a multipart form, an audio file), one buffer or several sent in
   * order; the headers carry their content type (and, for several, their content-length).
   */
  rawBody?: Buffer | readonly Buffer[];
  /** Canonical parameters this provider cannot take; dropped, and named to the client. */
  ignoredParams: string[];
  /**
   * The request went in the client's own wire format (`ChatRequest.native`): the answer is the
   * upstream's own, relayed as it is by the ingress of that format.
   */
  native?: boolean;
}

/** Turns one upstream stream into canonical parts; holds its own state between events. */
export interface StreamDecoder {
  /** Parts for one SSE event; throws a GatewayError for an upstream error event or a malformed one. */
  push(event: SseEvent): StreamPart[];
  /** Parts owed at the end of the upstream stream (usage, finish). */
  end(): StreamPart[];
  /** The upstream's id of the answer, once a stream event carried it (traces' gen_ai.response.id). */
  readonly responseId?: string | undefined;
}

/**
 * Splits an upstream stream's bytes into events: SSE for most families, AWS event-stream
 * frames for Bedrock (each frame's type as `event`, its payload as `data`).
 */
export interface FrameParser {
  push(chunk: Buffer): SseEvent[];
  end(): SseEvent[];
}

/** One upstream request as it will go on the wire, for a credential step to sign. */
export interface OutgoingRequest {
  /** `https://host[:port]`. */
  origin: string;
  /** Path and query, exactly as sent. */
  path: string;
  headers: Readonly<Record<string, string>>;
  body: string | Buffer;
}

/**
 * The credential step of the upstream client, for providers whose requests are signed or
 * carry short-lived tokens (Bedrock's SigV4, Vertex's OAuth2 access tokens) rather than a key
 * the family puts in its headers.
 */
export interface Authenticator {
  /** The headers that carry the credential for this request (may fetch a token first). */
  headers(request: OutgoingRequest, signal: CallSignal): Promise<Record<string, string>>;
  /**
   * The upstream answered 401 to a request that carried `sent` (this step's headers): forget
   * that token. True when asking again with a fresh one may succeed; the client then asks once
   * more, never in a loop.
   */
  refused?(sent: Readonly<Record<string, string>>): boolean;
}

/** A form POST the credential step makes itself (a token exchange), on the provider's connections. */
export type TokenPost = (url: string, form: string, signal: CallSignal) => Promise<{ status: number; text: string }>;

/** Deterministic inputs a pure translation needs (ids for calls the upstream leaves unnamed). */
export interface TranslationContext {
  newToolCallId: () => string;
}

/** A wire family: canonical ⇄ one upstream format. Every function is pure. */
export interface ProviderFamily {
  /** Whether the upstream fetches http(s) image URLs itself; if not, the gateway inlines them first. */
  readonly fetchesImageUrls: boolean;
  /** How the family's prompt token counts relate to cl100k's, for admission's tight prompt bound. */
  readonly promptTokenMargin: PromptTokenMargin;
  buildChatRequest(request: ChatRequest, provider: ProviderConfig): UpstreamRequest;
  parseChatResponse(body: unknown, request: ChatRequest, context: TranslationContext): ChatResult;
  createStreamDecoder(request: ChatRequest, provider: ProviderConfig, context: TranslationContext): StreamDecoder;
  /** How the stream's bytes split into events; absent: Server-Sent Events. */
  createFrameParser?(provider: ProviderConfig): FrameParser;
  /** The human message inside the family's error body, if there is one. */
  errorMessage(body: unknown): string | undefined;
}
