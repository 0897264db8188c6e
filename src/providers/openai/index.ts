import type { ProviderFamily } from '../types.js';
import { nestedErrorMessage } from '../shared/json.js';
import { buildOpenAiChatRequest } from './convert-request.js';
import { parseOpenAiChatResponse } from './parse-response.js';
import { buildResponsesRequest, goesNative, isResponseObject, parseResponsesResponse } from './responses-native.js';
import { createResponsesStreamDecoder } from './responses-stream.js';
import { createOpenAiStreamDecoder } from './stream.js';

/**
 * OpenAI and every OpenAI-compatible vendor (groq, mistral, deepseek, ollama, vllm, ...): chat
 * completions, or, for a responses-format call to a provider marked `responses: true`, its own
 * `/v1/responses` (responses-native.ts; the answer of such a call is a Response object).
 */
export const openAiFamily: ProviderFamily = {
  fetchesImageUrls: true,
  /**
   * Measured against cl100k on 97 samples of natural text and code (prose, TS/JS, Python, C,
   * SQL, YAML, JSON, markup, CSV, ids, emoji, 15 languages; the tokenizers from npm, counts in
   * the note of issue 11): o200k (GPT-4o, 4.1, 5, o-series, gpt-oss) counts at most 1.05 times
   * cl100k (median 0.99), Llama 3 1.00, DeepSeek V3 at most 1.12 (p95 1.10). 1.15 covers them all.
   * Vendors whose tokenizer splits digits or counts more (Mistral, Qwen) override it per
   * provider (`providers.<name>.tokenizer`; the default config does so for mistral).
   * Tools: OpenAI renders function schemas in its own compact form, shorter than their JSON
   * counted here, plus a few dozen tokens of preamble.
   */
  promptTokenMargin: { ratio: 1.15, splitDigits: false, toolsOverhead: 100 },
  buildChatRequest: (request, provider) => (goesNative(request, provider) ? buildResponsesRequest(request, provider) : buildOpenAiChatRequest(request, provider)),
  parseChatResponse: (body, request, context) => (request.native && isResponseObject(body) ? parseResponsesResponse(body, context) : parseOpenAiChatResponse(body, context)),
  createStreamDecoder: (request, provider, context) => (goesNative(request, provider) ? createResponsesStreamDecoder(provider.name, context) : createOpenAiStreamDecoder(provider.name, context)),
  errorMessage: nestedErrorMessage,
};
