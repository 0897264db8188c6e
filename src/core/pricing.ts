import type { ModelPricing } from '../config/types.js';
import type { Usage } from './canonical.js';

/**
 * Call cost in integer µINR. Prices are µINR per 1M tokens (INR price × 1e6), so
 * cost = Σ tokens × price / 1e6, summed exactly in BigInt and rounded up once per call.
 */

const MILLION = 1_000_000n;

function ceilDiv(numerator: bigint, denominator: bigint): number {
  return Number((numerator + denominator - 1n) / denominator);
}

/** The price a prompt token is billed at when it is a plain, cached-read or cache-write token. */
function promptPrices(pricing: ModelPricing): { plain: bigint; cacheRead: bigint; cacheWrite: bigint } {
  return {
    plain: BigInt(pricing.inputPer1M),
    cacheRead: BigInt(pricing.cacheReadPer1M ?? pricing.inputPer1M),
    cacheWrite: BigInt(pricing.cacheWritePer1M ?? pricing.inputPer1M),
  };
}

export function costMicros(pricing: ModelPricing, usage: Usage): number {
  const prices = promptPrices(pricing);
  const cached = usage.cacheReadTokens + usage.cacheWriteTokens;
  const plain = Math.max(0, usage.inputTokens - cached);
  const total =
    BigInt(plain) * prices.plain +
    BigInt(usage.cacheReadTokens) * prices.cacheRead +
    BigInt(usage.cacheWriteTokens) * prices.cacheWrite +
    BigInt(usage.outputTokens) * BigInt(pricing.outputPer1M);
  return ceilDiv(total, MILLION);
}

/** The most a prompt of at most `promptTokens` tokens can cost (every token at the dearest prompt price). */
function worstPromptPer1M(pricing: ModelPricing): bigint {
  const prices = promptPrices(pricing);
  return [prices.plain, prices.cacheRead, prices.cacheWrite].reduce((a, b) => (b > a ? b : a));
}

/** The most a call can cost: the prompt bound at the dearest prompt price plus every output token. */
export function worstCaseMicros(pricing: ModelPricing, promptTokens: number, maxOutputTokens: number): number {
  return ceilDiv(BigInt(promptTokens) * worstPromptPer1M(pricing) + BigInt(maxOutputTokens) * BigInt(pricing.outputPer1M), MILLION);
}

/** The largest max_tokens whose worst case fits in `availableMicros` (0 when not even the prompt fits). */
export function affordableOutputTokens(pricing: ModelPricing, promptTokens: number, availableMicros: number): number {
  const budget = BigInt(Math.max(0, availableMicros)) * MILLION - BigInt(promptTokens) * worstPromptPer1M(pricing);
  if (budget < 0n) return 0;
  const perToken = BigInt(pricing.outputPer1M);
  if (perToken === 0n) return Number.MAX_SAFE_INTEGER;
  const tokens = budget / perToken;
  return tokens > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(tokens);
}
