import t from 'tap';
import { MemoryHoldStore } from '../../src/core/limits/holds.js';
import { MemoryRateLimiter, WINDOW_MS } from '../../src/core/limits/rate-limit.js';
import { affordableOutputTokens, costMicros, mayWriteCache, worstCaseMicros } from '../../src/core/pricing.js';

t.test('sliding window: exactly `limit` per 60 s, admitted again as the oldest leaves', async (t) => {
  let now = 1_000_000;
  const limiter = new MemoryRateLimiter(() => now);
  const results = [];
  for (let i = 0; i < 5; i++) {
    results.push(limiter.checkSync('k', 3));
    now += 1000;
  }
  t.same(results.map((r) => r.allowed), [true, true, true, false, false]);
  t.same(results.map((r) => r.remaining), [2, 1, 0, 0, 0]);
  t.equal(results[3]?.retryAfterMs, WINDOW_MS - 3000, 'retry when the first admission leaves the window');
  now = 1_000_000 + WINDOW_MS; // exactly 60 s after the first: it no longer counts
  t.equal(limiter.checkSync('k', 3).allowed, true);
  t.equal(limiter.checkSync('k', 3).allowed, false, 'the second admission (at +1 s) still counts');
  now = 1_000_000 + WINDOW_MS + 1000;
  t.equal(limiter.checkSync('k', 3).allowed, true);
  t.equal(limiter.checkSync('other', 3).allowed, true, 'keys are independent');
});

t.test('sliding window: a changed limit keeps recent admissions', async (t) => {
  let now = 0;
  const limiter = new MemoryRateLimiter(() => now);
  for (let i = 0; i < 5; i++) limiter.checkSync('k', 10);
  t.equal(limiter.checkSync('k', 5).allowed, false, 'lowered to 5 with 5 in the window');
  t.equal(limiter.checkSync('k', 7).remaining, 1, 'raised to 7: the 6th fits');
  t.equal(limiter.checkSync('k', 7).remaining, 0, 'and the 7th');
  t.equal(limiter.checkSync('k', 7).allowed, false, 'not an 8th');
  now += WINDOW_MS + 1;
  t.equal(limiter.checkSync('k', 7).remaining, 6);
});

t.test('sliding window: rings grow with traffic, not to the limit, and idle keys are forgotten', async (t) => {
  let now = 5_000_000;
  const limiter = new MemoryRateLimiter(() => now);
  limiter.checkSync('quiet', 10_000);
  t.equal(limiter.capacityOf('quiet'), 16, 'one call at 10,000 a minute holds 16 slots, not 10,000');
  for (let i = 0; i < 99; i++) limiter.checkSync('busy', 10_000);
  t.equal(limiter.capacityOf('busy'), 128, '100 calls: doubled to 128');
  for (let i = 0; i < 5; i++) limiter.checkSync('small', 3);
  t.equal(limiter.capacityOf('small'), 3, 'never more than the limit');
  now += WINDOW_MS / 2;
  limiter.checkSync('busy', 10_000);
  now += WINDOW_MS / 2 + 1;
  // A window later: the sweep forgets keys with nothing left in their window and halves a ring
  // whose traffic fell to a quarter of it.
  t.equal(limiter.checkSync('other', 10_000).allowed, true);
  t.equal(limiter.capacityOf('quiet'), 0, 'quiet key forgotten');
  t.equal(limiter.capacityOf('small'), 0, 'small key forgotten');
  t.equal(limiter.capacityOf('busy'), 64, 'busy ring (1 call left in its window) halved');
  t.equal(limiter.trackedKeys, 2);
  t.equal(limiter.checkSync('quiet', 10_000).remaining, 9_999, 'a forgotten key starts afresh');
});

t.test('sliding window: the growing ring decides as a plain list of admission times does', async (t) => {
  let now = 0;
  const limiter = new MemoryRateLimiter(() => now);
  const model = new Map<string, number[]>();
  let seed = 7;
  const rand = (n: number): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  let mismatches = 0;
  let refused = 0;
  for (let step = 0; step < 20_000; step++) {
    now += rand(40);
    const key = `k${rand(3)}`;
    const limit = step < 10_000 ? 50 : 30 + rand(5);
    // A changed limit keeps the newest `limit` admissions (as the limiter does).
    const live = (model.get(key) ?? []).slice(-limit).filter((at) => at > now - WINDOW_MS);
    const allowed = live.length < limit;
    if (allowed) live.push(now);
    else refused++;
    model.set(key, live);
    const got = limiter.checkSync(key, limit);
    const remaining = allowed ? limit - live.length : 0;
    const retryAfterMs = allowed ? 0 : Math.max(1, Math.ceil((live[0] as number) + WINDOW_MS - now));
    if (got.allowed !== allowed || got.remaining !== remaining || got.retryAfterMs !== retryAfterMs) mismatches++;
  }
  t.ok(refused > 1000, `the limit was reached (${refused} refused)`);
  t.equal(mismatches, 0, 'every decision, remaining and retry-after as the model');
});

t.test('memory holds add and release per account and key', async (t) => {
  const holds = new MemoryHoldStore();
  t.same(await holds.acquire({ id: 'a', accountId: 'acc', keyId: 'k1', amountMicros: 100 }), { accountHeldMicros: 100, keyHeldMicros: 100 });
  t.same(await holds.acquire({ id: 'b', accountId: 'acc', keyId: 'k2', amountMicros: 50 }), { accountHeldMicros: 150, keyHeldMicros: 50 });
  t.same(await holds.acquire({ id: 'a', accountId: 'acc', keyId: 'k1', amountMicros: 100 }), { accountHeldMicros: 150, keyHeldMicros: 100 }, 'acquiring twice holds once');
  await holds.release({ id: 'a', accountId: 'acc', keyId: 'k1', amountMicros: 100 });
  await holds.release({ id: 'a', accountId: 'acc', keyId: 'k1', amountMicros: 100 });
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 50, keyHeldMicros: 0 }, 'releasing twice releases once');
});

t.test('cost in µINR, rounded up once', async (t) => {
  const mini = { inputPer1M: 12_600_000, outputPer1M: 50_400_000, cacheReadPer1M: 6_300_000 };
  // 1000 × 12.6 + 500 × 50.4 = 12 600 + 25 200 = 37 800 µINR exactly.
  t.equal(costMicros(mini, { inputTokens: 1000, outputTokens: 500, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), 37_800);
  // 1 token: 12.6 µINR → 13.
  t.equal(costMicros(mini, { inputTokens: 1, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), 13);
  // Cached reads at their own price: 600 plain × 12.6 + 400 cached × 6.3 = 7560 + 2520.
  t.equal(costMicros(mini, { inputTokens: 1000, outputTokens: 0, cacheReadTokens: 400, cacheWriteTokens: 0, reasoningTokens: 0 }), 10_080);
  const sonnet = { inputPer1M: 252_000_000, outputPer1M: 1_260_000_000, cacheReadPer1M: 25_200_000, cacheWritePer1M: 315_000_000 };
  // 100 plain × 252 + 2000 written × 315 + 3000 read × 25.2 + 50 out × 1260 = 25 200 + 630 000 + 75 600 + 63 000.
  t.equal(costMicros(sonnet, { inputTokens: 5100, outputTokens: 50, cacheReadTokens: 3000, cacheWriteTokens: 2000, reasoningTokens: 0 }), 793_800);
  // Large numbers stay exact: 2M tokens at 12 600 INR per 1M.
  t.equal(costMicros({ inputPer1M: 12_600_000_000, outputPer1M: 0 }, { inputTokens: 2_000_000, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), 25_200_000_000);
});

t.test('worst case and affordability agree', async (t) => {
  const pricing = { inputPer1M: 12_600_000, outputPer1M: 50_400_000 };
  t.equal(worstCaseMicros(pricing, 1000, 100), Math.ceil(1000 * 12.6 + 100 * 50.4));
  const available = 1_000_000; // ₹1
  const tokens = affordableOutputTokens(pricing, 1000, available);
  t.ok(worstCaseMicros(pricing, 1000, tokens) <= available, 'the affordable limit fits');
  t.ok(worstCaseMicros(pricing, 1000, tokens + 1) > available, 'one more does not');
  t.equal(affordableOutputTokens(pricing, 1000, 5), 0, 'not even the prompt fits');
  const sonnet = { inputPer1M: 252_000_000, outputPer1M: 1_260_000_000, cacheWritePer1M: 315_000_000 };
  t.equal(worstCaseMicros(sonnet, 1000, 0), 315_000, 'the prompt bound is priced at the dearest prompt price (cache writes)');
  t.equal(worstCaseMicros(sonnet, 1000, 0, false), 252_000, 'a call that cannot write a cache: the input price');
  t.equal(affordableOutputTokens(sonnet, 1000, 315_000 + 1260, false), affordableOutputTokens(sonnet, 1000, 315_000 + 1260) + 50, 'which leaves room for more output');
});

t.test('a call can be billed cache writes only where it marks breakpoints or carries wire fields of its own', async (t) => {
  const text = (cacheControl?: { type: 'ephemeral' }) => ({ type: 'text' as const, text: 'hi', ...(cacheControl ? { cacheControl } : {}) });
  t.equal(mayWriteCache({ messages: [{ role: 'user', content: [text()] }] }), false);
  t.equal(mayWriteCache({ messages: [{ role: 'system', content: [text({ type: 'ephemeral' })] }, { role: 'user', content: [text()] }] }), true, 'a breakpoint on the system prompt');
  t.equal(mayWriteCache({ messages: [{ role: 'user', content: [text()] }], tools: [{ name: 'f', parameters: {}, cacheControl: { type: 'ephemeral' } }] }), true, 'on a tool');
  t.equal(mayWriteCache({ messages: [{ role: 'user', content: [text()] }], passthrough: { family: 'anthropic', fields: { cache_control: { type: 'ephemeral' } } } }), true, 'top-level wire fields');
});
