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

/** A key's first ring holds this many admission times; it doubles as needed, up to the limit. */
const RING_INITIAL = 16;

interface Ring {
  /** Admission times in a circular buffer, oldest first from `start`. */
  times: Float64Array;
  start: number;
  size: number;
  limit: number;
}

/**
 * In memory: per key a ring of its admission times within the window, oldest first. The window
 * is full when it holds `limit` of them. O(1) to admit (amortized), O(log n) to count. A ring
 * grows with the key's traffic (not to `limit` up front: 80 KB per key at 10,000 a minute), and
 * once a window the rings are swept: a key idle for a whole window is forgotten, and a ring
 * four times larger than its traffic is halved.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly rings = new Map<string, Ring>();
  private sweptAt: number;

  /** `windowMs`: a minute for keys' rate limits; other limits (sign-ups an hour) choose theirs. */
  constructor(
    private readonly now: () => number = Date.now,
    private readonly windowMs: number = WINDOW_MS,
  ) {
    this.sweptAt = now();
  }

  async check(keyId: string, limit: number): Promise<RateDecision> {
    return this.checkSync(keyId, limit);
  }

  /**
   * Milliseconds until `keyId` could be admitted under `limit` (0: now), recording nothing
   * and tracking no new key: to check several limits before taking a slot of each.
   */
  waitSync(keyId: string, limit: number): number {
    const ring = this.rings.get(keyId);
    if (!ring) return 0;
    const now = this.now();
    dropBefore(ring, now - this.windowMs);
    if (ring.size < limit) return 0;
    // The admission whose leaving makes room (a lowered limit leaves more than `limit` live).
    return Math.max(1, Math.ceil(at(ring, ring.size - limit) + this.windowMs - now));
  }

  checkSync(keyId: string, limit: number): RateDecision {
    const now = this.now();
    const window = this.windowMs;
    if (now - this.sweptAt >= window) this.sweep(now);
    let ring = this.rings.get(keyId);
    if (!ring) {
      ring = { times: new Float64Array(Math.min(limit, RING_INITIAL)), start: 0, size: 0, limit };
      this.rings.set(keyId, ring);
    } else if (ring.limit !== limit) {
      // A changed limit keeps the most recent admissions.
      ring = resized(ring, Math.min(ring.size, limit), limit);
      this.rings.set(keyId, ring);
    }
    // Admissions older than the window no longer count: dropped.
    dropBefore(ring, now - window);
    const live = ring.size;
    if (live >= limit) {
      const retryAfterMs = Math.max(1, Math.ceil(at(ring, 0) + window - now));
      return { allowed: false, limit, remaining: 0, retryAfterMs, resetMs: Math.ceil(at(ring, live - 1) + window - now) };
    }
    const oldestLive = live === 0 ? now : at(ring, 0);
    // live < limit, so a full ring is smaller than the limit and can grow.
    if (ring.size === ring.times.length) {
      ring = resized(ring, ring.size, limit, Math.min(limit, 2 * ring.times.length));
      this.rings.set(keyId, ring);
    }
    ring.times[(ring.start + ring.size) % ring.times.length] = now;
    ring.size += 1;
    return { allowed: true, limit, remaining: limit - live - 1, retryAfterMs: 0, resetMs: Math.ceil(Math.max(oldestLive, now) + window - now) };
  }

  /** Keys tracked (for tests). */
  get trackedKeys(): number {
    return this.rings.size;
  }

  /** Ring capacity of a key, 0 when untracked (for tests). */
  capacityOf(keyId: string): number {
    return this.rings.get(keyId)?.times.length ?? 0;
  }

  private sweep(now: number): void {
    this.sweptAt = now;
    for (const [keyId, ring] of this.rings) {
      dropBefore(ring, now - this.windowMs);
      if (ring.size === 0) this.rings.delete(keyId);
      else if (ring.times.length > RING_INITIAL && 4 * ring.size <= ring.times.length) {
        this.rings.set(keyId, resized(ring, ring.size, ring.limit, Math.max(RING_INITIAL, ring.times.length >> 1)));
      }
    }
  }
}

function at(ring: Ring, i: number): number {
  return ring.times[(ring.start + i) % ring.times.length] as number;
}

/** Forgets the admissions at or before `cutoff` (binary search: the times are in order). */
function dropBefore(ring: Ring, cutoff: number): void {
  let lo = 0;
  let hi = ring.size;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (at(ring, mid) <= cutoff) lo = mid + 1;
    else hi = mid;
  }
  if (lo === 0) return;
  ring.start = (ring.start + lo) % ring.times.length;
  ring.size -= lo;
}

/** A copy of the ring's newest `keep` times, in a ring of `capacity` (at least `keep`). */
function resized(ring: Ring, keep: number, limit: number, capacity = Math.min(limit, Math.max(RING_INITIAL, keep))): Ring {
  const next: Ring = { times: new Float64Array(Math.max(capacity, keep, 1)), start: 0, size: 0, limit };
  for (let i = ring.size - keep; i < ring.size; i++) next.times[next.size++] = at(ring, i);
  return next;
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
