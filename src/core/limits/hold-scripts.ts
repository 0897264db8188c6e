import { SLIDING_WINDOW_LUA } from './rate-limit.js';

/**
 * The Lua scripts of the Redis hold store (holds.ts), one atomic script per operation.
 */

// Holds live in two hashes (per account, per key: hold id → µINR, and under the field '#' the
// sum of the hash's holds, kept by every write so that a total costs one read whatever the
// number of calls in flight) plus one sorted set of leases (score: expiry, member:
// "instance|account|key|hold"). Expired leases are dropped with their holds every
// PURGE_EVERY_MS and before a total is read on its own (HELD), so a crashed daemon's holds
// disappear soon after their lease runs out; admission does not purge (it is the hot path,
// and a hold that outlives its lease by seconds only errs on the safe side). The key names
// carry a version (HOLD_KEYS): hashes written by daemons before the running sum are not read
// as if they kept it (daemons sharing a Redis must run the same version to share holds).
export const HOLD_KEYS = 'holds2:';
const SUM = `
local function put(hash, id, amount)
  local old = redis.call('HGET', hash, id)
  redis.call('HSET', hash, id, amount)
  redis.call('HINCRBY', hash, '#', string.format('%d', tonumber(amount) - (old and tonumber(old) or 0)))
end
local function drop(hash, id)
  local old = redis.call('HGET', hash, id)
  if not old then return end
  redis.call('HDEL', hash, id)
  if redis.call('HLEN', hash) <= 1 then redis.call('DEL', hash)
  else redis.call('HINCRBY', hash, '#', string.format('%d', -tonumber(old))) end
end
local function total(hash)
  return tonumber(redis.call('HGET', hash, '#') or '0')
end
local function hold(hash, id, amount)
  if redis.call('HSETNX', hash, id, amount) == 1 then return tonumber(redis.call('HINCRBY', hash, '#', amount)) end
  put(hash, id, amount)
  return total(hash)
end
`;
const PURGE = `${SUM}
local function purge(leases, prefix, now)
  local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
  for _, member in ipairs(expired) do
    local _, _, account, key, id = string.find(member, '^[^|]*|([^|]*)|([^|]*)|(.*)$')
    drop(prefix .. '${HOLD_KEYS}acct:' .. account, id)
    drop(prefix .. '${HOLD_KEYS}key:' .. key, id)
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', leases, '-inf', now) end
end
`;
// Redis's clock, in ms, as now.
const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// Takes one hold and returns the account's and key's totals (a new hold: HSETNX, and the sum's
// HINCRBY answers the total; five commands in all).
const TAKE = `
local function take(account, key, leases, id, amount, member, leaseMs)
  local totals = {hold(account, id, amount), hold(key, id, amount)}
  redis.call('ZADD', leases, now + tonumber(leaseMs), member)
  return totals
end
`;

// KEYS: account hash, key hash, leases. ARGV: hold id, amount, lease member, lease ms.
export const ACQUIRE = `${SUM}${NOW}${TAKE}
return take(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
`;

// The key's rate limit, then (when admitted) the hold: admission's two steps in one round trip.
// KEYS: window, account hash, key hash, leases. ARGV: limit, window ms, request id, hold id,
// amount, lease member, lease ms.
export const ADMIT = `${SUM}${NOW}${TAKE}${SLIDING_WINDOW_LUA}
local rate = slidingWindow(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], now)
if rate[1] == 0 then return rate end
local totals = take(KEYS[2], KEYS[3], KEYS[4], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
return {rate[1], rate[2], rate[3], rate[4], totals[1], totals[2]}
`;

export const RELEASE = `${SUM}
drop(KEYS[1], ARGV[1])
drop(KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
`;

// Releases many holds. KEYS: leases. ARGV: per hold, account hash, key hash, hold id, lease member.
export const RELEASE_MANY = `${SUM}
for i = 1, #ARGV, 4 do
  drop(ARGV[i], ARGV[i + 2])
  drop(ARGV[i + 1], ARGV[i + 2])
  redis.call('ZREM', KEYS[1], ARGV[i + 3])
end
return 1
`;

// Lowers open holds. ARGV: per hold, account hash, key hash, hold id, amount. A released
// hold (field gone) is not written back.
export const SHRINK = `${SUM}
for i = 1, #ARGV, 4 do
  if redis.call('HEXISTS', ARGV[i], ARGV[i + 2]) == 1 then put(ARGV[i], ARGV[i + 2], ARGV[i + 3]) end
  if redis.call('HEXISTS', ARGV[i + 1], ARGV[i + 2]) == 1 then put(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]) end
end
return 1
`;

export const HELD = `${PURGE}${NOW}
purge(KEYS[3], ARGV[1], now)
return {total(KEYS[1]), total(KEYS[2])}
`;

// Drops the holds of expired leases. KEYS: leases. ARGV: prefix.
export const PURGE_EXPIRED = `${PURGE}${NOW}
purge(KEYS[1], ARGV[1], now)
return 1
`;

// Extends the leases of this daemon's open holds. ARGV: lease ms, members...
export const RENEW = `${NOW}
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
return 1
`;

// Drops every hold of one daemon instance (its previous run crashed). ARGV: prefix, instance.
export const CLEAR_INSTANCE = `${SUM}
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local n = 0
for _, member in ipairs(members) do
  local _, _, instance, account, key, id = string.find(member, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
  if instance == ARGV[2] then
    drop(ARGV[1] .. '${HOLD_KEYS}acct:' .. account, id)
    drop(ARGV[1] .. '${HOLD_KEYS}key:' .. key, id)
    redis.call('ZREM', KEYS[1], member)
    n = n + 1
  end
end
return n
`;
