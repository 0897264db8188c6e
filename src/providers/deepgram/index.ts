import type { ProviderConfig, SpeechFormat } from '../../config/types.js';
import type { SpeechRequest, TranscriptionRequest, TranscriptionResult, TranscriptionSegment, TranscriptionWord } from '../../core/media.js';
import type { MediaFamily, SpeechAdapter, TranscriptionAdapter } from '../media.js';
import { upstreamMalformed } from '../shared/errors.js';
import { providerHeaders } from '../shared/headers.js';
import { asArray, asNumber, asRecord, asString, nestedErrorMessage } from '../shared/json.js';
import { DEEPGRAM_VOICES } from './voices.js';

/**
 * Deepgram: Aura text to speech (`POST /v1/speak`) and Nova transcription (`POST
 * /v1/listen`), a wire of its own: `Authorization: Token <key>`, options in the query string,
 * raw audio bodies, errors as `{err_code, err_msg, request_id}`.
 */

/** Each speech format as Deepgram's encoding and container (all four of the spec's, natively). */
const SPEAK_FORMATS: Readonly<Record<SpeechFormat, string>> = {
  mp3: 'encoding=mp3',
  opus: 'encoding=opus&container=ogg',
  aac: 'encoding=aac',
  flac: 'encoding=flac',
  // OpenAI's wav and pcm are 24 kHz 16-bit mono; pcm has no header.
  wav: 'encoding=linear16&container=wav&sample_rate=24000',
  pcm: 'encoding=linear16&container=none&sample_rate=24000',
};

function deepgramHeaders(provider: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...provider.headers };
  if (provider.apiKey) headers.authorization = `Token ${provider.apiKey}`;
  return headers;
}

export const deepgramSpeech: SpeechAdapter = {
  build(request: SpeechRequest, provider: ProviderConfig) {
    const voice = DEEPGRAM_VOICES[request.voice] ?? DEEPGRAM_VOICES.alloy;
    let query = `model=${encodeURIComponent(`${request.upstreamModel}-${voice}-en`)}&${SPEAK_FORMATS[request.format]}`;
    if (request.speed !== undefined && request.speed !== 1) query += `&speed=${request.speed}`;
    return {
      url: `${provider.baseUrl}/v1/speak?${query}`,
      headers: providerHeaders(provider, deepgramHeaders),
      body: { text: request.input },
      ignoredParams: request.instructions !== undefined ? ['instructions'] : [],
    };
  },
  billedCharacters(headers) {
    const value = headers['dg-char-count'];
    const count = Number(Array.isArray(value) ? value[0] : value);
    return Number.isInteger(count) && count >= 0 ? count : undefined;
  },
};

export const deepgramTranscription: TranscriptionAdapter = {
  build(request: TranscriptionRequest, provider: ProviderConfig) {
    const params = new URLSearchParams({ model: request.upstreamModel, smart_format: 'true', punctuate: 'true', utterances: 'true' });
    if (request.language !== undefined) params.set('language', request.language);
    else params.set('detect_language', 'true');
    const headers: Record<string, string> = { ...provider.headers, 'content-type': request.mimeType };
    if (provider.apiKey) headers.authorization = `Token ${provider.apiKey}`;
    const ignoredParams = [...(request.prompt !== undefined ? ['prompt'] : []), ...(request.temperature !== undefined ? ['temperature'] : [])];
    return { url: `${provider.baseUrl}/v1/listen?${params.toString()}`, headers, body: undefined, rawBody: request.audio, ignoredParams };
  },
  parse(body: Buffer, _contentType: string, request: TranscriptionRequest, provider: ProviderConfig): TranscriptionResult {
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      throw upstreamMalformed(provider.name, 'a transcription that is not JSON');
    }
    const record = asRecord(json);
    const channel = asRecord(asArray(asRecord(record?.results)?.channels)[0]);
    const alternative = asRecord(asArray(channel?.alternatives)[0]);
    const text = asString(alternative?.transcript);
    if (text === undefined) throw upstreamMalformed(provider.name, 'a transcription without a transcript');
    const words: TranscriptionWord[] = asArray(alternative?.words).map((item) => {
      const word = asRecord(item);
      return { word: asString(word?.punctuated_word) ?? asString(word?.word) ?? '', start: asNumber(word?.start), end: asNumber(word?.end) };
    });
    const duration = asNumber(asRecord(record?.metadata)?.duration);
    let segments: TranscriptionSegment[] = asArray(asRecord(record?.results)?.utterances).map((item, id) => {
      const utterance = asRecord(item);
      return { id, start: asNumber(utterance?.start), end: asNumber(utterance?.end), text: asString(utterance?.transcript) ?? '' };
    });
    if (segments.length === 0 && text !== '') segments = [{ id: 0, start: 0, end: duration || (words.at(-1)?.end ?? 0), text }];
    const result: TranscriptionResult = { kind: 'canonical', text, segments, words };
    const language = asString(channel?.detected_language) ?? request.language;
    if (language !== undefined) result.language = language;
    if (duration > 0) result.durationSeconds = duration;
    return result;
  },
};

/** Deepgram's error text: `err_msg` (older endpoints) or `message` (newer), else the usual envelope. */
export function deepgramErrorMessage(body: unknown): string | undefined {
  const record = asRecord(body);
  return asString(record?.err_msg) ?? asString(record?.message) ?? nestedErrorMessage(body);
}

export const deepgramMedia: MediaFamily = { speech: deepgramSpeech, transcription: deepgramTranscription, errorMessage: deepgramErrorMessage };
