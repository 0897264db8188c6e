import type { ProviderFamily } from '../types.js';
import { nestedErrorMessage } from '../shared/json.js';
import { buildAnthropicRequest } from './convert-request.js';
import { parseAnthropicResponse } from './parse-response.js';
import { createAnthropicStreamDecoder } from './stream.js';

/** Anthropic Messages API (docs.anthropic.com/en/api/messages). */
export const anthropicFamily: ProviderFamily = {
  fetchesImageUrls: true,
  promptTokenMargin: { ratio: 1.35, toolsOverhead: 500 }, // PROVISIONAL
  buildChatRequest: buildAnthropicRequest,
  parseChatResponse: (body, request) => parseAnthropicResponse(body, request),
  createStreamDecoder: (request, provider) => createAnthropicStreamDecoder(provider.name, request),
  errorMessage: nestedErrorMessage,
};
