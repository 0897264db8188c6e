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
  /**
   * Sent among the messages (the messages format's `role: "system"` turn), not as the system
   * prompt. An Anthropic upstream gets it where the client put it (and answers for itself);
   * every other family folds it into its system instructions.
   */
  inline?: boolean;
  /** OpenAI participant name; only the OpenAI wire has a place for it. */
  name?: string;
}

export interface UserMessage {
  role: 'user';
  content: ContentPart[];
  name?: string;
}

/**
 * A model's reasoning, as an answer returned it and a later turn sends it back. Only the
 * family that produced it can take it back (Claude checks its signature); others drop it.
 */
export interface ReasoningBlock {
  /** The family whose model produced it. */
  family: 'openai' | 'anthropic' | 'gemini';
  /** The reasoning text (Claude's thinking, a Gemini thought summary); '' when only opaque data came. */
  text: string;
  /** Claude's signature over a thinking block. */
  signature?: string;
  /** Claude's redacted_thinking data (opaque). */
  redacted?: string;
}

export interface AssistantMessage {
  role: 'assistant';
  content: TextPart[];
  toolCalls: ToolCall[];
  /** Reasoning before this turn's content, replayed by the client (Claude's thinking blocks). */
  reasoning?: ReasoningBlock[];
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
  /** Fields of the messages format's tool the gateway does not model (`defer_loading`), for Claude only. */
  anthropic?: Record<string, unknown>;
}

export type ToolChoice = { type: 'auto' } | { type: 'none' } | { type: 'required' } | { type: 'tool'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: JsonSchema; strict?: boolean; description?: string };

/** How much the model should reason, in the ingress's terms; each family maps it to its own control. */
export interface ReasoningRequest {
  /** OpenAI's effort levels (the responses `reasoning.effort`, chat `reasoning_effort`). */
  effort?: 'minimal' | 'low' | 'medium' | 'high';
  /** A thinking budget in tokens (Anthropic `thinking.budget_tokens`); lowered to the target's cap. */
  budgetTokens?: number;
  /** Anthropic `thinking.type: adaptive`: the model decides how much to think. */
  adaptive?: boolean;
  /** Return the reasoning text (a summary where the upstream only gives one) as well as the answer. */
  summary?: boolean;
  /** The messages format's `thinking` object as the client wrote it (its `display` and newer fields), for Claude. */
  anthropic?: Record<string, unknown>;
}

/**
 * A request forwarded in the client's own wire format to an upstream that speaks it natively
 * (an OpenAI-family provider marked `responses: true` takes the responses format as it is:
 * hosted tools, reasoning items and encrypted content work end to end).
 */
export interface NativeRequest {
  format: 'responses';
  /** The client's body, gateway-only fields (`models`) removed; `model`, `max_output_tokens` and `stream` are set per attempt. */
  body: Record<string, unknown>;
  /** Bytes of the body the canonical form leaves out (hosted tools, encrypted reasoning): added to the hold's prompt bound. */
  extraBytes: number;
}

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
  reasoning?: ReasoningRequest;
  stream: boolean;
  /** The client's own body, for an upstream that takes that format natively. */
  native?: NativeRequest;
  /**
   * Fields the ingress did not map, passed to a provider of the same wire family as the
   * ingress (an OpenAI-compatible upstream takes chat-completions extras as they are).
   */
  passthrough?: {
    family: 'openai' | 'anthropic';
    fields: Record<string, unknown>;
    /** Request headers of that family's wire (Anthropic's `anthropic-beta`), lower-case names. */
    headers?: Record<string, string>;
  };
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
  /** Reasoning the upstream returned, before the answer. */
  reasoning?: ReasoningBlock[];
  usage?: Usage;
  /** The upstream's own answer when the request went natively (`request.native`); the ingress relays it. */
  native?: Record<string, unknown>;
}

/** What a provider stream yields, in order: deltas, then one `finish`. */
export type StreamPart =
  | { type: 'text-delta'; text: string }
  /** Reasoning text; consecutive deltas form one block, closed by `reasoning-end`. */
  | { type: 'reasoning-delta'; family: ReasoningBlock['family']; text: string }
  /** The end of a reasoning block: Claude's signature, or a redacted block's data (then without deltas). Optional after deltas. */
  | { type: 'reasoning-end'; family: ReasoningBlock['family']; signature?: string; redacted?: string }
  /** The prompt's usage as the upstream reported it before the first content (Anthropic's message_start). */
  | { type: 'prompt-usage'; usage: Usage }
  /** One event of a native stream (`request.native`), relayed as it is by the ingress of that format. */
  | { type: 'native'; event: Record<string, unknown> }
  | { type: 'tool-call-start'; index: number; id: string; name: string }
  | { type: 'tool-call-delta'; index: number; argumentsDelta: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'finish'; finishReason: FinishReason; stopSequence?: string };

/** What the gateway hands an ingress encoder: provider parts, plus the end of the call. */
export type GatewayStreamEvent = StreamPart | { type: 'error'; error: GatewayError };

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
}
