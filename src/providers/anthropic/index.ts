import type { ProviderFamily } from '../types.js';
import { nestedErrorMessage } from '../shared/json.js';
import { buildAnthropicRequest } from './convert-request.js';
import { parseAnthropicResponse } from './parse-response.js';
import { createAnthropicStreamDecoder } from './stream.js';

/** Anthropic Messages API (docs.anthropic.com/en/api/messages). */
export const anthropicFamily: ProviderFamily = {
  fetchesImageUrls: true,
  /**
   * Claude 3 and later tokenizers are not published. The legacy Claude tokenizer
   * (@anthropic-ai/tokenizer) counts a median 1.06 and p95 1.27 times cl100k on 97 samples of
   * natural text and code (max 1.81, on Thai); published comparisons of Claude 3.5 Sonnet with
   * GPT-4o (whose o200k counts as cl100k on such text) found 16% more tokens on English, 21% on
   * math and 30% on Python. 1.35 covers those with headroom; a prompt that tokenizes worse
   * (some non-Latin scripts) can cost more than its hold, which is then charged, and the rest
   * kept on its usage row (settlement.ts). Digits are grouped as cl100k does.
   * Tools: Anthropic adds a tool-use system prompt of its own, at most 530 tokens in its table
   * (Claude 3 Opus, tool_choice auto; docs.anthropic.com, "Tool use: pricing and tokens").
   */
  promptTokenMargin: { ratio: 1.35, splitDigits: false, toolsOverhead: 600 },
  buildChatRequest: buildAnthropicRequest,
  parseChatResponse: (body, request) => parseAnthropicResponse(body, request),
  createStreamDecoder: (request, provider) => createAnthropicStreamDecoder(provider.name, request),
  errorMessage: nestedErrorMessage,
};
