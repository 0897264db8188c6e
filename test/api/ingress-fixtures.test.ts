import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { decodeChatCompletion } from '../../src/api/chat/decode.js';
import { ChatChunkEncoder, type ChatEncodeMeta } from '../../src/api/chat/encode.js';
import type { SseFrame, StreamEncoder } from '../../src/api/inference.js';
import { decodeMessagesRequest } from '../../src/api/messages/decode.js';
import { MessagesStreamEncoder, type MessagesEncodeMeta } from '../../src/api/messages/encode.js';
import { decodeResponsesRequest, type ResponsesEcho } from '../../src/api/responses/decode.js';
import type { ResponsesEncodeMeta } from '../../src/api/responses/encode.js';
import { ResponsesStreamEncoder } from '../../src/api/responses/encode-stream.js';
import type { ToolOrigin } from '../../src/api/responses/tools.js';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import type { ProviderConfig } from '../../src/config/types.js';
import type { ChatRequest, GatewayStreamEvent } from '../../src/core/canonical.js';
import { GatewayError, type GatewayErrorInit } from '../../src/core/errors.js';
import { PROVIDER_FAMILIES } from '../../src/providers/registry.js';

/**
 * Pure translation of the ingress formats against recorded fixtures (test/fixtures/ingress):
 * a request of each format (`<format>/request-*.json`) → the canonical draft (`*.draft.json`,
 * and for Responses the echoed fields, `*.echo.json`), and a canonical part sequence
 * (`*.parts.json`, GatewayStreamEvent objects) → the SSE frames of the format (`*.frames.txt`,
 * one frame a line as `event<TAB>data`, the event empty in the chat format) with fixed ids
 * (`*.meta.json`). The expected files were written by hand from the wire-format reference
 * (event order, indices, sequence numbers, item ids, usage). Then the decoders' 400s.
 */

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

const FIXTURES = join(PACKAGE_ROOT, 'test/fixtures/ingress');
const read = (path: string): string => readFileSync(join(FIXTURES, path), 'utf8');
const readJson = <T = any>(path: string): T => JSON.parse(read(path)) as T;

/** For one upstream-side check: the canonical request and an OpenAI provider of test/providers/fixtures.test.ts. */
const canonicalRequest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'test/fixtures/request.canonical.json'), 'utf8')) as ChatRequest;
const openaiProvider: ProviderConfig = {
  name: 'test-openai',
  type: 'openai',
  baseUrl: 'http://upstream.test/v1',
  apiKey: 'upstream-secret',
  apiKeys: ['upstream-secret'],
  headers: {},
  timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 },
  maxTokensParam: 'max_tokens',
};

/**
 * A responses meta fixture: the echo's `toolOrigins` is a Map in the decoder's echo, an object
 * (flattened name → origin) in the JSON file.
 */
function readMeta(path: string): ResponsesEncodeMeta {
  const meta = readJson<ResponsesEncodeMeta & { echo: { toolOrigins?: Record<string, ToolOrigin> } }>(path);
  return { ...meta, echo: { ...meta.echo, toolOrigins: new Map(Object.entries(meta.echo.toolOrigins ?? {})) } };
}

/** The echo as JSON can hold it (toolOrigins as an object), for comparing with a .echo.json file. */
function echoAsJson(echo: ResponsesEcho): Record<string, unknown> {
  return { ...echo, toolOrigins: Object.fromEntries(echo.toolOrigins) };
}

function thrown(fn: () => unknown): any {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Requests → canonical drafts

t.test('messages: request → canonical draft', async (t) => {
  // system-turn: a system role inside messages. Without an anthropic-version of 2026-10-21 or
  // later (as here) the turns stay where the client put them (`inline`): an Anthropic upstream
  // answers for itself, the other families fold them into their system instructions.
  for (const name of ['conversation', 'simple', 'system-turn']) {
    await t.test(name, async (t) => {
      const raw = readJson(`messages/request-${name}.json`);
      const copy = structuredClone(raw);
      const draft = decodeMessagesRequest(raw);
      t.strictSame(draft, readJson(`messages/request-${name}.draft.json`), 'the draft');
      t.strictSame(raw, copy, 'the request is not modified');
      t.strictSame(JSON.parse(JSON.stringify(draft)), draft, 'the draft is plain JSON (no undefined fields)');
    });
  }
  await t.test('conversation: the rules the fixture covers, spelled out', async (t) => {
    const draft = decodeMessagesRequest(readJson('messages/request-conversation.json'));
    t.same(
      draft.messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'tool', 'user'],
      'tool_result blocks become tool messages, before the text of their user turn',
    );
    t.same(draft.toolChoice, { type: 'required' }, 'tool_choice any → required');
    t.equal(draft.parallelToolCalls, false, 'disable_parallel_tool_use → parallelToolCalls false');
    t.equal(draft.user, 'user-42', 'metadata.user_id → user');
    t.same(Object.keys(draft.passthrough?.fields ?? {}), ['service_tier'], 'unmapped fields pass through (null ones do not; thinking is mapped)');
    t.same(draft.reasoning, { budgetTokens: 1024, summary: true, anthropic: { type: 'enabled', budget_tokens: 1024 } }, 'thinking → reasoning, the client\'s object kept for Claude');
    const assistant = draft.messages[2];
    t.same(assistant?.role === 'assistant' ? assistant.reasoning : undefined, [{ family: 'anthropic', text: 'Two cities: two calls.', signature: 'EqQBCgIYAhIM' }], 'a replayed thinking block → the turn\'s reasoning, with its signature');
  });
  await t.test('system-turn: from anthropic-version 2026-10-21 the system turns are part of the system prompt', async (t) => {
    const raw = readJson('messages/request-system-turn.json');
    const inline = (version?: string) => decodeMessagesRequest(raw, undefined, version).messages.filter((m) => m.role === 'system').map((m) => m.role === 'system' && m.inline === true);
    t.same(inline(), [false, true, true], 'no version: the turns inside messages are inline');
    t.same(inline('2023-06-01'), [false, true, true], 'an older version: inline');
    t.same(inline('2026-10-21'), [false, false, false], '2026-10-21: not inline');
  });
});

t.test('responses: request → canonical draft and echoed fields', async (t) => {
  for (const name of ['conversation', 'string']) {
    await t.test(name, async (t) => {
      const raw = readJson(`responses/request-${name}.json`);
      const copy = structuredClone(raw);
      const { draft, echo } = decodeResponsesRequest(raw);
      const { native, ...rest } = draft;
      t.strictSame(rest, readJson(`responses/request-${name}.draft.json`), 'the draft');
      t.equal(native?.format, 'responses');
      t.strictSame(native?.body, { ...raw, store: false }, 'the client\'s body rides along as native (it has no models field to remove), store always false');
      t.strictSame(echoAsJson(echo), readJson(`responses/request-${name}.echo.json`), 'the echo');
      t.strictSame(raw, copy, 'the request is not modified');
      t.strictSame(JSON.parse(JSON.stringify(draft)), draft, 'the draft is plain JSON (no undefined fields)');
    });
  }
  await t.test('conversation: the rules the fixture covers, spelled out', async (t) => {
    const { draft } = decodeResponsesRequest(readJson('responses/request-conversation.json'));
    t.same(
      draft.messages.map((m) => m.role),
      ['system', 'system', 'user', 'assistant', 'tool', 'tool', 'user'],
      'instructions first; the reasoning item dropped; function_call_output → tool messages',
    );
    const assistant = draft.messages[3];
    t.same(assistant?.role === 'assistant' ? assistant.toolCalls.map((c) => c.id) : [], ['call_P', 'call_L'], 'consecutive function_call items join one assistant turn');
    t.equal(draft.ignoredParams, undefined, 'include, truncation and reasoning are accepted (none is named as ignored)');
    t.same(draft.reasoning, { effort: 'low' }, 'reasoning.effort → reasoning');
    t.equal(draft.passthrough, undefined, 'nothing passes through from the Responses wire');
  });
});

t.test('chat: request → canonical draft', async (t) => {
  const raw = readJson('chat/request-conversation.json');
  const copy = structuredClone(raw);
  const { draft, includeUsage } = decodeChatCompletion(raw);
  t.strictSame(draft, readJson('chat/request-conversation.draft.json'), 'the draft');
  t.equal(includeUsage, true, 'stream_options.include_usage');
  t.strictSame(raw, copy, 'the request is not modified');
  t.strictSame(JSON.parse(JSON.stringify(draft)), draft, 'the draft is plain JSON (no undefined fields)');
});

// ---------------------------------------------------------------------------------------------
// Canonical parts → SSE frames

type PartFixture = Exclude<GatewayStreamEvent, { type: 'error' }> | { type: 'error'; error: GatewayErrorInit };

function events(name: string): GatewayStreamEvent[] {
  return readJson<PartFixture[]>(name).map((part) => (part.type === 'error' ? { type: 'error', error: new GatewayError(part.error) } : part));
}

function run(encoder: StreamEncoder, parts: GatewayStreamEvent[]): SseFrame[] {
  const frames = [...encoder.start()];
  for (const part of parts) frames.push(...encoder.encode(part));
  return frames;
}

/** Frames as `event<TAB>data` lines, as in the .frames.txt files. */
function expectFrames(t: Tap, frames: SseFrame[], file: string): void {
  const expected = read(file)
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const tab = line.indexOf('\t');
      return { event: line.slice(0, tab), data: line.slice(tab + 1) };
    });
  t.same(
    frames.map((f) => f.event ?? ''),
    expected.map((f) => f.event),
    'the event names, in order',
  );
  t.equal(frames.length, expected.length, 'the number of frames');
  expected.forEach((want, i) => {
    const got = frames[i];
    const label = `frame ${i} (${want.event || want.data.slice(0, 30)})`;
    if (want.data.startsWith('{')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(got?.data ?? '');
      } catch {
        parsed = got?.data;
      }
      t.strictSame(parsed, JSON.parse(want.data), label);
    } else t.equal(got?.data, want.data, label);
  });
}

/** Anthropic's stream rules (wire-formats.md §3), on any encoder output. */
function messagesInvariants(t: Tap, frames: SseFrame[]): void {
  const data = frames.map((f) => JSON.parse(f.data));
  t.ok(frames.every((f, i) => f.event === data[i].type), 'every event: line names the JSON type');
  t.equal(frames[0]?.event, 'message_start', 'message_start first');
  t.equal(frames.filter((f) => f.event === 'message_start').length, 1, 'one message_start');
  const firstStart = frames.findIndex((f) => f.event === 'content_block_start');
  if (firstStart !== -1) t.equal(frames[firstStart + 1]?.event, 'ping', 'a ping right after the first content_block_start');
  let open: { index: number; type: string } | undefined;
  let nextIndex = 0;
  let ordered = true;
  for (const d of data) {
    if (d.type === 'content_block_start') {
      if (open || d.index !== nextIndex) ordered = false;
      open = { index: d.index, type: d.content_block.type };
      nextIndex += 1;
    } else if (d.type === 'content_block_delta') {
      const fits = open?.type === 'text' ? d.delta.type === 'text_delta' : d.delta.type === 'input_json_delta';
      if (!open || d.index !== open.index || !fits) ordered = false;
    } else if (d.type === 'content_block_stop') {
      if (!open || d.index !== open.index) ordered = false;
      open = undefined;
    }
  }
  t.ok(ordered, 'blocks 0, 1, 2 … in order: start → deltas of the block’s type → stop');
  const last = frames.at(-1)?.event;
  if (last === 'message_stop') {
    t.equal(frames.at(-2)?.event, 'message_delta', 'message_delta before message_stop');
    t.equal(open, undefined, 'every block stopped before message_delta');
    const delta = data.at(-2);
    t.type(delta.delta.stop_reason, 'string', 'message_delta has a stop_reason');
    t.type(delta.usage?.output_tokens, 'number', 'message_delta has usage.output_tokens');
  } else t.equal(last, 'error', 'a stream that does not stop ends with an error event');
}

/** openai-node's ResponseStream rules (wire-formats.md §2), on any encoder output. */
function responsesInvariants(t: Tap, frames: SseFrame[]): void {
  const data = frames.map((f) => JSON.parse(f.data));
  t.ok(frames.every((f, i) => f.event === data[i].type), 'every event: line names the JSON type');
  t.same(
    data.map((d) => d.sequence_number),
    data.map((_, i) => i),
    'sequence_number 0, 1, 2 …',
  );
  t.equal(data[0]?.type, 'response.created', 'response.created first');
  const output: any[] = [];
  const problems: string[] = [];
  for (const d of data) {
    if (d.type === 'response.output_item.added') {
      if (d.output_index !== output.length) problems.push(`output_item.added at ${d.output_index}, expected ${output.length}`);
      output.push(structuredClone(d.item));
    } else if (d.type === 'response.output_item.done') {
      const item = output[d.output_index];
      if (!item || item.id !== d.item.id || item.type !== d.item.type || item.call_id !== d.item.call_id) problems.push(`output_item.done ${d.output_index} changes the item`);
      output[d.output_index] = structuredClone(d.item);
    } else if (typeof d.item_id === 'string') {
      const item = output[d.output_index];
      const wanted = d.type.startsWith('response.function_call_arguments.') ? 'function_call' : 'message';
      if (!item || item.id !== d.item_id || item.type !== wanted) problems.push(`${d.type} names ${d.item_id} at ${d.output_index}`);
    }
  }
  t.same(problems, [], 'item events name the item at their output_index, of the right type');
  t.equal(new Set(output.map((item) => item.id)).size, output.length, 'unique item ids');
  const final = data.at(-1);
  if (final?.type === 'response.completed' || final?.type === 'response.incomplete') {
    t.strictSame(final.response.output, output, 'the final response carries every item as done');
    t.ok(final.response.usage, 'the final response carries the usage');
    t.equal(final.response.status, final.type === 'response.completed' ? 'completed' : 'incomplete', 'status matches the event');
  } else {
    t.equal(final?.type, 'response.failed', 'a stream without a final response ends with response.failed (not a bare error event)');
    t.equal(final?.response?.status, 'failed', 'its response is failed');
    t.type(final?.response?.error?.message, 'string', 'and carries the error');
  }
}

/** openai-node's ChatCompletionStream rules (wire-formats.md §1), on any encoder output. */
function chatInvariants(t: Tap, frames: SseFrame[], includeUsage: boolean): void {
  t.ok(frames.every((f) => f.event === undefined), 'no event: lines');
  const chunks = frames.filter((f) => f.data !== '[DONE]').map((f) => JSON.parse(f.data));
  t.equal(chunks[0]?.choices?.[0]?.delta?.role, 'assistant', 'the role chunk first');
  t.equal(new Set(chunks.filter((c) => !c.error).map((c) => `${c.id} ${c.created} ${c.model}`)).size, 1, 'one id, created and model');
  const errored = chunks.some((c) => c.error);
  if (errored) {
    t.ok(chunks.at(-1)?.error, 'the error is the last frame');
    t.notOk(frames.some((f) => f.data === '[DONE]'), 'no [DONE] after an error');
    return;
  }
  t.equal(frames.at(-1)?.data, '[DONE]', '[DONE] last');
  t.equal(chunks.filter((c) => c.choices?.[0]?.finish_reason != null).length, 1, 'finish_reason non-null exactly once');
  const usageChunks = chunks.filter((c) => Array.isArray(c.choices) && c.choices.length === 0);
  t.equal(usageChunks.length, includeUsage ? 1 : 0, `a usage chunk only when include_usage (${includeUsage})`);
  if (includeUsage) {
    t.equal(chunks.at(-1), usageChunks[0], 'the usage chunk right before [DONE]');
    t.ok(chunks.slice(0, -1).every((c) => c.usage === null), 'every other chunk has usage: null');
  } else t.ok(chunks.every((c) => !('usage' in c)), 'no usage key without include_usage');
  const calls = new Map<number, { id?: string; name?: string; args: string }>();
  for (const c of chunks) {
    for (const call of c.choices?.[0]?.delta?.tool_calls ?? []) {
      t.type(call.index, 'number', 'every tool-call fragment has an index');
      const entry = calls.get(call.index) ?? { args: '' };
      if (!calls.has(call.index)) {
        t.ok(call.id && call.type === 'function' && typeof call.function?.name === 'string', 'id, type and name on the first fragment');
        entry.id = call.id;
        entry.name = call.function?.name;
      }
      entry.args += call.function?.arguments ?? '';
      calls.set(call.index, entry);
    }
  }
  for (const call of calls.values()) t.doesNotThrow(() => JSON.parse(call.args), `the arguments of ${call.id} are JSON`);
}

const messageStreams = ['text-then-tools', 'tool-only-length', 'stop-sequence', 'upstream-error'];
for (const name of messageStreams) {
  t.test(`messages: ${name}.parts.json → MessagesStreamEncoder frames`, async (t) => {
    const meta = readJson<MessagesEncodeMeta>(`messages/${name}.meta.json`);
    const frames = run(new MessagesStreamEncoder(meta), events(`messages/${name}.parts.json`));
    expectFrames(t, frames, `messages/${name}.frames.txt`);
    messagesInvariants(t, frames);
  });
}

const responseStreams = ['text-then-tools', 'length', 'upstream-error'];
for (const name of responseStreams) {
  t.test(`responses: ${name}.parts.json → ResponsesStreamEncoder frames`, async (t) => {
    const meta = readMeta(`responses/${name}.meta.json`);
    const frames = run(new ResponsesStreamEncoder(meta), events(`responses/${name}.parts.json`));
    expectFrames(t, frames, `responses/${name}.frames.txt`);
    responsesInvariants(t, frames);
  });
}

const chatStreams = ['tools-usage', 'text-no-usage', 'upstream-error'];
for (const name of chatStreams) {
  t.test(`chat: ${name}.parts.json → ChatChunkEncoder frames`, async (t) => {
    const { meta, includeUsage } = readJson<{ meta: ChatEncodeMeta; includeUsage: boolean }>(`chat/${name}.meta.json`);
    const frames = run(new ChatChunkEncoder(meta, includeUsage), events(`chat/${name}.parts.json`));
    expectFrames(t, frames, `chat/${name}.frames.txt`);
    chatInvariants(t, frames, includeUsage);
  });
}

t.test('the same parts give the same answer in every format', async (t) => {
  // text-then-tools is one answer: each format's frames must carry the same text, calls and usage.
  const parts = events('messages/text-then-tools.parts.json');
  const messages = run(new MessagesStreamEncoder({ id: 'msg_x', model: 'm' }), parts).map((f) => JSON.parse(f.data));
  const responsesFrames = run(new ResponsesStreamEncoder(readMeta('responses/text-then-tools.meta.json')), parts).map((f) => JSON.parse(f.data));
  const chat = run(new ChatChunkEncoder({ id: 'c', created: 1, model: 'm' }, true), parts)
    .filter((f) => f.data !== '[DONE]')
    .map((f) => JSON.parse(f.data));

  const messagesText = messages.filter((d) => d.delta?.type === 'text_delta').map((d) => d.delta.text).join('');
  const messagesCalls = messages
    .filter((d) => d.type === 'content_block_start' && d.content_block.type === 'tool_use')
    .map((d) => ({ id: d.content_block.id, name: d.content_block.name, arguments: messages.filter((x) => x.type === 'content_block_delta' && x.index === d.index).map((x) => x.delta.partial_json).join('') }));
  const final = responsesFrames.at(-1).response;
  const responsesText = final.output.filter((i: any) => i.type === 'message').map((i: any) => i.content[0].text).join('');
  const responsesCalls = final.output.filter((i: any) => i.type === 'function_call').map((i: any) => ({ id: i.call_id, name: i.name, arguments: i.arguments }));
  const chatText = chat.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
  const chatCalls: { id: string; name: string; arguments: string }[] = [];
  for (const c of chat) {
    for (const call of c.choices?.[0]?.delta?.tool_calls ?? []) {
      if (call.id) chatCalls[call.index] = { id: call.id, name: call.function.name, arguments: '' };
      (chatCalls[call.index] as { arguments: string }).arguments += call.function.arguments;
    }
  }
  const expectedCalls = [
    { id: 'toolu_01A', name: 'get_weather', arguments: '{"city":"Paris"}' },
    { id: 'toolu_01B', name: 'get_time', arguments: '{}' },
  ];
  t.equal(messagesText, 'Let me check.', 'messages text');
  t.equal(responsesText, 'Let me check.', 'responses text');
  t.equal(chatText, 'Let me check.', 'chat text');
  t.same(messagesCalls, expectedCalls, 'messages tool calls');
  t.same(responsesCalls, expectedCalls, 'responses tool calls');
  t.same(chatCalls, expectedCalls, 'chat tool calls');
  const md = messages.find((d) => d.type === 'message_delta');
  t.equal(md.usage.input_tokens + md.usage.cache_read_input_tokens + md.usage.cache_creation_input_tokens, 1000, 'messages: the whole prompt');
  t.equal(final.usage.input_tokens, 1000, 'responses: the whole prompt');
  t.equal(chat.at(-1).usage.prompt_tokens, 1000, 'chat: the whole prompt');
});

t.test('tool-call deltas that arrive after the next call started stay with their own call', async (t) => {
  // In chat completions chunks `index` identifies the call on every fragment (wire-formats.md
  // §1), so an OpenAI-compatible upstream may send every call's header first and the
  // arguments after. The OpenAI stream decoder keeps the index on each part...
  let ids = 0;
  const decoder = PROVIDER_FAMILIES.openai.createStreamDecoder({ ...canonicalRequest, stream: true }, openaiProvider, { newToolCallId: () => `call_${++ids}` });
  const chunk = (delta: unknown, finish: string | null = null) => JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
  const upstream = [
    chunk({
      role: 'assistant',
      tool_calls: [
        { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } },
        { index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '' } },
      ],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: '{"tz":"UTC"}' } }] }),
    chunk({}, 'tool_calls'),
    '[DONE]',
  ];
  const parts: GatewayStreamEvent[] = [];
  for (const data of upstream) parts.push(...decoder.push({ data }));
  parts.push(...decoder.end());
  t.strictSame(
    parts,
    [
      { type: 'tool-call-start', index: 0, id: 'call_a', name: 'get_weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":"Paris"}' },
      { type: 'tool-call-start', index: 1, id: 'call_b', name: 'get_time' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"tz":"UTC"}' },
      { type: 'finish', finishReason: 'tool_calls' },
    ],
    'the decoder holds each start until its own arguments begin, so each call\'s arguments follow its start',
  );
  // The encoders do not rely on that order: given interleaved parts, each call keeps its own arguments.
  parts.splice(0, parts.length,
    { type: 'tool-call-start', index: 0, id: 'call_a', name: 'get_weather' },
    { type: 'tool-call-start', index: 1, id: 'call_b', name: 'get_time' },
    { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":"Paris"}' },
    { type: 'tool-call-delta', index: 1, argumentsDelta: '{"tz":"UTC"}' },
    { type: 'finish', finishReason: 'tool_calls' },
  );
  // ...and each ingress encoder must give each call its own arguments.
  const expected = { call_a: '{"city":"Paris"}', call_b: '{"tz":"UTC"}' };

  const chat = run(new ChatChunkEncoder({ id: 'c', created: 1, model: 'm' }, false), parts)
    .filter((f) => f.data !== '[DONE]')
    .map((f) => JSON.parse(f.data));
  const chatArgs: Record<string, string> = {};
  const callIds: string[] = [];
  for (const c of chat) {
    for (const call of c.choices[0].delta.tool_calls ?? []) {
      if (call.id) callIds[call.index] = call.id;
      const id = callIds[call.index] as string;
      chatArgs[id] = (chatArgs[id] ?? '') + call.function.arguments;
    }
  }
  t.same(chatArgs, expected, 'chat: each call has its own arguments');

  const messages = run(new MessagesStreamEncoder({ id: 'msg_x', model: 'm' }), parts).map((f) => JSON.parse(f.data));
  const messagesArgs: Record<string, string> = {};
  for (const start of messages.filter((d) => d.type === 'content_block_start')) {
    messagesArgs[start.content_block.id] = messages.filter((d) => d.type === 'content_block_delta' && d.index === start.index).map((d) => d.delta.partial_json).join('');
  }
  // Regression: every input_json_delta went to the open block whatever its index (invalid JSON).
  t.same(messagesArgs, expected, 'messages: each tool_use block has its own call’s arguments');

  const responses = run(new ResponsesStreamEncoder(readMeta('responses/text-then-tools.meta.json')), parts).map((f) => JSON.parse(f.data));
  const responsesArgs = Object.fromEntries(responses.at(-1).response.output.map((item: any) => [item.call_id, item.arguments]));
  // Regression: likewise for function_call_arguments.delta.
  t.same(responsesArgs, expected, 'responses: each function_call item has its own call’s arguments');
});

// ---------------------------------------------------------------------------------------------
// Decoder rejections: 400 naming the field

interface Rejection {
  name: string;
  body: unknown;
  param: string | null;
  /** The GatewayError's reason (rendered as `error.reason`); invalid_field unless given. */
  reason?: string;
}

function expectRejections(t: Tap, decode: (raw: unknown) => unknown, cases: Rejection[]): void {
  for (const c of cases) {
    const error = thrown(() => decode(c.body));
    t.ok(error instanceof GatewayError, `${c.name}: a GatewayError`);
    t.match(error, { status: 400, type: 'invalid_request_error', param: c.param, reason: c.reason ?? 'invalid_field' }, `${c.name}: 400 with param ${c.param}`);
    t.strictSame(
      error instanceof GatewayError ? error.toBody() : undefined,
      { error: { message: error?.message, type: 'invalid_request_error', code: 400, reason: c.reason ?? 'invalid_field', param: c.param } },
      `${c.name}: the body has the integer code and the reason`,
    );
    if (c.param !== null) t.match(error?.message, new RegExp(`^${c.param.replace(/[.[\]]/g, '\\$&')}: `), `${c.name}: the message starts with the field`);
  }
}

const MSG_USER = [{ role: 'user', content: 'hi' }];
const withToolUse = (result: Record<string, unknown>) => [
  { role: 'user', content: 'weather?' },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }] },
  { role: 'user', content: [result] },
];

t.test('messages: invalid requests → 400 naming the field', async (t) => {
  const base = { model: 'anthropic/claude-haiku-4-5', max_tokens: 100, messages: MSG_USER };
  expectRejections(t, decodeMessagesRequest, [
    { name: 'not an object', body: [base], param: null, reason: 'invalid_body' },
    { name: 'no model', body: { ...base, model: undefined }, param: 'model', reason: 'missing_field' },
    { name: 'empty model', body: { ...base, model: ' ' }, param: 'model' },
    { name: 'no max_tokens', body: { ...base, max_tokens: undefined }, param: 'max_tokens', reason: 'missing_field' },
    { name: 'max_tokens 0', body: { ...base, max_tokens: 0 }, param: 'max_tokens' },
    { name: 'max_tokens 1.5', body: { ...base, max_tokens: 1.5 }, param: 'max_tokens' },
    { name: 'stream "yes"', body: { ...base, stream: 'yes' }, param: 'stream' },
    { name: 'no messages', body: { ...base, messages: undefined }, param: 'messages', reason: 'missing_field' },
    { name: 'empty messages', body: { ...base, messages: [] }, param: 'messages' },
    // A system turn inside messages is accepted (see request-system-turn.json), but only with text.
    { name: 'a system turn with an image', body: { ...base, messages: [...MSG_USER, { role: 'system', content: [{ type: 'image', source: { type: 'url', url: 'https://e.com/a.png' } }] }] }, param: 'messages[1].content[0]' },
    { name: 'a system turn whose content is a number', body: { ...base, messages: [...MSG_USER, { role: 'system', content: 1 }] }, param: 'messages[1].content' },
    { name: 'a developer role inside messages', body: { ...base, messages: [...MSG_USER, { role: 'developer', content: 'be nice' }] }, param: 'messages[1].role' },
    { name: 'a tool role inside messages', body: { ...base, messages: [{ role: 'tool', content: 'x' }] }, param: 'messages[0].role' },
    { name: 'content a number', body: { ...base, messages: [{ role: 'user', content: 7 }] }, param: 'messages[0].content' },
    { name: 'a tool_result for an unknown tool_use_id', body: { ...base, messages: withToolUse({ type: 'tool_result', tool_use_id: 'toolu_other', content: 'x' }) }, param: 'messages[2].content[0].tool_use_id' },
    {
      name: 'a tool_result before its tool_use',
      body: { ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }] }, { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] }] },
      param: 'messages[0].content[0].tool_use_id',
    },
    { name: 'tool_result content a number', body: { ...base, messages: withToolUse({ type: 'tool_result', tool_use_id: 'toolu_1', content: 3 }) }, param: 'messages[2].content[0].content' },
    { name: 'a document block', body: { ...base, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }, param: 'messages[0].content[0].type' },
    { name: 'an image in an assistant turn', body: { ...base, messages: [...MSG_USER, { role: 'assistant', content: [{ type: 'image', source: { type: 'url', url: 'https://e.com/a.png' } }] }] }, param: 'messages[1].content[0].type' },
    { name: 'tool_use input a string', body: { ...base, messages: [...MSG_USER, { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: '{}' }] }] }, param: 'messages[1].content[0].input' },
    { name: 'tool_use without id', body: { ...base, messages: [...MSG_USER, { role: 'assistant', content: [{ type: 'tool_use', name: 'f', input: {} }] }] }, param: 'messages[1].content[0].id' },
    { name: 'image media type', body: { ...base, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'Qk0=' } }] }] }, param: 'messages[0].content[0].source.media_type' },
    { name: 'image url not http', body: { ...base, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'file:///etc/passwd' } }] }] }, param: 'messages[0].content[0].source.url' },
    { name: 'image source type file', body: { ...base, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] }, param: 'messages[0].content[0].source.type' },
    { name: 'text block without text', body: { ...base, messages: [{ role: 'user', content: [{ type: 'text' }] }] }, param: 'messages[0].content[0].text' },
    { name: 'system a number', body: { ...base, system: 5 }, param: 'system' },
    { name: 'system with an image block', body: { ...base, system: [{ type: 'image', source: { type: 'url', url: 'https://e.com/a.png' } }] }, param: 'system[0]' },
    { name: 'cache_control type', body: { ...base, system: [{ type: 'text', text: 'x', cache_control: { type: 'persistent' } }] }, param: 'system[0].cache_control' },
    { name: 'cache_control ttl', body: { ...base, system: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '10m' } }] }, param: 'system[0].cache_control.ttl' },
    { name: 'a server tool', body: { ...base, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }, param: 'tools[0].type' },
    { name: 'tools not an array', body: { ...base, tools: { name: 'f' } }, param: 'tools' },
    { name: 'a tool name with a space', body: { ...base, tools: [{ name: 'get weather', input_schema: { type: 'object' } }] }, param: 'tools[0].name' },
    { name: 'a tool without input_schema', body: { ...base, tools: [{ name: 'f' }] }, param: 'tools[0].input_schema' },
    { name: 'duplicate tool names', body: { ...base, tools: [{ name: 'f', input_schema: {} }, { name: 'f', input_schema: {} }] }, param: 'tools[1].name' },
    { name: 'tool_choice a string', body: { ...base, tool_choice: 'auto' }, param: 'tool_choice' },
    { name: 'tool_choice type', body: { ...base, tool_choice: { type: 'required' } }, param: 'tool_choice.type' },
    { name: 'tool_choice names no tool', body: { ...base, tools: [{ name: 'f', input_schema: {} }], tool_choice: { type: 'tool', name: 'g' } }, param: 'tool_choice.name' },
    { name: 'temperature above 1', body: { ...base, temperature: 1.5 }, param: 'temperature' },
    { name: 'top_p above 1', body: { ...base, top_p: 2 }, param: 'top_p' },
    { name: 'top_k 0', body: { ...base, top_k: 0 }, param: 'top_k' },
    { name: 'an empty stop sequence', body: { ...base, stop_sequences: [''] }, param: 'stop_sequences' },
    { name: 'metadata a string', body: { ...base, metadata: 'x' }, param: 'metadata' },
    { name: 'metadata.user_id a number', body: { ...base, metadata: { user_id: 42 } }, param: 'metadata.user_id' },
  ]);
});

const RESP_CALL = { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{}' };

t.test('responses: invalid requests → 400 naming the field', async (t) => {
  const base = { model: 'openai/gpt-4o-mini', input: 'hi' };
  expectRejections(t, (raw) => decodeResponsesRequest(raw), [
    { name: 'not an object', body: 'hi', param: null, reason: 'invalid_body' },
    { name: 'previous_response_id', body: { ...base, previous_response_id: 'resp_123' }, param: 'previous_response_id' },
    { name: 'conversation', body: { ...base, conversation: 'conv_1' }, param: 'conversation' },
    { name: 'background', body: { ...base, background: true }, param: 'background' },
    { name: 'no model', body: { input: 'hi' }, param: 'model', reason: 'missing_field' },
    { name: 'no input', body: { model: base.model }, param: 'input', reason: 'missing_field' },
    { name: 'empty input', body: { ...base, input: [] }, param: 'input' },
    { name: 'stream "true"', body: { ...base, stream: 'true' }, param: 'stream' },
    { name: 'store "no"', body: { ...base, store: 'no' }, param: 'store' },
    { name: 'instructions an array', body: { ...base, instructions: ['a'] }, param: 'instructions' },
    { name: 'an item_reference', body: { ...base, input: [{ type: 'item_reference', id: 'msg_1' }] }, param: 'input[0].type' },
    // A hosted tool's record (web_search_call ...) is accepted; a type the format does not have is not.
    { name: 'an unknown item type', body: { ...base, input: [{ type: 'telepathy_call', id: 'tp_1' }] }, param: 'input[0].type' },
    { name: 'a function_call_output for an unknown call_id', body: { ...base, input: [RESP_CALL, { type: 'function_call_output', call_id: 'call_2', output: 'x' }] }, param: 'input[1].call_id' },
    { name: 'a function_call_output before its call', body: { ...base, input: [{ type: 'function_call_output', call_id: 'call_1', output: 'x' }, RESP_CALL] }, param: 'input[0].call_id' },
    { name: 'function_call_output output a number', body: { ...base, input: [RESP_CALL, { type: 'function_call_output', call_id: 'call_1', output: 1 }] }, param: 'input[1].output' },
    { name: 'a function_call without call_id', body: { ...base, input: [{ ...RESP_CALL, call_id: undefined }] }, param: 'input[0].call_id' },
    { name: 'function_call arguments an object', body: { ...base, input: [{ ...RESP_CALL, arguments: {} }] }, param: 'input[0].arguments' },
    { name: 'a message with role tool', body: { ...base, input: [{ role: 'tool', content: 'x' }] }, param: 'input[0].role' },
    { name: 'an input_file part', body: { ...base, input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }, param: 'input[0].content[0].type' },
    { name: 'an input_image by file_id', body: { ...base, input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }, param: 'input[0].content[0].image_url' },
    { name: 'an input_image that is no URL', body: { ...base, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'paris.png' }] }] }, param: 'input[0].content[0].image_url' },
    { name: 'a system message with an image', body: { ...base, input: [{ role: 'system', content: [{ type: 'input_image', image_url: 'https://e.com/a.png' }] }] }, param: 'input[0].content[0]' },
    { name: 'a nested chat-style tool', body: { ...base, tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }, param: 'tools[0].name' },
    // A built-in (hosted) tool is dropped, not refused (see 'responses: hosted tools ...' below); an unknown tool type is refused.
    { name: 'an unknown tool type', body: { ...base, tools: [{ type: 'teleport' }] }, param: 'tools[0].type' },
    { name: 'a namespace tool without tools', body: { ...base, tools: [{ type: 'namespace', name: 'ns' }] }, param: 'tools[0].tools' },
    { name: 'a namespace tool holding a non-function', body: { ...base, tools: [{ type: 'namespace', name: 'ns', tools: [{ type: 'web_search' }] }] }, param: 'tools[0].tools[0].type' },
    { name: 'a custom tool name with a dot', body: { ...base, tools: [{ type: 'custom', name: 'a.b' }] }, param: 'tools[0].name' },
    { name: 'a tool name with a dot', body: { ...base, tools: [{ type: 'function', name: 'a.b' }] }, param: 'tools[0].name' },
    { name: 'tool parameters a string', body: { ...base, tools: [{ type: 'function', name: 'f', parameters: '{}' }] }, param: 'tools[0].parameters' },
    { name: 'duplicate tool names', body: { ...base, tools: [{ type: 'function', name: 'f' }, { type: 'function', name: 'f' }] }, param: 'tools[1].name' },
    { name: 'tool_choice names no tool', body: { ...base, tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'g' } }, param: 'tool_choice.name' },
    // Still a 400: `{"type": "function"}` without a name is no hosted tool choice (see the report: decodeToolChoice's catch-all).
    { name: 'tool_choice chat-style', body: { ...base, tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', function: { name: 'f' } } }, param: 'tool_choice' },
    { name: 'text.format json_schema without schema', body: { ...base, text: { format: { type: 'json_schema', name: 'r' } } }, param: 'text.format.schema' },
    { name: 'text.format json_schema without name', body: { ...base, text: { format: { type: 'json_schema', schema: {} } } }, param: 'text.format.name' },
    { name: 'text.format type', body: { ...base, text: { format: { type: 'xml' } } }, param: 'text.format.type' },
    { name: 'max_output_tokens 0', body: { ...base, max_output_tokens: 0 }, param: 'max_output_tokens' },
    { name: 'temperature 3', body: { ...base, temperature: 3 }, param: 'temperature' },
    { name: 'parallel_tool_calls "no"', body: { ...base, parallel_tool_calls: 'no' }, param: 'parallel_tool_calls' },
    { name: 'user a number', body: { ...base, user: 42 }, param: 'user' },
    { name: 'a metadata value that is a number', body: { ...base, metadata: { n: 1 } }, param: 'metadata.n' },
    { name: 'include not an array', body: { ...base, include: 'reasoning.encrypted_content' }, param: 'include' },
    { name: 'reasoning.effort unknown', body: { ...base, reasoning: { effort: 'extreme' } }, param: 'reasoning.effort' },
    { name: 'a custom_tool_call_output for an unknown call_id', body: { ...base, input: [{ type: 'custom_tool_call_output', call_id: 'call_9', output: 'x' }] }, param: 'input[0].call_id' },
    { name: 'a custom_tool_call input an object', body: { ...base, input: [{ type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: {} }] }, param: 'input[0].input' },
    { name: 'a reasoning item with encrypted_content a number', body: { ...base, input: [{ type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 1 }] }, param: 'input[0].encrypted_content' },
    { name: '17 metadata keys', body: { ...base, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, param: 'metadata' },
  ]);
});

t.test('responses: hosted tools and their records are dropped, not refused', async (t) => {
  const base = { model: 'openai/gpt-4o-mini', input: 'hi' };
  const hosted = [{ type: 'web_search_preview' }, { type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'code_interpreter', container: { type: 'auto' } }, { type: 'web_search_preview' }];
  const { draft, echo } = decodeResponsesRequest({ ...base, tools: [...hosted, { type: 'function', name: 'f' }] });
  t.same(draft.droppedTools, ['web_search_preview', 'file_search', 'code_interpreter'], 'each hosted tool type named once in droppedTools, in order');
  t.same(draft.tools?.map((tool) => tool.name), ['f'], 'the function tool is kept');
  t.same(echo.tools, [...hosted, { type: 'function', name: 'f' }], 'the response echoes the tools as the client sent them');
  const only = decodeResponsesRequest({ ...base, tools: [{ type: 'web_search_preview' }] }).draft;
  t.equal(only.tools, undefined, 'only hosted tools: no tools at all');
  t.same(only.droppedTools, ['web_search_preview']);
  const records = decodeResponsesRequest({ ...base, input: [{ role: 'user', content: 'find it' }, { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'x' } }, { role: 'user', content: 'thanks' }] }).draft;
  t.same(records.messages.map((m) => m.role), ['user', 'user'], 'a hosted tool\'s record in input is skipped');
  const choice = decodeResponsesRequest({ ...base, tools: [{ type: 'web_search_preview' }, { type: 'function', name: 'f' }], tool_choice: { type: 'web_search_preview' } }).draft;
  t.same(choice.toolChoice, { type: 'auto' }, 'a hosted tool_choice: the model may call any tool');
  const unknown = thrown(() => decodeResponsesRequest({ ...base, input: [{ type: 'telepathy_call', id: 'tp_1' }] }));
  t.match(unknown?.message, /^input\[0\]\.type: must be message, function_call, function_call_output, custom_tool_call, custom_tool_call_output or reasoning/, 'an unknown item type names the types taken');
});

t.test('chat: invalid requests → 400 naming the field', async (t) => {
  const base = { model: 'openai/gpt-4o-mini', messages: MSG_USER };
  expectRejections(t, (raw) => decodeChatCompletion(raw), [
    { name: 'no messages', body: { model: base.model }, param: 'messages', reason: 'missing_field' },
    { name: 'a tool message for an unknown tool_call_id', body: { ...base, messages: [...MSG_USER, { role: 'tool', tool_call_id: 'call_x', content: 'x' }] }, param: 'messages[1].tool_call_id' },
    { name: 'n 2', body: { ...base, n: 2 }, param: 'n' },
    { name: 'stream_options without stream', body: { ...base, stream_options: { include_usage: true } }, param: 'stream_options' },
    { name: 'a flat Responses-style tool', body: { ...base, tools: [{ type: 'function', name: 'f', parameters: {} }] }, param: 'tools[0]' },
    { name: 'max_tokens and max_completion_tokens differ', body: { ...base, max_tokens: 10, max_completion_tokens: 20 }, param: 'max_tokens' },
    { name: 'tool_choice required without tools', body: { ...base, tool_choice: 'required' }, param: 'tool_choice' },
    { name: 'an audio part', body: { ...base, messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] }, param: 'messages[0].content[0].type' },
  ]);
});
