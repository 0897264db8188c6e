import type { ChatResult, GatewayStreamEvent, Usage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import type { SseFrame, StreamEncoder } from '../inference.js';
import { encodeResponsesUsage } from './encode.js';

/**
 * A responses call an upstream answered natively (an OpenAI-family provider marked
 * `responses: true`): its own Response object and events go to the client as they are, with
 * only what is the gateway's rewritten: the response's `id` (the gateway's, as on every
 * answer), `model` (the catalog id) and, in a stream, `sequence_number` (from 0, counting the
 * events the client gets). Items keep their upstream ids: reasoning items and their
 * `encrypted_content` go back to the same upstream on the next turn.
 */

export interface NativeResponseMeta {
  /** The gateway's response id (`resp_<request id>`). */
  id: string;
  /** The catalog id of the model that served. */
  model: string;
}

type Json = Record<string, unknown>;

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The upstream's Response object, as the client's answer. */
export function encodeNativeResponse(result: ChatResult, usage: Usage, meta: NativeResponseMeta): Json {
  const body: Json = { ...result.native, id: meta.id, model: meta.model };
  // The gateway bills an estimate when the upstream reported none; the client sees the same figures.
  if (!isJson(body.usage)) body.usage = encodeResponsesUsage(usage);
  return body;
}

/** Lifecycle events end the stream: held until the call is settled (the canonical `finish` the gateway sends after it). */
const TERMINAL = new Set(['response.completed', 'response.incomplete']);

/**
 * The events of a native stream, relayed. Canonical parts are the gateway's own bookkeeping
 * (the upstream's events already carry everything) and are ignored, except two: `finish`
 * releases the terminal event (so the call is billed before the client's last bytes, as on
 * every stream), and `error` (the upstream broke after the first content) ends the stream with
 * `response.failed`, carrying the items relayed so far, as the canonical encoder does.
 */
export class NativeResponsesStream implements StreamEncoder {
  private sequence = 0;
  /** The last response object a lifecycle event carried (ids rewritten). */
  private snapshot: Json | undefined;
  /** The output items as the relayed events built them, for `response.failed`. */
  private readonly output: Json[] = [];
  private terminal: Json | undefined;

  constructor(private readonly meta: NativeResponseMeta) {}

  start(): SseFrame[] {
    // The upstream's own response.created opens the stream, in the first batch.
    return [];
  }

  encode(event: GatewayStreamEvent): SseFrame[] {
    switch (event.type) {
      case 'native':
        return this.relay(event.event);
      case 'finish': {
        const terminal = this.terminal;
        this.terminal = undefined;
        return terminal ? [this.frame(terminal)] : [];
      }
      case 'error':
        return this.failed(event.error);
      default:
        return [];
    }
  }

  private relay(upstream: Json): SseFrame[] {
    const type = upstream.type;
    if (typeof type !== 'string') return [];
    const event: Json = { ...upstream };
    if (isJson(event.response)) {
      const response: Json = { ...event.response, id: this.meta.id, model: this.meta.model };
      event.response = this.snapshot = response;
    }
    this.track(type, event);
    if (TERMINAL.has(type)) {
      this.terminal = event;
      return [];
    }
    return [this.frame(event)];
  }

  /** Follows the output items, as the client's accumulator does (only what `response.failed` needs). */
  private track(type: string, event: Json): void {
    const index = typeof event.output_index === 'number' ? event.output_index : -1;
    const item = this.output[index];
    const delta = typeof event.delta === 'string' ? event.delta : '';
    switch (type) {
      case 'response.output_item.added':
      case 'response.output_item.done':
        if (isJson(event.item) && index >= 0) this.output[index] = structuredClone(event.item);
        return;
      case 'response.content_part.added':
        if (item && Array.isArray(item.content) && isJson(event.part)) item.content.push(structuredClone(event.part));
        return;
      case 'response.output_text.delta': {
        const part: unknown = Array.isArray(item?.content) ? item.content[typeof event.content_index === 'number' ? event.content_index : 0] : undefined;
        if (isJson(part) && typeof part.text === 'string') part.text += delta;
        return;
      }
      case 'response.function_call_arguments.delta':
        if (item && typeof item.arguments === 'string') item.arguments += delta;
        return;
      case 'response.reasoning_summary_part.added':
        if (item && Array.isArray(item.summary) && isJson(event.part)) item.summary.push(structuredClone(event.part));
        return;
      case 'response.reasoning_summary_text.delta': {
        const part: unknown = Array.isArray(item?.summary) ? item.summary[typeof event.summary_index === 'number' ? event.summary_index : 0] : undefined;
        if (isJson(part) && typeof part.text === 'string') part.text += delta;
        return;
      }
    }
  }

  private frame(event: Json): SseFrame {
    event.sequence_number = this.sequence++;
    return { event: String(event.type), data: JSON.stringify(event) };
  }

  /**
   * `response.failed` (the shape of ResponsesStreamEncoder's): the response so far, status
   * `failed`, unfinished items marked incomplete, the error in OpenAI's `ResponseError` shape
   * plus the gateway's `type`, integer `status` and `reason`. Opened with `response.created`
   * when the upstream's never came (a client's accumulator needs it first).
   */
  private failed(error: GatewayError): SseFrame[] {
    this.terminal = undefined;
    const out: SseFrame[] = [];
    if (!this.snapshot) {
      this.snapshot = this.emptyResponse();
      out.push(this.frame({ type: 'response.created', response: this.snapshot }));
    }
    const output = this.output.filter(isJson).map((item) => (item.status === 'in_progress' ? { ...item, status: 'incomplete' } : item));
    const response = {
      ...this.snapshot,
      status: 'failed',
      output,
      error: { code: error.status === 429 ? 'rate_limit_exceeded' : 'server_error', message: error.message, type: error.type, status: error.status, reason: error.reason },
    };
    out.push(this.frame({ type: 'response.failed', response }));
    return out;
  }

  private emptyResponse(): Json {
    return {
      id: this.meta.id,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'in_progress',
      error: null,
      incomplete_details: null,
      instructions: null,
      model: this.meta.model,
      output: [],
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      temperature: null,
      top_p: null,
      metadata: {},
      usage: null,
    };
  }
}
