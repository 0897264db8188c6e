import { randomBytes } from 'node:crypto';
import t from 'tap';
import type { HttpResponse, TestGateway } from '../support/gateway.js';
import { startTestGateway } from '../support/gateway.js';
import { sqlAll, sqlRun, sqlValue } from '../support/store.js';
import {
  AKM_FORMAT,
  createAccountWithKey,
  createApiKey,
  insertUsage,
  openUsageStream,
  sha256,
  SK_FORMAT,
  topup,
} from '../support/management.js';

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const micros = (inr: number): number => Math.round(inr * 1_000_000);

/**
 * Asserts the error envelope `{error: {message, type, code, reason, param}}` with the given
 * status (the HTTP status and the integer `code`) and reason.
 */
function isError(t: Tap, res: HttpResponse, status: number, reason: string, param?: string | null, label = ''): void {
  const what = `${label ? `${label}: ` : ''}${res.status} ${res.text}`;
  t.equal(res.status, status, `${label} → ${status}`);
  t.equal(res.body?.error?.reason, reason, `reason ${reason} (${what})`);
  t.equal(res.body?.error?.code, status, `code is the integer status ${status} (${label})`);
  t.type(res.body?.error?.message, 'string', `error.message is a string (${label})`);
  t.type(res.body?.error?.type, 'string', `error.type is a string (${label})`);
  if (param !== undefined) {
    t.equal(res.body?.error?.param, param, `param is ${param} (${label})`);
    if (param !== null) t.match(res.body?.error?.message, param, `the message names ${param} (${label})`);
  }
}

async function accountCount(gw: TestGateway): Promise<number> {
  const list = await gw.http('GET', '/api/management/accounts?limit=1000', { token: gw.adminKey });
  return list.body.data.length;
}

async function balanceOf(gw: TestGateway, account: string): Promise<number> {
  const res = await gw.http('GET', `/api/management/accounts/${encodeURIComponent(account)}/balance`, { token: gw.adminKey });
  if (res.status !== 200) throw new Error(`balance of ${account}: ${res.status} ${res.text}`);
  return res.body.balance;
}

/** The stored balance and the ledger's sum, both in µINR. */
async function storedBalanceAndSum(gw: TestGateway, accountId: string): Promise<{ balance: number; sum: number }> {
  const account = await gw.app.store.accounts.byId(accountId);
  if (!account) throw new Error(`no account ${accountId}`);
  return { balance: account.balanceMicros, sum: await gw.app.store.ledger.sum(accountId) };
}

/** Every string value in every row of every table. */
async function allStoredStrings(gw: TestGateway): Promise<string[]> {
  const tables = await sqlAll<{ name: string }>(
    gw,
    gw.app.store.backend === 'sqlite'
      ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
      : "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()",
  );
  const strings: string[] = [];
  for (const { name } of tables) {
    for (const row of await sqlAll(gw, `SELECT * FROM "${name}"`)) {
      for (const value of Object.values(row)) if (typeof value === 'string') strings.push(value);
    }
  }
  return strings;
}

t.test('credentials: only akm- keys, in Authorization: Bearer or x-api-key', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());

  const none = await gw.http('GET', '/api/management/me');
  isError(t, none, 401, 'missing_credentials', null, 'no credential');
  t.strictSame(Object.keys(none.body), ['error'], 'the body is only the error envelope');
  t.strictSame(Object.keys(none.body.error).sort(), ['code', 'message', 'param', 'reason', 'type']);
  t.equal(none.body.error.type, 'authentication_error');

  for (const [label, headers] of [
    ['Basic authorization', { authorization: 'Basic YWRtaW46cGFzc3dvcmQ=' }],
    ['empty bearer', { authorization: 'Bearer ' }],
    ['blank x-api-key', { 'x-api-key': '   ' }],
  ] as const) {
    const res = await gw.http('GET', '/api/management/me', { headers });
    isError(t, res, 401, 'missing_credentials', null, label);
    t.equal(res.body.error.type, 'authentication_error');
  }

  const unknownKey = `akm-${randomBytes(32).toString('hex')}`;
  for (const bad of [
    'akm-123',
    `akm-${'g'.repeat(64)}`,
    `akm-${gw.adminKey.slice(4).toUpperCase()}`,
    `${gw.adminKey}0`,
    gw.adminKey.slice(0, -1),
    'not-a-key-at-all',
    unknownKey,
  ]) {
    const res = await gw.http('GET', '/api/management/me', { token: bad });
    isError(t, res, 401, 'invalid_management_key', null, `credential ${bad.slice(0, 12)}…`);
    t.equal(res.body.error.type, 'authentication_error');
    t.notMatch(res.text, bad, 'the presented credential is not echoed');
  }

  const bearer = await gw.http('GET', '/api/management/me', { token: gw.adminKey });
  t.equal(bearer.status, 200, 'Authorization: Bearer akm-… is accepted');
  t.equal(bearer.body.account.email, gw.adminEmail);
  const lower = await gw.http('GET', '/api/management/me', { headers: { authorization: `bearer ${gw.adminKey}` } });
  t.equal(lower.status, 200, 'the Bearer scheme is case-insensitive');
  const xApiKey = await gw.http('GET', '/api/management/me', { headers: { 'x-api-key': gw.adminKey } });
  t.equal(xApiKey.status, 200, 'x-api-key: akm-… is accepted');
  t.equal(xApiKey.body.account.email, gw.adminEmail);
  const fallback = await gw.http('GET', '/api/management/me', { headers: { authorization: 'Basic Zm9vOmJhcg==', 'x-api-key': gw.adminKey } });
  t.equal(fallback.status, 200, 'x-api-key is used when Authorization is not a bearer token');

  // An sk- API key is refused on every management path with 403 api_key_not_allowed, and does nothing.
  const sk = await createApiKey(gw, gw.adminKey, 'me', { name: 'app key' });
  t.match(sk.secret, SK_FORMAT);
  const adminId = bearer.body.account.id as string;
  const accountsBefore = await accountCount(gw);
  const attempts: [string, string, unknown?][] = [
    ['GET', '/api/management/me'],
    ['GET', '/api/management/accounts'],
    ['POST', '/api/management/accounts', { email: 'sneaky@example.com', name: 'Sneaky', role: 'admin' }],
    ['GET', `/api/management/accounts/${adminId}`],
    ['GET', '/api/management/accounts/me/balance'],
    ['GET', '/api/management/accounts/me/ledger'],
    ['POST', '/api/management/accounts/me/topups', { amount: 1000 }],
    ['GET', '/api/management/accounts/me/api-keys'],
    ['POST', '/api/management/accounts/me/api-keys', { name: 'more' }],
    ['GET', `/api/management/api-keys/${sk.id}`],
    ['PATCH', `/api/management/api-keys/${sk.id}`, { rate_limit: 1 }],
    ['DELETE', `/api/management/api-keys/${sk.id}`],
    ['GET', '/api/management/accounts/me/management-keys'],
    ['POST', '/api/management/accounts/me/management-keys', { name: 'escalate' }],
    ['GET', '/api/management/usage'],
    ['GET', '/api/management/usage/stream'],
  ];
  for (const [method, path, body] of attempts) {
    for (const headers of [{ authorization: `Bearer ${sk.secret}` }, { 'x-api-key': sk.secret }] as Record<string, string>[]) {
      const res = await gw.http(method, path, { headers, ...(body === undefined ? {} : { body }) });
      isError(t, res, 403, 'api_key_not_allowed', null, `sk- key on ${method} ${path} (${Object.keys(headers)[0]})`);
      t.equal(res.body.error.type, 'permission_error');
    }
  }
  t.equal(await accountCount(gw), accountsBefore, 'the sk- key created no account');
  t.equal(await balanceOf(gw, 'me'), 0, 'the sk- key topped up nothing');
  const skAfter = await gw.http('GET', `/api/management/api-keys/${sk.id}`, { token: gw.adminKey });
  t.equal(skAfter.body.status, 'active', 'the sk- key could not revoke itself');
  t.equal(skAfter.body.rate_limit, 10_000, 'nor change its rate limit');
  const mkList = await gw.http('GET', '/api/management/accounts/me/management-keys', { token: gw.adminKey });
  t.equal(mkList.body.data.length, 1, 'nor mint a management key');
  const unknownSk = await gw.http('GET', '/api/management/me', { token: `sk-${randomBytes(32).toString('hex')}` });
  isError(t, unknownSk, 401, 'invalid_api_key', null, 'an unknown sk- key');

  // An expired sk- key is a 401, not a 403.
  const expiringSk = await createApiKey(gw, gw.adminKey, 'me', { name: 'expiring app key', expires_at: '2999-01-01' });
  t.equal((await gw.http('GET', '/api/management/me', { token: expiringSk.secret })).status, 403, 'valid until it expires');
  await sqlRun(gw, 'UPDATE api_keys SET expires_at = ? WHERE id = ?', Date.now() - 60_000, expiringSk.id);
  const expiringRecord = await gw.app.store.apiKeys.byId(expiringSk.id);
  if (expiringRecord) gw.app.keyAuth.api.invalidate(expiringRecord);
  isError(t, await gw.http('GET', '/api/management/me', { token: expiringSk.secret }), 401, 'expired_api_key', null, 'an expired sk- key');

  // A revoked sk- key is a 401, not a 403.
  const revokedSk = await gw.http('DELETE', `/api/management/api-keys/${sk.id}`, { token: gw.adminKey });
  t.equal(revokedSk.status, 200);
  isError(t, await gw.http('GET', '/api/management/me', { token: sk.secret }), 401, 'revoked_api_key', null, 'a revoked sk- key');

  // A revoked akm- key: 401 at once (the authenticator's cache is invalidated on revoke).
  const second = await gw.http('POST', '/api/management/accounts/me/management-keys', { token: gw.adminKey, body: { name: 'second' } });
  t.equal(second.status, 201);
  t.equal((await gw.http('GET', '/api/management/me', { token: second.body.management_key })).status, 200, 'the new akm- key works');
  const revoke = await gw.http('DELETE', `/api/management/management-keys/${second.body.id}`, { token: gw.adminKey });
  t.equal(revoke.status, 200);
  t.equal(revoke.body.status, 'revoked');
  t.match(revoke.body.revoked_at, ISO);
  for (const headers of [{ authorization: `Bearer ${second.body.management_key}` }, { 'x-api-key': second.body.management_key }] as Record<string, string>[]) {
    isError(t, await gw.http('GET', '/api/management/me', { headers }), 401, 'invalid_management_key', null, 'a revoked akm- key');
  }
  t.equal((await gw.http('GET', '/api/management/me', { token: gw.adminKey })).status, 200, 'the other key is unaffected');

  // An expired akm- key: the expiry is moved into the past in the database, then the cached record dropped.
  const third = await gw.http('POST', '/api/management/accounts/me/management-keys', { token: gw.adminKey, body: { name: 'expiring', expires_at: '2999-01-01' } });
  t.equal(third.status, 201);
  t.equal(third.body.expires_at, '2999-01-01T00:00:00.000Z');
  const thirdKey = third.body.management_key as string;
  t.equal((await gw.http('GET', '/api/management/me', { token: thirdKey })).status, 200, 'a key with a future expiry works (and is now cached)');
  await sqlRun(gw, 'UPDATE management_keys SET expires_at = ? WHERE id = ?', Date.now() - 60_000, third.body.id);
  const record = await gw.app.store.managementKeys.byId(third.body.id);
  t.ok(record, 'the key row exists');
  if (record) gw.app.keyAuth.management.invalidate(record);
  isError(t, await gw.http('GET', '/api/management/me', { token: thirdKey }), 401, 'invalid_management_key', null, 'an expired akm- key');
  isError(t, await gw.http('GET', '/api/management/me', { headers: { 'x-api-key': thirdKey } }), 401, 'invalid_management_key', null, 'an expired akm- key in x-api-key');
  const expiredView = await gw.http('GET', `/api/management/management-keys/${third.body.id}`, { token: gw.adminKey });
  t.equal(expiredView.body.status, 'expired', 'the key shows as expired');
});

t.test('GET /api/management/me', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());

  const me = await gw.http('GET', '/api/management/me', { token: gw.adminKey });
  t.equal(me.status, 200);
  t.match(me.headers['content-type'], /^application\/json/);
  t.strictSame(Object.keys(me.body).sort(), ['account', 'key']);
  t.match(me.body.account, { email: gw.adminEmail, name: 'Admin', role: 'admin', balance: 0 });
  t.match(me.body.account.id, /^acc_/);
  t.match(me.body.account.created_at, ISO);
  t.strictSame(Object.keys(me.body.account).sort(), ['balance', 'created_at', 'email', 'id', 'name', 'period_resets_at', 'role', 'spend_limit', 'spend_period', 'spent_this_period'], 'no password hash or other internals');
  t.match(me.body.key, { object: 'management_key', account_id: me.body.account.id, name: 'init', status: 'active', expires_at: null, revoked_at: null });
  t.match(me.body.key.id, /^mk_/);
  t.equal(me.body.key.masked_key, `akm-${gw.adminKey.slice(4, 8)}…${gw.adminKey.slice(-4)}`);
  t.notOk(me.text.includes(gw.adminKey.slice(4)), 'the secret is not in the response');
  t.notOk('key_hash' in me.body.key, 'no hash');
  t.notOk(me.text.includes(sha256(gw.adminKey)), 'the hash is not in the response');

  const user = await createAccountWithKey(gw, 'someone@example.com');
  const userMe = await gw.http('GET', '/api/management/me', { token: user.key });
  t.equal(userMe.status, 200);
  t.match(userMe.body.account, { id: user.id, email: 'someone@example.com', role: 'user', balance: 0 });
  t.match(userMe.body.key, { id: user.keyId, account_id: user.id, object: 'management_key' });
});

t.test('accounts', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const admin = (await gw.http('GET', '/api/management/me', { token: gw.adminKey })).body.account;

  const created = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email: 'Alice@Example.COM', name: '  Alice  ' } });
  t.equal(created.status, 201);
  t.match(created.body.id, /^acc_/);
  t.strictSame(
    created.body,
    { id: created.body.id, email: 'alice@example.com', name: 'Alice', role: 'user', balance: 0, spend_limit: null, spend_period: null, spent_this_period: null, period_resets_at: null, created_at: created.body.created_at },
    'email lowercased, name trimmed, role defaults to user',
  );
  t.match(created.body.created_at, ISO);
  const alice = created.body;

  const withPassword = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email: 'bob@example.com', name: 'Bob', password: 'bob-password', role: 'admin' } });
  t.equal(withPassword.status, 201);
  t.equal(withPassword.body.role, 'admin');
  t.notMatch(withPassword.text, /password/, 'no password or hash in the response');
  const login = await gw.http('POST', '/api/auth/login', { body: { email: 'bob@example.com', password: 'bob-password' } });
  t.equal(login.status, 200, 'the given password works for login');
  const noPasswordLogin = await gw.http('POST', '/api/auth/login', { body: { email: 'alice@example.com', password: 'anything-at-all' } });
  t.equal(noPasswordLogin.status, 401, 'an account created without a password cannot log in');
  const exact8 = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email: 'eight@example.com', name: 'Eight', password: '12345678' } });
  t.equal(exact8.status, 201, 'an 8-character password is enough');

  const count = await accountCount(gw);
  t.equal(count, 4);
  const invalid: [Record<string, unknown>, string, string][] = [
    [{ name: 'No Email' }, 'email', 'missing_field'],
    [{ email: null, name: 'Null Email' }, 'email', 'missing_field'],
    [{ email: 'not-an-email', name: 'X' }, 'email', 'invalid_field'],
    [{ email: 'a@b', name: 'X' }, 'email', 'invalid_field'],
    [{ email: 'a b@example.com', name: 'X' }, 'email', 'invalid_field'],
    [{ email: '@example.com', name: 'X' }, 'email', 'invalid_field'],
    [{ email: 42, name: 'X' }, 'email', 'invalid_field'],
    [{ email: 'x1@example.com' }, 'name', 'missing_field'],
    [{ email: 'x2@example.com', name: '' }, 'name', 'invalid_field'],
    [{ email: 'x3@example.com', name: '   ' }, 'name', 'invalid_field'],
    [{ email: 'x4@example.com', name: 'n'.repeat(201) }, 'name', 'invalid_field'],
    [{ email: 'x5@example.com', name: 'X', password: 'short' }, 'password', 'invalid_field'],
    [{ email: 'x6@example.com', name: 'X', password: '1234567' }, 'password', 'invalid_field'],
    [{ email: 'x7@example.com', name: 'X', password: 12345678 }, 'password', 'invalid_field'],
    [{ email: 'x8@example.com', name: 'X', role: 'root' }, 'role', 'invalid_field'],
    [{ email: 'x9@example.com', name: 'X', role: 'ADMIN' }, 'role', 'invalid_field'],
    [{ email: 'x10@example.com', name: 'X', balance: 100 }, 'balance', 'unknown_field'],
    [{ email: 'x11@example.com', name: 'X', is_admin: true }, 'is_admin', 'unknown_field'],
  ];
  for (const [body, param, code] of invalid) {
    const res = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body });
    isError(t, res, 400, code, param, `create ${JSON.stringify(body)}`);
    t.equal(res.body.error.type, 'invalid_request_error');
  }
  isError(t, await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: [] }), 400, 'invalid_body', null, 'array body');
  isError(t, await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, raw: '{"email":', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json', null, 'broken JSON');
  isError(t, await gw.http('POST', '/api/management/accounts', { token: gw.adminKey }), 400, 'invalid_body', null, 'no body');
  t.equal(await accountCount(gw), count, 'no invalid request created an account');

  for (const email of ['alice@example.com', 'ALICE@example.com', gw.adminEmail]) {
    const taken = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email, name: 'Again' } });
    isError(t, taken, 409, 'email_taken', 'email', `taken email ${email}`);
    t.equal(taken.body.error.type, 'conflict_error');
  }
  t.equal(await accountCount(gw), count, 'no duplicate account');

  // Listing
  const list = await gw.http('GET', '/api/management/accounts', { token: gw.adminKey });
  t.equal(list.status, 200);
  t.equal(list.body.object, 'list');
  const emails = list.body.data.map((a: { email: string }) => a.email);
  t.strictSame(emails, [gw.adminEmail, 'alice@example.com', 'bob@example.com', 'eight@example.com'], 'oldest first');
  t.strictSame(list.body.data[1], alice, 'list items are the presented account');

  const byEmail = await gw.http('GET', `/api/management/accounts?email=${encodeURIComponent('ALICE@example.com')}`, { token: gw.adminKey });
  t.equal(byEmail.status, 200);
  t.strictSame(byEmail.body, { object: 'list', data: [alice] }, '?email= finds one account, case-insensitively');
  const noEmail = await gw.http('GET', '/api/management/accounts?email=nobody%40example.com', { token: gw.adminKey });
  t.strictSame(noEmail.body, { object: 'list', data: [] });

  const page1 = await gw.http('GET', '/api/management/accounts?limit=2', { token: gw.adminKey });
  const page2 = await gw.http('GET', '/api/management/accounts?limit=2&offset=2', { token: gw.adminKey });
  const page3 = await gw.http('GET', '/api/management/accounts?limit=2&offset=4', { token: gw.adminKey });
  t.strictSame(page1.body.data.map((a: { email: string }) => a.email), emails.slice(0, 2));
  t.strictSame(page2.body.data.map((a: { email: string }) => a.email), emails.slice(2, 4));
  t.strictSame(page3.body.data, []);
  const offsetOnly = await gw.http('GET', '/api/management/accounts?offset=3', { token: gw.adminKey });
  t.strictSame(offsetOnly.body.data.map((a: { email: string }) => a.email), emails.slice(3));
  for (const query of ['limit=0', 'limit=1001', 'limit=abc', 'limit=-1', 'limit=1.5', 'offset=-1', 'offset=x']) {
    const res = await gw.http('GET', `/api/management/accounts?${query}`, { token: gw.adminKey });
    isError(t, res, 400, 'invalid_query', query.split('=')[0], `list ?${query}`);
  }

  // One account
  for (const ref of [alice.id, 'alice@example.com', encodeURIComponent('Alice@Example.com')]) {
    const res = await gw.http('GET', `/api/management/accounts/${ref}`, { token: gw.adminKey });
    t.equal(res.status, 200, `get by ${ref}`);
    t.strictSame(res.body, alice);
  }
  const meAccount = await gw.http('GET', '/api/management/accounts/me', { token: gw.adminKey });
  t.strictSame(meAccount.body, admin, '`me` is the caller');
  isError(t, await gw.http('GET', '/api/management/accounts/acc_doesnotexist', { token: gw.adminKey }), 404, 'account_not_found', undefined, 'unknown id');
  isError(t, await gw.http('GET', '/api/management/accounts/ghost@example.com', { token: gw.adminKey }), 404, 'account_not_found', undefined, 'unknown email');

  // A non-admin key: 403 on admin operations, 404 on other accounts, its own account visible.
  const user = await createAccountWithKey(gw, 'carol@example.com');
  isError(t, await gw.http('POST', '/api/management/accounts', { token: user.key, body: { email: 'new@example.com', name: 'New' } }), 403, 'admin_only', undefined, 'user creates account');
  isError(t, await gw.http('POST', '/api/management/accounts', { token: user.key, body: { email: 'new2@example.com', name: 'New', role: 'admin' } }), 403, 'admin_only', undefined, 'user creates admin');
  isError(t, await gw.http('GET', '/api/management/accounts', { token: user.key }), 403, 'admin_only', undefined, 'user lists accounts');
  isError(t, await gw.http('GET', `/api/management/accounts?email=${encodeURIComponent(gw.adminEmail)}`, { token: user.key }), 403, 'admin_only', undefined, 'user looks up by email');
  const existing = await gw.http('GET', `/api/management/accounts/${admin.id}`, { token: user.key });
  const missing = await gw.http('GET', '/api/management/accounts/acc_doesnotexist', { token: user.key });
  isError(t, existing, 404, 'account_not_found', undefined, 'user gets another account');
  isError(t, missing, 404, 'account_not_found', undefined, 'user gets a missing account');
  t.equal(existing.body.error.type, missing.body.error.type, 'another account looks like a missing one');
  t.notMatch(existing.text, gw.adminEmail, 'nothing of the other account leaks');
  for (const ref of [admin.id, gw.adminEmail, alice.id, 'bob@example.com']) {
    for (const suffix of ['', '/balance', '/ledger', '/api-keys', '/management-keys']) {
      const res = await gw.http('GET', `/api/management/accounts/${ref}${suffix}`, { token: user.key });
      isError(t, res, 404, 'account_not_found', undefined, `user GET ${ref}${suffix}`);
    }
  }
  for (const ref of [user.id, 'carol@example.com', 'me']) {
    const own = await gw.http('GET', `/api/management/accounts/${ref}`, { token: user.key });
    t.equal(own.status, 200, `user sees own account by ${ref}`);
    t.equal(own.body.id, user.id);
    t.equal(own.body.role, 'user');
    const balance = await gw.http('GET', `/api/management/accounts/${ref}/balance`, { token: user.key });
    t.strictSame(balance.body, { account_id: user.id, email: 'carol@example.com', balance: 0, currency: 'INR' }, `own balance by ${ref}`);
    const ledger = await gw.http('GET', `/api/management/accounts/${ref}/ledger`, { token: user.key });
    t.strictSame(ledger.body, { object: 'list', data: [] }, `own ledger by ${ref}`);
    const keys = await gw.http('GET', `/api/management/accounts/${ref}/management-keys`, { token: user.key });
    t.strictSame(keys.body.data.map((k: { id: string }) => k.id), [user.keyId], `own management keys by ${ref}`);
  }
});

t.test('wallet: top-ups, idempotency, balance and ledger', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const admin = (await gw.http('GET', '/api/management/me', { token: gw.adminKey })).body.account;
  const user = await createAccountWithKey(gw, 'wallet@example.com');
  const other = await createAccountWithKey(gw, 'other@example.com');
  const topupPath = `/api/management/accounts/${user.id}/topups`;

  const first = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 100.5, note: 'first top-up' } });
  t.equal(first.status, 201);
  t.strictSame(first.body, {
    topup: {
      id: first.body.topup.id,
      account_id: user.id,
      kind: 'topup',
      amount: 100.5,
      balance_after: 100.5,
      reference: null,
      request_id: null,
      api_key_id: null,
      note: 'first top-up',
      created_by: admin.id,
      created_at: first.body.topup.created_at,
    },
    balance: 100.5,
    replayed: false,
  });
  t.type(first.body.topup.id, 'number');
  t.match(first.body.topup.created_at, ISO);
  const byEmail = await gw.http('POST', `/api/management/accounts/${encodeURIComponent('WALLET@example.com')}/topups`, { token: gw.adminKey, body: { amount: 0.000001 } });
  t.equal(byEmail.status, 201, 'the account may be named by email');
  t.equal(byEmail.body.balance, 100.500001, 'one µINR is exact');

  // Amount rules
  const before = await balanceOf(gw, user.id);
  const badAmounts: [Record<string, unknown>, string][] = [
    [{}, 'missing_field'],
    [{ amount: null }, 'missing_field'],
    [{ amount: 0 }, 'invalid_field'],
    [{ amount: -5 }, 'invalid_field'],
    [{ amount: -0.000001 }, 'invalid_field'],
    [{ amount: '100' }, 'invalid_field'],
    [{ amount: true }, 'invalid_field'],
    [{ amount: [100] }, 'invalid_field'],
    [{ amount: 1.1234567 }, 'invalid_field'],
    [{ amount: 0.0000001 }, 'invalid_field'],
    [{ amount: 1_000_000_001 }, 'invalid_field'],
  ];
  for (const [body, code] of badAmounts) {
    const res = await gw.http('POST', topupPath, { token: gw.adminKey, body });
    isError(t, res, 400, code, 'amount', `top-up ${JSON.stringify(body)}`);
  }
  isError(t, await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 1, currency: 'INR' } }), 400, 'unknown_field', 'currency', 'unknown field');
  isError(t, await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 1, note: 'n'.repeat(501) } }), 400, 'invalid_field', 'note', 'long note');
  isError(t, await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 1, reference: 42 } }), 400, 'invalid_field', 'reference', 'numeric reference');
  isError(t, await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 1 }, headers: { 'idempotency-key': 'k'.repeat(201) } }), 400, 'invalid_field', 'Idempotency-Key', 'long Idempotency-Key');
  t.equal(await balanceOf(gw, user.id), before, 'no refused top-up changed the balance');

  // Idempotency-Key: one application per key
  const once = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 50 }, headers: { 'idempotency-key': 'order-1' } });
  t.equal(once.status, 201);
  t.equal(once.body.replayed, false);
  t.equal(once.body.topup.reference, 'order-1', 'the header becomes the reference');
  t.equal(once.body.balance, 150.500001);
  const again = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 50 }, headers: { 'idempotency-key': 'order-1' } });
  t.equal(again.status, 200, 'a retry answers 200');
  t.equal(again.body.replayed, true);
  t.strictSame(again.body.topup, once.body.topup, 'the retry returns the first entry');
  t.equal(again.body.balance, 150.500001, 'and the balance is unchanged');
  const conflict = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 60 }, headers: { 'idempotency-key': 'order-1' } });
  isError(t, conflict, 409, 'idempotency_conflict', undefined, 'same key, other amount');
  t.equal(conflict.body.error.param, 'reference');
  t.match(conflict.body.error.message, 'order-1', 'the message names the idempotency key');
  t.equal(conflict.body.error.type, 'conflict_error');
  const bodyRef = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 50, reference: 'order-1' } });
  t.equal(bodyRef.status, 200, 'the body reference is the same idempotency key');
  t.equal(bodyRef.body.replayed, true);
  const both = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 50, reference: 'order-1' }, headers: { 'idempotency-key': 'order-1' } });
  t.equal(both.status, 200, 'header and body agreeing is fine');
  const disagree = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 5, reference: 'order-2' }, headers: { 'idempotency-key': 'order-3' } });
  isError(t, disagree, 400, 'invalid_field', 'reference', 'header and body reference disagree');
  t.equal(await balanceOf(gw, user.id), 150.500001, 'exactly one application of order-1, nothing else');
  const ledgerNow = await gw.http('GET', `/api/management/accounts/${user.id}/ledger`, { token: gw.adminKey });
  t.equal(ledgerNow.body.data.filter((e: { reference: string | null }) => e.reference === 'order-1').length, 1, 'one ledger entry for order-1');
  t.equal(ledgerNow.body.data.filter((e: { reference: string | null }) => e.reference === 'order-2' || e.reference === 'order-3').length, 0, 'nothing for the refused reference');
  t.equal(ledgerNow.body.data.length, 3);

  const bodyOnly = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 10, reference: 'invoice-7' } });
  t.equal(bodyOnly.status, 201);
  const bodyOnlyAgain = await gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 10, reference: 'invoice-7' } });
  t.equal(bodyOnlyAgain.status, 200);
  t.equal(bodyOnlyAgain.body.topup.id, bodyOnly.body.topup.id);
  t.equal(await balanceOf(gw, user.id), 160.500001);

  // A reference is per account: the same key on another account is a separate top-up.
  const otherAccount = await gw.http('POST', `/api/management/accounts/${other.id}/topups`, { token: gw.adminKey, body: { amount: 50 }, headers: { 'idempotency-key': 'order-1' } });
  t.equal(otherAccount.status, 201);
  t.equal(otherAccount.body.topup.account_id, other.id);
  t.equal(await balanceOf(gw, other.id), 50);
  t.equal(await balanceOf(gw, user.id), 160.500001, 'the first account is unaffected');

  // Concurrent identical retries apply once.
  const parallel = await Promise.all(
    Array.from({ length: 20 }, () => gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 7.25, note: 'parallel' }, headers: { 'idempotency-key': 'burst-1' } })),
  );
  const statuses = parallel.map((r) => r.status).sort();
  t.strictSame(statuses, [...Array(19).fill(200), 201], 'one 201 and nineteen 200s');
  t.equal(parallel.filter((r) => r.body.replayed === false).length, 1, 'exactly one applied');
  t.equal(new Set(parallel.map((r) => r.body.topup.id)).size, 1, 'all answers name the same entry');
  t.equal(await balanceOf(gw, user.id), 167.750001, 'the balance rose by 7.25 once');
  const [burstEntries] = await sqlAll<{ n: number }>(gw, "SELECT count(*) AS n FROM ledger WHERE reference = 'burst-1'");
  t.equal(burstEntries?.n, 1, 'one ledger row for the burst');

  // Concurrent distinct top-ups all apply.
  const distinct = await Promise.all(
    Array.from({ length: 10 }, (_, i) => gw.http('POST', topupPath, { token: gw.adminKey, body: { amount: 1 }, headers: { 'idempotency-key': `distinct-${i}` } })),
  );
  t.ok(distinct.every((r) => r.status === 201), 'each distinct key applies');
  t.equal(await balanceOf(gw, user.id), 177.750001);

  // Who may top up
  isError(t, await gw.http('POST', topupPath, { token: user.key, body: { amount: 1000 } }), 403, 'admin_only', undefined, 'user tops up own account');
  isError(t, await gw.http('POST', '/api/management/accounts/me/topups', { token: user.key, body: { amount: 1000 } }), 403, 'admin_only', undefined, 'user tops up me');
  isError(t, await gw.http('POST', `/api/management/accounts/${other.id}/topups`, { token: user.key, body: { amount: 1000 } }), 403, 'admin_only', undefined, 'user tops up another');
  isError(t, await gw.http('POST', '/api/management/accounts/acc_nope/topups', { token: gw.adminKey, body: { amount: 1 } }), 404, 'account_not_found', undefined, 'unknown account');
  t.equal(await balanceOf(gw, user.id), 177.750001, 'no refused top-up applied');

  // Balance endpoint
  const balance = await gw.http('GET', `/api/management/accounts/${user.id}/balance`, { token: gw.adminKey });
  t.strictSame(balance.body, { account_id: user.id, email: 'wallet@example.com', balance: 177.750001, currency: 'INR' });
  const ownBalance = await gw.http('GET', '/api/management/accounts/me/balance', { token: user.key });
  t.strictSame(ownBalance.body, balance.body, 'the user sees the same balance');

  // Charges recorded directly in the store; the balance stays the ledger's sum.
  const sk = await createApiKey(gw, gw.adminKey, user.id, { name: 'charged' });
  const charge = await gw.app.store.ledger.charge({ accountId: user.id, amountMicros: 3_250_000, requestId: 'req_charge_1', apiKeyId: sk.id, now: Date.now() });
  t.equal(charge.replayed, false);
  const chargeAgain = await gw.app.store.ledger.charge({ accountId: user.id, amountMicros: 3_250_000, requestId: 'req_charge_1', apiKeyId: sk.id, now: Date.now() });
  t.equal(chargeAgain.replayed, true, 'a request is charged once');
  await gw.app.store.ledger.charge({ accountId: user.id, amountMicros: 0, requestId: 'req_charge_free', now: Date.now() });
  await gw.app.store.ledger.charge({ accountId: user.id, amountMicros: 1, requestId: 'req_charge_tiny', apiKeyId: sk.id, now: Date.now() });
  t.equal(await balanceOf(gw, user.id), 174.5, 'the charges are in the balance');
  const keyView = await gw.http('GET', `/api/management/api-keys/${sk.id}`, { token: gw.adminKey });
  t.equal(keyView.body.spent, 3.250001, "the key's spent counts its charges");

  // Ledger: newest first, balance_after chains, amounts sum to the balance.
  const ledger = await gw.http('GET', `/api/management/accounts/${user.id}/ledger`, { token: gw.adminKey });
  t.equal(ledger.status, 200);
  const entries = ledger.body.data as { id: number; amount: number; balance_after: number; kind: string; request_id: string | null; api_key_id: string | null }[];
  t.equal(entries.length, 3 + 1 + 1 + 10 + 3, 'every applied entry, nothing more');
  const ids = entries.map((e) => e.id);
  t.strictSame(ids, [...ids].sort((a, b) => b - a), 'newest first');
  t.match(entries[0], { kind: 'charge', amount: -0.000001, request_id: 'req_charge_tiny', api_key_id: sk.id, balance_after: 174.5 });
  t.match(entries[2], { kind: 'charge', amount: -3.25, request_id: 'req_charge_1', api_key_id: sk.id });
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const older = entries[i + 1];
    const previousBalance = older ? micros(older.balance_after) : 0;
    t.equal(micros(entry.balance_after), previousBalance + micros(entry.amount), `entry ${entry.id}: balance_after = previous + amount`);
  }
  const total = entries.reduce((sum, e) => sum + micros(e.amount), 0);
  t.equal(total, micros(174.5), 'the ledger sums to the balance');
  const stored = await storedBalanceAndSum(gw, user.id);
  t.equal(stored.balance, 174_500_000);
  t.equal(stored.sum, stored.balance, 'store: balance equals the ledger sum');
  for (const account of [admin.id, other.id]) {
    const s = await storedBalanceAndSum(gw, account);
    t.equal(s.sum, s.balance, `store: balance equals the ledger sum for ${account}`);
  }
  // A charge larger than the balance still keeps the invariant.
  await gw.app.store.ledger.charge({ accountId: other.id, amountMicros: 80_000_000, requestId: 'req_overdraw', now: Date.now() });
  const overdrawn = await storedBalanceAndSum(gw, other.id);
  t.equal(overdrawn.balance, -30_000_000);
  t.equal(overdrawn.sum, overdrawn.balance, 'store: invariant after an overdraw');
  t.equal(await balanceOf(gw, other.id), -30);

  // Paging with before
  const collected: number[] = [];
  let cursor: number | undefined;
  for (let page = 0; page < 20; page++) {
    const res = await gw.http('GET', `/api/management/accounts/${user.id}/ledger?limit=5${cursor === undefined ? '' : `&before=${cursor}`}`, { token: gw.adminKey });
    t.equal(res.status, 200);
    const pageIds = res.body.data.map((e: { id: number }) => e.id) as number[];
    t.ok(pageIds.length <= 5, 'a page holds at most limit entries');
    if (cursor !== undefined) t.ok(pageIds.every((id) => id < (cursor as number)), 'a page holds only entries before the cursor');
    collected.push(...pageIds);
    if (pageIds.length < 5) break;
    cursor = pageIds.at(-1);
  }
  t.strictSame(collected, ids, 'the pages together are the whole ledger, in order, once');
  for (const query of ['limit=0', 'limit=1001', 'limit=x', 'before=0', 'before=x', 'before=-3']) {
    const res = await gw.http('GET', `/api/management/accounts/${user.id}/ledger?${query}`, { token: gw.adminKey });
    isError(t, res, 400, 'invalid_query', query.split('=')[0], `ledger ?${query}`);
  }
  const emptyBefore = await gw.http('GET', `/api/management/accounts/${user.id}/ledger?before=`, { token: gw.adminKey });
  // Regression: an empty `before=` was read as before=0 and gave an empty page.
  t.equal(emptyBefore.status, 200);
  t.strictSame(emptyBefore.body.data.map((e: { id: number }) => e.id), ids.slice(0, 100), 'an empty before= is ignored, not an empty page');
  const userLedger = await gw.http('GET', '/api/management/accounts/me/ledger', { token: user.key });
  t.strictSame(userLedger.body.data.map((e: { id: number }) => e.id), ids, 'the user reads its own ledger');
  isError(t, await gw.http('GET', `/api/management/accounts/${other.id}/ledger`, { token: user.key }), 404, 'account_not_found', undefined, "another account's ledger");
});

t.test('keys of an account: api-keys and management-keys', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const admin = (await gw.http('GET', '/api/management/me', { token: gw.adminKey })).body.account;
  const user = await createAccountWithKey(gw, 'keys@example.com');
  const other = await createAccountWithKey(gw, 'neighbour@example.com');

  // Creation shows the secret once.
  const created = await gw.http('POST', `/api/management/accounts/${user.id}/api-keys`, { token: gw.adminKey, body: { name: 'production' } });
  t.equal(created.status, 201);
  const secret = created.body.api_key as string;
  t.match(secret, SK_FORMAT);
  t.strictSame(created.body, {
    api_key: secret,
    id: created.body.id,
    object: 'api_key',
    account_id: user.id,
    name: 'production',
    masked_key: `sk-${secret.slice(3, 7)}…${secret.slice(-4)}`,
    rate_limit: 10_000,
    cache: true,
    budget: 0,
    spent: 0,
    models: [],
    allowed_ips: [],
    max_parallel: null,
    tpm_limit: null,
    budget_period: null,
    spent_this_period: 0,
    period_resets_at: null,
    status: 'active',
    expires_at: null,
    created_at: created.body.created_at,
    last_used_at: null,
    revoked_at: null,
  });
  t.match(created.body.id, /^key_/);
  t.match(created.body.created_at, ISO);
  const { api_key: _secret, ...presented } = created.body;

  const list = await gw.http('GET', `/api/management/accounts/${user.id}/api-keys`, { token: gw.adminKey });
  t.equal(list.status, 200);
  t.strictSame(list.body, { object: 'list', data: [presented] }, 'the list holds the key without its secret');
  t.notOk(list.text.includes(secret.slice(3)), 'the list never includes the secret');
  const got = await gw.http('GET', `/api/management/api-keys/${created.body.id}`, { token: gw.adminKey });
  t.strictSame(got.body, presented, 'get shows the key without its secret');
  t.notOk(got.text.includes(secret.slice(3)), 'get never includes the secret');
  const ownList = await gw.http('GET', '/api/management/accounts/me/api-keys', { token: user.key });
  t.strictSame(ownList.body.data, [presented], 'the user lists its own key');
  t.notOk(ownList.text.includes(secret.slice(3)));

  const row = (await sqlAll(gw, 'SELECT * FROM api_keys WHERE id = ?', created.body.id))[0] as Record<string, unknown>;
  t.equal(row.key_hash, sha256(secret), 'the database holds the SHA-256 of the key');
  t.notOk(Object.values(row).some((v) => typeof v === 'string' && v.includes(secret.slice(3))), 'no column holds the secret');

  const mk = await gw.http('POST', `/api/management/accounts/${user.id}/management-keys`, { token: gw.adminKey, body: { name: 'ci' } });
  t.equal(mk.status, 201);
  const mkSecret = mk.body.management_key as string;
  t.match(mkSecret, AKM_FORMAT);
  t.strictSame(mk.body, {
    management_key: mkSecret,
    id: mk.body.id,
    object: 'management_key',
    account_id: user.id,
    name: 'ci',
    masked_key: `akm-${mkSecret.slice(4, 8)}…${mkSecret.slice(-4)}`,
    status: 'active',
    expires_at: null,
    created_at: mk.body.created_at,
    last_used_at: null,
    revoked_at: null,
  }, 'a management key has no rate limit, budget or spent');
  t.match(mk.body.id, /^mk_/);
  const mkList = await gw.http('GET', `/api/management/accounts/${user.id}/management-keys`, { token: gw.adminKey });
  t.strictSame(mkList.body.data.map((k: { id: string }) => k.id), [user.keyId, mk.body.id]);
  t.notOk(mkList.text.includes(mkSecret.slice(4)), 'the list never includes the secret');
  t.notOk(mkList.text.includes(user.key.slice(4)));
  t.notOk('management_key' in mkList.body.data[1]);
  const mkGot = await gw.http('GET', `/api/management/management-keys/${mk.body.id}`, { token: gw.adminKey });
  t.equal(mkGot.status, 200);
  t.notOk(mkGot.text.includes(mkSecret.slice(4)), 'get never includes the secret');
  const mkRow = (await sqlAll(gw, 'SELECT * FROM management_keys WHERE id = ?', mk.body.id))[0] as Record<string, unknown>;
  t.equal(mkRow.key_hash, sha256(mkSecret));
  const everything = await allStoredStrings(gw);
  for (const [label, key] of [['sk-', secret], ['akm-', mkSecret], ['admin akm-', gw.adminKey], ['user akm-', user.key]] as const) {
    t.notOk(everything.some((v) => v.includes(key.slice(key.indexOf('-') + 1))), `no stored value holds the ${label} secret`);
    t.ok(everything.includes(sha256(key)), `the ${label} key's hash is stored`);
  }

  // The new management key works and is limited to its account.
  const mkMe = await gw.http('GET', '/api/management/me', { token: mkSecret });
  t.equal(mkMe.status, 200);
  t.equal(mkMe.body.account.id, user.id);
  t.equal(mkMe.body.key.id, mk.body.id);
  isError(t, await gw.http('GET', '/api/management/accounts', { token: mkSecret }), 403, 'admin_only', undefined, 'new user key lists accounts');
  isError(t, await gw.http('GET', `/api/management/accounts/${admin.id}`, { token: mkSecret }), 404, 'account_not_found', undefined, 'new user key reads the admin');
  isError(t, await gw.http('GET', `/api/management/accounts/${other.id}/api-keys`, { token: mkSecret }), 404, 'account_not_found', undefined, "new user key lists a neighbour's keys");
  t.equal((await gw.http('GET', '/api/management/accounts/me/api-keys', { token: mkSecret })).body.data.length, 1, 'it sees its own account');

  // Validation
  const countKeys = async (): Promise<number> => (await gw.http('GET', `/api/management/accounts/${user.id}/api-keys`, { token: gw.adminKey })).body.data.length;
  const keysBefore = await countKeys();
  const badCreates: [Record<string, unknown>, string, string][] = [
    [{}, 'name', 'missing_field'],
    [{ name: '' }, 'name', 'invalid_field'],
    [{ name: 'n'.repeat(101) }, 'name', 'invalid_field'],
    [{ name: 7 }, 'name', 'invalid_field'],
    [{ name: 'k', rate_limit: 0 }, 'rate_limit', 'invalid_field'],
    [{ name: 'k', rate_limit: 10_001 }, 'rate_limit', 'invalid_field'],
    [{ name: 'k', rate_limit: '100' }, 'rate_limit', 'invalid_field'],
    [{ name: 'k', rate_limit: 1.5 }, 'rate_limit', 'invalid_field'],
    [{ name: 'k', rate_limit: -1 }, 'rate_limit', 'invalid_field'],
    [{ name: 'k', rate_limit: null }, 'rate_limit', 'invalid_field'],
    [{ name: 'k', budget: -1 }, 'budget', 'invalid_field'],
    [{ name: 'k', budget: '10' }, 'budget', 'invalid_field'],
    [{ name: 'k', budget: 1.0000001 }, 'budget', 'invalid_field'],
    [{ name: 'k', expires_at: '2020-01-01T00:00:00Z' }, 'expires_at', 'invalid_field'],
    [{ name: 'k', expires_at: '2020-01-01' }, 'expires_at', 'invalid_field'],
    [{ name: 'k', expires_at: new Date(Date.now() - 60_000).toISOString() }, 'expires_at', 'invalid_field'],
    [{ name: 'k', expires_at: '2026-02-30' }, 'expires_at', 'invalid_field'],
    [{ name: 'k', expires_at: '2999-13-01' }, 'expires_at', 'invalid_field'],
    [{ name: 'k', expires_at: '2999-12-31T10:00:00' }, 'expires_at', 'invalid_field'],
    [{ name: 'k', expires_at: 'tomorrow' }, 'expires_at', 'invalid_field'],
    [{ name: 'k', expires_at: 32_503_680_000 }, 'expires_at', 'invalid_field'],
    [{ name: 'k', scopes: ['chat'] }, 'scopes', 'unknown_field'],
    [{ name: 'k', ratelimit: 5 }, 'ratelimit', 'unknown_field'],
  ];
  for (const [body, param, code] of badCreates) {
    const res = await gw.http('POST', `/api/management/accounts/${user.id}/api-keys`, { token: gw.adminKey, body });
    isError(t, res, 400, code, param, `create api key ${JSON.stringify(body)}`);
  }
  t.equal(await countKeys(), keysBefore, 'no refused create made a key');
  for (const [body, param] of [
    [{ name: 'm', rate_limit: 5 }, 'rate_limit'],
    [{ name: 'm', budget: 5 }, 'budget'],
  ] as const) {
    isError(t, await gw.http('POST', `/api/management/accounts/${user.id}/management-keys`, { token: gw.adminKey, body }), 400, 'unknown_field', param, `management key with ${param}`);
  }
  isError(t, await gw.http('POST', `/api/management/accounts/${user.id}/management-keys`, { token: gw.adminKey, body: { name: 'm', expires_at: '2026-02-30' } }), 400, 'invalid_field', 'expires_at', 'management key, bad date');
  isError(t, await gw.http('POST', '/api/management/accounts/acc_nope/api-keys', { token: gw.adminKey, body: { name: 'x' } }), 404, 'account_not_found', undefined, 'key for an unknown account');

  const accepted = await createApiKey(gw, gw.adminKey, user.id, { name: 'limits', rate_limit: 1, budget: 0, expires_at: '2999-12-31' });
  t.match(accepted.body, { rate_limit: 1, budget: 0, expires_at: '2999-12-31T00:00:00.000Z', status: 'active' }, 'YYYY-MM-DD accepted; budget 0 is unlimited');
  const maxed = await createApiKey(gw, gw.adminKey, user.id, { name: 'max', rate_limit: 10_000, budget: 12.5, expires_at: '2999-06-01T05:30:00+05:30' });
  t.match(maxed.body, { rate_limit: 10_000, budget: 12.5, expires_at: '2999-06-01T00:00:00.000Z' }, 'an offset date-time is normalised to UTC');

  // PATCH
  const patched = await createApiKey(gw, gw.adminKey, user.id, { name: 'orig', rate_limit: 50, budget: 10, expires_at: '2999-01-01' });
  const patchPath = `/api/management/api-keys/${patched.id}`;
  const renamed = await gw.http('PATCH', patchPath, { token: gw.adminKey, body: { name: 'renamed' } });
  t.equal(renamed.status, 200);
  t.match(renamed.body, { name: 'renamed', rate_limit: 50, budget: 10, expires_at: '2999-01-01T00:00:00.000Z', status: 'active' }, 'omitted fields are kept');
  t.notOk('api_key' in renamed.body, 'PATCH does not show the secret');
  const rated = await gw.http('PATCH', patchPath, { token: user.key, body: { rate_limit: 75 } });
  t.equal(rated.status, 200, 'the owner may update its key');
  t.match(rated.body, { name: 'renamed', rate_limit: 75, budget: 10 });
  const unlimited = await gw.http('PATCH', patchPath, { token: gw.adminKey, body: { budget: 0 } });
  t.equal(unlimited.body.budget, 0, 'budget 0 makes it unlimited (shown as 0)');
  t.equal(unlimited.body.rate_limit, 75);
  const noExpiry = await gw.http('PATCH', patchPath, { token: gw.adminKey, body: { expires_at: null, budget: 2.5 } });
  t.match(noExpiry.body, { expires_at: null, budget: 2.5, name: 'renamed', rate_limit: 75 });
  const stored = await gw.app.store.apiKeys.byId(patched.id);
  t.match(stored, { name: 'renamed', rateLimit: 75, budgetMicros: 2_500_000, expiresAt: null }, 'the changes are stored');
  for (const [body, param, code] of [
    [{}, 'body', 'invalid_field'],
    [{ rate_limit: 0 }, 'rate_limit', 'invalid_field'],
    [{ rate_limit: '5' }, 'rate_limit', 'invalid_field'],
    [{ budget: -1 }, 'budget', 'invalid_field'],
    [{ expires_at: '2020-01-01' }, 'expires_at', 'invalid_field'],
    [{ name: '  ' }, 'name', 'invalid_field'],
    [{ name: null }, 'name', 'invalid_field'],
    [{ spent: 0 }, 'spent', 'unknown_field'],
    [{ name: 'x', account_id: other.id }, 'account_id', 'unknown_field'],
  ] as const) {
    isError(t, await gw.http('PATCH', patchPath, { token: gw.adminKey, body }), 400, code, param, `PATCH ${JSON.stringify(body)}`);
  }
  isError(t, await gw.http('PATCH', patchPath, { token: gw.adminKey }), 400, 'invalid_field', 'body', 'PATCH without a body');
  const unchanged = await gw.http('GET', patchPath, { token: gw.adminKey });
  t.match(unchanged.body, { name: 'renamed', rate_limit: 75, budget: 2.5, expires_at: null, account_id: user.id }, 'refused PATCHes changed nothing');
  isError(t, await gw.http('PATCH', '/api/management/api-keys/key_nope', { token: gw.adminKey, body: { name: 'x' } }), 404, 'api_key_not_found', undefined, 'PATCH unknown key');
  const mkPatch = await gw.http('PATCH', `/api/management/management-keys/${mk.body.id}`, { token: gw.adminKey, body: { name: 'x' } });
  t.equal(mkPatch.status, 405, 'management keys cannot be updated');
  t.match(mkPatch.headers.allow, /DELETE/);

  // Revoke
  t.equal((await gw.http('GET', '/api/management/me', { token: secret })).status, 403, 'the sk- key is valid (403 on management) before revoking');
  const revoked = await gw.http('DELETE', `/api/management/api-keys/${created.body.id}`, { token: gw.adminKey });
  t.equal(revoked.status, 200);
  t.match(revoked.body, { id: created.body.id, status: 'revoked' });
  t.match(revoked.body.revoked_at, ISO);
  t.notOk('api_key' in revoked.body);
  isError(t, await gw.http('GET', '/api/management/me', { token: secret }), 401, 'revoked_api_key', null, 'the revoked sk- key at once');
  const revokedAgain = await gw.http('DELETE', `/api/management/api-keys/${created.body.id}`, { token: gw.adminKey });
  t.equal(revokedAgain.status, 200, 'revoking twice is harmless');
  t.equal(revokedAgain.body.revoked_at, revoked.body.revoked_at, 'and keeps the first revocation time');
  const patchRevoked = await gw.http('PATCH', `/api/management/api-keys/${created.body.id}`, { token: gw.adminKey, body: { name: 'resurrect' } });
  isError(t, patchRevoked, 409, 'key_revoked', undefined, 'PATCH a revoked key');
  t.equal((await gw.http('GET', `/api/management/api-keys/${created.body.id}`, { token: gw.adminKey })).body.name, 'production', 'the revoked key kept its name');
  isError(t, await gw.http('DELETE', '/api/management/api-keys/key_nope', { token: gw.adminKey }), 404, 'api_key_not_found', undefined, 'revoke unknown key');
  isError(t, await gw.http('DELETE', '/api/management/management-keys/mk_nope', { token: gw.adminKey }), 404, 'management_key_not_found', undefined, 'revoke unknown management key');
  isError(t, await gw.http('GET', `/api/management/api-keys/${mk.body.id}`, { token: gw.adminKey }), 404, 'api_key_not_found', undefined, 'a management key id is not an api key');
  const mkRevoked = await gw.http('DELETE', `/api/management/management-keys/${mk.body.id}`, { token: user.key });
  t.equal(mkRevoked.status, 200, 'the owner revokes its own management key');
  t.equal(mkRevoked.body.status, 'revoked');
  isError(t, await gw.http('GET', '/api/management/me', { token: mkSecret }), 401, 'invalid_management_key', null, 'the revoked akm- key');

  // Status: active, expired, exhausted, revoked
  const budgeted = await createApiKey(gw, gw.adminKey, user.id, { name: 'budgeted', budget: 1 });
  t.equal(budgeted.body.status, 'active');
  await gw.app.store.ledger.charge({ accountId: user.id, amountMicros: 500_000, requestId: 'req_budget_1', apiKeyId: budgeted.id, now: Date.now() });
  const half = await gw.http('GET', `/api/management/api-keys/${budgeted.id}`, { token: gw.adminKey });
  t.match(half.body, { spent: 0.5, budget: 1, status: 'active' }, 'below the budget it is active');
  await gw.app.store.ledger.charge({ accountId: user.id, amountMicros: 500_000, requestId: 'req_budget_2', apiKeyId: budgeted.id, now: Date.now() });
  const exhausted = await gw.http('GET', `/api/management/api-keys/${budgeted.id}`, { token: gw.adminKey });
  t.match(exhausted.body, { spent: 1, budget: 1, status: 'exhausted' }, 'spent = budget is exhausted');
  const listed = await gw.http('GET', `/api/management/accounts/${user.id}/api-keys`, { token: gw.adminKey });
  t.equal(listed.body.data.find((k: { id: string }) => k.id === budgeted.id)?.status, 'exhausted', 'the list shows it too');
  const raised = await gw.http('PATCH', `/api/management/api-keys/${budgeted.id}`, { token: gw.adminKey, body: { budget: 5 } });
  t.match(raised.body, { status: 'active', budget: 5, spent: 1 }, 'a raised budget makes it active again');
  const lowered = await gw.http('PATCH', `/api/management/api-keys/${budgeted.id}`, { token: gw.adminKey, body: { budget: 0.25 } });
  t.equal(lowered.body.status, 'exhausted', 'a budget below spent is exhausted');

  const expiring = await createApiKey(gw, gw.adminKey, user.id, { name: 'expiring', expires_at: '2999-01-01' });
  await sqlRun(gw, 'UPDATE api_keys SET expires_at = ? WHERE id = ?', Date.now() - 1000, expiring.id);
  const expiredView = await gw.http('GET', `/api/management/api-keys/${expiring.id}`, { token: gw.adminKey });
  t.equal(expiredView.body.status, 'expired');
  const extended = await gw.http('PATCH', `/api/management/api-keys/${expiring.id}`, { token: gw.adminKey, body: { expires_at: '2999-02-01' } });
  t.equal(extended.status, 200, 'an expired key can be extended');
  t.equal(extended.body.status, 'active');
  await sqlRun(gw, 'UPDATE api_keys SET expires_at = ? WHERE id = ?', Date.now() - 1000, expiring.id);
  const revokedExpired = await gw.http('DELETE', `/api/management/api-keys/${expiring.id}`, { token: gw.adminKey });
  t.equal(revokedExpired.body.status, 'revoked', 'revoked wins over expired');

  // Another account's keys: 404 for a non-admin, nothing changes.
  const neighbourKey = await createApiKey(gw, gw.adminKey, other.id, { name: 'neighbour' });
  const neighbourMk = await gw.http('POST', `/api/management/accounts/${other.id}/management-keys`, { token: gw.adminKey, body: { name: 'neighbour-mk' } });
  const neighbourKeysBefore = (await gw.http('GET', `/api/management/accounts/${other.id}/api-keys`, { token: gw.adminKey })).body.data.length;
  for (const [method, path, body] of [
    ['GET', `/api/management/api-keys/${neighbourKey.id}`],
    ['PATCH', `/api/management/api-keys/${neighbourKey.id}`, { rate_limit: 1 }],
    ['DELETE', `/api/management/api-keys/${neighbourKey.id}`],
  ] as const) {
    const res = await gw.http(method, path, { token: user.key, ...(body === undefined ? {} : { body }) });
    isError(t, res, 404, 'api_key_not_found', undefined, `user ${method} neighbour api key`);
    t.notMatch(res.text, 'neighbour@example.com');
  }
  for (const method of ['GET', 'DELETE']) {
    isError(t, await gw.http(method, `/api/management/management-keys/${neighbourMk.body.id}`, { token: user.key }), 404, 'management_key_not_found', undefined, `user ${method} neighbour management key`);
    isError(t, await gw.http(method, `/api/management/management-keys/${(await gw.app.store.managementKeys.listByAccount(admin.id))[0]?.id}`, { token: user.key }), 404, 'management_key_not_found', undefined, `user ${method} admin management key`);
  }
  for (const segment of ['api-keys', 'management-keys']) {
    isError(t, await gw.http('GET', `/api/management/accounts/${other.id}/${segment}`, { token: user.key }), 404, 'account_not_found', undefined, `user lists neighbour ${segment}`);
    isError(t, await gw.http('POST', `/api/management/accounts/${other.id}/${segment}`, { token: user.key, body: { name: 'planted' } }), 404, 'account_not_found', undefined, `user creates neighbour ${segment}`);
  }
  const neighbourAfter = await gw.http('GET', `/api/management/api-keys/${neighbourKey.id}`, { token: gw.adminKey });
  t.match(neighbourAfter.body, { status: 'active', rate_limit: 10_000 }, "the neighbour's key is untouched");
  t.equal((await gw.http('GET', `/api/management/accounts/${other.id}/api-keys`, { token: gw.adminKey })).body.data.length, neighbourKeysBefore, 'no key planted');
  t.equal((await gw.http('GET', '/api/management/me', { token: neighbourMk.body.management_key })).status, 200, "the neighbour's akm- key still works");
  t.equal((await gw.http('GET', '/api/management/me', { token: gw.adminKey })).status, 200, "the admin's akm- key still works");

  // A user creates and manages its own keys.
  const ownSk = await createApiKey(gw, user.key, 'me', { name: 'self-made' });
  t.equal(ownSk.body.account_id, user.id);
  const ownMk = await gw.http('POST', '/api/management/accounts/me/management-keys', { token: user.key, body: { name: 'self-made-mk' } });
  t.equal(ownMk.status, 201);
  t.equal(ownMk.body.account_id, user.id);
  const ownMe = await gw.http('GET', '/api/management/me', { token: ownMk.body.management_key });
  t.equal(ownMe.body.account.id, user.id, 'the self-made akm- key acts for the user');
  t.equal(ownMe.body.account.role, 'user');
  isError(t, await gw.http('POST', '/api/management/accounts', { token: ownMk.body.management_key, body: { email: 'x@example.com', name: 'X' } }), 403, 'admin_only', undefined, 'self-made key is not admin');
  t.equal((await gw.http('DELETE', `/api/management/api-keys/${ownSk.id}`, { token: user.key })).body.status, 'revoked', 'the user revokes its own key');
  t.equal((await gw.http('GET', `/api/management/api-keys/${ownSk.id}`, { token: gw.adminKey })).status, 200, 'the admin sees any account\'s key');
});

t.test('usage: listing with filters and paging', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const admin = (await gw.http('GET', '/api/management/me', { token: gw.adminKey })).body.account;
  const a = await createAccountWithKey(gw, 'usage-a@example.com');
  const b = await createAccountWithKey(gw, 'usage-b@example.com');
  const kA = await createApiKey(gw, gw.adminKey, a.id, { name: 'a1' });
  const kA2 = await createApiKey(gw, gw.adminKey, a.id, { name: 'a2' });
  const kB = await createApiKey(gw, gw.adminKey, b.id, { name: 'b1' });

  const T0 = Date.parse('2025-06-01T00:00:00Z');
  const H = 3_600_000;
  const r1 = await insertUsage(gw, { accountId: a.id, apiKeyId: kA.id, model: 'm1', createdAt: T0, costMicros: 2_500_001, stream: true, cacheReadTokens: 3, cacheWriteTokens: 4 });
  const r2 = await insertUsage(gw, { accountId: a.id, apiKeyId: kA2.id, model: 'm2', createdAt: T0 + H });
  const r3 = await insertUsage(gw, { accountId: b.id, apiKeyId: kB.id, model: 'm1', createdAt: T0 + 2 * H });
  const r4 = await insertUsage(gw, { accountId: a.id, apiKeyId: kA.id, model: 'm1', createdAt: T0 + 3 * H, status: 502, errorType: 'upstream_error', costMicros: 0 });
  const r5 = await insertUsage(gw, { accountId: admin.id, apiKeyId: null, model: 'm2', createdAt: T0 + 4 * H });
  const r6 = await insertUsage(gw, { accountId: b.id, apiKeyId: kB.id, model: 'm2', createdAt: T0 + 5 * H });
  const ids = async (query: string, token = gw.adminKey): Promise<number[]> => {
    const res = await gw.http('GET', `/api/management/usage${query}`, { token });
    if (res.status !== 200) throw new Error(`usage ${query}: ${res.status} ${res.text}`);
    return res.body.data.map((row: { id: number }) => row.id);
  };

  const all = await gw.http('GET', '/api/management/usage', { token: gw.adminKey });
  t.equal(all.status, 200);
  t.equal(all.body.object, 'list');
  t.strictSame(all.body.data.map((row: { id: number }) => row.id), [r6.id, r5.id, r4.id, r3.id, r2.id, r1.id], 'admin sees every row, newest first');
  t.equal(all.body.has_more, false);
  t.equal(all.body.next_before, null);
  t.strictSame(all.body.data[5], {
    id: r1.id,
    request_id: r1.requestId,
    account_id: a.id,
    account_email: 'usage-a@example.com',
    api_key_id: kA.id,
    api_key_name: 'a1',
    model: 'm1',
    provider: 'openai',
    endpoint: '/v1/chat/completions',
    stream: true,
    input_tokens: 10,
    output_tokens: 20,
    cache_read_tokens: 3,
    cache_write_tokens: 4,
    unit: 'tokens',
    units: 30,
    cost: 2.500001,
    uncharged: 0,
    cache: null,
    cache_similarity: null,
    cache_saved: 0,
    deployment: null,
    attempts: 1,
    requested_model: null,
    status: 200,
    error_type: null,
    latency_ms: 123,
    created_at: '2025-06-01T00:00:00.000Z',
  }, 'a row as presented: cost in INR, ISO time');
  t.match(all.body.data[2], { status: 502, error_type: 'upstream_error', cost: 0, stream: false });

  t.strictSame(await ids(`?account=${a.id}`), [r4.id, r2.id, r1.id], 'account by id');
  t.strictSame(await ids(`?account=${encodeURIComponent('USAGE-A@example.com')}`), [r4.id, r2.id, r1.id], 'account by email');
  t.strictSame(await ids('?account=me'), [r5.id], 'account=me is the caller');
  t.strictSame(await ids(`?key=${kA.id}`), [r4.id, r1.id], 'key');
  t.strictSame(await ids(`?key=${kB.id}&account=${a.id}`), [], 'key of another account within an account: nothing');
  t.strictSame(await ids('?model=m1'), [r4.id, r3.id, r1.id], 'model');
  t.strictSame(await ids('?model=unknown'), [], 'unknown model: nothing');
  t.strictSame(await ids(`?since=${new Date(T0 + 2 * H).toISOString()}`), [r6.id, r5.id, r4.id, r3.id], 'since is inclusive');
  t.strictSame(await ids(`?until=${new Date(T0 + 2 * H).toISOString()}`), [r2.id, r1.id], 'until is exclusive');
  t.strictSame(await ids(`?since=${(T0 + H) / 1000}&until=${(T0 + 3 * H) / 1000}`), [r3.id, r2.id], 'unix seconds');
  t.strictSame(await ids(`?since=${encodeURIComponent('2025-06-01T05:30:00+05:30')}`), [r6.id, r5.id, r4.id, r3.id, r2.id, r1.id], 'ISO with offset');
  t.strictSame(await ids('?since=2025-06-01&until=2025-06-02'), [r6.id, r5.id, r4.id, r3.id, r2.id, r1.id], 'YYYY-MM-DD');
  t.strictSame(await ids('?since=2025-06-02'), [], 'after every row: nothing');
  t.strictSame(await ids(`?account=${a.id}&model=m1&since=${(T0 + 1) / 1000 | 0}`), [r4.id, r1.id], 'filters combine (since in seconds floors to T0)');
  t.strictSame(await ids(`?account=${a.id}&model=m1&since=${new Date(T0 + 1).toISOString()}`), [r4.id], 'filters combine');

  for (const [query, param] of [
    ['?since=yesterday', 'since'],
    ['?since=2025-02-30', 'since'],
    ['?since=12345', 'since'],
    ['?since=2025-06-01T10:00:00', 'since'],
    ['?until=not-a-date', 'until'],
    [`?since=${T0 / 1000}&until=${T0 / 1000}`, 'until'],
    ['?since=2025-06-02&until=2025-06-01', 'until'],
    ['?limit=0', 'limit'],
    ['?limit=1001', 'limit'],
    ['?limit=ten', 'limit'],
    ['?before=0', 'before'],
    ['?before=abc', 'before'],
  ] as const) {
    const res = await gw.http('GET', `/api/management/usage${query}`, { token: gw.adminKey });
    isError(t, res, 400, 'invalid_query', param, `usage ${query}`);
  }
  isError(t, await gw.http('GET', '/api/management/usage?account=ghost@example.com', { token: gw.adminKey }), 404, 'account_not_found', undefined, 'unknown account');

  // Paging
  const p1 = await gw.http('GET', '/api/management/usage?limit=4', { token: gw.adminKey });
  t.strictSame(p1.body.data.map((row: { id: number }) => row.id), [r6.id, r5.id, r4.id, r3.id]);
  t.equal(p1.body.has_more, true);
  t.equal(p1.body.next_before, r3.id);
  const p2 = await gw.http('GET', `/api/management/usage?limit=4&before=${p1.body.next_before}`, { token: gw.adminKey });
  t.strictSame(p2.body.data.map((row: { id: number }) => row.id), [r2.id, r1.id]);
  t.equal(p2.body.has_more, false);
  t.equal(p2.body.next_before, null);
  const filteredPage = await gw.http('GET', `/api/management/usage?model=m2&limit=2`, { token: gw.adminKey });
  t.strictSame(filteredPage.body.data.map((row: { id: number }) => row.id), [r6.id, r5.id]);
  const filteredNext = await gw.http('GET', `/api/management/usage?model=m2&limit=2&before=${filteredPage.body.next_before}`, { token: gw.adminKey });
  t.strictSame(filteredNext.body.data.map((row: { id: number }) => row.id), [r2.id], 'before keeps the filters');

  const exact1 = await gw.http('GET', '/api/management/usage?limit=3', { token: gw.adminKey });
  t.equal(exact1.body.has_more, true, 'three of six rows: more to come');
  const exact2 = await gw.http('GET', `/api/management/usage?limit=3&before=${exact1.body.next_before}`, { token: gw.adminKey });
  t.strictSame(exact2.body.data.map((row: { id: number }) => row.id), [r3.id, r2.id, r1.id], 'the last three rows');
  // Regression: has_more was `rows.length === limit`, wrong on an exactly full last page.
  t.equal(exact2.body.has_more, false, 'the last page says has_more: false');
  t.equal(exact2.body.next_before, null, 'and gives no cursor');

  // A non-admin sees only its own account.
  t.strictSame(await ids('', a.key), [r4.id, r2.id, r1.id], 'user sees only its rows');
  t.strictSame(await ids('?account=me', a.key), [r4.id, r2.id, r1.id]);
  t.strictSame(await ids(`?account=${a.id}&model=m1`, a.key), [r4.id, r1.id]);
  t.strictSame(await ids(`?key=${kB.id}`, a.key), [], "another account's key id yields nothing");
  t.strictSame(await ids('?model=m2', a.key), [r2.id], "model filter stays within the user's rows");
  t.strictSame(await ids('', b.key), [r6.id, r3.id]);
  for (const ref of [b.id, 'usage-b@example.com', admin.id]) {
    isError(t, await gw.http('GET', `/api/management/usage?account=${ref}`, { token: a.key }), 404, 'account_not_found', undefined, `user asks for ${ref}'s usage`);
  }
  const skOnUsage = await gw.http('GET', '/api/management/usage', { token: kA.secret });
  isError(t, skOnUsage, 403, 'api_key_not_allowed', null, 'sk- key on usage');
});

t.test('usage: the live SSE stream', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const admin = (await gw.http('GET', '/api/management/me', { token: gw.adminKey })).body.account;
  const a = await createAccountWithKey(gw, 'live-a@example.com');
  const b = await createAccountWithKey(gw, 'live-b@example.com');
  const kA = await createApiKey(gw, gw.adminKey, a.id, { name: 'a1' });
  const kA2 = await createApiKey(gw, gw.adminKey, a.id, { name: 'a2' });
  const publish = async (overrides: Parameters<typeof insertUsage>[1]) => {
    const record = await insertUsage(gw, { createdAt: Date.now(), ...overrides });
    gw.app.usage.publish(record);
    return record;
  };

  // Refusals answer before the stream opens.
  const anonymous = await openUsageStream(gw, '');
  t.equal(anonymous.status, 401);
  t.equal(anonymous.error?.error?.reason, 'missing_credentials');
  t.equal(anonymous.error?.error?.code, 401);
  const skStream = await openUsageStream(gw, kA.secret);
  t.equal(skStream.status, 403);
  t.equal(skStream.error?.error?.reason, 'api_key_not_allowed');
  t.equal(skStream.error?.error?.code, 403);
  const foreign = await openUsageStream(gw, a.key, `?account=${b.id}`);
  t.equal(foreign.status, 404, "a user cannot stream another account's usage");
  t.equal(foreign.error?.error?.reason, 'account_not_found');
  t.equal(foreign.error?.error?.code, 404);
  const badQuery = await openUsageStream(gw, gw.adminKey, '?since=2026-01-01');
  t.equal(badQuery.status, 400, 'a time range does not apply to the live stream');
  t.equal(badQuery.error?.error?.param, 'since');

  const all = await openUsageStream(gw, gw.adminKey);
  const byModel = await openUsageStream(gw, gw.adminKey, '?model=m-wanted');
  const byAccount = await openUsageStream(gw, gw.adminKey, `?account=${encodeURIComponent('live-b@example.com')}`);
  const byKey = await openUsageStream(gw, gw.adminKey, `?key=${kA2.id}`);
  const userA = await openUsageStream(gw, a.key);
  const streams = [all, byModel, byAccount, byKey, userA];
  t.teardown(() => {
    for (const stream of streams) stream.close();
  });
  for (const stream of streams) {
    t.equal(stream.status, 200);
    t.match(stream.headers['content-type'], /^text\/event-stream/);
    t.equal(stream.headers['cache-control'], 'no-cache');
    const opening = await stream.nextFrame();
    t.strictSame(opening, { comments: ['usage stream open'] }, 'the stream opens with a comment');
  }

  // Published in this order; each stream must skip what its filter excludes and deliver the rest in order.
  const rAdmin = await publish({ accountId: admin.id, model: 'm-other', costMicros: 1_234_567 });
  const rB = await publish({ accountId: b.id, model: 'm-other' });
  const rA = await publish({ accountId: a.id, apiKeyId: kA.id, model: 'm-other', costMicros: 2_500_001, stream: true });
  const rA2 = await publish({ accountId: a.id, apiKeyId: kA2.id, model: 'm-wanted' });
  const rB2 = await publish({ accountId: b.id, model: 'm-wanted' });

  const first = await all.nextEvent();
  t.equal(first?.event, 'usage', 'a usage event');
  t.strictSame(JSON.parse(first?.data ?? 'null'), {
    id: rAdmin.id,
    request_id: rAdmin.requestId,
    account_id: admin.id,
    account_email: 'admin@example.com',
    api_key_id: null,
    api_key_name: null,
    model: 'm-other',
    provider: 'openai',
    endpoint: '/v1/chat/completions',
    stream: false,
    input_tokens: 10,
    output_tokens: 20,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    unit: 'tokens',
    units: 30,
    cost: 1.234567,
    uncharged: 0,
    cache: null,
    cache_similarity: null,
    cache_saved: 0,
    deployment: null,
    attempts: 1,
    requested_model: null,
    status: 200,
    error_type: null,
    latency_ms: 123,
    created_at: new Date(rAdmin.createdAt).toISOString(),
  }, 'the record as presented, cost in INR (not µINR)');
  const rest: number[] = [];
  for (let i = 0; i < 4; i++) {
    const frame = await all.nextEvent();
    t.equal(frame?.event, 'usage');
    rest.push(JSON.parse(frame?.data ?? 'null').id);
  }
  t.strictSame(rest, [rB.id, rA.id, rA2.id, rB2.id], 'the unfiltered stream gets every record in order');

  const modelFirst = await byModel.nextEvent();
  t.equal(JSON.parse(modelFirst?.data ?? 'null').id, rA2.id, '?model= skips the records of other models');
  t.equal(JSON.parse((await byModel.nextEvent())?.data ?? 'null').id, rB2.id);

  const accountFirst = await byAccount.nextEvent();
  t.equal(JSON.parse(accountFirst?.data ?? 'null').id, rB.id, '?account= (by email) skips other accounts');
  t.equal(JSON.parse((await byAccount.nextEvent())?.data ?? 'null').id, rB2.id);

  const keyFirst = await byKey.nextEvent();
  t.equal(JSON.parse(keyFirst?.data ?? 'null').id, rA2.id, '?key= skips other keys');

  const userFirst = await userA.nextEvent();
  const userFirstRecord = JSON.parse(userFirst?.data ?? 'null');
  t.equal(userFirstRecord.id, rA.id, "a user's stream skips other accounts' records");
  t.equal(userFirstRecord.cost, 2.500001);
  t.equal(userFirstRecord.stream, true);
  t.equal(JSON.parse((await userA.nextEvent())?.data ?? 'null').id, rA2.id);

  // More records: the user's stream still only gets its own.
  await publish({ accountId: b.id, model: 'm-wanted' });
  await publish({ accountId: admin.id, model: 'm-wanted' });
  const rA3 = await publish({ accountId: a.id, model: 'm-third' });
  t.equal(JSON.parse((await userA.nextEvent())?.data ?? 'null').id, rA3.id, "still none of the other accounts' records");

  // Closing some streams does not disturb the others.
  userA.close();
  byKey.close();
  const rLast = await publish({ accountId: a.id, apiKeyId: kA2.id, model: 'm-wanted' });
  for (let i = 0; i < 3; i++) await all.nextEvent();
  t.equal(JSON.parse((await all.nextEvent())?.data ?? 'null').id, rLast.id, 'the open stream continues');
});
