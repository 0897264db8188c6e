import OpenAI from 'openai';
import t from 'tap';
import { request } from 'undici';
import { csvField } from '../../src/api/dashboard.js';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { until } from '../support/e2e.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/** The dashboard's endpoints for a session: overview, daily spend, usage (filters, CSV, live), ledger, admin. */

t.test('a user sees their own account: overview, daily, usage with filters, CSV, live feed, ledger', async (t) => {
  const sim = await ProviderSimulator.start();
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  // A user with a session, funded by the admin, with one key.
  const signup = await gw.http('POST', '/api/auth/signup', { body: { email: 'dash@example.com', password: 'password-1', name: 'Dash' } });
  const { token, csrf_token: csrf } = signup.body as { token: string; csrf_token: string; user: { id: string } };
  const accountId = (signup.body as { user: { id: string } }).user.id;
  await gw.http('POST', `/api/management/accounts/${accountId}/topups`, { token: gw.adminKey, body: { amount: 50, reference: 'first' } });
  const cookie = `token=${token}`;
  const key = await gw.http('POST', '/api/api-keys', { headers: { cookie, 'x-csrf-token': csrf }, body: { name: 'app one' } });
  t.equal(key.status, 200);
  const other = await fundedKey(gw, { balance: 10 });
  const openai = new OpenAI({ apiKey: key.body.api_key as string, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const others = new OpenAI({ apiKey: other.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  // Live feed opened first.
  const live = await request(`${gw.url}/api/usage/stream`, { headers: { cookie } });
  t.equal(live.statusCode, 200);
  let feed = '';
  live.body.on('data', (chunk: Buffer) => (feed += chunk.toString()));

  await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  await openai.embeddings.create({ model: 'text-embedding-3-small', input: 'x' });
  // A failure no retry changes (a 5xx would be retried and answered).
  sim.enqueue({ error: { status: 400 } });
  await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'fail' }] }).catch(() => undefined);
  await others.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'not mine' }] });
  await until('three rows on the live feed', () => (feed.match(/event: usage/g) ?? []).length >= 3);
  t.equal((feed.match(/event: usage/g) ?? []).length, 3, "only the account's own calls on its feed");
  live.body.destroy();

  const overview = await gw.http('GET', '/api/dashboard/overview', { headers: { cookie } });
  t.equal(overview.status, 200);
  t.match(overview.body, { currency: 'INR', calls_today: 3, errors_today: 1, calls_month: 3, held: 0, top_models: [{ model: 'openai/gpt-4o-mini', calls: 2 }, { model: 'openai/text-embedding-3-small', calls: 1 }], top_keys: [{ name: 'app one', calls: 3 }] });
  t.ok(overview.body.spent_today > 0 && overview.body.balance === Math.round((50 - overview.body.spent_today) * 1e6) / 1e6, 'balance = top-up − spend');

  const daily = await gw.http('GET', '/api/dashboard/daily?days=30', { headers: { cookie } });
  const today = new Date().toISOString().slice(0, 10);
  t.same(daily.body.data.map((d: { day: string; model: string; calls: number }) => [d.day, d.model, d.calls]), [
    [today, 'openai/gpt-4o-mini', 2],
    [today, 'openai/text-embedding-3-small', 1],
  ]);

  const all = await gw.http('GET', '/api/usage', { headers: { cookie } });
  t.equal(all.body.data.length, 3);
  t.equal((await gw.http('GET', '/api/usage?status=error', { headers: { cookie } })).body.data.length, 1);
  t.equal((await gw.http('GET', '/api/usage?endpoint=embeddings', { headers: { cookie } })).body.data[0].unit, 'tokens');
  t.equal((await gw.http('GET', '/api/usage?model=openai/gpt-4o-mini&status=ok', { headers: { cookie } })).body.data.length, 1);
  const paged = await gw.http('GET', '/api/usage?limit=2', { headers: { cookie } });
  t.match(paged.body, { has_more: true, next_before: Number });
  t.equal((await gw.http('GET', `/api/usage?limit=2&before=${paged.body.next_before}`, { headers: { cookie } })).body.data.length, 1);
  t.match((await gw.http('GET', '/api/usage?endpoint=nope', { headers: { cookie } })).body, { error: { code: 400, param: 'endpoint' } });

  const csv = await request(`${gw.url}/api/usage/export.csv?status=ok`, { headers: { cookie } });
  t.equal(csv.statusCode, 200);
  t.match(String(csv.headers['content-type']), /^text\/csv/);
  t.match(String(csv.headers['content-disposition']), /attachment; filename="usage.csv"/);
  const lines = (await csv.body.text()).trim().split('\r\n');
  t.equal(lines[0], 'created_at,request_id,endpoint,model,provider,api_key_id,api_key_name,stream,input_tokens,output_tokens,unit,units,cost_inr,latency_ms,status,error_type,cache_read_tokens,cache_write_tokens,cache,cache_similarity,cache_saved_inr,requested_model');
  t.equal(lines.length, 3, 'the header and the two calls that succeeded');
  t.match(lines[1], /,embeddings,openai\/text-embedding-3-small,openai,.*,app one,false,/);

  const ledger = await gw.http('GET', '/api/wallet/ledger', { headers: { cookie } });
  t.equal(ledger.status, 200);
  t.match(ledger.body.data.at(-1), { kind: 'topup', amount: 50, balance_after: 50, reference: 'first' });
  t.equal(ledger.body.data[0].balance_after, overview.body.balance, 'the running balance ends at the balance');

  t.equal((await gw.http('GET', '/api/admin/accounts', { headers: { cookie } })).status, 403, 'admin pages are for admins');
  const userRoutes = await gw.http('GET', '/api/admin/routes', { headers: { cookie } });
  t.equal(userRoutes.status, 403, 'the routes are for admins');
  t.match(userRoutes.body, { error: { reason: 'admin_only' } });
  t.equal((await gw.http('GET', '/api/admin/routes')).status, 401, 'and need a session');
  t.equal((await gw.http('GET', '/api/dashboard/overview')).status, 401);
});

t.test('admins: accounts with balances, an idempotent top-up by reference, any account keys and usage', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const login = await gw.http('POST', '/api/auth/login', { body: { email: gw.adminEmail, password: 'admin-password' } });
  const headers = { cookie: `token=${login.body.token as string}`, 'x-csrf-token': login.body.csrf_token as string };
  const created = await gw.http('POST', '/api/admin/accounts', { headers, body: { email: 'team@example.com', name: 'Data team' } });
  t.equal(created.status, 201);
  const id = created.body.id as string;
  const first = await gw.http('POST', `/api/admin/accounts/${id}/topups`, { headers, body: { amount: 5000, reference: 'PO-17' } });
  t.equal(first.status, 201);
  t.match(first.body, { balance: 5000, replayed: false, entry: { kind: 'topup', amount: 5000, reference: 'PO-17' } });
  const again = await gw.http('POST', `/api/admin/accounts/${id}/topups`, { headers, body: { amount: 5000, reference: 'PO-17' } });
  t.equal(again.status, 200, 'the same reference applies once');
  t.match(again.body, { balance: 5000, replayed: true });
  t.match((await gw.http('POST', `/api/admin/accounts/${id}/topups`, { headers, body: { amount: 0 } })).body, { error: { code: 400, param: 'amount' } });
  t.equal((await gw.http('POST', `/api/admin/accounts/${id}/topups`, { headers: { cookie: headers.cookie }, body: { amount: 1 } })).status, 403, 'CSRF token required');
  const accounts = await gw.http('GET', '/api/admin/accounts', { headers });
  t.match(accounts.body.data.find((a: { id: string }) => a.id === id), { email: 'team@example.com', balance: 5000 });
  t.same((await gw.http('GET', `/api/admin/accounts/${id}/api-keys`, { headers })).body.data, []);
  t.same((await gw.http('GET', `/api/admin/usage?account_id=${id}`, { headers })).body.data, []);
  t.equal((await gw.http('GET', '/api/admin/usage?account_id=nobody', { headers })).status, 404);

  // The router's routes, as GET /api/management/routes answers an admin key.
  t.same((await gw.http('GET', '/api/admin/routes?active=true', { headers })).body.data, [], 'nothing active before any call or rest');
  gw.app.routes.restDeployment('openai:gpt-4o-mini', 30_000, 'auth', Date.now());
  const routes = await gw.http('GET', '/api/admin/routes?active=true', { headers: { cookie: headers.cookie } });
  t.equal(routes.status, 200, 'a read needs no CSRF token');
  t.same(routes.body, (await gw.http('GET', '/api/management/routes?active=true', { token: gw.adminKey })).body, 'the management API\'s document');
  t.match(routes.body, { object: 'routes', data: [{ model: 'openai/gpt-4o-mini', deployments: [{ id: 'openai:gpt-4o-mini', state: 'resting', reason: 'auth', resting_until: String }] }] });
  t.equal(routes.body.data.length, 1, 'only the resting model is active');
  t.match((await gw.http('GET', '/api/admin/routes?model=gpt-4o', { headers })).body, { data: [{ model: 'openai/gpt-4o', deployments: [{ state: 'ok' }] }] }, '?model= one model');
  t.equal((await gw.http('GET', '/api/admin/routes', { headers })).body.data.length, gw.app.catalog.models.length, 'without ?active every model');
  t.equal((await gw.http('GET', '/api/admin/routes?model=nope', { headers })).status, 404);
});

t.test('CSV fields: quoted where needed, formulas neutralized', async (t) => {
  t.equal(csvField('plain'), 'plain');
  t.equal(csvField('a,b'), '"a,b"');
  t.equal(csvField('say "hi"'), '"say ""hi"""');
  t.equal(csvField('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
  t.equal(csvField(null), '');
  t.equal(csvField(-1.5), '-1.5', 'numbers are numbers');
});
