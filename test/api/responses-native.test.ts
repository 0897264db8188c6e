import t from 'tap';
import { encodeNativeResponse, NativeResponsesStream } from '../../src/api/responses/native.js';
import { GatewayError } from '../../src/core/errors.js';
import type { GatewayStreamEvent } from '../../src/core/canonical.js';

/**
 * The responses ingress relaying an upstream's own answer (src/api/responses/native.ts): ids
 * and model rewritten, sequence numbers renumbered, the terminal event held until the call is
 * settled, a failure after the first content ending in `response.failed`.
 */

const meta = { id: 'resp_gateway', model: 'openai/gpt-5-mini' };
const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };

const response = (status: string, output: unknown[] = []) => ({ id: 'resp_upstream', object: 'response', status, model: 'gpt-5-mini-2025-08-07', output, usage: null });
const native = (event: Record<string, unknown>): GatewayStreamEvent => ({ type: 'native', event });
const parse = (frame: { event?: string; data: string }) => JSON.parse(frame.data) as Record<string, any>;

t.test('JSON: the upstream object, with the gateway id and the catalog model', async (t) => {
  const body = { ...response('completed'), usage: { input_tokens: 10 } };
  const encoded = encodeNativeResponse({ text: '', toolCalls: [], finishReason: 'stop', native: body }, usage, meta);
  t.match(encoded, { id: 'resp_gateway', model: 'openai/gpt-5-mini', object: 'response', usage: { input_tokens: 10 } });
  t.equal(body.id, 'resp_upstream', "the upstream's object is not changed in place");
  const estimated = encodeNativeResponse({ text: '', toolCalls: [], finishReason: 'stop', native: response('completed') }, usage, meta);
  t.match(estimated.usage, { input_tokens: 10, output_tokens: 5, total_tokens: 15 }, 'no upstream usage: the figures billed');
});

t.test('a stream: events relayed and renumbered, the terminal one after settlement', async (t) => {
  const stream = new NativeResponsesStream(meta);
  t.same(stream.start(), [], "the upstream's response.created opens it");
  const item = { id: 'msg_1', type: 'message', status: 'in_progress', role: 'assistant', content: [] };
  const frames = [
    native({ type: 'response.created', sequence_number: 7, response: response('in_progress') }),
    native({ type: 'response.output_item.added', sequence_number: 8, output_index: 0, item }),
    { type: 'text-delta', text: 'ignored' } as GatewayStreamEvent,
    native({ type: 'response.output_text.delta', sequence_number: 9, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi' }),
    native({ type: 'response.completed', sequence_number: 10, response: response('completed', [{ ...item, status: 'completed' }]) }),
  ].flatMap((event) => stream.encode(event));
  t.same(frames.map((f) => f.event), ['response.created', 'response.output_item.added', 'response.output_text.delta'], 'canonical parts are not relayed; the terminal event waits');
  t.same(frames.map((f) => parse(f).sequence_number), [0, 1, 2]);
  t.match(parse(frames[0]!).response, { id: 'resp_gateway', model: 'openai/gpt-5-mini' });
  t.same(stream.encode({ type: 'usage', usage }), []);
  const end = stream.encode({ type: 'finish', finishReason: 'stop' });
  t.equal(end[0]?.event, 'response.completed');
  t.match(parse(end[0]!), { sequence_number: 3, response: { id: 'resp_gateway', model: 'openai/gpt-5-mini', status: 'completed' } });
});

t.test('a failure after the first content ends the stream with response.failed', async (t) => {
  const stream = new NativeResponsesStream(meta);
  const item = { id: 'msg_1', type: 'message', status: 'in_progress', role: 'assistant', content: [] };
  stream.encode(native({ type: 'response.created', sequence_number: 0, response: response('in_progress') }));
  stream.encode(native({ type: 'response.output_item.added', sequence_number: 1, output_index: 0, item }));
  stream.encode(native({ type: 'response.content_part.added', sequence_number: 2, item_id: 'msg_1', output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
  stream.encode(native({ type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hel' }));
  const error = new GatewayError({ status: 502, type: 'upstream_error', reason: 'upstream_stream_error', message: 'oai failed mid-stream: boom' });
  const [failed, ...rest] = stream.encode({ type: 'error', error });
  t.same(rest, []);
  t.equal(failed?.event, 'response.failed');
  t.match(parse(failed!), {
    sequence_number: 4,
    response: { id: 'resp_gateway', status: 'failed', error: { code: 'server_error', message: /boom/, reason: 'upstream_stream_error', status: 502 }, output: [{ id: 'msg_1', status: 'incomplete', content: [{ text: 'Hel' }] }] },
  });

  const early = new NativeResponsesStream(meta).encode({ type: 'error', error });
  t.same(early.map((f) => f.event), ['response.created', 'response.failed'], 'opened with response.created when nothing came before');
});
