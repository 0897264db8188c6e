import type { ChatResult, FinishReason, ToolCall, Usage } from '../../core/canonical.js';
import { asArray, asNumber, asRecord, asString, type JsonRecord } from '../shared/json.js';
import type { TranslationContext } from '../types.js';

/** OpenAI chat completion JSON → canonical result (first choice). */
export function parseOpenAiChatResponse(body: unknown, context: TranslationContext): ChatResult {
  const root = asRecord(body) ?? {};
  const choice = asRecord(asArray(root.choices)[0]) ?? {};
  const message = asRecord(choice.message) ?? {};
  const toolCalls: ToolCall[] = asArray(message.tool_calls).map((raw) => {
    const call = asRecord(raw) ?? {};
    const fn = asRecord(call.function) ?? {};
    return { id: asString(call.id) ?? context.newToolCallId(), name: asString(fn.name) ?? '', arguments: asString(fn.arguments) ?? '' };
  });
  const result: ChatResult = {
    text: asString(message.content) ?? '',
    toolCalls,
    finishReason: mapOpenAiFinishReason(asString(choice.finish_reason), toolCalls.length > 0),
  };
  const id = asString(root.id);
  if (id !== undefined) result.id = id;
  const thought = asString(message.reasoning_content) ?? asString(message.reasoning);
  if (thought) result.reasoning = [{ family: 'openai', text: thought }];
  const usage = asRecord(root.usage);
  if (usage) result.usage = mapOpenAiUsage(usage);
  return result;
}

export function mapOpenAiFinishReason(reason: string | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case 'length':
      return 'length';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'content_filter':
      return 'content_filter';
    default:
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}

export function mapOpenAiUsage(usage: JsonRecord): Usage {
  const prompt = asRecord(usage.prompt_tokens_details) ?? {};
  const completion = asRecord(usage.completion_tokens_details) ?? {};
  return {
    inputTokens: asNumber(usage.prompt_tokens),
    outputTokens: asNumber(usage.completion_tokens),
    cacheReadTokens: asNumber(prompt.cached_tokens),
    cacheWriteTokens: 0,
    reasoningTokens: asNumber(completion.reasoning_tokens),
  };
}
