import type { ChatRequest, ReasoningBlock } from '../../core/canonical.js';
import type { AnthropicBlock, AnthropicRequest } from './wire.js';

/**
 * Claude's extended thinking: the request's reasoning as `thinking`, and the client's replayed
 * thinking blocks. Claude refuses a budget under 1024 or not below max_tokens, and models
 * before Claude 3.7 have no thinking at all.
 */

export const MIN_THINKING_BUDGET = 1024;

/** Budgets for an effort level (the responses format's `reasoning.effort`). */
const EFFORT_BUDGET: Record<'minimal' | 'low' | 'medium' | 'high', number> = { minimal: 1024, low: 2048, medium: 8192, high: 24576 };

/** Claude 3.7 and every Claude 4 and later think; 3.5, 3 and older do not. */
export function claudeThinks(upstreamModel: string): boolean {
  return !/claude-(instant|2|3-(5-)?(haiku|sonnet|opus)|3-5)/.test(upstreamModel);
}

/**
 * The `thinking` field for a request, or undefined when it asks for none or the model has
 * none (then the caller names `thinking` as ignored). The client's own object (an Anthropic
 * client's `display` and any newer fields) is kept; the budget is lowered below max_tokens.
 */
export function thinkingField(request: ChatRequest): Record<string, unknown> | undefined {
  const reasoning = request.reasoning;
  if (!reasoning || !claudeThinks(request.upstreamModel) || unsignedToolTurn(request)) return undefined;
  const base = { ...reasoning.anthropic };
  if (reasoning.adaptive) return { ...base, type: 'adaptive' };
  const asked = reasoning.budgetTokens ?? EFFORT_BUDGET[reasoning.effort ?? 'medium'];
  const budget = Math.min(asked, request.maxTokens - 1);
  if (budget < MIN_THINKING_BUDGET) return undefined;
  return { ...base, type: 'enabled', budget_tokens: budget };
}

/** Claude's own reasoning blocks, to open an assistant turn again (others' reasoning is not Claude's to read). */
export function replayedThinking(reasoning: readonly ReasoningBlock[] | undefined): AnthropicBlock[] {
  const blocks: AnthropicBlock[] = [];
  for (const block of reasoning ?? []) {
    if (block.family !== 'anthropic') continue;
    if (block.redacted !== undefined) blocks.push({ type: 'redacted_thinking', data: block.redacted });
    else if (block.signature !== undefined) blocks.push({ type: 'thinking', thinking: block.text, signature: block.signature });
  }
  return blocks;
}

/**
 * Whether the call continues a tool-use turn whose assistant message carries no thinking block
 * of Claude's (its reasoning was another model's, or the client did not keep it): with
 * thinking on, Claude refuses that ("a final assistant message must start with a thinking
 * block"), so that call goes without thinking.
 */
function unsignedToolTurn(request: ChatRequest): boolean {
  const messages = request.messages;
  let index = messages.length - 1;
  while (index >= 0 && messages[index]?.role !== 'assistant') index--;
  const turn = messages[index];
  if (turn?.role !== 'assistant' || turn.toolCalls.length === 0) return false;
  // The loop continues when the call's results follow it (a user turn may add text after them).
  const continued = messages.slice(index + 1).some((message) => message.role === 'tool');
  return continued && !turn.reasoning?.some((block) => block.family === 'anthropic' && (block.signature !== undefined || block.redacted !== undefined));
}

/**
 * What Claude refuses beside thinking (docs "Extended thinking", feature compatibility): a
 * forced tool (tool_choice any or tool, JSON mode's forced tool), which leaves thinking out; a
 * temperature other than 1, top_k, and top_p below 0.95, which are left out. Each is named as
 * ignored.
 */
export function reconcileThinking(body: AnthropicRequest, ignoredParams: string[], name: string): void {
  if (!body.thinking) return;
  const forced = body.tool_choice?.type === 'any' || body.tool_choice?.type === 'tool';
  if (forced) {
    delete body.thinking;
    ignoredParams.push(name);
    return;
  }
  if (body.temperature !== undefined && body.temperature !== 1) {
    delete body.temperature;
    ignoredParams.push('temperature');
  }
  if (body.top_k !== undefined) {
    delete body.top_k;
    ignoredParams.push('top_k');
  }
  if (body.top_p !== undefined && body.top_p < 0.95) {
    delete body.top_p;
    ignoredParams.push('top_p');
  }
}
