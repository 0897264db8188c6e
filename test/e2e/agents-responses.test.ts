import OpenAI from 'openai';
import t from 'tap';
import { header, postJson } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { ProviderSimulator, type RecordedRequest } from '../support/simulator/server.js';

/**
 * The responses format as Codex uses it, translated for families that do not take it (Claude,
 * Gemini, OpenAI chat completions), with the official `openai` SDK: namespace tools flattened
 * and their calls named back, custom tools as one-string functions whose calls come back as
 * `custom_tool_call` items, hosted tools dropped and named, no `instructions` (developer
 * messages), and reasoning items round-tripping: Claude's signed thinking rides in
 * `encrypted_content` and goes back to Claude (the simulator checks the signature as Claude does).
 */

// Upstream bodies are read field by field; their shape is what is under test.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const sim = await ProviderSimulator.start();
const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
const { key } = await fundedKey(gw, { balance: 100000 });
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
t.teardown(async () => {
  await gw.stop();
  await sim.close();
});

function last(family: RecordedRequest['family']): RecordedRequest {
  const found = [...sim.requests].reverse().find((r) => r.family === family);
  if (!found) throw new Error(`no ${family} request`);
  return found;
}

/** Codex's tool kinds, as its requests carry them (test/fixtures/agents/codex). */
const TOOLS: Json[] = [
  { type: 'function', name: 'exec_command', description: 'Runs a command', strict: false, parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'], additionalProperties: false } },
  { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents.', tools: [{ type: 'function', name: 'spawn_agent', description: 'Spawn one', parameters: { type: 'object', properties: { task: { type: 'string' } }, required: ['task'] } }] },
  { type: 'custom', name: 'apply_patch', description: 'Apply a patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch"' } },
  { type: 'web_search', external_web_access: true },
  { type: 'tool_search', execution: 'client', parameters: { type: 'object', properties: {} } },
];

function codexBody(model: string, input: Json[]): Json {
  return {
    model,
    input,
    tools: TOOLS,
    tool_choice: 'auto',
    parallel_tool_calls: true,
    reasoning: { summary: 'auto' },
    store: false,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: 'thread-1',
    client_metadata: { 'x-codex-turn-metadata': '{}' },
    text: { verbosity: 'low' },
  };
}

const DEVELOPER = { type: 'message', id: 'msg_dev', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent.' }] };
const USER = { type: 'message', id: 'msg_user', role: 'user', content: [{ type: 'input_text', text: 'Spawn a helper, then patch.' }] };

for (const model of ['anthropic/claude-haiku-4-5', 'gemini/gemini-2.5-flash', 'openai/gpt-4o-mini']) {
  t.test(`${model}: Codex's tools and calls, translated`, async (t) => {
    sim.reset();
    sim.enqueue({ toolCalls: [{ name: 'multi_agent_v1__spawn_agent', arguments: { task: 'lint' } }, { name: 'apply_patch', arguments: { input: '*** Begin Patch\n*** End Patch\n' } }] });
    const { data, response } = await client.responses.create(codexBody(model, [DEVELOPER, USER])).withResponse();
    t.equal(response.headers.get('x-gateway-dropped-tools'), 'web_search, tool_search', 'hosted tools named');
    const family = model.split('/')[0] as RecordedRequest['family'];
    const sent = last(family).body as Json;
    const names: string[] =
      family === 'anthropic' ? sent.tools.map((tool: Json) => tool.name) : family === 'gemini' ? sent.tools[0].functionDeclarations.map((tool: Json) => tool.name) : sent.tools.map((tool: Json) => tool.function.name);
    t.same(names, ['exec_command', 'multi_agent_v1__spawn_agent', 'apply_patch'], 'functions, the namespace flattened, the custom tool as a function');
    const system = family === 'anthropic' ? sent.system[0].text : family === 'gemini' ? sent.systemInstruction.parts[0].text : sent.messages[0].content;
    t.equal(system, 'You are a coding agent.', 'the developer message is the system prompt');

    const calls = data.output.filter((item) => item.type !== 'reasoning');
    t.match(calls[0], { type: 'function_call', name: 'spawn_agent', namespace: 'multi_agent_v1', arguments: '{"task":"lint"}' }, 'the namespace call named back');
    t.match(calls[1], { type: 'custom_tool_call', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch\n' }, 'the custom call with its free-form input');
    if (family === 'anthropic') {
      const reasoning = data.output[0] as Json;
      t.equal(reasoning.type, 'reasoning', "Claude's thinking first (reasoning.summary asked it)");
      t.match(reasoning.encrypted_content, /^gateway\.v1\./, 'packed for the next turn');
      t.match(reasoning.summary[0].text, /Thinking it over/);
      t.equal(sent.thinking.type, 'enabled');
    }

    // The next turn, as Codex sends it: the items back, with the calls' outputs.
    sim.enqueue({ text: 'Done.' });
    const callItems = data.output.map((item: Json) => {
      if (item.type === 'function_call') return { type: 'function_call', id: item.id, call_id: item.call_id, name: item.name, namespace: item.namespace, arguments: item.arguments };
      if (item.type === 'custom_tool_call') return { type: 'custom_tool_call', id: item.id, call_id: item.call_id, name: item.name, input: item.input };
      return { type: 'reasoning', id: item.id, summary: item.summary, encrypted_content: item.encrypted_content };
    });
    const outputs = [
      { type: 'function_call_output', call_id: (calls[0] as Json).call_id, output: 'spawned' },
      { type: 'custom_tool_call_output', call_id: (calls[1] as Json).call_id, output: 'patched' },
    ];
    const second = await client.responses.create(codexBody(model, [DEVELOPER, USER, ...callItems, ...outputs]));
    t.equal(second.output_text, 'Done.');
    const replay = last(family).body as Json;
    if (family === 'anthropic') {
      const turn = replay.messages[1];
      t.equal(turn.content[0].type, 'thinking', "Claude's signed block back at the start of its turn");
      t.same(turn.content.slice(1).map((b: Json) => b.name), ['multi_agent_v1__spawn_agent', 'apply_patch']);
      t.same(turn.content[2].input, { input: '*** Begin Patch\n*** End Patch\n' });
    } else if (family === 'gemini') {
      t.same(replay.contents[1].parts.map((p: Json) => p.functionCall.name), ['multi_agent_v1__spawn_agent', 'apply_patch']);
    } else {
      t.same(replay.messages[2].tool_calls.map((c: Json) => c.function.name), ['multi_agent_v1__spawn_agent', 'apply_patch']);
    }
  });
}

t.test('the stream as Codex reads it: reasoning summary events, a namespace call and a custom call, then response.completed', async (t) => {
  sim.reset();
  sim.enqueue({ toolCalls: [{ name: 'multi_agent_v1__spawn_agent', arguments: { task: 'x' } }, { name: 'apply_patch', arguments: { input: 'PATCH' } }] });
  const stream = client.responses.stream(codexBody('anthropic/claude-haiku-4-5', [DEVELOPER, USER]));
  const types: string[] = [];
  stream.on('event', (event) => types.push(event.type));
  const final = await stream.finalResponse();
  const reasoningAt = types.indexOf('response.reasoning_summary_text.delta');
  t.ok(reasoningAt > types.indexOf('response.reasoning_summary_part.added'), 'summary part, then its text');
  t.ok(types.includes('response.function_call_arguments.delta'));
  t.ok(types.indexOf('response.custom_tool_call_input.done') > types.indexOf('response.custom_tool_call_input.delta'));
  t.equal(types.at(-1), 'response.completed');
  t.same(
    final.output.map((item) => item.type),
    ['reasoning', 'function_call', 'custom_tool_call'],
  );
  t.match(final.output[1], { name: 'spawn_agent', namespace: 'multi_agent_v1' });
  t.match(final.output[2], { input: 'PATCH' });
  t.ok(final.usage && final.usage.output_tokens > 0, 'usage in response.completed');
});

t.test('refused shapes still name the field', async (t) => {
  const bad = await postJson(`${gw.url}/v1/responses`, { authorization: `Bearer ${key}` }, { model: 'openai/gpt-4o-mini', input: 'hi', tools: [{ type: 'namespace', name: 'ns', tools: [{ type: 'custom', name: 'x' }] }] });
  t.equal(bad.status, 400);
  t.equal((bad.json as Json).error.param, 'tools[0].tools[0].type');
  const effort = await postJson(`${gw.url}/v1/responses`, { authorization: `Bearer ${key}` }, { model: 'openai/gpt-4o-mini', input: 'hi', reasoning: { effort: 'extreme' } });
  t.equal(effort.status, 400);
  t.equal((effort.json as Json).error.param, 'reasoning.effort');
  const ok = await postJson(`${gw.url}/v1/responses`, { authorization: `Bearer ${key}` }, { model: 'openai/o4-mini', input: 'hi', reasoning: { effort: 'low' } });
  t.equal(ok.status, 200, ok.text);
  t.equal((last('openai').body as Json).reasoning_effort, 'low', 'the effort to a reasoning model');
  t.notOk(header(ok, 'x-gateway-dropped-tools'));
});

t.test('reasoning "none" asks for none: no thinking for Claude, no thinkingConfig for Gemini, nothing named as ignored', async (t) => {
  for (const reasoning of [{ effort: 'none' }, {}, { summary: 'none' }]) {
    sim.reset();
    const claude = await client.responses.create({ model: 'anthropic/claude-haiku-4-5', input: 'hi', temperature: 0.3, reasoning } as OpenAI.Responses.ResponseCreateParamsNonStreaming).withResponse();
    const sent = last('anthropic').body as Json;
    t.notOk('thinking' in sent, `Claude without thinking for ${JSON.stringify(reasoning)}`);
    t.equal(sent.temperature, 0.3, 'its temperature kept');
    t.notOk(claude.response.headers.get('x-gateway-ignored-params'));
    await client.responses.create({ model: 'gemini/gemini-2.5-flash', input: 'hi', reasoning } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    t.notOk((last('gemini').body as Json).generationConfig.thinkingConfig, 'Gemini without thinkingConfig');
  }
  sim.reset();
  await client.responses.create({ model: 'gemini/gemini-2.5-flash', input: 'hi', reasoning: { effort: 'xhigh' } } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  t.equal((last('gemini').body as Json).generationConfig.thinkingConfig.thinkingBudget, 24576, 'xhigh is high, capped');
});

t.test('thinking and what Claude refuses beside it: a forced tool leaves thinking out, a temperature is dropped', async (t) => {
  sim.reset();
  const forced = await client.responses
    .create({ model: 'anthropic/claude-haiku-4-5', input: 'hi', reasoning: { effort: 'low' }, tools: [TOOLS[0]], tool_choice: { type: 'function', name: 'exec_command' } })
    .withResponse();
  t.equal(forced.response.status, 200);
  t.notOk('thinking' in (last('anthropic').body as Json), 'no thinking with a forced tool');
  t.match(forced.response.headers.get('x-gateway-ignored-params') ?? '', /reasoning/);
  const warm = await client.responses.create({ model: 'anthropic/claude-haiku-4-5', input: 'hi', reasoning: { effort: 'low' }, temperature: 0.2 }).withResponse();
  const sent = last('anthropic').body as Json;
  t.same(sent.thinking, { type: 'enabled', budget_tokens: 2048 });
  t.notOk('temperature' in sent, 'temperature left out beside thinking');
  t.match(warm.response.headers.get('x-gateway-ignored-params') ?? '', /temperature/);
});

t.test('a continued tool turn whose reasoning was not kept goes to Claude without thinking (Claude would refuse it)', async (t) => {
  sim.reset();
  const response = await postJson(`${gw.url}/v1/responses`, { authorization: `Bearer ${key}` }, {
    ...codexBody('anthropic/claude-haiku-4-5', [
      DEVELOPER,
      USER,
      { type: 'function_call', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"ls"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'README.md' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'and now?' }] },
    ]),
  });
  t.equal(response.status, 200, response.text);
  t.notOk('thinking' in (last('anthropic').body as Json));
});
