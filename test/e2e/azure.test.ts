import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import t from 'tap';
import { ceilMillion, charges, exactlyBilled as exactlyBilledAt, header, noHolds, postJson, usageRow } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { sampleAudio } from '../support/simulator/audio.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * Azure OpenAI (issue 29): a provider of type azure is OpenAI's wire at Azure's paths with
 * `api-key`, through the deployments API (`api-version`) or the v1 API; every chat format and
 * embeddings, JSON and streamed, with tools and an image; Azure's prompt-filter chunk never
 * reaches the client; its refusals (a wrong key, a deployment that does not exist, the content
 * filter, a 429 with retry-after-ms) each with its clear error; exact µINR per call.
 */

const PRICE = { input_cost_per_1m: 12.6, output_cost_per_1m: 50.4, context_window: 128000, max_output_tokens: 16384 };
const IMAGE = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WEATHER = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

let sim: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

t.before(async () => {
  sim = await ProviderSimulator.start();
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  gw = await startTestGateway({
    providers: {
      ...simulatedProviders(sim.url),
      azure: { type: 'azure', base_url: `${sim.url}/azure`, api_key: 'sim-key', api_version: '2024-10-21', timeouts: fast },
      'azure-v1': { type: 'azure', base_url: `${sim.url}/azure`, api_key: 'sim-key', api: 'v1', timeouts: fast },
      'azure-wrong': { type: 'azure', base_url: `${sim.url}/azure`, api_key: 'not-the-key', timeouts: fast },
    },
    routing: { retries: 1, max_retry_after: '1s' },
    models: [
      { id: 'azure/gpt-4o-mini', name: 'GPT-4o mini on Azure', ...PRICE },
      { id: 'azure-v1/gpt-4o-mini', name: 'GPT-4o mini on Azure (v1 API)', ...PRICE },
      { id: 'azure-wrong/gpt-4o-mini', name: 'wrong key', ...PRICE },
      { id: 'azure/missing-deployment', name: 'no such deployment', ...PRICE },
      { id: 'azure/text-embedding-3-small', name: 'embeddings on Azure', type: 'embedding', input_cost_per_1m: 1.68, context_window: 8192, dimensions: 1536 },
      { id: 'azure/tts', name: 'speech on Azure', type: 'speech', upstream_model: 'tts-1', context_window: 4096, input_cost_per_1m_chars: 1260 },
      { id: 'azure/whisper', name: 'transcription on Azure', type: 'transcription', upstream_model: 'whisper-1', cost_per_minute: 0.504 },
      { id: 'azure/gpt-image-1', name: 'images on Azure', type: 'image', sizes: ['1024x1024'], qualities: ['low'], max_images: 1, cost_per_image: 0.924, image_prices: { '1024x1024/low': 0.924 } },
      // Azure first, OpenAI behind it: a deployment Azure does not know falls over to the next.
      { id: 'openai/azure-first', name: 'routed', ...PRICE, deployments: [{ provider: 'azure', upstream_model: 'missing-gpt-4o' }, { provider: 'openai', upstream_model: 'gpt-4o-mini', priority: 2 }] },
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

/** The call's usage row priced at the model's prices, to the µINR, and its one charge. */
function exactlyBilled(t: Tap, requestId: string | undefined | null): Promise<void> {
  return exactlyBilledAt(t, gw, funded.accountId, requestId, { input: 12_600_000n, output: 50_400_000n });
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('chat completions through the deployments API: path, api-version, api-key; JSON with tools and an image', async (t) => {
  sim.reset();
  sim.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Pune' } }] });
  const response = await openai()
    .chat.completions.create({
      model: 'azure/gpt-4o-mini',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture, and the weather in Pune?' }, { type: 'image_url', image_url: { url: IMAGE } }] }],
      tools: [WEATHER],
      max_tokens: 100,
    })
    .withResponse();
  t.equal(response.data.choices[0]?.finish_reason, 'tool_calls');
  t.same(JSON.parse(response.data.choices[0]?.message.tool_calls?.[0]?.type === 'function' ? response.data.choices[0].message.tool_calls[0].function.arguments : '{}'), { city: 'Pune' });
  const upstream = sim.requests[0];
  t.match(upstream?.azure, { api: 'deployments', deployment: 'gpt-4o-mini', apiVersion: '2024-10-21' }, 'the deployments path with its api-version');
  t.equal(upstream?.headers['api-key'], 'sim-key', 'the key as api-key');
  t.match(JSON.stringify(upstream?.body), /data:image\/png;base64/, 'the image went upstream');
  t.equal(response.response.headers.get('x-gateway-provider'), 'azure');
  await exactlyBilled(t, response.response.headers.get('x-request-id'));
});

t.test('a stream: Azure\'s prompt-filter chunk (no choices) never reaches the client', async (t) => {
  sim.reset();
  sim.enqueue({ text: 'Streaming from Azure, word by word.' });
  const stream = await openai().chat.completions.create({ model: 'azure/gpt-4o-mini', messages: [{ role: 'user', content: 'stream please' }], stream: true, stream_options: { include_usage: true } });
  let text = '';
  let requestId: string | undefined;
  const raw: unknown[] = [];
  for await (const chunk of stream) {
    raw.push(chunk);
    requestId = chunk.id;
    text += chunk.choices[0]?.delta.content ?? '';
  }
  t.equal(text, 'Streaming from Azure, word by word.');
  t.notOk(raw.some((chunk) => JSON.stringify(chunk).includes('prompt_filter_results')), 'no prompt_filter_results chunk forwarded');
  t.notOk(raw.some((chunk) => (chunk as { choices: unknown[]; usage?: unknown }).choices.length === 0 && !(chunk as { usage?: unknown }).usage), 'no empty chunk but the usage one');
  t.ok(requestId, 'chunks carry an id');
  gw.app.settlement.drain();
  const rows = await gw.app.store.usage.list({ accountId: funded.accountId, limit: 1 });
  await exactlyBilled(t, rows[0]?.requestId);
});

t.test('the messages and responses formats on an Azure deployment, JSON and stream', async (t) => {
  sim.reset();
  const message = await anthropic().messages.create({ model: 'azure/gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'hello from the messages format' }] });
  t.equal(message.type, 'message');
  t.match(message.content[0], { type: 'text', text: /simulator/ });
  const events: string[] = [];
  const stream = anthropic().messages.stream({ model: 'azure/gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: 'stream it' }] });
  for await (const event of stream) events.push(event.type);
  t.equal(events.at(-1), 'message_stop');
  t.match((await stream.finalMessage()).content[0], { type: 'text' });

  const response = await openai().responses.create({ model: 'azure/gpt-4o-mini', input: 'hello from the responses format', max_output_tokens: 64 });
  t.equal(response.status, 'completed');
  t.match(response.output_text, /simulator/);
  const streamed = await openai().responses.create({ model: 'azure/gpt-4o-mini', input: 'stream the responses format', stream: true });
  let completed = false;
  for await (const event of streamed) if (event.type === 'response.completed') completed = true;
  t.ok(completed, 'response.completed');
  t.equal(sim.requests.length, 4);
  t.ok(sim.requests.every((request) => request.azure?.deployment === 'gpt-4o-mini'), 'every call to the deployment');
  await noHolds(t, gw, funded);
});

t.test('the v1 API: /openai/v1 paths, no api-version, the deployment in the body', async (t) => {
  sim.reset();
  const response = await openai().chat.completions.create({ model: 'azure-v1/gpt-4o-mini', messages: [{ role: 'user', content: 'v1 please' }] }).withResponse();
  t.match(sim.requests[0]?.azure, { api: 'v1' });
  t.equal(sim.requests[0]?.query, '', 'no api-version');
  t.match(sim.requests[0]?.body, { model: 'gpt-4o-mini' });
  await exactlyBilled(t, response.response.headers.get('x-request-id'));
});

t.test('embeddings on Azure', async (t) => {
  sim.reset();
  const response = await openai().embeddings.create({ model: 'azure/text-embedding-3-small', input: ['one', 'two'] }).withResponse();
  t.equal(response.data.data.length, 2);
  t.match(sim.requests[0]?.azure, { api: 'deployments', deployment: 'text-embedding-3-small' });
  gw.app.settlement.drain();
  const row = await usageRow(gw, response.response.headers.get('x-request-id') ?? undefined);
  t.equal(row?.costMicros, ceilMillion(BigInt(row?.inputTokens ?? 0) * 1_680_000n), 'priced at the model\'s input price');
});

t.test('speech, transcription and images on Azure deployments', async (t) => {
  sim.reset();
  const speech = await openai().audio.speech.create({ model: 'azure/tts', input: 'Namaste from Azure', voice: 'alloy', response_format: 'mp3' }).asResponse();
  t.equal(speech.status, 200);
  t.ok((await speech.arrayBuffer()).byteLength > 0, 'audio bytes');
  t.match(sim.requests.at(-1)?.azure, { api: 'deployments', deployment: 'tts-1' });

  const transcript = await openai().audio.transcriptions.create({ model: 'azure/whisper', file: await toFile(sampleAudio('wav'), 'a.wav', { type: 'audio/wav' }) });
  t.type(transcript.text, 'string');
  t.match(sim.requests.at(-1)?.azure, { api: 'deployments', deployment: 'whisper-1' });
  t.equal(sim.requests.at(-1)?.headers['api-key'], 'sim-key', 'the multipart upload carries api-key too');

  const image = await openai().images.generate({ model: 'azure/gpt-image-1', prompt: 'a lighthouse', size: '1024x1024', quality: 'low' });
  t.ok(image.data?.[0]?.b64_json ?? image.data?.[0]?.url, 'an image (inline or hosted by the gateway)');
  t.match(sim.requests.at(-1)?.azure, { api: 'deployments', deployment: 'gpt-image-1' });
  gw.app.settlement.drain();
  const rows = await gw.app.store.usage.list({ accountId: funded.accountId, limit: 3 });
  t.same(rows.map((row) => row.endpoint).sort(), ['audio.speech', 'audio.transcriptions', 'images.generations'].sort(), 'each billed');
});

t.test('refusals, each with its clear error', async (t) => {
  sim.reset();
  const wrongKey = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'azure-wrong/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(wrongKey.status, 502);
  t.match(wrongKey.json.error, { code: 502, reason: 'upstream_auth_failed', message: /azure-wrong refused the gateway's credentials .*api_key/ });

  const missing = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'azure/missing-deployment', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(missing.status, 502);
  t.match(missing.json.error, { code: 502, reason: 'upstream_deployment_not_found', message: /azure has no deployment of that name.*upstream_model/ });

  const filtered = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'azure/gpt-4o-mini', messages: [{ role: 'user', content: 'SIM: {"error":{"status":400,"code":"content_filter"}}' }] });
  t.equal(filtered.status, 400);
  t.match(filtered.json.error, { code: 400, type: 'invalid_request_error', reason: 'content_filter', param: 'messages', message: /content management policy/ });

  const limited = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'azure/gpt-4o-mini', messages: [{ role: 'user', content: 'SIM: {"error":{"status":429,"retryAfterSeconds":3}}' }] });
  t.equal(limited.status, 429);
  t.match(limited.json.error, { code: 429, reason: 'upstream_rate_limited' });
  t.equal(header(limited, 'retry-after'), '3', 'Azure\'s wait passed on');
  gw.app.settlement.drain();
  for (const res of [wrongKey, missing, filtered, limited]) t.same(await charges(gw, funded.accountId, header(res, 'x-request-id')), [], `${res.status}: nothing charged`);
  await noHolds(t, gw, funded);
});

t.test('a deployment Azure does not know falls over to the model\'s next deployment', async (t) => {
  sim.reset();
  const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/azure-first', messages: [{ role: 'user', content: 'route me' }] });
  t.equal(res.status, 200);
  t.equal(header(res, 'x-gateway-attempts'), '2', 'Azure, then OpenAI');
  t.equal(header(res, 'x-gateway-provider'), 'openai');
  t.equal(sim.requests.length, 1, 'only OpenAI answered (the missing deployment was refused at Azure\'s gate)');
});

t.test('a completion the content filter cuts ends with content_filter (refusal in the messages format)', async (t) => {
  sim.reset();
  sim.enqueue({ text: 'Partial answer', finish: 'content_filter' }, { text: 'Partial answer', finish: 'content_filter' });
  const completion = await openai().chat.completions.create({ model: 'azure-v1/gpt-4o-mini', messages: [{ role: 'user', content: 'something' }] });
  t.equal(completion.choices[0]?.finish_reason, 'content_filter');
  const message = await anthropic().messages.create({ model: 'azure-v1/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'something' }] });
  t.equal(message.stop_reason, 'refusal');
});
