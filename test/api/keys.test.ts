import { createHash } from 'node:crypto';
import t from 'tap';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { sqlAll, sqlRun, sqlValue } from '../support/store.js';

async function session(gw: TestGateway, email = 'dev@example.com'): Promise<string> {
  const res = await gw.http('POST', '/api/auth/signup', { body: { email, password: 'password-1', name: 'Dev' } });
  return res.body.token as string;
}

t.test('POST /api/api-keys: the key is shown once and stored hashed', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const token = await session(gw);

  const created = await gw.http('POST', '/api/api-keys', { token, body: { name: 'my app' } });
  t.equal(created.status, 200, 'the session API answers 200');
  const secret: string = created.body.api_key;
  t.match(secret, /^sk-[0-9a-f]{64}$/);
  t.match(created.body, { object: 'api_key', name: 'my app', rate_limit: 10000, budget: 0, spent: 0, status: 'active', expires_at: null, last_used_at: null });
  t.equal(created.body.budget, 0, 'no budget: 0 (unlimited), a number, not null');
  t.equal(created.body.masked_key, `sk-${secret.slice(3, 7)}…${secret.slice(-4)}`);

  const row = (await sqlAll(gw, 'SELECT * FROM api_keys WHERE id = ?', created.body.id))[0] as Record<string, unknown>;
  t.equal(row.key_hash, createHash('sha256').update(secret).digest('hex'), 'SHA-256 stored');
  t.notOk(Object.values(row).some((value) => typeof value === 'string' && value.includes(secret.slice(3))), 'no column holds the key');

  const list = await gw.http('GET', '/api/api-keys', { token });
  t.equal(list.status, 200);
  t.equal(list.body.data.length, 1);
  t.notOk(list.text.includes(secret.slice(3)), 'the list never shows the secret');
  t.notOk('api_key' in list.body.data[0]);
  const one = await gw.http('GET', `/api/api-keys/${created.body.id}`, { token });
  t.notOk(one.text.includes(secret.slice(3)), 'nor does a single key');

  const credits = await gw.http('GET', '/v1/credits', { token: secret });
  t.equal(credits.status, 200, 'the key works');
  t.same(credits.body, { balance: 0, currency: 'INR' });
});

t.test('field rules on create', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const token = await session(gw);
  const bad: [Record<string, unknown>, string, RegExp][] = [
    [{}, 'name', /name: is required/],
    [{ name: '   ' }, 'name', /must not be empty/],
    [{ name: 'x'.repeat(101) }, 'name', /at most 100/],
    [{ name: 'a', rate_limit: 0 }, 'rate_limit', /integer from 1 to 10000/],
    [{ name: 'a', rate_limit: 10001 }, 'rate_limit', /integer from 1 to 10000/],
    [{ name: 'a', rate_limit: '100' }, 'rate_limit', /integer/],
    [{ name: 'a', rate_limit: 1.5 }, 'rate_limit', /integer/],
    [{ name: 'a', rate_limit: null }, 'rate_limit', /integer/],
    [{ name: 'a', budget: -1 }, 'budget', />= 0/],
    [{ name: 'a', budget: '10' }, 'budget', /must be a number/],
    [{ name: 'a', budget: 0.0000001 }, 'budget', /6 decimal places/],
    [{ name: 'a', expires_at: '2020-01-01' }, 'expires_at', /in the future/],
    [{ name: 'a', expires_at: '2030-02-30' }, 'expires_at', /not a calendar date/],
    [{ name: 'a', expires_at: 'next week' }, 'expires_at', /ISO 8601/],
    [{ name: 'a', expires_at: 1893456000 }, 'expires_at', /must be a string/],
    [{ name: 'a', ratelimit: 5 }, 'ratelimit', /unknown field/],
  ];
  for (const [body, param, message] of bad) {
    const res = await gw.http('POST', '/api/api-keys', { token, body });
    t.equal(res.status, 400, `${JSON.stringify(body)} → 400`);
    t.equal(res.body.error.param, param);
    t.match(res.body.error.message, message);
    t.equal(res.body.error.code, 400, 'code is the integer status');
  }
  t.equal(await sqlValue(gw, 'SELECT count(*) AS n FROM api_keys'), 0, 'nothing was written');

  const good = await gw.http('POST', '/api/api-keys', { token, body: { name: 'b', rate_limit: 1, budget: 12.345678, expires_at: '2031-06-30' } });
  t.equal(good.status, 200);
  t.match(good.body, { rate_limit: 1, budget: 12.345678, expires_at: '2031-06-30T00:00:00.000Z' });
  const zero = await gw.http('POST', '/api/api-keys', { token, body: { name: 'c', budget: 0, expires_at: '2031-06-30T18:30:00+05:30', rate_limit: 10000 } });
  t.equal(zero.body.budget, 0, 'budget 0 = unlimited, shown as 0');
  t.match(zero.body, { budget: 0, expires_at: '2031-06-30T13:00:00.000Z', rate_limit: 10000 }, 'budget 0 = unlimited');
});

t.test('PATCH and DELETE', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const token = await session(gw);
  const created = await gw.http('POST', '/api/api-keys', { token, body: { name: 'app', rate_limit: 100, budget: 50, expires_at: '2031-01-01' } });
  const id = created.body.id as string;

  const renamed = await gw.http('PATCH', `/api/api-keys/${id}`, { token, body: { name: 'renamed' } });
  t.equal(renamed.status, 200);
  t.match(renamed.body, { name: 'renamed', rate_limit: 100, budget: 50, expires_at: '2031-01-01T00:00:00.000Z' }, 'omitted fields are kept');

  const unlimited = await gw.http('PATCH', `/api/api-keys/${id}`, { token, body: { budget: 0, rate_limit: 5000 } });
  t.match(unlimited.body, { budget: 0, rate_limit: 5000, name: 'renamed' });
  t.equal(unlimited.body.budget, 0, 'unlimited is 0, not null');

  const noExpiry = await gw.http('PATCH', `/api/api-keys/${id}`, { token, body: { expires_at: null } });
  t.equal(noExpiry.body.expires_at, null, 'expires_at null removes the expiry');

  for (const body of [{}, { rate_limit: 0 }, { budget: -5 }, { expires_at: '2001-01-01' }, { api_key: 'x' }]) {
    const res = await gw.http('PATCH', `/api/api-keys/${id}`, { token, body });
    t.equal(res.status, 400, `PATCH ${JSON.stringify(body)} → 400`);
  }

  const revoked = await gw.http('DELETE', `/api/api-keys/${id}`, { token });
  t.equal(revoked.status, 200);
  t.equal(revoked.body.status, 'revoked');
  t.ok(revoked.body.revoked_at);
  const after = await gw.http('GET', '/v1/credits', { token: created.body.api_key });
  t.equal(after.status, 401, 'a revoked key is refused at once');
  t.equal(after.body.error.reason, 'revoked_api_key');
  t.equal(after.body.error.code, 401);
  const patchRevoked = await gw.http('PATCH', `/api/api-keys/${id}`, { token, body: { name: 'x' } });
  t.equal(patchRevoked.status, 409);
  t.equal(patchRevoked.body.error.reason, 'key_revoked');
  t.equal(patchRevoked.body.error.code, 409);
  const revokeAgain = await gw.http('DELETE', `/api/api-keys/${id}`, { token });
  t.equal(revokeAgain.body.revoked_at, revoked.body.revoked_at, 'revoking twice keeps the first time');

  const missing = await gw.http('PATCH', '/api/api-keys/key_missing', { token, body: { name: 'x' } });
  t.equal(missing.status, 404);
});

t.test('keys are private to their account', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const alice = await session(gw, 'alice@example.com');
  const bob = await session(gw, 'bob@example.com');
  const key = await gw.http('POST', '/api/api-keys', { token: alice, body: { name: 'alice app' } });
  for (const [method, path] of [
    ['GET', `/api/api-keys/${key.body.id}`],
    ['PATCH', `/api/api-keys/${key.body.id}`],
    ['DELETE', `/api/api-keys/${key.body.id}`],
  ] as const) {
    const res = await gw.http(method, path, { token: bob, body: method === 'PATCH' ? { name: 'mine now' } : undefined });
    t.equal(res.status, 404, `bob: ${method} ${path} → 404`);
  }
  t.equal((await gw.http('GET', '/api/api-keys', { token: bob })).body.data.length, 0);
  t.equal((await gw.http('GET', '/v1/credits', { token: key.body.api_key })).status, 200, 'alice\'s key still works');
});

t.test('expired and exhausted keys', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const token = await session(gw);
  const created = await gw.http('POST', '/api/api-keys', { token, body: { name: 'soon', budget: 1 } });
  const record = await gw.app.store.apiKeys.byId(created.body.id);
  await sqlRun(gw, 'UPDATE api_keys SET expires_at = ? WHERE id = ?', Date.now() - 1000, created.body.id);
  if (record) gw.app.keyAuth.api.invalidate(record);
  const expired = await gw.http('GET', '/v1/credits', { token: created.body.api_key });
  t.equal(expired.status, 401);
  t.equal(expired.body.error.reason, 'expired_api_key');
  t.equal(expired.body.error.code, 401);
  const listed = await gw.http('GET', '/api/api-keys', { token });
  t.equal(listed.body.data[0].status, 'expired');

  const budgeted = await gw.http('POST', '/api/api-keys', { token, body: { name: 'budget', budget: 2 } });
  const account = await gw.app.store.accounts.byEmail('dev@example.com');
  await gw.app.store.ledger.credit('topup', { accountId: account?.id ?? '', amountMicros: 10_000_000, now: Date.now() });
  await gw.app.store.ledger.charge({ accountId: account?.id ?? '', amountMicros: 2_000_000, requestId: 'req_x', apiKeyId: budgeted.body.id, now: Date.now() });
  const status = await gw.http('GET', `/api/api-keys/${budgeted.body.id}`, { token });
  t.match(status.body, { status: 'exhausted', spent: 2, budget: 2 });
});

t.test('management keys through the session API', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const token = await session(gw);
  const created = await gw.http('POST', '/api/management-keys', { token, body: { name: 'ci tool', expires_at: '2032-01-01' } });
  t.equal(created.status, 200, 'the session API answers 200');
  t.match(created.body.management_key, /^akm-[0-9a-f]{64}$/);
  t.notOk('rate_limit' in created.body, 'management keys carry no rate limit');
  const bad = await gw.http('POST', '/api/management-keys', { token, body: { name: 'x', rate_limit: 5 } });
  t.equal(bad.status, 400, 'nor accept one');

  const me = await gw.http('GET', '/api/management/me', { token: created.body.management_key });
  t.equal(me.status, 200, 'the akm- key works on the management API');
  t.equal(me.body.account.email, 'dev@example.com');

  const list = await gw.http('GET', '/api/management-keys', { token });
  t.equal(list.body.data.length, 1);
  t.notOk(list.text.includes(created.body.management_key.slice(4)));

  const inference = await gw.http('GET', '/v1/credits', { token: created.body.management_key });
  t.equal(inference.status, 403, 'an akm- key cannot use /v1');
  t.equal(inference.body.error.message, 'management keys cannot make inference calls: use an sk- API key');

  t.equal((await gw.http('DELETE', `/api/management-keys/${created.body.id}`, { token })).status, 200);
  t.equal((await gw.http('GET', '/api/management/me', { token: created.body.management_key })).status, 401, 'revoked at once');
  t.equal((await gw.http('PATCH', `/api/management-keys/${created.body.id}`, { token, body: { name: 'x' } })).status, 405, 'management keys are not patched');
});
