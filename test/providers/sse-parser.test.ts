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

t.test('any split of the bytes gives the events of the whole (\\n, \\r\\n and \\r line ends, multi-byte text)', async (t) => {
  const streams = [
    'data: {"choices":[{"delta":{"content":"héllo"}}]}\n\ndata: {"choices":[{"delta":{"content":" wörld 👋"}}]}\n\ndata: [DONE]\n\n',
    'event: content_block_delta\ndata: {"text":"नमस्ते"}\n\n: keep-alive\n\nevent: message_stop\ndata: {}\n\n',
    'data: {"candidates":[]}\r\n\r\ndata: line one\r\ndata: line two\r\n\r\ndata: cr only\r\rdata: end\r\n\r\n',
  ];
  let seed = 7;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (const text of streams) {
    const whole = new SseParser();
    const expected = [...whole.push(text), ...whole.end()];
    t.ok(expected.length >= 2, `the reference parse finds the events (${expected.length})`);
    const bytes = Buffer.from(text);
    for (let trial = 0; trial < 200; trial++) {
      const parser = new SseParser();
      const got = [];
      for (let at = 0; at < bytes.length; ) {
        const size = 1 + next(12);
        // Plain Uint8Array pieces too: the upstream body may hand either.
        const piece = trial % 2 === 0 ? bytes.subarray(at, at + size) : new Uint8Array(bytes.subarray(at, at + size));
        got.push(...parser.push(piece));
        at += size;
      }
      got.push(...parser.end());
      if (JSON.stringify(got) !== JSON.stringify(expected)) {
        t.same(got, expected, `trial ${trial} of ${JSON.stringify(text.slice(0, 30))}`);
        return;
      }
    }
  }
  t.pass('200 random splits of each stream parse the same');
});
