import t from 'tap';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import type { Message } from '../../src/core/canonical.js';
import { countPromptTokens, countTextTokens, promptTokenBound, promptTokenEstimate } from '../../src/core/tokens.js';
import { anthropicFamily } from '../../src/providers/anthropic/index.js';
import { geminiFamily } from '../../src/providers/gemini/index.js';
import { openAiFamily } from '../../src/providers/openai/index.js';

// An independent implementation of the same ranks: the gateway counts with gpt-tokenizer.
const reference = new Tiktoken(cl100k);
const exact = (text: string): number => reference.encode(text, 'all').length;

t.test('counts match an independent cl100k tokenizer on ordinary text, within a token per slice', async (t) => {
  const prose = 'The quick brown fox jumps over the lazy dog, and then it rests for a while. '.repeat(40);
  const counted = await countTextTokens(prose);
  const slices = Math.ceil(prose.length / 128);
  t.ok(Math.abs(counted - exact(prose)) <= slices, `counted ${counted}, exact ${exact(prose)}`);
  t.equal(await countTextTokens('Hello world'), exact('Hello world'));
  t.equal(await countTextTokens(''), 0);
});

t.test('special-token text in a prompt is counted as text, not refused', async (t) => {
  // js-tiktoken and gpt-tokenizer both throw on `<|endoftext|>` by default: an aborted call
  // whose prompt quoted it could not have been billed.
  const text = 'a prompt that quotes <|endoftext|> and <|im_start|>';
  const counted = await countTextTokens(text);
  t.ok(counted >= 10 && counted <= Buffer.byteLength(text), `counted ${counted}`);
});

t.test('a long run without spaces is counted in slices, in full', async (t) => {
  const run = 'x'.repeat(4000);
  const counted = await countTextTokens(run);
  t.ok(counted >= 4000 / 32 && counted <= 4000, `a plausible count: ${counted}`);
  const huge = 'y'.repeat(200_000);
  const started = performance.now();
  const hugeCount = await countTextTokens(huge);
  t.ok(hugeCount >= 200_000 / 32, `every character counted (${hugeCount}), none estimated`);
  t.ok(performance.now() - started < 60_000, 'finishes');
});

t.test('counting a long prompt gives the event loop back', async (t) => {
  const text = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(8000); // ~450 KB
  let ticks = 0;
  const timer = setInterval(() => (ticks += 1), 0);
  await countTextTokens(text);
  clearInterval(timer);
  t.ok(ticks > 0, `timers ran while counting (${ticks} ticks)`);
});

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });

t.test('the fast prompt bound is at least the tokens of the prompt', async (t) => {
  const text = 'नमस्ते दुनिया, this is mixed text with emoji 👋🏽 and numbers 12345. '.repeat(30);
  const bound = promptTokenBound({ messages: [user(text)] });
  t.ok(bound >= exact(text), 'UTF-8 bytes bound BPE tokens');
});

t.test('the tight bound: the count times the family margin, plus framing; never above the fast bound', async (t) => {
  const prose = 'The committee reviewed the quarterly figures and agreed to revisit the budget in March. '.repeat(500);
  for (const family of [openAiFamily, anthropicFamily, geminiFamily]) {
    const margin = family.promptTokenMargin;
    t.ok(margin.ratio >= 1 && margin.ratio < 2, `a plausible ratio ${margin.ratio}`);
    const estimate = await promptTokenEstimate({ messages: [user(prose)] }, margin);
    const tokens = exact(prose);
    t.ok(estimate >= Math.ceil(tokens * margin.ratio), `at least ratio x tokens (${estimate} >= ${tokens} x ${margin.ratio})`);
    t.ok(estimate <= Math.ceil(tokens * margin.ratio) + 100, 'framing is a few tokens');
    const fast = promptTokenBound({ messages: [user(prose)] });
    t.ok(estimate < fast / 2.5, `well under the byte bound for prose (${estimate} vs ${fast})`);

    const withTools = await promptTokenEstimate(
      { messages: [user('hi')], tools: [{ name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }] },
      margin,
    );
    const noTools = await promptTokenEstimate({ messages: [user('hi')] }, margin);
    t.ok(withTools - noTools >= margin.toolsOverhead, 'tools add the family preamble and their schema');
  }
  // Incompressible text (random bytes in base64-like noise, CJK): the byte bound caps it.
  const cjk = '電子計算機は情報を処理する機械である。'.repeat(200);
  const capped = await promptTokenEstimate({ messages: [user(cjk)] }, { ratio: 1.9, splitDigits: false, toolsOverhead: 0 });
  t.ok(capped <= promptTokenBound({ messages: [user(cjk)] }), 'never above the fast bound');
});

t.test('a tokenizer that splits digits: one more token per digit', async (t) => {
  const prose = Array.from({ length: 300 }, (_, i) => `Invoice ${i * 7919} for the quarter totals ${i * 31} rupees.`).join(' ');
  const digits = prose.replace(/[^0-9]/g, '').length;
  const grouped = await promptTokenEstimate({ messages: [user(prose)] }, { ratio: 1, splitDigits: false, toolsOverhead: 0 });
  const split = await promptTokenEstimate({ messages: [user(prose)] }, { ratio: 1, splitDigits: true, toolsOverhead: 0 });
  t.equal(split - grouped, digits, 'every digit counted once more');
  // Numbers alone: a token per digit and per separator is more than their bytes allow, so the
  // byte bound caps the estimate.
  const numbers = Array.from({ length: 2000 }, (_, i) => String(i * 7919)).join(',');
  const capped = await promptTokenEstimate({ messages: [user(numbers)] }, { ratio: 1, splitDigits: true, toolsOverhead: 0 });
  t.equal(capped, promptTokenBound({ messages: [user(numbers)] }), 'capped at the byte bound');
});

t.test('long runs of one character count a token each; shorter ones as the tokenizer counts them', async (t) => {
  const margin = { ratio: 1, splitDigits: false, toolsOverhead: 0 };
  const base = await promptTokenEstimate({ messages: [user('See below.')] }, margin);
  const newlines = await promptTokenEstimate({ messages: [user(`See below.${'\n'.repeat(40_000)}`)] }, margin);
  t.ok(newlines - base >= 40_000, `40,000 newlines (a single-digit count in cl100k) hold at least 40,000 tokens (${newlines - base})`);
  const code = 'function f(x) {\n    return x + 1;\n}\n'.repeat(200);
  t.equal(await promptTokenEstimate({ messages: [user(code)] }, margin), (await countTextTokens(code)) + 4 + 8, 'indentation and line ends of real code add nothing');
});

t.test('a cut inside a run never splits a surrogate pair', async (t) => {
  // No spaces: cut every 32 code units, which would fall between the halves of the 17th emoji.
  const emoji = Array.from({ length: 3000 }, (_, i) => String.fromCodePoint(0x1f300 + ((i * 37) % 700))).join('');
  const counted = await countTextTokens(emoji);
  t.ok(counted >= exact(emoji), `no undercount against the whole text (${counted} vs ${exact(emoji)})`);
});

t.test('images count their allowance in both bounds; tool calls and results count their text', async (t) => {
  const messages: Message[] = [
    { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } }] },
    { role: 'assistant', content: [], toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"a long query about things"}' }] },
    { role: 'tool', toolCallId: 'call_1', content: [{ type: 'text', text: 'result text' }] },
  ];
  const estimate = await promptTokenEstimate({ messages }, { ratio: 1, splitDigits: false, toolsOverhead: 0 });
  t.ok(estimate >= 40_000 + exact('look') + exact('lookup') + exact('{"q":"a long query about things"}') + exact('result text'));
  t.ok(estimate <= promptTokenBound({ messages }));
  t.ok((await countPromptTokens({ messages })) > 1000, 'the billing estimate counts the image too');
});
