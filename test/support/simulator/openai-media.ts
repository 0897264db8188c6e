import { randomBytes } from 'node:crypto';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { audioDurationSeconds, speechAudio, type SpeechFormat } from './audio.js';
import { embedText, float32Base64 } from './embed.js';
import { field, fieldValues, type Multipart } from './multipart.js';
import { authFailure, errorBody, OpenAIFailure, scriptedFailure } from './openai.js';
import { png } from './png.js';
import { isRecord, randomId, type Scenario, type StreamPlan } from './scenario.js';
import type { Body, Exchange, Outcome } from './server.js';
import { completionTokens } from './tokens.js';
import { timeline, toSrt, toVtt } from './transcript.js';

/**
 * OpenAI's media endpoints, also served under Groq's /openai/v1 (Groq is OpenAI-compatible):
 *   POST /v1/embeddings               (also Mistral's embeddings: same path and shape, plus `id`)
 *   POST /v1/audio/speech             (chunked audio; `stream_format: "sse"` for gpt-4o-mini-tts)
 *   POST /v1/audio/transcriptions     (multipart; OpenAI and Groq models)
 *   POST /v1/images/generations       (dall-e-2, dall-e-3, gpt-image-1)
 *   GET  /files/images/<id>.png       (the image URLs handed out; no auth)
 */

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';

type Headers = Record<string, string>;

const bad = (message: string, param: string | null = null, code: string | null = null): OpenAIFailure =>
  new OpenAIFailure(400, message, 'invalid_request_error', param, code);

function json(value: unknown): Body {
  return { contentType: JSON_TYPE, text: JSON.stringify(value) };
}

/** "'a', 'b', and 'c'" as in OpenAI's invalid_value messages. */
function oneOf(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  if (quoted.length <= 2) return quoted.join(' and ');
  return `${quoted.slice(0, -1).join(', ')}, and ${quoted.at(-1) ?? ''}`;
}

function invalidValue(value: unknown, param: string, supported: readonly string[]): OpenAIFailure {
  return bad(`Invalid value: '${String(value)}'. Supported values are: ${oneOf(supported)}.`, param, 'invalid_value');
}

function missing(param: string): OpenAIFailure {
  return bad(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
}

function invalidType(param: string, expected: string, value: unknown): OpenAIFailure {
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
  return bad(`Invalid type for '${param}': expected ${expected}, but got ${got} instead.`, param, 'invalid_type');
}

function modelNotFound(model: string): OpenAIFailure {
  return new OpenAIFailure(404, `The model \`${model}\` does not exist or you do not have access to it.`, 'invalid_request_error', null, 'model_not_found');
}

// A function, not a constant: openai.ts and this module import each other.
const notJson = (): OpenAIFailure =>
  bad(
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
  );

/** The scenario-driven part, in OpenAI's (or Groq's) error shape. */
function play(ex: Exchange, scenario: Scenario, headers: Headers, groq: boolean, answer: Pick<Outcome, 'json' | 'audio' | 'plan' | 'stream'>): Promise<void> {
  return ex.respond({ scenario, headers, error: (status, message, code) => errorBody(scriptedFailure(status, message, code), groq), ...answer });
}

/** Handles a media path; false when the path (or method) is not one of them, so the caller answers 404. */
export async function handleOpenAIMedia(ex: Exchange, path: string, groq: boolean, headers: Headers): Promise<boolean> {
  const method = ex.req.method ?? 'GET';
  if (!groq && method === 'GET' && path.startsWith('/files/images/')) {
    serveImage(ex, path.slice('/files/images/'.length));
    return true;
  }
  const handler = HANDLERS[path];
  if (!handler || method !== 'POST') return false;
  const fail = (failure: OpenAIFailure): void => ex.send(failure.status, errorBody(failure, groq), headers);
  const auth = authFailure(ex, groq);
  if (auth) {
    fail(auth);
    return true;
  }
  const failure = await handler(ex, groq, headers);
  if (failure) fail(failure);
  return true;
}

type Handler = (ex: Exchange, groq: boolean, headers: Headers) => Promise<OpenAIFailure | undefined>;

const HANDLERS: Record<string, Handler> = {
  '/v1/embeddings': embeddings,
  '/v1/audio/speech': speech,
  '/v1/audio/transcriptions': transcriptions,
  '/v1/images/generations': images,
};

function jsonBody(ex: Exchange): Record<string, unknown> | OpenAIFailure {
  if (ex.bodyInvalid || !isRecord(ex.body)) return notJson();
  return ex.body;
}

// ---------------------------------------------------------------------------------------------
// Embeddings

const NATIVE_DIMENSIONS: Record<string, number> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
  'mistral-embed': 1024,
};

/** A model's native vector length (1536 for models not listed). */
export function nativeDimensions(model: string): number {
  return NATIVE_DIMENSIONS[model] ?? 1536;
}

const MAX_INPUTS = 2048;

interface EmbeddingInput {
  /** The text embedded (a token array's tokens as decimal text). */
  text: string;
  tokens: number;
}

const isTokenArray = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'number');
const validTokens = (value: number[]): boolean => value.every((v) => Number.isInteger(v) && v >= 0);

function embeddingInputs(input: unknown, model: string): EmbeddingInput[] | OpenAIFailure {
  const invalid = bad("'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", 'input', 'invalid_value');
  const ofText = (text: string): EmbeddingInput => ({ text, tokens: completionTokens('openai', model, text) });
  const ofTokens = (tokens: number[]): EmbeddingInput => ({ text: tokens.join(' '), tokens: tokens.length });
  if (input === undefined || input === null) return missing('input');
  if (typeof input === 'string') return input === '' ? invalid : [ofText(input)];
  if (!Array.isArray(input)) return invalidType('input', 'a string or an array', input);
  if (input.length === 0) return invalid;
  if (input.length > MAX_INPUTS && !isTokenArray(input)) {
    return bad(`Invalid 'input': array too long. Expected an array with maximum length ${MAX_INPUTS}, but got an array with length ${input.length} instead.`, 'input', 'array_above_max_length');
  }
  if (input.every((v) => typeof v === 'number')) return validTokens(input as number[]) ? [ofTokens(input as number[])] : invalid;
  const out: EmbeddingInput[] = [];
  for (const item of input) {
    if (typeof item === 'string' && item !== '') out.push(ofText(item));
    else if (isTokenArray(item) && validTokens(item)) out.push(ofTokens(item));
    else return invalid;
  }
  return out;
}

async function embeddings(ex: Exchange, groq: boolean, headers: Headers): Promise<OpenAIFailure | undefined> {
  const body = jsonBody(ex);
  if (body instanceof OpenAIFailure) return body;
  const model = body.model;
  if (typeof model !== 'string' || model === '') return bad('you must provide a model parameter');
  const inputs = embeddingInputs(body.input, model);
  if (inputs instanceof OpenAIFailure) return inputs;
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') return invalidValue(format, 'encoding_format', ['float', 'base64']);
  const native = nativeDimensions(model);
  let dimensions: number | undefined;
  if (body.dimensions !== undefined && body.dimensions !== null) {
    if (!model.startsWith('text-embedding-3')) return bad('This model does not support specifying dimensions.', 'dimensions');
    if (typeof body.dimensions !== 'number' || !Number.isInteger(body.dimensions)) return invalidType('dimensions', 'an integer', body.dimensions);
    if (body.dimensions < 1) return bad(`Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got ${body.dimensions} instead.`, 'dimensions', 'integer_below_min_value');
    if (body.dimensions > native) {
      return bad(`Invalid 'dimensions': integer above maximum value. Expected a value <= ${native}, but got ${body.dimensions} instead.`, 'dimensions', 'integer_above_max_value');
    }
    dimensions = body.dimensions;
  }
  const scenario = ex.scenarioFor(undefined);
  const mistral = model.startsWith('mistral');
  await play(ex, scenario, headers, groq, {
    stream: false,
    json: () => {
      const data = inputs.map((input, index) => {
        const vector = embedText(input.text, native, dimensions);
        return { object: 'embedding', index, embedding: format === 'base64' ? float32Base64(vector) : vector };
      });
      const tokens = inputs.reduce((sum, input) => sum + input.tokens, 0);
      const usage = scenario.usage === 'omit' ? {} : { usage: { prompt_tokens: tokens, total_tokens: tokens, ...(mistral ? { completion_tokens: 0 } : {}) } };
      return json({ ...(mistral ? { id: randomBytes(16).toString('hex') } : {}), object: 'list', data, model, ...usage });
    },
  });
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Speech

const TTS_MODELS = ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts'];
const VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer', 'verse', 'marin', 'cedar'];
const SPEECH_FORMATS: readonly SpeechFormat[] = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];
const SPEECH_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};
const MAX_SPEECH_INPUT = 4096;
/** gpt-4o-mini-tts output tokens per second of audio (1250 a minute, from its per-minute and per-token prices). */
const TTS_TOKENS_PER_SECOND = 1250 / 60;

function speechRequest(body: Record<string, unknown>): OpenAIFailure | { model: string; input: string; format: SpeechFormat; sse: boolean; instructions: string } {
  const model = body.model;
  if (typeof model !== 'string' || model === '') return bad('you must provide a model parameter');
  if (!TTS_MODELS.includes(model)) return invalidValue(model, 'model', TTS_MODELS);
  const input = body.input;
  if (input === undefined || input === null) return missing('input');
  if (typeof input !== 'string') return invalidType('input', 'a string', input);
  if (input === '') return bad("Invalid 'input': empty string. Expected a string with minimum length 1, but got an empty string instead.", 'input', 'empty_string');
  if (input.length > MAX_SPEECH_INPUT) {
    return bad(
      `Invalid 'input': string too long. Expected a string with maximum length ${MAX_SPEECH_INPUT}, but got a string with length ${input.length} instead.`,
      'input',
      'string_above_max_length',
    );
  }
  const voice = body.voice;
  if (voice === undefined || voice === null) return missing('voice');
  if (typeof voice !== 'string' || !VOICES.includes(voice)) return invalidValue(voice, 'voice', VOICES);
  const format = body.response_format ?? 'mp3';
  if (typeof format !== 'string' || !(SPEECH_FORMATS as readonly string[]).includes(format)) return invalidValue(format, 'response_format', SPEECH_FORMATS);
  const speed = body.speed;
  if (speed !== undefined && speed !== null) {
    if (typeof speed !== 'number') return invalidType('speed', 'a number', speed);
    if (speed < 0.25) return bad(`Invalid 'speed': decimal below minimum value. Expected a value >= 0.25, but got ${speed} instead.`, 'speed', 'decimal_below_min_value');
    if (speed > 4) return bad(`Invalid 'speed': decimal above maximum value. Expected a value <= 4, but got ${speed} instead.`, 'speed', 'decimal_above_max_value');
  }
  const instructions = body.instructions;
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== 'string') return invalidType('instructions', 'a string', instructions);
    if (model !== 'gpt-4o-mini-tts') return bad(`Instructions are not supported for model '${model}'. Use 'gpt-4o-mini-tts'.`, 'instructions', 'unsupported_parameter');
  }
  const streamFormat = body.stream_format ?? 'audio';
  if (streamFormat !== 'audio' && streamFormat !== 'sse') return invalidValue(streamFormat, 'stream_format', ['sse', 'audio']);
  if (streamFormat === 'sse' && model !== 'gpt-4o-mini-tts') {
    return bad(`stream_format 'sse' is not supported for model '${model}'. Use 'audio'.`, 'stream_format', 'unsupported_value');
  }
  return { model, input, format: format as SpeechFormat, sse: streamFormat === 'sse', instructions: typeof instructions === 'string' ? instructions : '' };
}

async function speech(ex: Exchange, groq: boolean, headers: Headers): Promise<OpenAIFailure | undefined> {
  const body = jsonBody(ex);
  if (body instanceof OpenAIFailure) return body;
  const request = speechRequest(body);
  if (request instanceof OpenAIFailure) return request;
  const scenario = ex.scenarioFor(undefined);
  const bytes = speechAudio(request.format);
  if (!request.sse) {
    await play(ex, scenario, headers, groq, { stream: false, json: () => json({}), audio: () => ({ contentType: SPEECH_TYPES[request.format], bytes }) });
    return undefined;
  }
  // stream_format "sse": base64 audio deltas, then speech.audio.done with usage.
  const duration = (await audioDurationSeconds(bytes, request.format)) ?? 1;
  const size = scenario.audioChunkBytes && scenario.audioChunkBytes > 0 ? scenario.audioChunkBytes : 4096;
  const events: Array<{ data: string }> = [];
  for (let at = 0; at < bytes.length; at += size) {
    events.push({ data: JSON.stringify({ type: 'speech.audio.delta', audio: bytes.subarray(at, at + size).toString('base64') }) });
  }
  const input = completionTokens('openai', request.model, request.input + request.instructions);
  const output = Math.ceil(duration * TTS_TOKENS_PER_SECOND);
  const done = scenario.usage === 'omit' ? { type: 'speech.audio.done' } : { type: 'speech.audio.done', usage: { input_tokens: input, output_tokens: output, total_tokens: input + output } };
  events.push({ data: JSON.stringify(done) });
  const plan: StreamPlan = {
    contentType: 'text/event-stream; charset=utf-8',
    events,
    frame: (event) => `data: ${event.data}\n\n`,
    terminator: '',
    malformed: { data: '{"type":"speech.audio.delta","audio":"' },
    errorEvent: (message) => ({ data: JSON.stringify({ type: 'error', error: { message: message ?? 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null } }) }),
    errorTerminator: '',
  };
  await play(ex, scenario, headers, groq, { stream: true, json: () => json({}), plan: () => plan });
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Transcriptions

type TranscriptFormat = 'json' | 'text' | 'srt' | 'vtt' | 'verbose_json';
const OPENAI_FORMATS: readonly TranscriptFormat[] = ['json', 'text', 'srt', 'verbose_json', 'vtt'];
const GPT4O_FORMATS: readonly TranscriptFormat[] = ['json', 'text'];
const GROQ_FORMATS: readonly TranscriptFormat[] = ['json', 'text', 'verbose_json'];
const OPENAI_TRANSCRIBE = ['whisper-1', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe'];
const GROQ_TRANSCRIBE = ['whisper-large-v3', 'whisper-large-v3-turbo'];
const OPENAI_EXTENSIONS = ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm'];
const GROQ_EXTENSIONS = ['flac', 'mp3', 'mp4', 'mpeg', 'mpga', 'm4a', 'ogg', 'opus', 'wav', 'webm'];
/** gpt-4o(-mini)-transcribe input audio tokens per second (1000 a minute, from its per-minute and per-token prices). */
const TRANSCRIBE_AUDIO_TOKENS_PER_SECOND = 1000 / 60;

const LANGUAGES: Record<string, string> = {
  en: 'english', fr: 'french', de: 'german', es: 'spanish', it: 'italian', pt: 'portuguese', nl: 'dutch', hi: 'hindi',
  ja: 'japanese', zh: 'chinese', ko: 'korean', ru: 'russian', ar: 'arabic', ta: 'tamil', te: 'telugu', bn: 'bengali',
};

interface TranscriptionRequest {
  model: string;
  groqModel: boolean;
  format: TranscriptFormat;
  language: string;
  prompt: string;
  temperature: number;
  words: boolean;
  file: { filename: string; data: Buffer; ext: string };
}

function transcriptionRequest(form: Multipart, groq: boolean): OpenAIFailure | TranscriptionRequest {
  const model = field(form, 'model');
  if (model === undefined || model === '') return bad('you must provide a model parameter', 'model');
  // Groq's models answer in Groq's shape wherever they are called (a Groq provider may point at /v1).
  const groqModel = GROQ_TRANSCRIBE.includes(model);
  if (!groqModel && (groq || !OPENAI_TRANSCRIBE.includes(model))) return modelNotFound(model);
  const file = form.files.find((f) => f.field === 'file');
  if (!file || file.filename === '') return missing('file');
  const extensions = groqModel ? GROQ_EXTENSIONS : OPENAI_EXTENSIONS;
  const ext = /\.([A-Za-z0-9]+)$/.exec(file.filename)?.[1]?.toLowerCase() ?? '';
  if (!extensions.includes(ext)) {
    const list = groqModel ? `[${extensions.join(' ')}]` : `[${extensions.map((e) => `'${e}'`).join(', ')}]`;
    return bad(`Invalid file format. Supported formats: ${list}`, 'file', 'invalid_value');
  }
  const format = (field(form, 'response_format') ?? 'json') as TranscriptFormat;
  if (!OPENAI_FORMATS.includes(format)) return invalidValue(format, 'response_format', OPENAI_FORMATS);
  if (groqModel && !GROQ_FORMATS.includes(format)) {
    return bad(`response_format '${format}' is not supported for model '${model}'. Use 'json', 'text' or 'verbose_json' instead.`, 'response_format', 'unsupported_value');
  }
  if (model.startsWith('gpt-4o') && !GPT4O_FORMATS.includes(format)) {
    return bad(`response_format '${format}' is not compatible with model '${model}'. Use 'json' or 'text' instead.`, 'response_format', 'unsupported_value');
  }
  let temperature = 0;
  const rawTemperature = field(form, 'temperature');
  if (rawTemperature !== undefined && rawTemperature !== '') {
    temperature = Number(rawTemperature);
    if (!Number.isFinite(temperature)) return bad(`Invalid 'temperature': expected a number, but got '${rawTemperature}' instead.`, 'temperature', 'invalid_type');
    if (temperature < 0 || temperature > 1) return bad(`Invalid 'temperature': expected a value between 0 and 1, but got ${temperature} instead.`, 'temperature', 'invalid_value');
  }
  const granularities = [...fieldValues(form, 'timestamp_granularities[]'), ...fieldValues(form, 'timestamp_granularities')];
  for (const g of granularities) if (g !== 'word' && g !== 'segment') return invalidValue(g, 'timestamp_granularities', ['word', 'segment']);
  if (granularities.length > 0 && format !== 'verbose_json') {
    return bad("timestamp_granularities is only supported when response_format is 'verbose_json'.", 'timestamp_granularities', 'unsupported_value');
  }
  const language = field(form, 'language') ?? '';
  if (language !== '' && !/^[a-z]{2,3}$/.test(language)) return bad(`Invalid language '${language}'. Language parameter must be specified in ISO-639-1 format.`, 'language', 'invalid_value');
  return { model, groqModel, format, language, prompt: field(form, 'prompt') ?? '', temperature, words: granularities.includes('word'), file: { filename: file.filename, data: file.data, ext } };
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

function transcriptionBody(request: TranscriptionRequest, duration: number, scenario: Scenario): Body {
  const text = scenario.text ?? `Transcribed ${duration.toFixed(2)} seconds of audio.`;
  const omitUsage = scenario.usage === 'omit';
  const groqExtra = request.groqModel ? { x_groq: { id: `req_${randomId(26, 'abcdefghijklmnopqrstuvwxyz0123456789')}` } } : {};
  const { segments, words } = timeline(text, duration);
  switch (request.format) {
    case 'text':
      return { contentType: TEXT_TYPE, text: `${text}\n` };
    case 'srt':
      return { contentType: TEXT_TYPE, text: toSrt(segments) };
    case 'vtt':
      return { contentType: TEXT_TYPE, text: toVtt(segments) };
    case 'verbose_json': {
      const usage = omitUsage || request.groqModel ? {} : { usage: { type: 'duration', seconds: Math.ceil(duration) } };
      return json({
        task: 'transcribe',
        language: LANGUAGES[request.language || 'en'] ?? request.language,
        duration,
        text,
        segments: segments.map((s, id) => ({
          id,
          seek: 0,
          start: s.start,
          end: s.end,
          text: ` ${s.text}`,
          tokens: [50364, ...encode(` ${s.text}`), 50364 + Math.round(s.end / 0.02)],
          temperature: request.temperature,
          avg_logprob: -0.2,
          compression_ratio: 1.1,
          no_speech_prob: 0.01,
        })),
        ...(request.words ? { words: words.map((w) => ({ word: w.bare, start: round2(w.start), end: round2(w.end) })) } : {}),
        ...usage,
        ...groqExtra,
      });
    }
    case 'json': {
      if (request.groqModel) return json({ text, ...groqExtra });
      if (omitUsage) return json({ text });
      if (request.model === 'whisper-1') return json({ text, usage: { type: 'duration', seconds: Math.ceil(duration) } });
      const textTokens = request.prompt === '' ? 0 : completionTokens('openai', request.model, request.prompt);
      const audioTokens = Math.ceil(duration * TRANSCRIBE_AUDIO_TOKENS_PER_SECOND);
      const output = completionTokens('openai', request.model, text);
      return json({
        text,
        usage: {
          type: 'tokens',
          input_tokens: textTokens + audioTokens,
          input_token_details: { text_tokens: textTokens, audio_tokens: audioTokens },
          output_tokens: output,
          total_tokens: textTokens + audioTokens + output,
        },
      });
    }
  }
}

async function transcriptions(ex: Exchange, groq: boolean, headers: Headers): Promise<OpenAIFailure | undefined> {
  const form = ex.multipart;
  if (!form) {
    const type = ex.header('content-type') ?? '';
    if (/^multipart\/form-data/i.test(type)) return bad('Could not parse multipart form.');
    return bad(`Invalid Content-Type header (${type}), expected multipart/form-data. (HINT: If you're using curl, you can pass -H 'Content-Type: multipart/form-data')`);
  }
  const request = transcriptionRequest(form, groq);
  if (request instanceof OpenAIFailure) return request;
  const duration = await audioDurationSeconds(request.file.data, request.file.ext);
  if (duration === undefined) return bad('Audio file might be corrupted or unsupported', 'file', 'invalid_value');
  const scenario = ex.scenarioFor(undefined);
  await play(ex, scenario, headers, groq, { stream: false, json: () => transcriptionBody(request, duration, scenario) });
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Images

interface ImageModel {
  sizes: readonly string[];
  maxPrompt: number;
  maxN: number;
  qualities: readonly string[];
  gpt: boolean;
}

const IMAGE_MODELS: Record<string, ImageModel> = {
  'dall-e-2': { sizes: ['256x256', '512x512', '1024x1024'], maxPrompt: 1000, maxN: 10, qualities: ['standard'], gpt: false },
  'dall-e-3': { sizes: ['1024x1024', '1792x1024', '1024x1792'], maxPrompt: 4000, maxN: 1, qualities: ['standard', 'hd'], gpt: false },
  'gpt-image-1': { sizes: ['1024x1024', '1536x1024', '1024x1536', 'auto'], maxPrompt: 32000, maxN: 10, qualities: ['low', 'medium', 'high', 'auto'], gpt: true },
};
const GPT_IMAGE_OUTPUT_TOKENS: Record<string, number> = { low: 272, medium: 1056, high: 4160 };

interface ImageRequest {
  model: string;
  spec: ImageModel;
  prompt: string;
  n: number;
  width: number;
  height: number;
  size: string;
  quality: string;
  b64: boolean;
}

function imageRequest(body: Record<string, unknown>): OpenAIFailure | ImageRequest {
  const model = body.model ?? 'dall-e-2';
  if (typeof model !== 'string') return invalidType('model', 'a string', model);
  const spec = IMAGE_MODELS[model];
  if (!spec) return invalidValue(model, 'model', Object.keys(IMAGE_MODELS));
  const prompt = body.prompt;
  if (prompt === undefined || prompt === null) return missing('prompt');
  if (typeof prompt !== 'string') return invalidType('prompt', 'a string', prompt);
  if (prompt === '') return bad("Invalid 'prompt': empty string. Expected a string with minimum length 1, but got an empty string instead.", 'prompt', 'empty_string');
  if (prompt.length > spec.maxPrompt) {
    return bad(
      `Invalid 'prompt': string too long. Expected a string with maximum length ${spec.maxPrompt}, but got a string with length ${prompt.length} instead.`,
      'prompt',
      'string_above_max_length',
    );
  }
  const n = body.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n)) return invalidType('n', 'an integer', n);
  if (model === 'dall-e-3' && n !== 1) return bad('You must provide n=1 for this model.', 'n');
  if (n < 1) return bad(`Invalid 'n': integer below minimum value. Expected a value >= 1, but got ${n} instead.`, 'n', 'integer_below_min_value');
  if (n > spec.maxN) return bad(`Invalid 'n': integer above maximum value. Expected a value <= ${spec.maxN}, but got ${n} instead.`, 'n', 'integer_above_max_value');
  const size = body.size ?? (spec.gpt ? 'auto' : '1024x1024');
  if (typeof size !== 'string' || !spec.sizes.includes(size)) {
    if (spec.gpt) return invalidValue(size, 'size', spec.sizes);
    return bad(`'${String(size)}' is not one of [${spec.sizes.map((s) => `'${s}'`).join(', ')}] - 'size'`, 'size');
  }
  const resolvedSize = size === 'auto' ? '1024x1024' : size;
  const [width, height] = resolvedSize.split('x').map(Number) as [number, number];
  const quality = body.quality ?? (spec.gpt ? 'auto' : 'standard');
  if (typeof quality !== 'string' || !spec.qualities.includes(quality)) return invalidValue(quality, 'quality', spec.qualities);
  if (body.style !== undefined && body.style !== null) {
    if (model !== 'dall-e-3') return bad("Unknown parameter: 'style'.", 'style', 'unknown_parameter');
    if (body.style !== 'vivid' && body.style !== 'natural') return invalidValue(body.style, 'style', ['vivid', 'natural']);
  }
  let b64 = spec.gpt;
  if (body.response_format !== undefined && body.response_format !== null) {
    if (spec.gpt) return bad("Unknown parameter: 'response_format'.", 'response_format', 'unknown_parameter');
    if (body.response_format !== 'url' && body.response_format !== 'b64_json') {
      return bad(`'${String(body.response_format)}' is not one of ['url', 'b64_json'] - 'response_format'`, 'response_format');
    }
    b64 = body.response_format === 'b64_json';
  }
  for (const key of ['output_format', 'background', 'output_compression', 'moderation'] as const) {
    if (body[key] !== undefined && body[key] !== null && !spec.gpt) return bad(`Unknown parameter: '${key}'.`, key, 'unknown_parameter');
  }
  if (spec.gpt) {
    const output = body.output_format ?? 'png';
    if (output !== 'png' && output !== 'jpeg' && output !== 'webp') return invalidValue(output, 'output_format', ['png', 'jpeg', 'webp']);
    if (output !== 'png') return bad(`The provider simulator only produces PNG images (output_format '${output}' is not simulated).`, 'output_format', 'unsupported_value');
    const background = body.background ?? 'auto';
    if (background !== 'transparent' && background !== 'opaque' && background !== 'auto') return invalidValue(background, 'background', ['transparent', 'opaque', 'auto']);
  }
  return { model, spec, prompt, n, width, height, size: resolvedSize, quality: quality === 'auto' ? 'medium' : quality, b64 };
}

/** gpt-image-1's output tokens for one image: by quality for 1024x1024, ×1.5 for the 1536 sizes. */
function gptImageTokens(quality: string, size: string): number {
  const square = GPT_IMAGE_OUTPUT_TOKENS[quality] ?? GPT_IMAGE_OUTPUT_TOKENS.medium ?? 1056;
  return size === '1024x1024' ? square : Math.round(square * 1.5);
}

async function images(ex: Exchange, groq: boolean, headers: Headers): Promise<OpenAIFailure | undefined> {
  const body = jsonBody(ex);
  if (body instanceof OpenAIFailure) return body;
  const request = imageRequest(body);
  if (request instanceof OpenAIFailure) return request;
  const scenario = ex.scenarioFor(undefined);
  await play(ex, scenario, headers, groq, {
    stream: false,
    json: () => {
      const created = Math.floor(Date.now() / 1000);
      const seeds = Array.from({ length: request.n }, (_, i) => `${request.model}:${request.prompt}:${i}`);
      const b64 = (seed: string): string => png(request.width, request.height, seed).toString('base64');
      if (!request.spec.gpt) {
        const revised = request.model === 'dall-e-3' ? { revised_prompt: scenario.text ?? request.prompt } : {};
        const data = seeds.map((seed) =>
          request.b64 ? { ...revised, b64_json: b64(seed) } : { ...revised, url: `${ex.simUrl}/files/images/${ex.images.add(request.width, request.height, seed)}.png` },
        );
        return json({ created, data });
      }
      const textTokens = completionTokens('openai', request.model, request.prompt);
      const output = gptImageTokens(request.quality, request.size) * request.n;
      const usage =
        scenario.usage === 'omit'
          ? {}
          : { usage: { input_tokens: textTokens, input_tokens_details: { image_tokens: 0, text_tokens: textTokens }, output_tokens: output, total_tokens: textTokens + output } };
      return json({
        created,
        background: 'opaque',
        data: seeds.map((seed) => ({ b64_json: b64(seed) })),
        output_format: 'png',
        quality: request.quality,
        size: request.size,
        ...usage,
      });
    },
  });
  return undefined;
}

/** GET /files/images/<id>.png: the PNG behind a URL handed out (no auth, like a signed blob URL). */
function serveImage(ex: Exchange, name: string): void {
  const image = /^([A-Za-z0-9-]+)\.png$/.exec(name);
  const entry = image ? ex.images.get(image[1] ?? '') : undefined;
  if (!entry) {
    ex.send(404, { contentType: 'application/xml', text: '<?xml version="1.0" encoding="utf-8"?><Error><Code>BlobNotFound</Code><Message>The specified blob does not exist.</Message></Error>' });
    return;
  }
  const bytes = png(entry.width, entry.height, entry.seed);
  if (ex.gone || ex.res.headersSent) return;
  ex.res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(bytes.length), 'cache-control': 'max-age=3600' });
  ex.res.end(bytes);
}
