import type { Redis } from 'ioredis';

/**
 * The optional shared Redis (ioredis, imported on first use). Commands fail fast while disconnected (no offline queue), so a
 * Redis outage shows as errors and readiness failures, not as requests piling up; ioredis
 * keeps reconnecting in the background.
 */
export async function createRedis(url: string, onError: (error: Error) => void): Promise<Redis> {
  // Loaded only when Redis is configured: a single daemon does not pay for the client.
  const { Redis: RedisClient } = await import('ioredis');
  const redis = new RedisClient(url, {
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

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export type RedisScript = (...args: (string | number)[]) => Promise<unknown>;

/**
 * A Lua script as a command: ioredis sends EVALSHA (the script text only once, on NOSCRIPT),
 * so each call carries its arguments and nothing more.
 */
export function defineScript(redis: Redis, name: string, numberOfKeys: number, lua: string): RedisScript {
  if (!(name in redis)) redis.defineCommand(name, { numberOfKeys, lua });
  const command = (redis as unknown as Record<string, RedisScript>)[name];
  if (!command) throw new Error(`could not define the Redis script ${name}`);
  return command.bind(redis);
}

/**
 * Subscribes `onMessage` to a channel on a connection of its own (a subscribed connection
 * takes no other command), waiting at most `timeoutMs` at start. On failure it says so and
 * ioredis keeps trying, subscribing again once Redis answers (autoResubscribe).
 */
export async function subscribe(redis: Redis, channel: string, onMessage: (message: string) => void, timeoutMs = 3000): Promise<{ subscriber: Redis; subscribed: boolean }> {
  const subscriber = redis.duplicate({ lazyConnect: true });
  subscriber.on('error', () => undefined); // the main connection reports Redis errors
  subscriber.on('message', (from: string, message: string) => {
    if (from === channel) onMessage(message);
  });
  try {
    await withTimeout(subscriber.connect().then(() => subscriber.subscribe(channel)), timeoutMs);
    return { subscriber, subscribed: true };
  } catch {
    return { subscriber, subscribed: false };
  }
}
