import t from 'tap';
import { estimateCost, matchesSearch, priceSummary } from '../../src/dashboard/lib/pricing.js';
import type { CatalogModel, ModelPricing } from '../../src/dashboard/lib/types.js';

function model(type: CatalogModel['type'], pricing: Partial<ModelPricing>, id = 'openai/gpt-4o-mini'): CatalogModel {
  return {
    id,
    name: 'GPT-4o mini',
    provider: id.split('/')[0] as string,
    type,
    context_window: 128000,
    context_window_unit: 'tokens',
    input_cost_per_1m: pricing.input_per_1m ?? 0,
    output_cost_per_1m: pricing.output_per_1m ?? 0,
    max_output_tokens: null,
    pricing: {
      input_per_1m: null,
      output_per_1m: null,
      cache_read_per_1m: null,
      input_per_1m_chars: null,
      per_minute: null,
      per_image: null,
      image_prices: null,
      billed_in: type === 'speech' ? 'characters' : type === 'transcription' ? 'seconds' : type === 'image' ? 'images' : 'tokens',
      ...pricing,
    },
  };
}

const mini = model('chat', { input_per_1m: 12.6, output_per_1m: 50.4, cache_read_per_1m: 6.3 });

t.test('chat: tokens × ₹ per 1M, summed in µINR and rounded up once', async (t) => {
  t.equal(estimateCost(mini, { inputTokens: 1_000_000, outputTokens: 1_000_000 }).micros, 63_000_000, '₹12.60 + ₹50.40');
  // 7 × 12.6 + 15 × 50.4 = 844.2 µINR → 845 (the gateway rounds the call up once).
  t.equal(estimateCost(mini, { inputTokens: 7, outputTokens: 15 }).micros, 845);
  t.equal(estimateCost(mini, { inputTokens: 1, outputTokens: 0 }).micros, 13, '12.6 µINR rounds up to 13');
  t.equal(estimateCost(mini, { inputTokens: 0, outputTokens: 0 }).micros, 0);
  // Past 2^53 in µINR·tokens: 10^9 tokens at ₹10,000 per 1M is ₹1,00,00,000 exactly.
  const dear = model('chat', { input_per_1m: 10_000, output_per_1m: 10_000 });
  t.equal(estimateCost(dear, { inputTokens: 1e9, outputTokens: 1e9 }).micros, 20_000_000 * 1_000_000);
  const lines = estimateCost(mini, { inputTokens: 10, outputTokens: 5 }).lines;
  t.same(lines.map((line) => [line.label, line.quantity, line.priceMicros]), [
    ['Input tokens', 10, 12_600_000],
    ['Output tokens', 5, 50_400_000],
  ]);
});

t.test('cached prompt tokens at the cache price; never more cached than input', async (t) => {
  // 900 plain × 12.6 + 100 cached × 6.3 = 11340 + 630 = 11970 µINR.
  t.equal(estimateCost(mini, { inputTokens: 1000, cachedTokens: 100, outputTokens: 0 }).micros, 11_970);
  t.equal(estimateCost(mini, { inputTokens: 10, cachedTokens: 50 }).micros, 63, 'cached is capped at the input: 10 × 6.3 µINR');
  const noCache = model('chat', { input_per_1m: 10, output_per_1m: 20 });
  t.equal(estimateCost(noCache, { inputTokens: 100, cachedTokens: 100 }).micros, 1000, 'no cache price: the input price');
});

t.test('bad quantities count as none', async (t) => {
  t.equal(estimateCost(mini, { inputTokens: -5, outputTokens: Number.NaN }).micros, 0);
  t.equal(estimateCost(mini, { inputTokens: 2.9 }).micros, estimateCost(mini, { inputTokens: 2 }).micros, 'whole tokens');
});

t.test('media models: characters, seconds, images', async (t) => {
  const embed = model('embedding', { input_per_1m: 1.68, output_per_1m: 0 }, 'openai/text-embedding-3-small');
  t.equal(estimateCost(embed, { inputTokens: 1_000_000, outputTokens: 1_000_000 }).micros, 1_680_000, 'embeddings bill input only');
  const tts = model('speech', { input_per_1m_chars: 1260 }, 'openai/tts-1');
  t.equal(estimateCost(tts, { characters: 1000 }).micros, 1_260_000);
  t.equal(estimateCost(tts, { characters: 1 }).micros, 1260);
  const whisper = model('transcription', { per_minute: 0.504 }, 'openai/whisper-1');
  t.equal(estimateCost(whisper, { seconds: 60 }).micros, 504_000);
  t.equal(estimateCost(whisper, { seconds: 1 }).micros, 8400, '504000 / 60 per second');
  t.equal(estimateCost(model('transcription', { per_minute: 0.1 }), { seconds: 7 }).micros, 11_667, 'rounded up');
  const dalle = model('image', { per_image: 3.36, image_prices: { '1024x1024/standard': 3.36, '1024x1024/hd': 6.72 } }, 'openai/dall-e-3');
  t.equal(estimateCost(dalle, { images: 2 }).micros, 6_720_000);
  t.equal(estimateCost(dalle, { images: 2, imageOption: '1024x1024/hd' }).micros, 13_440_000);
  t.equal(estimateCost(dalle, { images: 1, imageOption: 'nope' }).micros, 3_360_000, 'an unknown option: the per-image price');
  const gptImage = model('image', { per_image: 21, input_per_1m: 420 }, 'openai/gpt-image-1');
  t.equal(estimateCost(gptImage, { images: 1, inputTokens: 100 }).micros, 21_000_000 + 42_000, 'plus the prompt tokens');
});

t.test('headline prices and search', async (t) => {
  t.same(priceSummary(mini), { unit: 'per 1M tokens', input: 12.6, output: 50.4 });
  t.same(priceSummary(model('speech', { input_per_1m_chars: 1260 })), { unit: 'per 1M characters', input: 1260, output: null });
  t.same(priceSummary(model('image', { per_image: 3.36 })), { unit: 'per image', input: 3.36, output: null });
  t.ok(matchesSearch(mini, 'gpt 4o'));
  t.ok(matchesSearch(mini, 'OPENAI mini'));
  t.ok(matchesSearch(mini, '  '));
  t.notOk(matchesSearch(mini, 'claude'));
  t.ok(matchesSearch(mini, 'chat'), 'the kind is searched too');
});
