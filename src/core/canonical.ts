/**
 * The canonical form of a chat-like call. Every ingress format (chat completions, responses,
 * messages) decodes to it and encodes from it; every provider family converts it to and
 * from its upstream wire. Nothing here knows a wire format.
 */

import type { GatewayError } from './errors.js';

export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

export interface TextPart {
  type: 'text';
  text: string;
  /** Anthropic prompt caching breakpoint; other families ignore it. */
  cacheControl?: CacheControl;
}

export type ImageSource = { kind: 'url'; url: string } | { kind: 'base64'; mediaType: string; data: string };

export interface ImagePart {
  type: 'image';
  source: ImageSource;
  detail?: 'auto' | 'low' | 'high';
  cacheControl?: CacheControl;
}

export type ContentPart = TextPart | ImagePart;

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as JSON text, exactly as the model produced them. */
  arguments: string;
}

export interface SystemMessage {
  role: 'system';
  content: TextPart[];
  /** OpenAI participant name; only the OpenAI wire has a place for it. */
  name?: string;
}

export interface UserMessage {
  role: 'user';
  content: ContentPart[];
  name?: string;
}

export interface AssistantMessage {
  role: 'assistant';
  content: TextPart[];
  toolCalls: ToolCall[];
  name?: string;
}

export interface ToolMessage {
  role: 'tool';
  toolCallId: string;
  content: ContentPart[];
  isError?: boolean;
}

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

export type JsonSchema = Record<string, unknown>;

export interface ToolDefinition {
  name: string;
  description?: string;
  parameters: JsonSchema;
  strict?: boolean;
  cacheControl?: CacheControl;
}

export type ToolChoice = { type: 'auto' } | { type: 'none' } | { type: 'required' } | { type: 'tool'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: JsonSchema; strict?: boolean; description?: string };

export interface ChatRequest {
  /** The catalog id (`openai/gpt-4o-mini`). */
  model: string;
  /** The name the provider knows the model by. */
  upstreamModel: string;
  messages: Message[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  /** Output token limit; the gateway always sets it (it bounds the wallet hold). */
  maxTokens: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  seed?: number;
  user?: string;
  responseFormat?: ResponseFormat;
  stream: boolean;
  /**
   * Fields the ingress did not map, passed to a provider of the same wire family as the
   * ingress (an OpenAI-compatible upstream takes chat-completions extras as they are).
   */
  passthrough?: { family: 'openai' | 'anthropic'; fields: Record<string, unknown> };
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface Usage {
  /** All prompt tokens, including cache reads and writes. */
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Of cacheWriteTokens, those written for an hour (Anthropic's `ttl: "1h"`, billed at the 1-hour write price). */
  cacheWrite1hTokens?: number;
  /** Part of outputTokens. */
  reasoningTokens: number;
}

export interface ChatResult {
  /** The provider's response id, when it has one. */
  id?: string;
  text: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  /** The stop sequence that ended the answer, when the provider says which. */
  stopSequence?: string;
  usage?: Usage;
}

/** What a provider stream yields, in order: deltas, then one `finish`. */
export type StreamPart =
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call-start'; index: number; id: string; name: string }
  | { type: 'tool-call-delta'; index: number; argumentsDelta: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'finish'; finishReason: FinishReason; stopSequence?: string };

/** What the gateway hands an ingress encoder: provider parts, plus the end of the call. */
export type GatewayStreamEvent = StreamPart | { type: 'error'; error: GatewayError };

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
}
