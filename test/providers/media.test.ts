import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import type { ModelConfig, ProviderConfig, ProviderType } from '../../src/config/types.js';
import { checkImage, checkSpeech, countCharacters } from '../../src/core/gateway/media-rules.js';
import type { EmbeddingRequest, ImageRequest, SpeechRequest, TranscriptionRequest } from '../../src/core/media.js';
import { billedSeconds, imagePriceMicros, speechCostMicros, transcriptionCostMicros } from '../../src/core/pricing.js';
import { srt, vtt } from '../../src/api/audio/transcriptions.js';
import { deepgramErrorMessage, deepgramSpeech, deepgramTranscription } from '../../src/providers/deepgram/index.js';
import { DEEPGRAM_VOICES } from '../../src/providers/deepgram/voices.js';
import { geminiEmbeddings, geminiImages } from '../../src/providers/gemini/media.js';
import { openAiEmbeddings, openAiImages, openAiSpeech, openAiTranscription } from '../../src/providers/openai/media.js';
import { buildMultipart } from '../../src/providers/shared/multipart.js';
import { decodeBase64Floats, encodeBase64Floats } from '../../src/providers/shared/vectors.js';

/** The media converters, pure: canonical → upstream request, recorded upstream answers → canonical. */

const FIXTURES = join(PACKAGE_ROOT, 'test/fixtures/media');

/** What `fn` throws (undefined when it does not), to match its fields. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}
const fixture = (name: string): unknown => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'));

function provider(type: ProviderType): ProviderConfig {
  return {
    name: `test-${type}`,
    type,
    baseUrl: type === 'openai' ? 'http://upstream.test/v1' : 'http://upstream.test',
    apiKey: 'upstream-secret',
    apiKeys: ['upstream-secret'],
    headers: {},
    timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 },
    maxTokensParam: 'max_tokens',
  };
}

const embedding = (texts: string[], extra: Partial<EmbeddingRequest> = {}): EmbeddingRequest => ({ model: 'x/m', upstreamModel: 'm', input: { kind: 'text', texts }, encodingFormat: 'float', ...extra });

t.test('OpenAI embeddings: the request as OpenAI takes it; base64 answers decoded, in index order', async (t) => {
  const [call] = openAiEmbeddings.build(embedding(['a', 'b'], { encodingFormat: 'base64', dimensions: 2, user: 'u1' }), provider('openai'));
  t.equal(call?.url, 'http://upstream.test/v1/embeddings');
  t.same(call?.body, { model: 'm', input: ['a', 'b'], encoding_format: 'base64', dimensions: 2, user: 'u1' });
  t.equal(call?.headers.authorization, 'Bearer upstream-secret');
  const tokens = openAiEmbeddings.build({ ...embedding([]), input: { kind: 'tokens', tokens: [[1, 2], [3]] } }, provider('openai'));
  t.same((tokens[0]?.body as { input: unknown }).input, [[1, 2], [3]]);
  const result = openAiEmbeddings.parse([fixture('openai-embeddings-base64.json')], embedding(['a', 'b']), provider('openai'));
  t.same(result.vectors, ['AAAAAAAAgD8=', 'AACAPwAAAAA='], 'base64 kept as it came, index 0 first');
  t.same(Array.from(decodeBase64Floats('p', result.vectors[0] as string)), [0, 1]);
  t.equal(result.inputTokens, 7);
  t.match(thrown(() => openAiEmbeddings.parse([{ data: [{ index: 0, embedding: [1] }] }], embedding(['a', 'b']), provider('openai'))), { status: 502 }, 'a missing vector is a 502');
  t.match(thrown(() => openAiEmbeddings.parse([{ data: [{ index: 0, embedding: 'AAA' }] }], embedding(['a']), provider('openai'))), { status: 502 }, 'base64 of a partial float');
});

t.test('base64 float32 round trip is little-endian', async (t) => {
  const encoded = encodeBase64Floats([1, -2.5, 0.1]);
  t.equal(Buffer.from(encoded, 'base64').readFloatLE(4), -2.5);
  t.same(Array.from(decodeBase64Floats('p', encoded)), [1, -2.5, Math.fround(0.1)]);
});

t.test('Gemini embeddings: batchEmbedContents in batches of 100, order kept, no token usage', async (t) => {
  const texts = Array.from({ length: 250 }, (_, i) => `text ${i}`);
  const calls = geminiEmbeddings.build(embedding(texts, { dimensions: 256 }), provider('gemini'));
  t.equal(calls.length, 3);
  t.equal(calls[0]?.url, 'http://upstream.test/v1beta/models/m:batchEmbedContents');
  t.equal(calls[0]?.headers['x-goog-api-key'], 'upstream-secret');
  const first = calls[0]?.body as { requests: Array<{ model: string; content: { parts: Array<{ text: string }> }; outputDimensionality: number }> };
  t.equal(first.requests.length, 100);
  t.same(first.requests[0], { model: 'models/m', content: { parts: [{ text: 'text 0' }] }, outputDimensionality: 256 });
  t.equal((calls[2]?.body as { requests: unknown[] }).requests.length, 50);
  const bodies = [0, 1, 2].map((batch) => ({ embeddings: Array.from({ length: batch === 2 ? 50 : 100 }, (_, i) => ({ values: [batch * 100 + i] })) }));
  const result = geminiEmbeddings.parse(bodies, embedding(texts), provider('gemini'));
  t.same(result.vectors.map((v) => v[0]), texts.map((_, i) => i), 'vectors in input order across batches');
  t.equal(result.inputTokens, undefined);
  t.match(thrown(() => geminiEmbeddings.parse([{ embeddings: [] }], embedding(['a']), provider('gemini'))), { status: 502 });
});

const speech = (extra: Partial<SpeechRequest> = {}): SpeechRequest => ({ model: 'x/m', upstreamModel: 'tts-1', input: 'Hello', voice: 'nova', format: 'mp3', ...extra });

t.test('OpenAI speech and Deepgram speak', async (t) => {
  const call = openAiSpeech.build(speech({ speed: 1.5, instructions: 'calm' }), provider('openai'));
  t.equal(call.url, 'http://upstream.test/v1/audio/speech');
  t.same(call.body, { model: 'tts-1', input: 'Hello', voice: 'nova', response_format: 'mp3', speed: 1.5, instructions: 'calm' });
  const expected: Record<string, string> = {
    mp3: 'encoding=mp3',
    opus: 'encoding=opus&container=ogg',
    aac: 'encoding=aac',
    flac: 'encoding=flac',
    wav: 'encoding=linear16&container=wav&sample_rate=24000',
    pcm: 'encoding=linear16&container=none&sample_rate=24000',
  };
  for (const [format, query] of Object.entries(expected)) {
    const dg = deepgramSpeech.build(speech({ upstreamModel: 'aura-2', format: format as SpeechRequest['format'] }), provider('deepgram'));
    t.equal(dg.url, `http://upstream.test/v1/speak?model=aura-2-luna-en&${query}`, format);
  }
  const dg = deepgramSpeech.build(speech({ upstreamModel: 'aura-2', voice: 'onyx', speed: 0.8 }), provider('deepgram'));
  t.equal(dg.url, 'http://upstream.test/v1/speak?model=aura-2-zeus-en&encoding=mp3&speed=0.8');
  t.same(dg.body, { text: 'Hello' });
  t.equal(dg.headers.authorization, 'Token upstream-secret', "Deepgram's own auth scheme");
  t.same(Object.keys(DEEPGRAM_VOICES).sort(), ['alloy', 'echo', 'fable', 'nova', 'onyx', 'shimmer']);
  t.equal(deepgramSpeech.billedCharacters?.({ 'dg-char-count': '42' }), 42);
  t.equal(deepgramSpeech.billedCharacters?.({}), undefined);
  t.equal(deepgramErrorMessage({ err_code: 'INVALID_QUERY_PARAMETER', err_msg: 'bad speed' }), 'bad speed');
});

const transcription = (extra: Partial<TranscriptionRequest> = {}): TranscriptionRequest => ({
  model: 'x/m',
  upstreamModel: 'whisper-1',
  audio: Buffer.from('RIFFdata'),
  filename: 'a.wav',
  mimeType: 'audio/wav',
  durationSeconds: 2.5,
  responseFormat: 'verbose_json',
  timestampGranularities: ['word', 'segment'],
  ...extra,
});

t.test('OpenAI transcription: a byte-exact multipart form; the answer passed through with its duration', async (t) => {
  const call = openAiTranscription.build(transcription({ language: 'en', temperature: 0.2 }), provider('openai'));
  t.equal(call.url, 'http://upstream.test/v1/audio/transcriptions');
  const type = call.headers['content-type'] ?? '';
  t.match(type, /^multipart\/form-data; boundary=/);
  const raw = Buffer.concat(call.rawBody as Buffer[]);
  t.equal(call.headers['content-length'], String(raw.length), 'the length of the parts');
  const text = raw.toString('latin1');
  t.match(text, 'content-disposition: form-data; name="file"; filename="a.wav"\r\ncontent-type: audio/wav\r\n\r\nRIFFdata\r\n');
  t.match(text, 'name="model"\r\n\r\nwhisper-1\r\n');
  t.match(text, 'name="timestamp_granularities[]"\r\n\r\nword\r\n');
  t.match(text, 'name="temperature"\r\n\r\n0.2\r\n');
  t.equal(call.headers.authorization, 'Bearer upstream-secret');
  const verbose = openAiTranscription.parse(Buffer.from(JSON.stringify({ task: 'transcribe', duration: 2.49, text: 'hi', segments: [] })), 'application/json', transcription(), provider('openai'));
  t.match(verbose, { kind: 'rendered', durationSeconds: 2.49, contentType: 'application/json' });
  const json = openAiTranscription.parse(Buffer.from('{"text":"hi","usage":{"type":"duration","seconds":3}}'), 'application/json', transcription({ responseFormat: 'json' }), provider('openai'));
  t.equal(json.kind === 'rendered' && json.durationSeconds, 3);
  const plain = openAiTranscription.parse(Buffer.from('1\n00:00:00,000 --> 00:00:01,000\nhi\n'), 'text/plain', transcription({ responseFormat: 'srt' }), provider('openai'));
  t.match(plain, { kind: 'rendered', contentType: 'text/plain' });
  t.match(thrown(() => openAiTranscription.parse(Buffer.from('not json'), 'application/json', transcription({ responseFormat: 'json' }), provider('openai'))), { status: 502 });
});

t.test('Deepgram listen: raw audio in, transcript, words and utterances out', async (t) => {
  const call = deepgramTranscription.build(transcription({ upstreamModel: 'nova-3', prompt: 'names' }), provider('deepgram'));
  t.equal(call.url, 'http://upstream.test/v1/listen?model=nova-3&smart_format=true&punctuate=true&utterances=true&detect_language=true');
  t.equal(call.headers['content-type'], 'audio/wav');
  t.same(call.rawBody, Buffer.from('RIFFdata'));
  t.same(call.ignoredParams, ['prompt'], 'Deepgram has no prompt: named, not sent');
  const result = deepgramTranscription.parse(Buffer.from(JSON.stringify(fixture('deepgram-listen.json'))), 'application/json', transcription(), provider('deepgram'));
  t.same(result, {
    kind: 'canonical',
    text: 'Hello there. General Kenobi.',
    language: 'en',
    durationSeconds: 2.5,
    segments: [
      { id: 0, start: 0.08, end: 0.9, text: 'Hello there.' },
      { id: 1, start: 1.2, end: 2.3, text: 'General Kenobi.' },
    ],
    words: [
      { word: 'Hello', start: 0.08, end: 0.4 },
      { word: 'there.', start: 0.4, end: 0.9 },
      { word: 'General', start: 1.2, end: 1.7 },
      { word: 'Kenobi.', start: 1.7, end: 2.3 },
    ],
  });
  const segments = result.kind === 'canonical' ? result.segments : [];
  t.equal(srt(segments), '1\n00:00:00,080 --> 00:00:00,900\nHello there.\n\n2\n00:00:01,200 --> 00:00:02,300\nGeneral Kenobi.\n\n');
  t.equal(vtt(segments), 'WEBVTT\n\n00:00:00.080 --> 00:00:00.900\nHello there.\n\n00:00:01.200 --> 00:00:02.300\nGeneral Kenobi.\n\n');
});

const image = (extra: Partial<ImageRequest> = {}): ImageRequest => ({ model: 'x/m', upstreamModel: 'dall-e-3', prompt: 'a cat', n: 1, size: '1024x1024', responseFormat: 'url', ...extra });

t.test('images: OpenAI passes response_format only where the model takes it; Gemini makes one image per call', async (t) => {
  const [dalle] = openAiImages.build(image({ quality: 'hd', style: 'vivid', upstreamResponseFormat: 'url' }), provider('openai'));
  t.same(dalle?.body, { model: 'dall-e-3', prompt: 'a cat', n: 1, size: '1024x1024', quality: 'hd', style: 'vivid', response_format: 'url' });
  const [gpt] = openAiImages.build(image({ upstreamModel: 'gpt-image-1', n: 2 }), provider('openai'));
  t.notOk('response_format' in (gpt?.body as object), 'GPT image models refuse response_format');
  const parsed = openAiImages.parse([{ created: 1, data: [{ b64_json: 'AAA' }], quality: 'medium', size: '1024x1024', output_format: 'png' }], image(), provider('openai'));
  t.same(parsed, { images: [{ b64: 'AAA', mimeType: 'image/png' }], quality: 'medium', size: '1024x1024' });
  const calls = geminiImages.build(image({ upstreamModel: 'gemini-2.5-flash-image', size: '1344x768', n: 3 }), provider('gemini'));
  t.equal(calls.length, 3);
  t.same((calls[0]?.body as { generationConfig: unknown }).generationConfig, { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '16:9' } });
  t.same(geminiImages.parse([fixture('gemini-image.json')], image(), provider('gemini')), { images: [{ b64: 'iVBORw0KGgo=', mimeType: 'image/png' }] });
  t.match(thrown(() => geminiImages.parse([{ promptFeedback: { blockReason: 'SAFETY' } }], image(), provider('gemini'))), { status: 400, param: 'prompt' });
});

t.test('multipart: fields in order, quotes escaped', async (t) => {
  const { parts, length, contentType } = buildMultipart([{ name: 'a"b', value: 'x' }, { name: 'file', filename: 'f.mp3', contentType: 'audio/mpeg', data: Buffer.from([0, 255]) }], 'B');
  t.equal(contentType, 'multipart/form-data; boundary=B');
  const body = Buffer.concat(parts);
  t.equal(length, body.length);
  t.ok(parts.some((part) => part.length === 2 && part[1] === 255), 'the file is one of the parts, not copied into a whole');
  t.same(body, Buffer.concat([Buffer.from('--B\r\ncontent-disposition: form-data; name="a%22b"\r\n\r\nx\r\n--B\r\ncontent-disposition: form-data; name="file"; filename="f.mp3"\r\ncontent-type: audio/mpeg\r\n\r\n'), Buffer.from([0, 255]), Buffer.from('\r\n--B--\r\n')]));
});

t.test('media prices: exact µINR per unit, rounded up once', async (t) => {
  t.equal(speechCostMicros({ inputPer1M: 0, outputPer1M: 0, inputPer1MChars: 1_260_000_000 }, 4096), 5_160_960, '4096 chars at ₹1260/1M');
  t.equal(speechCostMicros({ inputPer1M: 0, outputPer1M: 0, inputPer1MChars: 1_260_000_000 }, 1), 1260);
  t.equal(transcriptionCostMicros({ inputPer1M: 0, outputPer1M: 0, perMinute: 504_000 }, 61), 512_400, "61 s at ₹0.504/min");
  t.equal(transcriptionCostMicros({ inputPer1M: 0, outputPer1M: 0, perMinute: 155_400 }, 1), 2590, 'rounded up');
  t.equal(billedSeconds(2.4, 0), 2);
  t.equal(billedSeconds(2.5, 0), 3);
  t.equal(billedSeconds(0.2, 0), 1, 'at least a second');
  t.equal(billedSeconds(2.5, 10), 10, "the vendor's minimum");
  const pricing = { inputPer1M: 0, outputPer1M: 0, perImage: 9, imagePrices: { '1024x1024/low': 1, '1024x1024/high': 5, '1536x1024/high': 7, '256x256': 2 } };
  t.equal(imagePriceMicros(pricing, '1024x1024', 'low'), 1);
  t.equal(imagePriceMicros(pricing, '1024x1024', 'auto'), 5, 'auto: the dearest quality of the size');
  t.equal(imagePriceMicros(pricing, '1024x1024', undefined), 5);
  t.equal(imagePriceMicros(pricing, 'auto', 'high'), 7, 'auto size: the dearest size');
  t.equal(imagePriceMicros(pricing, '256x256', 'standard'), 2, 'a size-only price');
  t.equal(imagePriceMicros(pricing, '512x512', 'standard'), 9, 'else the per-image price');
});

t.test('media rules: each a 400 naming the field and what the model takes', async (t) => {
  const model = { id: 'deepgram/aura-2', contextWindow: 2000 } as ModelConfig;
  const spec = { formats: ['mp3', 'wav'] as const, speedMin: 0.7, speedMax: 1.5, instructions: false };
  const ok = { input: 'hi', voice: 'alloy', format: 'mp3' as const };
  t.equal(checkSpeech(model, 'deepgram', spec, ok), 2);
  t.match(thrown(() => checkSpeech(model, 'deepgram', spec, { ...ok, speed: 2 })), { status: 400, param: 'speed', message: 'speed: must be from 0.7 to 1.5 for deepgram/aura-2' });
  t.match(thrown(() => checkSpeech(model, 'deepgram', spec, { ...ok, format: 'flac' })), { param: 'response_format', message: /produces mp3, wav/ });
  t.match(thrown(() => checkSpeech(model, 'deepgram', spec, { ...ok, voice: 'coral' })), { param: 'voice' }, "OpenAI's extra voices are OpenAI's");
  t.equal(checkSpeech({ ...model, contextWindow: 4096 }, 'openai', { ...spec, speedMax: 4 }, { ...ok, voice: 'coral' }), 2);
  t.match(thrown(() => checkSpeech(model, 'deepgram', spec, { ...ok, input: 'x'.repeat(2001) })), { param: 'input', message: /at most 2000 characters/ });
  t.match(thrown(() => checkSpeech(model, 'deepgram', spec, { ...ok, instructions: 'calm' })), { param: 'instructions' });
  t.equal(countCharacters('a😀b'), 3, 'a surrogate pair is one character');
  const dalle = { id: 'openai/dall-e-3' } as ModelConfig;
  const imageSpec = { sizes: ['1024x1024', '1792x1024'], defaultSize: '1024x1024', qualities: ['standard', 'hd'], defaultQuality: 'standard', maxImages: 1, styles: true, urlOutput: true, maxPromptChars: 4000 };
  t.same(checkImage(dalle, imageSpec, { prompt: 'x' }), { size: '1024x1024', n: 1, quality: 'standard' });
  t.match(thrown(() => checkImage(dalle, imageSpec, { prompt: 'x', n: 2 })), { param: 'n', message: 'n: must be at most 1 for openai/dall-e-3' });
  t.match(thrown(() => checkImage(dalle, imageSpec, { prompt: 'x'.repeat(4001) })), { param: 'prompt' });
  t.match(thrown(() => checkImage(dalle, imageSpec, { prompt: 'x', size: '512x512' })), { param: 'size', message: /1024x1024, 1792x1024/ });
  t.match(thrown(() => checkImage(dalle, imageSpec, { prompt: 'x', quality: 'high' })), { param: 'quality' });
  t.match(thrown(() => checkImage(dalle, { ...imageSpec, styles: false }, { prompt: 'x', style: 'vivid' })), { param: 'style' });
});
