import type { Redis } from 'ioredis';
import { defineScript, type RedisScript } from '../../store/redis.js';

/**
 * A key's `max_parallel`: how many of its calls may be in flight at once. A call takes a slot
 * when its key is checked and gives it back when its response ends (the last byte written, or
 * the client gone), so a client that waits for each answer never meets the limit. In process
 * by default; with Redis one sorted set per key (member: the call, score: its lease's expiry)
 * shared by every daemon, so N in flight means N across all of them.
 */

export interface ParallelSlot {
  /** Gives the slot back; a second call does nothing. */
  release(): void;
}

export interface ParallelDecision {
  /** Undefined when the key already has `limit` calls in flight. */
  slot: ParallelSlot | undefined;
  /** Calls in flight when this one asked (not counting it). */
  inFlight: number;
}

export interface ParallelLimiter {
  acquire(keyId: string, limit: number, callId: string): Promise<ParallelDecision>;
  close(): void;
}

export class MemoryParallelLimiter implements ParallelLimiter {
  private readonly counts = new Map<string, number>();

  async acquire(keyId: string, limit: number, _callId?: string): Promise<ParallelDecision> {
    const inFlight = this.counts.get(keyId) ?? 0;
    if (inFlight >= limit) return { slot: undefined, inFlight };
    this.counts.set(keyId, inFlight + 1);
    let released = false;
    return {
      inFlight,
      slot: {
        release: () => {
          if (released) return;
          released = true;
          const left = (this.counts.get(keyId) ?? 1) - 1;
          if (left <= 0) this.counts.delete(keyId);
          else this.counts.set(keyId, left);
        },
      },
    };
  }

  /** Calls in flight for a key (for tests). */
  inFlight(keyId: string): number {
    return this.counts.get(keyId) ?? 0;
  }

  close(): void {}
}

// KEYS[1]: the key's set. ARGV: limit, member, lease ms. Expired leases (a daemon that died
// with calls in flight) are dropped first, on Redis's clock. Returns {taken, in flight}.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[1]) then return {0, count} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return {1, count}
`;

// Extends the leases of this daemon's calls. ARGV: lease ms, then set and member, repeated.
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
for i = 2, #ARGV, 2 do
  if redis.call('ZADD', ARGV[i], 'XX', 'CH', now + lease, ARGV[i + 1]) then redis.call('PEXPIRE', ARGV[i], lease) end
end
return 1
`;

/** How long a slot outlives a daemon that stopped renewing it (it crashed mid-call). */
export const PARALLEL_LEASE_MS = 60_000;

export class RedisParallelLimiter implements ParallelLimiter {
  private readonly acquireScript: RedisScript;
  private readonly renewScript: RedisScript;
  /** This daemon's slots: member → the key's set. */
  private readonly mine = new Map<string, string>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly instance: string,
    private readonly leaseMs = PARALLEL_LEASE_MS,
  ) {
    this.acquireScript = defineScript(redis, 'gatewayParallelAcquire', 1, ACQUIRE);
    this.renewScript = defineScript(redis, 'gatewayParallelRenew', 0, RENEW);
    // A third of the lease: a slot survives two missed renewals.
    this.timer = setInterval(() => void this.renew(), Math.max(1000, Math.floor(leaseMs / 3)));
    this.timer.unref();
  }

  async acquire(keyId: string, limit: number, callId: string): Promise<ParallelDecision> {
    const set = `${this.prefix}par:${keyId}`;
    const member = `${this.instance}|${callId}`;
    const [taken, inFlight] = ((await this.acquireScript(set, limit, member, this.leaseMs)) as number[]).map(Number) as [number, number];
    if (taken !== 1) return { slot: undefined, inFlight };
    this.mine.set(member, set);
    let released = false;
    return {
      inFlight,
      slot: {
        release: () => {
          if (released) return;
          released = true;
          this.mine.delete(member);
          // Sent at once (ioredis keeps the order), so a call this daemon admits next sees it.
          this.redis.zrem(set, member).catch(() => undefined);
        },
      },
    };
  }

  close(): void {
    clearInterval(this.timer);
  }

  private async renew(): Promise<void> {
    if (this.mine.size === 0) return;
    const args: (string | number)[] = [this.leaseMs];
    for (const [member, set] of this.mine) args.push(set, member);
    try {
      await this.renewScript(...args);
    } catch {
      // Redis unreachable: the next renewal tries again; a lease is three renewals long.
    }
  }
}
