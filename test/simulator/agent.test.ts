import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { agentTurn, markerCommand } from '../support/simulator/agent.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * The simulator's coding-agent behaviour (agent.ts): on the requests Claude Code and Codex really
 * sent (test/fixtures/agents, recorded by test/support/agents/record.ts), on the shapes they reach
 * providers in after the gateway's translation, and its place after scripted scenarios.
 */

const FIXTURES = join(import.meta.dirname, '../fixtures/agents');
const MARKER = 'AGENT-MARKER-rec0001';

function fixtures(dir: string): Array<{ name: string; body: unknown }> {
  return readdirSync(join(FIXTURES, dir))
    .filter((name) => /^\d\d-.*\.json$/.test(name) && !name.startsWith('00-'))
    .map((name) => ({ name, body: JSON.parse(readFileSync(join(FIXTURES, dir, name), 'utf8')).body }));
}

t.test('the recorded requests: a shell call first, then a text quoting its output', async (t) => {
  const cases = [
    { dir: 'claude-code', shape: 'messages' as const, tool: 'Bash', args: { command: markerCommand(MARKER) } },
    { dir: 'claude-code/openai-gpt-5', shape: 'messages' as const, tool: 'Bash', args: { command: markerCommand(MARKER) } },
    { dir: 'codex', shape: 'responses' as const, tool: 'exec_command', args: { cmd: markerCommand(MARKER) } },
    { dir: 'codex/known-model-gpt-5.5', shape: 'responses' as const, tool: 'exec_command', args: { cmd: markerCommand(MARKER) } },
  ];
  for (const c of cases) {
    const recorded = fixtures(c.dir);
    t.ok(recorded.length >= 2, `${c.dir}: recorded requests`);
    for (const { name, body } of recorded) {
      const turn = agentTurn(c.shape, body);
      if (name.includes('tool-call')) t.match(turn, { type: 'tool', tool: { name: c.tool, kind: 'function' }, arguments: c.args }, `${c.dir}/${name}: a ${c.tool} call`);
      else if (name.includes('tool-result')) t.same(turn, { type: 'text', text: `The command printed: ${MARKER}` }, `${c.dir}/${name}: the output quoted`);
    }
  }
  t.equal(markerCommand(MARKER).includes(MARKER), false, "the command's own text lacks the marker (only its output has it)");
});

t.test('after the gateway: chat functions, flattened names, Gemini declarations', async (t) => {
  const shell = { type: 'function', function: { name: 'shell', parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } } } } };
  t.match(agentTurn('chat', { messages: [{ role: 'user', content: `please run echo ${MARKER}` }], tools: [shell] }), {
    type: 'tool',
    arguments: { command: ['bash', '-lc', markerCommand(MARKER)] },
  });
  const flattened = { type: 'function', function: { name: 'tools__exec_command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } } };
  t.match(agentTurn('chat', { messages: [{ role: 'user', content: MARKER }, { role: 'system', content: 'reminder' }], tools: [flattened] }), {
    tool: { name: 'tools__exec_command' },
    arguments: { cmd: markerCommand(MARKER) },
  }, 'a trailing system message is not the last turn');
  t.same(agentTurn('chat', { messages: [{ role: 'tool', tool_call_id: 'c', content: `${MARKER}\n` }] }), { type: 'text', text: `The command printed: ${MARKER}` });
  const gemini = { tools: [{ functionDeclarations: [{ name: 'Bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } }] }] };
  t.match(agentTurn('gemini', { ...gemini, contents: [{ role: 'user', parts: [{ text: `run echo ${MARKER}` }] }] }), { arguments: { command: markerCommand(MARKER) } });
  t.same(agentTurn('gemini', { ...gemini, contents: [{ role: 'user', parts: [{ functionResponse: { name: 'Bash', response: { output: MARKER } } }] }] }), { type: 'text', text: `The command printed: ${MARKER}` });
  t.equal(agentTurn('chat', { messages: [{ role: 'user', content: 'hello' }], tools: [shell] }), undefined, 'no marker: the normal reply');
  t.equal(agentTurn('chat', { messages: [{ role: 'user', content: MARKER }], tools: [] }), undefined, 'no shell tool: the normal reply');
  t.equal(agentTurn('messages', { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'nothing' }] }] }), undefined, 'a result without a marker: the normal reply');
});

t.test('in the simulator: after directives, queued and default scenarios', async (t) => {
  const sim = await ProviderSimulator.start();
  t.teardown(() => sim.close());
  const tools = [{ name: 'Bash', input_schema: { type: 'object', properties: { command: { type: 'string' } } } }];
  const ask = async (text: string) => {
    const res = await fetch(`${sim.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': sim.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, tools, messages: [{ role: 'user', content: text }] }),
    });
    return (await res.json()) as { content: Array<Record<string, unknown>> };
  };
  t.match((await ask(`run echo ${MARKER}`)).content, [{ type: 'tool_use', name: 'Bash', input: { command: markerCommand(MARKER) } }], 'the agent calls Bash');
  t.match((await ask(`run echo ${MARKER} SIM: {"text":"scripted"}`)).content, [{ type: 'text', text: 'scripted' }], 'a directive wins');
  sim.enqueue({ text: 'queued' });
  t.match((await ask(`run echo ${MARKER}`)).content, [{ type: 'text', text: 'queued' }], 'a queued scenario wins');
  t.match((await ask('hello')).content, [{ type: 'text', text: /^Hello from the anthropic simulator/ }], 'no marker: the default reply');
});
