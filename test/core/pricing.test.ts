import t from 'tap';
import type { ModelPricing } from '../../src/config/types.js';
import { costMicros, worstCaseMicros } from '../../src/core/pricing.js';

/** Prompt caching prices: reads, 5-minute writes and 1-hour writes each at their own price. */

// Claude Sonnet 4.5 in µINR per 1M tokens: ₹252 input, ₹1,260 output, ₹25.2 read, ₹315 5m write, ₹504 1h write.
const SONNET: ModelPricing = { inputPer1M: 252_000_000, outputPer1M: 1_260_000_000, cacheReadPer1M: 25_200_000, cacheWritePer1M: 315_000_000, cacheWrite1hPer1M: 504_000_000 };
const usage = { inputTokens: 10_000, outputTokens: 100, cacheReadTokens: 2_000, cacheWriteTokens: 5_000, reasoningTokens: 0 };

t.test('cache reads, 5-minute and 1-hour writes each at their price, rounded up once', async (t) => {
  // 3,000 plain × 252 + 2,000 × 25.2 + 5,000 × 315 + 100 × 1,260 (₹ per 1M) = 0.756 + 0.0504 + 1.575 + 0.126
  t.equal(costMicros(SONNET, usage), 2_507_400, 'all writes 5-minute');
  t.equal(costMicros(SONNET, { ...usage, cacheWrite1hTokens: 5_000 }), 2_507_400 + 5_000 * 189, 'all writes 1-hour: ₹189 per 1M more');
  t.equal(costMicros(SONNET, { ...usage, cacheWrite1hTokens: 2_000 }), 2_507_400 + 2_000 * 189, 'a mix');
  t.equal(costMicros(SONNET, { ...usage, cacheWrite1hTokens: 9_999 }), 2_507_400 + 5_000 * 189, 'never more 1-hour tokens than writes');
  const noOneHourPrice: ModelPricing = { ...SONNET, cacheWrite1hPer1M: undefined as unknown as number };
  delete (noOneHourPrice as { cacheWrite1hPer1M?: number }).cacheWrite1hPer1M;
  t.equal(costMicros(noOneHourPrice, { ...usage, cacheWrite1hTokens: 5_000 }), 2_507_400, 'no 1-hour price: the write price');
  t.equal(costMicros(SONNET, { inputTokens: 1, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), 252, 'exact µINR');
  t.equal(costMicros({ inputPer1M: 1, outputPer1M: 0 }, { inputTokens: 1, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), 1, 'a fraction of a µINR rounds up');
});

t.test('the hold of a call that may write a cache covers 1-hour writes', async (t) => {
  t.equal(worstCaseMicros(SONNET, 1_000, 0, true), 504_000, 'every prompt token at the 1-hour write price');
  t.equal(worstCaseMicros(SONNET, 1_000, 0, false), 252_000, 'no breakpoints: plain input');
  t.ok(worstCaseMicros(SONNET, 1_000, 0, true) >= costMicros(SONNET, { inputTokens: 1_000, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 1_000, cacheWrite1hTokens: 1_000, reasoningTokens: 0 }), 'the hold covers the dearest bill');
});
