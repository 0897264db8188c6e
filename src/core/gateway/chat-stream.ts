import type { FrameParser, ProviderFamily, TranslationContext } from '../../providers/types.js';
import { SseParser } from '../../providers/shared/sse-parser.js';
import { classifyUpstreamError, type UpstreamResponse } from '../../providers/shared/upstream.js';
import type { ChatRequest, GatewayStreamEvent, StreamPart, ToolCall, Usage } from '../canonical.js';
import type { ProviderConfig } from '../../config/types.js';
import type { CallSignal } from '../abort.js';
import { CallAborted, GatewayError, isGatewayError } from '../errors.js';

/**
 * A chat stream as the gateway reads it: upstream bytes ► SSE parser ► the family's decoder ►
 * this meter. The first part of it (`holdStream`) runs inside an attempt: the stream is held
 * until its first content, so that an upstream that fails before that is retried invisibly;
 * the rest (`readStream`) runs once the client has its status line.
 */

/** What a stream carried so far: for billing (usage, or text to count) and for the response cache. */
export class StreamMeter {
  usage: Usage | undefined;
  /** The prompt's usage, when the upstream reported it before the first content. */
  promptUsage: Usage | undefined;
  finish: StreamPart | undefined;
  text = '';
  toolText = '';
  /** Reasoning text relayed (billed as output when the upstream reports no usage). */
  reasoningText = '';
  /** Whether any content (text, a tool call, reasoning) was relayed: what ends the hold. */
  content = false;
  readonly toolCalls: ToolCall[] = [];

  /** `keep`: collect the tool calls whole (the call may be stored in the response cache). */
  constructor(private readonly keep: boolean) {}

  /** The part to relay, or undefined for the parts the gateway sends itself at the end (usage, finish). */
  meter(part: StreamPart): StreamPart | undefined {
    switch (part.type) {
      case 'usage':
        this.usage = part.usage;
        return undefined;
      case 'finish':
        this.finish = part;
        return undefined;
      case 'prompt-usage':
        this.promptUsage = part.usage;
        return undefined;
      case 'native':
        return part;
      case 'reasoning-delta':
        this.content = true;
        this.reasoningText += part.text;
        return part;
      case 'reasoning-end':
        this.content = true;
        return part;
      case 'text-delta':
        this.content = true;
        this.text += part.text;
        return part;
      case 'tool-call-start':
        this.content = true;
        this.toolText += part.name;
        if (this.keep) this.toolCalls[part.index] = { id: part.id, name: part.name, arguments: '' };
        return part;
      case 'tool-call-delta': {
        this.content = true;
        this.toolText += part.argumentsDelta;
        const call = this.keep ? this.toolCalls[part.index] : undefined;
        if (call) call.arguments += part.argumentsDelta;
        return part;
      }
    }
  }
}

/** A stream held until its first content: what was read so far, and how to read the rest. */
export interface HeldStream {
  response: UpstreamResponse;
  chunks: AsyncIterator<Buffer>;
  parser: FrameParser;
  decoder: ReturnType<ProviderFamily['createStreamDecoder']>;
  meter: StreamMeter;
  provider: ProviderConfig;
  /** The content that ended the hold (relayed first); the whole answer when `ended`. */
  first: GatewayStreamEvent[];
  /** The upstream stream ended during the hold (an answer without content, or a short one). */
  ended: boolean;
}

/**
 * Reads the upstream stream until its first content part (text, a tool call or reasoning; a
 * role-only chunk or a native stream's opening events are none), or its end. A failure until then is thrown (classified), for the attempt
 * loop to retry.
 */
export async function holdStream(response: UpstreamResponse, family: ProviderFamily, request: ChatRequest, provider: ProviderConfig, translation: TranslationContext, keep: boolean, signal: CallSignal): Promise<HeldStream> {
  const parser = family.createFrameParser?.(provider) ?? new SseParser();
  const decoder = family.createStreamDecoder(request, provider, translation);
  const meter = new StreamMeter(keep);
  const chunks = (response.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const first: GatewayStreamEvent[] = [];
  try {
    for (;;) {
      const next = await chunks.next();
      if (next.done) break;
      for (const event of parser.push(next.value)) for (const part of decoder.push(event)) {
        const out = meter.meter(part);
        if (out) first.push(out);
      }
      if (meter.content) return { response, chunks, parser, decoder, meter, provider, first, ended: false };
    }
    for (const event of parser.end()) for (const part of decoder.push(event)) if (meter.meter(part)) first.push(part);
    for (const part of decoder.end()) if (meter.meter(part)) first.push(part);
  } catch (error) {
    response.body.destroy();
    throw isGatewayError(error) ? error : classifyUpstreamError(provider.name, error, signal, 'the answer');
  }
  return { response, chunks, parser, decoder, meter, provider, first, ended: true };
}

/**
 * The rest of a held stream, in batches of what one upstream read carried (never held for a
 * later one). Ends normally, or with `failure` set (the upstream broke after the first
 * content: the parts read before it are relayed and billed); a client that leaves ends it
 * with CallAborted thrown.
 */
export async function* readStream(held: HeldStream, signal: CallSignal, outcome: { failure?: GatewayError }): AsyncGenerator<GatewayStreamEvent[], void, undefined> {
  if (held.first.length > 0) yield held.first;
  if (held.ended) return;
  const { parser, decoder, meter } = held;
  let batch: GatewayStreamEvent[] = [];
  try {
    for (;;) {
      const next = await held.chunks.next();
      if (next.done) break;
      for (const event of parser.push(next.value)) for (const part of decoder.push(event)) {
        const out = meter.meter(part);
        if (out) batch.push(out);
      }
      const full = batch;
      batch = [];
      if (full.length > 0) yield full;
    }
    for (const event of parser.end()) for (const part of decoder.push(event)) if (meter.meter(part)) batch.push(part);
    for (const part of decoder.end()) if (meter.meter(part)) batch.push(part);
  } catch (error) {
    const classified = isGatewayError(error) ? error : classifyUpstreamError(held.provider.name, error, signal, 'the answer');
    if (classified instanceof CallAborted) throw classified;
    outcome.failure = classified;
  }
  if (batch.length > 0) yield batch;
}
