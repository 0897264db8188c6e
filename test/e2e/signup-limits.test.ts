import t from 'tap';
import { startTestGateway, httpClient, type HttpResponse } from '../support/gateway.js';
import { header, twoDaemonsOnRedis } from '../support/e2e.js';
import { redisSkipReason } from '../support/redis.js';

/**
 * Sign-up limits and the client address behind a proxy (issue 28), through a real daemon:
 * per client address (default 5 an hour), over the gateway (`per_minute`), by email domain;
 * 429 with retry-after past a limit, before any password is hashed; the counters shared by
 * daemons on one Redis. With trust_proxy the address is the rightmost X-Forwarded-For entry,
 * so a forged first hop dodges neither the sign-up limit nor the login throttle.
 */

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

let counter = 0;
const email = (domain = 'example.com'): string => `user-${process.pid}-${++counter}@${domain}`;
const body = (address = email()) => ({ email: address, password: 'correct horse battery', name: 'New user' });

function expect429(t: Tap, res: HttpResponse, reason: string, maxSeconds: number): void {
  t.equal(res.status, 429, `429 (${res.text.slice(0, 200)})`);
  t.equal(res.body?.error?.code, 429, 'error.code is the integer status');
  t.equal(res.body?.error?.type, 'rate_limit_exceeded');
  t.equal(res.body?.error?.reason, reason);
  t.type(res.body?.error?.message, 'string');
  const retryAfter = Number(header(res, 'retry-after'));
  t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= maxSeconds, `retry-after ${header(res, 'retry-after')} within 1..${maxSeconds} s`);
}

t.test('per address, by default 5 an hour: the 6th gets 429 with retry-after, before any account is made', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  for (let i = 1; i <= 5; i++) {
    const res = await gw.http('POST', '/api/auth/signup', { body: body() });
    t.equal(res.status, 200, `sign-up ${i}`);
  }
  const refusedEmail = email();
  const sixth = await gw.http('POST', '/api/auth/signup', { body: body(refusedEmail) });
  expect429(t, sixth, 'too_many_signups_from_address', 3600);
  t.equal(await gw.app.store.accounts.byEmail(refusedEmail), undefined, 'no account for the refused sign-up');
  const invalid = await gw.http('POST', '/api/auth/signup', { body: { ...body(), password: 'short' } });
  t.equal(invalid.status, 400, 'a malformed request is still told what is wrong (it takes no slot)');
  // An admin still creates accounts for this address's people.
  const created = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email: email(), name: 'By admin' } });
  t.equal(created.status, 201, 'the management API is not limited');
});

t.test('behind a proxy (trust_proxy): the address is the last X-Forwarded-For entry, so a forged first hop does not help', async (t) => {
  const gw = await startTestGateway({ server: { trust_proxy: true } });
  t.teardown(() => gw.stop());
  const from = (xff: string) => ({ 'x-forwarded-for': xff });
  for (let i = 1; i <= 5; i++) {
    const res = await gw.http('POST', '/api/auth/signup', { body: body(), headers: from('203.0.113.7') });
    t.equal(res.status, 200, `sign-up ${i} from 203.0.113.7`);
  }
  expect429(t, await gw.http('POST', '/api/auth/signup', { body: body(), headers: from('203.0.113.7') }), 'too_many_signups_from_address', 3600);
  for (let i = 1; i <= 3; i++) {
    const forged = await gw.http('POST', '/api/auth/signup', { body: body(), headers: from(`198.18.${i}.${i}, 10.${i}.0.1, 203.0.113.7`) });
    expect429(t, forged, 'too_many_signups_from_address', 3600);
  }
  const other = await gw.http('POST', '/api/auth/signup', { body: body(), headers: from('203.0.113.8') });
  t.equal(other.status, 200, 'another client behind the proxy still signs up');
  const ipv4Mapped = await gw.http('POST', '/api/auth/signup', { body: body(), headers: from('::ffff:203.0.113.7') });
  t.equal(ipv4Mapped.status, 429, 'the IPv4-mapped form of the address is the same client');
  const withPort = await gw.http('POST', '/api/auth/signup', { body: body(), headers: from('203.0.113.7:40123') });
  t.equal(withPort.status, 429, 'so is the address with a port');
  const noHeader = await gw.http('POST', '/api/auth/signup', { body: body() });
  t.equal(noHeader.status, 200, 'without the header: the socket address (the proxy itself), its own subject');
});

t.test('trusted_proxies: past every listed proxy, a forged first hop still not taken', async (t) => {
  const gw = await startTestGateway({ auth: { signup: { per_address: 2 } }, server: { trust_proxy: true, trusted_proxies: ['127.0.0.1', '10.0.0.0/8'] } });
  t.teardown(() => gw.stop());
  const chain = (forged: string) => ({ 'x-forwarded-for': `${forged}, 203.0.113.20, 10.1.2.3` });
  t.equal((await gw.http('POST', '/api/auth/signup', { body: body(), headers: chain('1.1.1.1') })).status, 200);
  t.equal((await gw.http('POST', '/api/auth/signup', { body: body(), headers: chain('2.2.2.2') })).status, 200);
  expect429(t, await gw.http('POST', '/api/auth/signup', { body: body(), headers: chain('3.3.3.3') }), 'too_many_signups_from_address', 3600);
  t.equal((await gw.http('POST', '/api/auth/signup', { body: body(), headers: { 'x-forwarded-for': '203.0.113.21, 10.1.2.3' } })).status, 200, 'the next client past the proxies');
});

t.test('the login throttle counts the corrected address: a forged first hop does not reset it', async (t) => {
  // max_failures 1 per email: 4 failures per client address.
  const gw = await startTestGateway({ server: { trust_proxy: true }, auth: { login: { max_failures: 1, window: '15m' } } });
  t.teardown(() => gw.stop());
  for (let i = 1; i <= 4; i++) {
    const res = await gw.http('POST', '/api/auth/login', { body: { email: email(), password: 'wrong password' }, headers: { 'x-forwarded-for': `192.0.2.${i}, 203.0.113.30` } });
    t.equal(res.status, 401, `failure ${i}`);
  }
  const throttled = await gw.http('POST', '/api/auth/login', { body: { email: email(), password: 'wrong password' }, headers: { 'x-forwarded-for': '192.0.2.99, 203.0.113.30' } });
  expect429(t, throttled, 'too_many_login_attempts', 900);
  const other = await gw.http('POST', '/api/auth/login', { body: { email: email(), password: 'wrong password' }, headers: { 'x-forwarded-for': '203.0.113.31' } });
  t.equal(other.status, 401, 'another address is not throttled');
});

t.test('the gateway-wide rate (per_minute): many addresses, one limit', async (t) => {
  const gw = await startTestGateway({ server: { trust_proxy: true }, auth: { signup: { per_minute: 3 } } });
  t.teardown(() => gw.stop());
  for (let i = 1; i <= 3; i++) {
    t.equal((await gw.http('POST', '/api/auth/signup', { body: body(), headers: { 'x-forwarded-for': `198.51.100.${i}` } })).status, 200, `sign-up ${i} of the minute`);
  }
  const fourth = await gw.http('POST', '/api/auth/signup', { body: body(), headers: { 'x-forwarded-for': '198.51.100.4' } });
  expect429(t, fourth, 'too_many_signups', 60);
  t.match(fourth.body.error.message, /too many sign-ups on this gateway/);
});

t.test('email_domains: only those domains sign up (403 naming the field), and refusals take no slot', async (t) => {
  const gw = await startTestGateway({ auth: { signup: { email_domains: ['example.com'], per_address: 2 } } });
  t.teardown(() => gw.stop());
  for (const address of [email('example.org'), email('eng.example.com'), email('example.com.evil.test')]) {
    const res = await gw.http('POST', '/api/auth/signup', { body: body(address) });
    t.equal(res.status, 403, `${address}: 403`);
    t.equal(res.body.error.code, 403);
    t.equal(res.body.error.type, 'permission_error');
    t.equal(res.body.error.reason, 'email_domain_not_allowed');
    t.equal(res.body.error.param, 'email');
    t.match(res.body.error.message, /^email: sign-up on this gateway is limited to addresses at example\.com$/);
  }
  t.equal((await gw.http('POST', '/api/auth/signup', { body: body(email('example.com')) })).status, 200);
  t.equal((await gw.http('POST', '/api/auth/signup', { body: body(email('EXAMPLE.com')) })).status, 200, 'the domain in any case');
  t.equal((await gw.http('POST', '/api/auth/signup', { body: body(email('example.com')) })).status, 429, 'the 403s took none of the two slots');
});

t.test('allow_signup: false still turns sign-up off, before any limit', async (t) => {
  const gw = await startTestGateway({ auth: { allow_signup: false, signup: { per_address: 1 } } });
  t.teardown(() => gw.stop());
  for (let i = 0; i < 3; i++) {
    const res = await gw.http('POST', '/api/auth/signup', { body: body() });
    t.equal(res.status, 403);
    t.equal(res.body.error.reason, 'signup_disabled');
  }
});

t.test('two daemons on one Redis share the counters', { skip: redisSkipReason() }, async (t) => {
  const { a, b } = await twoDaemonsOnRedis(t, { server: { trust_proxy: true }, auth: { signup: { per_minute: 8 } } });
  const httpB = httpClient(b.url);
  const from = (xff: string) => ({ 'x-forwarded-for': xff });
  // Per address: 5 an hour, wherever they are made.
  for (const [i, http] of [a.http, httpB, a.http, httpB, a.http].entries()) {
    t.equal((await http('POST', '/api/auth/signup', { body: body(), headers: from('203.0.113.40') })).status, 200, `sign-up ${i + 1}, on daemon ${i % 2 === 0 ? 'a' : 'b'}`);
  }
  expect429(t, await httpB('POST', '/api/auth/signup', { body: body(), headers: from('6.6.6.6, 203.0.113.40') }), 'too_many_signups_from_address', 3600);
  expect429(t, await a.http('POST', '/api/auth/signup', { body: body(), headers: from('203.0.113.40') }), 'too_many_signups_from_address', 3600);
  // Gateway-wide: 8 a minute over both daemons; 5 are taken.
  for (const [i, http] of [a.http, httpB, a.http].entries()) {
    t.equal((await http('POST', '/api/auth/signup', { body: body(), headers: from(`203.0.113.${50 + i}`) })).status, 200, `sign-up ${6 + i} of the minute`);
  }
  expect429(t, await httpB('POST', '/api/auth/signup', { body: body(), headers: from('203.0.113.60') }), 'too_many_signups', 60);
  expect429(t, await a.http('POST', '/api/auth/signup', { body: body(), headers: from('203.0.113.61') }), 'too_many_signups', 60);
  const prefix = a.app.config.redis?.keyPrefix ?? '';
  t.ok(await a.app.redis?.exists(`${prefix}signup:addr:203.0.113.40`), 'the counters live under the configured key prefix');
});

t.test('the login throttle counts an IPv6 client by its /64: rotating addresses within it does not reset the count', async (t) => {
  const gw = await startTestGateway({ server: { trust_proxy: true }, auth: { login: { max_failures: 1, window: '15m' } } });
  t.teardown(() => gw.stop());
  for (let i = 1; i <= 4; i++) {
    const res = await gw.http('POST', '/api/auth/login', { body: { email: email(), password: 'wrong password' }, headers: { 'x-forwarded-for': `2001:db8:aa:bb::${i}` } });
    t.equal(res.status, 401, `failure ${i}, from 2001:db8:aa:bb::${i}`);
  }
  expect429(t, await gw.http('POST', '/api/auth/login', { body: { email: email(), password: 'wrong password' }, headers: { 'x-forwarded-for': '2001:db8:aa:bb:ffff:1:2:3' } }), 'too_many_login_attempts', 900);
  const other = await gw.http('POST', '/api/auth/login', { body: { email: email(), password: 'wrong password' }, headers: { 'x-forwarded-for': '2001:db8:aa:cc::1' } });
  t.equal(other.status, 401, 'another /64 is not throttled');
});

t.test('two daemons on one Redis count failed logins together', { skip: redisSkipReason() }, async (t) => {
  const { a, b } = await twoDaemonsOnRedis(t, { server: { trust_proxy: true }, auth: { login: { max_failures: 3, window: '15m' } } });
  const httpB = httpClient(b.url);
  const account = body();
  t.equal((await a.http('POST', '/api/auth/signup', { body: account, headers: { 'x-forwarded-for': '203.0.113.70' } })).status, 200);
  // Per email: 3 failures, spread over both daemons and three addresses.
  for (const [i, http] of [a.http, httpB, a.http].entries()) {
    const res = await http('POST', '/api/auth/login', { body: { email: account.email, password: 'wrong password' }, headers: { 'x-forwarded-for': `203.0.113.${71 + i}` } });
    t.equal(res.status, 401, `failure ${i + 1}, on daemon ${i % 2 === 0 ? 'a' : 'b'}`);
  }
  expect429(t, await httpB('POST', '/api/auth/login', { body: { email: account.email, password: account.password }, headers: { 'x-forwarded-for': '203.0.113.75' } }), 'too_many_login_attempts', 900);
  // Per address: 12 failures (4 × 3) over many emails, on either daemon.
  for (let i = 0; i < 12; i++) {
    const res = await (i % 2 === 0 ? a.http : httpB)('POST', '/api/auth/login', { body: { email: email(), password: 'wrong password' }, headers: { 'x-forwarded-for': '203.0.113.80' } });
    t.equal(res.status, 401, `address failure ${i + 1}`);
  }
  expect429(t, await a.http('POST', '/api/auth/login', { body: { email: email(), password: 'wrong password' }, headers: { 'x-forwarded-for': '203.0.113.80' } }), 'too_many_login_attempts', 900);
  // A correct password clears its email's count, for both daemons.
  const fresh = body();
  t.equal((await httpB('POST', '/api/auth/signup', { body: fresh, headers: { 'x-forwarded-for': '203.0.113.90' } })).status, 200);
  for (const http of [a.http, httpB]) t.equal((await http('POST', '/api/auth/login', { body: { email: fresh.email, password: 'wrong password' }, headers: { 'x-forwarded-for': '203.0.113.91' } })).status, 401);
  t.equal((await a.http('POST', '/api/auth/login', { body: { email: fresh.email, password: fresh.password }, headers: { 'x-forwarded-for': '203.0.113.92' } })).status, 200, 'the right password');
  for (const http of [httpB, a.http]) t.equal((await http('POST', '/api/auth/login', { body: { email: fresh.email, password: 'wrong password' }, headers: { 'x-forwarded-for': '203.0.113.93' } })).status, 401, 'the count started again');
  const prefix = a.app.config.redis?.keyPrefix ?? '';
  t.ok(await a.app.redis?.exists(`${prefix}login:addr:203.0.113.80`), 'the counts live under the configured key prefix');
});
