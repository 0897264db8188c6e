import { statSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { startGateway } from '../../src/main.js';
import { httpClient, startTestGateway, tempDir, testConfig } from '../support/gateway.js';

const signup = { email: 'Dev@Example.com', password: 'correct horse', name: 'Dev' };

t.test('sign-up: rules, cookie, conflict', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());

  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ ...signup, email: undefined }, 'email', /email: is required/],
    [{ ...signup, email: 'not-an-email' }, 'email', /email: must be an email address/],
    [{ ...signup, email: 'a@b' }, 'email', /email: must be an email address/],
    [{ ...signup, email: 42 }, 'email', /email: must be a string/],
    [{ ...signup, password: 'short' }, 'password', /password: must be at least 8 characters/],
    [{ ...signup, password: undefined }, 'password', /password: is required/],
    [{ ...signup, password: 'x'.repeat(73) }, 'password', /at most 72 bytes/],
    [{ ...signup, name: '' }, 'name', /name: must not be empty/],
    [{ ...signup, name: undefined }, 'name', /name: is required/],
    [{ ...signup, role: 'admin' }, 'role', /role: unknown field/],
  ];
  for (const [body, param, message] of cases) {
    const res = await gw.http('POST', '/api/auth/signup', { body });
    t.equal(res.status, 400, `${JSON.stringify(body)} → 400`);
    t.equal(res.body.error.param, param);
    t.match(res.body.error.message, message);
    t.equal(res.body.error.type, 'invalid_request_error');
    t.equal(res.body.error.code, 400, 'code is the integer status');
  }
  t.equal((await gw.app.store.accounts.list(10, 0)).length, 1, 'no account was half-created (only the admin exists)');

  const created = await gw.http('POST', '/api/auth/signup', { body: signup });
  t.equal(created.status, 200, 'sign-up answers 200');
  t.same(created.body.user, { id: created.body.user.id, email: 'dev@example.com', name: 'Dev', role: 'user', balance: 0, spend_limit: null, spend_period: null, spent_this_period: null, period_resets_at: null, created_at: created.body.user.created_at });
  t.notOk('password_hash' in created.body.user, 'no hash in the response');
  const cookie = String(created.headers['set-cookie']);
  t.match(cookie, /^token=[\w.-]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=604800$/, 'session cookie: HttpOnly, SameSite=Lax');
  t.match((await gw.app.store.accounts.byEmail('dev@example.com'))?.passwordHash, /^\$2[aby]\$04\$/, 'the password is stored as a bcrypt hash');

  const again = await gw.http('POST', '/api/auth/signup', { body: { ...signup, email: 'DEV@example.com' } });
  t.equal(again.status, 409, 'a taken email (any case) is 409');
  t.equal(again.body.error.reason, 'email_taken');
  t.equal(again.body.error.code, 409, 'code is the integer status');
  t.same(Object.keys(again.body.error).sort(), ['code', 'message', 'param', 'reason', 'type'], 'the spec envelope');
  t.equal(again.body.error.param, 'email');
});

t.test('login, me by cookie and by bearer', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  await gw.http('POST', '/api/auth/signup', { body: signup });

  const login = await gw.http('POST', '/api/auth/login', { body: { email: 'dev@example.com', password: 'correct horse' } });
  t.equal(login.status, 200);
  t.match(login.body.token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT');
  t.match(String(login.headers['set-cookie']), /^token=/);

  const byBearer = await gw.http('GET', '/api/auth/me', { token: login.body.token });
  t.equal(byBearer.status, 200);
  t.match(byBearer.body, { user: { email: 'dev@example.com', name: 'Dev', balance: 0 } });

  const byCookie = await gw.http('GET', '/api/auth/me', { headers: { cookie: `theme=dark; token=${login.body.token}` } });
  t.equal(byCookie.status, 200);
  t.equal(byCookie.body.user.email, 'dev@example.com');

  for (const [label, headers] of [
    ['no credentials', {}],
    ['a tampered token', { authorization: `Bearer ${login.body.token.slice(0, -2)}xx` }],
    ['garbage', { cookie: 'token=abc' }],
  ] as const) {
    const res = await gw.http('GET', '/api/auth/me', { headers });
    t.equal(res.status, 401, `${label} → 401`);
    t.equal(res.body.error.type, 'authentication_error');
  }

  const sk = await gw.http('POST', '/api/api-keys', { token: login.body.token, body: { name: 'app' } });
  const withKey = await gw.http('GET', '/api/auth/me', { token: sk.body.api_key });
  t.equal(withKey.status, 403, 'an sk- key is not a session');
  const withAdminKey = await gw.http('GET', '/api/auth/me', { token: gw.adminKey });
  t.equal(withAdminKey.status, 403, 'an akm- key is not a session');

  const logout = await gw.http('POST', '/api/auth/logout');
  t.match(String(logout.headers['set-cookie']), /^token=; .*Max-Age=0/);
});

t.test('bad credentials are 401, repeated failures are throttled', async (t) => {
  const gw = await startTestGateway({ auth: { login: { max_failures: 3, window: '10m' } } });
  t.teardown(() => gw.stop());
  await gw.http('POST', '/api/auth/signup', { body: signup });

  const unknown = await gw.http('POST', '/api/auth/login', { body: { email: 'nobody@example.com', password: 'whatever1' } });
  t.equal(unknown.status, 401);
  t.equal(unknown.body.error.message, 'invalid email or password', 'unknown email and wrong password read the same');

  for (let i = 0; i < 3; i++) {
    const res = await gw.http('POST', '/api/auth/login', { body: { email: 'dev@example.com', password: `wrong-${i}-pass` } });
    t.equal(res.status, 401, `failure ${i + 1} is 401`);
  }
  const throttled = await gw.http('POST', '/api/auth/login', { body: { email: 'dev@example.com', password: 'correct horse' } });
  t.equal(throttled.status, 429, 'after the limit even the right password waits');
  t.equal(throttled.body.error.reason, 'too_many_login_attempts');
  t.equal(throttled.body.error.code, 429);
  t.equal(throttled.body.error.type, 'rate_limit_exceeded');
  t.ok(Number(throttled.headers['retry-after']) > 0 && Number(throttled.headers['retry-after']) <= 600, 'Retry-After within the window');

  const other = await gw.http('POST', '/api/auth/signup', { body: { ...signup, email: 'other@example.com' } });
  t.equal(other.status, 200);
  const otherLogin = await gw.http('POST', '/api/auth/login', { body: { email: 'other@example.com', password: 'correct horse' } });
  t.equal(otherLogin.status, 200, 'another email from the same client still logs in (per-client limit is higher)');
});

t.test('sign-up can be disabled', async (t) => {
  const gw = await startTestGateway({ auth: { allow_signup: false } });
  t.teardown(() => gw.stop());
  const res = await gw.http('POST', '/api/auth/signup', { body: signup });
  t.equal(res.status, 403);
  t.equal(res.body.error.reason, 'signup_disabled');
  t.equal(res.body.error.code, 403);
});

t.test('sessions survive a restart with the generated secret', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const config = testConfig(dir.path, { auth: { jwt_secret: '' } });
  t.equal(config.auth.jwtSecret, undefined);
  const first = await startGateway(config, { logger: pino({ level: 'silent' }) });
  const created = await httpClient(first.url)('POST', '/api/auth/signup', { body: signup });
  await first.close();
  const second = await startGateway(config, { logger: pino({ level: 'silent' }) });
  t.teardown(() => second.close());
  const me = await httpClient(second.url)('GET', '/api/auth/me', { token: created.body.token });
  t.equal(me.status, 200, 'the token from before the restart is still valid');
  t.equal(statSync(join(dir.path, 'jwt-secret')).mode & 0o777, 0o600, 'the generated secret file is private');
});
