import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { ceilMillion, charges, exactlyBilled as exactlyBilledAt, header, noHolds, postJson, usageRow } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { VertexAccount } from '../support/simulator/vertex.js';

/**
 * Google Vertex AI (issue 29): a provider of type vertex sends Gemini's and Claude's own
 * requests to Vertex's publisher paths with an OAuth2 token of its service account, which the
 * simulator issues for a checked JWT assertion. Every chat format, JSON and streamed, with
 * tools and an image, on both publishers; the token exchanged once and shared; an expired
 * token refreshed once; a refused assertion and a token refused twice each with its clear
 * error; embeddings; exact µINR per call.
 */

const PRICE = { input_cost_per_1m: 25.2, output_cost_per_1m: 210, context_window: 200000, max_output_tokens: 8192 };
const IMAGE = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WEATHER = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

let sim: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

t.before(async () => {
  sim = await ProviderSimulator.start();
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  // A key file the token endpoint does not know: its assertion's signature fails.
  const stranger = VertexAccount.withNewKey(sim.vertex.tokenUri).keyFile();
  gw = await startTestGateway({
    providers: {
      ...simulatedProviders(sim.url),
      vertex: { type: 'vertex', project: 'sim-project', region: 'us-central1', base_url: sim.vertexBaseUrl, credentials: JSON.stringify(sim.vertex.keyFile()), timeouts: fast },
      'vertex-stranger': { type: 'vertex', project: 'sim-project', region: 'global', base_url: sim.vertexBaseUrl, credentials: JSON.stringify(stranger), timeouts: fast },
    },
    routing: { retries: 1, max_retry_after: '1s' },
    models: [
      { id: 'vertex/gemini-2.5-flash', name: 'Gemini on Vertex', ...PRICE },
      { id: 'vertex/claude-sonnet-4-5@20250929', name: 'Claude on Vertex', ...PRICE },
      { id: 'vertex-stranger/gemini-2.5-flash', name: 'refused assertion', ...PRICE },
      { id: 'vertex/gemini-embedding-001', name: 'embeddings on Vertex', type: 'embedding', input_cost_per_1m: 12.6, context_window: 2048, dimensions: 3072, min_dimensions: 128 },
    ],
  });
  funded = await fundedKey(gw, { balance: 100 });
});
t.teardown(async () => {
  await gw?.stop();
  await sim?.close();
});

const openai = (): OpenAI => new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const anthropic = (): Anthropic => new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 });
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

function exactlyBilled(t: Tap, requestId: string | undefined | null): Promise<void> {
  return exactlyBilledAt(t, gw, funded.accountId, requestId, { input: 25_200_000n, output: 210_000_000n }, 'the upstream\'s usage');
}

t.test('Gemini on Vertex: chat completions with tools and an image, the publisher path and the token', async (t) => {
  sim.reset();
  sim.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Pune' } }] });
  const response = await openai()
    .chat.completions.create({
      model: 'vertex/gemini-2.5-flash',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture, and the weather in Pune?' }, { type: 'image_url', image_url: { url: IMAGE } }] }],
      tools: [WEATHER],
      max_tokens: 100,
    })
    .withResponse();
  t.equal(response.data.choices[0]?.finish_reason, 'tool_calls');
  t.same(JSON.parse(response.data.choices[0]?.message.tool_calls?.[0]?.type === 'function' ? response.data.choices[0].message.tool_calls[0].function.arguments : '{}'), { city: 'Pune' });
  const upstream = sim.requests[0];
  t.match(upstream?.vertex, { publisher: 'google', method: 'generateContent', project: 'sim-project', region: 'us-central1' });
  t.match(upstream?.headers.authorization, /^Bearer ya29\.sim-/, 'an access token the token endpoint issued');
  t.match(JSON.stringify(upstream?.body), /inlineData/, 'the image went as Gemini\'s inline data');
  t.equal(response.response.headers.get('x-gateway-provider'), 'vertex');
  await exactlyBilled(t, response.response.headers.get('x-request-id'));
});

t.test('Gemini on Vertex streamed (alt=sse) in the chat and responses formats', async (t) => {
  sim.reset();
  sim.enqueue({ text: 'Streaming from Vertex, word by word.' });
  const stream = await openai().chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'stream please' }], stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage = false;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usage = true;
  }
  t.equal(text, 'Streaming from Vertex, word by word.');
  t.ok(usage, 'the usage chunk');
  t.match(sim.requests[0]?.vertex, { method: 'streamGenerateContent' });
  t.equal(sim.requests[0]?.query, 'alt=sse');
  const response = await openai().responses.create({ model: 'vertex/gemini-2.5-flash', input: 'hello from the responses format', max_output_tokens: 64 });
  t.equal(response.status, 'completed');
  const streamed = await openai().responses.create({ model: 'vertex/gemini-2.5-flash', input: 'stream the responses format', stream: true });
  let completed = false;
  for await (const event of streamed) if (event.type === 'response.completed') completed = true;
  t.ok(completed, 'response.completed');
  gw.app.settlement.drain();
  const rows = await gw.app.store.usage.list({ accountId: funded.accountId, limit: 1 });
  await exactlyBilled(t, rows[0]?.requestId);
});

t.test('Claude on Vertex: rawPredict and streamRawPredict with anthropic_version, through all three formats', async (t) => {
  sim.reset();
  sim.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Kochi' } }] });
  const message = await anthropic()
    .messages.create({
      model: 'vertex/claude-sonnet-4-5@20250929',
      max_tokens: 200,
      tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Kochi? And this image:' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGE.split(',')[1] ?? '' } }] }],
    })
    .withResponse();
  t.equal(message.data.stop_reason, 'tool_use');
  t.match(message.data.content.find((block) => block.type === 'tool_use'), { name: 'get_weather', input: { city: 'Kochi' } });
  const upstream = sim.requests[0];
  t.match(upstream?.vertex, { publisher: 'anthropic', method: 'rawPredict' }, "Anthropic's publisher path (the model named there, @ and all)");
  t.equal(upstream?.model, 'claude-sonnet-4-5@20250929');
  await exactlyBilled(t, message.response.headers.get('x-request-id'));

  const events: string[] = [];
  // Claude Code's betas: Vertex refuses those it does not serve, so a client's are named, not sent.
  const stream = anthropic().messages.stream({ model: 'vertex/claude-sonnet-4-5@20250929', max_tokens: 64, messages: [{ role: 'user', content: 'stream it' }] }, { headers: { 'anthropic-beta': 'oauth-2025-04-20,interleaved-thinking-2025-05-14' } });
  for await (const event of stream) events.push(event.type);
  t.equal(events.at(-1), 'message_stop');
  t.match(sim.requests[1]?.vertex, { method: 'streamRawPredict' });
  t.equal(sim.requests[1]?.headers['anthropic-beta'], undefined, 'no client beta sent to Vertex');
  t.match((await stream.withResponse()).response.headers.get('x-gateway-ignored-params'), /anthropic-beta: oauth-2025-04-20, anthropic-beta: interleaved-thinking-2025-05-14/);

  const completion = await openai().chat.completions.create({ model: 'vertex/claude-sonnet-4-5@20250929', messages: [{ role: 'user', content: 'from the chat format' }], stream: true });
  let text = '';
  for await (const chunk of completion) text += chunk.choices[0]?.delta.content ?? '';
  t.match(text, /simulator/);
  const response = await openai().responses.create({ model: 'vertex/claude-sonnet-4-5@20250929', input: 'and the responses format' });
  t.equal(response.status, 'completed');
  await noHolds(t, gw, funded);
});

t.test('the access token: exchanged once and shared, refreshed once when Vertex says it expired', async (t) => {
  sim.reset();
  const before = sim.vertex.exchanges;
  await Promise.all([1, 2, 3, 4].map((n) => openai().chat.completions.create({ model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: `call ${n}` }] })));
  t.equal(sim.vertex.exchanges, before, 'the cached token served every call');
  sim.vertex.expireTokens();
  sim.reset();
  const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'vertex/gemini-2.5-flash', messages: [{ role: 'user', content: 'after expiry' }] });
  t.equal(res.status, 200, 'the call succeeds');
  t.equal(sim.vertex.exchanges, before + 1, 'one new exchange');
  t.equal(sim.requests.length, 1, 'the refused request was not recorded as a call: Vertex refused it at the door');
  t.equal(sim.vertex.refusals, 1, 'one 401 from Vertex, then the new token');
});

t.test('a token Vertex keeps refusing: asked once more, never in a loop', async (t) => {
  sim.reset();
  sim.vertex.refuseAll = true;
  t.teardown(() => {
    sim.vertex.refuseAll = false;
  });
  const refusalsBefore = sim.vertex.refusals;
  const exchangesBefore = sim.vertex.exchanges;
  const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'vertex/claude-sonnet-4-5@20250929', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.status, 502);
  t.match(res.json.error, { code: 502, reason: 'upstream_auth_failed', message: /vertex refused the gateway's credentials \(HTTP 401\): an administrator must check the provider's credentials/ });
  // Retries: 1 in the config, so the router asks twice; each ask refreshes once.
  const refusals = sim.vertex.refusals - refusalsBefore;
  t.ok(refusals >= 2 && refusals <= 4, `${refusals} refusals: at most two per attempt`);
  t.ok(sim.vertex.exchanges - exchangesBefore <= refusals, 'one exchange per refusal at most');
  gw.app.settlement.drain();
  t.same(await charges(gw, funded.accountId, header(res, 'x-request-id')), [], 'nothing charged');
});

t.test('an assertion the token endpoint refuses: a clear credentials error', async (t) => {
  sim.reset();
  const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'vertex-stranger/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.status, 502);
  t.match(res.json.error, { code: 502, reason: 'upstream_auth_failed', message: /vertex-stranger could not get an access token for its service account \(HTTP 400: invalid_grant \(Invalid JWT Signature\.\)\): an administrator must check the provider's credentials/ });
  t.notMatch(res.text, /iam\.gserviceaccount\.com/, "the account's email is not the client's to see");
  t.equal(sim.requests.length, 0, 'no model call without a token');
  gw.app.settlement.drain();
  t.same(await charges(gw, funded.accountId, header(res, 'x-request-id')), [], 'nothing charged');
  await noHolds(t, gw, funded);
});

t.test('embeddings on Vertex (:predict), one text a call for gemini-embedding-001', async (t) => {
  sim.reset();
  const predictionsBefore = sim.vertex.predictions;
  const response = await openai().embeddings.create({ model: 'vertex/gemini-embedding-001', input: ['one fish', 'two fish'], dimensions: 256 }).withResponse();
  t.equal(response.data.data.length, 2);
  t.equal(response.data.data[0]?.embedding.length, 256);
  const norm = Math.sqrt((response.data.data[0]?.embedding ?? []).reduce((sum, value) => sum + value * value, 0));
  t.ok(Math.abs(norm - 1) < 1e-3, 'a shortened vector normalized');
  t.equal(sim.vertex.predictions - predictionsBefore, 2, 'two :predict calls');
  gw.app.settlement.drain();
  const row = await usageRow(gw, response.response.headers.get('x-request-id') ?? undefined);
  t.ok((row?.inputTokens ?? 0) > 0, 'token counts from the statistics');
  t.equal(row?.costMicros, ceilMillion(BigInt(row?.inputTokens ?? 0) * 12_600_000n), "priced at the model's input price");
});
