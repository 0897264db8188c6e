import type { ChatResult, FinishReason, GatewayStreamEvent, Usage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import type { SseFrame, StreamEncoder } from '../inference.js';
import type { ResponsesEcho } from './decode.js';

/**
 * Canonical result/stream → OpenAI Responses objects and events. Pure: ids and time come in
 * `meta`. The stream follows what openai-node's ResponseStream checks: `response.created`
 * first, items appended in order with unique ids, every item event naming its item, and a
 * final `response.completed` (or `.incomplete`) carrying every item and the usage.
 */

export interface ResponsesEncodeMeta {
  id: string;
  createdAt: number;
  model: string;
  echo: ResponsesEcho;
}

interface OutputText {
  type: 'output_text';
  text: string;
  annotations: never[];
  logprobs: never[];
}

interface MessageItem {
  type: 'message';
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  role: 'assistant';
  content: OutputText[];
}

interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: 'in_progress' | 'completed' | 'incomplete';
}

type OutputItem = MessageItem | FunctionCallItem;

export function encodeResponsesUsage(usage: Usage) {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

function outcome(finish: FinishReason | undefined): { status: 'completed' | 'incomplete' | 'in_progress'; incomplete: { reason: string } | null } {
  if (finish === undefined) return { status: 'in_progress', incomplete: null };
  if (finish === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** The response object; `finish` undefined while it is still being produced. */
function responseObject(meta: ResponsesEncodeMeta, output: OutputItem[], usage: Usage | undefined, finish: FinishReason | undefined) {
  const { status, incomplete } = outcome(finish);
  const echo = meta.echo;
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: incomplete,
    instructions: echo.instructions,
    max_output_tokens: echo.maxOutputTokens,
    model: meta.model,
    output,
    parallel_tool_calls: echo.parallelToolCalls,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.toolChoice,
    tools: echo.tools,
    top_p: echo.topP,
    truncation: 'disabled',
    usage: usage ? encodeResponsesUsage(usage) : null,
    metadata: echo.metadata,
  };
}

export function encodeResponse(result: ChatResult, usage: Usage, meta: ResponsesEncodeMeta) {
  const itemStatus = outcome(result.finishReason).status === 'incomplete' ? 'incomplete' : 'completed';
  const output: OutputItem[] = [];
  if (result.text !== '') {
    output.push({ type: 'message', id: `msg_${meta.id.slice(5)}`, status: itemStatus, role: 'assistant', content: [{ type: 'output_text', text: result.text, annotations: [], logprobs: [] }] });
  }
  result.toolCalls.forEach((call, index) => {
    output.push({ type: 'function_call', id: `fc_${meta.id.slice(5)}_${index}`, call_id: call.id, name: call.name, arguments: call.arguments, status: 'completed' });
  });
  return responseObject(meta, output, usage, result.finishReason);
}


/**
 * The Responses event sequence, with increasing sequence_number from 0. One item is open at a
 * time, as OpenAI streams them. Each argument fragment goes to its own call's item (by tool
 * index), so a fragment arriving after the next call started still lands in the right call.
 */
export class ResponsesStreamEncoder implements StreamEncoder {
  private sequence = 0;
  private readonly output: OutputItem[] = [];
  private message: MessageItem | undefined;
  /** Every function call item by tool index, and which of them is still open. */
  private readonly calls = new Map<number, FunctionCallItem>();
  private openCall: FunctionCallItem | undefined;
  private usage: Usage | undefined;

  constructor(private readonly meta: ResponsesEncodeMeta) {}

  start(): SseFrame[] {
    const response = responseObject(this.meta, [], undefined, undefined);
    return [this.frame('response.created', { response }), this.frame('response.in_progress', { response })];
  }

  encode(event: GatewayStreamEvent): SseFrame[] {
    switch (event.type) {
      case 'text-delta': {
        const out = this.message ? [] : [...this.closeCalls(), ...this.openMessage()];
        const item = this.message as MessageItem;
        (item.content[0] as OutputText).text += event.text;
        out.push(this.frame('response.output_text.delta', { item_id: item.id, output_index: this.indexOf(item), content_index: 0, delta: event.text, logprobs: [] }));
        return out;
      }
      case 'tool-call-start': {
        const out = [...this.closeMessage(), ...this.closeCalls()];
        const item: FunctionCallItem = { type: 'function_call', id: `fc_${this.meta.id.slice(5)}_${this.output.length}`, call_id: event.id, name: event.name, arguments: '', status: 'in_progress' };
        this.output.push(item);
        this.calls.set(event.index, item);
        this.openCall = item;
        out.push(this.frame('response.output_item.added', { output_index: this.indexOf(item), item: { ...item } }));
        return out;
      }
      case 'tool-call-delta': {
        const item = this.calls.get(event.index);
        if (!item) return [];
        item.arguments += event.argumentsDelta;
        return [this.frame('response.function_call_arguments.delta', { item_id: item.id, output_index: this.indexOf(item), delta: event.argumentsDelta })];
      }
      case 'usage':
        this.usage = event.usage;
        return [];
      case 'finish': {
        const incomplete = outcome(event.finishReason).status === 'incomplete';
        const status = incomplete ? 'incomplete' : 'completed';
        const out = [...this.closeMessage(status), ...this.closeCalls(status)];
        const response = responseObject(this.meta, this.output, this.usage, event.finishReason);
        out.push(this.frame(incomplete ? 'response.incomplete' : 'response.completed', { response }));
        return out;
      }
      case 'error':
        return [this.failedFrame(event.error)];
    }
  }

  private openMessage(): SseFrame[] {
    const item: MessageItem = { type: 'message', id: `msg_${this.meta.id.slice(5)}_${this.output.length}`, status: 'in_progress', role: 'assistant', content: [] };
    this.output.push(item);
    const out = [this.frame('response.output_item.added', { output_index: this.indexOf(item), item: structuredClone(item) })];
    item.content.push({ type: 'output_text', text: '', annotations: [], logprobs: [] });
    out.push(this.frame('response.content_part.added', { item_id: item.id, output_index: this.indexOf(item), content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
    this.message = item;
    return out;
  }

  private closeMessage(status: 'completed' | 'incomplete' = 'completed'): SseFrame[] {
    const item = this.message;
    if (!item) return [];
    this.message = undefined;
    item.status = status;
    const index = this.indexOf(item);
    const part = item.content[0] as OutputText;
    return [
      this.frame('response.output_text.done', { item_id: item.id, output_index: index, content_index: 0, text: part.text, logprobs: [] }),
      this.frame('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part: { type: 'output_text', text: part.text, annotations: [] } }),
      this.frame('response.output_item.done', { output_index: index, item: structuredClone(item) }),
    ];
  }

  private closeCalls(status: 'completed' | 'incomplete' = 'completed'): SseFrame[] {
    const item = this.openCall;
    if (!item) return [];
    this.openCall = undefined;
    item.status = status;
    const index = this.indexOf(item);
    return [
      this.frame('response.function_call_arguments.done', { item_id: item.id, output_index: index, name: item.name, arguments: item.arguments }),
      this.frame('response.output_item.done', { output_index: index, item: { ...item } }),
    ];
  }

  private indexOf(item: OutputItem): number {
    return this.output.indexOf(item);
  }

  private frame(type: string, fields: Record<string, unknown>): SseFrame {
    return { event: type, data: JSON.stringify({ type, sequence_number: this.sequence++, ...fields }) };
  }

  /**
   * The end of a stream the upstream broke after its first content: `response.failed`, whose
   * response (status `failed`, the items so far marked incomplete) carries the error in
   * OpenAI's `ResponseError` shape (`code` one of its strings) plus the gateway's `type`,
   * integer `status` and `reason`. Not a bare `error` event: clients that follow the
   * response's lifecycle (openai-node's ResponseStream, Codex) read the failure from it.
   */
  private failedFrame(error: GatewayError): SseFrame {
    for (const item of this.output) if (item.status === 'in_progress') item.status = 'incomplete';
    this.message = undefined;
    this.openCall = undefined;
    const response = {
      ...responseObject(this.meta, this.output, this.usage, undefined),
      status: 'failed',
      error: { code: error.status === 429 ? 'rate_limit_exceeded' : 'server_error', message: error.message, type: error.type, status: error.status, reason: error.reason },
    };
    return this.frame('response.failed', { response });
  }
}
