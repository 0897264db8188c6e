import Anthropic from '@anthropic-ai/sdk';
import t from 'tap';
import { header, postJson } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { ProviderSimulator, type RecordedRequest } from '../support/simulator/server.js';

/**
 * The messages format as Claude Code uses it, end to end on each family, with the official
 * `@anthropic-ai/sdk` (and raw HTTP where the SDK would hide the wire): thinking mapped to each
 * target's reasoning control (budgets lowered to the target's cap; Claude's signed thinking
 * blocks round-trip and are checked by the simulator as Claude checks them), `max_tokens`
 * lowered to the model's limit, system turns among the messages, `message_start.usage`, and
 * `anthropic-beta`. The simulator refuses what each real API refuses, so a wrong translation
 * fails here.
 */

// Upstream bodies are read field by field; their shape is what is under test.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const sim = await ProviderSimulator.start();
const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
const { key } = await fundedKey(gw, { balance: 100000 });
const client = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, timeout: 60_000 });
t.teardown(async () => {
  await gw.stop();
  await sim.close();
});

function last(family: RecordedRequest['family']): RecordedRequest {
  const found = [...sim.requests].reverse().find((r) => r.family === family);
  if (!found) throw new Error(`no ${family} request`);
  return found;
}

const WEATHER: Anthropic.Tool = { name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

t.test('Claude: thinking passes as the client wrote it, and its signed blocks come back across a tool turn', async (t) => {
  sim.reset();
  sim.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Pune' } }] }, { text: 'It is sunny in Pune.' });
  const thinking = { type: 'enabled', budget_tokens: 31999, display: 'summarized' } as unknown as Anthropic.ThinkingConfigParam;
  const first = await client.messages.create({ model: 'anthropic/claude-haiku-4-5', max_tokens: 32000, thinking, tools: [WEATHER], messages: [{ role: 'user', content: 'Weather in Pune?' }] });
  const sent = last('anthropic').body as Json;
  t.same(sent.thinking, { type: 'enabled', budget_tokens: 31999, display: 'summarized' }, 'thinking as written (display kept)');
  t.equal(sent.max_tokens, 32000);
  t.equal(first.content[0]?.type, 'thinking', 'the thinking block comes first');
  const block = first.content[0] as Anthropic.ThinkingBlock;
  t.ok(block.signature.length > 10 && !block.signature.startsWith('gateway:'), "Claude's own signature");
  const use = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
  t.ok(use, 'then the tool call');

  const second = await client.messages.create({
    model: 'anthropic/claude-haiku-4-5',
    max_tokens: 32000,
    thinking,
    tools: [WEATHER],
    messages: [
      { role: 'user', content: 'Weather in Pune?' },
      { role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '31 C, clear' }] },
    ],
  });
  const replay = last('anthropic').body as Json;
  t.same(replay.messages[1].content[0], { type: 'thinking', thinking: block.thinking, signature: block.signature }, 'the signed block goes back first in its turn');
  t.match(second.content.find((b) => b.type === 'text'), { text: 'It is sunny in Pune.' });
});

t.test('Claude: a tampered signature is refused by the upstream, in its own words', async (t) => {
  sim.reset();
  const response = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, {
    model: 'anthropic/claude-haiku-4-5',
    max_tokens: 4000,
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'forged', signature: 'not-claude' }, { type: 'text', text: 'hello' }] },
      { role: 'user', content: 'again' },
    ],
  });
  t.equal(response.status, 400);
  t.equal((response.json as Json).error.message, 'messages.1.content.0: Invalid `signature` in `thinking` block', "Claude's message, unchanged");
});

t.test('Gemini: the budget is lowered to the model cap, thoughts come back as thinking blocks the gateway signs as its own', async (t) => {
  sim.reset();
  const stream = client.messages.stream({ model: 'gemini/gemini-2.5-flash', max_tokens: 32000, thinking: { type: 'enabled', budget_tokens: 31999 }, messages: [{ role: 'user', content: 'Think, then answer.' }] });
  const message = await stream.finalMessage();
  const sent = last('gemini').body as Json;
  t.same(sent.generationConfig.thinkingConfig, { thinkingBudget: 24576, includeThoughts: true }, "Gemini 2.5 Flash's cap (24576)");
  const thought = message.content[0] as Anthropic.ThinkingBlock;
  t.equal(thought.type, 'thinking');
  t.match(thought.thinking, /Thinking it over/);
  t.equal(thought.signature, 'gateway:gemini', "marked as the gateway's");
  t.equal(message.content[1]?.type, 'text');
  t.ok(message.usage.output_tokens > 0);

  // Sent back to Claude, another family's reasoning is dropped (Claude would refuse its signature).
  const toClaude = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, {
    model: 'anthropic/claude-haiku-4-5',
    max_tokens: 2000,
    messages: [{ role: 'user', content: 'Think, then answer.' }, { role: 'assistant', content: message.content }, { role: 'user', content: 'And now?' }],
  });
  t.equal(toClaude.status, 200, toClaude.text);
  t.notOk((last('anthropic').body as Json).messages[1].content.some((b: Json) => b.type === 'thinking'), 'no foreign thinking block upstream');
});

t.test('OpenAI: max_tokens lowered to the limit with a header; thinking mapped to reasoning_effort only for a reasoning model', async (t) => {
  sim.reset();
  const { data, response } = await client.messages
    .create({ model: 'openai/gpt-4o-mini', max_tokens: 32000, thinking: { type: 'enabled', budget_tokens: 31999 }, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  t.equal(response.headers.get('x-gateway-max-tokens-clamped'), '32000->16384');
  const sent = last('openai').body as Json;
  t.equal(sent.max_tokens ?? sent.max_completion_tokens, 16384, 'the lowered limit upstream');
  t.notOk('reasoning_effort' in sent, 'gpt-4o-mini takes no reasoning_effort');
  t.match(response.headers.get('x-gateway-ignored-params') ?? '', /thinking/);
  t.equal(data.content[0]?.type, 'text');

  await client.messages.create({ model: 'openai/o4-mini', max_tokens: 32000, thinking: { type: 'enabled', budget_tokens: 31999 }, messages: [{ role: 'user', content: 'hi' }] });
  t.equal((last('openai').body as Json).reasoning_effort, 'high', 'a 31999 budget is high effort');
  await client.messages.create({
    model: 'openai/o4-mini',
    max_tokens: 32000,
    thinking: { type: 'adaptive' } as unknown as Anthropic.ThinkingConfigParam,
    messages: [{ role: 'user', content: 'hi' }],
    output_config: { effort: 'low' },
  } as Anthropic.MessageCreateParamsNonStreaming);
  t.equal((last('openai').body as Json).reasoning_effort, 'low', "adaptive thinking takes output_config's effort");
});

t.test('a system turn among the messages', async (t) => {
  sim.reset();
  const body = {
    model: 'anthropic/claude-haiku-4-5',
    max_tokens: 1000,
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'Reminder: be brief.' },
    ],
  };
  const old = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, body);
  t.equal(old.status, 400);
  t.equal(
    (old.json as Json).error.message,
    'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.',
    "Claude's refusal (an anthropic-version before 2026-10-21), word for word: Claude Code drops its system turns on it",
  );
  t.equal((old.json as Json).type, 'error');
  t.equal((old.json as Json).error.type, 'invalid_request_error');
  t.equal((last('anthropic').body as Json).messages[1].role, 'system', 'sent where the client put it');

  const current = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2026-10-21' }, body);
  t.equal(current.status, 200, 'from 2026-10-21 it is part of the system prompt');
  t.same((last('anthropic').body as Json).system, [{ type: 'text', text: 'Reminder: be brief.' }]);

  const gemini = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, { ...body, model: 'gemini/gemini-2.5-flash' });
  t.equal(gemini.status, 200, 'folded into the system instruction for Gemini');
  t.same((last('gemini').body as Json).systemInstruction, { parts: [{ text: 'Reminder: be brief.' }] });
  const openai = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, { ...body, model: 'openai/gpt-4o-mini' });
  t.equal(openai.status, 200);
  t.same((last('openai').body as Json).messages.map((m: Json) => m.role), ['user', 'system'], 'OpenAI takes system turns where they are');
});

/** The data of the first SSE event named `name` in a raw stream. */
function eventData(text: string, name: string): Json {
  const block = text.split('\n\n').find((b) => b.startsWith(`event: ${name}\n`));
  if (!block) throw new Error(`no ${name} event`);
  return JSON.parse(block.slice(block.indexOf('data: ') + 6));
}

t.test('message_start.usage states the prompt: the upstream figures from Claude, the gateway count elsewhere, never zero', async (t) => {
  sim.reset();
  const body = { max_tokens: 500, stream: true, system: 'You are terse.', messages: [{ role: 'user', content: 'Count these words for me please, all of them.' }] };
  const claude = await postJson(`${gw.url}/v1/messages?beta=true`, { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14' }, { ...body, model: 'anthropic/claude-haiku-4-5' });
  t.equal(claude.status, 200, claude.text);
  const upstream = last('anthropic');
  t.equal(header(upstream, 'anthropic-beta'), 'claude-code-20250219,interleaved-thinking-2025-05-14', 'anthropic-beta passed to Claude');
  const start = eventData(claude.text, 'message_start');
  t.equal(start.message.usage.input_tokens, (upstream.usage as Json).input_tokens, "Claude's own input count");
  t.ok(start.message.usage.input_tokens > 0);
  const delta = eventData(claude.text, 'message_delta');
  t.equal(delta.usage.input_tokens, start.message.usage.input_tokens, 'message_delta has the final counts');

  const gemini = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'claude-code-20250219' }, { ...body, model: 'gemini/gemini-2.5-flash' });
  t.equal(gemini.status, 200, gemini.text);
  t.notOk(header(last('gemini'), 'anthropic-beta'), 'no anthropic-beta to Gemini');
  const estimated = eventData(gemini.text, 'message_start').message.usage.input_tokens;
  t.ok(estimated > 5 && estimated < 60, `the gateway's count (${estimated})`);
});

t.test('images in tool results, stop sequences and tool_choice without parallel calls reach every family', async (t) => {
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  for (const model of ['anthropic/claude-haiku-4-5', 'gemini/gemini-2.5-flash', 'openai/gpt-4o-mini']) {
    sim.reset();
    const response = await client.messages.create({
      model,
      max_tokens: 500,
      stop_sequences: ['END'],
      tools: [WEATHER],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Goa' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'see the map' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }] },
      ],
    });
    t.equal(response.type, 'message', model);
    const sent = sim.requests.at(-1)?.body as Json;
    if (model.startsWith('anthropic')) {
      t.same(sent.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
      t.same(sent.stop_sequences, ['END']);
      t.equal(sent.messages[2].content[0].content[1].type, 'image', 'the image stays in the tool result');
    } else if (model.startsWith('gemini')) {
      t.same(sent.generationConfig.stopSequences, ['END']);
      const parts = sent.contents[2].parts;
      t.ok(parts[0].functionResponse, 'the tool result');
      t.same(parts[1], { inlineData: { mimeType: 'image/png', data: PNG } }, "the tool's image follows it in the same turn");
    } else {
      t.same(sent.stop, ['END']);
      t.equal(sent.parallel_tool_calls, false);
      t.same(sent.messages.map((m: Json) => m.role), ['user', 'assistant', 'tool', 'user'], "the tool's image in a user message after the tool message");
      t.equal(sent.messages[3].content[1].image_url.url, `data:image/png;base64,${PNG}`);
    }
  }
});

t.test('betas that change the price stay with the operator', async (t) => {
  sim.reset();
  const response = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'context-1m-2025-08-07,interleaved-thinking-2025-05-14,mcp-client-2025-04-04' }, {
    model: 'anthropic/claude-haiku-4-5',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'hi' }],
  });
  t.equal(response.status, 200, response.text);
  t.equal(header(last('anthropic'), 'anthropic-beta'), 'interleaved-thinking-2025-05-14');
  t.match(header(response, 'x-gateway-ignored-params') ?? '', /anthropic-beta: context-1m-2025-08-07, anthropic-beta: mcp-client-2025-04-04/);
});

t.test("a thinking block the gateway signed is never replayed to Claude, whatever family it names", async (t) => {
  sim.reset();
  const response = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, {
    model: 'anthropic/claude-haiku-4-5',
    max_tokens: 100,
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 'gateway:anthropic' }, { type: 'text', text: 'hello' }] },
      { role: 'user', content: 'again' },
    ],
  });
  t.equal(response.status, 200, response.text);
  t.same((last('anthropic').body as Json).messages[1].content, [{ type: 'text', text: 'hello' }]);
});
