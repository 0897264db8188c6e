import type { ChatResult, FinishReason, GatewayStreamEvent, ReasoningBlock, Usage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import type { SseFrame, StreamEncoder } from '../inference.js';

/** Canonical result/stream → Anthropic Messages JSON and named SSE events. Pure. */

export interface MessagesEncodeMeta {
  id: string;
  model: string;
  /** The prompt's usage for message_start: the upstream's when it gave it first, else the gateway's count. */
  promptUsage?: Usage;
}

/**
 * The signature of a thinking block that did not come from Claude (a Gemini thought summary,
 * an OpenAI-compatible reasoning text): `gateway:<family>`, so that when a client sends the
 * block back the gateway knows whose it is (Claude gets only its own, signed blocks).
 */
export const FOREIGN_SIGNATURE = 'gateway:';

/** A reasoning block as the messages format's thinking (or redacted_thinking) block. */
export function thinkingBlock(block: ReasoningBlock): Record<string, unknown> {
  if (block.redacted !== undefined) return { type: 'redacted_thinking', data: block.redacted };
  return { type: 'thinking', thinking: block.text, signature: block.family === 'anthropic' ? (block.signature ?? '') : `${FOREIGN_SIGNATURE}${block.family}` };
}

type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export function mapStopReason(finish: FinishReason, stopSequence: string | undefined): StopReason {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    case 'stop':
      return stopSequence !== undefined ? 'stop_sequence' : 'end_turn';
  }
}

/** Anthropic's input_tokens exclude cache reads and writes (canonical input includes them). */
export function encodeMessagesUsage(usage: Usage) {
  return {
    input_tokens: Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens),
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cacheReadTokens,
  };
}

function parseInput(args: string): unknown {
  if (args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return { _raw: args };
  }
}

export function encodeMessage(result: ChatResult, usage: Usage, meta: MessagesEncodeMeta) {
  const content: Record<string, unknown>[] = (result.reasoning ?? []).map(thinkingBlock);
  if (result.text !== '') content.push({ type: 'text', text: result.text, citations: null });
  for (const call of result.toolCalls) content.push({ type: 'tool_use', id: call.id, name: call.name, input: parseInput(call.arguments) });
  return {
    id: meta.id,
    type: 'message',
    role: 'assistant',
    model: meta.model,
    content,
    stop_reason: mapStopReason(result.finishReason, result.stopSequence),
    stop_sequence: result.stopSequence ?? null,
    usage: encodeMessagesUsage(usage),
  };
}

/**
 * The error body of the messages format, as a response body and as the stream's `error`
 * event: the gateway's envelope with Anthropic's error type (which Anthropic clients read)
 * and the top-level `"type": "error"`; `code` the integer status, `reason` the gateway's
 * precise cause (insufficient_credits, budget_exceeded, upstream_timeout ...).
 */
export function encodeMessagesError(error: GatewayError) {
  const body = error.toBody();
  return { type: 'error', error: { ...body.error, type: anthropicErrorType(error) } };
}


/**
 * Named events in Anthropic's order: message_start, then per block content_block_start,
 * deltas and content_block_stop (indices 0, 1, 2 … in order; a ping after the first start),
 * then message_delta (stop reason, final usage) and message_stop. message_start states the
 * prompt's usage (the upstream's own figures when it gave them before the first content,
 * else the gateway's count: clients show it as the context used); message_delta carries the
 * final counts, input included. Reasoning comes as thinking blocks (thinking_delta, then a
 * signature_delta) or redacted_thinking blocks.
 */
export class MessagesStreamEncoder implements StreamEncoder {
  private blockIndex = -1;
  private open: { kind: 'text' } | { kind: 'thinking'; family: ReasoningBlock['family'] } | { kind: 'tool'; toolIndex: number } | undefined;
  /** Each tool call's block, so every argument fragment lands in its own call's block. */
  private readonly toolBlocks = new Map<number, number>();
  private pinged = false;
  private usage: Usage | undefined;

  constructor(private readonly meta: MessagesEncodeMeta) {}

  start(): SseFrame[] {
    return [
      frame('message_start', {
        type: 'message_start',
        message: {
          id: this.meta.id,
          type: 'message',
          role: 'assistant',
          model: this.meta.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: this.meta.promptUsage ? encodeMessagesUsage(this.meta.promptUsage) : { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      }),
    ];
  }

  encode(event: GatewayStreamEvent): SseFrame[] {
    switch (event.type) {
      case 'text-delta': {
        const out = this.open?.kind === 'text' ? [] : this.startBlock({ kind: 'text' }, { type: 'text', text: '' });
        out.push(frame('content_block_delta', { type: 'content_block_delta', index: this.blockIndex, delta: { type: 'text_delta', text: event.text } }));
        return out;
      }
      case 'reasoning-delta': {
        const out = this.open?.kind === 'thinking' ? [] : this.startBlock({ kind: 'thinking', family: event.family }, { type: 'thinking', thinking: '', signature: '' });
        out.push(frame('content_block_delta', { type: 'content_block_delta', index: this.blockIndex, delta: { type: 'thinking_delta', thinking: event.text } }));
        return out;
      }
      case 'reasoning-end': {
        if (event.redacted !== undefined) {
          const out = this.startBlock(undefined, { type: 'redacted_thinking', data: event.redacted });
          out.push(frame('content_block_stop', { type: 'content_block_stop', index: this.blockIndex }));
          return out;
        }
        const out = this.open?.kind === 'thinking' ? [] : this.startBlock({ kind: 'thinking', family: event.family }, { type: 'thinking', thinking: '', signature: '' });
        out.push(...this.closeBlock(event.signature));
        return out;
      }
      case 'prompt-usage':
      case 'native':
        return [];
      case 'tool-call-start': {
        const out = this.startBlock({ kind: 'tool', toolIndex: event.index }, { type: 'tool_use', id: event.id, name: event.name, input: {} });
        this.toolBlocks.set(event.index, this.blockIndex);
        return out;
      }
      case 'tool-call-delta': {
        const index = this.toolBlocks.get(event.index);
        if (index === undefined) return [];
        return [frame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: event.argumentsDelta } })];
      }
      case 'usage':
        this.usage = event.usage;
        return [];
      case 'finish': {
        const out = this.closeBlock();
        const usage = this.usage ? encodeMessagesUsage(this.usage) : { output_tokens: 0 };
        out.push(
          frame('message_delta', { type: 'message_delta', delta: { stop_reason: mapStopReason(event.finishReason, event.stopSequence), stop_sequence: event.stopSequence ?? null }, usage }),
          frame('message_stop', { type: 'message_stop' }),
        );
        return out;
      }
      case 'error':
        return [frame('error', encodeMessagesError(event.error))];
    }
  }

  private startBlock(kind: typeof this.open, block: Record<string, unknown>): SseFrame[] {
    const out = this.closeBlock();
    this.blockIndex += 1;
    this.open = kind;
    out.push(frame('content_block_start', { type: 'content_block_start', index: this.blockIndex, content_block: block }));
    if (!this.pinged) {
      this.pinged = true;
      out.push(frame('ping', { type: 'ping' }));
    }
    return out;
  }

  /** Closes the open block; a thinking block gets its signature first (the gateway's mark when Claude gave none). */
  private closeBlock(signature?: string): SseFrame[] {
    const open = this.open;
    if (!open) return [];
    this.open = undefined;
    const out: SseFrame[] = [];
    if (open.kind === 'thinking') {
      const value = open.family === 'anthropic' && signature !== undefined ? signature : `${FOREIGN_SIGNATURE}${open.family}`;
      out.push(frame('content_block_delta', { type: 'content_block_delta', index: this.blockIndex, delta: { type: 'signature_delta', signature: value } }));
    }
    out.push(frame('content_block_stop', { type: 'content_block_stop', index: this.blockIndex }));
    return out;
  }
}

function frame(event: string, data: unknown): SseFrame {
  return { event, data: JSON.stringify(data) };
}

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** The Anthropic error type a client expects for a status (docs.anthropic.com "Errors"). */
export function anthropicErrorType(error: GatewayError): string {
  // The gateway shedding load (503, server.max_in_flight) is what Anthropic calls overloaded.
  if (error.type === 'overloaded') return 'overloaded_error';
  return ANTHROPIC_TYPES[error.status] ?? (error.status >= 500 ? 'api_error' : 'invalid_request_error');
}
