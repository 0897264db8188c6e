import type { ProviderFamily } from '../types.js';
import { nestedErrorMessage } from '../shared/json.js';
import { buildOpenAiChatRequest } from './convert-request.js';
import { parseOpenAiChatResponse } from './parse-response.js';
import { createOpenAiStreamDecoder } from './stream.js';

/** OpenAI and every OpenAI-compatible vendor (groq, mistral, deepseek, ollama, vllm, ...). */
export const openAiFamily: ProviderFamily = {
  fetchesImageUrls: true,
  promptTokenMargin: { ratio: 1.25, toolsOverhead: 200 }, // PROVISIONAL
  buildChatRequest: buildOpenAiChatRequest,
  parseChatResponse: (body, _request, context) => parseOpenAiChatResponse(body, context),
  createStreamDecoder: (_request, provider, context) => createOpenAiStreamDecoder(provider.name, context),
  errorMessage: nestedErrorMessage,
};
