import type { ChatRequest, StreamPart, Usage } from '../../core/canonical.js';
import { upstreamMalformed, upstreamStreamError } from '../shared/errors.js';
import { asNumber, asRecord, asString, nestedErrorMessage, parseEventData } from '../shared/json.js';
import type { SseEvent } from '../shared/sse-parser.js';
import type { StreamDecoder } from '../types.js';
import { mapAnthropicStopReason, mapAnthropicUsage, usesJsonTool } from './parse-response.js';
import { JSON_TOOL_NAME } from './wire.js';

/**
 * Anthropic stream events → canonical parts. Input usage arrives in message_start, output in
 * message_delta (cumulative); both are merged and reported at the end. Content block indices
 * count every block; tool-call indices count only tool calls.
 */
export function createAnthropicStreamDecoder(provider: string, request: ChatRequest): StreamDecoder {
  const jsonTool = usesJsonTool(request);
  let usage: Usage | undefined;
  let stopReason: string | undefined;
  let stopSequence: string | undefined;
  let toolCount = 0;
  let stopped = false;
  let responseId: string | undefined;
  /** content block index → what its deltas are. */
  const blocks = new Map<number, { kind: 'text' } | { kind: 'tool'; toolIndex: number } | { kind: 'json' } | { kind: 'thinking'; signature?: string } | { kind: 'other' }>();

  return {
    get responseId() {
      return responseId;
    },
    push(event: SseEvent): StreamPart[] {
      const data = parseEventData(provider, event.data);
      const root = asRecord(data) ?? {};
      const type = asString(root.type) ?? event.event;
      switch (type) {
        case 'message_start': {
          const message = asRecord(root.message) ?? {};
          responseId = asString(message.id);
          const raw = asRecord(message.usage);
          if (!raw) return [];
          usage = mapAnthropicUsage(raw);
          // The prompt's figures, before any content: the messages format states them in its own message_start.
          return [{ type: 'prompt-usage', usage }];
        }
        case 'content_block_start': {
          const index = asNumber(root.index);
          const block = asRecord(root.content_block) ?? {};
          if (block.type === 'text') {
            blocks.set(index, { kind: 'text' });
            const text = asString(block.text);
            return text ? [{ type: 'text-delta', text }] : [];
          }
          if (block.type === 'tool_use') {
            if (jsonTool && block.name === JSON_TOOL_NAME) {
              blocks.set(index, { kind: 'json' });
              return [];
            }
            const toolIndex = toolCount++;
            blocks.set(index, { kind: 'tool', toolIndex });
            return [{ type: 'tool-call-start', index: toolIndex, id: asString(block.id) ?? '', name: asString(block.name) ?? '' }];
          }
          if (block.type === 'thinking') {
            blocks.set(index, { kind: 'thinking' });
            const thinking = asString(block.thinking);
            return thinking ? [{ type: 'reasoning-delta', family: 'anthropic', text: thinking }] : [];
          }
          if (block.type === 'redacted_thinking') {
            blocks.set(index, { kind: 'other' });
            return [{ type: 'reasoning-end', family: 'anthropic', redacted: asString(block.data) ?? '' }];
          }
          blocks.set(index, { kind: 'other' });
          return [];
        }
        case 'content_block_stop': {
          const block = blocks.get(asNumber(root.index));
          if (block?.kind !== 'thinking') return [];
          const end: StreamPart = { type: 'reasoning-end', family: 'anthropic' };
          if (block.signature !== undefined) end.signature = block.signature;
          return [end];
        }
        case 'content_block_delta': {
          const block = blocks.get(asNumber(root.index));
          const delta = asRecord(root.delta) ?? {};
          if (delta.type === 'text_delta' && block?.kind === 'text') {
            const text = asString(delta.text);
            return text ? [{ type: 'text-delta', text }] : [];
          }
          if (delta.type === 'thinking_delta' && block?.kind === 'thinking') {
            const thinking = asString(delta.thinking);
            return thinking ? [{ type: 'reasoning-delta', family: 'anthropic', text: thinking }] : [];
          }
          if (delta.type === 'signature_delta' && block?.kind === 'thinking') {
            block.signature = (block.signature ?? '') + (asString(delta.signature) ?? '');
            return [];
          }
          if (delta.type === 'input_json_delta') {
            const json = asString(delta.partial_json);
            if (!json) return [];
            if (block?.kind === 'json') return [{ type: 'text-delta', text: json }];
            if (block?.kind === 'tool') return [{ type: 'tool-call-delta', index: block.toolIndex, argumentsDelta: json }];
          }
          return [];
        }
        case 'message_delta': {
          const delta = asRecord(root.delta) ?? {};
          stopReason = asString(delta.stop_reason) ?? stopReason;
          stopSequence = asString(delta.stop_sequence) ?? stopSequence;
          const raw = asRecord(root.usage);
          if (raw) {
            // Cumulative counts; fields absent here keep their message_start values.
            const base = usage ?? { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
            const merged = { ...raw };
            if (merged.input_tokens === undefined || merged.input_tokens === null) merged.input_tokens = base.inputTokens - base.cacheReadTokens - base.cacheWriteTokens;
            if (merged.cache_read_input_tokens === undefined || merged.cache_read_input_tokens === null) merged.cache_read_input_tokens = base.cacheReadTokens;
            if (merged.cache_creation_input_tokens === undefined || merged.cache_creation_input_tokens === null) merged.cache_creation_input_tokens = base.cacheWriteTokens;
            if ((merged.cache_creation === undefined || merged.cache_creation === null) && base.cacheWrite1hTokens) merged.cache_creation = { ephemeral_1h_input_tokens: base.cacheWrite1hTokens };
            usage = mapAnthropicUsage(merged);
          }
          return [];
        }
        case 'message_stop':
          stopped = true;
          return [];
        case 'error':
          throw upstreamStreamError(provider, nestedErrorMessage(root));
        default:
          return [];
      }
    },
    end(): StreamPart[] {
      if (!stopped) throw upstreamMalformed(provider, 'a stream that ended before message_stop');
      const parts: StreamPart[] = [];
      if (usage) parts.push({ type: 'usage', usage });
      const finish: StreamPart = { type: 'finish', finishReason: mapAnthropicStopReason(stopReason, toolCount > 0) };
      if (stopSequence !== undefined) finish.stopSequence = stopSequence;
      parts.push(finish);
      return parts;
    },
  };
}
