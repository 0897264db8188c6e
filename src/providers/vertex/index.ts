import type { ProviderConfig } from '../../config/types.js';
import { anthropicFamily } from '../anthropic/index.js';
import { geminiFamily } from '../gemini/index.js';
import { providerHeaders } from '../shared/headers.js';
import type { ProviderFamily, UpstreamRequest } from '../types.js';

/** The Anthropic version Vertex's Claude takes, in the body (not a header). */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

export type VertexPublisher = 'google' | 'anthropic';

/** Who publishes a model on Vertex: Claude is Anthropic's, the rest (Gemini, Gemma, embeddings) Google's. */
export function vertexPublisher(upstreamModel: string): VertexPublisher {
  return /^claude/.test(upstreamModel) ? 'anthropic' : 'google';
}

/**
 * A publisher model's method on Vertex: `{base}/v1/projects/{project}/locations/{region}/
 * publishers/{publisher}/models/{model}:{method}`. A model name may hold `@` (Claude's
 * versions), which goes as it is.
 */
export function vertexUrl(provider: ProviderConfig, publisher: VertexPublisher, upstreamModel: string, method: string): string {
  const vertex = provider.vertex ?? { project: '', region: 'us-central1' };
  const model = encodeURIComponent(upstreamModel).replace(/%40/g, '@');
  return `${provider.baseUrl}/v1/projects/${encodeURIComponent(vertex.project)}/locations/${vertex.region}/publishers/${publisher}/models/${model}:${method}`;
}

/** Content type and the config's headers; the access token is added when sent (vertex/token.ts). */
export function vertexHeaders(provider: ProviderConfig): Record<string, string> {
  return { 'content-type': 'application/json', ...provider.headers };
}

/**
 * Vertex is a transport, not a wire: Gemini's generateContent and Claude's Messages, each
 * family's own converters, sent to Vertex's paths with its token. Claude there takes
 * `anthropic_version` in the body and no `model` (the path names it).
 */
function overVertex(family: ProviderFamily, publisher: VertexPublisher): ProviderFamily {
  return {
    ...family,
    // Neither Gemini nor Claude on Vertex fetches arbitrary image URLs: the gateway inlines them.
    fetchesImageUrls: false,
    buildChatRequest(request, provider): UpstreamRequest {
      const call = family.buildChatRequest(request, provider);
      if (publisher === 'google') {
        return { ...call, url: vertexUrl(provider, 'google', request.upstreamModel, request.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'), headers: providerHeaders(provider, vertexHeaders) };
      }
      const { model: _model, ...rest } = call.body as Record<string, unknown>;
      // Vertex refuses the betas it does not serve (Claude Code sends several): a client's are
      // named, not sent; an operator's own go in the provider's headers.
      const asked = request.passthrough?.family === 'anthropic' ? request.passthrough.headers?.['anthropic-beta'] : undefined;
      const ignoredParams = asked ? [...call.ignoredParams, ...asked.split(',').map((beta) => `anthropic-beta: ${beta.trim()}`).filter((name) => !call.ignoredParams.includes(name))] : call.ignoredParams;
      return {
        ...call,
        url: vertexUrl(provider, 'anthropic', request.upstreamModel, request.stream ? 'streamRawPredict' : 'rawPredict'),
        headers: providerHeaders(provider, vertexHeaders),
        ignoredParams,
        body: { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest },
      };
    },
  };
}

export const vertexGeminiFamily = overVertex(geminiFamily, 'google');
export const vertexAnthropicFamily = overVertex(anthropicFamily, 'anthropic');

/** The family that serves a model on Vertex, by its publisher. */
export function vertexFamily(upstreamModel: string): ProviderFamily {
  return vertexPublisher(upstreamModel) === 'anthropic' ? vertexAnthropicFamily : vertexGeminiFamily;
}
