import type { ChatResult, FinishReason, ReasoningBlock, ToolCall, Usage } from '../../core/canonical.js';
import type { ResponsesEcho } from './decode.js';
import { packReasoning } from './reasoning.js';
import { customInput } from './tools.js';

/**
 * Canonical result → OpenAI Responses objects (the stream's events: encode-stream.ts). Pure:
 * ids and time come in `meta`. Reasoning comes first as a `reasoning` item (its summary, and
 * Claude's signed blocks packed in `encrypted_content` when `include` asks, so a stateless
 * client can send them back); a call to a flattened namespace function names its namespace
 * again, and a call to a custom tool is a `custom_tool_call` with its free-form input.
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

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  /** The namespace of a namespace tool's function (Codex's `namespace` tools). */
  namespace?: string;
  arguments: string;
  status: 'in_progress' | 'completed' | 'incomplete';
}

export interface CustomToolCallItem {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  input: string;
  status: 'in_progress' | 'completed' | 'incomplete';
}

export interface ReasoningItem {
  type: 'reasoning';
  id: string;
  summary: { type: 'summary_text'; text: string }[];
  encrypted_content: string | null;
  status?: 'in_progress' | 'completed' | 'incomplete';
}

export type OutputItem = MessageItem | FunctionCallItem | CustomToolCallItem | ReasoningItem;
export type { MessageItem, OutputText };

export function encodeResponsesUsage(usage: Usage) {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

export function outcome(finish: FinishReason | undefined): { status: 'completed' | 'incomplete' | 'in_progress'; incomplete: { reason: string } | null } {
  if (finish === undefined) return { status: 'in_progress', incomplete: null };
  if (finish === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** The response object; `finish` undefined while it is still being produced. */
export function responseObject(meta: ResponsesEncodeMeta, output: OutputItem[], usage: Usage | undefined, finish: FinishReason | undefined) {
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
    reasoning: echo.reasoning,
    store: echo.store,
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
    const item = callItem(call, `${meta.id.slice(5)}_${index}`, meta.echo);
    if (item.type === 'custom_tool_call') item.input = customInput(call);
    else item.arguments = call.arguments;
    item.status = 'completed';
    output.push(item);
  });
  if (result.reasoning?.length) output.unshift(reasoningItem(`rs_${meta.id.slice(5)}`, result.reasoning, meta.echo));
  return responseObject(meta, output, usage, result.finishReason);
}

/** A call's item, empty (arguments or input filled by the caller): mapped back to the tool the client offered. */
export function callItem(call: Pick<ToolCall, 'id' | 'name'>, suffix: string, echo: ResponsesEcho): FunctionCallItem | CustomToolCallItem {
  const origin = echo.toolOrigins.get(call.name);
  if (origin?.kind === 'custom') return { type: 'custom_tool_call', id: `ctc_${suffix}`, call_id: call.id, name: origin.name, input: '', status: 'in_progress' };
  const item: FunctionCallItem = { type: 'function_call', id: `fc_${suffix}`, call_id: call.id, name: origin?.name ?? call.name, arguments: '', status: 'in_progress' };
  if (origin?.kind === 'function' && origin.namespace !== undefined) item.namespace = origin.namespace;
  return item;
}

/** One reasoning item for the blocks of a turn: their text as the summary, Claude's blocks packed when asked. */
export function reasoningItem(id: string, blocks: readonly ReasoningBlock[], echo: ResponsesEcho): ReasoningItem {
  const text = blocks.map((block) => block.text).filter((t) => t !== '').join('\n\n');
  const signed = blocks.some((block) => block.family === 'anthropic');
  return { type: 'reasoning', id, summary: text === '' ? [] : [{ type: 'summary_text', text }], encrypted_content: echo.encryptedReasoning && signed ? packReasoning(blocks) : null };
}


