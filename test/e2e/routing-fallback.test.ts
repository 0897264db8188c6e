import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { costMicros } from '../../src/core/pricing.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { balanceMicros, charges, header, noHolds, postJson, usageRow } from '../support/e2e.js';
import { readFileSync } from 'node:fs';

/**
 * Fallbacks across model families (issue 26): a call to an Anthropic model whose upstream
 * fails is served by OpenAI, then Gemini, in all three chat formats, as JSON and as streams,
 * driven by the official SDKs; each hop re-admitted and charged at the model that served; a
 * fallback the wallet cannot cover is skipped; every media kind falls back too. Each provider
 * family is a simulator of its own, failing on command.
 */

let ant: ProviderSimulator;
let oai: ProviderSimulator;
let gem: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

const CLAUDE = 'anthropic/claude-sonnet-4-5';
const MINI = 'openai/gpt-4o-mini';
const FLASH = 'gemini/gemini-2.5-flash';

t.before(async () => {
  [ant, oai, gem] = await Promise.all([ProviderSimulator.start(), ProviderSimulator.start(), ProviderSimulator.start()]);
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  gw = await startTestGateway({
    providers: {
      ...simulatedProviders(gem.url),
      anthropic: { type: 'anthropic', base_url: ant.url, api_key: 'sim-key', timeouts: fast },
      openai: { type: 'openai', base_url: `${oai.url}/v1`, api_key: 'sim-key', timeouts: fast },
      gemini: { type: 'gemini', base_url: gem.url, api_key: 'sim-key', timeouts: fast },
      deepgram: { type: 'deepgram', base_url: gem.url, api_key: 'sim-key', timeouts: fast },
    },
    // A cooldown that never trips here: every call makes the same attempts.
    routing: {
      retries: 2,
      cooldown: { failures: 1000 },
      fallbacks: {
        [CLAUDE]: [MINI, FLASH],
        'openai/text-embedding-3-small': ['gemini/gemini-embedding-001'],
        'openai/tts-1': ['deepgram/aura-2'],
        'openai/whisper-1': ['deepgram/nova-3'],
        'openai/dall-e-3': ['gemini/gemini-2.5-flash-image'],
      },
    },
  });
  funded = await fundedKey(gw, { balance: 1000 });
});

t.beforeEach(() => {
  for (const sim of [ant, oai, gem]) sim.reset();
});

t.teardown(async () => {
  await gw?.stop();
  await Promise.all([ant?.close(), oai?.close(), gem?.close()]);
});

const openai = (): OpenAI => new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const anthropic = (): Anthropic => new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 });

/** Anthropic overloaded, OpenAI broken: only Gemini answers. */
function failAnthropicAndOpenAi(): void {
  ant.setDefault({ error: { status: 529 } });
  oai.setDefault({ error: { status: 500 } });
}

t.test('Anthropic → OpenAI → Gemini, in all three formats, as JSON', async (t) => {
  failAnthropicAndOpenAi();
  const gemText = `Hello from the gemini simulator (model gemini-2.5-flash).`;

  const chat = await openai().chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  t.equal(chat.data.model, FLASH, 'chat completions: the answer names the model that served');
  t.equal(chat.data.choices[0]?.message.content, gemText);
  t.equal(chat.response.headers.get('x-gateway-model'), FLASH);
  t.equal(chat.response.headers.get('x-gateway-provider'), 'gemini');
  t.equal(chat.response.headers.get('x-gateway-attempts'), '3', 'Anthropic, then OpenAI, then Gemini');

  const responses = await openai().responses.create({ model: CLAUDE, input: 'hi' });
  t.equal(responses.model, FLASH, 'responses');
  t.equal(responses.output_text, gemText);

  const message = await anthropic().messages.create({ model: CLAUDE, max_tokens: 200, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(message.model, FLASH, 'messages');
  t.match(message.content, [{ type: 'text', text: gemText }]);

  t.equal(ant.requests.length, 3, 'each call tried Anthropic once');
  t.equal(oai.requests.length, 3, 'then OpenAI');
  t.equal(gem.requests.length, 3, 'then Gemini, which served');
  const row = await usageRow(gw, chat.response.headers.get('x-request-id') ?? undefined);
  t.match(row, { model: FLASH, provider: 'gemini', deployment: 'gemini:gemini-2.5-flash', attempts: 3, status: 200 });
});

t.test('Anthropic → OpenAI → Gemini, in all three formats, as streams', async (t) => {
  failAnthropicAndOpenAi();
  const chat = await openai().chat.completions.create({ model: CLAUDE, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  let text = '';
  let model = '';
  for await (const chunk of chat) {
    text += chunk.choices[0]?.delta?.content ?? '';
    model = chunk.model;
  }
  t.equal(model, FLASH, 'chat chunks name the model that served');
  t.match(text, /^Hello from the gemini simulator/);

  const responses = openai().responses.stream({ model: CLAUDE, input: 'hi' });
  const final = await responses.finalResponse();
  t.equal(final.status, 'completed');
  t.equal(final.model, FLASH);
  t.match(final.output_text, /^Hello from the gemini simulator/);

  const message = await anthropic().messages.stream({ model: CLAUDE, max_tokens: 200, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
  t.equal(message.model, FLASH);
  t.match(message.content, [{ type: 'text', text: /^Hello from the gemini simulator/ }]);
  t.equal(gem.requests.filter((r) => r.stream).length, 3, 'Gemini served three streams');
});

t.test('a stream that fails before its first content falls back invisibly; after it, the format\'s error ends it', async (t) => {
  // Anthropic starts its stream (message_start, content_block_start, ping) and breaks before any text.
  ant.enqueue({ disconnectAfterEvents: 2 });
  const raw = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': funded.key, 'anthropic-version': '2023-06-01' }, { model: CLAUDE, max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(raw.status, 200);
  t.equal(header(raw, 'x-gateway-model'), MINI, 'served by the first fallback');
  t.notMatch(raw.text, /event: error/, 'the client never saw the failed attempt');
  t.match(raw.text, /"model":"openai\/gpt-4o-mini"/, 'message_start names the model that served');
  t.match(raw.text, /event: message_stop/);

  ant.enqueue({ text: 'one two three four five six seven eight', chunkSize: 4, chunkDelayMs: 20, errorAfterEvents: { events: 6, message: 'overloaded now' } });
  const cut = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': funded.key, 'anthropic-version': '2023-06-01' }, { model: CLAUDE, max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(cut.status, 200);
  t.equal(header(cut, 'x-gateway-model'), CLAUDE);
  t.match(cut.text, /event: error\ndata: \{"type":"error","error":\{[^}]*"code":502/, 'messages: event: error');
  t.notMatch(cut.text, /message_stop/, 'never a clean end');
  t.equal(oai.requests.length, 1, 'nothing switched after the first byte (the one OpenAI request is the first call\'s)');
});

t.test('a fallback is charged at the model that served, to the µINR; failed attempts are not charged', async (t) => {
  failAnthropicAndOpenAi();
  const usage = { input: 1234, output: 567 };
  gem.setDefault({ usage });
  const before = await balanceMicros(gw, funded.accountId);
  const res = await openai().chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: 'price me' }] }).withResponse();
  const id = res.response.headers.get('x-request-id') ?? undefined;
  gw.app.settlement.drain();
  const flash = gw.app.catalog.get(FLASH);
  const claude = gw.app.catalog.get(CLAUDE);
  const asUsage = { inputTokens: usage.input, outputTokens: usage.output, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
  const expected = costMicros(flash!.pricing, asUsage);
  t.not(expected, costMicros(claude!.pricing, asUsage), 'the two models are priced differently');
  const ledger = await charges(gw, funded.accountId, id);
  t.equal(ledger.length, 1, 'one charge');
  t.equal(ledger[0]?.amountMicros, -expected, `charged ${expected} µINR: Gemini 2.5 Flash's price`);
  t.equal(res.response.headers.get('x-gateway-cost-inr'), String(expected / 1e6).replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, ''), 'the cost header says the same');
  t.equal(await balanceMicros(gw, funded.accountId), before - expected, 'the wallet moved by that alone');
  await noHolds(t, gw, funded);
});

t.test('a fallback the wallet cannot cover is skipped', async (t) => {
  const poor = await fundedKey(gw, { balance: 1 });
  oai.setDefault({ error: { status: 503 } });
  // ₹1 covers gpt-4o-mini and flash-lite for 2,000 output tokens, not Claude Opus (₹6.3 for them alone).
  const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${poor.key}` }, {
    model: MINI,
    max_tokens: 2000,
    models: ['anthropic/claude-opus-4-1', 'gemini/gemini-2.5-flash-lite'],
    messages: [{ role: 'user', content: 'hi' }],
  });
  t.equal(res.status, 200);
  t.equal(res.json.model, 'gemini/gemini-2.5-flash-lite', 'served by the fallback it can pay for');
  t.equal(ant.requests.length, 0, 'Claude Opus was never called');
  t.equal(header(res, 'x-gateway-attempts'), '2');
  t.ok(await balanceMicros(gw, poor.accountId) >= 0, 'never below zero');
  await noHolds(t, gw, poor);
});

t.test('every media kind falls back', async (t) => {
  oai.setDefault({ error: { status: 503 } });
  const auth = { authorization: `Bearer ${funded.key}` };

  const embedding = await postJson(`${gw.url}/v1/embeddings`, auth, { model: 'openai/text-embedding-3-small', input: 'fall back' });
  t.equal(embedding.status, 200, 'embeddings');
  t.equal(header(embedding, 'x-gateway-model'), 'gemini/gemini-embedding-001');
  t.equal(embedding.json.model, 'gemini/gemini-embedding-001');
  t.ok(Array.isArray(embedding.json.data?.[0]?.embedding));
  t.match(await usageRow(gw, header(embedding, 'x-request-id')), { model: 'gemini/gemini-embedding-001', unit: 'tokens', attempts: 2 });

  const speech = await postJson(`${gw.url}/v1/audio/speech`, auth, { model: 'openai/tts-1', input: 'fall back', voice: 'alloy' });
  t.equal(speech.status, 200, 'speech');
  t.equal(header(speech, 'x-gateway-model'), 'deepgram/aura-2');
  t.ok(speech.text.length > 0, 'audio');
  gw.app.settlement.drain();
  t.match(await usageRow(gw, header(speech, 'x-request-id')), { model: 'deepgram/aura-2', unit: 'characters', units: 9, attempts: 2 });

  const audio = readFileSync(new URL('../fixtures/audio/speech.wav', import.meta.url));
  const transcription = await postJson(`${gw.url}/v1/audio/transcriptions`, auth, { model: 'openai/whisper-1', input_audio: { data: audio.toString('base64'), format: 'wav' } });
  t.equal(transcription.status, 200, 'transcription');
  t.equal(header(transcription, 'x-gateway-model'), 'deepgram/nova-3');
  t.type(transcription.json.text, 'string');
  t.match(await usageRow(gw, header(transcription, 'x-request-id')), { model: 'deepgram/nova-3', unit: 'seconds', attempts: 2 });

  const image = await postJson(`${gw.url}/v1/images/generations`, auth, { model: 'openai/dall-e-3', prompt: 'a lighthouse', response_format: 'b64_json' });
  t.equal(image.status, 200, 'images');
  t.equal(header(image, 'x-gateway-model'), 'gemini/gemini-2.5-flash-image');
  t.type(image.json.data?.[0]?.b64_json, 'string');
  t.match(await usageRow(gw, header(image, 'x-request-id')), { model: 'gemini/gemini-2.5-flash-image', unit: 'images', units: 1, attempts: 2 });

  const viaHeader = await postJson(`${gw.url}/v1/embeddings`, { ...auth, 'x-gateway-fallbacks': 'mistral/mistral-embed' }, { model: 'openai/text-embedding-3-large', input: 'x' });
  t.equal(viaHeader.status, 200, 'the header names a media fallback too');
  t.equal(header(viaHeader, 'x-gateway-model'), 'mistral/mistral-embed');
  t.equal(oai.requests.filter((r) => r.path.endsWith('/embeddings')).length, 2, 'each embedding call tried OpenAI once, first');
  await noHolds(t, gw, funded);
});
