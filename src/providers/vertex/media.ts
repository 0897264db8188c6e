import type { ProviderConfig } from '../../config/types.js';
import type { EmbeddingRequest, EmbeddingResult } from '../../core/media.js';
import type { EmbeddingAdapter } from '../media.js';
import { upstreamMalformed } from '../shared/errors.js';
import { providerHeaders } from '../shared/headers.js';
import { asArray, asRecord } from '../shared/json.js';
import { embeddingTexts, numberArray, unitVector } from '../shared/vectors.js';
import { vertexHeaders, vertexUrl } from './index.js';

/**
 * Texts per `:predict` call: text-embedding-00x takes 250 instances but at most 20,000 tokens
 * in all (2,048 each), so 10 fit whatever their length; gemini-embedding-001 takes one.
 */
function batchSize(model: string): number {
  return /^gemini-embedding/.test(model) ? 1 : 10;
}

/** Embeddings through Vertex's `:predict` (`instances[].content`; `outputDimensionality` shortens). */
export const vertexEmbeddings: EmbeddingAdapter = {
  build(request: EmbeddingRequest, provider: ProviderConfig) {
    const texts = embeddingTexts(request.input);
    const size = batchSize(request.upstreamModel);
    const calls = [];
    for (let start = 0; start < texts.length; start += size) {
      calls.push({
        url: vertexUrl(provider, 'google', request.upstreamModel, 'predict'),
        headers: providerHeaders(provider, vertexHeaders),
        body: {
          instances: texts.slice(start, start + size).map((content) => ({ content })),
          ...(request.dimensions !== undefined ? { parameters: { outputDimensionality: request.dimensions } } : {}),
        },
        ignoredParams: request.user !== undefined ? ['user'] : [],
      });
    }
    return calls;
  },
  parse(bodies: unknown[], request: EmbeddingRequest, provider: ProviderConfig): EmbeddingResult {
    const vectors: number[][] = [];
    let tokens = 0;
    let counted = true;
    for (const body of bodies) {
      for (const prediction of asArray(asRecord(body)?.predictions)) {
        const embeddings = asRecord(asRecord(prediction)?.embeddings);
        const values = numberArray(embeddings?.values);
        if (!values) throw upstreamMalformed(provider.name, 'a prediction without embeddings.values');
        // A shortened vector is not unit length: normalized, as the other families' are.
        vectors.push(request.dimensions !== undefined ? unitVector(values) : values);
        const count = asRecord(embeddings?.statistics)?.token_count;
        if (typeof count === 'number') tokens += count;
        else counted = false;
      }
    }
    const count = request.input.kind === 'text' ? request.input.texts.length : request.input.tokens.length;
    if (vectors.length !== count) throw upstreamMalformed(provider.name, `${vectors.length} embeddings for ${count} inputs`);
    // Without Vertex's count for every text, the gateway counts them all.
    return counted ? { vectors, inputTokens: tokens } : { vectors };
  },
};
