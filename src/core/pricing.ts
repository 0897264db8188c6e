import type { ModelPricing } from '../config/types.js';
import type { ChatRequest, Usage } from './canonical.js';

/**
 * Call cost in integer µINR. Prices are µINR per 1M tokens (INR price × 1e6), so
 * cost = Σ tokens × price / 1e6, summed exactly in BigInt and rounded up once per call.
 */

const MILLION = 1_000_000n;

function ceilDiv(numerator: bigint, denominator: bigint): number {
  return Number((numerator + denominator - 1n) / denominator);
}

/** The price a prompt token is billed at when it is a plain, cached-read or cache-write token. */
function promptPrices(pricing: ModelPricing): { plain: bigint; cacheRead: bigint; cacheWrite: bigint; cacheWrite1h: bigint } {
  const cacheWrite = pricing.cacheWritePer1M ?? pricing.inputPer1M;
  return {
    plain: BigInt(pricing.inputPer1M),
    cacheRead: BigInt(pricing.cacheReadPer1M ?? pricing.inputPer1M),
    cacheWrite: BigInt(cacheWrite),
    cacheWrite1h: BigInt(pricing.cacheWrite1hPer1M ?? cacheWrite),
  };
}

export function costMicros(pricing: ModelPricing, usage: Usage): number {
  const prices = promptPrices(pricing);
  const cached = usage.cacheReadTokens + usage.cacheWriteTokens;
  const plain = Math.max(0, usage.inputTokens - cached);
  const oneHour = Math.min(usage.cacheWrite1hTokens ?? 0, usage.cacheWriteTokens);
  const total =
    BigInt(plain) * prices.plain +
    BigInt(usage.cacheReadTokens) * prices.cacheRead +
    BigInt(usage.cacheWriteTokens - oneHour) * prices.cacheWrite +
    BigInt(oneHour) * prices.cacheWrite1h +
    BigInt(usage.outputTokens) * BigInt(pricing.outputPer1M);
  return ceilDiv(total, MILLION);
}

/**
 * The dearest price a prompt token can be billed at: the dearer cache-write price (Anthropic's
 * 1-hour 2x, else the 5-minute 1.25x) only when the call can write a cache; otherwise plain
 * input (cache reads are cheaper).
 */
function worstPromptPer1M(pricing: ModelPricing, cacheWrites: boolean): bigint {
  const prices = promptPrices(pricing);
  const plain = prices.plain > prices.cacheRead ? prices.plain : prices.cacheRead;
  if (!cacheWrites) return plain;
  const write = prices.cacheWrite1h > prices.cacheWrite ? prices.cacheWrite1h : prices.cacheWrite;
  return write > plain ? write : plain;
}

/**
 * Whether a call can be billed cache writes: a provider writes a prompt cache only where the
 * request marks breakpoints (Anthropic's cache_control, which `cache: true` sets), or where it
 * carries wire fields of its own the gateway does not read (which might ask for caching).
 */
export function mayWriteCache(request: Pick<ChatRequest, 'messages' | 'tools' | 'passthrough'>): boolean {
  if (request.passthrough) return true;
  if (request.tools) for (const tool of request.tools) if (tool.cacheControl) return true;
  for (const message of request.messages) for (const part of message.content) if (part.cacheControl) return true;
  return false;
}

/** The most a call can cost: the prompt bound at the dearest prompt price plus every output token. */
export function worstCaseMicros(pricing: ModelPricing, promptTokens: number, maxOutputTokens: number, cacheWrites = true): number {
  return ceilDiv(BigInt(promptTokens) * worstPromptPer1M(pricing, cacheWrites) + BigInt(maxOutputTokens) * BigInt(pricing.outputPer1M), MILLION);
}

/** The largest max_tokens whose worst case fits in `availableMicros` (0 when not even the prompt fits). */
export function affordableOutputTokens(pricing: ModelPricing, promptTokens: number, availableMicros: number, cacheWrites = true): number {
  const budget = BigInt(Math.max(0, availableMicros)) * MILLION - BigInt(promptTokens) * worstPromptPer1M(pricing, cacheWrites);
  if (budget < 0n) return 0;
  const perToken = BigInt(pricing.outputPer1M);
  if (perToken === 0n) return Number.MAX_SAFE_INTEGER;
  const tokens = budget / perToken;
  return tokens > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(tokens);
}

// ---- Media: the units each kind is billed in ------------------------------------------------

/** Speech: µINR for `characters` at the per-1M-characters price, rounded up once. */
export function speechCostMicros(pricing: ModelPricing, characters: number): number {
  return ceilDiv(BigInt(characters) * BigInt(pricing.inputPer1MChars ?? 0), MILLION);
}

/** Transcription: whole seconds billed for a duration (nearest second, at least 1 and at least the vendor's minimum). */
export function billedSeconds(durationSeconds: number, minimumSeconds: number): number {
  return Math.max(1, minimumSeconds, Math.round(durationSeconds));
}

/** Transcription: µINR for `seconds` at the per-minute price, rounded up once. */
export function transcriptionCostMicros(pricing: ModelPricing, seconds: number): number {
  return ceilDiv(BigInt(seconds) * BigInt(pricing.perMinute ?? 0), 60n);
}

/**
 * Image: µINR per image of a size and quality: `<size>/<quality>`, then `<size>`, then the
 * model's per-image price. `auto` (or an absent quality) is priced at the dearest the model
 * can pick for it: that is what a hold must cover.
 */
export function imagePriceMicros(pricing: ModelPricing, size: string, quality: string | undefined): number {
  const table = pricing.imagePrices ?? {};
  const fallback = pricing.perImage ?? 0;
  const exact = (s: string, q: string | undefined): number | undefined => (q !== undefined ? table[`${s}/${q}`] : undefined) ?? table[s];
  const sizes = size === 'auto' ? [...new Set(Object.keys(table).map((key) => key.split('/')[0] as string))] : [size];
  let dearest: number | undefined;
  for (const s of sizes) {
    if (quality !== undefined && quality !== 'auto') {
      const price = exact(s, quality);
      if (price !== undefined) dearest = Math.max(dearest ?? 0, price);
      continue;
    }
    for (const [key, price] of Object.entries(table)) if (key === s || key.startsWith(`${s}/`)) dearest = Math.max(dearest ?? 0, price);
  }
  return dearest ?? fallback;
}
