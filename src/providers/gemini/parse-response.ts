import type { ChatResult, FinishReason, ToolCall, Usage } from '../../core/canonical.js';
import { asArray, asNumber, asRecord, asString, type JsonRecord } from '../shared/json.js';
import type { TranslationContext } from '../types.js';

/** What one GenerateContentResponse (a whole answer or a stream chunk) holds. */
export interface GeminiChunk {
  text: string;
  /** Thought summaries (parts marked `thought`), when the request asked for them. */
  thoughts: string;
  toolCalls: ToolCall[];
  finishReason?: string;
  blocked: boolean;
  usage?: Usage;
  responseId?: string;
}

/** Reads the first candidate; thought parts are the model's reasoning and are not answer text. */
export function readGeminiChunk(body: unknown, context: TranslationContext): GeminiChunk {
  const root = asRecord(body) ?? {};
  const candidate = asRecord(asArray(root.candidates)[0]);
  const chunk: GeminiChunk = { text: '', thoughts: '', toolCalls: [], blocked: false };
  for (const raw of asArray(asRecord(candidate?.content)?.parts)) {
    const part = asRecord(raw) ?? {};
    const fn = asRecord(part.functionCall);
    if (fn) {
      // Gemini rarely names calls; the gateway gives each one an id of its own.
      chunk.toolCalls.push({ id: asString(fn.id) ?? context.newToolCallId(), name: asString(fn.name) ?? '', arguments: JSON.stringify(fn.args ?? {}) });
    } else if (typeof part.text === 'string') {
      if (part.thought === true) chunk.thoughts += part.text;
      else chunk.text += part.text;
    }
  }
  const finish = asString(candidate?.finishReason);
  if (finish !== undefined) chunk.finishReason = finish;
  // A blocked prompt has no candidates, only promptFeedback.blockReason.
  if (!candidate && asString(asRecord(root.promptFeedback)?.blockReason)) chunk.blocked = true;
  const usage = asRecord(root.usageMetadata);
  if (usage) chunk.usage = mapGeminiUsage(usage);
  const id = asString(root.responseId);
  if (id !== undefined) chunk.responseId = id;
  return chunk;
}

export function parseGeminiResponse(body: unknown, context: TranslationContext): ChatResult {
  const chunk = readGeminiChunk(body, context);
  const result: ChatResult = {
    text: chunk.text,
    toolCalls: chunk.toolCalls,
    finishReason: chunk.blocked ? 'content_filter' : mapGeminiFinishReason(chunk.finishReason, chunk.toolCalls.length > 0),
  };
  if (chunk.usage) result.usage = chunk.usage;
  if (chunk.responseId) result.id = chunk.responseId;
  if (chunk.thoughts) result.reasoning = [{ family: 'gemini', text: chunk.thoughts }];
  return result;
}

/** Gemini ends function calls with STOP: a call made means tool_calls (pitfall: LiteLLM #10485). */
export function mapGeminiFinishReason(reason: string | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
    case 'IMAGE_PROHIBITED_CONTENT':
      return 'content_filter';
    default:
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}

/** candidatesTokenCount excludes thinking tokens; the bill includes them (pitfall: Portkey #1458). */
export function mapGeminiUsage(usage: JsonRecord): Usage {
  const thoughts = asNumber(usage.thoughtsTokenCount);
  return {
    inputTokens: asNumber(usage.promptTokenCount) + asNumber(usage.toolUsePromptTokenCount),
    outputTokens: asNumber(usage.candidatesTokenCount) + thoughts,
    cacheReadTokens: asNumber(usage.cachedContentTokenCount),
    cacheWriteTokens: 0,
    reasoningTokens: thoughts,
  };
}
