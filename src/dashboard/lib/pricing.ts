import { inrToMicros } from './money.js';
import type { CatalogModel } from './types.js';

/**
 * The Models page's cost calculator, in integer micro-rupees with the gateway's rounding: the
 * sum of quantity × price is divided once and rounded up (a call never costs less than its
 * exact price). Products go through BigInt: 10^9 tokens × ₹10^4 per 1M is past 2^53 µINR·tokens.
 */

const MILLION = 1_000_000n;

function ceilDiv(numerator: bigint, denominator: bigint): bigint {
  return (numerator + denominator - 1n) / denominator;
}

/** What the calculator was given; each kind of model reads the quantities it is billed in. */
export interface CalculatorInput {
  inputTokens?: number;
  outputTokens?: number;
  /** Prompt tokens read from the provider's cache (part of inputTokens' prompt, priced apart). */
  cachedTokens?: number;
  characters?: number;
  seconds?: number;
  images?: number;
  /** An image_prices key ("1024x1024/hd", "512x512"); the model's per-image price otherwise. */
  imageOption?: string;
}

export interface CostLine {
  label: string;
  quantity: number;
  /** The price this line uses, in µINR per `per` units. */
  priceMicros: number;
  per: string;
}

export interface CostEstimate {
  /** Total, rounded up once to the µINR. */
  micros: number;
  lines: CostLine[];
}

function micros(inr: number | null | undefined): bigint {
  return inr === null || inr === undefined ? 0n : BigInt(inrToMicros(inr));
}

function whole(value: number | undefined): bigint {
  if (value === undefined || !Number.isFinite(value) || value <= 0) return 0n;
  return BigInt(Math.floor(value));
}

/** The cost of a call of `model` with the given quantities. */
export function estimateCost(model: CatalogModel, input: CalculatorInput): CostEstimate {
  const p = model.pricing;
  const lines: CostLine[] = [];
  switch (p.billed_in) {
    case 'tokens': {
      const inputTokens = whole(input.inputTokens);
      const cached = inputTokens < whole(input.cachedTokens) ? inputTokens : whole(input.cachedTokens);
      const plain = inputTokens - cached;
      const inPrice = micros(p.input_per_1m);
      const cachePrice = p.cache_read_per_1m === null ? inPrice : micros(p.cache_read_per_1m);
      const outPrice = micros(p.output_per_1m);
      const outputTokens = model.type === 'embedding' ? 0n : whole(input.outputTokens);
      lines.push({ label: 'Input tokens', quantity: Number(plain), priceMicros: Number(inPrice), per: '1M tokens' });
      if (cached > 0n) lines.push({ label: 'Cached input tokens', quantity: Number(cached), priceMicros: Number(cachePrice), per: '1M tokens' });
      if (model.type !== 'embedding') lines.push({ label: 'Output tokens', quantity: Number(outputTokens), priceMicros: Number(outPrice), per: '1M tokens' });
      const total = ceilDiv(plain * inPrice + cached * cachePrice + outputTokens * outPrice, MILLION);
      return { micros: Number(total), lines };
    }
    case 'characters': {
      const characters = whole(input.characters);
      const price = micros(p.input_per_1m_chars);
      lines.push({ label: 'Characters', quantity: Number(characters), priceMicros: Number(price), per: '1M characters' });
      return { micros: Number(ceilDiv(characters * price, MILLION)), lines };
    }
    case 'seconds': {
      const seconds = whole(input.seconds);
      const price = micros(p.per_minute);
      lines.push({ label: 'Seconds of audio', quantity: Number(seconds), priceMicros: Number(price), per: 'minute' });
      return { micros: Number(ceilDiv(seconds * price, 60n)), lines };
    }
    case 'images': {
      const images = whole(input.images);
      const table = p.image_prices ?? {};
      const option = input.imageOption !== undefined && table[input.imageOption] !== undefined ? input.imageOption : undefined;
      const price = option !== undefined ? micros(table[option]) : micros(p.per_image);
      lines.push({ label: option ? `Images (${option})` : 'Images', quantity: Number(images), priceMicros: Number(price), per: 'image' });
      const promptTokens = whole(input.inputTokens);
      const promptPrice = micros(p.input_per_1m);
      if (promptPrice > 0n) lines.push({ label: 'Prompt tokens', quantity: Number(promptTokens), priceMicros: Number(promptPrice), per: '1M tokens' });
      // Images are whole prices; the prompt's tokens are rounded up on their own.
      const total = images * price + (promptPrice > 0n ? ceilDiv(promptTokens * promptPrice, MILLION) : 0n);
      return { micros: Number(total), lines };
    }
  }
}

/** The unit a model's headline price is quoted in, for the catalog table. */
export interface PriceSummary {
  /** e.g. "₹ per 1M tokens" */
  unit: string;
  input: number | null;
  output: number | null;
}

export function priceSummary(model: CatalogModel): PriceSummary {
  const p = model.pricing;
  switch (p.billed_in) {
    case 'tokens':
      return { unit: 'per 1M tokens', input: p.input_per_1m, output: model.type === 'embedding' ? null : p.output_per_1m };
    case 'characters':
      return { unit: 'per 1M characters', input: p.input_per_1m_chars, output: null };
    case 'seconds':
      return { unit: 'per minute of audio', input: p.per_minute, output: null };
    case 'images':
      return { unit: 'per image', input: p.per_image, output: null };
  }
}

/** Lower-case words of a search box; a model matches when each word is in its id, name, provider or type. */
export function matchesSearch(model: CatalogModel, query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const haystack = `${model.id} ${model.name} ${model.provider} ${model.type}`.toLowerCase();
  return words.every((word) => haystack.includes(word));
}
