import type { ChatResult, FinishReason, GatewayStreamEvent, Usage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import type { SseFrame, StreamEncoder } from '../inference.js';

/** Canonical result/stream → OpenAI chat completions JSON and chunks. Pure. */

export interface ChatEncodeMeta {
  id: string;
  created: number;
  model: string;
}

export interface OpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; audio_tokens: number };
  completion_tokens_details: { reasoning_tokens: number; audio_tokens: number; accepted_prediction_tokens: number; rejected_prediction_tokens: number };
}

export function encodeUsage(usage: Usage): OpenAiUsage {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

export function encodeChatCompletion(result: ChatResult, usage: Usage, meta: ChatEncodeMeta) {
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: result.text === '' && result.toolCalls.length > 0 ? null : result.text,
    refusal: null,
    annotations: [],
  };
  if (result.toolCalls.length > 0) {
    message.tool_calls = result.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  }
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: result.finishReason satisfies FinishReason }],
    usage: encodeUsage(usage),
  };
}

export function encodeError(error: GatewayError) {
  return error.toBody();
}

/**
 * Streams chunks: the role chunk first, then one chunk per delta (tool calls by index, id and
 * name on their first fragment), the finish chunk with an empty delta, and — only when the
 * client asked with stream_options.include_usage — the usage chunk with `choices: []`.
 */
export class ChatChunkEncoder implements StreamEncoder {
  private usage: Usage | undefined;

  constructor(
    private readonly meta: ChatEncodeMeta,
    private readonly includeUsage: boolean,
  ) {}

  start(): SseFrame[] {
    return [{ data: this.chunk({ role: 'assistant', content: '' }, null) }];
  }

  /** `data:` frames (no event names in this format); `[DONE]` follows the finish. */
  encode(event: GatewayStreamEvent): SseFrame[] {
    return this.texts(event).map((data) => ({ data }));
  }

  private texts(event: GatewayStreamEvent): string[] {
    switch (event.type) {
      case 'text-delta':
        return [this.chunk({ content: event.text }, null)];
      case 'reasoning-delta':
        // The convention of OpenAI-compatible servers (DeepSeek, vLLM, OpenRouter): reasoning beside the content.
        return [this.chunk({ reasoning_content: event.text }, null)];
      case 'reasoning-end':
      case 'prompt-usage':
      case 'native':
        return [];
      case 'tool-call-start':
        return [this.chunk({ tool_calls: [{ index: event.index, id: event.id, type: 'function', function: { name: event.name, arguments: '' } }] }, null)];
      case 'tool-call-delta':
        return [this.chunk({ tool_calls: [{ index: event.index, function: { arguments: event.argumentsDelta } }] }, null)];
      case 'usage':
        this.usage = event.usage;
        return [];
      case 'finish': {
        const out = [this.chunk({}, event.finishReason)];
        if (this.includeUsage && this.usage) {
          out.push(JSON.stringify({ id: this.meta.id, object: 'chat.completion.chunk', created: this.meta.created, model: this.meta.model, choices: [], usage: encodeUsage(this.usage) }));
        }
        out.push('[DONE]');
        return out;
      }
      case 'error':
        return [JSON.stringify(encodeError(event.error))];
    }
  }

  private chunk(delta: Record<string, unknown>, finishReason: FinishReason | null): string {
    const chunk: Record<string, unknown> = {
      id: this.meta.id,
      object: 'chat.completion.chunk',
      created: this.meta.created,
      model: this.meta.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
    if (this.includeUsage) chunk.usage = null;
    return JSON.stringify(chunk);
  }
}
