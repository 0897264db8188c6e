import type { ChatProviderType } from '../config/types.js';
import { anthropicFamily } from './anthropic/index.js';
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
};
