import type { ProviderConfig } from '../../config/types.js';
import type { EmbeddingRequest, EmbeddingResult, GeneratedImage, ImageRequest, ImageResult } from '../../core/media.js';
import type { EmbeddingAdapter, ImageAdapter } from '../media.js';
import { upstreamMalformed } from '../shared/errors.js';
import { providerHeaders } from '../shared/headers.js';
import { asArray, asRecord, asString } from '../shared/json.js';
import { embeddingTexts, numberArray, unitVector } from '../shared/vectors.js';
import { GatewayError } from '../../core/errors.js';
import { geminiHeaders } from './convert-request.js';

/** Gemini's batchEmbedContents takes at most this many requests per call. */
export const GEMINI_EMBED_BATCH = 100;

/**
 * Embeddings through `:batchEmbedContents` (one vector per input, in order; several inputs
 * as parts of one `embedContent` would give a single vector), in batches of 100.
 */
export const geminiEmbeddings: EmbeddingAdapter = {
  build(request: EmbeddingRequest, provider: ProviderConfig) {
    // The ingress refuses token arrays for models without token_arrays (Gemini's).
    const texts = embeddingTexts(request.input);
    const model = `models/${request.upstreamModel}`;
    const calls = [];
    for (let start = 0; start < texts.length; start += GEMINI_EMBED_BATCH) {
      const requests = texts.slice(start, start + GEMINI_EMBED_BATCH).map((text) => ({
        model,
        content: { parts: [{ text }] },
        ...(request.dimensions !== undefined ? { outputDimensionality: request.dimensions } : {}),
      }));
      calls.push({
        url: `${provider.baseUrl}/v1beta/models/${encodeURIComponent(request.upstreamModel)}:batchEmbedContents`,
        headers: providerHeaders(provider, geminiHeaders),
        body: { requests },
        ignoredParams: request.user !== undefined ? ['user'] : [],
      });
    }
    return calls;
  },
  parse(bodies: unknown[], request: EmbeddingRequest, provider: ProviderConfig): EmbeddingResult {
    const vectors = [];
    for (const body of bodies) {
      for (const item of asArray(asRecord(body)?.embeddings)) {
        const values = numberArray(asRecord(item)?.values);
        if (!values) throw upstreamMalformed(provider.name, 'an embedding without values');
        // Only Gemini's full-length vectors are unit length; shortened ones must be normalized
        // (Google's guidance), as OpenAI's always are: cosine and dot-product users rely on it.
        vectors.push(request.dimensions !== undefined ? unitVector(values) : values);
      }
    }
    const count = request.input.kind === 'text' ? request.input.texts.length : request.input.tokens.length;
    if (vectors.length !== count) throw upstreamMalformed(provider.name, `${vectors.length} embeddings for ${count} inputs`);
    // Gemini reports no token usage: the gateway counts (media service).
    return { vectors };
  },
};

/** Gemini's image sizes: each aspect ratio it takes, at its 1K resolution. */
export const GEMINI_ASPECT_RATIOS: Readonly<Record<string, string>> = {
  '1024x1024': '1:1',
  '832x1248': '2:3',
  '1248x832': '3:2',
  '864x1184': '3:4',
  '1184x864': '4:3',
  '896x1152': '4:5',
  '1152x896': '5:4',
  '768x1344': '9:16',
  '1344x768': '16:9',
  '1536x672': '21:9',
};

/** Images from a Gemini image model's generateContent (one image per call: `n` calls). */
export const geminiImages: ImageAdapter = {
  build(request: ImageRequest, provider: ProviderConfig) {
    const aspectRatio = GEMINI_ASPECT_RATIOS[request.size] ?? '1:1';
    const body = {
      contents: [{ role: 'user', parts: [{ text: request.prompt }] }],
      generationConfig: { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio } },
    };
    const ignoredParams = [...(request.quality !== undefined ? ['quality'] : []), ...(request.style !== undefined ? ['style'] : [])];
    const call = {
      url: `${provider.baseUrl}/v1beta/models/${encodeURIComponent(request.upstreamModel)}:generateContent`,
      headers: providerHeaders(provider, geminiHeaders),
      body,
      ignoredParams,
    };
    return Array.from({ length: request.n }, () => call);
  },
  parse(bodies: unknown[], _request: ImageRequest, provider: ProviderConfig): ImageResult {
    const images: GeneratedImage[] = [];
    for (const body of bodies) {
      const record = asRecord(body);
      const candidate = asRecord(asArray(record?.candidates)[0]);
      let found = false;
      for (const part of asArray(asRecord(candidate?.content)?.parts)) {
        const inline = asRecord(asRecord(part)?.inlineData);
        const data = asString(inline?.data);
        if (!data) continue;
        images.push({ b64: data, mimeType: asString(inline?.mimeType) ?? 'image/png' });
        found = true;
        break;
      }
      if (!found) {
        const blocked = asString(asRecord(record?.promptFeedback)?.blockReason) ?? asString(candidate?.finishReason);
        if (blocked && blocked !== 'STOP') {
          throw new GatewayError({
            status: 400,
            type: 'invalid_request_error',
            reason: 'content_filtered',
            param: 'prompt',
            message: `prompt: ${provider.name} made no image (${blocked})`,
          });
        }
        throw upstreamMalformed(provider.name, 'an answer without an image');
      }
    }
    return { images };
  },
};
