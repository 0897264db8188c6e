import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { mayWriteCache, worstCaseMicros } from '../../src/core/pricing.js';
import { promptTokenBound } from '../../src/core/tokens.js';
import type { ChatRequest } from '../../src/core/canonical.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { header, noHolds, postJson, sleep, usageRow } from '../support/e2e.js';

/**
 * Output limits (issue 27): a max_tokens above the model's output limit is lowered to the limit
 * on the messages format (Claude Code asks for 32000 and 128000) and, with
 * `routing.clamp_max_tokens: true`, on every format; the answer says so in
 * `x-gateway-max-tokens-clamped`, the hold is priced at the lowered limit, and with fallbacks
 * each hop clamps to its own model. Elsewhere the 400 stays.
 */

let sim: ProviderSimulator;
let gw: TestGateway;
let clamping: TestGateway;
let funded: FundedKey;

const MINI = 'openai/gpt-4o-mini'; // max_output_tokens 16384
const HAIKU_35 = 'anthropic/claude-3-5-haiku-latest'; // max_output_tokens 8192
const CLAMPED = 'x-gateway-max-tokens-clamped';

t.before(async () => {
  sim = await ProviderSimulator.start();
  const config = { providers: simulatedProviders(sim.url), routing: { retries: 2, cooldown: { failures: 1000 } } };
  gw = await startTestGateway(config);
  clamping = await startTestGateway({ ...config, routing: { ...config.routing, clamp_max_tokens: true } });
  funded = await fundedKey(gw, { balance: 100 });
});

t.beforeEach(() => sim.reset());

t.teardown(async () => {
  await gw?.stop();
  await clamping?.stop();
  await sim?.close();
});

const messagesHeaders = (key: string): Record<string, string> => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });

t.test('messages: max_tokens above the limit is lowered to it, and the answer says so (JSON and stream)', async (t) => {
  const res = await postJson(`${gw.url}/v1/messages?beta=true`, messagesHeaders(funded.key), { model: MINI, max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.status, 200, 'not refused');
  t.equal(header(res, CLAMPED), '32000->16384');
  t.equal(sim.requests[0]?.body && (sim.requests[0].body as Record<string, unknown>).max_completion_tokens, 16384, 'the upstream was asked for the limit');
  t.match(await usageRow(gw, header(res, 'x-request-id')), { model: MINI, status: 200 });

  const stream = await postJson(`${gw.url}/v1/messages?beta=true`, messagesHeaders(funded.key), { model: MINI, max_tokens: 128000, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(stream.status, 200);
  t.equal(header(stream, CLAMPED), '128000->16384', 'on a stream too');
  t.match(stream.text, /event: message_stop/);

  // The SDK streams a request this large (it refuses it unstreamed, as it would take long on Claude).
  const sdk = new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 }).messages.stream({ model: MINI, max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] });
  const { response } = await sdk.withResponse();
  t.equal(response.headers.get(CLAMPED), '32000->16384', 'through the official SDK');
  t.equal((await sdk.finalMessage()).model, MINI);

  const within = await postJson(`${gw.url}/v1/messages`, messagesHeaders(funded.key), { model: MINI, max_tokens: 16384, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(within.status, 200);
  t.equal(header(within, CLAMPED), undefined, 'no header when nothing was lowered');
  await noHolds(t, gw, funded);
});

t.test('the hold is priced at the lowered limit', async (t) => {
  const mini = gw.app.catalog.get(MINI);
  if (!mini) throw new Error('no gpt-4o-mini');
  const request = { messages: [{ role: 'user', content: [{ type: 'text', text: 'hold me' }] }] } as unknown as ChatRequest;
  const bound = promptTokenBound(request);
  const lowered = worstCaseMicros(mini.pricing, bound, 16384, mayWriteCache(request));
  const asked = worstCaseMicros(mini.pricing, bound, 32000, mayWriteCache(request));

  // Seen while the call runs, on a key of its own (settled calls hold their cost until their batch is written).
  const own = await fundedKey(gw, { balance: 10 });
  sim.enqueue({ delayMs: 700 });
  const call = postJson(`${gw.url}/v1/messages`, messagesHeaders(own.key), { model: MINI, max_tokens: 32000, messages: [{ role: 'user', content: 'hold me' }] });
  let held = 0;
  for (let tries = 0; tries < 100 && held === 0; tries++) {
    await sleep(10);
    held = (await gw.app.holds.held(own.accountId, own.keyId)).keyHeldMicros;
  }
  t.equal(held, lowered, `held ${lowered} µINR: the worst case of 16384 output tokens, not of 32000 (${asked})`);
  t.equal((await call).status, 200);

  // A wallet that covers the lowered limit's worst case but not the asked one's.
  const between = await fundedKey(gw, { balance: Math.ceil((lowered + asked) / 2) / 1e6 });
  const res = await postJson(`${gw.url}/v1/messages`, messagesHeaders(between.key), { model: MINI, max_tokens: 32000, messages: [{ role: 'user', content: 'hold me' }] });
  t.equal(res.status, 200, 'admitted: the hold is the lowered one');
  await noHolds(t, gw, own);
  await noHolds(t, gw, between);
});

t.test('chat completions and responses still refuse it unless routing.clamp_max_tokens', async (t) => {
  const chat = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: MINI, max_tokens: 20000, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.status, 400);
  t.match(chat.json.error, { type: 'invalid_request_error', param: 'max_tokens', message: `max_tokens: must be at most 16384 for ${MINI}` });
  const responses = await postJson(`${gw.url}/v1/responses`, { authorization: `Bearer ${funded.key}` }, { model: MINI, max_output_tokens: 20000, input: 'hi' });
  t.equal(responses.status, 400);
  t.match(responses.json.error, { param: 'max_output_tokens' });
  t.equal(sim.requests.length, 0, 'nothing upstream');

  const other = await fundedKey(clamping, { balance: 100 });
  const openai = new OpenAI({ apiKey: other.key, baseURL: `${clamping.url}/v1`, maxRetries: 0 });
  const clamped = await openai.chat.completions.create({ model: MINI, max_tokens: 20000, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  t.equal(clamped.response.headers.get(CLAMPED), '20000->16384', 'clamp_max_tokens: chat completions clamps');
  t.equal((sim.requests[0]?.body as Record<string, unknown>).max_completion_tokens, 16384);
  const stream = await openai.chat.completions.create({ model: MINI, max_completion_tokens: 50000, stream: true, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  t.equal(stream.response.headers.get(CLAMPED), '50000->16384', 'streams too');
  for await (const _chunk of stream.data) {
    // drained
  }
  const response = await openai.responses.create({ model: MINI, max_output_tokens: 20000, input: 'hi' }).withResponse();
  t.equal(response.response.headers.get(CLAMPED), '20000->16384', 'and responses');
  await noHolds(t, clamping, other);
});

t.test('with fallbacks each hop clamps to its own model', async (t) => {
  // Claude Haiku 3.5 (8192) fails; gpt-4o-mini (16384) serves.
  sim.enqueue({ error: { status: 529 } });
  const res = await postJson(`${gw.url}/v1/messages`, { ...messagesHeaders(funded.key), 'x-gateway-fallbacks': MINI }, { model: HAIKU_35, max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.status, 200);
  t.equal(header(res, 'x-gateway-model'), MINI);
  t.equal(header(res, CLAMPED), '32000->16384', 'the header states the hop that served');
  t.equal((sim.requests[0]?.body as Record<string, unknown>).max_tokens, 8192, 'Claude was asked for its own limit');
  t.equal((sim.requests[1]?.body as Record<string, unknown>).max_completion_tokens, 16384, 'gpt-4o-mini for its own');

  const first = await postJson(`${gw.url}/v1/messages`, { ...messagesHeaders(funded.key), 'x-gateway-fallbacks': MINI }, { model: HAIKU_35, max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(header(first, CLAMPED), '32000->8192', 'served by the model asked for: its limit');
  await noHolds(t, gw, funded);
});
