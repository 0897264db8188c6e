import jwt from 'jsonwebtoken';
import t from 'tap';
import { startTestGateway, TEST_JWT_SECRET } from '../support/gateway.js';

/** Session security for the dashboard: CSRF on cookie-authenticated changes, logout ends the session, expiry said as such. */

t.test('cookie-authenticated changes need the session CSRF token from the gateway own origin', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const signup = await gw.http('POST', '/api/auth/signup', { body: { email: 'csrf@example.com', password: 'password-1', name: 'C' } });
  t.equal(signup.status, 200);
  const login = await gw.http('POST', '/api/auth/login', { body: { email: 'csrf@example.com', password: 'password-1' } });
  const { token, csrf_token: csrf } = login.body as { token: string; csrf_token: string };
  t.match(csrf, /^[A-Za-z0-9_-]{43}$/, 'a CSRF token with the login');
  t.not(csrf, (signup.body as { csrf_token: string }).csrf_token, 'one per session');
  const cookie = `token=${token}`;
  const me = await gw.http('GET', '/api/auth/me', { headers: { cookie } });
  t.equal(me.body.csrf_token, csrf, 'and from GET /api/auth/me');

  const create = (headers: Record<string, string>, raw = JSON.stringify({ name: 'k' })) => gw.http('POST', '/api/api-keys', { raw, headers: { 'content-type': 'application/json', ...headers } });
  const noHeader = await create({ cookie });
  t.equal(noHeader.status, 403, 'the cookie alone cannot create a key');
  t.match(noHeader.body, { error: { code: 403, type: 'permission_error', reason: 'csrf_failed' } });
  t.equal((await create({ cookie }, 'name=k')).status, 403, 'nor as a form or text/plain body');
  t.equal((await create({ cookie, 'content-type': 'text/plain' })).status, 403);
  t.equal((await create({ cookie, 'x-csrf-token': 'x'.repeat(43) })).status, 403, 'a wrong token');
  const evil = await create({ cookie, 'x-csrf-token': csrf, origin: 'http://evil.example' });
  t.equal(evil.status, 403, 'another origin, even with the token');
  t.match(evil.body.error.message, /another origin/);
  t.equal((await create({ cookie, 'x-csrf-token': csrf, origin: 'null' })).status, 403, 'an opaque origin');
  const own = new URL(gw.url).host;
  t.equal((await create({ cookie, 'x-csrf-token': csrf, origin: `http://${own}` })).status, 200, 'the gateway own origin with the token');
  t.equal((await create({ cookie, 'x-csrf-token': csrf })).status, 200, 'no Origin (not a browser cross-site request) with the token');
  t.equal((await create({ authorization: `Bearer ${token}` })).status, 200, 'a bearer token is not ambient: no CSRF token needed');
  t.equal((await gw.http('GET', '/api/api-keys', { headers: { cookie } })).status, 200, 'reads need none');
  const otherSession = (await gw.http('POST', '/api/auth/login', { body: { email: 'csrf@example.com', password: 'password-1' } })).body.csrf_token as string;
  t.equal((await create({ cookie, 'x-csrf-token': otherSession })).status, 403, "another session's token");

  const foreignLogin = await gw.http('POST', '/api/auth/login', { body: { email: 'csrf@example.com', password: 'password-1' }, headers: { origin: 'http://evil.example' } });
  t.equal(foreignLogin.status, 403, 'a foreign page cannot log a browser in');
});

t.test('logout ends the session server-side; an expired session says so', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  await gw.http('POST', '/api/auth/signup', { body: { email: 'out@example.com', password: 'password-1', name: 'O' } });
  const login = await gw.http('POST', '/api/auth/login', { body: { email: 'out@example.com', password: 'password-1' } });
  const { token, csrf_token: csrf } = login.body as { token: string; csrf_token: string };
  const cookie = `token=${token}`;
  const other = (await gw.http('POST', '/api/auth/login', { body: { email: 'out@example.com', password: 'password-1' } })).body.token as string;

  t.equal((await gw.http('POST', '/api/auth/logout', { headers: { cookie } })).status, 403, 'logout with the cookie needs the CSRF token too');
  const out = await gw.http('POST', '/api/auth/logout', { headers: { cookie, 'x-csrf-token': csrf } });
  t.equal(out.status, 200);
  t.match(String(out.headers['set-cookie']), /^token=; .*Max-Age=0/, 'the cookie is cleared');
  const after = await gw.http('GET', '/api/auth/me', { headers: { cookie } });
  t.equal(after.status, 401, 'the token no longer works, though it has not expired');
  t.match(after.body, { error: { reason: 'invalid_session' } });
  t.equal((await gw.http('GET', '/api/api-keys', { token })).status, 401, 'as a bearer token neither');
  t.equal((await gw.http('GET', '/api/auth/me', { token: other })).status, 200, 'another session of the account goes on');
  t.equal((await gw.http('POST', '/api/auth/logout', { headers: { cookie } })).status, 200, 'logging out an ended session just clears the cookie');

  const account = (await gw.http('GET', '/api/auth/me', { token: other })).body.user.id as string;
  const expired = jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: account, issuer: 'llm-gateway', audience: 'session', expiresIn: -60, jwtid: 'old' });
  const res = await gw.http('GET', '/api/auth/me', { headers: { cookie: `token=${expired}` } });
  t.equal(res.status, 401);
  t.match(res.body, { error: { code: 401, reason: 'session_expired', message: /session expired/ } });
  t.match((await gw.http('GET', '/api/auth/me', { headers: { cookie: 'token=garbage' } })).body, { error: { reason: 'invalid_session' } });
  t.equal(await gw.app.store.sessions.purge(Date.now() + 8 * 86_400_000), 1, 'the ended session is purged once its token would have expired');
});

t.test('behind a proxy that rewrites Host: server.public_url is the own origin', async (t) => {
  const gw = await startTestGateway({ server: { public_url: 'https://llm.example.com' } });
  t.teardown(() => gw.stop());
  const signup = await gw.http('POST', '/api/auth/signup', { body: { email: 'proxy@example.com', password: 'password-1', name: 'P' }, headers: { origin: 'https://llm.example.com' } });
  t.equal(signup.status, 200, 'the public origin may sign up');
  const headers = { cookie: `token=${signup.body.token as string}`, 'x-csrf-token': signup.body.csrf_token as string, 'content-type': 'application/json' };
  t.equal((await gw.http('POST', '/api/api-keys', { raw: '{"name":"k"}', headers: { ...headers, origin: 'https://llm.example.com' } })).status, 200);
  t.equal((await gw.http('POST', '/api/api-keys', { raw: '{"name":"k"}', headers: { ...headers, origin: 'https://evil.example.com' } })).status, 403);
});

t.test('session tokens are HS256 over the configured secret: ones signed with it as a string (before the key object) still verify, and back', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const signup = await gw.http('POST', '/api/auth/signup', { body: { email: 'hs256@example.com', password: 'password-1', name: 'H' } });
  const { token } = signup.body as { token: string };
  const payload = jwt.verify(token, TEST_JWT_SECRET, { algorithms: ['HS256'] }) as jwt.JwtPayload;
  t.equal(payload.iss, 'llm-gateway', 'the gateway token verifies with the secret as a plain string');
  const older = jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: payload.sub, issuer: 'llm-gateway', audience: 'session', expiresIn: 600, jwtid: 'older-token-id' });
  const me = await gw.http('GET', '/api/auth/me', { headers: { authorization: `Bearer ${older}` } });
  t.equal(me.status, 200, 'a token signed with the plain string secret is accepted');
  const forged = jwt.sign({}, `${TEST_JWT_SECRET}x`, { algorithm: 'HS256', subject: payload.sub, issuer: 'llm-gateway', audience: 'session', expiresIn: 600 });
  t.equal((await gw.http('GET', '/api/auth/me', { headers: { authorization: `Bearer ${forged}` } })).status, 401, 'another secret is refused');
});
