import type { ChatRequest, ChatResult, FinishReason, ReasoningBlock, ToolCall, Usage } from '../../core/canonical.js';
import { asArray, asNumber, asRecord, asString, type JsonRecord } from '../shared/json.js';
import { JSON_TOOL_NAME } from './wire.js';

/** Whether this request was sent in JSON mode as a forced tool (see convert-request.ts). */
export function usesJsonTool(request: ChatRequest): boolean {
  return request.responseFormat !== undefined && request.responseFormat.type !== 'text' && (request.tools?.length ?? 0) === 0;
}

/** Anthropic message JSON → canonical result. */
export function parseAnthropicResponse(body: unknown, request: ChatRequest): ChatResult {
  const root = asRecord(body) ?? {};
  const jsonTool = usesJsonTool(request);
  let text = '';
  const toolCalls: ToolCall[] = [];
  const reasoning: ReasoningBlock[] = [];
  for (const raw of asArray(root.content)) {
    const block = asRecord(raw) ?? {};
    if (block.type === 'text') text += asString(block.text) ?? '';
    else if (block.type === 'thinking') reasoning.push({ family: 'anthropic', text: asString(block.thinking) ?? '', signature: asString(block.signature) ?? '' });
    else if (block.type === 'redacted_thinking') reasoning.push({ family: 'anthropic', text: '', redacted: asString(block.data) ?? '' });
    else if (block.type === 'tool_use') {
      const input = JSON.stringify(block.input ?? {});
      if (jsonTool && block.name === JSON_TOOL_NAME) text += input;
      else toolCalls.push({ id: asString(block.id) ?? '', name: asString(block.name) ?? '', arguments: input });
    }
  }
  const stopReason = asString(root.stop_reason);
  const result: ChatResult = { text, toolCalls, finishReason: mapAnthropicStopReason(stopReason, toolCalls.length > 0) };
  const id = asString(root.id);
  if (id !== undefined) result.id = id;
  if (reasoning.length > 0) result.reasoning = reasoning;
  const stopSequence = asString(root.stop_sequence);
  if (stopSequence !== undefined) result.stopSequence = stopSequence;
  const usage = asRecord(root.usage);
  if (usage) result.usage = mapAnthropicUsage(usage);
  return result;
}

/** docs.anthropic.com "Handling stop reasons"; a forced JSON tool ends with tool_use but is an answer. */
export function mapAnthropicStopReason(reason: string | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return hasToolCalls ? 'tool_calls' : 'stop';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

/** Anthropic's input_tokens exclude cache reads and writes; the canonical input includes them. */
export function mapAnthropicUsage(usage: JsonRecord): Usage {
  const cacheRead = asNumber(usage.cache_read_input_tokens);
  const cacheWrite = asNumber(usage.cache_creation_input_tokens);
  const mapped: Usage = {
    inputTokens: asNumber(usage.input_tokens) + cacheRead + cacheWrite,
    outputTokens: asNumber(usage.output_tokens),
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: 0,
  };
  // The split of writes by lifetime (`cache_creation`): 1-hour writes cost more.
  const split = usage.cache_creation;
  if (typeof split === 'object' && split !== null && !Array.isArray(split)) {
    const oneHour = Math.min(cacheWrite, asNumber((split as JsonRecord).ephemeral_1h_input_tokens));
    if (oneHour > 0) mapped.cacheWrite1hTokens = oneHour;
  }
  return mapped;
}
