import type { Redis } from 'ioredis';
import { defineScript, type RedisScript } from '../../store/redis.js';
import { addressSubject } from '../client-address.js';
import { errors } from '../errors.js';
import { FailureThrottle } from './throttle.js';

/**
 * Failed logins, counted per email (`auth.login.max_failures` in `window`) and per client
 * address (four times that, across every email it tries; an IPv6 client counted by its /64, so
 * that rotating addresses within one network buys nothing). Past either count the login is
 * refused with 429 before its password is checked. In this daemon's memory by default; with
 * Redis, one count for every daemon sharing it (a client spreading guesses over the daemons
 * behind a load balancer gets no more of them).
 */
export class LoginThrottle {
  private readonly byEmail: FailureThrottle;
  private readonly byClient: FailureThrottle;
  private readonly shared: { check: RedisScript; fail: RedisScript; client: Redis; prefix: string } | undefined;

  constructor(
    private readonly limits: { maxFailures: number; windowMs: number },
    redis?: { client: Redis; prefix: string },
    now: () => number = Date.now,
  ) {
    this.byEmail = new FailureThrottle(limits.maxFailures, limits.windowMs, now);
    this.byClient = new FailureThrottle(limits.maxFailures * 4, limits.windowMs, now);
    this.shared = redis && {
      check: defineScript(redis.client, 'gatewayLoginCheck', 2, LOGIN_CHECK_LUA),
      fail: defineScript(redis.client, 'gatewayLoginFail', 2, LOGIN_FAIL_LUA),
      client: redis.client,
      prefix: redis.prefix,
    };
  }

  /** Throws 429 (with the seconds to wait) when the email or the client is past its count. */
  async check(email: string, client: string): Promise<void> {
    const subjects = this.subjects(email, client);
    let seconds: number;
    if (this.shared) {
      const { check, prefix } = this.shared;
      const waitMs = Number(await this.redis(() => check(...this.keys(prefix, subjects), this.limits.maxFailures, this.limits.maxFailures * 4)));
      seconds = waitMs > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : 0;
    } else seconds = Math.max(this.byEmail.retryAfter(subjects.email), this.byClient.retryAfter(subjects.client));
    if (seconds > 0) throw errors.loginThrottled(seconds);
  }

  async failed(email: string, client: string): Promise<void> {
    const subjects = this.subjects(email, client);
    if (this.shared) {
      const { fail, prefix } = this.shared;
      await this.redis(() => fail(...this.keys(prefix, subjects), this.limits.windowMs));
      return;
    }
    this.byEmail.fail(subjects.email);
    this.byClient.fail(subjects.client);
  }

  /** A correct password clears its email's count (not its client's: one good account does not launder guesses at others). */
  async succeeded(email: string): Promise<void> {
    const subject = email.toLowerCase();
    if (this.shared) {
      const { client, prefix } = this.shared;
      await this.redis(() => client.del(`${prefix}login:email:${subject}`));
      return;
    }
    this.byEmail.succeed(subject);
  }

  private subjects(email: string, client: string): { email: string; client: string } {
    return { email: email.toLowerCase(), client: addressSubject(client) };
  }

  private keys(prefix: string, subjects: { email: string; client: string }): [string, string] {
    return [`${prefix}login:email:${subjects.email}`, `${prefix}login:addr:${subjects.client}`];
  }

  private async redis<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw errors.loginThrottleUnavailable(error);
    }
  }
}

// KEYS: the email's count, the client's. ARGV: their limits. Returns the ms until the later of
// the two windows past its limit ends (0: neither is).
const LOGIN_CHECK_LUA = `
local wait = 0
for i = 1, 2 do
  local count = tonumber(redis.call('GET', KEYS[i]) or '0')
  if count >= tonumber(ARGV[i]) then
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl > wait then wait = ttl end
  end
end
return wait
`;

// KEYS: the email's count, the client's. ARGV[1]: the window (ms), from each count's first failure.
const LOGIN_FAIL_LUA = `
for i = 1, 2 do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
end
return 0
`;
