import type { StreamPart } from '../../core/canonical.js';
import { upstreamMalformed, upstreamStreamError } from '../shared/errors.js';
import { asRecord, asString, nestedErrorMessage, parseEventData } from '../shared/json.js';
import type { SseEvent } from '../shared/sse-parser.js';
import type { StreamDecoder, TranslationContext } from '../types.js';
import { mapResponsesUsage, responsesFinish } from './responses-native.js';

/**
 * A native responses stream (responses-native.ts) → every event as a `native` part, relayed as
 * it is by the responses ingress, plus the canonical parts the gateway meters and holds on:
 * text (output text and refusals), function and custom tool calls, reasoning (summary or
 * text), and the usage and finish of `response.completed`/`.incomplete`. `response.failed` and
 * `error` events are upstream failures (retried before the first content, like any other).
 */
export function createResponsesStreamDecoder(provider: string, context: TranslationContext): StreamDecoder {
  /** Canonical tool-call index of each call item, by its output_index. */
  const calls = new Map<number, number>();
  let reasoningOpen = false;
  let terminal = false;
  let responseId: string | undefined;

  const callStart = (item: Record<string, unknown>, outputIndex: number, parts: StreamPart[]): void => {
    const index = calls.size;
    calls.set(outputIndex, index);
    parts.push({ type: 'tool-call-start', index, id: asString(item.call_id) ?? context.newToolCallId(), name: asString(item.name) ?? '' });
    const args = asString(item.arguments) ?? asString(item.input);
    if (args) parts.push({ type: 'tool-call-delta', index, argumentsDelta: args });
  };

  return {
    get responseId() {
      return responseId;
    },
    push(event: SseEvent): StreamPart[] {
      if (event.data === '[DONE]') return [];
      const root = asRecord(parseEventData(provider, event.data));
      if (!root) throw upstreamMalformed(provider, 'a stream event that is not a JSON object');
      const type = asString(root.type) ?? event.event;
      if (type === 'error') throw upstreamStreamError(provider, asString(root.message) ?? nestedErrorMessage(root));
      if (type === 'response.failed') throw upstreamStreamError(provider, nestedErrorMessage(root.response) ?? 'the response failed');
      const parts: StreamPart[] = [{ type: 'native', event: root }];
      responseId ??= asString(asRecord(root.response)?.id);
      const outputIndex = typeof root.output_index === 'number' ? root.output_index : -1;
      const delta = asString(root.delta);
      switch (type) {
        case 'response.output_text.delta':
        case 'response.refusal.delta':
          if (delta) parts.push({ type: 'text-delta', text: delta });
          break;
        case 'response.reasoning_summary_text.delta':
        case 'response.reasoning_text.delta':
          if (delta) {
            reasoningOpen = true;
            parts.push({ type: 'reasoning-delta', family: 'openai', text: delta });
          }
          break;
        case 'response.output_item.added': {
          const item = asRecord(root.item) ?? {};
          if (item.type === 'function_call' || item.type === 'custom_tool_call') callStart(item, outputIndex, parts);
          break;
        }
        case 'response.output_item.done':
          if (asRecord(root.item)?.type === 'reasoning' && reasoningOpen) {
            reasoningOpen = false;
            parts.push({ type: 'reasoning-end', family: 'openai' });
          }
          break;
        case 'response.function_call_arguments.delta':
        case 'response.custom_tool_call_input.delta': {
          const index = calls.get(outputIndex);
          if (index !== undefined && delta) parts.push({ type: 'tool-call-delta', index, argumentsDelta: delta });
          break;
        }
        case 'response.completed':
        case 'response.incomplete': {
          terminal = true;
          const response = asRecord(root.response) ?? {};
          const usage = asRecord(response.usage);
          if (usage) parts.push({ type: 'usage', usage: mapResponsesUsage(usage) });
          parts.push({ type: 'finish', finishReason: responsesFinish(response, calls.size > 0) });
          break;
        }
      }
      return parts;
    },
    end(): StreamPart[] {
      // A stream cut short (no response.completed) is a failure, not a short answer.
      if (!terminal) throw upstreamMalformed(provider, 'a stream that ended before its last event');
      return [];
    },
  };
}
