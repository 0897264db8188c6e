import type { ChatProviderType, ProviderConfig } from '../config/types.js';
import { anthropicFamily } from './anthropic/index.js';
import { anthropicTokenCounter, type TokenCounter } from './anthropic/count-tokens.js';
import { bedrockFamily, bedrockFamilyFor } from './bedrock/index.js';
import { geminiFamily } from './gemini/index.js';
import { openAiFamily } from './openai/index.js';
import type { ProviderFamily } from './types.js';
import { vertexFamily, vertexGeminiFamily } from './vertex/index.js';

/**
 * The chat wire family of each provider type. A new OpenAI-compatible vendor needs only
 * config. The catalog refuses a chat model on a provider type without one (Deepgram).
 */
export const PROVIDER_FAMILIES: Readonly<Record<ChatProviderType, ProviderFamily>> = {
  openai: openAiFamily,
  anthropic: anthropicFamily,
  gemini: geminiFamily,
  // Azure OpenAI: OpenAI's wire, with Azure's paths and api-key (openai/endpoint.ts).
  azure: openAiFamily,
  // AWS Bedrock: the Converse API, for every Bedrock chat model.
  bedrock: bedrockFamily,
  // Google Vertex AI: Gemini's wire on Vertex's transport; Claude's for Claude models (chatFamily).
  vertex: vertexGeminiFamily,
};

/**
 * The family that serves a model on a provider: the provider type's, except on Vertex, where
 * it is the model's publisher's (Gemini's or Claude's wire, on Vertex's transport), and on
 * Bedrock, whose one wire carries each vendor's tokenizer (its prompt margin).
 */
export function chatFamily(provider: ProviderConfig, upstreamModel: string): ProviderFamily {
  if (provider.type === 'vertex') return vertexFamily(upstreamModel);
  if (provider.type === 'bedrock') return bedrockFamilyFor(upstreamModel);
  return PROVIDER_FAMILIES[provider.type as ChatProviderType];
}

export type { TokenCounter } from './anthropic/count-tokens.js';

/** The chat families whose upstream counts a prompt's tokens itself (POST /v1/messages/count_tokens); the others are estimated. */
export const TOKEN_COUNTERS: Readonly<Partial<Record<ChatProviderType, TokenCounter>>> = {
  anthropic: anthropicTokenCounter,
};
