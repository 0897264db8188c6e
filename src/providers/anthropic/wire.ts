/** The Anthropic Messages wire shapes the converters read and write (subset). */

export interface AnthropicCacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

export type AnthropicImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

export type AnthropicBlock =
  | { type: 'text'; text: string; cache_control?: AnthropicCacheControl }
  | { type: 'image'; source: AnthropicImageSource; cache_control?: AnthropicCacheControl }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown>; cache_control?: AnthropicCacheControl }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | {
      type: 'tool_result';
      tool_use_id: string;
      content: string | AnthropicBlock[];
      is_error?: boolean;
      cache_control?: AnthropicCacheControl;
    };

export interface AnthropicMessage {
  /** `system`: a system turn among the messages, sent where the client put it (Claude answers for it). */
  role: 'user' | 'assistant' | 'system';
  content: AnthropicBlock[];
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
  cache_control?: AnthropicCacheControl;
}

export type AnthropicToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicMessage[];
  system?: { type: 'text'; text: string; cache_control?: AnthropicCacheControl }[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stop_sequences?: string[];
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  metadata?: { user_id: string };
  stream?: boolean;
  [extra: string]: unknown;
}

/** The tool a JSON-mode request is forced through (Anthropic has no response_format). */
export const JSON_TOOL_NAME = 'json_response';
