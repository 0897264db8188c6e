import type { StreamPart, Usage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import { upstreamHttpError, upstreamMalformed, upstreamStreamError } from '../shared/errors.js';
import { asRecord, asString, parseEventData } from '../shared/json.js';
import type { SseEvent } from '../shared/sse-parser.js';
import type { StreamDecoder } from '../types.js';
import { mapStopReason, readConverseUsage } from './parse-response.js';

/**
 * ConverseStream events (frames decoded by eventstream.ts) → canonical parts: `messageStart`,
 * then per content block `contentBlockStart` (tool use only), `contentBlockDelta`s (text, a
 * tool's input JSON in pieces, reasoning text and its signature) and `contentBlockStop`, then
 * `messageStop` with the stop reason, and after it `metadata` with the usage. An exception
 * (`throttlingException`, `modelStreamErrorException`, …) arrives as a frame of its own type.
 * Each event's padding field `p` is ignored.
 */
export function createConverseStreamDecoder(provider: string): StreamDecoder {
  const tools = new Map<number, number>();
  const thinking = new Map<number, { signature?: string }>();
  let toolCount = 0;
  let stopReason: string | undefined;
  let usage: Usage | undefined;

  return {
    push(event: SseEvent): StreamPart[] {
      const name = event.event ?? '';
      const data = asRecord(parseEventData(provider, event.data));
      if (name === 'error' || name.endsWith('Exception') || name === 'exception') throw streamException(provider, name, asString(data?.message));
      const index = typeof data?.contentBlockIndex === 'number' ? data.contentBlockIndex : 0;
      switch (name) {
        case 'contentBlockStart': {
          const toolUse = asRecord(asRecord(data?.start)?.toolUse);
          if (!toolUse) return [];
          const toolIndex = toolCount++;
          tools.set(index, toolIndex);
          return [{ type: 'tool-call-start', index: toolIndex, id: asString(toolUse.toolUseId) ?? '', name: asString(toolUse.name) ?? '' }];
        }
        case 'contentBlockDelta': {
          const delta = asRecord(data?.delta);
          if (!delta) return [];
          if (typeof delta.text === 'string') return delta.text === '' ? [] : [{ type: 'text-delta', text: delta.text }];
          const toolUse = asRecord(delta.toolUse);
          if (toolUse) {
            const toolIndex = tools.get(index);
            if (toolIndex === undefined) throw upstreamMalformed(provider, 'a tool input delta for a block that did not start as a tool use');
            const input = asString(toolUse.input) ?? '';
            return input === '' ? [] : [{ type: 'tool-call-delta', index: toolIndex, argumentsDelta: input }];
          }
          const thought = asRecord(delta.reasoningContent);
          if (thought) {
            const block = thinking.get(index) ?? {};
            thinking.set(index, block);
            if (typeof thought.signature === 'string') block.signature = thought.signature;
            if (typeof thought.redactedContent === 'string') {
              thinking.delete(index);
              return [{ type: 'reasoning-end', family: 'anthropic', redacted: thought.redactedContent }];
            }
            if (typeof thought.text === 'string' && thought.text !== '') return [{ type: 'reasoning-delta', family: 'anthropic', text: thought.text }];
          }
          return [];
        }
        case 'contentBlockStop': {
          const block = thinking.get(index);
          if (!block) return [];
          thinking.delete(index);
          return [{ type: 'reasoning-end', family: 'anthropic', ...(block.signature !== undefined ? { signature: block.signature } : {}) }];
        }
        case 'messageStop':
          stopReason = asString(data?.stopReason) ?? 'end_turn';
          return [];
        case 'metadata':
          usage = readConverseUsage(data?.usage) ?? usage;
          return [];
        default:
          // messageStart, and events Bedrock may add.
          return [];
      }
    },
    end(): StreamPart[] {
      if (stopReason === undefined) throw upstreamMalformed(provider, 'a stream that ended before its messageStop');
      const parts: StreamPart[] = [];
      if (usage) parts.push({ type: 'usage', usage });
      parts.push({ type: 'finish', finishReason: mapStopReason(stopReason, toolCount > 0) });
      return parts;
    },
  };
}

/** The HTTP status AWS gives each exception when it is not inside a stream. */
const EXCEPTION_STATUS: Readonly<Record<string, number>> = {
  validationException: 400,
  throttlingException: 429,
  serviceUnavailableException: 503,
  modelNotReadyException: 429,
  modelTimeoutException: 408,
};

/**
 * An exception frame as the error it is: a validationException is the client's request (400,
 * not retried elsewhere), throttling a 429, an unavailable model a 503, as AWS's HTTP answers
 * are (shared/errors.ts); a failure of the model mid-answer a stream error.
 */
function streamException(provider: string, name: string, message: string | undefined): GatewayError {
  const status = EXCEPTION_STATUS[name];
  if (status === undefined) return upstreamStreamError(provider, `${name}${message ? `: ${message}` : ''}`);
  const errorType = `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
  return upstreamHttpError(provider, { status, message, body: { message }, retryAfterMs: undefined, errorType });
}
