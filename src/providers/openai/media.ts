import type { ProviderConfig } from '../../config/types.js';
import type { EmbeddingRequest, EmbeddingResult, ImageRequest, ImageResult, SpeechRequest, TranscriptionRequest, TranscriptionResult, Vector } from '../../core/media.js';
import type { EmbeddingAdapter, ImageAdapter, SpeechAdapter, TranscriptionAdapter } from '../media.js';
import { upstreamMalformed } from '../shared/errors.js';
import { providerHeaders } from '../shared/headers.js';
import { openAiUrl, setOpenAiCredential } from './endpoint.js';
import { asArray, asNumber, asRecord, asString } from '../shared/json.js';
import { buildMultipart, type FormField } from '../shared/multipart.js';
import { checkedBase64Floats, numberArray } from '../shared/vectors.js';
import { openAiHeaders } from './convert-request.js';

/**
 * OpenAI's media endpoints (embeddings, audio/speech, audio/transcriptions,
 * images/generations), for OpenAI and every compatible vendor (Groq's Whisper, Mistral's
 * embeddings) at its base URL.
 */

export const openAiEmbeddings: EmbeddingAdapter = {
  build(request: EmbeddingRequest, provider: ProviderConfig) {
    const body: Record<string, unknown> = {
      model: request.upstreamModel,
      input: request.input.kind === 'text' ? request.input.texts : request.input.tokens,
      encoding_format: request.encodingFormat,
    };
    if (request.dimensions !== undefined) body.dimensions = request.dimensions;
    if (request.user !== undefined) body.user = request.user;
    return [{ url: openAiUrl(provider, '/embeddings', request.upstreamModel), headers: providerHeaders(provider, openAiHeaders), body, ignoredParams: [] }];
  },
  parse(bodies: unknown[], request: EmbeddingRequest, provider: ProviderConfig): EmbeddingResult {
    const body = asRecord(bodies[0]);
    const data = body?.data;
    const count = request.input.kind === 'text' ? request.input.texts.length : request.input.tokens.length;
    if (!Array.isArray(data) || data.length !== count) throw upstreamMalformed(provider.name, `an embeddings answer without one vector per input (${count} asked)`);
    const vectors: Vector[] = new Array<Vector>(count);
    for (const [position, item] of data.entries()) {
      const record = asRecord(item);
      const index = typeof record?.index === 'number' ? record.index : position;
      if (!Number.isInteger(index) || index < 0 || index >= count || vectors[index] !== undefined) throw upstreamMalformed(provider.name, 'an embeddings answer with a wrong or repeated index');
      const embedding = record?.embedding;
      const vector = typeof embedding === 'string' ? checkedBase64Floats(provider.name, embedding) : numberArray(embedding);
      if (!vector) throw upstreamMalformed(provider.name, 'an embedding that is neither a number array nor base64');
      vectors[index] = vector;
    }
    const usage = asRecord(body?.usage);
    const tokens = usage?.prompt_tokens ?? usage?.total_tokens;
    const result: EmbeddingResult = { vectors };
    if (typeof tokens === 'number' && Number.isInteger(tokens) && tokens >= 0) result.inputTokens = tokens;
    return result;
  },
};

export const openAiSpeech: SpeechAdapter = {
  build(request: SpeechRequest, provider: ProviderConfig) {
    const body: Record<string, unknown> = { model: request.upstreamModel, input: request.input, voice: request.voice, response_format: request.format };
    if (request.speed !== undefined) body.speed = request.speed;
    if (request.instructions !== undefined) body.instructions = request.instructions;
    return { url: openAiUrl(provider, '/audio/speech', request.upstreamModel), headers: providerHeaders(provider, openAiHeaders), body, ignoredParams: [] };
  },
};

export const openAiTranscription: TranscriptionAdapter = {
  build(request: TranscriptionRequest, provider: ProviderConfig) {
    const fields: FormField[] = [
      { name: 'file', filename: request.filename, contentType: request.mimeType, data: request.audio },
      { name: 'model', value: request.upstreamModel },
      { name: 'response_format', value: request.responseFormat },
    ];
    if (request.language !== undefined) fields.push({ name: 'language', value: request.language });
    if (request.prompt !== undefined) fields.push({ name: 'prompt', value: request.prompt });
    if (request.temperature !== undefined) fields.push({ name: 'temperature', value: String(request.temperature) });
    for (const granularity of request.timestampGranularities) fields.push({ name: 'timestamp_granularities[]', value: granularity });
    const { parts, length, contentType } = buildMultipart(fields);
    const headers: Record<string, string> = { ...provider.headers, 'content-type': contentType, 'content-length': String(length) };
    setOpenAiCredential(headers, provider);
    return { url: openAiUrl(provider, '/audio/transcriptions', request.upstreamModel), headers, body: undefined, rawBody: parts, ignoredParams: [] };
  },
  /** Passed through in the client's format (the upstream rendered it); the duration read where the answer states it. */
  parse(body: Buffer, contentType: string, request: TranscriptionRequest, provider: ProviderConfig): TranscriptionResult {
    const result: TranscriptionResult = { kind: 'rendered', body, contentType };
    if (request.responseFormat === 'json' || request.responseFormat === 'verbose_json') {
      let json: unknown;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        throw upstreamMalformed(provider.name, 'a transcription that is not JSON');
      }
      const record = asRecord(json);
      if (typeof record?.text !== 'string') throw upstreamMalformed(provider.name, 'a transcription without text');
      const usage = asRecord(record.usage);
      const seconds = typeof record.duration === 'number' ? record.duration : usage?.type === 'duration' ? asNumber(usage.seconds) : undefined;
      if (seconds !== undefined && seconds > 0) result.durationSeconds = seconds;
      result.contentType = 'application/json';
    }
    return result;
  },
};

export const openAiImages: ImageAdapter = {
  build(request: ImageRequest, provider: ProviderConfig) {
    const body: Record<string, unknown> = { model: request.upstreamModel, prompt: request.prompt, n: request.n, size: request.size };
    if (request.quality !== undefined) body.quality = request.quality;
    if (request.style !== undefined) body.style = request.style;
    // Only the dall-e models take response_format; GPT image models always answer base64 (the
    // service asks for URLs only from models the catalog says can make them).
    if (request.upstreamResponseFormat !== undefined) body.response_format = request.upstreamResponseFormat;
    if (request.user !== undefined) body.user = request.user;
    return [{ url: openAiUrl(provider, '/images/generations', request.upstreamModel), headers: providerHeaders(provider, openAiHeaders), body, ignoredParams: [] }];
  },
  parse(bodies: unknown[], _request: ImageRequest, provider: ProviderConfig): ImageResult {
    const body = asRecord(bodies[0]);
    const images = asArray(body?.data).map((item) => {
      const record = asRecord(item);
      const url = asString(record?.url);
      const b64 = asString(record?.b64_json);
      if (!url && !b64) throw upstreamMalformed(provider.name, 'an image without url or b64_json');
      const format = asString(body?.output_format) ?? 'png';
      return {
        ...(url ? { url } : {}),
        ...(b64 ? { b64 } : {}),
        mimeType: `image/${format === 'jpeg' ? 'jpeg' : format}`,
        ...(asString(record?.revised_prompt) ? { revisedPrompt: asString(record?.revised_prompt) as string } : {}),
      };
    });
    if (images.length === 0) throw upstreamMalformed(provider.name, 'an image answer without images');
    const result: ImageResult = { images };
    const quality = asString(body?.quality);
    const size = asString(body?.size);
    if (quality) result.quality = quality;
    if (size) result.size = size;
    const inputTokens = asRecord(body?.usage)?.input_tokens;
    if (typeof inputTokens === 'number' && Number.isInteger(inputTokens) && inputTokens >= 0) result.inputTokens = inputTokens;
    return result;
  },
};
