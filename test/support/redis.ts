import { Redis } from 'ioredis';

/**
 * Tests that need Redis use the real server at REDIS_URL. When it is not reachable they are
 * skipped with the reason, except under CI=true, where they run (and fail).
 */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether a Redis server answers PING at `url` (no retries, 1 s to connect). */
export async function redisReachable(url: string = REDIS_URL): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

const up = await redisReachable();

/** `false` to run, or the reason to skip. */
export function redisSkipReason(): string | false {
  if (up || process.env.CI === 'true') return false;
  return `Redis is not reachable at ${REDIS_URL} (set REDIS_URL; under CI=true this test fails instead)`;
}

/** Deletes every key under `prefix` (a test's own key prefix, at its end). */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
}
