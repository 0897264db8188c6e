import t from 'tap';
import type { ProviderConfig } from '../../src/config/types.js';
import type { ChatRequest, StreamPart } from '../../src/core/canonical.js';
import { isGatewayError } from '../../src/core/errors.js';
import { openAiFamily } from '../../src/providers/openai/index.js';
import { SseParser } from '../../src/providers/shared/sse-parser.js';
import { itemId, responsesStreamPlan, type SimItem } from '../support/simulator/openai-responses-wire.js';

/**
 * The OpenAI family's native responses path (src/providers/openai/responses-*.ts): which
 * attempts go natively, the body they send, and an upstream Response (JSON, or the stream the
 * simulator renders) read back into the canonical parts the gateway meters, with every event
 * kept for the relay.
 */

function provider(responses: boolean): ProviderConfig {
  return {
    name: 'oai',
    type: 'openai',
    baseUrl: 'http://upstream.test/v1',
    apiKey: 'upstream-secret',
    apiKeys: ['upstream-secret'],
    headers: {},
    timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 },
    maxTokensParam: 'max_completion_tokens',
    ...(responses ? { responses: true } : {}),
  };
}

const clientBody = {
  model: 'openai/gpt-5-mini',
  input: [{ type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAAABopaque' }, { role: 'user', content: 'hi' }],
  tools: [{ type: 'web_search' }, { type: 'function', name: 'f', parameters: { type: 'object' } }],
  include: ['reasoning.encrypted_content'],
  reasoning: { effort: 'low', summary: 'auto' },
};

function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    model: 'openai/gpt-5-mini',
    upstreamModel: 'gpt-5-mini',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    maxTokens: 777,
    stream: false,
    native: { format: 'responses', extraBytes: 0, body: structuredClone(clientBody) },
    ...overrides,
  };
}

const context = { newToolCallId: () => 'call_generated' };

t.test('a responses-format call to a provider marked responses: true goes to its /v1/responses, as the client sent it', async (t) => {
  const built = openAiFamily.buildChatRequest(request({ stream: true }), provider(true));
  t.equal(built.url, 'http://upstream.test/v1/responses');
  t.equal(built.native, true);
  t.equal(built.headers.authorization, 'Bearer upstream-secret');
  t.strictSame(built.body, { ...clientBody, model: 'gpt-5-mini', max_output_tokens: 777, stream: true, store: false }, 'the per-attempt fields set; nothing stored upstream');

  const stored = openAiFamily.buildChatRequest(request({ native: { format: 'responses', extraBytes: 0, body: { ...clientBody, store: true } } }), provider(true));
  t.equal((stored.body as Record<string, unknown>).store, true, "the client's own store is kept");

  const plain = openAiFamily.buildChatRequest(request(), provider(false));
  t.equal(plain.url, 'http://upstream.test/v1/chat/completions', 'a provider without responses: true gets chat completions');
  t.notOk(plain.native);
  const canonical = openAiFamily.buildChatRequest(request({ native: undefined }), provider(true));
  t.equal(canonical.url, 'http://upstream.test/v1/chat/completions', 'a call from another format too');
});

t.test('a Response object is the native answer, read for billing', async (t) => {
  const body = {
    id: 'resp_upstream',
    object: 'response',
    status: 'completed',
    output: [
      { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking' }], encrypted_content: 'gAAAAABx' },
      { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } },
      { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] },
      { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{"a":1}', status: 'completed' },
    ],
    usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 40 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 12 }, total_tokens: 130 },
  };
  const result = openAiFamily.parseChatResponse(body, request(), context);
  t.equal(result.native, body, 'the upstream body itself');
  t.equal(result.text, 'Hello');
  t.strictSame(result.toolCalls, [{ id: 'call_1', name: 'f', arguments: '{"a":1}' }]);
  t.equal(result.finishReason, 'tool_calls');
  t.strictSame(result.usage, { inputTokens: 100, outputTokens: 30, cacheReadTokens: 40, cacheWriteTokens: 0, reasoningTokens: 12 });
  t.equal(result.reasoning?.[0]?.text, 'thinking');

  const cut = openAiFamily.parseChatResponse({ ...body, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [body.output[2]] }, request(), context);
  t.equal(cut.finishReason, 'length');

  const completion = { id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] };
  const chat = openAiFamily.parseChatResponse(completion, request(), context);
  t.equal(chat.native, undefined, 'a chat completion (another deployment served it) is read as one');
  t.equal(chat.text, 'hi');
});

/** The simulator's stream for these items, decoded; `cut` drops the events from that index on. */
function decode(items: SimItem[], options: { cut?: number; failAt?: number } = {}): { parts: StreamPart[]; error?: unknown } {
  const meta = { id: 'resp_upstream', createdAt: 1, model: 'gpt-5-mini', body: {} };
  const plan = responsesStreamPlan(meta, items, items.some((i) => i.kind === 'function') ? 'tool_calls' : 'stop', { input: 50, output: 20, cacheRead: 10, cacheWrite: 0, reasoning: 5 }, 3);
  const frames = plan.events.slice(0, options.cut).map((event, i) => plan.frame(event, i));
  if (options.failAt !== undefined) frames.splice(options.failAt, frames.length, plan.frame(plan.errorEvent('boom'), options.failAt));
  const decoder = openAiFamily.createStreamDecoder(request({ stream: true }), provider(true), context);
  const parser = new SseParser();
  const parts: StreamPart[] = [];
  try {
    for (const frame of frames) for (const event of parser.push(frame)) parts.push(...decoder.push(event));
    parts.push(...decoder.end());
  } catch (error) {
    return { parts, error };
  }
  return { parts, error: undefined };
}

t.test('a responses stream: every event relayed, the canonical parts metered', async (t) => {
  const items: SimItem[] = [
    { kind: 'reasoning', id: itemId('rs'), summary: 'Plan it', encrypted: 'gAAAAABz' },
    { kind: 'web_search', id: itemId('ws'), query: 'q' },
    { kind: 'message', id: itemId('msg'), text: 'Hello there' },
    { kind: 'function', id: itemId('fc'), callId: 'call_9', name: 'get_weather', arguments: '{"city":"Paris"}' },
  ];
  const { parts, error } = decode(items);
  t.equal(error, undefined);
  const native = parts.flatMap((p) => (p.type === 'native' ? [p.event.type] : []));
  const canonical = parts.filter((p) => p.type !== 'native');
  t.equal(native[0], 'response.created', 'the first event, as it came');
  t.equal(native.at(-1), 'response.completed');
  t.ok(native.includes('response.web_search_call.completed'), 'events with no canonical part too');
  const text = (type: string): string => canonical.map((p) => (p.type === type && 'text' in p ? p.text : '')).join('');
  t.equal(text('reasoning-delta'), 'Plan it');
  t.equal(text('text-delta'), 'Hello there');
  t.ok(canonical.some((p) => p.type === 'reasoning-end'), 'the reasoning block closed');
  t.match(canonical.find((p) => p.type === 'tool-call-start'), { index: 0, id: 'call_9', name: 'get_weather' });
  t.equal(canonical.map((p) => (p.type === 'tool-call-delta' ? p.argumentsDelta : '')).join(''), '{"city":"Paris"}');
  t.match(canonical.find((p) => p.type === 'usage'), { usage: { inputTokens: 50, outputTokens: 20, cacheReadTokens: 10, reasoningTokens: 5 } });
  t.match(canonical.at(-1), { type: 'finish', finishReason: 'tool_calls' });
});

t.test('a failed or cut responses stream is an upstream failure', async (t) => {
  const items: SimItem[] = [{ kind: 'message', id: itemId('msg'), text: 'Hello there' }];
  const failed = decode(items, { failAt: 5 });
  t.ok(isGatewayError(failed.error), 'response.failed → a GatewayError');
  t.match(failed.error, { reason: 'upstream_stream_error', status: 502, message: /boom/ });
  t.ok(failed.parts.some((p) => p.type === 'text-delta'), 'the content before it was decoded');

  const cut = decode(items, { cut: 6 });
  t.match(cut.error, { reason: 'upstream_malformed_response' }, 'no response.completed: not a short answer');

  const decoder = openAiFamily.createStreamDecoder(request({ stream: true }), provider(true), context);
  t.throws(() => decoder.push({ event: 'error', data: '{"type":"error","code":"server_error","message":"Overloaded","param":null,"sequence_number":3}' }), { reason: 'upstream_stream_error', message: /Overloaded/ });
});
