import type { App } from '../../app.js';
import { TRANSCRIPTION_FORMATS, type TranscriptionFormat } from '../../config/types.js';
import { AUDIO_TYPES, extensionOf } from '../../core/audio.js';
import { errors, GatewayError } from '../../core/errors.js';
import type { TranscriptionDraft, TranscriptionOutcome } from '../../core/gateway/media.js';
import type { TranscriptionSegment } from '../../core/media.js';
import { isObject, optionalEnum, optionalNumberIn, optionalString, requiredModel, requireObject, type JsonObject } from '../../core/validate.js';
import { readMultipart, type MultipartForm } from '../../http/multipart.js';
import { responseHeaders } from '../../http/respond.js';
import type { RequestContext, Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireCallingKey } from '../guards.js';
import { resolveAliases } from '../aliases.js';
import { callContext } from '../inference.js';

/** The most audio one transcription takes (OpenAI's limit), as a file or decoded from base64. */
export const MAX_AUDIO_BYTES = 25 * 1024 * 1024;
const FORM_FIELDS = ['file', 'model', 'language', 'prompt', 'response_format', 'temperature', 'timestamp_granularities[]', 'timestamp_granularities'];
const LANGUAGE = /^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * POST /v1/audio/transcriptions in both of the spec's shapes: A, multipart/form-data with the
 * file (read as it streams, at most 25 MB kept); B, JSON with `input_audio: {data, format}`
 * (base64, within the server's body limit). Answers in the asked format: json and
 * verbose_json as JSON, text/srt/vtt as plain text.
 */
export function registerTranscriptionRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/audio/transcriptions', {
    handle: async (ctx) => {
      const key = await requireCallingKey(app, ctx);
      const type = ctx.req.headers['content-type'] ?? '';
      const draft = type.toLowerCase().startsWith('multipart/form-data') ? await decodeForm(ctx) : decodeJson(await ctx.json());
      const call = callContext(ctx, key, 'audio.transcriptions', app.catalog);
      resolveAliases(app.catalog, 'transcription', draft, call);
      const outcome = await app.media.transcribe(draft, call);
      const { body, contentType } = encodeTranscription(outcome);
      const res = ctx.res;
      res.writeHead(200, responseHeaders(res, { 'content-type': contentType, 'cache-control': 'no-store', 'content-length': String(body.length) }, outcome.headers));
      res.end(body);
    },
  });
}

async function decodeForm(ctx: RequestContext): Promise<TranscriptionDraft> {
  const declared = Number(ctx.req.headers['content-length']);
  // The file plus its form: a body far past the file limit is refused before it is read.
  if (Number.isFinite(declared) && declared > MAX_AUDIO_BYTES + 1024 * 1024) {
    ctx.req.resume();
    throw new GatewayError({ status: 413, type: 'request_too_large', reason: 'file_too_large', param: 'file', message: `file: the file exceeds the limit of ${MAX_AUDIO_BYTES} bytes` });
  }
  const form = await readMultipart(ctx.req, { fileBytes: MAX_AUDIO_BYTES, fieldBytes: 64 * 1024, fields: 32, idleMs: ctx.bodyIdleTimeoutMs });
  const file = form.file;
  if (!file || file.field !== 'file') throw errors.missingField('file');
  if (file.data.length === 0) throw errors.invalidField('file', 'must not be empty');
  const fields: JsonObject = {};
  for (const [name, values] of form.fields) fields[name] = values.length === 1 ? values[0] : values;
  const ext = extensionOf(file.filename);
  const mimeType = AUDIO_TYPES[ext];
  if (!mimeType) throw errors.invalidField('file', `must be a file named with one of the extensions ${Object.keys(AUDIO_TYPES).join(', ')} (got '${file.filename || 'no name'}')`);
  const draft = common(fields, file.data, file.filename, file.mimeType.startsWith('audio/') || file.mimeType.startsWith('video/') ? file.mimeType : mimeType);
  draft.timestampGranularities = granularities(form);
  return draft;
}

function decodeJson(raw: unknown): TranscriptionDraft {
  const body = requireObject(raw);
  const audio = body.input_audio;
  if (audio === undefined || audio === null) throw errors.missingField('input_audio');
  if (!isObject(audio)) throw errors.invalidField('input_audio', 'must be an object {data, format}');
  if (audio.data === undefined || audio.data === null) throw errors.missingField('input_audio.data');
  if (typeof audio.data !== 'string' || audio.data === '') throw errors.invalidField('input_audio.data', 'must be a non-empty base64 string');
  if (audio.format === undefined || audio.format === null) throw errors.missingField('input_audio.format');
  const format = typeof audio.format === 'string' ? audio.format.toLowerCase() : '';
  const mimeType = AUDIO_TYPES[format];
  if (!mimeType) throw errors.invalidField('input_audio.format', `must be one of ${Object.keys(AUDIO_TYPES).join(', ')}`);
  // Raw base64 (a data: URL's prefix is tolerated), whitespace ignored.
  const text = audio.data.replace(/^data:[^,]*;base64,/, '').replace(/\s+/g, '');
  if (!BASE64.test(text) || text.length % 4 === 1) throw errors.invalidField('input_audio.data', 'must be base64-encoded audio');
  const data = Buffer.from(text, 'base64');
  if (data.length > MAX_AUDIO_BYTES) throw new GatewayError({ status: 413, type: 'request_too_large', reason: 'file_too_large', param: 'input_audio.data', message: `input_audio.data: the audio exceeds the limit of ${MAX_AUDIO_BYTES} bytes` });
  const draft = common(body, data, `audio.${format}`, mimeType);
  const raw_granularities = body.timestamp_granularities;
  if (raw_granularities !== undefined) {
    if (!Array.isArray(raw_granularities) || raw_granularities.some((g) => g !== 'word' && g !== 'segment')) throw errors.invalidField('timestamp_granularities', 'must be an array of word, segment');
    draft.timestampGranularities = [...new Set(raw_granularities as Array<'word' | 'segment'>)];
  }
  return draft;
}

/** The fields both shapes share (a form's fields are strings). */
function common(fields: JsonObject, audio: Buffer, filename: string, mimeType: string): TranscriptionDraft {
  const model = requiredModel(fields);
  const draft: TranscriptionDraft = {
    model,
    audio,
    filename,
    mimeType,
    responseFormat: optionalEnum(fields, 'response_format', TRANSCRIPTION_FORMATS) ?? 'json',
    timestampGranularities: [],
  };
  const language = optionalString(fields, 'language', { max: 12, pattern: LANGUAGE, patternRule: 'must be an ISO 639-1 language code (en, hi, fr)' });
  if (language !== undefined) draft.language = language;
  const prompt = optionalString(fields, 'prompt', { max: 4096 });
  if (prompt !== undefined) draft.prompt = prompt;
  let temperature = fields.temperature;
  if (typeof temperature === 'string') {
    if (!/^\s*-?[0-9.]+\s*$/.test(temperature)) throw errors.invalidField('temperature', 'must be a number from 0 to 1');
    temperature = Number(temperature);
  }
  const parsed = optionalNumberIn({ temperature }, 'temperature', 0, 1);
  if (parsed !== undefined) draft.temperature = parsed;
  return draft;
}

function granularities(form: MultipartForm): Array<'word' | 'segment'> {
  const values = [...(form.fields.get('timestamp_granularities[]') ?? []), ...(form.fields.get('timestamp_granularities') ?? [])];
  for (const value of values) if (value !== 'word' && value !== 'segment') throw errors.invalidField('timestamp_granularities[]', 'must be word or segment');
  for (const name of form.fields.keys()) if (!FORM_FIELDS.includes(name) && name !== 'stream' && name !== 'include[]') throw errors.unknownField(name, FORM_FIELDS);
  if (form.fields.get('stream')?.[0] === 'true') throw errors.invalidField('stream', 'streamed transcriptions are not served; omit stream');
  return [...new Set(values as Array<'word' | 'segment'>)];
}

const TEXT = 'text/plain; charset=utf-8';

/** The answer in the client's format: the upstream's own rendering, or the gateway's from text and timings. */
export function encodeTranscription(outcome: TranscriptionOutcome): { body: Buffer; contentType: string } {
  const result = outcome.result;
  const format = outcome.request.responseFormat;
  if (result.kind === 'rendered') {
    const json = format === 'json' || format === 'verbose_json';
    return { body: result.body, contentType: json ? 'application/json' : TEXT };
  }
  const seconds = Number(outcome.headers['x-gateway-audio-seconds'] ?? 0);
  const duration = result.durationSeconds ?? outcome.request.durationSeconds;
  const usage = { type: 'duration', seconds };
  switch (format) {
    case 'json':
      return jsonBody({ text: result.text, usage });
    case 'text':
      return { body: Buffer.from(`${result.text}\n`), contentType: TEXT };
    case 'srt':
      return { body: Buffer.from(srt(result.segments)), contentType: TEXT };
    case 'vtt':
      return { body: Buffer.from(vtt(result.segments)), contentType: TEXT };
    case 'verbose_json': {
      const body: Record<string, unknown> = {
        task: 'transcribe',
        language: result.language ?? 'unknown',
        duration,
        text: result.text,
        segments: result.segments.map((segment) => ({ id: segment.id, seek: 0, start: segment.start, end: segment.end, text: segment.text, tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0 })),
        usage,
      };
      if (outcome.request.timestampGranularities.includes('word')) body.words = result.words;
      return jsonBody(body);
    }
  }
}

function jsonBody(value: unknown): { body: Buffer; contentType: string } {
  return { body: Buffer.from(JSON.stringify(value)), contentType: 'application/json' };
}

/** `HH:MM:SS<sep>mmm`. */
function timestamp(seconds: number, separator: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (value: number, width = 2): string => String(value).padStart(width, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

export function srt(segments: readonly TranscriptionSegment[]): string {
  return segments.map((s, i) => `${i + 1}\n${timestamp(s.start, ',')} --> ${timestamp(s.end, ',')}\n${s.text.trim()}\n\n`).join('');
}

export function vtt(segments: readonly TranscriptionSegment[]): string {
  return `WEBVTT\n\n${segments.map((s) => `${timestamp(s.start, '.')} --> ${timestamp(s.end, '.')}\n${s.text.trim()}\n\n`).join('')}`;
}

export type { TranscriptionFormat };
