import type { ReasoningRequest } from '../../core/canonical.js';

/**
 * Gemini's thinking control (`generationConfig.thinkingConfig`): a token budget within the
 * model's range (ai.google.dev "Gemini thinking": 2.5 Pro 128 to 32768 and never off, 2.5
 * Flash 0 to 24576, 2.5 Flash-Lite 512 to 24576; Gemini 2.0 and older do not think), and
 * whether thought summaries come back (`includeThoughts`). An asked budget above the range is
 * lowered to its top (Claude Code asks 31999, above Flash's cap).
 */
interface BudgetRange {
  min: number;
  max: number;
}

const RANGES: readonly [RegExp, BudgetRange][] = [
  [/gemini-2\.5-pro/, { min: 128, max: 32_768 }],
  [/gemini-2\.5-flash-lite/, { min: 512, max: 24_576 }],
  [/gemini-2\.5-flash/, { min: 0, max: 24_576 }],
  [/gemini-(\d{2,}|[3-9])(\.\d+)?-/, { min: 128, max: 32_768 }],
];

const EFFORT_BUDGET: Record<'minimal' | 'low' | 'medium' | 'high', number> = { minimal: 512, low: 1024, medium: 8192, high: 24_576 };

export function thinkingRange(upstreamModel: string): BudgetRange | undefined {
  return RANGES.find(([pattern]) => pattern.test(upstreamModel))?.[1];
}

/** The thinkingConfig for a request, or undefined when the model does not think (then named as ignored). */
export function thinkingConfig(reasoning: ReasoningRequest, upstreamModel: string): { thinkingBudget: number; includeThoughts?: boolean } | undefined {
  const range = thinkingRange(upstreamModel);
  if (!range) return undefined;
  // Adaptive: Gemini's dynamic thinking (-1).
  const asked = reasoning.adaptive ? -1 : (reasoning.budgetTokens ?? EFFORT_BUDGET[reasoning.effort ?? 'medium']);
  const budget = asked === -1 ? -1 : Math.max(range.min, Math.min(range.max, asked));
  return reasoning.summary ? { thinkingBudget: budget, includeThoughts: true } : { thinkingBudget: budget };
}
