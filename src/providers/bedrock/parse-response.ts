import type { ChatResult, FinishReason, ReasoningBlock, ToolCall, Usage } from '../../core/canonical.js';
import { upstreamMalformed } from '../shared/errors.js';
import { asArray, asNumber, asRecord, asString } from '../shared/json.js';

/** Converse's stop reasons as the canonical finish. */
export function mapStopReason(reason: string | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    default:
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}

/**
 * Converse's usage: `inputTokens` leaves out the prompt's cached part (read from or written to
 * the cache), as Claude's does; the canonical input is the whole prompt.
 */
export function readConverseUsage(value: unknown): Usage | undefined {
  const usage = asRecord(value);
  if (!usage) return undefined;
  const cacheRead = asNumber(usage.cacheReadInputTokens);
  const cacheWrite = asNumber(usage.cacheWriteInputTokens);
  return { inputTokens: asNumber(usage.inputTokens) + cacheRead + cacheWrite, outputTokens: asNumber(usage.outputTokens), cacheReadTokens: cacheRead, cacheWriteTokens: cacheWrite, reasoningTokens: 0 };
}

/** A Converse answer → the canonical result. */
export function parseConverseResponse(provider: string, body: unknown): ChatResult {
  const root = asRecord(body);
  const message = asRecord(asRecord(root?.output)?.message);
  if (!root || !message) throw upstreamMalformed(provider, 'an answer without output.message');
  let text = '';
  const toolCalls: ToolCall[] = [];
  const reasoning: ReasoningBlock[] = [];
  for (const item of asArray(message.content)) {
    const block = asRecord(item);
    if (!block) continue;
    if (typeof block.text === 'string') text += block.text;
    const toolUse = asRecord(block.toolUse);
    if (toolUse) toolCalls.push({ id: asString(toolUse.toolUseId) ?? '', name: asString(toolUse.name) ?? '', arguments: JSON.stringify(toolUse.input ?? {}) });
    const thought = asRecord(block.reasoningContent);
    if (thought) {
      const said = asRecord(thought.reasoningText);
      if (said) reasoning.push({ family: 'anthropic', text: asString(said.text) ?? '', ...(typeof said.signature === 'string' ? { signature: said.signature } : {}) });
      else if (typeof thought.redactedContent === 'string') reasoning.push({ family: 'anthropic', text: '', redacted: thought.redactedContent });
    }
  }
  const usage = readConverseUsage(root.usage);
  return {
    text,
    toolCalls,
    finishReason: mapStopReason(asString(root.stopReason), toolCalls.length > 0),
    ...(reasoning.length > 0 ? { reasoning } : {}),
    ...(usage ? { usage } : {}),
  };
}
