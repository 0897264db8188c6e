import { createHash, randomUUID } from 'node:crypto';
import { audioDurationSeconds, speechAudio, type SpeechFormat } from './audio.js';
import { isRecord, type Scenario } from './scenario.js';
import type { Body, Exchange } from './server.js';
import { timeline, type TimedWord } from './transcript.js';

/**
 * Deepgram: POST /v1/speak (Aura text to speech, chunked audio) and POST /v1/listen (pre-recorded
 * speech to text, raw audio body), with `Authorization: Token <key>` and Deepgram's
 * `{err_code, err_msg, request_id}` errors.
 */

const JSON_TYPE = 'application/json';

class DeepgramFailure {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly message: string,
  ) {}
}

function errorBody(failure: DeepgramFailure, requestId: string): Body {
  return { contentType: JSON_TYPE, text: JSON.stringify({ err_code: failure.code, err_msg: failure.message, request_id: requestId }) };
}

/** The error Deepgram sends for a scripted status. */
function scriptedFailure(status: number, message: string | undefined): DeepgramFailure {
  if (status === 400) return new DeepgramFailure(status, 'Bad Request', message ?? 'Bad Request');
  if (status === 401) return new DeepgramFailure(status, 'INVALID_AUTH', message ?? 'Invalid credentials.');
  if (status === 402) return new DeepgramFailure(status, 'ASR_PAYMENT_REQUIRED', message ?? 'Project does not have enough credits for an API request.');
  if (status === 403) return new DeepgramFailure(status, 'INSUFFICIENT_PERMISSIONS', message ?? 'User does not have sufficient permissions.');
  if (status === 404) return new DeepgramFailure(status, 'NOT_FOUND', message ?? 'Not Found');
  if (status === 429) return new DeepgramFailure(status, 'TOO_MANY_REQUESTS', message ?? 'Too many requests. Please try again later');
  if (status === 503) return new DeepgramFailure(status, 'SERVICE_UNAVAILABLE', message ?? 'Service Unavailable');
  if (status >= 500) return new DeepgramFailure(status, 'INTERNAL_SERVER_ERROR', message ?? 'Internal Server Error');
  return new DeepgramFailure(status, 'Bad Request', message ?? 'Bad Request');
}

function authFailure(ex: Exchange): DeepgramFailure | undefined {
  const auth = ex.header('authorization');
  const match = auth ? /^Token\s+(.*)$/i.exec(auth) : null;
  if (match && (match[1] ?? '').trim() === ex.apiKey) return undefined;
  return new DeepgramFailure(401, 'INVALID_AUTH', 'Invalid credentials.');
}

const badQuery = (message: string): DeepgramFailure => new DeepgramFailure(400, 'INVALID_QUERY_PARAMETER', message);

export async function handleDeepgram(ex: Exchange): Promise<void> {
  const requestId = randomUUID();
  const headers: Record<string, string> = { 'dg-request-id': requestId };
  const fail = (failure: DeepgramFailure): void => ex.send(failure.status, errorBody(failure, requestId), headers);
  if (ex.req.method !== 'POST') return fail(new DeepgramFailure(405, 'METHOD_NOT_ALLOWED', `Method ${ex.req.method ?? 'GET'} is not allowed on ${ex.url.pathname}.`));
  const auth = authFailure(ex);
  if (auth) return fail(auth);
  const failure = ex.url.pathname === '/v1/speak' ? await speak(ex, requestId, headers) : await listen(ex, requestId, headers);
  if (failure) fail(failure);
}

function play(
  ex: Exchange,
  scenario: Scenario,
  requestId: string,
  headers: Record<string, string>,
  answer: { json: () => Body; audio?: () => { contentType: string; bytes: Buffer } },
): Promise<void> {
  return ex.respond({
    scenario,
    stream: false,
    headers,
    error: (status, message) => errorBody(scriptedFailure(status, message), requestId),
    ...answer,
  });
}

// ---------------------------------------------------------------------------------------------
// Speak

const MAX_SPEAK_CHARS = 2000;

interface EncodingRule {
  containers: readonly string[];
  /** The container when none is given. */
  container: string;
  /** Allowed sample rates; undefined when the rate is fixed (`fixedRate`: only that rate may be given). */
  sampleRates?: readonly number[];
  fixedRate?: number;
  /** Allowed bit rates: a list or a range; undefined when the bit rate is not configurable. */
  bitRates?: readonly number[];
  bitRange?: { min: number; max: number };
}

const ENCODINGS: Record<string, EncodingRule> = {
  mp3: { containers: ['none'], container: 'none', fixedRate: 22050, bitRates: [32000, 48000] },
  opus: { containers: ['ogg'], container: 'ogg', fixedRate: 48000, bitRange: { min: 4000, max: 650000 } },
  aac: { containers: ['none'], container: 'none', fixedRate: 22050, bitRange: { min: 4000, max: 192000 } },
  flac: { containers: ['none'], container: 'none', sampleRates: [8000, 16000, 22050, 32000, 48000] },
  linear16: { containers: ['wav', 'none'], container: 'wav', sampleRates: [8000, 16000, 24000, 32000, 48000] },
};

function speakAudio(encoding: string, container: string): { format: SpeechFormat; contentType: string } {
  switch (encoding) {
    case 'opus':
      return { format: 'opus', contentType: 'audio/ogg' };
    case 'aac':
      return { format: 'aac', contentType: 'audio/aac' };
    case 'flac':
      return { format: 'flac', contentType: 'audio/flac' };
    case 'linear16':
      return container === 'wav' ? { format: 'wav', contentType: 'audio/wav' } : { format: 'pcm', contentType: 'application/octet-stream' };
    default:
      return { format: 'mp3', contentType: 'audio/mpeg' };
  }
}

function integerParam(query: URLSearchParams, name: string): number | undefined | DeepgramFailure {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value)) return badQuery(`Invalid value for query parameter \`${name}\`: ${raw} is not an integer.`);
  return value;
}

function speakQuery(query: URLSearchParams): DeepgramFailure | { model: string; encoding: string; container: string } {
  const model = query.get('model') ?? 'aura-asteria-en';
  if (!/^aura-(?:2-)?[a-z]+-[a-z]{2}$/.test(model)) return badQuery(`Invalid value for query parameter \`model\`: no such model ${model}.`);
  const encoding = query.get('encoding') ?? 'mp3';
  if (encoding === 'mulaw' || encoding === 'alaw') return badQuery(`The provider simulator does not produce \`${encoding}\` audio; use mp3, opus, aac, flac or linear16.`);
  const rule = ENCODINGS[encoding];
  if (!rule) return badQuery(`Invalid value for query parameter \`encoding\`: ${encoding}. Supported encodings are linear16, mulaw, alaw, mp3, opus, flac and aac.`);
  const container = query.get('container') ?? rule.container;
  if (!rule.containers.includes(container)) return badQuery(`Container \`${container}\` is not supported for encoding \`${encoding}\`. Supported containers: ${rule.containers.join(', ')}.`);
  const sampleRate = integerParam(query, 'sample_rate');
  if (sampleRate instanceof DeepgramFailure) return sampleRate;
  if (sampleRate !== undefined) {
    if (rule.fixedRate !== undefined && sampleRate !== rule.fixedRate) {
      return badQuery(`The sample rate is not configurable for encoding \`${encoding}\` (it is ${rule.fixedRate}); got ${sampleRate}.`);
    }
    if (rule.sampleRates && !rule.sampleRates.includes(sampleRate)) {
      return badQuery(`Invalid sample_rate ${sampleRate} for encoding \`${encoding}\`. Supported values: ${rule.sampleRates.join(', ')}.`);
    }
  }
  const bitRate = integerParam(query, 'bit_rate');
  if (bitRate instanceof DeepgramFailure) return bitRate;
  if (bitRate !== undefined) {
    const { bitRates, bitRange } = rule;
    if (!bitRates && !bitRange) return badQuery(`The bit rate is not configurable for encoding \`${encoding}\`.`);
    const ok = bitRates ? bitRates.includes(bitRate) : bitRange !== undefined && bitRate >= bitRange.min && bitRate <= bitRange.max;
    if (!ok) {
      const range = bitRates ? bitRates.join(', ') : `${bitRange?.min ?? 0} to ${bitRange?.max ?? 0}`;
      return badQuery(`Invalid bit_rate ${bitRate} for encoding \`${encoding}\`. Supported values: ${range}.`);
    }
  }
  const speed = query.get('speed');
  if (speed !== null) {
    const value = Number(speed);
    if (speed === '' || !Number.isFinite(value) || value < 0.7 || value > 1.5) return badQuery(`Invalid value for query parameter \`speed\`: ${speed}. Speed must be between 0.7 and 1.5.`);
  }
  return { model, encoding, container };
}

async function speak(ex: Exchange, requestId: string, headers: Record<string, string>): Promise<DeepgramFailure | undefined> {
  const query = speakQuery(ex.url.searchParams);
  if (query instanceof DeepgramFailure) return query;
  if (ex.bodyInvalid || !isRecord(ex.body)) {
    return new DeepgramFailure(400, 'Bad Request', 'Content-type was application/json, but we could not process the JSON payload.');
  }
  const text = ex.body.text;
  if (typeof text !== 'string') return new DeepgramFailure(400, 'Bad Request', 'Json deserialize error: missing field `text`');
  const chars = Array.from(text).length;
  if (text.trim() === '') return new DeepgramFailure(400, 'Bad Request', 'Input text must not be empty.');
  if (chars > MAX_SPEAK_CHARS) return new DeepgramFailure(400, 'Bad Request', `Input text exceeds the maximum of ${MAX_SPEAK_CHARS} characters (got ${chars}).`);
  const { format, contentType } = speakAudio(query.encoding, query.container);
  const aura2 = query.model.startsWith('aura-2-');
  Object.assign(headers, {
    'dg-model-name': query.model,
    'dg-char-count': String(chars),
    // Aura-2 answers have been seen with x-dg-* names as well: send both.
    ...(aura2 ? { 'x-dg-model-name': query.model, 'x-dg-characters': String(chars), 'x-dg-request-id': requestId } : { 'dg-model-uuid': modelUuid(query.model) }),
  });
  const scenario = ex.scenarioFor(undefined);
  await play(ex, scenario, requestId, headers, { json: () => ({ contentType: JSON_TYPE, text: '{}' }), audio: () => ({ contentType, bytes: speechAudio(format) }) });
  return undefined;
}

/** A stable uuid-shaped id per model name. */
function modelUuid(name: string): string {
  const hex = createHash('sha256').update(name).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

// ---------------------------------------------------------------------------------------------
// Listen

const LISTEN_MODELS: Record<string, string> = { 'nova-3': '2024-12-20.0', 'nova-2': '2024-01-09.29447' };

function flag(query: URLSearchParams, name: string): boolean | DeepgramFailure {
  const raw = query.get(name);
  if (raw === null) return false;
  if (raw === 'true' || raw === '') return true;
  if (raw === 'false') return false;
  return badQuery(`Invalid value for query parameter \`${name}\`: ${raw} is not a boolean.`);
}

interface WordWire {
  word: string;
  start: number;
  end: number;
  confidence: number;
  punctuated_word?: string;
}

const CONFIDENCE = 0.99;

function wordWire(word: TimedWord, punctuated: boolean): WordWire {
  const wire: WordWire = { word: word.bare.toLowerCase(), start: word.start, end: word.end, confidence: CONFIDENCE };
  if (punctuated) wire.punctuated_word = word.punctuated;
  return wire;
}

function transcriptOf(words: TimedWord[], text: string, punctuated: boolean): string {
  return punctuated ? text : words.map((w) => w.bare.toLowerCase()).join(' ');
}

/** Raw audio (`encoding` given): its duration from the byte count. */
function rawDuration(bytes: number, encoding: string, sampleRate: number, channels: number): number | undefined {
  const width = encoding === 'linear16' ? 2 : encoding === 'linear32' ? 4 : encoding === 'mulaw' || encoding === 'alaw' ? 1 : undefined;
  return width === undefined || bytes === 0 ? undefined : bytes / (width * sampleRate * channels);
}

async function listen(ex: Exchange, requestId: string, headers: Record<string, string>): Promise<DeepgramFailure | undefined> {
  const query = ex.url.searchParams;
  const model = query.get('model') ?? 'nova-3';
  const family = /^(nova-[23])(?:-([a-z]+))?$/.exec(model);
  const arch = family?.[1] ?? '';
  const version = LISTEN_MODELS[arch];
  if (!family || !version) {
    return new DeepgramFailure(400, 'Bad Request', 'No such model/language/tier combination found. Use the /v1/models endpoint to list the models you can use.');
  }
  const options: Record<string, boolean> = {};
  for (const name of ['smart_format', 'punctuate', 'utterances', 'detect_language'] as const) {
    const value = flag(query, name);
    if (value instanceof DeepgramFailure) return value;
    options[name] = value;
  }
  const contentType = ex.header('content-type') ?? '';
  if (/^application\/json/i.test(contentType)) {
    return new DeepgramFailure(400, 'Bad Request', 'Content-type was application/json, but we could not process the JSON payload.');
  }
  const bytes = ex.raw;
  const encoding = query.get('encoding');
  let duration: number | undefined;
  if (encoding !== null) {
    const rate = Number(query.get('sample_rate') ?? '');
    const channels = Number(query.get('channels') ?? '1');
    if (!Number.isInteger(rate) || rate <= 0) return badQuery('`sample_rate` is required when `encoding` is set.');
    duration = rawDuration(bytes.length, encoding, rate, Number.isInteger(channels) && channels > 0 ? channels : 1);
  } else {
    duration = await audioDurationSeconds(bytes, contentType === '' ? 'application/octet-stream' : contentType);
  }
  if (duration === undefined) return new DeepgramFailure(400, 'Bad Request', 'Bad Request: failed to process audio: corrupt or unsupported data');

  const punctuated = options.smart_format === true || options.punctuate === true;
  const modelName = `${family[2] ?? 'general'}-${arch}`;
  const uuid = modelUuid(modelName);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const scenario = ex.scenarioFor(undefined);
  await play(ex, scenario, requestId, headers, {
    json: () => {
      const text = scenario.text ?? `Transcribed ${duration.toFixed(2)} seconds of audio.`;
      const { words, segments } = timeline(text, duration);
      const channel: Record<string, unknown> = {
        alternatives: [{ transcript: transcriptOf(words, text, punctuated), confidence: CONFIDENCE, words: words.map((w) => wordWire(w, punctuated)) }],
      };
      if (options.detect_language) {
        channel.detected_language = 'en';
        channel.language_confidence = 0.98;
      }
      const results: Record<string, unknown> = { channels: [channel] };
      if (options.utterances) {
        results.utterances = segments.map((segment) => ({
          start: segment.start,
          end: segment.end,
          confidence: CONFIDENCE,
          channel: 0,
          transcript: transcriptOf(segment.words, segment.text, punctuated),
          words: segment.words.map((w) => wordWire(w, punctuated)),
          id: randomUUID(),
        }));
      }
      const metadata = {
        transaction_key: 'deprecated',
        request_id: requestId,
        sha256,
        created: new Date().toISOString(),
        duration,
        channels: 1,
        models: [uuid],
        model_info: { [uuid]: { name: modelName, version, arch } },
      };
      return { contentType: JSON_TYPE, text: JSON.stringify({ metadata, results }) };
    },
  });
  return undefined;
}
