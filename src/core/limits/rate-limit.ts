import type { Redis } from 'ioredis';
import { defineScript, type RedisScript } from '../../store/redis.js';

/**
 * Requests per minute per key, as an exact sliding window: a request is admitted when fewer
 * than `limit` requests were admitted in the 60 s before it. In process by default; one
 * atomic Redis script when Redis is configured, so that daemons sharing it enforce one limit.
 */

export const WINDOW_MS = 60_000;

export interface RateDecision {
  allowed: boolean;
  limit: number;
  /** Requests still allowed in the current window after this one. */
  remaining: number;
  /** Milliseconds until one more request is allowed (0 when remaining > 0). */
  retryAfterMs: number;
  /** Milliseconds until the window holds no admitted request of now (a full reset). */
  resetMs: number;
}

export interface RateLimiter {
  check(keyId: string, limit: number, requestId: string): Promise<RateDecision>;
}

/**
 * In memory: per key a ring of the last `limit` admission times, oldest first. The window is
 * full exactly when the oldest of them is younger than 60 s. O(1) to admit, O(log n) to count.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly rings = new Map<string, { times: Float64Array; start: number; size: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  async check(keyId: string, limit: number): Promise<RateDecision> {
    return this.checkSync(keyId, limit);
  }

  checkSync(keyId: string, limit: number): RateDecision {
    const now = this.now();
    let ring = this.rings.get(keyId);
    if (!ring || ring.times.length !== limit) ring = this.resize(keyId, ring, limit);
    const windowStart = now - WINDOW_MS;
    const at = (i: number): number => ring.times[(ring.start + i) % limit] as number;
    // Admissions older than the window no longer count.
    let firstLive = 0;
    let lo = 0;
    let hi = ring.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (at(mid) <= windowStart) lo = mid + 1;
      else hi = mid;
    }
    firstLive = lo;
    const live = ring.size - firstLive;
    if (live >= limit) {
      const retryAfterMs = Math.max(1, Math.ceil(at(firstLive) + WINDOW_MS - now));
      return { allowed: false, limit, remaining: 0, retryAfterMs, resetMs: Math.ceil(at(ring.size - 1) + WINDOW_MS - now) };
    }
    if (ring.size < limit) {
      ring.times[(ring.start + ring.size) % limit] = now;
      ring.size += 1;
    } else {
      ring.times[ring.start] = now;
      ring.start = (ring.start + 1) % limit;
    }
    const oldestLive = live === 0 ? now : at(ring.size - live - 1);
    return { allowed: true, limit, remaining: limit - live - 1, retryAfterMs: 0, resetMs: Math.ceil(Math.max(oldestLive, now) + WINDOW_MS - now) };
  }

  /** A new ring for a changed limit keeps the most recent admissions. */
  private resize(keyId: string, old: { times: Float64Array; start: number; size: number } | undefined, limit: number) {
    const ring = { times: new Float64Array(limit), start: 0, size: 0 };
    if (old) {
      const keep = Math.min(old.size, limit);
      for (let i = old.size - keep; i < old.size; i++) ring.times[ring.size++] = old.times[(old.start + i) % old.times.length] as number;
    }
    this.rings.set(keyId, ring);
    return ring;
  }
}

// The window of one key is a sorted set of admission times (member: request id), on Redis's
// own clock, so daemons on different hosts agree. Returns {allowed, remaining, retry ms, reset ms}.
export const SLIDING_WINDOW_LUA = `
local function slidingWindow(key, limit, window, member, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local oldestAt = now
  if oldest[2] then oldestAt = tonumber(oldest[2]) end
  if count >= limit then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    return {0, 0, oldestAt + window - now, tonumber(newest[2]) + window - now}
  end
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
  return {1, limit - count - 1, 0, oldestAt + window - now}
end
`;

// KEYS[1] = the key's window. ARGV: limit, window ms, member.
const SLIDING_WINDOW = `${SLIDING_WINDOW_LUA}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return slidingWindow(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], now)
`;

/** A script reply {allowed, remaining, retry ms, reset ms} as a decision. */
export function rateDecision(limit: number, reply: readonly unknown[]): RateDecision {
  const [allowed, remaining, retryAfterMs, resetMs] = reply.slice(0, 4).map(Number) as [number, number, number, number];
  return { allowed: allowed === 1, limit, remaining, retryAfterMs: allowed === 1 ? 0 : Math.max(1, retryAfterMs), resetMs: Math.max(0, resetMs) };
}

export class RedisRateLimiter implements RateLimiter {
  private readonly script: RedisScript;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    this.script = defineScript(redis, 'gatewaySlidingWindow', 1, SLIDING_WINDOW);
  }

  async check(keyId: string, limit: number, requestId: string): Promise<RateDecision> {
    return rateDecision(limit, (await this.script(windowKey(this.prefix, keyId), limit, WINDOW_MS, requestId)) as unknown[]);
  }
}

export function windowKey(prefix: string, keyId: string): string {
  return `${prefix}rl:${keyId}`;
}
