import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { SseFrame, StreamEncoder } from '../../src/api/inference.js';
import { decodeMessagesRequest } from '../../src/api/messages/decode.js';
import { encodeMessage, encodeMessagesUsage, MessagesStreamEncoder } from '../../src/api/messages/encode.js';
import { decodeResponsesRequest, type ResponsesEcho } from '../../src/api/responses/decode.js';
import { encodeResponse, type ResponsesEncodeMeta } from '../../src/api/responses/encode.js';
import { ResponsesStreamEncoder } from '../../src/api/responses/encode-stream.js';
import { packReasoning, unpackReasoning } from '../../src/api/responses/reasoning.js';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import type { ProviderConfig } from '../../src/config/types.js';
import type { AssistantMessage, ChatRequest, GatewayStreamEvent, ReasoningBlock, StreamPart, Usage } from '../../src/core/canonical.js';
import { PROVIDER_FAMILIES } from '../../src/providers/registry.js';

/**
 * The ingress encoders with what coding agents need from them: reasoning (Claude's signed
 * thinking, other families' reasoning text) as the responses format's reasoning items (Claude's
 * blocks packed in encrypted_content, decoded back on the next turn) and as the messages
 * format's thinking blocks (signature_delta; `gateway:<family>` for another family's); a call to
 * a Codex custom tool as a custom_tool_call, to a namespace function with its namespace; the
 * prompt's usage in message_start. Echoes come from the recorded Codex bodies
 * (test/fixtures/agents/codex), as the responses handler builds them.
 */

const AGENTS = join(PACKAGE_ROOT, 'test/fixtures/agents');
const recordedBody = (path: string): Record<string, any> => (JSON.parse(readFileSync(join(AGENTS, path), 'utf8')) as { body: Record<string, any> }).body;

const codexUnknown = recordedBody('codex/01-responses-tool-call.json');
const codexKnown = recordedBody('codex/known-model-gpt-5.5/01-responses-tool-call.json');

function run(encoder: StreamEncoder, parts: GatewayStreamEvent[]): any[] {
  const frames: SseFrame[] = [...encoder.start()];
  for (const part of parts) frames.push(...encoder.encode(part));
  return frames.map((frame) => {
    const data = JSON.parse(frame.data);
    if (frame.event !== undefined && frame.event !== data.type) throw new Error(`event ${frame.event} carries type ${data.type}`);
    return data;
  });
}

const usage: Usage = { inputTokens: 3084, outputTokens: 40, cacheReadTokens: 1024, cacheWriteTokens: 2048, reasoningTokens: 12 };
const meta = (echo: ResponsesEcho): ResponsesEncodeMeta => ({ id: 'resp_agent', createdAt: 1_700_000_000, model: 'anthropic/claude-sonnet-4-5', echo });

/** Checks openai-node's / Codex's rules on a responses stream: sequence numbers, item events naming their item of the right type. */
function itemEventsConsistent(t: Tap, data: any[]): void {
  t.same(data.map((d) => d.sequence_number), data.map((_, i) => i), 'sequence_number 0, 1, 2 …');
  const output: any[] = [];
  const problems: string[] = [];
  const typeOf: Record<string, string> = {
    'response.reasoning_summary': 'reasoning',
    'response.function_call_arguments': 'function_call',
    'response.custom_tool_call_input': 'custom_tool_call',
    'response.output_text': 'message',
    'response.content_part': 'message',
  };
  for (const d of data) {
    if (d.type === 'response.output_item.added') {
      if (d.output_index !== output.length) problems.push(`added at ${d.output_index}`);
      output.push(d.item);
    } else if (d.type === 'response.output_item.done') {
      const item = output[d.output_index];
      if (!item || item.id !== d.item.id || item.type !== d.item.type) problems.push(`done ${d.output_index} changes the item`);
      output[d.output_index] = d.item;
    } else if (typeof d.item_id === 'string') {
      const item = output[d.output_index];
      const prefix = Object.keys(typeOf).find((p) => d.type.startsWith(p));
      if (!item || item.id !== d.item_id || (prefix && item.type !== typeOf[prefix])) problems.push(`${d.type} names ${d.item_id} at ${d.output_index}`);
    }
  }
  t.same(problems, [], 'item events name their item, of the right type');
  const final = data.at(-1);
  // A reasoning item's status: `completed` in its output_item.done, absent from the final
  // response's copy (encode-stream.ts closeReasoning sets it on the frame only). Compared
  // without it; the difference is pinned separately as a todo (see the report).
  t.strictSame(final.response.output, output, 'the final response carries every item as done (reasoning items with their status too)');
}

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

// ---------------------------------------------------------------------------------------------
// Responses

t.test('responses stream: Claude\'s thinking as a reasoning item, packed in encrypted_content, then text and a namespace call', async (t) => {
  const { echo } = decodeResponsesRequest(codexUnknown);
  t.equal(echo.encryptedReasoning, true, 'Codex asks for reasoning.encrypted_content');
  const parts: GatewayStreamEvent[] = [
    { type: 'prompt-usage', usage },
    { type: 'reasoning-delta', family: 'anthropic', text: 'The user wants ' },
    { type: 'reasoning-delta', family: 'anthropic', text: 'a shell command.' },
    { type: 'reasoning-end', family: 'anthropic', signature: 'EqQBCgIYAhIMsig' },
    { type: 'text-delta', text: 'Running it.' },
    { type: 'tool-call-start', index: 0, id: 'toolu_1', name: 'multi_agent_v1__spawn_agent' },
    { type: 'tool-call-delta', index: 0, argumentsDelta: '{"message":' },
    { type: 'tool-call-delta', index: 0, argumentsDelta: '"go"}' },
    { type: 'usage', usage },
    { type: 'finish', finishReason: 'tool_calls' },
  ];
  const data = run(new ResponsesStreamEncoder(meta(echo)), parts);
  t.same(data.map((d) => d.type), [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.reasoning_summary_part.added',
    'response.reasoning_summary_text.delta',
    'response.reasoning_summary_text.delta',
    'response.reasoning_summary_text.done',
    'response.reasoning_summary_part.done',
    'response.output_item.done',
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.output_item.added',
    'response.function_call_arguments.delta',
    'response.function_call_arguments.delta',
    'response.function_call_arguments.done',
    'response.output_item.done',
    'response.completed',
  ], 'the events in order: the reasoning item closed before the text');
  itemEventsConsistent(t, data);

  const added = data[2];
  t.match(added, { output_index: 0, item: { type: 'reasoning', summary: [], encrypted_content: null } }, 'the reasoning item opens empty');
  t.match(data[3], { item_id: added.item.id, summary_index: 0, part: { type: 'summary_text', text: '' } });
  t.same(data.slice(4, 6).map((d) => d.delta), ['The user wants ', 'a shell command.'], 'the thinking as summary text deltas');
  t.match(data[6], { text: 'The user wants a shell command.' });
  t.match(data[7], { part: { type: 'summary_text', text: 'The user wants a shell command.' } });
  const reasoning = data[8].item;
  t.match(reasoning, { type: 'reasoning', id: added.item.id, status: 'completed', summary: [{ type: 'summary_text', text: 'The user wants a shell command.' }] });
  t.type(reasoning.encrypted_content, 'string', 'encrypted_content, as include asked');
  t.strictSame(unpackReasoning(reasoning.encrypted_content), [{ family: 'anthropic', text: 'The user wants a shell command.', signature: 'EqQBCgIYAhIMsig' }], 'it packs Claude\'s block with its signature');

  const call = data[15].item;
  t.match(call, { type: 'function_call', call_id: 'toolu_1', name: 'spawn_agent', namespace: 'multi_agent_v1', arguments: '' }, 'the namespace function by its own name, with its namespace');
  t.match(data[18], { name: 'spawn_agent', arguments: '{"message":"go"}' });
  t.match(data[19].item, { type: 'function_call', name: 'spawn_agent', namespace: 'multi_agent_v1', arguments: '{"message":"go"}', status: 'completed' });
  const final = data.at(-1).response;
  t.match(final, { status: 'completed', store: false, reasoning: { effort: null, summary: 'auto' }, usage: { input_tokens: 3084, output_tokens: 40, output_tokens_details: { reasoning_tokens: 12 } } });
  t.same(final.output.map((item: { type: string }) => item.type), ['reasoning', 'message', 'function_call']);

  await t.test('the next turn sends the items back: Claude gets its signed block again, the call its flattened name', async (t) => {
    const next = {
      ...codexUnknown,
      input: [
        ...codexUnknown.input,
        ...final.output,
        { type: 'function_call_output', call_id: 'toolu_1', output: 'spawned' },
      ],
    };
    const { draft } = decodeResponsesRequest(next);
    const assistant = draft.messages.at(-2) as AssistantMessage;
    t.equal(assistant.role, 'assistant');
    t.strictSame(assistant.reasoning, [{ family: 'anthropic', text: 'The user wants a shell command.', signature: 'EqQBCgIYAhIMsig' }], 'the reasoning item → the turn\'s reasoning, with the signature');
    t.same(assistant.content, [{ type: 'text', text: 'Running it.' }], 'the message with the call in one turn');
    t.strictSame(assistant.toolCalls, [{ id: 'toolu_1', name: 'multi_agent_v1__spawn_agent', arguments: '{"message":"go"}' }], 'the call under its flattened name');
    t.match(draft.messages.at(-1), { role: 'tool', toolCallId: 'toolu_1' });
    const nativeInput = draft.native?.body.input as { type?: string }[];
    t.notOk(nativeInput.some((item) => item.type === 'reasoning'), 'the gateway\'s packed reasoning is not sent to an upstream that takes the format natively');

    const request = { ...structuredClone(draft), model: 'anthropic/claude-sonnet-4-5', upstreamModel: 'claude-sonnet-4-5', maxTokens: 16_000 } as ChatRequest;
    const provider: ProviderConfig = {
      name: 'test-anthropic', type: 'anthropic', baseUrl: 'http://upstream.test', apiKey: 'k', apiKeys: ['k'], headers: {},
      timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 }, maxTokensParam: 'max_tokens',
    };
    const body = PROVIDER_FAMILIES.anthropic.buildChatRequest(request, provider).body as Record<string, any>;
    const replayed = body.messages.at(-2);
    t.match(replayed, { role: 'assistant', content: [{ type: 'thinking', thinking: 'The user wants a shell command.', signature: 'EqQBCgIYAhIMsig' }, { type: 'text', text: 'Running it.' }, { type: 'tool_use', id: 'toolu_1', name: 'multi_agent_v1__spawn_agent' }] }, 'Claude gets its thinking block first in the turn');
    t.same(body.thinking, { type: 'enabled', budget_tokens: 8192 }, 'and, its signed block replayed, thinking stays on');
  });
});

t.test('responses stream: a custom tool\'s call ends in custom_tool_call_input.delta and .done, its input unwrapped', async (t) => {
  const { echo } = decodeResponsesRequest(codexKnown);
  const patch = '*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch';
  const args = JSON.stringify({ input: patch });
  const parts: GatewayStreamEvent[] = [
    { type: 'tool-call-start', index: 0, id: 'call_p', name: 'apply_patch' },
    { type: 'tool-call-delta', index: 0, argumentsDelta: args.slice(0, 20) },
    { type: 'tool-call-delta', index: 0, argumentsDelta: args.slice(20) },
    { type: 'tool-call-start', index: 1, id: 'call_e', name: 'exec_command' },
    { type: 'tool-call-delta', index: 1, argumentsDelta: '{"cmd":"ls"}' },
    { type: 'usage', usage },
    { type: 'finish', finishReason: 'tool_calls' },
  ];
  const data = run(new ResponsesStreamEncoder(meta(echo)), parts);
  t.same(data.map((d) => d.type), [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.custom_tool_call_input.delta',
    'response.custom_tool_call_input.done',
    'response.output_item.done',
    'response.output_item.added',
    'response.function_call_arguments.delta',
    'response.function_call_arguments.done',
    'response.output_item.done',
    'response.completed',
  ], 'no argument deltas for the custom call: its input once the call is whole');
  itemEventsConsistent(t, data);
  t.match(data[2].item, { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '', status: 'in_progress' });
  t.match(data[3], { item_id: data[2].item.id, output_index: 0, delta: patch }, 'the input unwrapped from {"input": ...}');
  t.match(data[4], { item_id: data[2].item.id, output_index: 0, input: patch });
  t.strictSame(data[5].item, { ...data[2].item, input: patch, status: 'completed' });
  t.notOk('namespace' in data[6].item || 'arguments' in data[5].item, 'a plain function has no namespace; a custom call no arguments');
  t.match(data[9].item, { type: 'function_call', name: 'exec_command', arguments: '{"cmd":"ls"}' });

  const unwrapped = run(new ResponsesStreamEncoder(meta(echo)), [
    { type: 'tool-call-start', index: 0, id: 'call_q', name: 'apply_patch' },
    { type: 'tool-call-delta', index: 0, argumentsDelta: 'not json at all' },
    { type: 'finish', finishReason: 'tool_calls' },
  ]);
  t.match(unwrapped.find((d) => d.type === 'response.custom_tool_call_input.done'), { input: 'not json at all' }, 'arguments that are not {"input"} JSON: the text as the input');

  await t.test('sent back, the custom call is a call of the function with its input', async (t) => {
    const custom = data.at(-1).response.output[0];
    const next = { ...codexKnown, input: [...codexKnown.input, custom, { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' }] };
    const { draft } = decodeResponsesRequest(next);
    t.strictSame((draft.messages.at(-2) as AssistantMessage).toolCalls, [{ id: 'call_p', name: 'apply_patch', arguments: args }]);
    t.match(draft.messages.at(-1), { role: 'tool', toolCallId: 'call_p', content: [{ type: 'text', text: 'Done!' }] });
  });
});

t.test('responses: reasoning items without Claude\'s blocks, or without include, carry no encrypted_content', async (t) => {
  const { echo } = decodeResponsesRequest(codexUnknown);
  const gemini = run(new ResponsesStreamEncoder(meta(echo)), [
    { type: 'reasoning-delta', family: 'gemini', text: 'Thinking about it' },
    { type: 'text-delta', text: 'Hi' },
    { type: 'finish', finishReason: 'stop' },
  ]);
  itemEventsConsistent(t, gemini);
  const item = gemini.find((d) => d.type === 'response.output_item.done' && d.item.type === 'reasoning').item;
  t.match(item, { summary: [{ type: 'summary_text', text: 'Thinking about it' }], encrypted_content: null }, 'a Gemini thought: its text, nothing to send back');
  t.equal(gemini.findIndex((d) => d.type === 'response.output_item.done' && d.item.type === 'reasoning') < gemini.findIndex((d) => d.type === 'response.output_text.delta'), true, 'the reasoning item is done before the text starts');

  const withoutInclude = decodeResponsesRequest({ ...codexUnknown, include: [] }).echo;
  t.equal(withoutInclude.encryptedReasoning, false);
  const claude = run(new ResponsesStreamEncoder(meta(withoutInclude)), [
    { type: 'reasoning-delta', family: 'anthropic', text: 'x' },
    { type: 'reasoning-end', family: 'anthropic', signature: 'sig' },
    { type: 'finish', finishReason: 'stop' },
  ]);
  t.equal(claude.find((d) => d.type === 'response.output_item.done').item.encrypted_content, null, 'no include: no encrypted_content');

  const redacted = run(new ResponsesStreamEncoder(meta(echo)), [
    { type: 'reasoning-end', family: 'anthropic', redacted: 'opaque' },
    { type: 'text-delta', text: 'Hi' },
    { type: 'finish', finishReason: 'stop' },
  ]);
  const redactedItem = redacted.find((d) => d.type === 'response.output_item.done').item;
  t.same(redactedItem.summary, [], 'a redacted block: no summary text');
  t.strictSame(unpackReasoning(redactedItem.encrypted_content), [{ family: 'anthropic', text: '', redacted: 'opaque' }], 'but its data packed');

  const openai = decodeResponsesRequest({ ...codexUnknown, input: [{ type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAAABopenai-own' }, { role: 'user', content: 'hi' }] }).draft;
  t.same(openai.messages.map((m) => m.role), ['user'], 'OpenAI\'s own encrypted content is meaningful to OpenAI only: no reasoning for another family');
  t.equal(unpackReasoning('gateway.v1.not-base64-json!'), undefined, 'a damaged packed value is not trusted');
});

t.test('responses JSON: encodeResponse puts the reasoning first and maps calls back', async (t) => {
  const { echo } = decodeResponsesRequest(codexKnown);
  const reasoning: ReasoningBlock[] = [{ family: 'anthropic', text: 'Plan.', signature: 'sig1' }];
  const body = encodeResponse(
    {
      text: 'Patching.',
      toolCalls: [{ id: 'call_p', name: 'apply_patch', arguments: '{"input":"*** Begin Patch\\n*** End Patch"}' }],
      finishReason: 'tool_calls',
      reasoning,
    },
    usage,
    meta(echo),
  );
  t.same(body.output.map((item) => item.type), ['reasoning', 'message', 'custom_tool_call']);
  t.match(body.output[0], { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Plan.' }], encrypted_content: packReasoning(reasoning) });
  t.match(body.output[2], { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch', status: 'completed' });
  t.match(body, { store: false, reasoning: { effort: 'medium', summary: null }, text: { verbosity: 'low', format: { type: 'text' } } }, 'the echoed fields');
});

// ---------------------------------------------------------------------------------------------
// Messages

const promptUsage: Usage = { inputTokens: 3084, outputTokens: 1, cacheReadTokens: 1024, cacheWriteTokens: 2048, reasoningTokens: 0 };

t.test('messages stream: message_start states the prompt usage given in meta', async (t) => {
  const data = run(new MessagesStreamEncoder({ id: 'msg_x', model: 'openai/gpt-5', promptUsage }), [{ type: 'finish', finishReason: 'stop' }]);
  t.strictSame(data[0].message.usage, { input_tokens: 12, output_tokens: 1, cache_creation_input_tokens: 2048, cache_read_input_tokens: 1024 }, 'Anthropic\'s split: input_tokens without cache reads and writes');
  t.strictSame(data[0].message.usage, encodeMessagesUsage(promptUsage));
  const estimate: Usage = { inputTokens: 19_117, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
  t.match(run(new MessagesStreamEncoder({ id: 'msg_y', model: 'gemini/gemini-2.5-flash', promptUsage: estimate }), [])[0].message.usage, { input_tokens: 19_117 }, 'the gateway\'s estimate when the upstream gives none first');
});

t.test('messages stream: Claude\'s thinking as a thinking block with thinking_delta and its signature_delta', async (t) => {
  const data = run(new MessagesStreamEncoder({ id: 'msg_x', model: 'anthropic/claude-sonnet-4-5', promptUsage }), [
    { type: 'prompt-usage', usage: promptUsage },
    { type: 'reasoning-delta', family: 'anthropic', text: 'Let me ' },
    { type: 'reasoning-delta', family: 'anthropic', text: 'run it.' },
    { type: 'reasoning-end', family: 'anthropic', signature: 'EqQBsig' },
    { type: 'reasoning-end', family: 'anthropic', redacted: 'opaque-data' },
    { type: 'text-delta', text: 'Running.' },
    { type: 'tool-call-start', index: 0, id: 'toolu_1', name: 'Bash' },
    { type: 'tool-call-delta', index: 0, argumentsDelta: '{"command":"echo hi"}' },
    { type: 'usage', usage },
    { type: 'finish', finishReason: 'tool_calls' },
  ]);
  t.same(data.map((d) => [d.type, d.index ?? null, d.delta?.type ?? d.content_block?.type ?? null]), [
    ['message_start', null, null],
    ['content_block_start', 0, 'thinking'],
    ['ping', null, null],
    ['content_block_delta', 0, 'thinking_delta'],
    ['content_block_delta', 0, 'thinking_delta'],
    ['content_block_delta', 0, 'signature_delta'],
    ['content_block_stop', 0, null],
    ['content_block_start', 1, 'redacted_thinking'],
    ['content_block_stop', 1, null],
    ['content_block_start', 2, 'text'],
    ['content_block_delta', 2, 'text_delta'],
    ['content_block_stop', 2, null],
    ['content_block_start', 3, 'tool_use'],
    ['content_block_delta', 3, 'input_json_delta'],
    ['content_block_stop', 3, null],
    ['message_delta', null, null],
    ['message_stop', null, null],
  ], 'blocks in order: thinking, redacted_thinking, text, tool_use');
  t.strictSame(data[1].content_block, { type: 'thinking', thinking: '', signature: '' });
  t.same([data[3].delta.thinking, data[4].delta.thinking], ['Let me ', 'run it.']);
  t.strictSame(data[5].delta, { type: 'signature_delta', signature: 'EqQBsig' }, 'Claude\'s own signature');
  t.strictSame(data[7].content_block, { type: 'redacted_thinking', data: 'opaque-data' });
  t.match(data.at(-2), { delta: { stop_reason: 'tool_use' }, usage: { input_tokens: 12, output_tokens: 40 } });

  // Replayed by Claude Code, the blocks decode to the turn's reasoning and go back to Claude as they were.
  const replay = decodeMessagesRequest({
    model: 'anthropic/claude-sonnet-4-5',
    max_tokens: 32_000,
    messages: [
      { role: 'user', content: 'Run it' },
      { role: 'assistant', content: [{ ...data[1].content_block, thinking: 'Let me run it.', signature: 'EqQBsig' }, data[7].content_block, { type: 'text', text: 'Running.' }, { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'echo hi' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hi' }] },
    ],
    thinking: { type: 'enabled', budget_tokens: 31_999 },
  });
  t.strictSame((replay.messages[1] as AssistantMessage).reasoning, [{ family: 'anthropic', text: 'Let me run it.', signature: 'EqQBsig' }, { family: 'anthropic', text: '', redacted: 'opaque-data' }]);
});

t.test('messages stream: another family\'s reasoning is a thinking block signed gateway:<family>', async (t) => {
  for (const family of ['gemini', 'openai'] as const) {
    const data = run(new MessagesStreamEncoder({ id: 'msg_x', model: `${family}/m`, promptUsage }), [
      { type: 'reasoning-delta', family, text: 'Considering.' },
      { type: 'text-delta', text: 'Answer.' },
      { type: 'finish', finishReason: 'stop' },
    ]);
    t.same(data.slice(1, 6).map((d) => d.delta ?? d.content_block ?? { type: d.type }), [
      { type: 'thinking', thinking: '', signature: '' },
      { type: 'ping' },
      { type: 'thinking_delta', thinking: 'Considering.' },
      { type: 'signature_delta', signature: `gateway:${family}` },
      { type: 'content_block_stop' },
    ], `${family}: thinking_delta, then the gateway's signature when the text starts`);
    t.match(data[6], { type: 'content_block_start', index: 1, content_block: { type: 'text' } });
  }
  // Sent back, the gateway's mark makes it that family's reasoning: never replayed to Claude.
  const draft = decodeMessagesRequest({
    model: 'anthropic/claude-sonnet-4-5',
    max_tokens: 1024,
    messages: [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'Considering.', signature: 'gateway:gemini' }, { type: 'text', text: 'Answer.' }] },
      { role: 'user', content: 'and?' },
    ],
  });
  t.strictSame((draft.messages[1] as AssistantMessage).reasoning, [{ family: 'gemini', text: 'Considering.' }], 'gateway:gemini → Gemini\'s reasoning, no signature');
  const request = { ...structuredClone(draft), upstreamModel: 'claude-sonnet-4-5', maxTokens: 1024 } as ChatRequest;
  const provider: ProviderConfig = {
    name: 'a', type: 'anthropic', baseUrl: 'http://upstream.test', apiKey: 'k', apiKeys: ['k'], headers: {},
    timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 }, maxTokensParam: 'max_tokens',
  };
  const body = PROVIDER_FAMILIES.anthropic.buildChatRequest(request, provider).body as Record<string, any>;
  t.same(body.messages[1].content, [{ type: 'text', text: 'Answer.' }], 'Claude does not get another family\'s reasoning');
});

t.test('messages JSON: encodeMessage puts thinking blocks first', async (t) => {
  const body = encodeMessage(
    { text: 'Hi', toolCalls: [], finishReason: 'stop', reasoning: [{ family: 'anthropic', text: 'a', signature: 's' }, { family: 'gemini', text: 'b' }, { family: 'anthropic', text: '', redacted: 'r' }] },
    usage,
    { id: 'msg_x', model: 'm' },
  );
  t.strictSame(body.content, [
    { type: 'thinking', thinking: 'a', signature: 's' },
    { type: 'thinking', thinking: 'b', signature: 'gateway:gemini' },
    { type: 'redacted_thinking', data: 'r' },
    { type: 'text', text: 'Hi', citations: null },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Upstream streams → the agents' formats, end to end (pure)

const request = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'test/fixtures/request.canonical.json'), 'utf8')) as ChatRequest;
const providerOf = (type: 'anthropic' | 'gemini' | 'openai'): ProviderConfig => ({
  name: `test-${type}`, type, baseUrl: 'http://upstream.test', apiKey: 'k', apiKeys: ['k'], headers: {},
  timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 }, maxTokensParam: 'max_tokens',
});

function decode(type: 'anthropic' | 'gemini' | 'openai', lines: unknown[]): StreamPart[] {
  const decoder = PROVIDER_FAMILIES[type].createStreamDecoder({ ...request, stream: true }, providerOf(type), { newToolCallId: () => 'call_1' });
  const parts: StreamPart[] = [];
  for (const line of lines) parts.push(...decoder.push({ data: typeof line === 'string' ? line : JSON.stringify(line) }));
  parts.push(...decoder.end());
  return parts;
}

t.test('an Anthropic stream with thinking → Claude Code\'s frames: prompt usage first, the signature kept', async (t) => {
  const parts = decode('anthropic', [
    { type: 'message_start', message: { id: 'msg_u', usage: { input_tokens: 12, cache_creation_input_tokens: 2048, cache_read_input_tokens: 1024, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm.' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQB' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'more' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } },
    { type: 'content_block_stop', index: 1 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } },
    { type: 'message_stop' },
  ]);
  t.strictSame(parts.slice(0, 3), [
    { type: 'prompt-usage', usage: { inputTokens: 3084, outputTokens: 1, cacheReadTokens: 1024, cacheWriteTokens: 2048, reasoningTokens: 0 } },
    { type: 'reasoning-delta', family: 'anthropic', text: 'Hmm.' },
    { type: 'reasoning-end', family: 'anthropic', signature: 'EqQBmore' },
  ]);
  const first = parts[0] as Extract<StreamPart, { type: 'prompt-usage' }>;
  const frames = run(new MessagesStreamEncoder({ id: 'msg_x', model: 'anthropic/claude-sonnet-4-5', promptUsage: first.usage }), parts);
  t.strictSame(frames[0].message.usage, { input_tokens: 12, output_tokens: 1, cache_creation_input_tokens: 2048, cache_read_input_tokens: 1024 }, 'message_start: Claude\'s own prompt figures');
  t.strictSame(frames.find((d) => d.delta?.type === 'signature_delta').delta.signature, 'EqQBmore', 'the whole signature, in one signature_delta');
  t.match(frames.at(-2), { usage: { input_tokens: 12, output_tokens: 9, cache_read_input_tokens: 1024, cache_creation_input_tokens: 2048 } });
});

t.test('an OpenAI-compatible stream with reasoning_content → reasoning parts → thinking block / reasoning item', async (t) => {
  const chunk = (delta: unknown, finish: string | null = null) => ({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
  const parts = decode('openai', [chunk({ role: 'assistant', reasoning_content: 'Thinking' }), chunk({ content: 'Done' }), chunk({}, 'stop'), '[DONE]']);
  t.strictSame(parts.filter((p) => p.type === 'reasoning-delta'), [{ type: 'reasoning-delta', family: 'openai', text: 'Thinking' }]);
  const messages = run(new MessagesStreamEncoder({ id: 'msg_x', model: 'openai/deepseek' }), parts);
  t.match(messages.find((d) => d.delta?.type === 'signature_delta'), { delta: { signature: 'gateway:openai' } });
  const { echo } = decodeResponsesRequest(codexUnknown);
  const responses = run(new ResponsesStreamEncoder(meta(echo)), parts);
  t.match(responses.at(-1).response.output, [{ type: 'reasoning', summary: [{ text: 'Thinking' }], encrypted_content: null }, { type: 'message' }]);
});

t.test('a Gemini stream with thoughts → reasoning (family gemini)', async (t) => {
  const parts = decode('gemini', [
    { candidates: [{ content: { role: 'model', parts: [{ text: 'Pondering', thought: true }, { text: 'Answer' }] }, index: 0 }] },
    { candidates: [{ content: { role: 'model', parts: [{ text: '.' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, thoughtsTokenCount: 3, totalTokenCount: 10 } },
  ]);
  t.strictSame(parts.slice(0, 2), [{ type: 'reasoning-delta', family: 'gemini', text: 'Pondering' }, { type: 'text-delta', text: 'Answer' }]);
  const messages = run(new MessagesStreamEncoder({ id: 'msg_x', model: 'gemini/gemini-2.5-flash' }), parts);
  t.match(messages.find((d) => d.delta?.type === 'signature_delta'), { delta: { signature: 'gateway:gemini' } }, 'Claude Code gets it as a thinking block signed gateway:gemini');
});
