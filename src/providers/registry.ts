import type { ProviderType } from '../config/types.js';
import { anthropicFamily } from './anthropic/index.js';
import { geminiFamily } from './gemini/index.js';
import { openAiFamily } from './openai/index.js';
import type { ProviderFamily } from './types.js';

/** The wire family of each provider type. A new OpenAI-compatible vendor needs only config. */
export const PROVIDER_FAMILIES: Readonly<Record<ProviderType, ProviderFamily>> = {
  openai: openAiFamily,
  anthropic: anthropicFamily,
  gemini: geminiFamily,
};
