import type { PromptTokenMargin } from '../../core/tokens.js';
import type { ProviderFamily } from '../types.js';
import { nestedErrorMessage } from '../shared/json.js';
import { buildConverseRequest, isClaude } from './convert-request.js';
import { createEventStreamParser } from './eventstream.js';
import { parseConverseResponse } from './parse-response.js';
import { createConverseStreamDecoder } from './stream.js';

function converse(promptTokenMargin: PromptTokenMargin): ProviderFamily {
  return {
    // Converse takes image bytes only.
    fetchesImageUrls: false,
    promptTokenMargin,
    buildChatRequest: buildConverseRequest,
    parseChatResponse: (body, _request, _context) => parseConverseResponse('bedrock', body),
    createStreamDecoder: (_request, provider) => createConverseStreamDecoder(provider.name),
    createFrameParser: (provider) => createEventStreamParser(provider.name),
    // Bedrock's error bodies are `{"message": "..."}` (the name is in x-amzn-errortype).
    errorMessage: nestedErrorMessage,
  };
}

/**
 * AWS Bedrock's Converse API: one shape for every Bedrock chat model (Claude, Llama, Mistral,
 * Nova, …). One wire, but each vendor's tokenizer: Claude's margin is Anthropic's
 * (anthropic/index.ts), Mistral's splits digits, Llama 3's counts as cl100k, and Nova's
 * (unpublished) is given the OpenAI family's 1.15.
 */
export const bedrockFamily = converse({ ratio: 1.35, splitDigits: false, toolsOverhead: 600 });
const bedrockMistral = converse({ ratio: 1.15, splitDigits: true, toolsOverhead: 100 });
const bedrockOther = converse({ ratio: 1.15, splitDigits: false, toolsOverhead: 100 });

/** The family (and so the prompt margin) for a model on Bedrock. */
export function bedrockFamilyFor(upstreamModel: string): ProviderFamily {
  if (isClaude(upstreamModel)) return bedrockFamily;
  return /mistral|pixtral/i.test(upstreamModel) ? bedrockMistral : bedrockOther;
}
