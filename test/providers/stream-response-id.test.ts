import t from 'tap';
import type { ChatRequest } from '../../src/core/canonical.js';
import { createAnthropicStreamDecoder } from '../../src/providers/anthropic/stream.js';
import { createGeminiStreamDecoder } from '../../src/providers/gemini/stream.js';
import { createOpenAiStreamDecoder } from '../../src/providers/openai/stream.js';
import { createResponsesStreamDecoder } from '../../src/providers/openai/responses-stream.js';
import type { StreamDecoder } from '../../src/providers/types.js';

/**
 * Each family's stream decoder keeps the upstream's id of the answer from the event that
 * carries it (traces put it on the CLIENT span as gen_ai.response.id): the first one seen,
 * undefined before it.
 */

const context = { newToolCallId: () => 'call_gw' };
const request = { model: 'm', messages: [{ role: 'user', content: 'hi' }] } as unknown as ChatRequest;

const cases: Array<[string, StreamDecoder, Array<{ event?: string; data: unknown }>, string]> = [
  ['openai chat', createOpenAiStreamDecoder('openai', context), [{ data: { id: 'chatcmpl-up1', choices: [{ index: 0, delta: { content: 'a' } }] } }, { data: { id: 'chatcmpl-other', choices: [{ index: 0, delta: { content: 'b' } }] } }], 'chatcmpl-up1'],
  ['anthropic', createAnthropicStreamDecoder('anthropic', request), [{ event: 'message_start', data: { type: 'message_start', message: { id: 'msg_up1', usage: { input_tokens: 3, output_tokens: 0 } } } }], 'msg_up1'],
  ['gemini', createGeminiStreamDecoder('gemini', context), [{ data: { responseId: 'gem-up1', candidates: [{ content: { parts: [{ text: 'a' }] } }] } }], 'gem-up1'],
  ['openai responses', createResponsesStreamDecoder('openai', context), [{ event: 'response.created', data: { type: 'response.created', response: { id: 'resp_up1', status: 'in_progress' } } }], 'resp_up1'],
];

for (const [name, decoder, events, id] of cases) {
  t.test(name, async (t) => {
    t.equal(decoder.responseId, undefined, 'none before any event');
    for (const event of events) decoder.push({ ...(event.event ? { event: event.event } : {}), data: JSON.stringify(event.data) });
    t.equal(decoder.responseId, id, 'the upstream answer\'s id');
  });
}
