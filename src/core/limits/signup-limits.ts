import type { Redis } from 'ioredis';
import type { SignupConfig } from '../../config/types.js';
import { defineScript, type RedisScript } from '../../store/redis.js';
import { addressSubject } from '../client-address.js';
import { errors } from '../errors.js';
import { MemoryRateLimiter } from './rate-limit.js';

/**
 * How fast anonymous clients may create accounts (`auth.signup`): `perAddressPerHour` from one
 * client address (an IPv6 /64), and `perMinute` over the whole gateway. Two sliding windows
 * checked together: a sign-up takes a slot of both or of neither, so a client refused for its
 * own address spends nothing of the gateway's rate (one client cannot use up every other's),
 * and one refused for the gateway's rate keeps its address's slots. In process by default;
 * one atomic Redis script when Redis is configured, so that daemons sharing it count together.
 * Checked before the password is hashed: a refused sign-up costs a map lookup or one script.
 */

export const SIGNUP_ADDRESS_WINDOW_MS = 3_600_000;
export const SIGNUP_GLOBAL_WINDOW_MS = 60_000;

/** The one subject of the gateway-wide window. */
const GLOBAL = '*';

/** Milliseconds to wait for each window (0: it has room). */
interface Waits {
  address: number;
  gateway: number;
}

export class SignupLimits {
  private readonly byAddress: MemoryRateLimiter;
  private readonly overall: MemoryRateLimiter;
  private readonly script: RedisScript | undefined;
  private readonly prefix: string;

  /** `redis`: the shared counters, under `prefix` (`redis.key_prefix`); without it, this daemon's own. */
  constructor(
    private readonly config: Pick<SignupConfig, 'perAddressPerHour' | 'perMinute'>,
    redis?: { client: Redis; prefix: string },
    now: () => number = Date.now,
  ) {
    this.byAddress = new MemoryRateLimiter(now, SIGNUP_ADDRESS_WINDOW_MS);
    this.overall = new MemoryRateLimiter(now, SIGNUP_GLOBAL_WINDOW_MS);
    this.script = redis ? defineScript(redis.client, 'gatewaySignupWindows', 2, SIGNUP_WINDOWS_LUA) : undefined;
    this.prefix = redis?.prefix ?? '';
  }

  /**
   * Takes a sign-up slot for `clientAddress`, or throws 429 with the seconds to wait in
   * `retry-after` (503 when the shared counters cannot be read). `requestId` names the slot in Redis.
   */
  async admit(clientAddress: string, requestId: string): Promise<void> {
    const { perAddressPerHour, perMinute } = this.config;
    if (perAddressPerHour === 0 && perMinute === 0) return;
    const subject = addressSubject(clientAddress);
    const waits = this.script ? await this.admitShared(this.script, subject, requestId) : this.admitHere(subject);
    if (waits.address > 0 || waits.gateway > 0) {
      const seconds = Math.max(1, Math.ceil(Math.max(waits.address, waits.gateway) / 1000));
      throw errors.signupLimited(waits.address > 0 ? 'address' : 'gateway', seconds);
    }
  }

  private admitHere(subject: string): Waits {
    const { perAddressPerHour, perMinute } = this.config;
    const waits = {
      address: perAddressPerHour > 0 ? this.byAddress.waitSync(subject, perAddressPerHour) : 0,
      gateway: perMinute > 0 ? this.overall.waitSync(GLOBAL, perMinute) : 0,
    };
    if (waits.address > 0 || waits.gateway > 0) return waits;
    if (perAddressPerHour > 0) this.byAddress.checkSync(subject, perAddressPerHour);
    if (perMinute > 0) this.overall.checkSync(GLOBAL, perMinute);
    return waits;
  }

  private async admitShared(script: RedisScript, subject: string, requestId: string): Promise<Waits> {
    let reply: unknown;
    try {
      reply = await script(
        `${this.prefix}signup:addr:${subject}`,
        `${this.prefix}signup:all`,
        this.config.perAddressPerHour,
        SIGNUP_ADDRESS_WINDOW_MS,
        this.config.perMinute,
        SIGNUP_GLOBAL_WINDOW_MS,
        requestId,
      );
    } catch (error) {
      throw errors.signupLimitsUnavailable(error);
    }
    const [address, gateway] = (reply as unknown[]).map(Number) as [number, number];
    return { address, gateway };
  }
}

// KEYS[1] the address's window, KEYS[2] the gateway's (sorted sets of admission times, member:
// the request id, on Redis's own clock). ARGV: address limit, its window ms, gateway limit, its
// window ms, member; a limit of 0 is no limit. Returns the ms to wait for each (0 and 0: admitted).
export const SIGNUP_WINDOWS_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function wait(key, limit, window)
  if limit <= 0 then return 0 end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  if count < limit then return 0 end
  local freeing = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
  return math.max(1, tonumber(freeing[2]) + window - now)
end
local limitA, windowA = tonumber(ARGV[1]), tonumber(ARGV[2])
local limitG, windowG = tonumber(ARGV[3]), tonumber(ARGV[4])
local waitA = wait(KEYS[1], limitA, windowA)
local waitG = wait(KEYS[2], limitG, windowG)
if waitA > 0 or waitG > 0 then return {waitA, waitG} end
if limitA > 0 then
  redis.call('ZADD', KEYS[1], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[1], windowA)
end
if limitG > 0 then
  redis.call('ZADD', KEYS[2], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[2], windowG)
end
return {0, 0}
`;
