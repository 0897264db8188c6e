import type { ProviderConfig } from '../../config/types.js';
import type { EmbeddingRequest, EmbeddingResult } from '../../core/media.js';
import { GatewayError } from '../../core/errors.js';
import type { EmbeddingAdapter } from '../media.js';
import { upstreamMalformed } from '../shared/errors.js';
import { providerHeaders } from '../shared/headers.js';
import { asArray, asRecord } from '../shared/json.js';
import { embeddingTexts, numberArray } from '../shared/vectors.js';
import type { UpstreamRequest } from '../types.js';
import { bedrockHeaders, bedrockUrl } from './convert-request.js';

/** Cohere Embed on Bedrock takes at most this many texts per call. */
const COHERE_BATCH = 96;

function call(provider: ProviderConfig, request: EmbeddingRequest, body: Record<string, unknown>): UpstreamRequest {
  return { url: bedrockUrl(provider, request.upstreamModel, 'invoke'), headers: providerHeaders(provider, bedrockHeaders), body, ignoredParams: request.user !== undefined ? ['user'] : [] };
}

/**
 * Embeddings through InvokeModel, in each model's own body: Amazon Titan Text Embeddings
 * (`inputText`, one text a call; v2 takes `dimensions` 256, 512 or 1024 and normalizes) and
 * Cohere Embed (`texts`, up to 96 a call, with the `input_type` it requires: `search_document`,
 * the kind a vector store holds).
 */
export const bedrockEmbeddings: EmbeddingAdapter = {
  build(request: EmbeddingRequest, provider: ProviderConfig) {
    const model = request.upstreamModel;
    if (/cohere\.embed/.test(model)) {
      if (request.dimensions !== undefined) throw refused(model, 'dimensions', 'Cohere Embed v3 on Bedrock has fixed-length vectors: leave dimensions out');
      const all = embeddingTexts(request.input);
      const calls = [];
      for (let start = 0; start < all.length; start += COHERE_BATCH) calls.push(call(provider, request, { texts: all.slice(start, start + COHERE_BATCH), input_type: 'search_document', truncate: 'NONE' }));
      return calls;
    }
    if (/titan-embed/.test(model)) {
      const v2 = /titan-embed-text-v2/.test(model);
      if (request.dimensions !== undefined && !v2) throw refused(model, 'dimensions', 'Titan Text Embeddings v1 has fixed-length vectors: leave dimensions out');
      if (request.dimensions !== undefined && ![256, 512, 1024].includes(request.dimensions)) throw refused(model, 'dimensions', 'Titan Text Embeddings v2 makes vectors of 256, 512 or 1024 dimensions');
      return embeddingTexts(request.input).map((inputText) => call(provider, request, v2 ? { inputText, ...(request.dimensions !== undefined ? { dimensions: request.dimensions } : {}), normalize: true } : { inputText }));
    }
    throw refused(model, 'model', 'the gateway knows the embedding bodies of Amazon Titan Text Embeddings and Cohere Embed on Bedrock');
  },
  parse(bodies: unknown[], request: EmbeddingRequest, provider: ProviderConfig): EmbeddingResult {
    const vectors: number[][] = [];
    let tokens = 0;
    let counted = true;
    for (const body of bodies) {
      const record = asRecord(body);
      if (Array.isArray(record?.embeddings)) {
        for (const item of asArray(record.embeddings)) {
          const values = numberArray(item);
          if (!values) throw upstreamMalformed(provider.name, 'an embedding that is not a list of numbers');
          vectors.push(values);
        }
        // Cohere says its token count only in a response header: the gateway counts.
        counted = false;
      } else {
        const values = numberArray(record?.embedding);
        if (!values) throw upstreamMalformed(provider.name, 'an answer without an embedding');
        vectors.push(values);
        if (typeof record?.inputTextTokenCount === 'number') tokens += record.inputTextTokenCount;
        else counted = false;
      }
    }
    const count = request.input.kind === 'text' ? request.input.texts.length : request.input.tokens.length;
    if (vectors.length !== count) throw upstreamMalformed(provider.name, `${vectors.length} embeddings for ${count} inputs`);
    return counted ? { vectors, inputTokens: tokens } : { vectors };
  },
};

function refused(model: string, param: string, rule: string): GatewayError {
  return new GatewayError({ status: 400, type: 'invalid_request_error', reason: 'invalid_parameter', param, message: `${model}: ${rule}` });
}
