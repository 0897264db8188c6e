import t from 'tap';
import { decodeChatCompletion, MAX_JSON_DEPTH, refuseDeepJson } from '../../src/api/chat/decode.js';
import { decodeMessagesRequest } from '../../src/api/messages/decode.js';
import { decodeResponsesRequest } from '../../src/api/responses/decode.js';
import { isGatewayError } from '../../src/core/errors.js';

/**
 * The fuzzer's finding (test/fuzz/endpoints.test.ts): JSON nested 10,000 levels in a tool
 * schema, a tool_use input or a passthrough field was accepted by the chat-format decoders and
 * overflowed the stack later (the token bound, the upstream body, the responses echo): 500s,
 * 502s blamed on the upstream, and a responses call billed but answered 500. The decoders now
 * refuse a body nested deeper than MAX_JSON_DEPTH with a 400 naming where.
 */

/** `{"a": {"a": … 1}}` with `levels` objects. */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

function refusal(fn: () => unknown): { status: number; param: string | null; message: string } | undefined {
  try {
    fn();
  } catch (error) {
    if (isGatewayError(error)) return { status: error.status, param: error.param, message: error.message };
    throw error;
  }
  return undefined;
}

t.test('refuseDeepJson: up to the limit passes, one level more is a 400 naming the path', async (t) => {
  t.equal(refusal(() => refuseDeepJson(nested(MAX_JSON_DEPTH))), undefined, `${MAX_JSON_DEPTH} levels (the body is the first) pass`);
  t.equal(refusal(() => refuseDeepJson(nested(MAX_JSON_DEPTH + 1)))?.status, 400, `${MAX_JSON_DEPTH + 1} do not`);
  const deep = refusal(() => refuseDeepJson({ tools: [nested(MAX_JSON_DEPTH)] }));
  t.equal(deep?.status, 400);
  t.match(deep?.param, /^tools\[0\]\.a\.a/, 'the path to where it is too deep');
  t.ok((deep?.param ?? '').length <= 101, 'the path is cut');
  t.equal(refusal(() => refuseDeepJson({ wide: Array.from({ length: 50_000 }, () => ({ a: [1] })) })), undefined, 'wide is not deep');
  // 10,000 levels and 1,000,000: refused without a recursion of its own.
  let array: unknown = [];
  for (let i = 0; i < 1_000_000; i++) array = [array];
  t.equal(refusal(() => refuseDeepJson({ x: array }))?.status, 400, 'a million levels: a 400, no stack overflow');
});

t.test('the chat, responses and messages decoders refuse 10,000 levels where they took them as they are', async (t) => {
  const deep = JSON.parse(`${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`) as unknown;
  const chat = refusal(() => decodeChatCompletion({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', parameters: deep } }] }));
  t.match(chat, { status: 400, param: /^tools\[0\]\.function\.parameters/ }, 'chat: a tool schema');
  const passthrough = refusal(() => decodeChatCompletion({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], frequency_penalty: deep }));
  t.match(passthrough, { status: 400, param: /^frequency_penalty/ }, 'chat: a passthrough field (it was a 502 blamed on the upstream)');
  const responses = refusal(() => decodeResponsesRequest({ model: 'openai/gpt-4o-mini', input: 'hi', text: deep }));
  t.match(responses, { status: 400, param: /^text/ }, 'responses: an echoed field (it was billed, then a 500)');
  const messages = refusal(() =>
    decodeMessagesRequest({
      model: 'anthropic/claude-haiku-4-5',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: deep }] },
      ],
    }),
  );
  t.match(messages, { status: 400, param: /^messages\[1\]\.content\[0\]\.input/ }, 'messages: a tool_use input (JSON.stringify overflowed in the decoder)');
  t.equal(refusal(() => decodeChatCompletion({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', parameters: nested(50) } }] })), undefined, 'a schema 50 levels deep is fine');
});
