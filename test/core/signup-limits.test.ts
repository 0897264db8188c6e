import t from 'tap';
import { isGatewayError, type GatewayError } from '../../src/core/errors.js';
import { SignupLimits } from '../../src/core/limits/signup-limits.js';
import { MemoryRateLimiter } from '../../src/core/limits/rate-limit.js';

/** Sign-up limits in one daemon (issue 28): per client address an hour, over the gateway a minute. */

async function refusal(promise: Promise<unknown>): Promise<GatewayError | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    if (isGatewayError(error)) return error;
    throw error;
  }
}

let ids = 0;
const id = (): string => `req-${++ids}`;

t.test('per address: 5 an hour, then 429 with the wait until the first leaves the window', async (t) => {
  let now = 1_000_000;
  const limits = new SignupLimits({ perAddressPerHour: 5, perMinute: 0 }, undefined, () => now);
  for (let i = 0; i < 5; i++) {
    t.equal(await refusal(limits.admit('198.51.100.7', id())), undefined, `sign-up ${i + 1} admitted`);
    now += 1000;
  }
  const sixth = await refusal(limits.admit('198.51.100.7', id()));
  t.equal(sixth?.status, 429);
  t.equal(sixth?.type, 'rate_limit_exceeded');
  t.equal(sixth?.reason, 'too_many_signups_from_address');
  t.equal(sixth?.headers['retry-after'], String(3600 - 5), 'seconds until the first sign-up is an hour old');
  t.equal(await refusal(limits.admit('198.51.100.8', id())), undefined, 'another address is not affected');
  now = 1_000_000 + 3_600_000;
  t.equal(await refusal(limits.admit('198.51.100.7', id())), undefined, 'an hour after the first, one more');
  t.equal((await refusal(limits.admit('198.51.100.7', id())))?.status, 429, 'and only one');
});

t.test('an IPv6 client counts as its /64; an IPv4-mapped one as its IPv4 address', async (t) => {
  const limits = new SignupLimits({ perAddressPerHour: 2, perMinute: 0 });
  t.equal(await refusal(limits.admit('2001:db8:1:2::1', id())), undefined);
  t.equal(await refusal(limits.admit('2001:db8:1:2:ffff:ffff:ffff:fffe', id())), undefined);
  t.equal((await refusal(limits.admit('2001:db8:1:2::3', id())))?.status, 429, 'a third address of the same /64 is refused');
  t.equal(await refusal(limits.admit('2001:db8:1:3::1', id())), undefined, 'the next /64 is another subject');
  t.equal(await refusal(limits.admit('203.0.113.1', id())), undefined);
  t.equal(await refusal(limits.admit('::ffff:203.0.113.1', id())), undefined);
  t.equal((await refusal(limits.admit('203.0.113.1', id())))?.status, 429, 'the mapped form is the same client');
});

t.test('the gateway-wide rate, and neither limit spends the other', async (t) => {
  let now = 5_000_000;
  const limits = new SignupLimits({ perAddressPerHour: 2, perMinute: 3 }, undefined, () => now);
  // One client past its own limit: its refusals take nothing from the gateway's rate.
  t.equal(await refusal(limits.admit('198.51.100.1', id())), undefined);
  t.equal(await refusal(limits.admit('198.51.100.1', id())), undefined);
  for (let i = 0; i < 20; i++) t.equal((await refusal(limits.admit('198.51.100.1', id())))?.reason, 'too_many_signups_from_address');
  t.equal(await refusal(limits.admit('198.51.100.2', id())), undefined, 'the third sign-up of the minute, from another client');
  now += 10_000;
  const full = await refusal(limits.admit('198.51.100.3', id()));
  t.equal(full?.status, 429);
  t.equal(full?.reason, 'too_many_signups');
  t.equal(full?.headers['retry-after'], '50', 'seconds until the first of the minute leaves it');
  t.match(full?.message, /too many sign-ups on this gateway/);
  // The refusal for the gateway's rate took no slot of 198.51.100.3's own: two more once the minute has room.
  now += 60_000;
  t.equal(await refusal(limits.admit('198.51.100.3', id())), undefined);
  t.equal(await refusal(limits.admit('198.51.100.3', id())), undefined, 'its two sign-ups of the hour are both still there');
  t.equal((await refusal(limits.admit('198.51.100.3', id())))?.reason, 'too_many_signups_from_address');
});

t.test('0 is no limit', async (t) => {
  const limits = new SignupLimits({ perAddressPerHour: 0, perMinute: 0 });
  for (let i = 0; i < 50; i++) t.equal(await refusal(limits.admit('198.51.100.7', id())), undefined);
  const perAddressOnly = new SignupLimits({ perAddressPerHour: 0, perMinute: 2 });
  await perAddressOnly.admit('1.1.1.1', id());
  await perAddressOnly.admit('1.1.1.1', id());
  t.equal((await refusal(perAddressOnly.admit('2.2.2.2', id())))?.reason, 'too_many_signups', 'per_minute alone');
});

t.test('MemoryRateLimiter: a window of its own, and a wait that records nothing', async (t) => {
  let now = 0;
  const limiter = new MemoryRateLimiter(() => now, 3_600_000);
  t.equal(limiter.waitSync('a', 2), 0, 'an unknown key may go');
  t.equal(limiter.trackedKeys, 0, 'and asking did not track it');
  limiter.checkSync('a', 2);
  now = 1000;
  limiter.checkSync('a', 2);
  now = 2000;
  t.equal(limiter.waitSync('a', 2), 3_600_000 - 2000, 'until the first leaves the hour');
  t.equal(limiter.checkSync('a', 2).allowed, false);
  now = 3_600_000;
  t.equal(limiter.waitSync('a', 2), 0, 'the first has left the hour: room for one');
  t.equal(limiter.waitSync('a', 1), 1000, 'under a limit of one, the second leaves a second later');
});

t.test('shared counters that cannot be read: 503, never a sign-up unchecked', async (t) => {
  const commands: Record<string, unknown> = {};
  const down = {
    defineCommand(name: string) {
      commands[name] = async () => {
        throw new Error('Connection is closed.');
      };
    },
  };
  const redis = new Proxy(down, { has: (target, key) => key in commands || key in target, get: (target, key) => (commands as Record<string | symbol, unknown>)[key] ?? (target as Record<string | symbol, unknown>)[key] });
  const limits = new SignupLimits({ perAddressPerHour: 5, perMinute: 60 }, { client: redis as never, prefix: 'test:' });
  const error = await refusal(limits.admit('198.51.100.7', id()));
  t.equal(error?.status, 503);
  t.equal(error?.reason, 'limits_unavailable');
  t.equal(error?.headers['retry-after'], '1');
});
