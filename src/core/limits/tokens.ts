import type { Redis } from 'ioredis';
import { defineScript, type RedisScript } from '../../store/redis.js';
import { WINDOW_MS } from './rate-limit.js';

/**
 * A key's `tpm_limit`: tokens (input + output) per minute, as a sliding window of its calls.
 * Admission counts a call at its bound (the prompt bound plus the output limit), so calls in
 * flight together can never pass the limit; settlement replaces the bound with the real
 * figure, giving back what the call did not use. A call is admitted when the window holds
 * room for its bound, or holds nothing at all (one call larger than the limit is not refused
 * forever). In process by default; with Redis one sorted set and one hash per key, shared by
 * every daemon.
 */

export interface TokenDecision {
  allowed: boolean;
  limit: number;
  /** Tokens counted in the window before this call. */
  used: number;
  /** Milliseconds until enough of the window has passed for this call (0 when allowed). */
  retryAfterMs: number;
}

export interface TokenLimiter {
  /** Counts `tokens` for `callId` when they fit under `limit`. */
  take(keyId: string, limit: number, callId: string, tokens: number): Promise<TokenDecision>;
  /** The call's real figure replaces what it was counted at (a call no longer in the window: nothing). */
  settle(keyId: string, callId: string, tokens: number): Promise<void>;
  close(): void;
}

interface Entry {
  at: number;
  id: string;
  tokens: number;
}

export class MemoryTokenLimiter implements TokenLimiter {
  private readonly windows = new Map<string, { entries: Entry[]; sum: number }>();
  private sweptAt: number;

  constructor(private readonly now: () => number = Date.now) {
    this.sweptAt = now();
  }

  async take(keyId: string, limit: number, callId: string, tokens: number): Promise<TokenDecision> {
    const now = this.now();
    if (now - this.sweptAt >= WINDOW_MS) this.sweep(now);
    let window = this.windows.get(keyId);
    if (!window) {
      window = { entries: [], sum: 0 };
      this.windows.set(keyId, window);
    }
    expire(window, now);
    const used = window.sum;
    if (used > 0 && used + tokens > limit) {
      // The window frees room as its oldest calls leave it.
      let left = used;
      let retryAfterMs = WINDOW_MS;
      for (const entry of window.entries) {
        left -= entry.tokens;
        if (left + tokens <= limit) {
          retryAfterMs = entry.at + WINDOW_MS - now;
          break;
        }
      }
      return { allowed: false, limit, used, retryAfterMs: Math.max(1, Math.ceil(retryAfterMs)) };
    }
    window.entries.push({ at: now, id: callId, tokens });
    window.sum += tokens;
    return { allowed: true, limit, used, retryAfterMs: 0 };
  }

  async settle(keyId: string, callId: string, tokens: number): Promise<void> {
    const window = this.windows.get(keyId);
    const entry = window?.entries.find((e) => e.id === callId);
    if (!window || !entry) return;
    window.sum += tokens - entry.tokens;
    entry.tokens = tokens;
  }

  close(): void {}

  private sweep(now: number): void {
    this.sweptAt = now;
    for (const [keyId, window] of this.windows) {
      expire(window, now);
      if (window.entries.length === 0) this.windows.delete(keyId);
    }
  }
}

function expire(window: { entries: Entry[]; sum: number }, now: number): void {
  let drop = 0;
  while (drop < window.entries.length && (window.entries[drop] as Entry).at <= now - WINDOW_MS) {
    window.sum -= (window.entries[drop] as Entry).tokens;
    drop += 1;
  }
  if (drop > 0) window.entries.splice(0, drop);
}

// KEYS: the key's calls (sorted set: call id, admission time), their tokens (hash: call id →
// tokens, '#' → the sum). ARGV: limit, window ms, call id, tokens. On Redis's clock. Returns
// {allowed, used before, retry ms}.
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - window)
for _, id in ipairs(expired) do
  local n = redis.call('HGET', KEYS[2], id)
  if n then
    redis.call('HDEL', KEYS[2], id)
    redis.call('HINCRBY', KEYS[2], '#', -tonumber(n))
  end
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window) end
local used = tonumber(redis.call('HGET', KEYS[2], '#') or '0')
local limit = tonumber(ARGV[1])
local tokens = tonumber(ARGV[4])
if used > 0 and used + tokens > limit then
  local calls = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  local left = used
  local retry = window
  for i = 1, #calls, 2 do
    left = left - tonumber(redis.call('HGET', KEYS[2], calls[i]) or '0')
    if left + tokens <= limit then
      retry = tonumber(calls[i + 1]) + window - now
      break
    end
  end
  return {0, used, retry}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('HSET', KEYS[2], ARGV[3], tokens)
redis.call('HINCRBY', KEYS[2], '#', tokens)
redis.call('PEXPIRE', KEYS[1], window)
redis.call('PEXPIRE', KEYS[2], window)
return {1, used, 0}
`;

// KEYS: as TAKE. ARGV: call id, tokens.
const SETTLE = `
local old = redis.call('HGET', KEYS[2], ARGV[1])
if not old then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], '#', tonumber(ARGV[2]) - tonumber(old))
return 1
`;

export class RedisTokenLimiter implements TokenLimiter {
  private readonly takeScript: RedisScript;
  private readonly settleScript: RedisScript;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    this.takeScript = defineScript(redis, 'gatewayTokensTake', 2, TAKE);
    this.settleScript = defineScript(redis, 'gatewayTokensSettle', 2, SETTLE);
  }

  async take(keyId: string, limit: number, callId: string, tokens: number): Promise<TokenDecision> {
    const [allowed, used, retry] = ((await this.takeScript(...this.keys(keyId), limit, WINDOW_MS, callId, tokens)) as unknown[]).map(Number) as [number, number, number];
    return { allowed: allowed === 1, limit, used, retryAfterMs: allowed === 1 ? 0 : Math.max(1, retry) };
  }

  async settle(keyId: string, callId: string, tokens: number): Promise<void> {
    await this.settleScript(...this.keys(keyId), callId, tokens);
  }

  close(): void {}

  private keys(keyId: string): [string, string] {
    return [`${this.prefix}tpm:${keyId}`, `${this.prefix}tpmv:${keyId}`];
  }
}
