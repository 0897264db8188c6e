import Anthropic from '@anthropic-ai/sdk';
import t from 'tap';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { balanceMicros, header, postJson } from '../support/e2e.js';

/**
 * POST /v1/messages/count_tokens (issue 27): Anthropic's shape for every catalog chat model:
 * counted by Anthropic itself (the simulator's count_tokens) for Claude models, estimated with
 * the gateway's tokenizer for the others; free (no charge, no usage row) but a slot of the
 * key's rate limit; errors in Anthropic's shape; `?beta=true` accepted on every messages route.
 */

let sim: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

const SONNET = 'anthropic/claude-sonnet-4-5';
const MINI = 'openai/gpt-4o-mini';
const FLASH = 'gemini/gemini-2.5-flash';
const COUNT = 'x-gateway-token-count';

const SYSTEM = 'You are a careful assistant who answers in one short paragraph.';
const MESSAGES = [
  { role: 'user' as const, content: 'What is the boiling point of water at sea level, in degrees Celsius and Fahrenheit?' },
  { role: 'assistant' as const, content: '100 °C, which is 212 °F.' },
  { role: 'user' as const, content: 'And on the top of Mount Everest, roughly?' },
];
const TOOLS = [{ name: 'lookup', description: 'Looks a fact up', input_schema: { type: 'object' as const, properties: { query: { type: 'string' } }, required: ['query'] } }];

t.before(async () => {
  sim = await ProviderSimulator.start();
  gw = await startTestGateway({ providers: simulatedProviders(sim.url), aliases: { 'claude-opus-5-5': SONNET, 'claude-haiku-5-5': MINI } });
  funded = await fundedKey(gw, { balance: 10 });
});

t.beforeEach(() => sim.reset());

t.teardown(async () => {
  await gw?.stop();
  await sim?.close();
});

const client = (key = funded.key): Anthropic => new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
const headers = (key = funded.key): Record<string, string> => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });

t.test('a Claude model: counted by Anthropic, with the request the family would send it', async (t) => {
  const counted = await client().messages.countTokens({ model: SONNET, system: SYSTEM, messages: MESSAGES, tools: TOOLS }).withResponse();
  t.equal(counted.response.headers.get(COUNT), 'upstream', 'the header says Anthropic counted');
  t.equal(counted.response.headers.get('x-gateway-model'), SONNET);
  t.equal(counted.response.headers.get('x-gateway-provider'), 'anthropic');
  t.equal(sim.requests.length, 1);
  const upstream = sim.requests[0];
  t.equal(upstream?.path, '/v1/messages/count_tokens');
  t.equal(upstream?.model, 'claude-sonnet-4-5', 'the deployment\'s own model name');
  const body = upstream?.body as Record<string, unknown>;
  t.notOk('max_tokens' in body || 'stream' in body, 'no max_tokens, no stream: Anthropic refuses them');
  t.match(body, { system: [{ type: 'text', text: SYSTEM }], tools: [{ name: 'lookup' }] });

  // The count is what a call with this prompt reports as its input.
  const message = await client().messages.create({ model: SONNET, max_tokens: 100, system: SYSTEM, messages: MESSAGES, tools: TOOLS });
  t.ok(counted.data.input_tokens > 0);
  t.equal(counted.data.input_tokens, message.usage.input_tokens, `${counted.data.input_tokens} tokens, as the call was billed`);

  // The simulator refuses what the real endpoint refuses, in its words: the gateway never sends it.
  const direct = await postJson(`${sim.url}/v1/messages/count_tokens`, { 'x-api-key': sim.apiKey, 'anthropic-version': '2023-06-01' }, { model: 'claude-sonnet-4-5', max_tokens: 100, messages: MESSAGES });
  t.equal(direct.status, 400);
  t.match(direct.json, { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Extra inputs are not permitted' } });
});

t.test('an alias counts as its target; the beta SDK path (?beta=true) works', async (t) => {
  const counted = await client().messages.countTokens({ model: 'claude-opus-5-5', messages: MESSAGES });
  t.ok(counted.input_tokens > 0);
  t.equal(sim.requests[0]?.model, 'claude-sonnet-4-5');

  const beta = await client().beta.messages.countTokens({ model: SONNET, messages: MESSAGES, betas: ['token-counting-2024-11-01'] });
  t.equal(beta.input_tokens, counted.input_tokens, 'the beta endpoint (POST ...?beta=true) answers the same');
  t.equal(sim.requests[1]?.path, '/v1/messages/count_tokens');

  const raw = await postJson(`${gw.url}/v1/messages/count_tokens?beta=true`, headers(), { model: SONNET, messages: MESSAGES });
  t.equal(raw.status, 200);
  t.same(raw.json, { input_tokens: counted.input_tokens }, 'exactly {input_tokens}');
  const call = await postJson(`${gw.url}/v1/messages?beta=true`, headers(), { model: SONNET, max_tokens: 50, messages: MESSAGES });
  t.equal(call.status, 200, '/v1/messages?beta=true too');
});

t.test('OpenAI and Gemini models: the gateway\'s estimate, said so', async (t) => {
  for (const model of [MINI, FLASH, 'claude-haiku-5-5']) {
    const counted = await client().messages.countTokens({ model, system: SYSTEM, messages: MESSAGES }).withResponse();
    t.equal(counted.response.headers.get(COUNT), 'estimate', `${model}: estimated`);
    t.equal(sim.requests.length, 0, `${model}: nothing upstream`);
    // Against what the (simulated) upstream bills for the prompt: the estimate errs high, by the
    // family's margin (1.15 OpenAI, 1.25 Gemini) and a few tokens of framing per message at most.
    const message = await client().messages.create({ model, max_tokens: 50, system: SYSTEM, messages: MESSAGES });
    const billed = message.usage.input_tokens;
    t.ok(counted.data.input_tokens >= billed, `${model}: ${counted.data.input_tokens} ≥ ${billed} billed`);
    t.ok(counted.data.input_tokens <= Math.ceil(billed * 1.3) + 40, `${model}: ${counted.data.input_tokens} within the margin of ${billed}`);
    sim.reset();
  }
  const max = await postJson(`${gw.url}/v1/messages/count_tokens`, headers(), { model: MINI, max_tokens: 32000, stream: true, messages: MESSAGES });
  t.equal(max.status, 200, 'a max_tokens or stream sent anyway is ignored, not refused');
});

t.test('an Anthropic upstream that cannot count: the estimate; one that refuses the request: its 400', async (t) => {
  const overloaded = await postJson(`${gw.url}/v1/messages/count_tokens`, headers(), { model: SONNET, messages: [{ role: 'user', content: 'SIM: {"error": {"status": 529}}' }] });
  t.equal(overloaded.status, 200);
  t.equal(header(overloaded, COUNT), 'estimate', 'estimated when Anthropic is overloaded');
  t.ok(overloaded.json.input_tokens > 0);

  const refused = await postJson(`${gw.url}/v1/messages/count_tokens`, headers(), { model: SONNET, messages: [{ role: 'user', content: 'SIM: {"error": {"status": 400, "message": "messages.0.content: bad block"}}' }] });
  t.equal(refused.status, 400);
  t.match(refused.json, { type: 'error', error: { type: 'invalid_request_error', message: 'messages.0.content: bad block' } }, 'Anthropic\'s own words, in its shape');
});

t.test('auth and bad bodies: Anthropic\'s error shape, the field named', async (t) => {
  const anonymous = await postJson(`${gw.url}/v1/messages/count_tokens`, { 'anthropic-version': '2023-06-01' }, { model: SONNET, messages: MESSAGES });
  t.equal(anonymous.status, 401);
  t.match(anonymous.json, { type: 'error', error: { type: 'authentication_error' } });
  const sdk = await client('sk-0000000000000000000000000000000000000000000000000000000000000000').messages.countTokens({ model: SONNET, messages: MESSAGES }).catch((error: unknown) => error);
  t.ok(sdk instanceof Anthropic.AuthenticationError, 'a wrong key is an AuthenticationError through the SDK');
  const bearer = await postJson(`${gw.url}/v1/messages/count_tokens`, { authorization: `Bearer ${funded.key}` }, { model: MINI, messages: MESSAGES });
  t.equal(bearer.status, 200, 'Authorization: Bearer works too');

  const cases: Array<[unknown, number, RegExp]> = [
    [{ model: SONNET }, 400, /^messages/],
    [{ messages: MESSAGES }, 400, /^model/],
    [{ model: SONNET, messages: [{ role: 'robot', content: 'hi' }] }, 400, /^messages\[0\]\.role/],
    [{ model: SONNET, messages: MESSAGES, temperature: 3 }, 400, /^temperature/],
    [[1, 2], 400, /object/],
    [{ model: 'anthropic/claude-opus-9', messages: MESSAGES }, 404, /claude-opus-9/],
    [{ model: 'openai/text-embedding-3-small', messages: MESSAGES }, 400, /embedding model/],
  ];
  for (const [body, status, message] of cases) {
    const res = await postJson(`${gw.url}/v1/messages/count_tokens`, headers(), body);
    t.equal(res.status, status, `${JSON.stringify(body).slice(0, 60)}: ${status}`);
    t.equal(res.json?.type, 'error');
    t.match(res.json?.error?.message, message, res.json?.error?.message);
  }
  t.equal(sim.requests.length, 0, 'nothing upstream');
});

t.test('free, but a slot of the key\'s rate limit', async (t) => {
  const limited = await fundedKey(gw, { balance: 1, key: { rate_limit: 2 } });
  const before = await balanceMicros(gw, limited.accountId);
  const first = await postJson(`${gw.url}/v1/messages/count_tokens`, headers(limited.key), { model: SONNET, messages: MESSAGES });
  t.equal(first.status, 200);
  t.equal(header(first, 'x-ratelimit-limit-requests'), '2');
  t.equal(header(first, 'x-ratelimit-remaining-requests'), '1');
  const second = await postJson(`${gw.url}/v1/messages/count_tokens`, headers(limited.key), { model: MINI, messages: MESSAGES });
  t.equal(second.status, 200);
  const third = await postJson(`${gw.url}/v1/messages/count_tokens`, headers(limited.key), { model: MINI, messages: MESSAGES });
  t.equal(third.status, 429, 'the third in a minute is refused');
  t.match(third.json, { type: 'error', error: { type: 'rate_limit_error' } });
  t.ok(Number(header(third, 'retry-after')) >= 1, 'with Retry-After');
  const call = await postJson(`${gw.url}/v1/messages`, headers(limited.key), { model: MINI, max_tokens: 10, messages: MESSAGES });
  t.equal(call.status, 429, 'the counts took the window calls use');

  gw.app.settlement.drain();
  t.equal(await balanceMicros(gw, limited.accountId), before, 'nothing charged');
  t.same((await gw.app.store.usage.list({ apiKeyId: limited.keyId, limit: 10 })).filter((row) => row.endpoint === 'messages.count_tokens'), [], 'no usage row');

  const empty = await fundedKey(gw, { balance: 0 });
  const noMoney = await postJson(`${gw.url}/v1/messages/count_tokens`, headers(empty.key), { model: MINI, messages: MESSAGES });
  t.equal(noMoney.status, 200, 'an empty wallet can count (it costs nothing)');
});
