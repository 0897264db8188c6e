import type { FinishReason, StreamPart } from '../../core/canonical.js';
import { upstreamMalformed, upstreamStreamError } from '../shared/errors.js';
import { asArray, asRecord, asString, nestedErrorMessage, parseEventData } from '../shared/json.js';
import type { SseEvent } from '../shared/sse-parser.js';
import type { StreamDecoder, TranslationContext } from '../types.js';
import { mapOpenAiFinishReason, mapOpenAiUsage } from './parse-response.js';

/**
 * OpenAI chat completion chunks → canonical parts. The finish reason arrives before the
 * usage chunk, so `finish` is emitted at the end of the stream.
 */
export function createOpenAiStreamDecoder(provider: string, context: TranslationContext): StreamDecoder {
  let finish: string | undefined;
  const started = new Set<number>();
  /**
   * A call's start is held until its first argument fragment: some OpenAI-compatible servers
   * send every call's header first and the arguments after, and the canonical stream (like
   * the Messages and Responses wires) has each call's arguments follow its own start.
   */
  const pending = new Map<number, StreamPart>();
  const release = (index: number): StreamPart[] => {
    const start = pending.get(index);
    if (!start) return [];
    pending.delete(index);
    started.add(index);
    return [start];
  };
  let sawToolCall = false;
  let done = false;
  let responseId: string | undefined;

  return {
    get responseId() {
      return responseId;
    },
    push(event: SseEvent): StreamPart[] {
      if (event.data === '[DONE]') {
        done = true;
        return [];
      }
      const chunk = parseEventData(provider, event.data);
      const root = asRecord(chunk);
      if (!root) throw upstreamMalformed(provider, 'a stream event that is not a JSON object');
      responseId ??= asString(root.id);
      if (root.error !== undefined || event.event === 'error') throw upstreamStreamError(provider, nestedErrorMessage(root));
      const parts: StreamPart[] = [];
      const choice = asRecord(asArray(root.choices)[0]);
      if (choice) {
        const delta = asRecord(choice.delta) ?? {};
        // Reasoning text beside the answer: DeepSeek's and vLLM's `reasoning_content`, OpenRouter's `reasoning`.
        const thought = asString(delta.reasoning_content) ?? asString(delta.reasoning);
        if (thought) parts.push({ type: 'reasoning-delta', family: 'openai', text: thought });
        const text = asString(delta.content);
        if (text) parts.push({ type: 'text-delta', text });
        for (const raw of asArray(delta.tool_calls)) {
          const call = asRecord(raw) ?? {};
          const index = typeof call.index === 'number' ? call.index : 0;
          const fn = asRecord(call.function) ?? {};
          if (!started.has(index) && !pending.has(index)) {
            sawToolCall = true;
            pending.set(index, { type: 'tool-call-start', index, id: asString(call.id) ?? context.newToolCallId(), name: asString(fn.name) ?? '' });
          }
          const args = asString(fn.arguments);
          if (args) {
            parts.push(...release(index));
            parts.push({ type: 'tool-call-delta', index, argumentsDelta: args });
          }
        }
        const reason = asString(choice.finish_reason);
        if (reason) finish = reason;
      }
      const usage = asRecord(root.usage);
      if (usage) parts.push({ type: 'usage', usage: mapOpenAiUsage(usage) });
      return parts;
    },
    end(): StreamPart[] {
      // A stream cut short (no finish_reason, no [DONE]) is a failure, not a short answer.
      if (!done && finish === undefined) throw upstreamMalformed(provider, 'a stream that ended before its last chunk');
      const reason: FinishReason = mapOpenAiFinishReason(finish, sawToolCall);
      // Calls without arguments start here, in index order.
      const held = [...pending.keys()].sort((a, b) => a - b).flatMap(release);
      return [...held, { type: 'finish', finishReason: reason }];
    },
  };
}
