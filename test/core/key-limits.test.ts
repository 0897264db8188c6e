import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import t from 'tap';
import { MemoryParallelLimiter, RedisParallelLimiter } from '../../src/core/limits/parallel.js';
import { MemoryTokenLimiter, RedisTokenLimiter, type TokenLimiter } from '../../src/core/limits/tokens.js';
import { dropPrefix, REDIS_URL, redisSkipReason } from '../support/redis.js';

/**
 * The per-key limiters of issue 30 on their own: calls in flight (max_parallel) and tokens per
 * minute (tpm_limit), in memory and in Redis, with what a crashed daemon leaves behind.
 */

t.test('max_parallel in memory: N slots, a release frees one, releasing twice frees one', async (t) => {
  const limiter = new MemoryParallelLimiter();
  const a = await limiter.acquire('k', 2, 'r1');
  const b = await limiter.acquire('k', 2, 'r2');
  const c = await limiter.acquire('k', 2, 'r3');
  t.ok(a.slot && b.slot, 'two taken');
  t.same([c.slot, c.inFlight], [undefined, 2], 'the third refused, two in flight');
  a.slot?.release();
  a.slot?.release();
  t.equal(limiter.inFlight('k'), 1, 'a second release changes nothing');
  t.ok((await limiter.acquire('k', 2, 'r4')).slot, 'a freed slot is taken again');
  t.ok((await limiter.acquire('other', 1, 'r5')).slot, 'keys are counted apart');
});

const redisSkip = redisSkipReason();

t.test('max_parallel in Redis: shared by daemons; a dead daemon\'s slots expire with their lease', { skip: redisSkip }, async (t) => {
  const redis = new Redis(REDIS_URL);
  const prefix = `test-${randomUUID()}:`;
  const one = new RedisParallelLimiter(redis, prefix, 'host-a', 300);
  const two = new RedisParallelLimiter(redis, prefix, 'host-b', 300);
  t.teardown(async () => {
    one.close();
    two.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });
  const a = await one.acquire('k', 2, 'r1');
  const b = await two.acquire('k', 2, 'r2');
  t.ok(a.slot && b.slot);
  t.equal((await two.acquire('k', 2, 'r3')).slot, undefined, 'two in flight across both daemons: the third refused');
  b.slot?.release();
  t.ok((await one.acquire('k', 2, 'r4')).slot, "the other daemon's release is seen at once");
  // host-a "crashes": its slots are never released; their lease (300 ms here) runs out.
  one.close();
  t.equal((await two.acquire('k', 2, 'r5')).slot, undefined, 'still held');
  await new Promise((resolve) => setTimeout(resolve, 400));
  t.ok((await two.acquire('k', 2, 'r6')).slot, 'free once the lease ran out');
});

async function tokenRules(t: Tap, limiter: TokenLimiter, key: string): Promise<void> {
  t.ok((await limiter.take(key, 100, 'c1', 60)).allowed, 'a bound of 60 in an empty minute');
  const refused = await limiter.take(key, 100, 'c2', 50);
  t.match(refused, { allowed: false, limit: 100, used: 60 }, '60 + 50 does not fit in 100');
  t.ok(refused.retryAfterMs > 59_000 && refused.retryAfterMs <= 60_000, 'room when the first call leaves the window');
  await limiter.settle(key, 'c1', 10);
  t.ok((await limiter.take(key, 100, 'c2', 50)).allowed, 'settled at 10 tokens: the 50 left room');
  t.match(await limiter.take(key, 100, 'c3', 500), { allowed: false, used: 60 }, 'larger than the limit: refused while the minute holds anything');
  t.ok((await limiter.take(`${key}-empty`, 100, 'c4', 500)).allowed, 'admitted into an empty minute');
  await limiter.settle(key, 'unknown', 5);
  t.match(await limiter.take(key, 100, 'c5', 40), { allowed: true, used: 60 }, 'settling a call not in the window changes nothing');
}

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('tpm_limit in memory: counted at the bound, corrected at settlement, the window slides', async (t) => {
  let now = 1_000_000;
  const limiter = new MemoryTokenLimiter(() => now);
  await tokenRules(t, limiter, 'k');
  now += 60_001;
  t.match(await limiter.take('k', 100, 'late', 100), { allowed: true, used: 0 }, 'a minute later the window is empty');
});

t.test('tpm_limit in Redis: the same rules, one window for every daemon', { skip: redisSkip }, async (t) => {
  const redis = new Redis(REDIS_URL);
  const prefix = `test-${randomUUID()}:`;
  t.teardown(async () => {
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });
  await tokenRules(t, new RedisTokenLimiter(redis, prefix), 'k');
  const other = new RedisTokenLimiter(redis, prefix);
  t.match(await other.take('k', 100, 'd1', 1), { allowed: false, used: 100 }, "another daemon sees the same minute's 100 tokens");
});
