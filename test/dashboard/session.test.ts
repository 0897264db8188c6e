import t from 'tap';
import { ApiClient, ApiError } from '../../src/dashboard/lib/api.js';
import { isPublicPath, loginHref, loginNoticeOf, noticeForLostSession, safeNext } from '../../src/dashboard/lib/session.js';

t.test('what a lost session tells the person', async (t) => {
  t.equal(noticeForLostSession('session_expired', true), 'expired');
  t.equal(noticeForLostSession('session_expired', false), 'expired', 'an expired cookie at start-up too');
  t.equal(noticeForLostSession('invalid_session', true), 'expired', 'logged out elsewhere');
  t.equal(noticeForLostSession('invalid_session', false), 'expired', 'a revoked cookie at start-up');
  t.equal(noticeForLostSession('missing_credentials', false), null, 'a first visit: nothing to say');
  t.equal(noticeForLostSession(null, false), null);
  t.equal(noticeForLostSession('missing_credentials', true), 'expired', 'the cookie went away mid-session');
  t.equal(loginNoticeOf('expired'), 'Your session expired. Log in again.');
  t.equal(loginNoticeOf('logged-out'), 'You have logged out.');
  t.equal(loginNoticeOf('toString'), null, 'only known notices');
  t.equal(loginNoticeOf(null), null);
});

t.test('the login page sends people back where they were, never off the site', async (t) => {
  t.equal(loginHref('/usage?model=x', 'expired'), '/login?next=%2Fusage%3Fmodel%3Dx&session=expired');
  t.equal(loginHref('/', null), '/login');
  t.equal(loginHref(null, 'logged-out'), '/login?session=logged-out');
  t.equal(safeNext('/keys'), '/keys');
  t.equal(safeNext('/usage?model=a#x'), '/usage?model=a#x');
  for (const bad of ['//evil.example', '/\\evil.example', 'https://evil.example', 'javascript:alert(1)', '', null, undefined, '/login', '/signup?next=/x', '/\u0000x']) {
    t.equal(safeNext(bad), '/', `refuses ${JSON.stringify(bad)}`);
  }
  t.ok(isPublicPath('/login'));
  t.notOk(isPublicPath('/keys'));
});

interface Call {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** A fetch that answers from a list and records what it was asked. */
function fakeFetch(answers: { status: number; body: unknown }[]) {
  const calls: Call[] = [];
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    calls.push({ url, method: init.method ?? 'GET', headers: { ...(init.headers as Record<string, string>) }, body: init.body as string | undefined });
    const answer = answers.shift();
    if (!answer) throw new TypeError('fetch failed');
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    return new Response(text, { status: answer.status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch, calls };
}

const envelope = (status: number, reason: string, message = 'nope', param: string | null = null) => ({ status, body: { error: { message, type: 'x', code: status, reason, param } } });

t.test('the CSRF token goes with every change, never with a read', async (t) => {
  const { fetch, calls } = fakeFetch([
    { status: 200, body: { user: { id: 'acc_1' }, csrf_token: 'tok-1', expires_at: 'x' } },
    { status: 200, body: { object: 'list', data: [] } },
    { status: 200, body: { id: 'key_1', api_key: 'sk-x' } },
    { status: 200, body: { id: 'key_1' } },
  ]);
  const api = new ApiClient(fetch);
  await api.me();
  await api.apiKeys();
  await api.createApiKey({ name: 'app', rate_limit: 1000, budget: 0 });
  await api.revokeApiKey('key/1');
  t.equal(calls[1]?.headers['x-csrf-token'], undefined, 'GET: no token');
  t.equal(calls[2]?.headers['x-csrf-token'], 'tok-1', 'POST carries it');
  t.equal(calls[2]?.headers['content-type'], 'application/json');
  t.same(JSON.parse(calls[2]?.body ?? ''), { name: 'app', rate_limit: 1000, budget: 0 });
  t.equal(calls[3]?.method, 'DELETE');
  t.equal(calls[3]?.url, '/api/api-keys/key%2F1', 'ids are escaped');
  t.equal(calls[3]?.headers['x-csrf-token'], 'tok-1');
});

t.test('login and signup take the session\'s CSRF token; logout forgets it', async (t) => {
  const { fetch, calls } = fakeFetch([
    { status: 200, body: { token: 'jwt', expires_at: 'x', csrf_token: 'tok-login' } },
    { status: 200, body: { ok: true } },
  ]);
  const api = new ApiClient(fetch);
  await api.login({ email: 'a@b.co', password: 'password1' });
  t.equal(api.csrfToken, 'tok-login');
  await api.logout();
  t.equal(calls[1]?.headers['x-csrf-token'], 'tok-login', 'logout is a change: it carries the token');
  t.equal(api.csrfToken, null);
});

t.test('a 401 ends the session (with its reason); a wrong password does not', async (t) => {
  const lost: (string | null)[] = [];
  const { fetch } = fakeFetch([envelope(401, 'session_expired', 'The session expired'), envelope(401, 'invalid_credentials', 'Wrong e-mail or password')]);
  const api = new ApiClient(fetch, (error) => lost.push(error.reason));
  const expired = await api.overview().catch((error: unknown) => error);
  t.ok(expired instanceof ApiError);
  t.match(expired, { status: 401, reason: 'session_expired', message: 'The session expired' });
  t.same(lost, ['session_expired'], 'the app was told');
  const wrong = await api.login({ email: 'a@b.co', password: 'password1' }).catch((error: unknown) => error);
  t.match(wrong, { status: 401, reason: 'invalid_credentials', message: 'Wrong e-mail or password' });
  t.same(lost, ['session_expired'], 'a failed login is not a lost session');
});

t.test('a stale CSRF token is refreshed once, then the change is retried', async (t) => {
  const { fetch, calls } = fakeFetch([
    envelope(403, 'csrf_failed'),
    { status: 200, body: { user: { id: 'acc_1' }, csrf_token: 'tok-new', expires_at: 'x' } },
    { status: 200, body: { id: 'key_1', api_key: 'sk-x' } },
  ]);
  const api = new ApiClient(fetch);
  api.csrfToken = 'tok-old';
  const created = await api.createApiKey({ name: 'app', rate_limit: 10, budget: 0 });
  t.equal(created.id, 'key_1');
  t.same(calls.map((call) => [call.method, call.url, call.headers['x-csrf-token']]), [
    ['POST', '/api/api-keys', 'tok-old'],
    ['GET', '/api/auth/me', undefined],
    ['POST', '/api/api-keys', 'tok-new'],
  ]);

  const again = fakeFetch([envelope(403, 'csrf_failed'), { status: 200, body: { user: {}, csrf_token: 'tok-2', expires_at: 'x' } }, envelope(403, 'csrf_failed')]);
  const stubborn = new ApiClient(again.fetch);
  t.match(await stubborn.revokeApiKey('k').catch((error: unknown) => error), { status: 403, reason: 'csrf_failed' }, 'only one retry');
  t.equal(again.calls.length, 3);
});

t.test('errors: the envelope, a body that is not JSON, no answer at all', async (t) => {
  const { fetch } = fakeFetch([envelope(400, 'invalid_field', 'rate_limit must be an integer from 1 to 10000', 'rate_limit'), { status: 502, body: '<html>Bad gateway</html>' }]);
  const api = new ApiClient(fetch);
  const failure = (promise: Promise<unknown>): Promise<unknown> => promise.then(() => null, (error: unknown) => error);
  t.match(await failure(api.createApiKey({ name: 'x', rate_limit: 0, budget: 0 })), { status: 400, param: 'rate_limit', message: /rate_limit/ });
  t.match(await failure(api.models()), { status: 502, message: 'The server answered 502.' });
  t.match(await failure(api.models()), { status: 0, reason: 'network_error' }, 'fetch threw: the gateway is down');
});
