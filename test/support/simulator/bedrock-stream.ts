import { randomInt } from 'node:crypto';
import { eventMessage, exceptionMessage } from './eventstream.js';
import { chunkText, type CanonicalFinish, type Reply, type ResolvedUsage, type SimEvent, type StreamPlan } from './scenario.js';
import { signThinking } from './thinking.js';

/**
 * Bedrock Converse answers: the JSON response and the ConverseStream event stream.
 *
 * Usage: Bedrock's `inputTokens` leaves the cached tokens out (as Anthropic's `input_tokens`):
 * inputTokens = input - cacheRead - cacheWrite; `cacheReadInputTokens` / `cacheWriteInputTokens`
 * appear when either is non-zero; totalTokens = inputTokens + outputTokens + both cache counts.
 * Bedrock always reports usage: a scenario's 'omit' gives zeros.
 *
 * Stream: each event is one event-stream message (eventstream.ts) with `:event-type`,
 * `:content-type: application/json`, `:message-type: event`, its JSON payload padded with a `"p"`
 * field of random length, as Bedrock pads them: messageStart; per block (reasoning, text, then
 * each tool use) an optional contentBlockStart (tool uses), contentBlockDelta pieces and a
 * contentBlockStop; messageStop with the stop reason; metadata with usage and metrics last.
 * Mid-stream errors are exception messages (`:message-type: exception`, `:exception-type`).
 */

export interface ConverseIds {
  toolUseIds: string[];
  /** The reasoning text, when the model thinks (Claude with thinking enabled). */
  thought: string | undefined;
}

export interface UsageWire {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

type ContentBlockWire =
  | { text: string }
  | { reasoningContent: { reasoningText: { text: string; signature: string } } }
  | { toolUse: { toolUseId: string; name: string; input: Record<string, unknown> } };

export interface ConverseResponseWire {
  output: { message: { role: 'assistant'; content: ContentBlockWire[] } };
  stopReason: string;
  usage: UsageWire;
}

const STOP_REASONS: Record<CanonicalFinish, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'content_filtered' };

export function stopReason(reply: Reply): string {
  return STOP_REASONS[reply.finish];
}

export function usageWire(usage: ResolvedUsage | null): UsageWire {
  if (!usage) return { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  const inputTokens = Math.max(0, usage.input - usage.cacheRead - usage.cacheWrite);
  const wire: UsageWire = { inputTokens, outputTokens: usage.output, totalTokens: inputTokens + usage.output + usage.cacheRead + usage.cacheWrite };
  if (usage.cacheRead > 0 || usage.cacheWrite > 0) {
    wire.cacheReadInputTokens = usage.cacheRead;
    wire.cacheWriteInputTokens = usage.cacheWrite;
  }
  return wire;
}

export function converseResponse(reply: Reply, ids: ConverseIds): ConverseResponseWire {
  const content: ContentBlockWire[] = [];
  if (ids.thought !== undefined) content.push({ reasoningContent: { reasoningText: { text: ids.thought, signature: signThinking(ids.thought) } } });
  if (reply.text !== '' || reply.toolCalls.length === 0) content.push({ text: reply.text });
  reply.toolCalls.forEach((call, i) => content.push({ toolUse: { toolUseId: ids.toolUseIds[i] ?? '', name: call.name, input: call.argumentsObject } }));
  return { output: { message: { role: 'assistant', content } }, stopReason: stopReason(reply), usage: usageWire(reply.usage) };
}

const PADDING = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Bedrock's padding: a `"p"` field of a random number of letters, on every event. */
function padded(payload: Record<string, unknown>): string {
  return JSON.stringify({ ...payload, p: PADDING.slice(0, 1 + randomInt(PADDING.length)) });
}

/** The exception types ConverseStream can send mid-stream. */
export const STREAM_EXCEPTIONS = ['internalServerException', 'modelStreamErrorException', 'validationException', 'throttlingException', 'serviceUnavailableException'];

/**
 * The exception sent for `errorAfterEvents`: modelStreamErrorException with the message, unless
 * the message starts with another stream exception's name (`throttlingException: Slow down`).
 */
export function streamException(message: string | undefined): SimEvent {
  const named = message ? /^(\w+Exception):\s*([\s\S]*)$/.exec(message) : null;
  if (named && STREAM_EXCEPTIONS.includes(named[1] ?? '')) return { event: named[1], data: JSON.stringify({ message: named[2] ?? '' }) };
  const text = message ?? 'The model encountered an error while streaming its response.';
  return { event: 'modelStreamErrorException', data: JSON.stringify({ message: text, originalStatusCode: 500, originalMessage: text }) };
}

export function converseStreamPlan(reply: Reply, ids: ConverseIds, latencyMs: number): StreamPlan<Buffer> {
  const events: SimEvent[] = [];
  const push = (event: string, payload: Record<string, unknown>): void => {
    events.push({ event, data: padded(payload) });
  };
  push('messageStart', { role: 'assistant' });
  let index = 0;
  if (ids.thought !== undefined) {
    for (const piece of chunkText(ids.thought, reply.chunkSize * 4)) push('contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { text: piece } } });
    push('contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { signature: signThinking(ids.thought) } } });
    push('contentBlockStop', { contentBlockIndex: index });
    index += 1;
  }
  if (reply.text !== '' || reply.toolCalls.length === 0) {
    const pieces = reply.text === '' ? [''] : chunkText(reply.text, reply.chunkSize);
    for (const piece of pieces) push('contentBlockDelta', { contentBlockIndex: index, delta: { text: piece } });
    push('contentBlockStop', { contentBlockIndex: index });
    index += 1;
  }
  reply.toolCalls.forEach((call, i) => {
    push('contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: ids.toolUseIds[i] ?? '', name: call.name } } });
    for (const piece of chunkText(JSON.stringify(call.argumentsObject), reply.chunkSize)) push('contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: piece } } });
    push('contentBlockStop', { contentBlockIndex: index });
    index += 1;
  });
  push('messageStop', { stopReason: stopReason(reply) });
  push('metadata', { usage: usageWire(reply.usage), metrics: { latencyMs } });
  return {
    contentType: 'application/vnd.amazon.eventstream',
    events,
    frame: (event) => {
      const name = event.event ?? 'unknown';
      return name.endsWith('Exception') ? exceptionMessage(name, event.data) : eventMessage(name, event.data);
    },
    terminator: '',
    malformed: { event: 'contentBlockDelta', data: `{"contentBlockIndex":0,"delta":{"text":` },
    errorEvent: streamException,
    errorTerminator: '',
  };
}
