import OpenAI, { toFile } from 'openai';
import t from 'tap';
import { FormData, request } from 'undici';
import { parseBuffer } from 'music-metadata';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { balanceMicros, charges, header, noHolds, postJson, until, usageRow } from '../support/e2e.js';
import { REDIS_URL, redisSkipReason } from '../support/redis.js';
import { sampleAudio, speechAudio, type SampleFormat } from '../support/simulator/audio.js';
import { cosine, embedText } from '../support/simulator/embed.js';
import { pngSize } from '../support/simulator/png.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { countTextTokens } from '../../src/core/tokens.js';

/**
 * The four media endpoints end to end, driven by the unchanged official `openai` SDK (and
 * raw HTTP for what it cannot send): embeddings, speech, transcription and images against the
 * provider simulator (OpenAI, Gemini, Mistral, Groq, Deepgram), billed exactly.
 */

let sim: ProviderSimulator;
let gw: TestGateway;

t.before(async () => {
  sim = await ProviderSimulator.start();
  // No retries: each test scripts exactly the upstream answers it checks (media fallbacks and
  // retries are tested in test/e2e/routing-fallback.test.ts).
  gw = await startTestGateway({ providers: simulatedProviders(sim.url), routing: { retries: 0 } });
});
t.teardown(async () => {
  await gw.stop();
  await sim.close();
});
t.beforeEach(() => sim.reset());

function client(funded: FundedKey, options: { maxRetries?: number } = {}): OpenAI {
  return new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: options.maxRetries ?? 0 });
}

async function post(path: string, funded: FundedKey, body: unknown) {
  return postJson(`${gw.url}${path}`, { authorization: `Bearer ${funded.key}` }, body);
}

/** µINR charged for a request id, read from the ledger (after settlement applied it). */
async function charged(funded: FundedKey, requestId: string | undefined): Promise<number> {
  gw.app.settlement.drain();
  return -(await charges(gw, funded.accountId, requestId)).reduce((sum, entry) => sum + entry.amountMicros, 0);
}

// ---------------------------------------------------------------------------------------------
// Embeddings

t.test('embeddings: the SDK default (base64) and float, every provider, billed per input token', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const openai = client(funded);

  // The SDK asks for base64 and decodes it itself: the vectors must match the float ones.
  const viaSdk = await openai.embeddings.create({ model: 'text-embedding-3-small', input: ['the quick brown fox', 'a lazy dog'] });
  t.equal(viaSdk.data.length, 2);
  t.equal(viaSdk.data[0]?.embedding.length, 1536, 'base64 decoded by the SDK to 1536 floats');
  t.equal(viaSdk.model, 'openai/text-embedding-3-small');
  const expected = embedText('the quick brown fox', 1536);
  t.ok(cosine(viaSdk.data[0]?.embedding ?? [], expected) > 0.9999, 'the same vector the upstream made');
  t.equal((sim.requests.at(-1)?.body as { encoding_format: string }).encoding_format, 'base64', 'base64 asked upstream too');
  const tokens = (await countTextTokens('the quick brown fox')) + (await countTextTokens('a lazy dog'));
  t.equal(viaSdk.usage.prompt_tokens, tokens, "the upstream's count");

  const raw = await post('/v1/embeddings', funded, { model: 'openai/text-embedding-3-small', input: 'hello world', encoding_format: 'float', dimensions: 8 });
  t.equal(raw.status, 200);
  t.equal(raw.json.object, 'list');
  t.same(raw.json.data[0].object, 'embedding');
  t.equal(raw.json.data[0].embedding.length, 8, 'dimensions');
  t.ok(raw.json.data[0].embedding.every((x: unknown) => typeof x === 'number'));
  const requestId = header(raw, 'x-request-id');
  const row = await usageRow(gw, requestId);
  // text-embedding-3-small: ₹1.68 per 1M tokens → µINR = ceil(tokens × 1.68).
  const helloTokens = await countTextTokens('hello world');
  t.equal(await charged(funded, requestId), Math.ceil(helloTokens * 1.68), 'exact µINR');
  t.match(row, { unit: 'tokens', units: helloTokens, inputTokens: helloTokens, endpoint: 'embeddings', status: 200 });
  t.equal(header(raw, 'x-gateway-cost-inr'), (Math.ceil(helloTokens * 1.68) / 1e6).toFixed(6).replace(/0+$/, '').replace(/\.$/, ''), 'cost header');

  // Fields it does not know are named in a header, only where a header can carry the name.
  const extra = await post('/v1/embeddings', funded, { model: 'text-embedding-3-small', input: 'x', 'a\nb': 1, '€': 2, extra_field: 3 });
  t.equal(extra.status, 200, 'odd keys are no 500');
  t.equal(header(extra, 'x-gateway-ignored-params'), 'extra_field');

  // Token arrays (OpenAI's own models take them).
  const tokenArrays = await post('/v1/embeddings', funded, { model: 'text-embedding-3-small', input: [[1, 2, 3], [4, 5]] });
  t.equal(tokenArrays.status, 200);
  t.equal(tokenArrays.json.usage.prompt_tokens, 5);

  // Gemini: batchEmbedContents, base64 made by the gateway, tokens counted by the gateway.
  const texts = Array.from({ length: 150 }, (_, i) => `sentence number ${i} about cats`);
  const gemini = await openai.embeddings.create({ model: 'gemini/gemini-embedding-001', input: texts, dimensions: 256 });
  t.equal(gemini.data.length, 150);
  t.same(gemini.data.map((d) => d.index), texts.map((_, i) => i), 'order kept across two batches');
  t.equal(gemini.data[0]?.embedding.length, 256);
  t.ok(cosine(gemini.data[7]?.embedding ?? [], embedText(texts[7] as string, 3072, 256, false)) > 0.9999, 'vector 7 is the 8th input');
  t.equal(sim.requests.filter((r) => r.path.endsWith(':batchEmbedContents')).length, 2, 'two batches of at most 100');
  let geminiTokens = 0;
  for (const text of texts) geminiTokens += await countTextTokens(text);
  t.equal(gemini.usage.prompt_tokens, geminiTokens, 'Gemini reports none: the tokenizer counts');

  // An OpenAI-compatible vendor's (Mistral).
  const mistral = await openai.embeddings.create({ model: 'mistral/mistral-embed', input: 'bonjour' });
  t.equal(mistral.data[0]?.embedding.length, 1024);
  await noHolds(t, gw, funded);
});

t.test('embeddings: every rule a 400 naming the field, nothing sent upstream or charged', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const before = await balanceMicros(gw, funded.accountId);
  const cases: Array<[unknown, string]> = [
    [{ input: 'x' }, 'model'],
    [{ model: 'text-embedding-3-small' }, 'input'],
    [{ model: 'text-embedding-3-small', input: '' }, 'input'],
    [{ model: 'text-embedding-3-small', input: [] }, 'input'],
    [{ model: 'text-embedding-3-small', input: ['a', ''] }, 'input[1]'],
    [{ model: 'text-embedding-3-small', input: ['a', 1] }, 'input'],
    [{ model: 'text-embedding-3-small', input: 'a', encoding_format: 'int8' }, 'encoding_format'],
    [{ model: 'text-embedding-3-small', input: 'a', dimensions: 4000 }, 'dimensions'],
    [{ model: 'text-embedding-ada-002', input: 'a', dimensions: 8 }, 'dimensions'],
    [{ model: 'gemini/gemini-embedding-001', input: [[1, 2]] }, 'input'],
    [{ model: 'gemini/gemini-embedding-001', input: 'a', dimensions: 64 }, 'dimensions'],
    [{ model: 'openai/gpt-4o-mini', input: 'a' }, 'model'],
  ];
  for (const [body, param] of cases) {
    const res = await post('/v1/embeddings', funded, body);
    t.equal(res.status, 400, `${JSON.stringify(body)} → 400`);
    t.match(res.json, { error: { code: 400, type: 'invalid_request_error', param, message: param === 'model' ? /model/ : new RegExp(`^${param.replace(/[[\]]/g, '\\$&')}: `) } }, `names ${param}`);
  }
  t.equal(sim.requests.length, 0, 'nothing sent upstream');
  t.equal(await balanceMicros(gw, funded.accountId), before, 'nothing charged');
});

// ---------------------------------------------------------------------------------------------
// Speech

t.test('speech: the SDK gets real audio in each format, streamed; billed per character', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const openai = client(funded);
  const input = 'Hello from the gateway.';
  for (const format of ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const) {
    const response = await openai.audio.speech.create({ model: 'openai/tts-1', input, voice: 'alloy', response_format: format }).asResponse();
    t.equal(response.status, 200, format);
    const type = response.headers.get('content-type');
    t.equal(type, { mp3: 'audio/mpeg', opus: 'audio/opus', aac: 'audio/aac', flac: 'audio/flac', wav: 'audio/wav', pcm: 'audio/pcm' }[format]);
    const bytes = Buffer.from(await response.arrayBuffer());
    t.same(bytes, speechAudio(format), `${format}: the upstream's audio, byte for byte`);
    if (format !== 'pcm') {
      const metadata = await parseBuffer(bytes, { mimeType: type ?? undefined }, { duration: true });
      t.ok((metadata.format.duration ?? 0) > 0.9, `${format} decodes (${metadata.format.container ?? ''})`);
    }
    const requestId = response.headers.get('x-request-id') ?? undefined;
    // tts-1: ₹1260 per 1M characters = 1260 µINR per character.
    t.equal(await charged(funded, requestId), input.length * 1260, `${format}: ${input.length} characters`);
    t.match(await usageRow(gw, requestId), { unit: 'characters', units: input.length, endpoint: 'audio.speech', status: 200 });
  }

  // Deepgram: its own wire, a mapped voice, its character count.
  const dg = await openai.audio.speech.create({ model: 'deepgram/aura-2', input: 'Namaste', voice: 'onyx', response_format: 'flac' }).asResponse();
  t.equal(dg.status, 200);
  t.same(Buffer.from(await dg.arrayBuffer()), speechAudio('flac'));
  const upstream = sim.requests.at(-1);
  t.equal(upstream?.path, '/v1/speak');
  t.match(upstream?.query, /model=aura-2-zeus-en&encoding=flac/);
  t.equal(upstream?.headers.authorization, `Token ${sim.apiKey}`);
  t.equal(await charged(funded, dg.headers.get('x-request-id') ?? undefined), 7 * 2520, 'aura-2: ₹2520 per 1M characters');
  await noHolds(t, gw, funded);
});

t.test('speech: the audio reaches the client as the upstream produces it', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  sim.enqueue({ audioChunkBytes: 1000, chunkDelayMs: 150 });
  const started = Date.now();
  const res = await request(`${gw.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${funded.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts-1', input: 'stream me', voice: 'nova', response_format: 'mp3' }),
  });
  const arrivals: number[] = [];
  const chunks: Buffer[] = [];
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    arrivals.push(Date.now() - started);
    chunks.push(chunk);
  }
  t.same(Buffer.concat(chunks), speechAudio('mp3'));
  t.ok(arrivals.length >= 3, `arrived in ${arrivals.length} pieces`);
  // 5 chunks 150 ms apart: the first bytes came well before the last (not buffered whole).
  t.ok((arrivals[0] ?? 0) < (arrivals.at(-1) ?? 0) - 300, `first byte at ${arrivals[0]} ms, last at ${arrivals.at(-1)} ms`);
});

t.test('speech: a client that leaves mid-audio pays the share it was sent', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const input = 'x'.repeat(1000);
  // 4436 bytes in 5 chunks, 300 ms apart: the client leaves after the first.
  sim.enqueue({ audioChunkBytes: 1000, chunkDelayMs: 300 });
  const controller = new AbortController();
  const res = await request(`${gw.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${funded.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts-1', input, voice: 'nova' }),
    signal: controller.signal,
  });
  const requestId = header(res, 'x-request-id');
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    t.equal(chunk.length, 1000);
    controller.abort();
    break;
  }
  await until('the aborted call settles', async () => await usageRow(gw, requestId) !== undefined || (gw.app.settlement.drain(), false));
  const row = await usageRow(gw, requestId);
  t.equal(row?.status, 499);
  // 1000 of 4436 bytes delivered (the gateway had sent one chunk when the client left; a
  // second may have been written to the socket): ceil(1000 × 1000/4436) or ceil(1000 × 2000/4436) chars.
  t.ok(row?.units === 226 || row?.units === 451, `billed ${row?.units} of 1000 characters`);
  t.equal(await charged(funded, requestId), (row?.units ?? 0) * 1260);
  await noHolds(t, gw, funded);
});

t.test('speech: rules per model, 400 naming the field, nothing sent or charged', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const before = await balanceMicros(gw, funded.accountId);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ input: 'hi', voice: 'alloy' }, 'model'],
    [{ model: 'tts-1', voice: 'alloy' }, 'input'],
    [{ model: 'tts-1', input: 'x'.repeat(4097), voice: 'alloy' }, 'input'],
    [{ model: 'tts-1', input: 'hi' }, 'voice'],
    [{ model: 'tts-1', input: 'hi', voice: 'robot' }, 'voice'],
    [{ model: 'tts-1', input: 'hi', voice: 'alloy', response_format: 'ogg' }, 'response_format'],
    [{ model: 'tts-1', input: 'hi', voice: 'alloy', speed: 4.5 }, 'speed'],
    [{ model: 'tts-1', input: 'hi', voice: 'alloy', speed: 0.2 }, 'speed'],
    [{ model: 'tts-1', input: 'hi', voice: 'alloy', instructions: 'whisper' }, 'instructions'],
    [{ model: 'deepgram/aura-2', input: 'hi', voice: 'alloy', speed: 2 }, 'speed'],
    [{ model: 'deepgram/aura-2', input: 'x'.repeat(2001), voice: 'alloy' }, 'input'],
    [{ model: 'deepgram/aura-2', input: 'hi', voice: 'coral' }, 'voice'],
  ];
  for (const [body, param] of cases) {
    const res = await post('/v1/audio/speech', funded, body);
    t.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)} → 400`);
    t.match(res.json, { error: { code: 400, param, message: new RegExp(`^${param}: `) } }, res.json?.error?.message);
  }
  const speed = await post('/v1/audio/speech', funded, { model: 'deepgram/aura-2', input: 'hi', voice: 'alloy', speed: 2 });
  t.match(speed.json.error.message, 'must be from 0.7 to 1.5 for deepgram/aura-2', 'says what the model accepts');
  t.equal(sim.requests.length, 0, 'nothing sent upstream');
  t.equal(await balanceMicros(gw, funded.accountId), before, 'nothing charged');
});

// ---------------------------------------------------------------------------------------------
// Transcription

t.test('transcription: the SDK with a file, every response format; billed per second', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const openai = client(funded);
  const file = async (format: SampleFormat = 'wav') => toFile(sampleAudio(format), `sample.${format}`, { type: format === 'wav' ? 'audio/wav' : undefined });

  const json = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper-1' });
  t.match(json.text, /Transcribed 2\.50 seconds/);
  const text = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper-1', response_format: 'text' });
  t.equal(typeof text, 'string');
  t.match(text, /Transcribed/);
  const srt = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper-1', response_format: 'srt' });
  t.match(srt, /^1\n00:00:00,000 --> /);
  const vtt = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper-1', response_format: 'vtt' });
  t.match(vtt, /^WEBVTT/);
  const verbose = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper-1', response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] });
  t.ok(verbose.duration > 2.4 && (verbose.words?.length ?? 0) > 0 && (verbose.segments?.length ?? 0) > 0, 'verbose_json with words and segments');
  const upstream = sim.requests.at(-1)?.body as { fields: Record<string, unknown>; file: { filename: string; size: number } };
  t.same(upstream.fields['timestamp_granularities[]'], ['word', 'segment'], 'granularities forwarded as repeated fields');
  t.same(upstream.file, { filename: 'sample.wav', contentType: 'audio/wav', size: sampleAudio('wav').length }, 'the file forwarded byte-exact, with its name and type');

  // whisper-1: ₹0.504 per minute; 2.5 s → 3 s billed (nearest second) = ceil(3 × 504000 / 60) µINR.
  const raw = await request(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${funded.key}` }, body: form({ model: 'openai/whisper-1', response_format: 'text' }, 'sample.mp3', sampleAudio('mp3')) });
  t.equal(raw.statusCode, 200);
  t.match(String(raw.headers['content-type']), /^text\/plain/);
  await raw.body.text();
  const requestId = header(raw, 'x-request-id');
  t.equal(await charged(funded, requestId), 25_200, '3 s at ₹0.504/min');
  t.match(await usageRow(gw, requestId), { unit: 'seconds', units: 3, endpoint: 'audio.transcriptions' });

  // A client that names the wrong type: the duration is read anyway (the bytes are sniffed).
  const mislabelled = await request(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${funded.key}` }, body: form({ model: 'whisper-1' }, 'sample.wav', sampleAudio('wav'), 'audio/mpeg') });
  t.equal(mislabelled.statusCode, 200, 'a WAV sent as audio/mpeg');
  await mislabelled.body.json();
  t.match(await usageRow(gw, header(mislabelled, 'x-request-id')), { unit: 'seconds', units: 3 });

  // Every input format the gateway can read the duration of.
  for (const format of ['wav', 'mp3', 'm4a', 'webm', 'ogg', 'flac'] as const) {
    const out = await openai.audio.transcriptions.create({ file: await file(format), model: 'gpt-4o-mini-transcribe' });
    t.match(out.text, /Transcribed/, format);
  }
  await noHolds(t, gw, funded);
});

/** A multipart body as undici sends a FormData. */
function form(fields: Record<string, string | string[]>, filename: string, data: Buffer, type?: string): FormData {
  const body = new FormData();
  body.append('file', new Blob([data], type ? { type } : {}), filename);
  for (const [name, value] of Object.entries(fields)) for (const item of Array.isArray(value) ? value : [value]) body.append(name, item);
  return body;
}

t.test('transcription: Shape B (JSON base64), Groq, Deepgram rendered by the gateway', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const b = await post('/v1/audio/transcriptions', funded, { model: 'openai/whisper-1', input_audio: { data: sampleAudio('wav').toString('base64'), format: 'wav' }, language: 'en' });
  t.equal(b.status, 200);
  t.match(b.json, { text: /Transcribed/ });
  const sent = sim.requests.at(-1)?.body as { fields: Record<string, unknown>; file: { filename: string } };
  t.equal(sent.file.filename, 'audio.wav', 'forwarded as a multipart file');
  t.equal(sent.fields.language, 'en');

  // Groq: 10 s minimum per request.
  const groq = await request(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${funded.key}` }, body: form({ model: 'groq/whisper-large-v3' }, 'a.wav', sampleAudio('wav')) });
  t.equal(groq.statusCode, 200);
  await groq.body.json();
  t.equal(await charged(funded, header(groq, 'x-request-id')), Math.ceil((10 * 155_400) / 60), "Groq's 10 s minimum at ₹0.1554/min");

  // Deepgram: every format rendered from its words and utterances.
  for (const format of ['json', 'text', 'srt', 'vtt', 'verbose_json'] as const) {
    const res = await request(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${funded.key}` }, body: form({ model: 'deepgram/nova-3', response_format: format, 'timestamp_granularities[]': format === 'verbose_json' ? ['word'] : [] }, 'a.flac', sampleAudio('flac')) });
    const bodyText = await res.body.text();
    t.equal(res.statusCode, 200, `${format}: ${bodyText.slice(0, 120)}`);
    const json = format === 'json' || format === 'verbose_json';
    t.match(String(res.headers['content-type']), json ? /^application\/json/ : /^text\/plain/);
    if (format === 'json') t.match(JSON.parse(bodyText), { text: /Transcribed/, usage: { type: 'duration', seconds: 3 } });
    if (format === 'srt') t.match(bodyText, /^1\n00:00:00,000 --> 00:00:01,\d{3}\n/);
    if (format === 'vtt') t.match(bodyText, /^WEBVTT\n\n00:00:00\.000 --> /);
    if (format === 'verbose_json') t.match(JSON.parse(bodyText), { task: 'transcribe', duration: 2.5, segments: [{ id: 0 }, { id: 1 }], words: [{ word: String }] });
    if (format === 'text') t.match(bodyText, /Transcribed .*\n$/);
  }
  const listen = sim.requests.at(-1);
  t.equal(listen?.path, '/v1/listen');
  t.equal(listen?.headers.authorization, `Token ${sim.apiKey}`);
  await noHolds(t, gw, funded);
});

t.test('transcription: rules, unreadable audio, size limit', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const before = await balanceMicros(gw, funded.accountId);
  const call = async (fields: Record<string, string | string[]>, filename = 'a.wav', data = sampleAudio('wav')) => {
    const res = await request(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${funded.key}` }, body: form(fields, filename, data) });
    return { status: res.statusCode, json: (await res.body.json()) as { error: { param: string; message: string; code: number } } };
  };
  t.match(await call({}), { status: 400, json: { error: { param: 'model' } } });
  t.match(await call({ model: 'gpt-4o-mini-transcribe', response_format: 'srt' }), { status: 400, json: { error: { param: 'response_format', message: /answers in json, text/ } } });
  t.match(await call({ model: 'whisper-1', response_format: 'json', 'timestamp_granularities[]': 'word' }), { status: 400, json: { error: { param: 'timestamp_granularities[]' } } });
  t.match(await call({ model: 'whisper-1' }, 'a.txt'), { status: 400, json: { error: { param: 'file' } } });
  t.match(await call({ model: 'whisper-1' }, 'a.wav', Buffer.from('this is not audio at all, not even close')), { status: 400, json: { error: { param: 'file', message: /could not read 'a\.wav'/ } } });
  t.match(await call({ model: 'whisper-1', language: 'english!' }), { status: 400, json: { error: { param: 'language' } } });
  const big = await call({ model: 'whisper-1' }, 'a.wav', Buffer.alloc(25 * 1024 * 1024 + 10));
  t.equal(big.status, 413, 'a file past 25 MB is a 413');
  const noFile = await post('/v1/audio/transcriptions', funded, { model: 'whisper-1', input_audio: { data: '!!!', format: 'wav' } });
  t.match(noFile.json, { error: { code: 400, param: 'input_audio.data' } });
  const noFormat = await post('/v1/audio/transcriptions', funded, { model: 'whisper-1', input_audio: { data: 'AAAA' } });
  t.match(noFormat.json, { error: { code: 400, param: 'input_audio.format' } });
  t.equal(sim.requests.length, 0, 'nothing sent upstream');
  t.equal(await balanceMicros(gw, funded.accountId), before, 'nothing charged');
});

// ---------------------------------------------------------------------------------------------
// Images

t.test('images: url (fetched) and b64_json (decoded) with the SDK; base64-only models hosted; billed per image', async (t) => {
  const funded = await fundedKey(gw, { balance: 100 });
  const openai = client(funded);

  const dalle = await openai.images.generate({ prompt: 'a red fox', size: '1792x1024', quality: 'hd' });
  t.equal(sim.requests.at(-1)?.model, 'dall-e-3', 'dall-e-3 by default');
  const url = dalle.data?.[0]?.url ?? '';
  const fetched = await request(url);
  t.equal(fetched.statusCode, 200);
  t.same(pngSize(Buffer.from(await fetched.body.arrayBuffer())), { width: 1792, height: 1024 }, "the upstream's URL serves a real PNG of the size");
  t.ok(dalle.data?.[0]?.revised_prompt);

  const b64 = await openai.images.generate({ model: 'openai/dall-e-2', prompt: 'a cat', n: 2, size: '256x256', response_format: 'b64_json' }).withResponse();
  t.equal(b64.data.data?.length, 2);
  t.same(pngSize(Buffer.from(b64.data.data?.[0]?.b64_json ?? '', 'base64')), { width: 256, height: 256 });
  t.equal(await charged(funded, b64.response.headers.get('x-request-id') ?? undefined), 2 * 1_344_000, '2 images at ₹1.344');
  t.match(await usageRow(gw, b64.response.headers.get('x-request-id') ?? undefined), { unit: 'images', units: 2 });

  // gpt-image-1 answers base64 only: the gateway hosts it for `url`.
  const hosted = await openai.images.generate({ model: 'gpt-image-1', prompt: 'a dog', quality: 'low' }).withResponse();
  const hostedUrl = hosted.data.data?.[0]?.url ?? '';
  t.match(hostedUrl, new RegExp(`^${gw.url}/v1/images/files/[0-9a-z]+-[A-Za-z0-9_-]{43}\\.png$`));
  t.notOk('response_format' in (sim.requests.at(-1)?.body as object), 'not sent to a model that refuses it');
  const image = await request(hostedUrl);
  t.equal(image.statusCode, 200);
  t.equal(image.headers['content-type'], 'image/png');
  t.same(pngSize(Buffer.from(await image.body.arrayBuffer())), { width: 1024, height: 1024 });
  const hostedRow = await usageRow(gw, hosted.response.headers.get('x-request-id') ?? undefined);
  t.ok((hostedRow?.inputTokens ?? 0) > 0, "the prompt's text tokens, as the upstream reports them");
  t.equal(await charged(funded, hosted.response.headers.get('x-request-id') ?? undefined), 924_000 + Math.ceil((hostedRow?.inputTokens ?? 0) * 420), 'low quality 1024 (₹0.924) plus the prompt at ₹420 per 1M tokens');
  const guessed = await request(hostedUrl.replace(/-[A-Za-z0-9_-]{43}/, `-${'A'.repeat(43)}`));
  t.equal(guessed.statusCode, 404, 'another name finds nothing');
  await guessed.body.text();

  // Gemini's image model, n fanned out.
  const gemini = await openai.images.generate({ model: 'gemini/gemini-2.5-flash-image', prompt: 'a boat', n: 2, size: '1344x768', response_format: 'b64_json' }).withResponse();
  t.equal(gemini.data.data?.length, 2);
  t.same(pngSize(Buffer.from(gemini.data.data?.[1]?.b64_json ?? '', 'base64')), { width: 1344, height: 768 });
  t.equal(await charged(funded, gemini.response.headers.get('x-request-id') ?? undefined), 2 * 3_276_000);
  await noHolds(t, gw, funded);
});

t.test('images: rules per model; the hold is n images at the dearest price', async (t) => {
  const funded = await fundedKey(gw, { balance: 100 });
  const before = await balanceMicros(gw, funded.accountId);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, 'prompt'],
    [{ prompt: 'x'.repeat(4001) }, 'prompt'],
    [{ model: 'dall-e-2', prompt: 'x'.repeat(1001) }, 'prompt'],
    [{ prompt: 'x', n: 2 }, 'n'],
    [{ prompt: 'x', n: 11 }, 'n'],
    [{ prompt: 'x', size: '512x512' }, 'size'],
    [{ prompt: 'x', quality: 'ultra' }, 'quality'],
    [{ prompt: 'x', response_format: 'png' }, 'response_format'],
    [{ prompt: 'x', style: 'noir' }, 'style'],
    [{ model: 'gpt-image-1', prompt: 'x', quality: 'hd' }, 'quality'],
    [{ model: 'openai/tts-1', prompt: 'x' }, 'model'],
  ];
  for (const [body, param] of cases) {
    const res = await post('/v1/images/generations', funded, body);
    t.equal(res.status, 400, `${JSON.stringify(body).slice(0, 60)} → 400`);
    t.match(res.json, { error: { code: 400, param } }, res.json?.error?.message);
  }
  t.equal(sim.requests.length, 0);
  t.equal(await balanceMicros(gw, funded.accountId), before);

  // ₹30 covers one hd wide dall-e-3 image (₹10.08) but not ten high gpt-image-1 ones (₹210).
  const poor = await fundedKey(gw, { balance: 30 });
  const refused = await post('/v1/images/generations', poor, { model: 'gpt-image-1', prompt: 'x', n: 10, size: '1536x1024' });
  t.equal(refused.status, 402);
  t.match(refused.json.error.message, /does not cover 10 images of 1536x1024 at auto quality on openai\/gpt-image-1 \(₹210/);
  const ok = await post('/v1/images/generations', poor, { prompt: 'x', size: '1792x1024', quality: 'hd' });
  t.equal(ok.status, 200);
});

// ---------------------------------------------------------------------------------------------
// Billing rules shared with chat

t.test('media calls: 402 with an empty wallet, key budgets, one rate-limit window with chat, upstream faults not charged', async (t) => {
  const empty = await fundedKey(gw, { balance: 0 });
  for (const [path, body] of [
    ['/v1/embeddings', { model: 'text-embedding-3-small', input: 'x' }],
    ['/v1/audio/speech', { model: 'tts-1', input: 'x', voice: 'alloy' }],
    ['/v1/images/generations', { prompt: 'x' }],
  ] as const) {
    const res = await post(path, empty, body);
    t.equal(res.status, 402, `${path}: 402`);
    t.match(res.json, { error: { code: 402, type: 'insufficient_credits' } });
  }
  const tx = await postJson(`${gw.url}/v1/audio/transcriptions`, { authorization: `Bearer ${empty.key}` }, { model: 'whisper-1', input_audio: { data: sampleAudio('wav').toString('base64'), format: 'wav' } });
  t.equal(tx.status, 402);
  t.equal(sim.requests.length, 0, 'nothing sent upstream');

  // A key budget of ₹0.01: one tts-1 call of 4096 characters (₹5.16) is refused by the budget.
  const budgeted = await fundedKey(gw, { balance: 100, key: { budget: 0.01 } });
  const overBudget = await post('/v1/audio/speech', budgeted, { model: 'tts-1', input: 'x'.repeat(4096), voice: 'alloy' });
  t.equal(overBudget.status, 402);
  t.match(overBudget.json, { error: { type: 'budget_exceeded' } });
  const small = await post('/v1/audio/speech', budgeted, { model: 'tts-1', input: 'tiny', voice: 'alloy' });
  t.equal(small.status, 200, 'a call the budget covers passes');

  // Rate limit: 2 per minute across chat and media.
  const limited = await fundedKey(gw, { balance: 10, key: { rate_limit: 2 } });
  const chat = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${limited.key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.status, 200);
  t.equal((await post('/v1/embeddings', limited, { model: 'text-embedding-3-small', input: 'x' })).status, 200);
  const third = await post('/v1/images/generations', limited, { prompt: 'x' });
  t.equal(third.status, 429, 'the third call of the minute, whatever its kind');
  t.match(third.json, { error: { code: 429, type: 'rate_limit_exceeded' } });

  // Upstream faults: no charge, a usage row with the status, the hold released.
  const funded = await fundedKey(gw, { balance: 10 });
  const before = await balanceMicros(gw, funded.accountId);
  sim.enqueue({ error: { status: 500, message: 'boom' } });
  const failed = await post('/v1/embeddings', funded, { model: 'text-embedding-3-small', input: 'x' });
  t.equal(failed.status, 502);
  t.match(await usageRow(gw, header(failed, 'x-request-id')), { status: 502, costMicros: 0 });
  sim.enqueue({ disconnectAfterEvents: 2, audioChunkBytes: 500 });
  const cut = await request(`${gw.url}/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${funded.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts-1', input: 'cut me', voice: 'alloy' }) });
  t.equal(cut.statusCode, 200, 'headers were sent');
  await t.rejects(cut.body.arrayBuffer(), 'the client sees the audio cut, not a clean end');
  await until('the cut call settles', async () => (gw.app.settlement.drain(), await usageRow(gw, header(cut, 'x-request-id')) !== undefined));
  t.match(await usageRow(gw, header(cut, 'x-request-id')), { status: 502, costMicros: 0 });
  sim.enqueue({ disconnectAfterEvents: 0 });
  const broken = await post('/v1/audio/speech', funded, { model: 'tts-1', input: 'no audio', voice: 'alloy' });
  t.equal(broken.status, 502, 'broken before the first byte: an error envelope, not an empty 200');
  t.match(broken.json, { error: { code: 502, type: 'upstream_error' } });
  sim.enqueue({ error: { status: 400, message: 'bad audio' } });
  const rejected = await postJson(`${gw.url}/v1/audio/transcriptions`, { authorization: `Bearer ${funded.key}` }, { model: 'deepgram/nova-3', input_audio: { data: sampleAudio('wav').toString('base64'), format: 'wav' } });
  t.equal(rejected.status, 400);
  t.match(rejected.json.error.message, /bad audio/, "Deepgram's error text");
  t.equal(await balanceMicros(gw, funded.accountId), before, 'no charge for any upstream fault');
  await noHolds(t, gw, funded);
});

t.test('the management usage API shows media calls with their units', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  await post('/v1/audio/speech', funded, { model: 'tts-1', input: 'units', voice: 'alloy' });
  gw.app.settlement.drain();
  const usage = await gw.http('GET', `/api/management/usage?account_id=${funded.accountId}`, { token: gw.adminKey });
  t.equal(usage.status, 200);
  t.match(usage.body.data[0], { model: 'openai/tts-1', endpoint: 'audio.speech', unit: 'characters', units: 5, cost: 0.0063 });
});

t.test('media calls: a client that leaves is not charged; an upstream that hangs is a 504', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const before = await balanceMicros(gw, funded.accountId);
  sim.enqueue({ delayMs: 2000 });
  const controller = new AbortController();
  const pending = request(`${gw.url}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${funded.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'slow' }),
    signal: controller.signal,
  });
  await until('the upstream call starts', () => sim.activeRequests() > 0);
  controller.abort();
  await t.rejects(pending);
  await until('the upstream call is cancelled', () => sim.activeRequests() === 0);
  await until('the aborted call settles', async () => {
    gw.app.settlement.drain();
    return (await gw.app.store.usage.list({ limit: 5, accountId: funded.accountId })).some((row) => row.status === 499);
  });
  t.equal(await balanceMicros(gw, funded.accountId), before, 'nothing charged');
  await noHolds(t, gw, funded);

  const strict = await startTestGateway({ routing: { retries: 0 }, providers: { ...simulatedProviders(sim.url), openai: { type: 'openai', base_url: `${sim.url}/v1`, api_key: sim.apiKey, timeouts: { connect: '1s', first_byte: '300ms', idle: '300ms' } } } });
  t.teardown(() => strict.stop());
  const key = await fundedKey(strict, { balance: 10 });
  sim.enqueue({ hangAfterEvents: 0 });
  const hung = await postJson(`${strict.url}/v1/embeddings`, { authorization: `Bearer ${key.key}` }, { model: 'text-embedding-3-small', input: 'x' });
  t.equal(hung.status, 504);
  t.match(hung.json, { error: { code: 504, type: 'timeout_error', reason: 'upstream_timeout' } });
  sim.enqueue({ hangAfterEvents: 1, audioChunkBytes: 1000 });
  const stalled = await request(`${strict.url}/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts-1', input: 'stall', voice: 'alloy' }) });
  await t.rejects(stalled.body.arrayBuffer(), 'a stalled audio stream is cut after the idle timeout');
  strict.app.settlement.drain();
  t.equal(await balanceMicros(strict, key.accountId), 10_000_000, 'timeouts are not charged');
});

t.test('media calls with Redis: holds and the rate limit in Redis, zero overspend under concurrency', { skip: redisSkipReason() }, async (t) => {
  const shared = await startTestGateway({ providers: simulatedProviders(sim.url), redis: { url: REDIS_URL, key_prefix: `gw-media-${Date.now()}:` } });
  t.teardown(() => shared.stop());
  // ₹0.05 pays for nine speech calls of 4 characters (₹0.00504 each), not ten, whatever the
  // concurrency: each call holds its exact cost until it is in the ledger.
  const funded = await fundedKey(shared, { balance: 0.05 });
  const results = await Promise.all(
    Array.from({ length: 20 }, () => postJson(`${shared.url}/v1/audio/speech`, { authorization: `Bearer ${funded.key}` }, { model: 'tts-1', input: 'four', voice: 'alloy' })),
  );
  const ok = results.filter((r) => r.status === 200).length;
  t.equal(ok, 9, '9 calls of ₹0.00504 fit in ₹0.05');
  t.ok(results.every((r) => r.status === 200 || r.status === 402), 'the others are 402');
  shared.app.settlement.drain();
  t.equal(await balanceMicros(shared, funded.accountId), 50_000 - 9 * 5040, 'charged exactly, never below zero');
  await noHolds(t, shared, funded);
});
