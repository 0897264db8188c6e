import type { FinishReason, GatewayStreamEvent, ReasoningBlock, Usage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import type { SseFrame, StreamEncoder } from '../inference.js';
import { callItem, outcome, reasoningItem, responseObject, type CustomToolCallItem, type FunctionCallItem, type MessageItem, type OutputItem, type OutputText, type ReasoningItem, type ResponsesEncodeMeta } from './encode.js';
import { customInput } from './tools.js';

type Status = 'completed' | 'incomplete';

/**
 * The Responses event sequence, with increasing sequence_number from 0, as openai-node's
 * ResponseStream and Codex check it: `response.created` first, items appended in order with
 * unique ids, every item event naming its item, and a final `response.completed` (or
 * `.incomplete`) carrying every item and the usage. One item is open at a time, as OpenAI
 * streams them:
 * - reasoning: `output_item.added`, `reasoning_summary_part.added`,
 *   `reasoning_summary_text.delta`…, `.done`, `reasoning_summary_part.done`, `output_item.done`;
 * - text: `output_item.added`, `content_part.added`, `output_text.delta`…, `.done`,
 *   `content_part.done`, `output_item.done`;
 * - a function call: `output_item.added`, `function_call_arguments.delta`…, `.done`,
 *   `output_item.done`; a custom tool's call: its input in one
 *   `custom_tool_call_input.delta` and `.done` once the call is whole (the model wrote it as
 *   a JSON argument, read only then).
 * Each argument fragment goes to its own call's item (by tool index), so a fragment arriving
 * after the next call started still lands in the right call.
 */
export class ResponsesStreamEncoder implements StreamEncoder {
  private sequence = 0;
  private readonly output: OutputItem[] = [];
  private message: MessageItem | undefined;
  private reasoning: { item: ReasoningItem; blocks: ReasoningBlock[]; text: string } | undefined;
  /** Every call item by tool index (custom calls with their arguments so far), and which is still open. */
  private readonly calls = new Map<number, { item: FunctionCallItem | CustomToolCallItem; args: string }>();
  private openCall: { item: FunctionCallItem | CustomToolCallItem; args: string } | undefined;
  private usage: Usage | undefined;

  constructor(private readonly meta: ResponsesEncodeMeta) {}

  start(): SseFrame[] {
    const response = responseObject(this.meta, [], undefined, undefined);
    return [this.frame('response.created', { response }), this.frame('response.in_progress', { response })];
  }

  encode(event: GatewayStreamEvent): SseFrame[] {
    switch (event.type) {
      case 'reasoning-delta': {
        const out = this.reasoning ? [] : [...this.closeMessage(), ...this.closeCall(), ...this.openReasoning(event.family)];
        const open = this.reasoning as NonNullable<typeof this.reasoning>;
        open.text += event.text;
        (open.blocks[open.blocks.length - 1] as ReasoningBlock).text += event.text;
        out.push(this.frame('response.reasoning_summary_text.delta', { item_id: open.item.id, output_index: this.indexOf(open.item), summary_index: 0, delta: event.text }));
        return out;
      }
      case 'reasoning-end': {
        const out = this.reasoning ? [] : [...this.closeMessage(), ...this.closeCall(), ...this.openReasoning(event.family)];
        const block = (this.reasoning as NonNullable<typeof this.reasoning>).blocks.at(-1) as ReasoningBlock;
        if (event.signature !== undefined) block.signature = event.signature;
        if (event.redacted !== undefined) block.redacted = event.redacted;
        out.push(...this.closeReasoning());
        return out;
      }
      case 'text-delta': {
        const out = this.message ? [] : [...this.closeReasoning(), ...this.closeCall(), ...this.openMessage()];
        const item = this.message as MessageItem;
        (item.content[0] as OutputText).text += event.text;
        out.push(this.frame('response.output_text.delta', { item_id: item.id, output_index: this.indexOf(item), content_index: 0, delta: event.text, logprobs: [] }));
        return out;
      }
      case 'tool-call-start': {
        const out = [...this.closeReasoning(), ...this.closeMessage(), ...this.closeCall()];
        const item = callItem(event, `${this.meta.id.slice(5)}_${this.output.length}`, this.meta.echo);
        this.output.push(item);
        const call = { item, args: '' };
        this.calls.set(event.index, call);
        this.openCall = call;
        out.push(this.frame('response.output_item.added', { output_index: this.indexOf(item), item: { ...item } }));
        return out;
      }
      case 'tool-call-delta': {
        const call = this.calls.get(event.index);
        if (!call) return [];
        call.args += event.argumentsDelta;
        if (call.item.type === 'custom_tool_call') return [];
        call.item.arguments += event.argumentsDelta;
        return [this.frame('response.function_call_arguments.delta', { item_id: call.item.id, output_index: this.indexOf(call.item), delta: event.argumentsDelta })];
      }
      case 'usage':
        this.usage = event.usage;
        return [];
      case 'prompt-usage':
      case 'native':
        return [];
      case 'finish': {
        const incomplete = outcome(event.finishReason).status === 'incomplete';
        const status: Status = incomplete ? 'incomplete' : 'completed';
        const out = [...this.closeReasoning(status), ...this.closeMessage(status), ...this.closeCall(status)];
        const response = responseObject(this.meta, this.output, this.usage, event.finishReason as FinishReason);
        out.push(this.frame(incomplete ? 'response.incomplete' : 'response.completed', { response }));
        return out;
      }
      case 'error':
        return [this.failedFrame(event.error)];
    }
  }

  private openReasoning(family: ReasoningBlock['family']): SseFrame[] {
    const item: ReasoningItem = { type: 'reasoning', id: `rs_${this.meta.id.slice(5)}_${this.output.length}`, summary: [], encrypted_content: null };
    this.output.push(item);
    this.reasoning = { item, blocks: [{ family, text: '' }], text: '' };
    const index = this.indexOf(item);
    return [
      this.frame('response.output_item.added', { output_index: index, item: { ...item, summary: [] } }),
      this.frame('response.reasoning_summary_part.added', { item_id: item.id, output_index: index, summary_index: 0, part: { type: 'summary_text', text: '' } }),
    ];
  }

  private closeReasoning(status: Status = 'completed'): SseFrame[] {
    const open = this.reasoning;
    if (!open) return [];
    this.reasoning = undefined;
    const index = this.indexOf(open.item);
    Object.assign(open.item, reasoningItem(open.item.id, open.blocks, this.meta.echo), { status });
    const part = { type: 'summary_text', text: open.text };
    return [
      this.frame('response.reasoning_summary_text.done', { item_id: open.item.id, output_index: index, summary_index: 0, text: open.text }),
      this.frame('response.reasoning_summary_part.done', { item_id: open.item.id, output_index: index, summary_index: 0, part }),
      this.frame('response.output_item.done', { output_index: index, item: { ...open.item } }),
    ];
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

  private closeMessage(status: Status = 'completed'): SseFrame[] {
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

  private closeCall(status: Status = 'completed'): SseFrame[] {
    const call = this.openCall;
    if (!call) return [];
    this.openCall = undefined;
    const item = call.item;
    item.status = status;
    const index = this.indexOf(item);
    if (item.type === 'custom_tool_call') {
      item.input = customInput({ id: item.call_id, name: item.name, arguments: call.args });
      return [
        this.frame('response.custom_tool_call_input.delta', { item_id: item.id, output_index: index, delta: item.input }),
        this.frame('response.custom_tool_call_input.done', { item_id: item.id, output_index: index, input: item.input }),
        this.frame('response.output_item.done', { output_index: index, item: { ...item } }),
      ];
    }
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
    for (const item of this.output) if (item.status === 'in_progress' || (item.type === 'reasoning' && item === this.reasoning?.item)) item.status = 'incomplete';
    this.message = undefined;
    this.openCall = undefined;
    this.reasoning = undefined;
    const response = {
      ...responseObject(this.meta, this.output, this.usage, undefined),
      status: 'failed',
      error: { code: error.status === 429 ? 'rate_limit_exceeded' : 'server_error', message: error.message, type: error.type, status: error.status, reason: error.reason },
    };
    return this.frame('response.failed', { response });
  }
}
