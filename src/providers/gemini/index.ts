import type { ProviderFamily } from '../types.js';
import { nestedErrorMessage } from '../shared/json.js';
import { buildGeminiRequest } from './convert-request.js';
import { parseGeminiResponse } from './parse-response.js';
import { createGeminiStreamDecoder } from './stream.js';

/** Google Gemini generateContent (ai.google.dev/api/generate-content). */
export const geminiFamily: ProviderFamily = {
  // Gemini reads only its own file URIs, not arbitrary http(s) image URLs.
  fetchesImageUrls: false,
  promptTokenMargin: { ratio: 1.25, toolsOverhead: 200 }, // PROVISIONAL
  buildChatRequest: buildGeminiRequest,
  parseChatResponse: (body, _request, context) => parseGeminiResponse(body, context),
  createStreamDecoder: (_request, provider, context) => createGeminiStreamDecoder(provider.name, context),
  errorMessage: nestedErrorMessage,
};
