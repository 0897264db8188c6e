/** The OpenAI Chat Completions wire shapes the converters read and write (subset). */

export type OpenAiContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } };

export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type OpenAiMessage =
  | { role: 'system' | 'developer'; content: string; name?: string }
  | { role: 'user'; content: string | OpenAiContentPart[]; name?: string }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAiToolCall[]; name?: string }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface OpenAiTool {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown>; strict?: boolean };
}

export type OpenAiToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

export interface OpenAiChatRequest {
  model: string;
  messages: OpenAiMessage[];
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string[];
  seed?: number;
  user?: string;
  tools?: OpenAiTool[];
  tool_choice?: OpenAiToolChoice;
  parallel_tool_calls?: boolean;
  response_format?: Record<string, unknown>;
  stream?: boolean;
  stream_options?: { include_usage: boolean };
  [extra: string]: unknown;
}
