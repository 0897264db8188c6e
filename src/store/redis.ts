import { Redis } from 'ioredis';

/**
 * The optional shared Redis. Commands fail fast while disconnected (no offline queue), so a
 * Redis outage shows as errors and readiness failures, not as requests piling up; ioredis
 * keeps reconnecting in the background.
 */
export function createRedis(url: string, onError: (error: Error) => void): Redis {
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  redis.on('error', onError);
  return redis;
}

/** Connects, waiting at most `timeoutMs`; a failure is reported, not thrown (readiness says so). */
export async function connectRedis(redis: Redis, timeoutMs: number): Promise<boolean> {
  try {
    await withTimeout(redis.connect(), timeoutMs);
    return true;
  } catch {
    return false;
  }
}

export async function pingRedis(redis: Redis, timeoutMs: number): Promise<boolean> {
  try {
    return (await withTimeout(redis.ping(), timeoutMs)) === 'PONG';
  } catch {
    return false;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
