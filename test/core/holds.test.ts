import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import t from 'tap';
import { MemoryHoldStore, RedisHoldStore, type HoldRef, type HoldStore } from '../../src/core/limits/holds.js';
import { dropPrefix, REDIS_URL, redisSkipReason } from '../support/redis.js';

/** The same behaviour from both stores: holds are lowered to their costs, then released in one go. */
async function shrinkAndRelease(t: Parameters<Parameters<typeof tap.test>[0]>[0], holds: HoldStore): Promise<void> {
  const a: HoldRef = { id: 'req_a', accountId: 'acc', keyId: 'k1', amountMicros: 1000 };
  const b: HoldRef = { id: 'req_b', accountId: 'acc', keyId: 'k2', amountMicros: 500 };
  const gone: HoldRef = { id: 'req_gone', accountId: 'acc', keyId: 'k1', amountMicros: 300 };
  await holds.acquire(a);
  await holds.acquire(b);
  await holds.acquire(gone);
  await holds.release(gone);
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 1500, keyHeldMicros: 1000 });

  await holds.shrink([
    { hold: a, amountMicros: 120 },
    { hold: b, amountMicros: 800 }, // above the hold: a hold is never raised
    { hold: gone, amountMicros: 10 }, // released: not brought back
  ]);
  t.equal(a.amountMicros, 120, 'the ref follows the lowered amount');
  t.equal(b.amountMicros, 500);
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 620, keyHeldMicros: 120 }, 'lowered to the cost');
  t.same(await holds.held('acc', 'k2'), { accountHeldMicros: 620, keyHeldMicros: 500 }, 'never raised');

  await holds.releaseAll([a, b, gone]);
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 0, keyHeldMicros: 0 }, 'all released at once');
  t.same(await holds.held('acc', 'k2'), { accountHeldMicros: 0, keyHeldMicros: 0 });
  await holds.releaseAll([a]);
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 0, keyHeldMicros: 0 }, 'releasing twice releases once');
}

const tap = t;

/** A hold store on the real Redis under a fresh prefix, cleaned up after the test. */
function redisHolds(t: Parameters<Parameters<typeof tap.test>[0]>[0]): { redis: Redis; prefix: string; holds: RedisHoldStore } {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const prefix = `test-holds-${randomBytes(4).toString('hex')}:`;
  const holds = new RedisHoldStore(redis, prefix, 'test-instance');
  t.teardown(async () => {
    holds.close();
    await dropPrefix(redis, prefix);
    await redis.quit();
  });
  return { redis, prefix, holds };
}

t.test('memory holds: shrink and releaseAll', async (t) => {
  await shrinkAndRelease(t, new MemoryHoldStore());
});

t.test('Redis holds: shrink and releaseAll in one script each', { skip: redisSkipReason() }, async (t) => {
  const { redis, prefix, holds } = redisHolds(t);
  await shrinkAndRelease(t, holds);
  t.same(await redis.zrange(`${prefix}holds2:leases`, '0', '-1'), [], 'no lease left');
});

t.test('Redis holds: calls settling in separate turns share one SHRINK script', { skip: redisSkipReason() }, async (t) => {
  const { holds, prefix } = redisHolds(t);
  const watcher = new Redis(REDIS_URL);
  const monitor = await watcher.monitor();
  t.teardown(() => {
    monitor.disconnect();
    watcher.disconnect();
  });
  const scripts: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    // SHRINK is the holds' only script with no KEYS: EVAL[SHA] script 0 account-key key-key id amount ...
    if (/^eval(sha)?$/i.test(args[0] ?? '') && args[2] === '0' && args[3]?.startsWith(prefix)) scripts.push(args);
  });
  const refs = [1, 2, 3].map((n): HoldRef => ({ id: `req_${n}`, accountId: 'acc', keyId: 'k1', amountMicros: 1000 }));
  for (const ref of refs) await holds.acquire(ref);
  const sent: Promise<void>[] = [];
  for (const ref of refs) {
    sent.push(holds.shrink([{ hold: ref, amountMicros: 100 }]));
    await new Promise((resolve) => setImmediate(resolve)); // a turn of its own, as each call's settlement
  }
  await Promise.all(sent);
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 300, keyHeldMicros: 300 }, 'all three lowered');
  await new Promise((resolve) => setTimeout(resolve, 100)); // MONITOR lines arrive after the replies
  t.equal(scripts.length, 1, 'in one script');
  t.equal(scripts[0]?.length, 3 + 4 * 3, 'carrying the three holds');
  await holds.releaseAll(refs);
  await holds.shrink([{ hold: { id: 'req_9', accountId: 'acc', keyId: 'k1', amountMicros: 5 }, amountMicros: 1 }]);
  t.pass('nothing to lower resolves at once');
});

t.test('Redis: the rate limit and the hold in one script; a refused call holds nothing', { skip: redisSkipReason() }, async (t) => {
  const { holds, redis, prefix } = redisHolds(t);
  const hold = (n: number): HoldRef => ({ id: `req_${n}`, accountId: 'acc', keyId: 'k1', amountMicros: 100 * n });
  const first = await holds.acquireIfAdmitted('k1', 2, 'req_1', hold(1));
  t.match(first, { rate: { allowed: true, limit: 2, remaining: 1, retryAfterMs: 0 }, totals: { accountHeldMicros: 100, keyHeldMicros: 100 } });
  const second = await holds.acquireIfAdmitted('k1', 2, 'req_2', hold(2));
  t.match(second, { rate: { allowed: true, remaining: 0 }, totals: { accountHeldMicros: 300, keyHeldMicros: 300 } });
  const third = await holds.acquireIfAdmitted('k1', 2, 'req_3', hold(3));
  t.equal(third.rate.allowed, false, 'the third in a minute is refused');
  t.equal(third.totals, undefined, 'with no hold');
  t.ok(third.rate.retryAfterMs > 59_000 && third.rate.retryAfterMs <= 60_000, `retry after about a minute (${third.rate.retryAfterMs} ms)`);
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 300, keyHeldMicros: 300 }, 'only the admitted calls hold');
  t.equal(await redis.zcard(`${prefix}rl:k1`), 2, 'the window counts the admitted calls');
  await holds.releaseAll([hold(1), hold(2), hold(3)]);
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 0, keyHeldMicros: 0 });
});

/** Every hash's running sum (field '#') equals the sum of its holds, and no hash is left empty. */
async function checkSums(t: Parameters<Parameters<typeof tap.test>[0]>[0], redis: Redis, prefix: string, label: string): Promise<void> {
  const hashes = (await redis.keys(`${prefix}holds2:*`)).filter((name) => !name.endsWith(':leases'));
  for (const name of hashes) {
    const fields = await redis.hgetall(name);
    const { '#': sum, ...holds } = fields;
    const expected = Object.values(holds).reduce((a, v) => a + Number(v), 0);
    if (Object.keys(holds).length === 0) t.fail(`${label}: ${name} is left with no hold`);
    if (Number(sum) !== expected) t.fail(`${label}: ${name} sums to ${sum}, its holds to ${expected}`);
  }
}

t.test('Redis holds: totals kept as running sums match the in-process store through random operations', { skip: redisSkipReason() }, async (t) => {
  const { redis, prefix, holds } = redisHolds(t);
  const memory = new MemoryHoldStore();
  // A small deterministic generator: the same sequence on every run.
  let seed = 12345;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const accounts = ['a1', 'a2'];
  const keys = ['k1', 'k2', 'k3'];
  const open = new Map<string, { redis: HoldRef; memory: HoldRef }>();
  let made = 0;
  for (let step = 0; step < 300; step++) {
    const op = next(10);
    const ids = [...open.keys()];
    if (op < 4 || ids.length === 0) {
      const ref: HoldRef = { id: `req_${made++}`, accountId: accounts[next(2)] as string, keyId: keys[next(3)] as string, amountMicros: 1 + next(10_000_000) };
      open.set(ref.id, { redis: { ...ref }, memory: { ...ref } });
      await holds.acquire(open.get(ref.id)?.redis as HoldRef);
      await memory.acquire(open.get(ref.id)?.memory as HoldRef);
    } else if (op < 7) {
      const pair = open.get(ids[next(ids.length)] as string);
      if (!pair) continue;
      const amount = next(pair.redis.amountMicros + 1);
      await holds.shrink([{ hold: pair.redis, amountMicros: amount }]);
      await memory.shrink([{ hold: pair.memory, amountMicros: amount }]);
    } else if (op < 9) {
      const id = ids[next(ids.length)] as string;
      const pair = open.get(id);
      if (!pair) continue;
      open.delete(id);
      await holds.release(pair.redis);
      await memory.release(pair.memory);
    } else {
      const some = ids.filter(() => next(3) === 0);
      const pairs = some.map((id) => open.get(id)).filter((pair) => pair !== undefined);
      for (const id of some) open.delete(id);
      await holds.releaseAll(pairs.map((pair) => pair.redis));
      await memory.releaseAll(pairs.map((pair) => pair.memory));
    }
    for (const accountId of accounts) {
      for (const keyId of keys) {
        const [got, want] = [await holds.held(accountId, keyId), await memory.held(accountId, keyId)];
        if (got.accountHeldMicros !== want.accountHeldMicros || got.keyHeldMicros !== want.keyHeldMicros) {
          t.fail(`step ${step}: ${accountId}/${keyId} Redis ${JSON.stringify(got)}, in process ${JSON.stringify(want)}`);
          return;
        }
      }
    }
    await checkSums(t, redis, prefix, `step ${step}`);
  }
  t.pass(`300 random operations (${made} holds): the same totals from both stores after each`);
  await holds.releaseAll([...open.values()].map((pair) => pair.redis));
  t.same(await redis.keys(`${prefix}holds2:*`), [], 'nothing left once every hold is released (no empty hash, no stale sum)');
});

t.test('Redis holds: an expired lease drops its hold from both running sums; a restarted instance clears its own', { skip: redisSkipReason() }, async (t) => {
  const { redis, prefix, holds } = redisHolds(t);
  const a: HoldRef = { id: 'req_a', accountId: 'acc', keyId: 'k1', amountMicros: 700 };
  const b: HoldRef = { id: 'req_b', accountId: 'acc', keyId: 'k2', amountMicros: 300 };
  await holds.acquire(a);
  await holds.acquire(b);
  // The lease of `a` runs out (as when its daemon died): any script purges it first.
  await redis.zadd(`${prefix}holds2:leases`, 'XX', '1', `test-instance|acc|k1|req_a`);
  t.same(await holds.held('acc', 'k1'), { accountHeldMicros: 300, keyHeldMicros: 0 }, 'the expired hold is gone from the account and the key');
  t.equal(await redis.exists(`${prefix}holds2:key:k1`), 0, "the key's hash went with its last hold");
  await checkSums(t, redis, prefix, 'after the purge');

  // The same instance restarts: clearStale drops what its previous run left.
  const again = new RedisHoldStore(redis, prefix, 'test-instance');
  t.teardown(() => again.close());
  t.equal(await again.clearStale(), 1, 'one hold left by the previous run');
  t.same(await again.held('acc', 'k2'), { accountHeldMicros: 0, keyHeldMicros: 0 });
  t.same(await redis.keys(`${prefix}holds2:*`), [], 'no hash or lease left');
});
