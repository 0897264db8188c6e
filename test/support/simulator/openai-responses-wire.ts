import { createHmac, randomBytes } from 'node:crypto';
import { chunkText, type CanonicalFinish, type ResolvedUsage, type SimEvent, type StreamPlan } from './scenario.js';

/**
 * The OpenAI Responses wire as the simulator renders it (openai-responses.ts decides what to
 * answer): the Response object, its output items, and the stream's event sequence, per
 * OpenAI's published schema (`Response`, `ResponseStreamEvent` in openai-openapi.yaml) and the
 * sequences in wire-formats.md §2. `sequence_number` is set as each frame is written (from 0,
 * right after `type`, as OpenAI orders them).
 */

/** One output item of the answer, before it is put on the wire. */
export type SimItem =
  | { kind: 'reasoning'; id: string; summary: string | undefined; encrypted: string | null }
  | { kind: 'web_search'; id: string; query: string }
  | { kind: 'message'; id: string; text: string }
  | { kind: 'function'; id: string; callId: string; name: string; namespace?: string; arguments: string }
  | { kind: 'custom'; id: string; callId: string; name: string; namespace?: string; input: string }
  | { kind: 'local_shell'; id: string; callId: string; command: string[] };

type Json = Record<string, unknown>;
type Status = 'in_progress' | 'completed' | 'incomplete';

/** The request fields a Response echoes, and its ids. */
export interface ResponseMeta {
  id: string;
  createdAt: number;
  model: string;
  body: Json;
}

/** An OpenAI-style id: prefix, `_`, 48 hex digits. */
export function itemId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

// ---- encrypted reasoning ----------------------------------------------------------------------

/** The key the simulator signs the reasoning it hands out with (one per process, as one per organization). */
const SECRET = randomBytes(32);
const PREFIX = 'gAAAAAB';
const MAC_LENGTH = 43;

/** Opaque reasoning content as OpenAI hands it out (a Fernet-like token), verifiable by this simulator only. */
export function encryptReasoning(itemIdValue: string, text: string): string {
  const payload = Buffer.from(JSON.stringify({ id: itemIdValue, text, nonce: randomBytes(8).toString('hex') })).toString('base64url');
  return PREFIX + payload + createHmac('sha256', SECRET).update(payload).digest('base64url');
}

/** Whether the simulator issued this token. */
export function verifyReasoning(token: string): boolean {
  if (!token.startsWith(PREFIX) || token.length <= PREFIX.length + MAC_LENGTH) return false;
  const payload = token.slice(PREFIX.length, -MAC_LENGTH);
  return createHmac('sha256', SECRET).update(payload).digest('base64url') === token.slice(-MAC_LENGTH);
}

/** OpenAI's way of naming a token in its 400: first four characters, `...`, last four. */
export function shownToken(token: string): string {
  return `${token.slice(0, 4)}...${token.slice(-4)}`;
}

// ---- items and the Response object ---------------------------------------------------------------

export function wireItem(item: SimItem, status: Status, done = true): Json {
  switch (item.kind) {
    case 'reasoning':
      return {
        id: item.id,
        type: 'reasoning',
        ...(item.encrypted !== null ? { encrypted_content: done ? item.encrypted : null } : {}),
        summary: done && item.summary !== undefined ? [{ type: 'summary_text', text: item.summary }] : [],
      };
    case 'web_search':
      return { id: item.id, type: 'web_search_call', status: done ? 'completed' : 'in_progress', action: { type: 'search', query: item.query, queries: [item.query] } };
    case 'message':
      return { id: item.id, type: 'message', status, content: done ? [{ type: 'output_text', annotations: [], logprobs: [], text: item.text }] : [], role: 'assistant' };
    case 'function':
      return { id: item.id, type: 'function_call', status, arguments: done ? item.arguments : '', call_id: item.callId, ...(item.namespace ? { namespace: item.namespace } : {}), name: item.name };
    case 'custom':
      return { id: item.id, type: 'custom_tool_call', status, call_id: item.callId, input: done ? item.input : '', ...(item.namespace ? { namespace: item.namespace } : {}), name: item.name };
    case 'local_shell':
      return { id: item.id, type: 'local_shell_call', status, call_id: item.callId, action: { type: 'exec', command: item.command, env: {}, timeout_ms: null, user: null, working_directory: null } };
  }
}

export function usageWire(usage: ResolvedUsage): Json {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cacheRead, cache_write_tokens: usage.cacheWrite },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning },
    total_tokens: usage.input + usage.output,
  };
}

function echo(body: Json, key: string, fallback: unknown): unknown {
  const value = body[key];
  return value === undefined || value === null ? fallback : value;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** The Response object (every required field of the schema, the request's settings echoed). */
export function responseObject(meta: ResponseMeta, status: ResponseStatus, output: Json[], usage: ResolvedUsage | null, finish?: CanonicalFinish): Json {
  const { body } = meta;
  const reasoning = typeof body.reasoning === 'object' && body.reasoning !== null ? (body.reasoning as Json) : {};
  const text = typeof body.text === 'object' && body.text !== null ? (body.text as Json) : {};
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.createdAt,
    status,
    background: false,
    completed_at: status === 'completed' ? Math.floor(Date.now() / 1000) : null,
    error: status === 'failed' ? { code: 'server_error', message: 'An error occurred while processing your request.' } : null,
    incomplete_details: status === 'incomplete' ? { reason: finish === 'content_filter' ? 'content_filter' : 'max_output_tokens' } : null,
    instructions: echo(body, 'instructions', null),
    max_output_tokens: echo(body, 'max_output_tokens', null),
    max_tool_calls: null,
    model: meta.model,
    output,
    parallel_tool_calls: echo(body, 'parallel_tool_calls', true),
    previous_response_id: null,
    prompt_cache_key: echo(body, 'prompt_cache_key', null),
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    safety_identifier: null,
    service_tier: 'default',
    store: echo(body, 'store', true),
    temperature: echo(body, 'temperature', 1),
    text: { format: { type: 'text' }, verbosity: 'medium', ...text },
    tool_choice: echo(body, 'tool_choice', 'auto'),
    tools: echo(body, 'tools', []),
    top_logprobs: 0,
    top_p: echo(body, 'top_p', 1),
    truncation: echo(body, 'truncation', 'disabled'),
    usage: usage ? usageWire(usage) : null,
    user: null,
    metadata: echo(body, 'metadata', {}),
  };
}

/** The answer's final status: `incomplete` when it stopped at the limit or was filtered. */
export function finalStatus(finish: CanonicalFinish): 'completed' | 'incomplete' {
  return finish === 'length' || finish === 'content_filter' ? 'incomplete' : 'completed';
}

// ---- the stream ------------------------------------------------------------------------------------

/** One event before its frame: its type, and its fields without `type` and `sequence_number`. */
function event(type: string, fields: Json): SimEvent {
  return { event: type, data: JSON.stringify(fields) };
}

/** The events of one output item, from `output_item.added` to `output_item.done`. */
function itemEvents(item: SimItem, index: number, status: Status, chunkSize: number): SimEvent[] {
  const at = { item_id: item.id, output_index: index };
  const out = [event('response.output_item.added', { output_index: index, item: wireItem(item, 'in_progress', false) })];
  switch (item.kind) {
    case 'reasoning':
      if (item.summary !== undefined) {
        const part = { type: 'summary_text', text: '' };
        out.push(event('response.reasoning_summary_part.added', { ...at, summary_index: 0, part }));
        for (const delta of chunkText(item.summary, chunkSize)) out.push(event('response.reasoning_summary_text.delta', { ...at, summary_index: 0, delta, obfuscation: randomBytes(4).toString('hex') }));
        out.push(event('response.reasoning_summary_text.done', { ...at, summary_index: 0, text: item.summary }));
        out.push(event('response.reasoning_summary_part.done', { ...at, summary_index: 0, part: { ...part, text: item.summary } }));
      }
      break;
    case 'web_search':
      out.push(event('response.web_search_call.in_progress', at), event('response.web_search_call.searching', at), event('response.web_search_call.completed', at));
      break;
    case 'message': {
      const content = { ...at, content_index: 0 };
      out.push(event('response.content_part.added', { ...content, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } }));
      for (const delta of chunkText(item.text, chunkSize)) out.push(event('response.output_text.delta', { ...content, delta, logprobs: [], obfuscation: randomBytes(4).toString('hex') }));
      out.push(event('response.output_text.done', { ...content, text: item.text, logprobs: [] }));
      out.push(event('response.content_part.done', { ...content, part: { type: 'output_text', annotations: [], logprobs: [], text: item.text } }));
      break;
    }
    case 'function':
      for (const delta of chunkText(item.arguments, chunkSize)) out.push(event('response.function_call_arguments.delta', { ...at, delta, obfuscation: randomBytes(4).toString('hex') }));
      out.push(event('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.arguments }));
      break;
    case 'custom':
      for (const delta of chunkText(item.input, chunkSize)) out.push(event('response.custom_tool_call_input.delta', { ...at, delta, obfuscation: randomBytes(4).toString('hex') }));
      out.push(event('response.custom_tool_call_input.done', { ...at, input: item.input }));
      break;
    case 'local_shell':
      break;
  }
  out.push(event('response.output_item.done', { output_index: index, item: wireItem(item, status) }));
  return out;
}

/** The status of each item once done: the message the limit cut is `incomplete`. */
export function itemStatuses(items: SimItem[], finish: CanonicalFinish): Status[] {
  return items.map((item) => (finalStatus(finish) === 'incomplete' && item.kind === 'message' ? 'incomplete' : 'completed'));
}

/** `{"type":…,"sequence_number":n,…fields}`: the sequence number as the frame is written. */
function frame(sim: SimEvent, position: number): string {
  const type = sim.event ?? '';
  const rest = sim.data.startsWith('{') && sim.data !== '{}' ? `,${sim.data.slice(1)}` : sim.data === '{}' ? '}' : sim.data;
  return `event: ${type}\ndata: {"type":${JSON.stringify(type)},"sequence_number":${position}${rest}\n\n`;
}

export function responsesStreamPlan(meta: ResponseMeta, items: SimItem[], finish: CanonicalFinish, usage: ResolvedUsage | null, chunkSize: number): StreamPlan {
  const statuses = itemStatuses(items, finish);
  const opening = responseObject(meta, 'in_progress', [], null);
  const events: SimEvent[] = [event('response.created', { response: opening }), event('response.in_progress', { response: opening })];
  items.forEach((item, index) => events.push(...itemEvents(item, index, statuses[index] ?? 'completed', chunkSize)));
  const status = finalStatus(finish);
  const output = items.map((item, index) => wireItem(item, statuses[index] ?? 'completed'));
  events.push(event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: responseObject(meta, status, output, usage, finish) }));
  return {
    contentType: 'text/event-stream; charset=utf-8',
    events,
    frame,
    // OpenAI ends a responses stream after its last event, without `[DONE]`.
    terminator: '',
    malformed: { event: 'response.output_text.delta', data: '{"item_id":"msg_' },
    errorEvent: (message) => {
      const failed = responseObject(meta, 'failed', [], null);
      if (message !== undefined) failed.error = { code: 'server_error', message };
      return event('response.failed', { response: failed });
    },
    errorTerminator: '',
  };
}
