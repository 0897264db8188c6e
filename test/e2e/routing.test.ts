import t from 'tap';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { header, postJson, sleep, usageRow, type RawResponse } from '../support/e2e.js';

/**
 * Routing (issue 26): several deployments per model on several providers (three simulators on
 * their own ports, each failing on command), weighted and priority routing, the retry rules,
 * key rotation, cooldowns and their end, the first candidate's error, the request's own
 * fallbacks, and what a client and the usage row see.
 */

const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
const price = { input_cost_per_1m: 10, output_cost_per_1m: 20 };

let simA: ProviderSimulator;
let simB: ProviderSimulator;
let simC: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

/** A chat model of its own for each test (its deployments' health is its own). */
function model(id: string, deployments: unknown[]): Record<string, unknown> {
  return { id, name: id, ...price, deployments };
}

t.before(async () => {
  [simA, simB, simC] = await Promise.all([ProviderSimulator.start(), ProviderSimulator.start(), ProviderSimulator.start()]);
  gw = await startTestGateway({
    providers: {
      ...simulatedProviders(simA.url),
      openai: { type: 'openai', base_url: `${simA.url}/v1`, api_key: 'sim-key', timeouts: fast },
      'openai-eu': { type: 'openai', base_url: `${simB.url}/v1`, api_key: 'sim-key', timeouts: fast },
      backup: { type: 'openai', base_url: `${simC.url}/v1`, api_key: 'sim-key', timeouts: fast },
      rotating: { type: 'openai', base_url: `${simC.url}/v1`, api_keys: ['sk-revoked-key', 'sim-key'], timeouts: fast },
      quota: { type: 'openai', base_url: `${simA.url}/v1`, api_key: 'sim-key', timeouts: fast },
      slow: { type: 'openai', base_url: `${simA.url}/v1`, api_key: 'sim-key', timeouts: { connect: '2s', first_byte: '1s', idle: '5s' } },
      dead: { type: 'openai', base_url: 'http://127.0.0.1:1/v1', api_key: 'sim-key', timeouts: fast },
    },
    routing: { retries: 2, max_retry_after: '2s', cooldown: { failures: 3, window: '60s', duration: '1s' } },
    models: [
      model('openai/weighted', [{ provider: 'openai', weight: 3 }, { provider: 'openai-eu', weight: 1 }, { provider: 'backup', priority: 2 }]),
      model('openai/tiers', [{ provider: 'openai', upstream_model: 'tiers' }, { provider: 'openai-eu', upstream_model: 'tiers', priority: 2 }]),
      model('openai/single', [{ provider: 'openai', upstream_model: 'single' }]),
      model('openai/pair', [{ provider: 'openai', upstream_model: 'pair' }, { provider: 'openai-eu', upstream_model: 'pair', priority: 2 }]),
      model('openai/after', [{ provider: 'openai', upstream_model: 'after' }, { provider: 'openai-eu', upstream_model: 'after', priority: 2 }]),
      model('openai/rotating', [{ provider: 'rotating', upstream_model: 'rotating' }]),
      model('openai/quota', [{ provider: 'quota', upstream_model: 'quota' }, { provider: 'openai-eu', upstream_model: 'quota', priority: 2 }]),
      model('openai/slow', [{ provider: 'slow', upstream_model: 'slow' }, { provider: 'openai-eu', upstream_model: 'slow', priority: 2 }]),
      model('openai/dead', [{ provider: 'dead', upstream_model: 'dead' }, { provider: 'openai-eu', upstream_model: 'dead', priority: 2 }]),
      model('openai/cool', [{ provider: 'openai', upstream_model: 'cool' }, { provider: 'openai-eu', upstream_model: 'cool', priority: 2 }]),
      model('openai/first', [{ provider: 'openai', upstream_model: 'first' }]),
      model('openai/second', [{ provider: 'openai-eu', upstream_model: 'second' }]),
      model('openai/third', [{ provider: 'backup', upstream_model: 'third' }]),
      model('openai/fb1', [{ provider: 'openai', upstream_model: 'fb1' }]),
      model('openai/fb2', [{ provider: 'openai-eu', upstream_model: 'fb2' }]),
      model('openai/fb3', [{ provider: 'backup', upstream_model: 'fb3' }]),
    ],
  });
  funded = await fundedKey(gw, { balance: 1000 });
});

t.beforeEach(() => {
  for (const sim of [simA, simB, simC]) sim.reset();
});

t.teardown(async () => {
  await gw?.stop();
  await Promise.all([simA?.close(), simB?.close(), simC?.close()]);
});

/** The text of a chat-completions stream. */
function deltas(text: string): string {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? '')
    .join('');
}

function chat(modelId: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<RawResponse> {
  return postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}`, ...headers }, { model: modelId, messages: [{ role: 'user', content: 'hello' }], ...extra });
}

t.test('weighted routing spreads 3:1 within a priority; the second tier gets nothing while the first answers', async (t) => {
  const results = [];
  for (let batch = 0; batch < 8; batch++) results.push(...(await Promise.all(Array.from({ length: 50 }, () => chat('openai/weighted')))));
  t.ok(results.every((r) => r.status === 200), 'all 400 answered');
  const a = simA.requests.length;
  const b = simB.requests.length;
  t.equal(a + b, 400, 'each call made one attempt');
  t.ok(a >= 270 && a <= 330, `the weight-3 deployment took ${a} of 400 (300 ± 30)`);
  t.equal(simC.requests.length, 0, 'priority 2 untouched');
  const providers = new Set(results.map((r) => header(r, 'x-gateway-provider')));
  t.same([...providers].sort(), ['openai', 'openai-eu'], 'x-gateway-provider names the entry that served');
  t.ok(results.every((r) => header(r, 'x-gateway-attempts') === '1'));
});

t.test('priority tiers: the second tier serves when the first fails; the answer says who served', async (t) => {
  simA.enqueue({ error: { status: 503 } });
  const res = await chat('openai/tiers');
  t.equal(res.status, 200);
  t.equal(header(res, 'x-gateway-provider'), 'openai-eu');
  t.equal(header(res, 'x-gateway-attempts'), '2');
  t.equal(header(res, 'x-gateway-model'), 'openai/tiers');
  t.equal(simA.requests.length, 1);
  t.equal(simB.requests[0]?.model, 'tiers', 'the deployment\'s upstream_model is sent');
  const row = await usageRow(gw, header(res, 'x-request-id'));
  t.match(row, { model: 'openai/tiers', provider: 'openai-eu', deployment: 'openai-eu:tiers', attempts: 2, status: 200 }, 'one usage row: served deployment and attempts');
  t.ok(row && row.costMicros > 0, 'charged once, for the attempt that served');
  const rows = (await gw.app.store.usage.list({ limit: 1000 })).filter((r) => r.requestId === header(res, 'x-request-id'));
  t.equal(rows.length, 1, 'not a row per attempt');
});

t.test('retried on 429, 5xx, a refused connection and a timeout; never on 400', async (t) => {
  for (const status of [429, 500, 502, 503, 504, 529]) {
    simA.reset();
    simA.enqueue({ error: { status } });
    const res = await chat('openai/single');
    t.equal(res.status, 200, `${status}: retried`);
    t.equal(header(res, 'x-gateway-attempts'), '2', `${status}: the model's only deployment, a second time`);
    t.equal(simA.requests.length, 2);
  }
  const refused = await chat('openai/dead');
  t.equal(refused.status, 200, 'connection refused: the next deployment');
  t.equal(header(refused, 'x-gateway-provider'), 'openai-eu');
  simA.enqueue({ delayMs: 3000 });
  const slow = await chat('openai/slow');
  t.equal(slow.status, 200, 'first-byte timeout (1 s): the next deployment');
  t.equal(header(slow, 'x-gateway-provider'), 'openai-eu');
  t.equal(header(slow, 'x-gateway-attempts'), '2');
  simA.reset();
  simB.reset();
  simA.enqueue({ error: { status: 400, message: 'bad field' } });
  const bad = await chat('openai/pair');
  t.equal(bad.status, 400, 'a 400 is the client\'s answer');
  t.match(bad.json, { error: { code: 400, message: /bad field/ } });
  t.equal(header(bad, 'x-gateway-attempts'), '1', 'an error says how many attempts were made');
  t.equal(simA.requests.length, 1, 'not retried');
  t.equal(simB.requests.length, 0, 'nor sent elsewhere');
  const row = await usageRow(gw, header(bad, 'x-request-id'));
  t.match(row, { status: 400, attempts: 1, costMicros: 0 });
});

t.test('Retry-After: waited for when short, the deployment rested when longer than max_retry_after', async (t) => {
  simA.enqueue({ error: { status: 429, retryAfterSeconds: 1 } });
  const began = Date.now();
  const waited = await chat('openai/single');
  t.equal(waited.status, 200);
  t.equal(header(waited, 'x-gateway-attempts'), '2');
  t.ok(Date.now() - began >= 950, 'the second attempt came after the upstream\'s Retry-After (1 s)');

  simA.reset();
  simA.enqueue({ error: { status: 429, retryAfterSeconds: 30 } });
  const moved = await chat('openai/pair');
  t.equal(moved.status, 200, 'above max_retry_after (2 s): another deployment at once');
  t.equal(header(moved, 'x-gateway-provider'), 'openai-eu');
  const next = await chat('openai/pair');
  t.equal(header(next, 'x-gateway-provider'), 'openai-eu', 'the deployment rests for the Retry-After');
  t.equal(header(next, 'x-gateway-attempts'), '1');
  t.equal(simA.requests.length, 1, 'nothing more was sent to it');
});

t.test('a refused key rests and the provider\'s next key serves; a quota-exhausted 429 rests its key', async (t) => {
  const res = await chat('openai/rotating');
  t.equal(res.status, 200);
  t.equal(header(res, 'x-gateway-attempts'), '2', 'the refused key, then the next');
  t.equal(simC.requests.length, 2);
  t.match(simC.requests[0]?.headers.authorization, /sk-revoked-key/);
  t.equal(simC.requests[1]?.headers.authorization, 'Bearer sim-key');
  for (let i = 0; i < 4; i++) t.equal(header(await chat('openai/rotating'), 'x-gateway-attempts'), '1', 'the refused key is not used again while it rests');
  t.ok(simC.requests.slice(2).every((r) => r.headers.authorization === 'Bearer sim-key'));

  simA.enqueue({ error: { status: 429, code: 'insufficient_quota' } });
  const quota = await chat('openai/quota');
  t.equal(quota.status, 200);
  t.equal(header(quota, 'x-gateway-provider'), 'openai-eu', 'not waited on: the next deployment');
  t.equal(header(await chat('openai/quota'), 'x-gateway-provider'), 'openai-eu', 'the exhausted key rests');
  t.equal(simA.requests.length, 1);
});

t.test('cooldown: three failures rest a deployment; it serves again once the rest ends', async (t) => {
  simA.setDefault({ error: { status: 500 } });
  for (let i = 0; i < 3; i++) {
    const res = await chat('openai/cool');
    t.equal(header(res, 'x-gateway-provider'), 'openai-eu');
    t.equal(header(res, 'x-gateway-attempts'), '2');
  }
  const rested = await chat('openai/cool');
  t.equal(header(rested, 'x-gateway-attempts'), '1', 'resting: not tried');
  t.equal(simA.requests.length, 3);
  const view = gw.app.routes.deploymentRest('openai:cool', Date.now());
  t.match(view, { reason: 'failures' });
  simA.setDefault({});
  await sleep(1100);
  const back = await chat('openai/cool');
  t.equal(header(back, 'x-gateway-provider'), 'openai', 'recovered after the cooldown (1 s)');
});

t.test('every candidate failing: the client gets the first candidate\'s error, not the last', async (t) => {
  simA.setDefault({ error: { status: 429, message: 'first model limited' } });
  simB.setDefault({ error: { status: 500, message: 'second model broken' } });
  const res = await chat('openai/first', { models: ['openai/second'] });
  t.equal(res.status, 429);
  t.match(res.json, { error: { code: 429, type: 'rate_limit_exceeded', message: /first model limited/ } });
  t.equal(header(res, 'x-gateway-attempts'), '3');
  t.ok(simB.requests.length >= 1, 'the fallback was tried');
  const row = await usageRow(gw, header(res, 'x-request-id'));
  t.match(row, { model: 'openai/first', status: 429, attempts: 3, costMicros: 0 }, 'three attempts (retries: 2), nothing charged');
});

t.test('the request\'s own fallbacks: the body\'s models and the x-gateway-fallbacks header', async (t) => {
  simA.setDefault({ error: { status: 503 } });
  const body = await chat('openai/fb1', { models: ['openai/fb2'] });
  t.equal(body.status, 200);
  t.equal(body.json.model, 'openai/fb2', 'the answer names the model that served');
  t.equal(header(body, 'x-gateway-model'), 'openai/fb2');
  t.match(await usageRow(gw, header(body, 'x-request-id')), { model: 'openai/fb2', provider: 'openai-eu', attempts: 2 });

  simB.setDefault({ error: { status: 503 } });
  const viaHeader = await chat('openai/fb1', {}, { 'x-gateway-fallbacks': 'openai/fb2, openai/fb3' });
  t.equal(viaHeader.status, 200);
  t.equal(viaHeader.json.model, 'openai/fb3', 'in order: the second failed too');
  t.equal(simB.requests.length, 2, 'the second was tried (it served the first call)');
  t.equal(header(viaHeader, 'x-gateway-attempts'), '3');

  const unknown = await chat('openai/first', { models: ['openai/nope'] });
  t.equal(unknown.status, 400, 'a fallback that is not in the catalog is the client\'s mistake');
  t.match(unknown.json, { error: { code: 400, param: 'models[0]', message: /models\[0\]: model 'openai\/nope' does not exist/ } });
  const kind = await chat('openai/first', {}, { 'x-gateway-fallbacks': 'openai/text-embedding-3-small' });
  t.equal(kind.status, 400);
  t.match(kind.json, { error: { param: 'x-gateway-fallbacks', message: /embedding model/ } });
  const shape = await chat('openai/first', { models: 'openai/second' });
  t.equal(shape.status, 400);
  t.match(shape.json, { error: { param: 'models', message: /must be an array/ } });
});

t.test('a stream that fails before its first content is retried invisibly', async (t) => {
  simA.enqueue({ disconnectAfterEvents: 1 });
  const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/after', stream: true, messages: [{ role: 'user', content: 'hello' }] });
  t.equal(res.status, 200);
  t.equal(header(res, 'x-gateway-provider'), 'openai-eu');
  t.equal(header(res, 'x-gateway-attempts'), '2');
  t.notMatch(res.text, /"error"/, 'the client never saw the failed attempt');
  t.match(res.text, /data: \[DONE\]/);
  t.equal(deltas(res.text), 'Hello from the openai simulator (model after).', 'the whole answer, once');
});

t.test('a stream that fails after its first content ends with the format\'s error, billed for what was delivered', async (t) => {
  simA.enqueue({ text: 'one two three four five six seven', chunkSize: 4, disconnectAfterEvents: 4 });
  const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/after', stream: true, messages: [{ role: 'user', content: 'hello' }] });
  t.equal(res.status, 200);
  t.equal(header(res, 'x-gateway-attempts'), '1');
  t.match(res.text, /data: \{"error":\{"message":/, 'an error chunk');
  t.notMatch(res.text, /\[DONE\]/, 'no clean end');
  t.equal(simB.requests.length, 0, 'nothing switched after the first byte');
  gw.app.settlement.drain();
  const row = await usageRow(gw, header(res, 'x-request-id'));
  t.match(row, { status: 502, provider: 'openai', attempts: 1 });
  t.ok(row && row.outputTokens > 0 && row.costMicros > 0, 'the delivered part is billed');
});

t.test('routing.timeout bounds the whole call, every attempt included: 504', async (t) => {
  const sim = await ProviderSimulator.start();
  const short = await startTestGateway({
    providers: { ...simulatedProviders(sim.url), openai: { type: 'openai', base_url: `${sim.url}/v1`, api_key: 'sim-key', timeouts: { connect: '2s', first_byte: '10s', idle: '10s' } } },
    routing: { timeout: '1s' },
  });
  t.teardown(async () => {
    await short.stop();
    await sim.close();
  });
  const key = await fundedKey(short, { balance: 10 });
  sim.setDefault({ delayMs: 5000 });
  const res = await postJson(`${short.url}/v1/chat/completions`, { authorization: `Bearer ${key.key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.status, 504);
  t.match(res.json, { error: { code: 504, type: 'timeout_error', reason: 'routing_timeout' } });
  t.match(await usageRow(short, header(res, 'x-request-id')), { status: 504, errorType: 'routing_timeout', attempts: 1, costMicros: 0 });
  const held = await short.app.holds.held(key.accountId, key.keyId);
  t.same(held, { accountHeldMicros: 0, keyHeldMicros: 0 }, 'no hold outlives the call');
});
