import { createHmac } from 'node:crypto';
import { isRecord } from './scenario.js';

/**
 * Reasoning as the real APIs do it, for the simulator: Claude's extended thinking (checks with
 * the API's wording, thinking blocks signed so that a replayed block is verified, as Claude
 * does), Gemini's thinkingConfig ranges and thought summaries, OpenAI's reasoning_effort
 * (reasoning models only).
 */

const SECRET = 'simulator-thinking-key';

/** The thinking text the simulator "thinks" for a prompt. */
export function thoughtFor(model: string): string {
  return `Thinking it over (${model}): the request is clear, so I will answer it directly.`;
}

/** A signature Claude would give the block: verifiable, not forgeable without the key. */
export function signThinking(thinking: string): string {
  return createHmac('sha256', SECRET).update(thinking).digest('base64');
}

/** Claude models before 3.7 have no extended thinking. */
function claudeThinks(model: string): boolean {
  return !/claude-(instant|2|3-(5-)?(haiku|sonnet|opus)|3-5)/.test(model);
}

/** Claude's checks of `thinking` and of replayed thinking blocks (first failure wins), or the thinking asked for. */
export function checkClaudeThinking(body: Record<string, unknown>, model: string): { error: string } | { thinking: boolean } {
  const thinking = body.thinking;
  const messages = Array.isArray(body.messages) ? body.messages.filter(isRecord) : [];
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'assistant' || !Array.isArray(message.content)) continue;
    for (const [j, block] of message.content.entries()) {
      if (!isRecord(block) || block.type !== 'thinking') continue;
      if (typeof block.signature !== 'string' || block.signature !== signThinking(String(block.thinking))) {
        return { error: `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block` };
      }
    }
  }
  if (thinking === undefined || thinking === null) return { thinking: false };
  if (!isRecord(thinking)) return { error: 'thinking: Input should be a valid dictionary or object to extract fields from' };
  if (thinking.type === 'disabled') return { thinking: false };
  if (thinking.type !== 'enabled' && thinking.type !== 'adaptive') return { error: `thinking.type: Input tag '${String(thinking.type)}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'` };
  if (!claudeThinks(model)) return { error: `'${model}' does not support thinking.` };
  if (thinking.type === 'enabled') {
    const budget = thinking.budget_tokens;
    if (typeof budget !== 'number' || !Number.isInteger(budget)) return { error: 'thinking.enabled.budget_tokens: Field required' };
    if (budget < 1024) return { error: 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024' };
    if (typeof body.max_tokens === 'number' && body.max_tokens <= budget) {
      return { error: '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size' };
    }
  }
  if (body.temperature !== undefined && body.temperature !== 1) return { error: '`temperature` may only be set to 1 when thinking is enabled or in adaptive mode. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility' };
  // A tool-use turn being continued must open with the thinking that led to it.
  const last = messages.length - 1;
  const final = messages[last]?.role === 'user' ? messages[last - 1] : undefined;
  if (final?.role === 'assistant' && Array.isArray(final.content) && final.content.some((b) => isRecord(b) && b.type === 'tool_use')) {
    const first = final.content.find(isRecord);
    if (first?.type !== 'thinking' && first?.type !== 'redacted_thinking') {
      return {
        error: `messages.${last - 1}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
      };
    }
  }
  return { thinking: true };
}

/** Gemini's thinkingBudget ranges (ai.google.dev "Gemini thinking"); undefined: the model does not think. */
function geminiRange(model: string): { min: number; max: number; off: boolean } | undefined {
  if (/gemini-2\.5-pro/.test(model)) return { min: 128, max: 32_768, off: false };
  if (/gemini-2\.5-flash-lite/.test(model)) return { min: 512, max: 24_576, off: true };
  if (/gemini-2\.5-flash/.test(model)) return { min: 1, max: 24_576, off: true };
  return undefined;
}

/** Gemini's checks of generationConfig.thinkingConfig, or whether thought summaries were asked for. */
export function checkGeminiThinking(config: unknown, model: string): { error: string } | { thoughts: boolean } {
  if (!isRecord(config) || config.thinkingConfig === undefined) return { thoughts: false };
  const thinking = config.thinkingConfig;
  if (!isRecord(thinking)) return { error: 'Invalid JSON payload received. Unknown name "thinkingConfig": Proto field is not repeating, cannot start list.' };
  const range = geminiRange(model);
  const budget = thinking.thinkingBudget;
  if (budget !== undefined) {
    if (!range) return { error: 'Thinking is not supported for this model.' };
    if (typeof budget !== 'number' || !Number.isInteger(budget)) return { error: 'Invalid value at \'generation_config.thinking_config.thinking_budget\' (TYPE_INT32)' };
    const allowed = budget === -1 || (budget === 0 && range.off) || (budget >= range.min && budget <= range.max);
    if (!allowed) return { error: `The thinking budget ${budget} is invalid. Please choose a value between ${range.off ? 0 : range.min} and ${range.max}.` };
  }
  return { thoughts: thinking.includeThoughts === true && range !== undefined };
}

/** OpenAI: only reasoning models take reasoning_effort. */
export function checkOpenAiEffort(body: Record<string, unknown>, model: string): string | undefined {
  const effort = body.reasoning_effort;
  if (effort === undefined || effort === null) return undefined;
  if (!['minimal', 'low', 'medium', 'high', 'none'].includes(String(effort))) return `Invalid value: '${String(effort)}'. Supported values are: 'low', 'medium', and 'high'.`;
  if (!/^(o\d|gpt-5|gpt-oss)/.test(model.slice(model.lastIndexOf('/') + 1))) return `Unrecognized request argument supplied: reasoning_effort`;
  return undefined;
}
