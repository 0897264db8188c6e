import type { ChatProviderType } from '../config/types.js';
import { anthropicFamily } from './anthropic/index.js';
import { anthropicTokenCounter, type TokenCounter } from './anthropic/count-tokens.js';
import { geminiFamily } from './gemini/index.js';
import { openAiFamily } from './openai/index.js';
import type { ProviderFamily } from './types.js';

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
};

export type { TokenCounter } from './anthropic/count-tokens.js';

/** The chat families whose upstream counts a prompt's tokens itself (POST /v1/messages/count_tokens); the others are estimated. */
export const TOKEN_COUNTERS: Readonly<Partial<Record<ChatProviderType, TokenCounter>>> = {
  anthropic: anthropicTokenCounter,
};
