import t from 'tap';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import { countTextTokens, promptTokenBound } from '../../src/core/tokens.js';

const reference = new Tiktoken(cl100k);

t.test('counts match the tokenizer on ordinary text, within a token per slice', async (t) => {
  const prose = 'The quick brown fox jumps over the lazy dog, and then it rests for a while. '.repeat(40);
  const exact = reference.encode(prose).length;
  const counted = await countTextTokens(prose);
  const slices = Math.ceil(prose.length / 128);
  t.ok(Math.abs(counted - exact) <= slices, `counted ${counted}, exact ${exact}`);
  t.equal(await countTextTokens('Hello world'), reference.encode('Hello world').length);
  t.equal(await countTextTokens(''), 0);
});

t.test('a long run without spaces is counted in slices (a pathological input cannot stall the daemon)', async (t) => {
  const run = 'x'.repeat(4000);
  const counted = await countTextTokens(run);
  t.ok(counted >= 4000 / 32 && counted <= 4000, `a plausible count: ${counted}`);
  const huge = 'y'.repeat(200_000);
  const hugeCount = await countTextTokens(huge);
  t.ok(hugeCount > (200_000 - 64 * 1024) / 4, 'beyond 64 KB the rest is estimated at 4 characters per token');
});

t.test('the prompt bound is at least the tokens of the prompt', async (t) => {
  const text = 'नमस्ते दुनिया, this is mixed text with emoji 👋🏽 and numbers 12345. '.repeat(30);
  const bound = promptTokenBound({ messages: [{ role: 'user', content: [{ type: 'text', text }] }] });
  t.ok(bound >= reference.encode(text).length, 'UTF-8 bytes bound BPE tokens');
});
