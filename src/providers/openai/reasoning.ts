import type { ReasoningRequest } from '../../core/canonical.js';

/**
 * OpenAI's reasoning control on chat completions: `reasoning_effort`, which only reasoning
 * models take (the o-series, GPT-5, gpt-oss, and the compatible vendors' reasoners); other
 * models refuse it, so it is left out for them and named as ignored.
 */
export function reasons(upstreamModel: string): boolean {
  const name = upstreamModel.slice(upstreamModel.lastIndexOf('/') + 1);
  return /^(o\d|gpt-5|gpt-oss|deepseek-reasoner|qwq|magistral)/.test(name) && !/-chat(-|$)/.test(name);
}

/** A thinking budget as an effort level: up to 2k tokens low, up to 12k medium, above high. */
export function effortOf(reasoning: ReasoningRequest, upstreamModel: string): 'minimal' | 'low' | 'medium' | 'high' | undefined {
  if (reasoning.effort) return reasoning.effort === 'minimal' && !/gpt-5/.test(upstreamModel) ? 'low' : reasoning.effort;
  if (reasoning.adaptive) return undefined;
  const budget = reasoning.budgetTokens;
  if (budget === undefined) return undefined;
  return budget <= 2048 ? 'low' : budget <= 12_000 ? 'medium' : 'high';
}
