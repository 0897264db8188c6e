import type { Redis } from 'ioredis';
import { defineScript, type RedisScript } from '../../store/redis.js';

/**
 * The exact tier shared by every daemon through Redis: one string per answer (expiring with
 * its TTL), a sorted set of last uses for LRU eviction, a sorted set of expiry times, a hash
 * of sizes and a byte counter, kept consistent by two Lua scripts (one round trip per lookup
 * or store). Entry limits are the same `max_entries` / `max_size` as the SQLite store's.
 */

// KEYS: entry, lru, expiry, sizes, bytes. ARGV: now.
const GET = `
local value = redis.call('GET', KEYS[1])
if value then redis.call('ZADD', KEYS[2], 'XX', ARGV[1], KEYS[1]) end
return value`;

// KEYS: entry, lru, expiry, sizes, bytes. ARGV: answer, now, ttl ms, max entries, max bytes.
const PUT = `
local now = tonumber(ARGV[2])
local function forget(key)
  redis.call('DEL', key)
  redis.call('ZREM', KEYS[2], key)
  redis.call('ZREM', KEYS[3], key)
  local size = redis.call('HGET', KEYS[4], key)
  if size then
    redis.call('DECRBY', KEYS[5], size)
    redis.call('HDEL', KEYS[4], key)
  end
end
forget(KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], now, KEYS[1])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), KEYS[1])
redis.call('HSET', KEYS[4], KEYS[1], #ARGV[1])
redis.call('INCRBY', KEYS[5], #ARGV[1])
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 1000)) do forget(key) end
local evicted = 0
while redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[4]) or tonumber(redis.call('GET', KEYS[5]) or '0') > tonumber(ARGV[5]) do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)
  if #oldest == 0 then break end
  forget(oldest[1])
  evicted = evicted + 1
end
return evicted`;

const FORGET = `
local existed = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], KEYS[1])
redis.call('ZREM', KEYS[3], KEYS[1])
local size = redis.call('HGET', KEYS[4], KEYS[1])
if size then
  redis.call('DECRBY', KEYS[5], size)
  redis.call('HDEL', KEYS[4], KEYS[1])
end
return existed`;

export class RedisExactTier {
  private readonly lru: string;
  private readonly expiry: string;
  private readonly sizes: string;
  private readonly bytes: string;
  private readonly getScript: RedisScript;
  private readonly putScript: RedisScript;
  private readonly forgetScript: RedisScript;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {
    this.getScript = defineScript(redis, 'gatewayCacheGet', 5, GET);
    this.putScript = defineScript(redis, 'gatewayCachePut', 5, PUT);
    this.forgetScript = defineScript(redis, 'gatewayCacheForget', 5, FORGET);
    this.lru = `${prefix}cache:lru`;
    this.expiry = `${prefix}cache:expiry`;
    this.sizes = `${prefix}cache:sizes`;
    this.bytes = `${prefix}cache:bytes`;
  }

  /** Entries are named by account, so that one account's can be purged. */
  private entryKey(accountId: string, key: string): string {
    return `${this.prefix}cache:e:${accountId}:${key}`;
  }

  async get(accountId: string, key: string, now: number): Promise<string | undefined> {
    const value = (await this.getScript(this.entryKey(accountId, key), this.lru, this.expiry, this.sizes, this.bytes, now)) as string | null;
    return value ?? undefined;
  }

  /** Stores an answer; returns how many least recently used entries it evicted. */
  async put(accountId: string, key: string, answer: string, now: number, ttlMs: number, maxEntries: number, maxBytes: number): Promise<number> {
    return (await this.putScript(this.entryKey(accountId, key), this.lru, this.expiry, this.sizes, this.bytes, answer, now, ttlMs, maxEntries, maxBytes)) as number;
  }

  async delete(accountId: string, key: string): Promise<void> {
    await this.forgetScript(this.entryKey(accountId, key), this.lru, this.expiry, this.sizes, this.bytes);
  }

  /** Removes every entry, or one account's (SCAN, then one script per entry); returns how many. */
  async purge(accountId: string | undefined): Promise<number> {
    const pattern = `${this.prefix}cache:e:${accountId === undefined ? '' : `${escapeGlob(accountId)}:`}*`;
    let removed = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      for (const key of keys) removed += (await this.forgetScript(key, this.lru, this.expiry, this.sizes, this.bytes)) as number;
    } while (cursor !== '0');
    return removed;
  }

  async stats(): Promise<{ entries: number; bytes: number }> {
    const [entries, bytes] = await Promise.all([this.redis.zcard(this.lru), this.redis.get(this.bytes)]);
    return { entries, bytes: Number(bytes ?? 0) };
  }
}

/** An id inside a SCAN pattern, its glob characters escaped. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
