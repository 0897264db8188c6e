import { parseBuffer } from 'music-metadata';
import t, { type Test } from 'tap';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kRanks from 'js-tiktoken/ranks/cl100k_base';
import { audioDurationSeconds, SAMPLE_FORMATS, sampleAudio, SPEECH_FORMATS, speechAudio, type SampleFormat, type SpeechFormat } from '../support/simulator/audio.js';
import { cosine } from '../support/simulator/embed.js';
import { pngSize } from '../support/simulator/png.js';
import { parseScenario } from '../support/simulator/scenario.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * The provider simulator's media endpoints (OpenAI, Groq, Gemini, Deepgram), driven with fetch:
 * wire shapes, real audio and PNG bytes, validation, auth and faults.
 */

const KEY = 'sim-key';
const cl100k = new Tiktoken(cl100kRanks);
const tokens = (text: string): number => cl100k.encode(text, 'all').length;

// ---------------------------------------------------------------------------------------------
// Wire shapes the tests read

interface OpenAIErrorBody {
  error: { message: string; type: string; param?: string | null; code: string | null };
}
interface GeminiErrorBody {
  error: { code: number; message: string; status: string };
}
interface DeepgramErrorBody {
  err_code: string;
  err_msg: string;
  request_id: string;
}
interface EmbeddingList {
  id?: string;
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage?: { prompt_tokens: number; total_tokens: number; completion_tokens?: number };
}
interface Segment {
  id: number;
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number;
}
interface Transcription {
  text: string;
  task?: string;
  language?: string;
  duration?: number;
  segments?: Segment[];
  words?: Array<{ word: string; start: number; end: number }>;
  usage?: { type: 'duration'; seconds: number } | { type: 'tokens'; input_tokens: number; output_tokens: number; total_tokens: number; input_token_details: { text_tokens: number; audio_tokens: number } };
  x_groq?: { id: string };
}
interface ImageList {
  created: number;
  data: Array<{ url?: string; b64_json?: string; revised_prompt?: string }>;
  background?: string;
  output_format?: string;
  quality?: string;
  size?: string;
  usage?: { input_tokens: number; output_tokens: number; total_tokens: number; input_tokens_details: { text_tokens: number; image_tokens: number } };
}
interface GeminiImageResponse {
  candidates: Array<{ content: { role: string; parts: Array<{ text?: string; inlineData?: { mimeType: string; data: string } }> }; finishReason: string; index: number }>;
  usageMetadata?: {
    promptTokenCount: number;
    candidatesTokenCount: number;
    totalTokenCount: number;
    promptTokensDetails: Array<{ modality: string; tokenCount: number }>;
    candidatesTokensDetails: Array<{ modality: string; tokenCount: number }>;
  };
  modelVersion: string;
  responseId: string;
}
interface DeepgramWord {
  word: string;
  start: number;
  end: number;
  confidence: number;
  punctuated_word?: string;
}
interface DeepgramListen {
  metadata: {
    transaction_key: string;
    request_id: string;
    sha256: string;
    created: string;
    duration: number;
    channels: number;
    models: string[];
    model_info: Record<string, { name: string; version: string; arch: string }>;
  };
  results: {
    channels: Array<{ alternatives: Array<{ transcript: string; confidence: number; words: DeepgramWord[] }>; detected_language?: string; language_confidence?: number }>;
    utterances?: Array<{ start: number; end: number; confidence: number; channel: number; transcript: string; words: DeepgramWord[]; id: string }>;
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers

interface Reply {
  status: number;
  headers: Headers;
  bytes: Buffer;
  text: string;
  /** Body chunks as they arrived. */
  chunks: number;
  /** Set when reading the body failed (a disconnect). */
  error?: Error;
}

async function call(url: string, init: RequestInit): Promise<Reply> {
  const res = await fetch(url, init);
  const parts: Buffer[] = [];
  let error: Error | undefined;
  try {
    if (res.body) for await (const chunk of res.body) parts.push(Buffer.from(chunk as Uint8Array));
  } catch (e) {
    error = e as Error;
  }
  const bytes = Buffer.concat(parts);
  const reply: Reply = { status: res.status, headers: res.headers, bytes, text: bytes.toString('utf8'), chunks: parts.length };
  if (error) reply.error = error;
  return reply;
}

function postJson(url: string, body: unknown, headers: Record<string, string>): Promise<Reply> {
  return call(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

function json<T>(reply: Reply): T {
  return JSON.parse(reply.text) as T;
}

const sim = await ProviderSimulator.start({ apiKey: KEY });
t.teardown(() => sim.close());

const bearer = { authorization: `Bearer ${KEY}` };
const goog = { 'x-goog-api-key': KEY };
const token = { authorization: `Token ${KEY}` };

const oaiUrl = (path: string): string => `${sim.openaiBaseUrl}${path}`;
const groqUrl = (path: string): string => `${sim.groqBaseUrl}${path}`;
const gemUrl = (model: string, action: string): string => `${sim.geminiBaseUrl}/v1beta/models/${model}:${action}`;
const dgUrl = (path: string, query: Record<string, string> = {}): string => `${sim.deepgramBaseUrl}${path}?${new URLSearchParams(query).toString()}`;

function form(fields: Record<string, string | string[]>, file?: { bytes: Uint8Array; filename: string; type?: string }): FormData {
  const data = new FormData();
  if (file) data.append('file', new Blob([file.bytes], { type: file.type ?? 'application/octet-stream' }), file.filename);
  for (const [name, value] of Object.entries(fields)) for (const v of Array.isArray(value) ? value : [value]) data.append(name, v);
  return data;
}

function transcribe(url: string, fields: Record<string, string | string[]>, file?: { bytes: Uint8Array; filename: string; type?: string }, headers: Record<string, string> = bearer): Promise<Reply> {
  return call(url, { method: 'POST', headers, body: form(fields, file) });
}

const sample = (format: SampleFormat): { bytes: Buffer; filename: string } => ({ bytes: sampleAudio(format), filename: `sample.${format}` });

function decodeBase64Floats(b64: string): number[] {
  const buf = Buffer.from(b64, 'base64');
  const out: number[] = [];
  for (let i = 0; i < buf.length; i += 4) out.push(buf.readFloatLE(i));
  return out;
}

const norm = (v: number[]): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

/** A duration within `tolerance` seconds of `expected`. */
function near(t: Test, actual: number | undefined, expected: number, tolerance: number, what: string): void {
  t.ok(actual !== undefined && Math.abs(actual - expected) <= tolerance, `${what}: ${actual} ≈ ${expected}`);
}

/** Polls a condition (no timing assertion: it only bounds how long a broken build can hang). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never happened: ${what}`);
}

// ---------------------------------------------------------------------------------------------

t.test('simulator properties and scenario fields', async (t) => {
  t.equal(sim.groqBaseUrl, `${sim.url}/openai/v1`);
  t.equal(sim.deepgramBaseUrl, sim.url);
  t.same(parseScenario({ audioChunkBytes: 100, malformedBody: true }), { audioChunkBytes: 100, malformedBody: true });
  t.throws(() => parseScenario({ audioChunkBytes: 0 }), /audioChunkBytes must be at least 1/);
  t.throws(() => parseScenario({ malformedBody: 'yes' }), /malformedBody must be a boolean/);
});

t.test('OpenAI embeddings: shapes, float and base64, similarity, usage, recording', async (t) => {
  sim.reset();
  const texts = ['The cat sat on the mat.', 'A cat sat on a mat.', 'Quarterly revenue grew by ten percent.'];
  const floatRes = await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: texts }, bearer);
  t.equal(floatRes.status, 200);
  t.match(floatRes.headers.get('content-type'), /^application\/json/);
  const floats = json<EmbeddingList>(floatRes);
  t.equal(floats.object, 'list');
  t.equal(floats.model, 'text-embedding-3-small');
  t.notOk('id' in floats, 'OpenAI has no id');
  t.same(floats.data.map((d) => [d.object, d.index]), [['embedding', 0], ['embedding', 1], ['embedding', 2]]);
  const vectors = floats.data.map((d) => d.embedding as number[]);
  t.ok(vectors.every((v) => v.length === 1536), 'native 1536 dimensions');
  t.ok(vectors.every((v) => Math.abs(norm(v) - 1) < 1e-5), 'unit vectors');
  const total = texts.reduce((s, text) => s + tokens(text), 0);
  t.same(floats.usage, { prompt_tokens: total, total_tokens: total });
  const [cat, cat2, revenue] = vectors as [number[], number[], number[]];
  t.ok(cosine(cat, cat2) > cosine(cat, revenue) + 0.2, `similar texts are closer (${cosine(cat, cat2)} vs ${cosine(cat, revenue)})`);
  t.ok(Math.abs(cosine(cat, revenue)) < 0.15, 'unrelated texts are near orthogonal');

  const b64Res = await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: texts, encoding_format: 'base64' }, bearer);
  const b64 = json<EmbeddingList>(b64Res);
  b64.data.forEach((d, i) => {
    t.type(d.embedding, 'string');
    t.same(decodeBase64Floats(d.embedding as string), vectors[i], `base64 item ${i} decodes to the float vector`);
  });

  const again = json<EmbeddingList>(await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: texts[0] }, bearer));
  t.same(again.data[0]?.embedding, cat, 'deterministic');

  const large = json<EmbeddingList>(await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-large', input: 'hello', dimensions: 256 }, bearer));
  const short = large.data[0]?.embedding as number[];
  t.equal(short.length, 256, 'dimensions');
  t.ok(Math.abs(norm(short) - 1) < 1e-5, 'a shortened vector is re-normalized');
  const full = json<EmbeddingList>(await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-large', input: 'hello' }, bearer)).data[0]?.embedding as number[];
  t.equal(full.length, 3072);
  t.ok(cosine(full.slice(0, 256), short) > 0.9999, 'the shortened vector is the full one cut and rescaled');

  const tokenInputs = json<EmbeddingList>(await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-ada-002', input: [[1, 2, 3], [4, 5]] }, bearer));
  t.equal(tokenInputs.data.length, 2);
  t.same(tokenInputs.usage, { prompt_tokens: 5, total_tokens: 5 }, 'token arrays count their length');
  const oneArray = json<EmbeddingList>(await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-ada-002', input: [10, 20, 30, 40] }, bearer));
  t.equal(oneArray.data.length, 1, 'a number[] is one token array');
  t.equal(oneArray.usage?.prompt_tokens, 4);

  const mistral = json<EmbeddingList>(await postJson(oaiUrl('/embeddings'), { model: 'mistral-embed', input: ['bonjour'] }, bearer));
  t.match(mistral.id, /^[0-9a-f]{32}$/, 'Mistral answers carry an id');
  t.equal((mistral.data[0]?.embedding as number[]).length, 1024);
  t.equal(mistral.usage?.completion_tokens, 0);

  const groq = await postJson(groqUrl('/embeddings'), { model: 'nomic-embed-text-v1_5', input: 'hi' }, bearer);
  t.equal(groq.status, 200, 'also under /openai/v1');
  t.equal((json<EmbeddingList>(groq).data[0]?.embedding as number[]).length, 1536, 'unknown models: 1536');

  sim.enqueue({ usage: 'omit' });
  t.notOk('usage' in json<EmbeddingList>(await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: 'x' }, bearer)), "usage: 'omit'");

  const recorded = sim.requests[0];
  t.equal(recorded?.family, 'openai');
  t.equal(recorded?.path, '/v1/embeddings');
  t.equal(recorded?.model, 'text-embedding-3-small');
  t.same(recorded?.body, { model: 'text-embedding-3-small', input: texts });
});

t.test('OpenAI embeddings: invalid input', async (t) => {
  sim.reset();
  const bad = async (body: Record<string, unknown>, param: string, pattern: RegExp): Promise<void> => {
    const res = await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', ...body }, bearer);
    t.equal(res.status, 400, `400: ${JSON.stringify(body).slice(0, 60)}`);
    const err = json<OpenAIErrorBody>(res).error;
    t.equal(err.type, 'invalid_request_error');
    t.equal(err.param, param);
    t.match(err.message, pattern);
  };
  await bad({ input: '' }, 'input', /'\$\.input' is invalid/);
  await bad({ input: [] }, 'input', /'\$\.input' is invalid/);
  await bad({ input: ['ok', ''] }, 'input', /'\$\.input' is invalid/);
  await bad({ input: [1.5, 2] }, 'input', /'\$\.input' is invalid/);
  await bad({ input: [[1, -2]] }, 'input', /'\$\.input' is invalid/);
  await bad({ input: Array.from({ length: 2049 }, () => 'x') }, 'input', /maximum length 2048/);
  await bad({}, 'input', /Missing required parameter: 'input'/);
  await bad({ input: 'x', encoding_format: 'hex' }, 'encoding_format', /Supported values are: 'float' and 'base64'/);
  await bad({ input: 'x', dimensions: 0 }, 'dimensions', /Expected a value >= 1/);
  await bad({ input: 'x', dimensions: 1537 }, 'dimensions', /Expected a value <= 1536/);
  const ada = await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-ada-002', input: 'x', dimensions: 10 }, bearer);
  t.equal(ada.status, 400);
  t.equal(json<OpenAIErrorBody>(ada).error.message, 'This model does not support specifying dimensions.');
  const noModel = await postJson(oaiUrl('/embeddings'), { input: 'x' }, bearer);
  t.equal(json<OpenAIErrorBody>(noModel).error.message, 'you must provide a model parameter');
  const notJson = await postJson(oaiUrl('/embeddings'), '{"model":', bearer);
  t.match(json<OpenAIErrorBody>(notJson).error.message, /could not parse the JSON body/);
  t.equal((await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: Array.from({ length: 2048 }, (_, i) => `item ${i}`) }, bearer)).status, 200, '2048 items are fine');
});

t.test('OpenAI speech: every format is real audio, chunked', async (t) => {
  sim.reset();
  const types: Record<SpeechFormat, string> = { mp3: 'audio/mpeg', opus: 'audio/opus', aac: 'audio/aac', flac: 'audio/flac', wav: 'audio/wav', pcm: 'audio/pcm' };
  const containers: Record<Exclude<SpeechFormat, 'pcm'>, RegExp> = { mp3: /^MPEG$/, opus: /^Ogg$/, aac: /^ADTS/, flac: /^FLAC$/, wav: /^WAVE$/ };
  const codecs: Record<Exclude<SpeechFormat, 'pcm'>, RegExp> = { mp3: /Layer 3/, opus: /Opus/, aac: /AAC/, flac: /FLAC/, wav: /PCM/ };
  for (const format of SPEECH_FORMATS) {
    sim.enqueue({ audioChunkBytes: 1000, chunkDelayMs: 2 });
    const res = await postJson(oaiUrl('/audio/speech'), { model: 'gpt-4o-mini-tts', input: 'Hello there', voice: 'coral', response_format: format, instructions: 'Cheerful.' }, bearer);
    t.equal(res.status, 200, format);
    t.equal(res.headers.get('content-type'), types[format]);
    t.equal(res.headers.get('transfer-encoding'), 'chunked');
    t.equal(res.headers.get('content-length'), null, 'no content-length');
    t.match(res.headers.get('x-request-id'), /^req_/);
    t.same(res.bytes, speechAudio(format), `${format}: the fixture bytes`);
    t.ok(res.chunks >= 2, `${format}: arrived in ${res.chunks} chunks`);
    if (format === 'pcm') {
      t.equal(res.bytes.length, 48_000, 'pcm: one second of 24 kHz s16le');
      t.equal(await audioDurationSeconds(res.bytes, 'pcm'), 1);
      continue;
    }
    const meta = await parseBuffer(res.bytes, { mimeType: types[format] === 'audio/opus' ? 'audio/ogg' : types[format], size: res.bytes.length }, { duration: true });
    t.match(meta.format.container, containers[format], `${format}: container ${meta.format.container}`);
    t.match(meta.format.codec, codecs[format], `${format}: codec ${meta.format.codec}`);
    t.equal(meta.format.sampleRate, 24_000);
    near(t, meta.format.duration, 1, 0.1, `${format}: duration`);
    near(t, await audioDurationSeconds(res.bytes, format), 1, 0.1, `${format}: audioDurationSeconds`);
  }
  const mp3 = await postJson(oaiUrl('/audio/speech'), { model: 'tts-1', input: 'Default format', voice: 'alloy' }, bearer);
  t.equal(mp3.headers.get('content-type'), 'audio/mpeg', 'mp3 by default');
  t.equal(mp3.chunks >= 1 && mp3.bytes.length, speechAudio('mp3').length);
  t.equal(sim.requests.at(-1)?.model, 'tts-1');
});

t.test('OpenAI speech: stream_format sse (gpt-4o-mini-tts)', async (t) => {
  sim.reset();
  sim.enqueue({ audioChunkBytes: 1500 });
  const res = await postJson(oaiUrl('/audio/speech'), { model: 'gpt-4o-mini-tts', input: 'Hello', voice: 'nova', stream_format: 'sse' }, bearer);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/event-stream/);
  const events = res.text
    .split('\n\n')
    .filter((b) => b.startsWith('data: '))
    .map((b) => JSON.parse(b.slice(6)) as { type: string; audio?: string; usage?: { input_tokens: number; output_tokens: number; total_tokens: number } });
  const deltas = events.filter((e) => e.type === 'speech.audio.delta');
  t.equal(deltas.length, Math.ceil(speechAudio('mp3').length / 1500));
  t.same(Buffer.concat(deltas.map((e) => Buffer.from(e.audio ?? '', 'base64'))), speechAudio('mp3'));
  const done = events.at(-1);
  t.equal(done?.type, 'speech.audio.done');
  t.equal(done?.usage?.input_tokens, tokens('Hello'));
  t.ok((done?.usage?.output_tokens ?? 0) > 0);
});

t.test('OpenAI speech: invalid input', async (t) => {
  sim.reset();
  const base = { model: 'tts-1', input: 'Hi', voice: 'alloy' };
  const bad = async (body: Record<string, unknown>, param: string, pattern: RegExp): Promise<void> => {
    const res = await postJson(oaiUrl('/audio/speech'), { ...base, ...body }, bearer);
    t.equal(res.status, 400, `400 ${param}`);
    const err = json<OpenAIErrorBody>(res).error;
    t.equal(err.param, param);
    t.match(err.message, pattern);
  };
  await bad({ voice: 'robot' }, 'voice', /Invalid value: 'robot'. Supported values are: 'alloy', .*'marin', and 'cedar'/);
  await bad({ voice: undefined }, 'voice', /Missing required parameter: 'voice'/);
  await bad({ input: '' }, 'input', /empty string/);
  await bad({ input: 'x'.repeat(4097) }, 'input', /maximum length 4096/);
  await bad({ response_format: 'ogg' }, 'response_format', /Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav', and 'pcm'/);
  await bad({ speed: 0.1 }, 'speed', /Expected a value >= 0.25/);
  await bad({ speed: 5 }, 'speed', /Expected a value <= 4/);
  await bad({ instructions: 'Whisper.' }, 'instructions', /not supported/);
  await bad({ model: 'tts-1-hd', instructions: 'Whisper.' }, 'instructions', /not supported/);
  await bad({ model: 'tts-2' }, 'model', /Invalid value: 'tts-2'/);
  await bad({ stream_format: 'sse' }, 'stream_format', /not supported for model 'tts-1'/);
  const ok = await postJson(oaiUrl('/audio/speech'), { ...base, input: 'x'.repeat(4096), speed: 4 }, bearer);
  t.equal(ok.status, 200, '4096 characters and speed 4 are fine');
});

t.test('OpenAI transcriptions: every fixture in every format', async (t) => {
  sim.reset();
  for (const format of SAMPLE_FORMATS) {
    const file = sample(format);
    const duration = await audioDurationSeconds(file.bytes, format);
    t.ok(duration !== undefined && Math.abs(duration - 2.5) < 0.1, `${format}: fixture is about 2.5 s (${duration})`);
    const d = duration ?? 0;
    const text = `Transcribed ${d.toFixed(2)} seconds of audio.`;

    const plain = await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1' }, file);
    t.equal(plain.status, 200, `${format}: json`);
    t.match(plain.headers.get('content-type'), /^application\/json/);
    t.same(json<Transcription>(plain), { text, usage: { type: 'duration', seconds: Math.ceil(d) } });

    const asText = await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1', response_format: 'text' }, file);
    t.equal(asText.headers.get('content-type'), 'text/plain; charset=utf-8');
    t.equal(asText.text, `${text}\n`);

    const srt = await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1', response_format: 'srt' }, file);
    t.equal(srt.headers.get('content-type'), 'text/plain; charset=utf-8');
    t.match(srt.text, /^1\n00:00:00,000 --> 00:00:0\d,\d{3}\nTranscribed [0-9.]+ seconds\n\n2\n00:00:0\d,\d{3} --> 00:00:02,\d{3}\nof audio\.\n\n$/);

    const vtt = await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1', response_format: 'vtt' }, file);
    t.equal(vtt.headers.get('content-type'), 'text/plain; charset=utf-8');
    t.match(vtt.text, /^WEBVTT\n\n00:00:00\.000 --> 00:00:0\d\.\d{3}\nTranscribed [0-9.]+ seconds\n\n00:00:0\d\.\d{3} --> 00:00:02\.\d{3}\nof audio\.\n\n$/);

    const verbose = await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1', response_format: 'verbose_json', 'timestamp_granularities[]': ['word', 'segment'] }, file);
    const v = json<Transcription>(verbose);
    t.equal(v.task, 'transcribe');
    t.equal(v.language, 'english');
    t.equal(v.duration, d);
    t.equal(v.text, text);
    t.equal(v.segments?.length, 2);
    t.same(v.segments?.map((s) => s.text).join(''), ` ${text.split(' ').slice(0, 3).join(' ')} ${text.split(' ').slice(3).join(' ')}`);
    t.equal(v.segments?.[0]?.start, 0);
    t.equal(v.segments?.[1]?.start, v.segments?.[0]?.end, 'segments are contiguous');
    t.ok(Math.abs((v.segments?.[1]?.end ?? 0) - d) < 0.001, 'the last segment ends with the audio');
    t.same(Object.keys(v.segments?.[0] ?? {}).sort(), ['avg_logprob', 'compression_ratio', 'end', 'id', 'no_speech_prob', 'seek', 'start', 'temperature', 'text', 'tokens']);
    t.same(v.words?.map((w) => w.word), ['Transcribed', d.toFixed(2), 'seconds', 'of', 'audio']);
    t.ok(v.words?.every((w, i, all) => w.end > w.start && (i === 0 || w.start === all[i - 1]?.end)), 'words are spread evenly');
    t.same(v.usage, { type: 'duration', seconds: Math.ceil(d) });
  }
  const recorded = sim.requests[0];
  t.same(recorded?.body, { fields: { model: 'whisper-1' }, file: { filename: 'sample.wav', contentType: 'application/octet-stream', size: sampleAudio('wav').length } });
  t.equal(recorded?.model, 'whisper-1');

  sim.enqueue({ text: 'Scripted words here.' });
  const scripted = json<Transcription>(await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1', response_format: 'verbose_json' }, sample('mp3')));
  t.equal(scripted.text, 'Scripted words here.');
  t.notOk('words' in scripted, 'no words without the word granularity');
  sim.enqueue({ usage: 'omit' });
  t.same(json<Transcription>(await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1' }, sample('mp3'))), { text: 'Transcribed 2.59 seconds of audio.' }, "usage: 'omit'");
});

t.test('OpenAI transcriptions: gpt-4o models and the rules', async (t) => {
  sim.reset();
  const res = await transcribe(oaiUrl('/audio/transcriptions'), { model: 'gpt-4o-transcribe', prompt: 'Spell names carefully.' }, sample('wav'));
  const body = json<Transcription>(res);
  t.equal(body.text, 'Transcribed 2.50 seconds of audio.');
  const audioTokens = Math.ceil((2.5 * 1000) / 60);
  const promptTokens = tokens('Spell names carefully.');
  const output = tokens(body.text);
  t.same(body.usage, {
    type: 'tokens',
    input_tokens: promptTokens + audioTokens,
    input_token_details: { text_tokens: promptTokens, audio_tokens: audioTokens },
    output_tokens: output,
    total_tokens: promptTokens + audioTokens + output,
  });
  t.equal((await transcribe(oaiUrl('/audio/transcriptions'), { model: 'gpt-4o-mini-transcribe', response_format: 'text' }, sample('wav'))).status, 200);
  for (const format of ['srt', 'vtt', 'verbose_json']) {
    const refused = await transcribe(oaiUrl('/audio/transcriptions'), { model: 'gpt-4o-mini-transcribe', response_format: format }, sample('wav'));
    t.equal(refused.status, 400);
    t.match(json<OpenAIErrorBody>(refused).error, {
      message: `response_format '${format}' is not compatible with model 'gpt-4o-mini-transcribe'. Use 'json' or 'text' instead.`,
      param: 'response_format',
      code: 'unsupported_value',
    });
  }
  const bad = async (fields: Record<string, string | string[]>, file: { bytes: Uint8Array; filename: string } | undefined, param: string | null, pattern: RegExp): Promise<void> => {
    const reply = await transcribe(oaiUrl('/audio/transcriptions'), fields, file);
    t.equal(reply.status, 400, `400 ${String(param)}: ${pattern}`);
    const err = json<OpenAIErrorBody>(reply).error;
    t.equal(err.param, param);
    t.match(err.message, pattern);
  };
  await bad({ model: 'whisper-1' }, { bytes: Buffer.from('this is not audio at all, just text'), filename: 'broken.mp3' }, 'file', /^Audio file might be corrupted or unsupported$/);
  await bad({ model: 'whisper-1' }, { bytes: sampleAudio('wav'), filename: 'sample.txt' }, 'file', /^Invalid file format\. Supported formats: \['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm'\]$/);
  await bad({ model: 'whisper-1' }, undefined, 'file', /Missing required parameter: 'file'/);
  await bad({}, sample('wav'), 'model', /you must provide a model parameter/);
  await bad({ model: 'whisper-1', response_format: 'xml' }, sample('wav'), 'response_format', /Invalid value: 'xml'/);
  await bad({ model: 'whisper-1', 'timestamp_granularities[]': 'word' }, sample('wav'), 'timestamp_granularities', /only supported when response_format is 'verbose_json'/);
  await bad({ model: 'whisper-1', response_format: 'verbose_json', 'timestamp_granularities[]': 'letter' }, sample('wav'), 'timestamp_granularities', /Invalid value: 'letter'/);
  await bad({ model: 'whisper-1', temperature: '2' }, sample('wav'), 'temperature', /between 0 and 1/);
  const unknown = await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-2' }, sample('wav'));
  t.equal(unknown.status, 404);
  t.equal(json<OpenAIErrorBody>(unknown).error.code, 'model_not_found');
  const asJson = await postJson(oaiUrl('/audio/transcriptions'), { model: 'whisper-1' }, bearer);
  t.equal(asJson.status, 400);
  t.match(json<OpenAIErrorBody>(asJson).error.message, /^Invalid Content-Type header \(application\/json\), expected multipart\/form-data/);
});

t.test('Groq transcriptions under /openai/v1', async (t) => {
  sim.reset();
  const res = await transcribe(groqUrl('/audio/transcriptions'), { model: 'whisper-large-v3-turbo', language: 'en' }, sample('flac'));
  t.equal(res.status, 200);
  const body = json<Transcription>(res);
  t.same(Object.keys(body).sort(), ['text', 'x_groq']);
  t.match(body.x_groq?.id, /^req_[a-z0-9]{26}$/);
  t.equal(body.text, 'Transcribed 2.50 seconds of audio.');
  const verbose = json<Transcription>(await transcribe(groqUrl('/audio/transcriptions'), { model: 'whisper-large-v3', response_format: 'verbose_json', 'timestamp_granularities[]': 'word' }, sample('ogg')));
  t.ok(verbose.x_groq && !('usage' in verbose), 'verbose_json: x_groq, no usage');
  t.equal(verbose.words?.length, 5);
  t.equal((await transcribe(groqUrl('/audio/transcriptions'), { model: 'whisper-large-v3', response_format: 'text' }, sample('ogg'))).text, 'Transcribed 2.50 seconds of audio.\n');
  for (const format of ['srt', 'vtt']) {
    const refused = await transcribe(groqUrl('/audio/transcriptions'), { model: 'whisper-large-v3', response_format: format }, sample('wav'));
    t.equal(refused.status, 400, `Groq refuses ${format}`);
    t.equal(json<OpenAIErrorBody>(refused).error.param, 'response_format');
  }
  const openaiModel = await transcribe(groqUrl('/audio/transcriptions'), { model: 'whisper-1' }, sample('wav'));
  t.equal(openaiModel.status, 404, "OpenAI's models do not exist on Groq");
  const wrongKey = await transcribe(groqUrl('/audio/transcriptions'), { model: 'whisper-large-v3' }, sample('wav'), { authorization: 'Bearer nope' });
  t.equal(wrongKey.status, 401);
  t.same(json<OpenAIErrorBody>(wrongKey), { error: { message: 'Invalid API Key', type: 'invalid_request_error', code: 'invalid_api_key' } }, "Groq's 401 body");
  const viaV1 = json<Transcription>(await transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-large-v3' }, sample('wav')));
  t.ok(viaV1.x_groq, "a Groq model answers in Groq's shape under /v1 too");
  t.equal(sim.requests[0]?.path, '/openai/v1/audio/transcriptions');
  t.equal(sim.requests[0]?.family, 'openai');
  t.equal(sim.requests[0]?.model, 'whisper-large-v3-turbo');
});

t.test('OpenAI images: dall-e-2, dall-e-3, gpt-image-1; PNGs of the requested size', async (t) => {
  sim.reset();
  const def = await postJson(oaiUrl('/images/generations'), { prompt: 'A lighthouse at dusk' }, bearer);
  t.equal(def.status, 200);
  const list = json<ImageList>(def);
  t.ok(Number.isInteger(list.created));
  t.equal(list.data.length, 1);
  const url = list.data[0]?.url ?? '';
  t.match(url, new RegExp(`^${sim.url}/files/images/[A-Za-z0-9-]+\\.png$`));
  t.same(Object.keys(list.data[0] ?? {}), ['url'], 'dall-e-2: url only');
  const file = await call(url, {});
  t.equal(file.status, 200);
  t.equal(file.headers.get('content-type'), 'image/png');
  t.same(pngSize(file.bytes), { width: 1024, height: 1024 }, 'default size 1024x1024');
  t.equal((await call(`${sim.url}/files/images/img-unknown.png`, {})).status, 404);

  const two = json<ImageList>(await postJson(oaiUrl('/images/generations'), { model: 'dall-e-2', prompt: 'Two cats', n: 2, size: '256x256', response_format: 'b64_json' }, bearer));
  t.equal(two.data.length, 2);
  for (const item of two.data) t.same(pngSize(Buffer.from(item.b64_json ?? '', 'base64')), { width: 256, height: 256 });

  const d3 = json<ImageList>(await postJson(oaiUrl('/images/generations'), { model: 'dall-e-3', prompt: 'A wide valley', size: '1792x1024', quality: 'hd', style: 'natural' }, bearer));
  t.equal(d3.data[0]?.revised_prompt, 'A wide valley');
  const wide = await call(d3.data[0]?.url ?? '', {});
  t.same(pngSize(wide.bytes), { width: 1792, height: 1024 });
  const d3b64 = json<ImageList>(await postJson(oaiUrl('/images/generations'), { model: 'dall-e-3', prompt: 'Tall tower', size: '1024x1792', response_format: 'b64_json' }, bearer));
  t.same(pngSize(Buffer.from(d3b64.data[0]?.b64_json ?? '', 'base64')), { width: 1024, height: 1792 });
  t.type(d3b64.data[0]?.revised_prompt, 'string');

  const gpt = json<ImageList>(await postJson(oaiUrl('/images/generations'), { model: 'gpt-image-1', prompt: 'A red bicycle', size: '1536x1024', quality: 'high', n: 2 }, bearer));
  t.equal(gpt.background, 'opaque');
  t.equal(gpt.output_format, 'png');
  t.equal(gpt.quality, 'high');
  t.equal(gpt.size, '1536x1024');
  t.equal(gpt.data.length, 2);
  for (const item of gpt.data) {
    t.same(Object.keys(item), ['b64_json']);
    t.same(pngSize(Buffer.from(item.b64_json ?? '', 'base64')), { width: 1536, height: 1024 });
  }
  const input = tokens('A red bicycle');
  t.same(gpt.usage, { input_tokens: input, input_tokens_details: { image_tokens: 0, text_tokens: input }, output_tokens: 6240 * 2, total_tokens: input + 12480 });
  const auto = json<ImageList>(await postJson(oaiUrl('/images/generations'), { model: 'gpt-image-1', prompt: 'Anything' }, bearer));
  t.equal(auto.quality, 'medium', 'auto quality resolves to medium');
  t.equal(auto.size, '1024x1024', 'auto size resolves to 1024x1024');
  t.equal(auto.usage?.output_tokens, 1056);
  const low = json<ImageList>(await postJson(oaiUrl('/images/generations'), { model: 'gpt-image-1', prompt: 'Anything', quality: 'low', size: '1024x1536' }, bearer));
  t.equal(low.usage?.output_tokens, 408);
  sim.enqueue({ usage: 'omit' });
  t.notOk('usage' in json<ImageList>(await postJson(oaiUrl('/images/generations'), { model: 'gpt-image-1', prompt: 'x', quality: 'low' }, bearer)));
});

t.test('OpenAI images: invalid input', async (t) => {
  sim.reset();
  const bad = async (body: Record<string, unknown>, param: string, pattern: RegExp): Promise<void> => {
    const res = await postJson(oaiUrl('/images/generations'), { prompt: 'x', ...body }, bearer);
    t.equal(res.status, 400, `400 ${param}: ${pattern}`);
    const err = json<OpenAIErrorBody>(res).error;
    t.equal(err.param, param);
    t.match(err.message, pattern);
  };
  await bad({ model: 'dall-e-3', n: 2 }, 'n', /^You must provide n=1 for this model\.$/);
  await bad({ model: 'dall-e-2', n: 11 }, 'n', /Expected a value <= 10/);
  await bad({ model: 'dall-e-2', size: '1792x1024' }, 'size', /^'1792x1024' is not one of \['256x256', '512x512', '1024x1024'\] - 'size'$/);
  await bad({ model: 'dall-e-3', size: '256x256' }, 'size', /is not one of/);
  await bad({ model: 'gpt-image-1', size: '256x256' }, 'size', /Supported values are: '1024x1024', '1536x1024', '1024x1536', and 'auto'/);
  await bad({ model: 'gpt-image-1', response_format: 'url' }, 'response_format', /^Unknown parameter: 'response_format'\.$/);
  await bad({ model: 'dall-e-2', quality: 'hd' }, 'quality', /Supported values are: 'standard'/);
  await bad({ model: 'dall-e-3', quality: 'high' }, 'quality', /'standard' and 'hd'/);
  await bad({ model: 'gpt-image-1', quality: 'hd' }, 'quality', /'low', 'medium', 'high', and 'auto'/);
  await bad({ model: 'dall-e-3', style: 'cartoon' }, 'style', /'vivid' and 'natural'/);
  await bad({ model: 'dall-e-2', prompt: 'x'.repeat(1001) }, 'prompt', /maximum length 1000/);
  await bad({ model: 'dall-e-3', prompt: 'x'.repeat(4001) }, 'prompt', /maximum length 4000/);
  await bad({ model: 'dall-e-2', response_format: 'png' }, 'response_format', /is not one of \['url', 'b64_json'\]/);
  await bad({ prompt: undefined }, 'prompt', /Missing required parameter: 'prompt'/);
  t.equal((await postJson(oaiUrl('/images/generations'), { model: 'dall-e-3', prompt: 'x'.repeat(4000) }, bearer)).status, 200);
});

t.test('Gemini embeddings: batchEmbedContents and embedContent', async (t) => {
  sim.reset();
  const model = 'gemini-embedding-001';
  const texts = ['The cat sat on the mat.', 'A cat sat on a mat.', 'Quarterly revenue grew by ten percent.'];
  const res = await postJson(gemUrl(model, 'batchEmbedContents'), { requests: texts.map((text) => ({ model: `models/${model}`, content: { parts: [{ text }] }, taskType: 'SEMANTIC_SIMILARITY' })) }, goog);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/json/);
  const body = json<{ embeddings: Array<{ values: number[] }> }>(res);
  t.same(Object.keys(body), ['embeddings'], 'no usage in Gemini embedding answers');
  t.equal(body.embeddings.length, 3);
  const [cat, cat2, revenue] = body.embeddings.map((e) => e.values) as [number[], number[], number[]];
  t.equal(cat.length, 3072);
  t.ok(Math.abs(norm(cat) - 1) < 1e-5, 'full-length vectors are unit length');
  t.ok(cosine(cat, cat2) > cosine(cat, revenue) + 0.2, 'similar texts are closer');
  const one = json<{ embedding: { values: number[] } }>(await postJson(gemUrl(model, 'embedContent'), { content: { parts: [{ text: texts[0] }] } }, goog));
  t.same(one.embedding.values, cat, 'embedContent gives the same vector, in order');
  const short = json<{ embedding: { values: number[] } }>(await postJson(gemUrl(model, 'embedContent'), { content: { parts: [{ text: texts[0] }] }, outputDimensionality: 768 }, goog));
  t.equal(short.embedding.values.length, 768);
  t.same(short.embedding.values, cat.slice(0, 768), 'a shortened vector is the full one cut (Gemini does not re-normalize)');

  const bad = async (action: string, body: unknown, pattern: RegExp, status = 400): Promise<void> => {
    const reply = await postJson(gemUrl(model, action), body, goog);
    t.equal(reply.status, status, `${status}: ${pattern}`);
    const err = json<GeminiErrorBody>(reply).error;
    t.equal(err.code, status);
    if (status === 400) t.equal(err.status, 'INVALID_ARGUMENT');
    t.match(err.message, pattern);
  };
  const req = (text: string, m = `models/${model}`): Record<string, unknown> => ({ model: m, content: { parts: [{ text }] } });
  await bad('batchEmbedContents', { requests: [req('a'), req('b', 'models/text-embedding-004')] }, /requests\[1\]\.model/);
  await bad('batchEmbedContents', { requests: Array.from({ length: 101 }, () => req('x')) }, /at most 100 requests/);
  await bad('batchEmbedContents', { requests: [req('')] }, /requests\[0\]\.content/);
  await bad('batchEmbedContents', { requests: [] }, /requests is required/);
  await bad('batchEmbedContents', { requests: [{ ...req('x'), outputDimensionality: 64 }] }, /between 128 and 3072/);
  await bad('batchEmbedContents', { requests: [{ ...req('x'), taskType: 'GUESSING' }] }, /task_type/);
  await bad('embedContent', { content: { parts: [] } }, /parts must not be empty/);
  const unknown = await postJson(gemUrl('gemini-2.5-flash', 'embedContent'), { content: { parts: [{ text: 'x' }] } }, goog);
  t.equal(unknown.status, 404);
  t.match(json<GeminiErrorBody>(unknown).error.message, /models\/gemini-2\.5-flash is not found for API version v1beta, or is not supported for embedContent/);
  t.equal((await postJson(gemUrl(model, 'batchEmbedContents'), { requests: Array.from({ length: 100 }, () => req('x')) }, goog)).status, 200, '100 requests are fine');
  const noKey = await postJson(gemUrl(model, 'embedContent'), { content: { parts: [{ text: 'x' }] } }, {});
  t.equal(noKey.status, 403);
  t.equal(json<GeminiErrorBody>(noKey).error.status, 'PERMISSION_DENIED');
  t.equal(sim.requests[0]?.model, model);
  t.equal(sim.requests[0]?.family, 'gemini');
});

t.test('Gemini image output', async (t) => {
  sim.reset();
  const prompt = 'Draw a small house';
  const res = await postJson(gemUrl('gemini-2.5-flash-image', 'generateContent'), { contents: [{ role: 'user', parts: [{ text: prompt }] }] }, goog);
  t.equal(res.status, 200);
  const body = json<GeminiImageResponse>(res);
  const candidate = body.candidates[0];
  t.equal(candidate?.finishReason, 'STOP');
  t.equal(candidate?.index, 0);
  t.equal(candidate?.content.role, 'model');
  t.equal(candidate?.content.parts[0]?.text, 'Here is your image.');
  const inline = candidate?.content.parts[1]?.inlineData;
  t.equal(inline?.mimeType, 'image/png');
  t.same(pngSize(Buffer.from(inline?.data ?? '', 'base64')), { width: 1024, height: 1024 }, '1:1 by default');
  const promptCount = Math.ceil(tokens(prompt) * 1.07);
  t.same(body.usageMetadata, {
    promptTokenCount: promptCount,
    candidatesTokenCount: 1290,
    totalTokenCount: promptCount + 1290,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: promptCount }],
    candidatesTokensDetails: [{ modality: 'IMAGE', tokenCount: 1290 }],
  });
  t.equal(body.modelVersion, 'gemini-2.5-flash-image');
  t.match(body.responseId, /^[A-Za-z0-9_-]{22}$/);

  const sizes: Record<string, [number, number]> = { '16:9': [1344, 768], '9:16': [768, 1344], '21:9': [1536, 672], '4:5': [896, 1152] };
  for (const [ratio, [width, height]] of Object.entries(sizes)) {
    const r = json<GeminiImageResponse>(
      await postJson(
        gemUrl('gemini-2.5-flash', 'generateContent'),
        { contents: [{ role: 'user', parts: [{ text: 'x' }] }], generationConfig: { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: ratio } } },
        goog,
      ),
    );
    const data = r.candidates[0]?.content.parts.find((p) => p.inlineData)?.inlineData?.data ?? '';
    t.same(pngSize(Buffer.from(data, 'base64')), { width, height }, `${ratio}: ${width}x${height}`);
  }
  const badRatio = await postJson(gemUrl('gemini-2.5-flash-image', 'generateContent'), { contents: [{ role: 'user', parts: [{ text: 'x' }] }], generationConfig: { imageConfig: { aspectRatio: '7:3' } } }, goog);
  t.equal(badRatio.status, 400);
  t.equal(json<GeminiErrorBody>(badRatio).error.status, 'INVALID_ARGUMENT');
  sim.enqueue({ usage: 'omit', text: '' });
  const bare = json<GeminiImageResponse>(await postJson(gemUrl('gemini-2.5-flash-image', 'generateContent'), { contents: [{ role: 'user', parts: [{ text: 'x' }] }] }, goog));
  t.notOk('usageMetadata' in bare);
  t.equal(bare.candidates[0]?.content.parts.length, 1, 'an empty scenario text leaves only the image');
  const chat = json<GeminiImageResponse>(await postJson(gemUrl('gemini-2.5-flash', 'generateContent'), { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] }, goog));
  t.same(chat.candidates[0]?.content.parts, [{ text: 'Hello from the gemini simulator (model gemini-2.5-flash).' }], 'chat generateContent unchanged');
});

t.test('Deepgram speak: encodings, containers, headers', async (t) => {
  sim.reset();
  const text = 'Hello, how can I help you today?';
  const cases: Array<{ query: Record<string, string>; type: string; format: SpeechFormat; container?: RegExp }> = [
    { query: {}, type: 'audio/mpeg', format: 'mp3', container: /^MPEG$/ },
    { query: { encoding: 'mp3', bit_rate: '48000' }, type: 'audio/mpeg', format: 'mp3', container: /^MPEG$/ },
    { query: { encoding: 'opus' }, type: 'audio/ogg', format: 'opus', container: /^Ogg$/ },
    { query: { encoding: 'opus', container: 'ogg' }, type: 'audio/ogg', format: 'opus', container: /^Ogg$/ },
    { query: { encoding: 'aac' }, type: 'audio/aac', format: 'aac', container: /^ADTS/ },
    { query: { encoding: 'flac', sample_rate: '48000' }, type: 'audio/flac', format: 'flac', container: /^FLAC$/ },
    { query: { encoding: 'linear16' }, type: 'audio/wav', format: 'wav', container: /^WAVE$/ },
    { query: { encoding: 'linear16', container: 'wav', sample_rate: '24000' }, type: 'audio/wav', format: 'wav', container: /^WAVE$/ },
    { query: { encoding: 'linear16', container: 'none' }, type: 'application/octet-stream', format: 'pcm' },
  ];
  for (const c of cases) {
    sim.enqueue({ audioChunkBytes: 1024, chunkDelayMs: 2 });
    const res = await postJson(dgUrl('/v1/speak', { model: 'aura-2-thalia-en', speed: '1.2', ...c.query }), { text }, token);
    const what = JSON.stringify(c.query);
    t.equal(res.status, 200, what);
    t.equal(res.headers.get('content-type'), c.type, `${what}: ${c.type}`);
    t.equal(res.headers.get('dg-char-count'), String(text.length));
    t.equal(res.headers.get('dg-model-name'), 'aura-2-thalia-en');
    t.match(res.headers.get('dg-request-id'), /^[0-9a-f-]{36}$/);
    t.equal(res.headers.get('transfer-encoding'), 'chunked');
    t.same(res.bytes, speechAudio(c.format));
    t.ok(res.chunks >= 2, `${what}: ${res.chunks} chunks`);
    if (c.container) {
      const meta = await parseBuffer(res.bytes, { mimeType: c.type, size: res.bytes.length }, { duration: true });
      t.match(meta.format.container, c.container);
      near(t, meta.format.duration, 1, 0.1, `${what}: duration`);
    }
  }
  const aura1 = await postJson(dgUrl('/v1/speak', { model: 'aura-asteria-en' }), { text: 'Hi' }, token);
  t.equal(aura1.status, 200);
  t.equal(aura1.headers.get('dg-char-count'), '2');
  t.match(aura1.headers.get('dg-model-uuid'), /^[0-9a-f-]{36}$/);
  t.equal(sim.requests[0]?.family, 'deepgram');
  t.equal(sim.requests[0]?.model, 'aura-2-thalia-en');
  t.same(sim.requests[0]?.body, { text });

  const bad = async (query: Record<string, string>, body: unknown, code: string, pattern: RegExp): Promise<void> => {
    const res = await postJson(dgUrl('/v1/speak', { model: 'aura-2-thalia-en', ...query }), body, token);
    t.equal(res.status, 400, `400: ${JSON.stringify(query)}`);
    const err = json<DeepgramErrorBody>(res);
    t.same(Object.keys(err).sort(), ['err_code', 'err_msg', 'request_id']);
    t.equal(err.err_code, code);
    t.match(err.err_msg, pattern);
    t.match(err.request_id, /^[0-9a-f-]{36}$/);
  };
  await bad({ encoding: 'mp3', container: 'wav' }, { text }, 'INVALID_QUERY_PARAMETER', /Container `wav` is not supported for encoding `mp3`/);
  await bad({ encoding: 'opus', container: 'none' }, { text }, 'INVALID_QUERY_PARAMETER', /container/i);
  await bad({ encoding: 'mp3', sample_rate: '16000' }, { text }, 'INVALID_QUERY_PARAMETER', /sample rate is not configurable/);
  await bad({ encoding: 'linear16', sample_rate: '44100' }, { text }, 'INVALID_QUERY_PARAMETER', /sample_rate/);
  await bad({ encoding: 'flac', bit_rate: '32000' }, { text }, 'INVALID_QUERY_PARAMETER', /bit rate is not configurable/);
  await bad({ encoding: 'wma' }, { text }, 'INVALID_QUERY_PARAMETER', /encoding/);
  await bad({ speed: '2' }, { text }, 'INVALID_QUERY_PARAMETER', /between 0\.7 and 1\.5/);
  await bad({ model: 'eleven-multilingual' }, { text }, 'INVALID_QUERY_PARAMETER', /model/);
  await bad({}, { text: 'x'.repeat(2001) }, 'Bad Request', /2000 characters/);
  await bad({}, { text: '' }, 'Bad Request', /empty/);
  await bad({}, { words: 'hi' }, 'Bad Request', /missing field `text`/);
  t.equal((await postJson(dgUrl('/v1/speak', { model: 'aura-2-thalia-en' }), { text: 'x'.repeat(2000) }, token)).status, 200, '2000 characters are fine');
});

t.test('Deepgram listen: every fixture, words, utterances, detected language', async (t) => {
  sim.reset();
  const types: Record<SampleFormat, string> = { wav: 'audio/wav', mp3: 'audio/mpeg', m4a: 'audio/mp4', webm: 'audio/webm', ogg: 'audio/ogg', flac: 'audio/flac' };
  for (const format of SAMPLE_FORMATS) {
    const bytes = sampleAudio(format);
    const res = await call(dgUrl('/v1/listen', { model: 'nova-3', language: 'en', smart_format: 'true', punctuate: 'true', utterances: 'true', detect_language: 'true' }), {
      method: 'POST',
      headers: { ...token, 'content-type': types[format] },
      body: bytes,
    });
    t.equal(res.status, 200, format);
    const body = json<DeepgramListen>(res);
    const duration = await audioDurationSeconds(bytes, format);
    t.equal(body.metadata.duration, duration, `${format}: duration from the file`);
    t.equal(body.metadata.transaction_key, 'deprecated');
    t.equal(body.metadata.channels, 1);
    t.match(body.metadata.request_id, /^[0-9a-f-]{36}$/);
    t.match(body.metadata.sha256, /^[0-9a-f]{64}$/);
    t.ok(!Number.isNaN(Date.parse(body.metadata.created)));
    const uuid = body.metadata.models[0] ?? '';
    t.match(body.metadata.model_info[uuid], { name: 'general-nova-3', arch: 'nova-3' });
    const channel = body.results.channels[0];
    const alt = channel?.alternatives[0];
    const text = `Transcribed ${(duration ?? 0).toFixed(2)} seconds of audio.`;
    t.equal(alt?.transcript, text);
    t.same(alt?.words.map((w) => w.word), ['transcribed', (duration ?? 0).toFixed(2), 'seconds', 'of', 'audio']);
    t.same(alt?.words.map((w) => w.punctuated_word), text.split(' '));
    t.equal(channel?.detected_language, 'en');
    t.type(channel?.language_confidence, 'number');
    t.equal(body.results.utterances?.length, 2);
    t.same(body.results.utterances?.map((u) => u.transcript).join(' '), text);
    t.equal(body.results.utterances?.[1]?.end, Math.round((duration ?? 0) * 1000) / 1000);
    t.same(body.results.utterances?.map((u) => u.channel), [0, 0]);
  }
  t.same(sim.requests[0]?.body, { bytes: sampleAudio('wav').length, contentType: 'audio/wav' });
  t.equal(sim.requests[0]?.model, 'nova-3');

  sim.enqueue({ text: 'Hello, World!' });
  const plain = json<DeepgramListen>(await call(dgUrl('/v1/listen', { model: 'nova-2' }), { method: 'POST', headers: { ...token, 'content-type': 'application/octet-stream' }, body: sampleAudio('mp3') }));
  t.equal(plain.results.channels[0]?.alternatives[0]?.transcript, 'hello world', 'no punctuation without punctuate/smart_format');
  t.notOk(plain.results.channels[0]?.alternatives[0]?.words.some((w) => 'punctuated_word' in w));
  t.notOk('utterances' in plain.results);
  t.notOk('detected_language' in (plain.results.channels[0] ?? {}));
  t.match(Object.values(plain.metadata.model_info)[0], { name: 'general-nova-2', arch: 'nova-2' });

  const raw = json<DeepgramListen>(
    await call(dgUrl('/v1/listen', { model: 'nova-3', encoding: 'linear16', sample_rate: '24000' }), { method: 'POST', headers: { ...token, 'content-type': 'audio/l16' }, body: speechAudio('pcm') }),
  );
  t.equal(raw.metadata.duration, 1, 'raw linear16: bytes / (2 × rate)');

  const corrupt = await call(dgUrl('/v1/listen', { model: 'nova-3' }), { method: 'POST', headers: { ...token, 'content-type': 'audio/wav' }, body: Buffer.from('definitely not audio') });
  t.equal(corrupt.status, 400);
  const err = json<DeepgramErrorBody>(corrupt);
  t.equal(err.err_code, 'Bad Request');
  t.equal(err.err_msg, 'Bad Request: failed to process audio: corrupt or unsupported data');
  const badModel = await call(dgUrl('/v1/listen', { model: 'whisper' }), { method: 'POST', headers: { ...token, 'content-type': 'audio/wav' }, body: sampleAudio('wav') });
  t.equal(badModel.status, 400);
  t.equal(json<DeepgramErrorBody>(badModel).err_code, 'Bad Request');
});

t.test('Deepgram auth', async (t) => {
  sim.reset();
  const attempts: Array<Record<string, string>> = [{}, { authorization: 'Token wrong' }, { authorization: `Bearer ${KEY}` }];
  for (const headers of attempts) {
    const res = await postJson(dgUrl('/v1/speak', { model: 'aura-2-thalia-en' }), { text: 'Hi' }, headers);
    t.equal(res.status, 401, JSON.stringify(headers));
    const body = json<DeepgramErrorBody>(res);
    t.equal(body.err_code, 'INVALID_AUTH');
    t.equal(body.err_msg, 'Invalid credentials.');
    t.match(body.request_id, /^[0-9a-f-]{36}$/);
  }
  const listen = await call(dgUrl('/v1/listen', { model: 'nova-3' }), { method: 'POST', headers: { 'content-type': 'audio/wav' }, body: sampleAudio('wav') });
  t.equal(listen.status, 401);
});

t.test('auth failures: OpenAI and Groq media paths', async (t) => {
  sim.reset();
  const none = await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: 'x' }, {});
  t.equal(none.status, 401);
  t.match(json<OpenAIErrorBody>(none).error.message, /didn't provide an API key/);
  const wrong = await postJson(oaiUrl('/audio/speech'), { model: 'tts-1', input: 'x', voice: 'alloy' }, { authorization: 'Bearer sk-wrong-key-123456' });
  t.equal(wrong.status, 401);
  t.equal(json<OpenAIErrorBody>(wrong).error.code, 'invalid_api_key');
  const images = await postJson(oaiUrl('/images/generations'), { prompt: 'x' }, { authorization: 'Token sim-key' });
  t.equal(images.status, 401);
  const groq = await postJson(groqUrl('/embeddings'), { model: 'x', input: 'x' }, {});
  t.equal(groq.status, 401);
  t.equal(json<OpenAIErrorBody>(groq).error.message, 'Invalid API Key');
  const unknown = await postJson(oaiUrl('/audio/translations'), {}, bearer);
  t.equal(unknown.status, 404, 'unknown paths stay 404');
  const groqChat = await postJson(groqUrl('/chat/completions'), { model: 'llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'Hi' }] }, bearer);
  t.equal(groqChat.status, 200, 'chat completions under /openai/v1 too');
});

t.test('faults: scripted errors, delays, disconnects, hangs, malformed bodies', async (t) => {
  sim.reset();
  // scripted errors in each vendor's shape
  sim.enqueue({ error: { status: 429, retryAfterSeconds: 4 } });
  const oe = await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: 'x' }, bearer);
  t.equal(oe.status, 429);
  t.equal(oe.headers.get('retry-after'), '4');
  t.equal(json<OpenAIErrorBody>(oe).error.code, 'rate_limit_exceeded');
  sim.enqueue({ error: { status: 500, message: 'TTS broke' } });
  const se = await postJson(oaiUrl('/audio/speech'), { model: 'tts-1', input: 'x', voice: 'alloy' }, bearer);
  t.equal(se.status, 500);
  t.equal(json<OpenAIErrorBody>(se).error.message, 'TTS broke');
  sim.enqueue({ error: { status: 503 } });
  const ge = await postJson(gemUrl('gemini-embedding-001', 'embedContent'), { content: { parts: [{ text: 'x' }] } }, goog);
  t.equal(ge.status, 503);
  t.equal(json<GeminiErrorBody>(ge).error.status, 'UNAVAILABLE');
  sim.enqueue({ error: { status: 429, retryAfterSeconds: 2 } });
  const de = await postJson(dgUrl('/v1/speak', { model: 'aura-2-thalia-en' }), { text: 'x' }, token);
  t.equal(de.status, 429);
  t.equal(de.headers.get('retry-after'), '2');
  t.match(json<DeepgramErrorBody>(de), { err_code: 'TOO_MANY_REQUESTS', request_id: /^[0-9a-f-]{36}$/ });
  sim.enqueue({ error: { status: 402 } });
  const dl = await call(dgUrl('/v1/listen', { model: 'nova-3' }), { method: 'POST', headers: { ...token, 'content-type': 'audio/wav' }, body: sampleAudio('wav') });
  t.equal(dl.status, 402);
  t.equal(json<DeepgramErrorBody>(dl).err_code, 'ASR_PAYMENT_REQUIRED');

  // disconnect mid-audio: the client gets exactly N chunks' bytes, then a broken body
  sim.enqueue({ audioChunkBytes: 1000, disconnectAfterEvents: 2 });
  const cut = await postJson(oaiUrl('/audio/speech'), { model: 'tts-1', input: 'x', voice: 'alloy', response_format: 'wav' }, bearer);
  t.equal(cut.status, 200);
  t.ok(cut.error, 'reading the cut audio fails');
  t.same(cut.bytes, speechAudio('wav').subarray(0, 2000), 'exactly two chunks arrived');
  sim.enqueue({ audioChunkBytes: 500, disconnectAfterEvents: 3 });
  const dgCut = await postJson(dgUrl('/v1/speak', { model: 'aura-2-thalia-en' }), { text: 'x' }, token);
  t.ok(dgCut.error);
  t.equal(dgCut.bytes.length, 1500);

  // hang mid-audio: N chunks, then nothing until the client leaves
  sim.enqueue({ audioChunkBytes: 1000, hangAfterEvents: 1 });
  const controller = new AbortController();
  const res = await fetch(oaiUrl('/audio/speech'), { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts-1', input: 'x', voice: 'alloy', response_format: 'flac' }), signal: controller.signal });
  let received = 0;
  let failed = false;
  try {
    for await (const chunk of res.body ?? []) {
      received += (chunk as Uint8Array).length;
      if (received >= 1000) controller.abort();
    }
  } catch {
    failed = true;
  }
  t.ok(failed, 'the hung audio ends only through the client abort');
  t.equal(received, 1000);
  await eventually(() => sim.activeRequests() === 0, 'the simulator saw the abort');

  // non-streamed JSON answers: disconnect sends nothing, hang sends no headers
  sim.enqueue({ disconnectAfterEvents: 0 });
  await t.rejects(transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1' }, sample('wav')), 'a transcription disconnect drops the socket');
  sim.enqueue({ hangAfterEvents: 0 });
  await t.rejects(call(oaiUrl('/embeddings'), { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }), signal: AbortSignal.timeout(300) }));
  await eventually(() => sim.activeRequests() === 0, 'the hung JSON request was released');

  // delays
  sim.enqueue({ delayMs: 150 });
  const started = Date.now();
  t.equal((await call(dgUrl('/v1/listen', { model: 'nova-3' }), { method: 'POST', headers: { ...token, 'content-type': 'audio/wav' }, body: sampleAudio('wav') })).status, 200);
  t.ok(Date.now() - started >= 140, 'delayMs holds the answer back');

  // malformed JSON bodies
  for (const send of [
    () => postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: 'x' }, bearer),
    () => transcribe(oaiUrl('/audio/transcriptions'), { model: 'whisper-1', response_format: 'verbose_json' }, sample('wav')),
    () => postJson(gemUrl('gemini-embedding-001', 'embedContent'), { content: { parts: [{ text: 'x' }] } }, goog),
    () => call(dgUrl('/v1/listen', { model: 'nova-3' }), { method: 'POST', headers: { ...token, 'content-type': 'audio/wav' }, body: sampleAudio('wav') }),
  ]) {
    sim.enqueue({ malformedBody: true });
    const reply = await send();
    t.equal(reply.status, 200);
    t.match(reply.headers.get('content-type'), /json/);
    t.throws(() => JSON.parse(reply.text) as unknown, 'the body is not valid JSON');
  }
  t.equal((await postJson(oaiUrl('/embeddings'), { model: 'text-embedding-3-small', input: 'x' }, bearer)).status, 200, 'the simulator keeps serving');
});
