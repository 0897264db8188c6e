import OpenAI from 'openai';
import t from 'tap';
import { Agent, request } from 'undici';
import { charges, header, noHolds, postJson } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * Governance of an API key (issue 30, first part): the models it may call (ids, aliases, short
 * names, patterns; fallbacks and aliases checked on every hop; /v1/models filtered) and the
 * addresses it may be used from (IPv4, IPv6, CIDRs; the socket's address, or the forwarded
 * one from a trusted proxy). A refusal is a 403 before any hold: nothing upstream, nothing
 * charged.
 */

let sim: ProviderSimulator;
let gw: TestGateway;
let accountId: string;

const CHEAP = { input_cost_per_1m: 1, output_cost_per_1m: 2, context_window: 8000, max_output_tokens: 1000 };

t.before(async () => {
  sim = await ProviderSimulator.start();
  gw = await startTestGateway({
    server: { trust_proxy: true, trusted_proxies: ['127.0.0.3'] },
    providers: simulatedProviders(sim.url),
    aliases: { cheap: 'openai/gpt-4o-mini' },
    routing: { fallbacks: { 'openai/gpt-4o-mini': ['anthropic/claude-haiku-x'] } },
    models: [{ id: 'anthropic/claude-haiku-x', name: 'Haiku X', ...CHEAP }],
  });
  accountId = (await fundedKey(gw, { balance: 50 })).accountId;
});
t.teardown(async () => {
  await gw?.stop();
  await sim?.close();
});

async function createKey(body: Record<string, unknown>) {
  return gw.http('POST', `/api/management/accounts/${accountId}/api-keys`, { token: gw.adminKey, body: { name: 'governed', ...body } });
}

const chat = (key: string, model: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${key}`, ...headers }, { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, ...extra });

t.test('models: ids, aliases, short names and patterns; everything else 403 before any hold', async (t) => {
  const created = await createKey({ models: ['cheap', 'gemini-2.5-flash', 'anthropic/*'] });
  t.equal(created.status, 201, created.text);
  t.same(created.body.models, ['cheap', 'gemini-2.5-flash', 'anthropic/*'], 'the list as given');
  const key = created.body.api_key as string;
  sim.reset();
  for (const model of ['openai/gpt-4o-mini', 'cheap', 'gpt-4o-mini', 'gemini/gemini-2.5-flash', 'anthropic/claude-sonnet-4-5']) {
    const res = await chat(key, model);
    t.equal(res.status, 200, `${model}: allowed (${res.text.slice(0, 120)})`);
  }
  const calls = sim.requests.length;
  const refused = await chat(key, 'openai/gpt-4.1');
  t.equal(refused.status, 403);
  t.match(refused.json.error, { code: 403, type: 'permission_error', reason: 'model_not_allowed', param: 'model', message: /may not call 'openai\/gpt-4\.1'/ });
  const viaFallback = await chat(key, 'openai/gpt-4o-mini', { models: ['openai/gpt-4.1'] });
  t.equal(viaFallback.status, 403, 'a fallback the client names is checked too');
  t.match(viaFallback.json.error, { reason: 'model_not_allowed', param: 'models[0]' });
  const viaHeader = await chat(key, 'openai/gpt-4o-mini', {}, { 'x-gateway-fallbacks': 'openai/gpt-4.1' });
  t.match(viaHeader.json.error, { reason: 'model_not_allowed', param: 'x-gateway-fallbacks' });
  const embeddings = await postJson(`${gw.url}/v1/embeddings`, { authorization: `Bearer ${key}` }, { model: 'openai/text-embedding-3-small', input: 'x' });
  t.match(embeddings.json.error, { reason: 'model_not_allowed' }, 'every endpoint');
  t.equal(sim.requests.length, calls, 'nothing went upstream');
  gw.app.settlement.drain();
  for (const res of [refused, viaFallback, viaHeader, embeddings]) t.same(await charges(gw, accountId, header(res, 'x-request-id')), [], 'nothing charged');
  await noHolds(t, gw, { accountId, key, keyId: created.body.id });

  const listed = await new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1` }).models.list();
  const ids = listed.data.map((model) => model.id);
  t.ok(ids.includes('openai/gpt-4o-mini') && ids.includes('cheap') && ids.includes('gemini/gemini-2.5-flash') && ids.includes('anthropic/claude-sonnet-4-5'), '/v1/models lists what the key may call');
  t.notOk(ids.includes('openai/gpt-4.1') || ids.includes('openai/text-embedding-3-small'), 'and nothing else');
  const anonymous = await request(`${gw.url}/v1/models`);
  t.ok(((await anonymous.body.json()) as { data: unknown[] }).data.length > listed.data.length, 'without a key: the whole catalog');
});

t.test("the config's fallbacks outside the list are left out, not tried", async (t) => {
  const key = (await createKey({ models: ['openai/gpt-4o-mini'] })).body.api_key as string;
  sim.reset();
  sim.enqueue({ error: { status: 500 } }, { error: { status: 500 } }, { error: { status: 500 } });
  const res = await chat(key, 'openai/gpt-4o-mini');
  t.equal(res.status, 502, 'the model asked for failed');
  t.notOk(sim.requests.some((r) => r.family === 'anthropic'), 'its configured fallback (Haiku X) was not called for this key');
  sim.reset();
});

t.test('bad lists are 400 naming the entry; null or [] clears', async (t) => {
  const unknown = await createKey({ models: ['openai/gpt-4o-mini', 'gpt-9000'] });
  t.equal(unknown.status, 400);
  t.match(unknown.body.error, { param: 'models[1]', message: /models\[1\]: 'gpt-9000' is not a catalog model id, alias or short name/ });
  const badIp = await createKey({ allowed_ips: ['10.0.0.1/33'] });
  t.match(badIp.body.error, { param: 'allowed_ips[0]', message: /prefix length 0 to 32/ });
  const notList = await createKey({ models: 'openai/gpt-4o-mini' });
  t.match(notList.body.error, { param: 'models', message: /must be an array/ });
  const created = await createKey({ models: ['openai/gpt-4o-mini'], allowed_ips: ['10.0.0.0/8'] });
  const cleared = await gw.http('PATCH', `/api/management/api-keys/${created.body.id}`, { token: gw.adminKey, body: { models: null, allowed_ips: [] } });
  t.equal(cleared.status, 200);
  t.same([cleared.body.models, cleared.body.allowed_ips], [[], []]);
  const key = created.body.api_key as string;
  t.equal((await chat(key, 'gemini/gemini-2.5-flash')).status, 200, 'a cleared key calls anything, from anywhere');
});

t.test('allowed_ips: the socket address (IPv4, CIDR), or the forwarded one behind a trusted proxy (IPv6)', async (t) => {
  const key = (await createKey({ allowed_ips: ['127.0.0.2', '127.0.0.4/31', '2001:db8::/32'] })).body.api_key as string;
  const from = (address: string, headers: Record<string, string> = {}) => {
    const dispatcher = new Agent({ localAddress: address });
    t.teardown(() => dispatcher.close());
    return request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }),
    });
  };
  const local = await from('127.0.0.1');
  t.equal(local.statusCode, 403);
  t.match(await local.body.json(), { error: { reason: 'ip_not_allowed', message: /may not be used from 127\.0\.0\.1/ } });
  const allowed = await from('127.0.0.2');
  t.equal(allowed.statusCode, 200, `an allowed address: ${await allowed.body.text()}`);
  t.equal((await from('127.0.0.5')).statusCode, 200, 'inside an allowed CIDR');
  t.equal((await from('127.0.0.6')).statusCode, 403, 'outside it');
  t.equal((await from('127.0.0.3', { 'x-forwarded-for': '2001:db8::7' })).statusCode, 200, 'IPv6 through a trusted proxy');
  t.equal((await from('127.0.0.3', { 'x-forwarded-for': '2001:db9::7' })).statusCode, 403, 'another IPv6 network');
  t.equal((await from('127.0.0.1', { 'x-forwarded-for': '127.0.0.2' })).statusCode, 403, 'a forged hop from an untrusted peer counts for nothing');
});
