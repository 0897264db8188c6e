import type { StreamPart, Usage } from '../../core/canonical.js';
import { upstreamMalformed, upstreamStreamError } from '../shared/errors.js';
import { asRecord, nestedErrorMessage, parseEventData } from '../shared/json.js';
import type { SseEvent } from '../shared/sse-parser.js';
import type { StreamDecoder, TranslationContext } from '../types.js';
import { mapGeminiFinishReason, readGeminiChunk } from './parse-response.js';

/**
 * Gemini `alt=sse` chunks → canonical parts. Each chunk holds only new parts; function calls
 * arrive whole, each with its own tool index for the whole stream (pitfall: LiteLLM #11558);
 * the last usageMetadata wins. The stream has no terminator: it ends after the finishReason.
 */
export function createGeminiStreamDecoder(provider: string, context: TranslationContext): StreamDecoder {
  let toolCount = 0;
  let finishReason: string | undefined;
  let blocked = false;
  let usage: Usage | undefined;
  let responseId: string | undefined;

  return {
    get responseId() {
      return responseId;
    },
    push(event: SseEvent): StreamPart[] {
      const data = parseEventData(provider, event.data);
      if (asRecord(data)?.error !== undefined) throw upstreamStreamError(provider, nestedErrorMessage(data));
      const chunk = readGeminiChunk(data, context);
      responseId ??= chunk.responseId;
      const parts: StreamPart[] = [];
      if (chunk.thoughts) parts.push({ type: 'reasoning-delta', family: 'gemini', text: chunk.thoughts });
      if (chunk.text) parts.push({ type: 'text-delta', text: chunk.text });
      for (const call of chunk.toolCalls) {
        const index = toolCount++;
        parts.push({ type: 'tool-call-start', index, id: call.id, name: call.name });
        parts.push({ type: 'tool-call-delta', index, argumentsDelta: call.arguments });
      }
      if (chunk.finishReason) finishReason = chunk.finishReason;
      if (chunk.blocked) blocked = true;
      if (chunk.usage) usage = chunk.usage;
      return parts;
    },
    end(): StreamPart[] {
      if (finishReason === undefined && !blocked) throw upstreamMalformed(provider, 'a stream that ended before its finishReason');
      const parts: StreamPart[] = [];
      if (usage) parts.push({ type: 'usage', usage });
      parts.push({ type: 'finish', finishReason: blocked ? 'content_filter' : mapGeminiFinishReason(finishReason, toolCount > 0) });
      return parts;
    },
  };
}
