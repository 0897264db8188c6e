import t from 'tap';
import { SseParser } from '../../src/providers/shared/sse-parser.js';

t.test('events across chunk boundaries and line endings', async (t) => {
  const parser = new SseParser();
  const events = [
    ...parser.push('event: message_start\ndata: {"a"'),
    ...parser.push(':1}\n\n: a comment\n\ndata: one\r\n'),
    ...parser.push('data: two\r'),
    ...parser.push('\n\r\ndata:no-space\r\rdata: [DONE]\n\n'),
  ];
  t.same(events, [{ event: 'message_start', data: '{"a":1}' }, { data: 'one\ntwo' }, { data: 'no-space' }, { data: '[DONE]' }]);
});

t.test('multi-byte characters split between chunks', async (t) => {
  const parser = new SseParser();
  const bytes = Buffer.from('data: नमस्ते 👋\n\n');
  const events = [...parser.push(bytes.subarray(0, 9)), ...parser.push(bytes.subarray(9, 20)), ...parser.push(bytes.subarray(20))];
  t.same(events, [{ data: 'नमस्ते 👋' }]);
});

t.test('an unterminated last event is dispatched at the end', async (t) => {
  const parser = new SseParser();
  t.same(parser.push('data: last'), []);
  t.same(parser.end(), [{ data: 'last' }]);
});
