import type { ProviderConfig } from '../../config/types.js';
import type { ChatRequest, ChatResult, FinishReason, ReasoningBlock, ToolCall, Usage } from '../../core/canonical.js';
import { providerHeaders } from '../shared/headers.js';
import { asArray, asNumber, asRecord, asString, type JsonRecord } from '../shared/json.js';
import type { TranslationContext, UpstreamRequest } from '../types.js';
import { openAiHeaders } from './convert-request.js';

/**
 * The responses format forwarded natively: a provider marked `responses: true` (OpenAI itself)
 * gets the client's own `/v1/responses` body, so hosted tools (web_search, file_search,
 * code_interpreter, image_generation, local_shell), reasoning items and their
 * `encrypted_content` work end to end. The gateway sets only what it owns per attempt (the
 * upstream model, the output limit its hold covers, streaming) and keeps no state upstream
 * (`store: false` unless the client asked otherwise). The answer is the upstream's own
 * (`ChatResult.native`), read here only for what billing needs.
 */

/** Whether this attempt goes natively: a responses-format call to a provider that takes it. */
export function goesNative(request: ChatRequest, provider: ProviderConfig): boolean {
  return request.native?.format === 'responses' && provider.responses === true;
}

export function buildResponsesRequest(request: ChatRequest, provider: ProviderConfig): UpstreamRequest {
  const body: JsonRecord = { ...request.native?.body, model: request.upstreamModel, max_output_tokens: request.maxTokens, stream: request.stream };
  if (body.store === undefined || body.store === null) body.store = false;
  return { url: `${provider.baseUrl}/responses`, headers: providerHeaders(provider, openAiHeaders), body, ignoredParams: [], native: true };
}

/** Whether an upstream answer is a Response object (not a chat completion). */
export function isResponseObject(body: unknown): boolean {
  return asRecord(body)?.object === 'response';
}

/** A Response object → canonical result carrying the object itself in `native`. */
export function parseResponsesResponse(body: unknown, context: TranslationContext): ChatResult {
  const root = asRecord(body) ?? {};
  let text = '';
  const toolCalls: ToolCall[] = [];
  const reasoning: ReasoningBlock[] = [];
  for (const raw of asArray(root.output)) {
    const item = asRecord(raw) ?? {};
    switch (item.type) {
      case 'message':
        for (const part of asArray(item.content)) {
          const content = asRecord(part) ?? {};
          text += asString(content.text) ?? asString(content.refusal) ?? '';
        }
        break;
      case 'function_call':
      case 'custom_tool_call':
        toolCalls.push({ id: asString(item.call_id) ?? context.newToolCallId(), name: asString(item.name) ?? '', arguments: asString(item.arguments) ?? asString(item.input) ?? '' });
        break;
      case 'reasoning': {
        const summary = asArray(item.summary).map((part) => asString(asRecord(part)?.text) ?? '').join('\n\n');
        if (summary !== '') reasoning.push({ family: 'openai', text: summary });
        break;
      }
    }
  }
  const result: ChatResult = { text, toolCalls, finishReason: responsesFinish(root, toolCalls.length > 0), native: root };
  if (reasoning.length > 0) result.reasoning = reasoning;
  const id = asString(root.id);
  if (id !== undefined) result.id = id;
  const usage = asRecord(root.usage);
  if (usage) result.usage = mapResponsesUsage(usage);
  return result;
}

/** A Response's status → canonical finish: `incomplete` says why; otherwise calls or a stop. */
export function responsesFinish(response: JsonRecord, sawToolCall: boolean): FinishReason {
  if (response.status === 'incomplete') return asRecord(response.incomplete_details)?.reason === 'content_filter' ? 'content_filter' : 'length';
  return sawToolCall ? 'tool_calls' : 'stop';
}

/** `input_tokens` counts the cached ones too, as the canonical `inputTokens` does; `output_tokens` the reasoning ones. */
export function mapResponsesUsage(usage: JsonRecord): Usage {
  const input = asRecord(usage.input_tokens_details) ?? {};
  const output = asRecord(usage.output_tokens_details) ?? {};
  return {
    inputTokens: asNumber(usage.input_tokens),
    outputTokens: asNumber(usage.output_tokens),
    cacheReadTokens: asNumber(input.cached_tokens),
    cacheWriteTokens: 0,
    reasoningTokens: asNumber(output.reasoning_tokens),
  };
}
