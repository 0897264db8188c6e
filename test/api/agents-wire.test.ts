import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { decodeMessagesRequest } from '../../src/api/messages/decode.js';
import { decodeResponsesRequest } from '../../src/api/responses/decode.js';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import type { ChatProviderType, ProviderConfig } from '../../src/config/types.js';
import type { AssistantMessage, ChatRequest, Message, SystemMessage, ToolMessage } from '../../src/core/canonical.js';
import type { ChatDraft } from '../../src/core/call-context.js';
import { PROVIDER_FAMILIES } from '../../src/providers/registry.js';

/**
 * The wire translation for coding agents, driven by the request bodies recorded from the real
 * clients (test/fixtures/agents, see its README): every Codex CLI body decodes with the
 * responses decoder and every Claude Code body with the messages decoder, as the handlers do;
 * then each decoded draft, completed as the gateway completes it (model, upstream model, output
 * limit), is converted by each family's buildChatRequest and the upstream bodies are checked:
 * reasoning controls (Claude's thinking, Gemini's thinkingConfig, OpenAI's reasoning_effort),
 * system prompts, tools, Anthropic's passthrough fields and beta header.
 */

interface Recorded {
  file: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: Record<string, any>;
}

const AGENTS = join(PACKAGE_ROOT, 'test/fixtures/agents');

function recorded(client: 'codex' | 'claude-code'): Recorded[] {
  const out: Recorded[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.json')) {
        const json = JSON.parse(readFileSync(path, 'utf8')) as Partial<Recorded>;
        // 00-run.json: the client's exit and output, no request.
        if (json.body && json.headers) out.push({ ...(json as Recorded), file: relative(AGENTS, path) });
      }
    }
  };
  walk(join(AGENTS, client));
  return out;
}

const codex = recorded('codex');
const claudeCode = recorded('claude-code');

function provider(type: ChatProviderType): ProviderConfig {
  return {
    name: `test-${type}`,
    type,
    baseUrl: type === 'openai' ? 'http://upstream.test/v1' : 'http://upstream.test',
    apiKey: 'upstream-secret',
    apiKeys: ['upstream-secret'],
    headers: {},
    timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 },
    maxTokensParam: type === 'openai' ? 'max_completion_tokens' : 'max_tokens',
    ...(type === 'anthropic' ? { anthropicVersion: '2023-06-01' } : {}),
  };
}

/** The draft made the request, as the gateway's attempt does (core/gateway/chat.ts): model, upstream model, output limit after admission. */
function toRequest(draft: ChatDraft, model: string, upstreamModel: string, maxTokens: number): ChatRequest {
  return { ...structuredClone(draft), model, upstreamModel, maxTokens } as ChatRequest;
}

function build(type: ChatProviderType, request: ChatRequest) {
  const built = PROVIDER_FAMILIES[type].buildChatRequest(request, provider(type));
  return { ...built, body: built.body as Record<string, any> };
}

const textOf = (content: { type: string; text?: string }[]): string => content.map((part) => part.text ?? '').join('');
const systemTexts = (messages: Message[]): string[] => messages.filter((m): m is SystemMessage => m.role === 'system').map((m) => textOf(m.content));
const inputText = (content: unknown): string => (typeof content === 'string' ? content : (content as { text: string }[]).map((part) => part.text).join(''));

t.test('the recorded bodies are there', async (t) => {
  t.same(codex.map((r) => r.file), ['codex/01-responses-tool-call.json', 'codex/02-responses-tool-result.json', 'codex/known-model-gpt-5.5/01-responses-tool-call.json', 'codex/known-model-gpt-5.5/02-responses-tool-result.json']);
  t.same(claudeCode.map((r) => r.file), ['claude-code/01-messages-tool-call.json', 'claude-code/02-messages-tool-result.json', 'claude-code/openai-gpt-5/01-messages-tool-call.json', 'claude-code/openai-gpt-5/02-messages-tool-result.json']);
});

// ---------------------------------------------------------------------------------------------
// Codex CLI → the responses decoder

for (const rec of codex) {
  t.test(`codex ${rec.file}: decoded`, async (t) => {
    const body = rec.body;
    const copy = structuredClone(body);
    const { draft, echo } = decodeResponsesRequest(body);
    t.strictSame(body, copy, 'the body is not modified');
    t.strictSame(JSON.parse(JSON.stringify(draft)), draft, 'the draft is plain JSON');
    t.equal(draft.model, body.model);
    t.equal(draft.stream, true);
    t.equal(draft.ignoredParams, undefined, 'include, store, prompt_cache_key, client_metadata, reasoning, text.verbosity: all accepted, none named as ignored');

    // Tools: functions as they are, namespace functions flattened, a custom tool as a function, hosted tools dropped.
    const tools = new Map((draft.tools ?? []).map((tool) => [tool.name, tool]));
    const expectedNames: string[] = [];
    const dropped: string[] = [];
    for (const tool of body.tools as Record<string, any>[]) {
      if (tool.type === 'function') {
        expectedNames.push(tool.name);
        t.strictSame(tools.get(tool.name)?.parameters, tool.parameters, `function ${tool.name}: its parameters as they are`);
        t.equal(tools.get(tool.name)?.description, tool.description, `function ${tool.name}: its description`);
        t.equal(echo.toolOrigins.has(tool.name), false, `function ${tool.name}: no origin to map back`);
      } else if (tool.type === 'namespace') {
        for (const inner of tool.tools as Record<string, any>[]) {
          const flat = `${tool.name}__${inner.name}`;
          expectedNames.push(flat);
          const def = tools.get(flat);
          t.ok(def, `namespace ${tool.name}: ${inner.name} flattened to ${flat}`);
          t.strictSame(def?.parameters, inner.parameters, `${flat}: its parameters`);
          t.ok(def?.description?.startsWith(`[${tool.name}: `) && def.description.endsWith(inner.description), `${flat}: the namespace's description, then its own`);
          t.strictSame(echo.toolOrigins.get(flat), { kind: 'function', name: inner.name, namespace: tool.name }, `${flat}: mapped back to its namespace and name`);
        }
      } else if (tool.type === 'custom') {
        expectedNames.push(tool.name);
        const def = tools.get(tool.name);
        t.match(def?.parameters, { type: 'object', properties: { input: { type: 'string' } }, required: ['input'], additionalProperties: false }, `custom ${tool.name}: a function of one string, input`);
        t.ok(String((def?.parameters as any)?.properties?.input?.description).includes(tool.format.definition), `custom ${tool.name}: the grammar is in the input's description`);
        t.equal(def?.description, tool.description);
        t.strictSame(echo.toolOrigins.get(tool.name), { kind: 'custom', name: tool.name }, `custom ${tool.name}: mapped back to a custom tool`);
      } else dropped.push(tool.type);
    }
    t.same([...tools.keys()], expectedNames, 'every function tool, in order, no hosted one');
    t.same(draft.droppedTools, dropped, `hosted tools dropped and named (${dropped.join(', ')})`);
    t.ok(dropped.includes('web_search'), 'web_search is among them');
    if (rec.file.includes('known-model')) {
      t.same(dropped, ['tool_search', 'web_search'], 'the known model also gets tool_search, dropped');
      t.ok(tools.has('apply_patch'), 'the known model gets the custom apply_patch tool');
    } else t.ok(tools.has('multi_agent_v1__spawn_agent'), 'the unknown model gets the multi_agent_v1 namespace');
    t.same(echo.tools, body.tools, 'the response echoes the tools as the client sent them');
    t.same(draft.toolChoice, { type: 'auto' });
    t.equal(draft.parallelToolCalls, true);

    // Messages: no instructions; developer messages are system messages, in order.
    const items = body.input as Record<string, any>[];
    t.equal(body.instructions, undefined, 'Codex sends no instructions');
    const developers = items.filter((item) => item.role === 'developer');
    t.ok(developers.length >= 2, 'two developer messages at least');
    t.same(systemTexts(draft.messages), developers.map((item) => inputText(item.content)), 'developer messages → system messages, with their text');
    t.ok(draft.messages.every((m) => m.role !== 'system' || m.inline === undefined), 'not inline: instructions for every family');
    const users = items.filter((item) => item.role === 'user');
    t.same(draft.messages.filter((m) => m.role === 'user').map((m) => textOf(m.content as { type: string; text?: string }[])), users.map((item) => inputText(item.content)), 'user messages with their text');
    t.equal(echo.instructions, null);

    // A tool round: the function_call and its output.
    const call = items.find((item) => item.type === 'function_call');
    const output = items.find((item) => item.type === 'function_call_output');
    if (rec.file.endsWith('01-responses-tool-call.json')) {
      t.equal(call, undefined, 'turn 1 has no call yet');
      t.same(draft.messages.map((m) => m.role), [...items.map((item) => (item.role === 'developer' ? 'system' : item.role))], 'turn 1: the messages in order');
    } else if (!call || !output) {
      t.fail('turn 2 sends back the call and its output');
    } else {
      const roles = draft.messages.map((m) => m.role);
      t.same(roles.slice(-2), ['assistant', 'tool'], 'the call is an assistant turn, its output a tool message');
      const assistant = draft.messages.at(-2) as AssistantMessage;
      t.strictSame(assistant.toolCalls, [{ id: call.call_id, name: call.name, arguments: call.arguments }], 'the call by call_id, name and arguments as sent');
      t.same(assistant.content, [], 'no text with the call');
      t.equal(assistant.reasoning, undefined, 'no reasoning item sent back');
      const tool = draft.messages.at(-1) as ToolMessage;
      t.equal(tool.toolCallId, call.call_id, 'the output answers the call');
      t.same(tool.content, [{ type: 'text', text: output.output }], 'the output text as it is');
    }

    // Reasoning: an effort for a model Codex knows, a summary only for one it does not.
    t.same(draft.reasoning, rec.file.includes('known-model') ? { effort: 'medium' } : { summary: true }, 'reasoning');
    t.same(echo.reasoning, { effort: body.reasoning.effort ?? null, summary: body.reasoning.summary ?? null }, 'reasoning echoed as sent');
    t.equal(echo.store, false, 'store: false echoed');
    t.equal(echo.encryptedReasoning, true, 'include asks for reasoning.encrypted_content');
    if (body.text) t.same(echo.text, { ...body.text, format: { type: 'text' } }, 'text.verbosity kept in the echo');

    // The body as it is, for an upstream that takes the format itself.
    t.equal(draft.native?.format, 'responses');
    t.strictSame(draft.native?.body, body, 'native: the client\'s body as it is (Codex sends no models)');
    const withModels = decodeResponsesRequest({ ...body, models: ['anthropic/claude-sonnet-4-5'] }).draft;
    t.strictSame(withModels.native?.body, body, 'native: a models field is removed');
    t.same(withModels.fallbacks, ['anthropic/claude-sonnet-4-5'], 'models → fallbacks');
  });
}

// Codex → each family

const codexDraft = (name: string): { draft: ChatDraft; body: Record<string, any> } => {
  const rec = codex.find((r) => r.file === `codex/${name}`);
  if (!rec) throw new Error(`no recorded body ${name}`);
  return { draft: decodeResponsesRequest(rec.body).draft, body: rec.body };
};

t.test('codex → OpenAI chat completions: reasoning_effort only for reasoning models', async (t) => {
  for (const name of ['01-responses-tool-call.json', 'known-model-gpt-5.5/01-responses-tool-call.json', 'known-model-gpt-5.5/02-responses-tool-result.json']) {
    const { draft } = codexDraft(name);
    const known = name.startsWith('known-model');
    for (const upstream of ['gpt-5', 'o3', 'gpt-4o-mini']) {
      const built = build('openai', toRequest(draft, `openai/${upstream}`, upstream, 16_000));
      const label = `${name} on ${upstream}`;
      const reasoner = upstream !== 'gpt-4o-mini';
      if (reasoner && known) t.equal(built.body.reasoning_effort, 'medium', `${label}: reasoning.effort medium → reasoning_effort`);
      else t.notOk('reasoning_effort' in built.body, `${label}: no reasoning_effort (${reasoner ? 'a summary asks for no effort' : 'not a reasoning model'})`);
      if (reasoner) t.notOk(built.ignoredParams.includes('reasoning'), `${label}: reasoning not named as ignored`);
      else t.ok(built.ignoredParams.includes('reasoning'), `${label}: reasoning named as ignored`);
      t.equal(built.body.max_completion_tokens, 16_000);
      const names = (built.body.tools as { function: { name: string } }[]).map((tool) => tool.function.name);
      t.notOk(names.includes('web_search') || names.includes('tool_search'), `${label}: no hosted tool`);
      if (known) t.ok(names.includes('apply_patch'), `${label}: apply_patch as a function`);
      else t.ok(names.includes('multi_agent_v1__close_agent'), `${label}: namespace functions flattened`);
      t.equal(built.body.messages[0].role, 'system', `${label}: developer text as system messages`);
      t.notOk('prompt_cache_key' in built.body || 'client_metadata' in built.body || 'include' in built.body, `${label}: no responses-only field in a chat-completions body`);
    }
  }
  const { draft } = codexDraft('02-responses-tool-result.json');
  const messages = build('openai', toRequest(draft, 'openai/gpt-5', 'gpt-5', 16_000)).body.messages as Record<string, any>[];
  t.match(messages.at(-2), { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'exec_command' } }] }, 'the call as an assistant tool_calls message');
  t.match(messages.at(-1), { role: 'tool', tool_call_id: messages.at(-2)?.tool_calls[0].id }, 'its output as a tool message');
});

t.test('codex → Anthropic: thinking from the reasoning request, developer text as the system prompt', async (t) => {
  const { draft, body } = codexDraft('01-responses-tool-call.json');
  const built = build('anthropic', toRequest(draft, 'anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5', 16_000));
  t.same(built.body.thinking, { type: 'enabled', budget_tokens: 8192 }, 'a summary without an effort: a medium budget');
  const developers = (body.input as Record<string, any>[]).filter((item) => item.role === 'developer').flatMap((item) => item.content.map((part: { text: string }) => part.text));
  t.same(built.body.system.map((block: { text: string }) => block.text), developers, 'developer messages → system blocks');
  t.ok(built.body.messages.every((m: { role: string }) => m.role === 'user' || m.role === 'assistant'), 'no system turn among the messages');
  t.notOk('anthropic-beta' in built.headers, 'no beta header');
  t.notOk('prompt_cache_key' in built.body || 'client_metadata' in built.body, 'no responses-only field');
  const small = build('anthropic', toRequest(draft, 'anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5', 4096));
  t.same(small.body.thinking, { type: 'enabled', budget_tokens: 4095 }, 'the budget lowered below max_tokens');

  const known = codexDraft('known-model-gpt-5.5/01-responses-tool-call.json').draft;
  const patch = build('anthropic', toRequest(known, 'anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5', 16_000)).body.tools.find((tool: { name: string }) => tool.name === 'apply_patch');
  t.match(patch, { name: 'apply_patch', input_schema: { type: 'object', required: ['input'] } }, 'the custom tool as a tool of one string input');

  const turn2 = build('anthropic', toRequest(codexDraft('02-responses-tool-result.json').draft, 'anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5', 16_000));
  t.equal(turn2.body.thinking, undefined, 'turn 2: the tool turn carries no thinking of Claude\'s, so no thinking (Claude would refuse it)');
  t.ok(turn2.ignoredParams.includes('reasoning'), 'and reasoning is named as ignored');
  t.match(turn2.body.messages.at(-1), { role: 'user', content: [{ type: 'tool_result' }] }, 'the output as a tool_result');
});

t.test('codex → Gemini: thinkingConfig, developer text as systemInstruction', async (t) => {
  const { draft, body } = codexDraft('01-responses-tool-call.json');
  const built = build('gemini', toRequest(draft, 'gemini/gemini-2.5-flash', 'gemini-2.5-flash', 16_000));
  t.same(built.body.generationConfig.thinkingConfig, { thinkingBudget: 8192, includeThoughts: true }, 'summary auto: thoughts included, a medium budget');
  const developers = (body.input as Record<string, any>[]).filter((item) => item.role === 'developer').flatMap((item) => item.content.map((part: { text: string }) => part.text));
  t.same(built.body.systemInstruction.parts.map((part: { text: string }) => part.text), developers, 'developer messages → systemInstruction parts');
  t.ok(built.body.contents.every((c: { role: string }) => c.role === 'user' || c.role === 'model'), 'no system turn in contents');
  const known = build('gemini', toRequest(codexDraft('known-model-gpt-5.5/01-responses-tool-call.json').draft, 'gemini/gemini-2.5-flash', 'gemini-2.5-flash', 16_000));
  t.same(known.body.generationConfig.thinkingConfig, { thinkingBudget: 8192 }, 'effort medium: 8192, no summary asked');
  const old = build('gemini', toRequest(draft, 'gemini/gemini-2.0-flash', 'gemini-2.0-flash', 8192));
  t.equal(old.body.generationConfig.thinkingConfig, undefined, 'a model without thinking: none');
  t.ok(old.ignoredParams.includes('reasoning'), 'and reasoning named as ignored');
});

// ---------------------------------------------------------------------------------------------
// Claude Code → the messages decoder

const betasOf = (rec: Recorded): string => rec.headers['anthropic-beta'] ?? '';

for (const rec of claudeCode) {
  t.test(`claude code ${rec.file}: decoded`, async (t) => {
    const body = rec.body;
    const copy = structuredClone(body);
    t.equal(rec.query, 'beta=true', 'posted to /v1/messages?beta=true');
    const draft = decodeMessagesRequest(body, rec.headers['anthropic-beta']);
    t.strictSame(body, copy, 'the body is not modified');
    t.strictSame(JSON.parse(JSON.stringify(draft)), draft, 'the draft is plain JSON');
    t.equal(draft.maxTokens, 32_000);
    t.equal(draft.stream, true);
    t.equal(draft.user, body.metadata.user_id, 'metadata.user_id → user');

    // thinking → reasoning; output_config's effort with adaptive thinking.
    const adaptive = body.thinking.type === 'adaptive';
    if (adaptive) t.strictSame(draft.reasoning, { adaptive: true, summary: false, anthropic: body.thinking, effort: 'high' }, 'adaptive thinking (display omitted: no summary), output_config.effort high');
    else t.strictSame(draft.reasoning, { budgetTokens: 31_999, summary: false, anthropic: body.thinking }, 'enabled thinking with its budget (display omitted: no summary)');

    // Fields Claude takes, passed on; the betas as a header.
    t.equal(draft.passthrough?.family, 'anthropic');
    const expected: Record<string, unknown> = { context_management: body.context_management };
    if (body.output_config) expected.output_config = body.output_config;
    t.strictSame(draft.passthrough?.fields, expected, `passthrough: ${Object.keys(expected).join(', ')} (thinking is mapped)`);
    t.strictSame(draft.passthrough?.headers, { 'anthropic-beta': betasOf(rec) }, 'the anthropic-beta header passes on');
    t.ok(betasOf(rec).includes('context-management-2025-06-27'));

    // The system prompt: three text blocks, cache_control kept.
    const system = draft.messages[0] as SystemMessage;
    t.equal(system.role, 'system');
    t.equal(system.inline, undefined, 'the system field is the system prompt');
    t.same(system.content.map((part) => part.text), body.system.map((block: { text: string }) => block.text), 'every system block');
    t.same(system.content.map((part) => part.cacheControl), body.system.map((block: { cache_control?: unknown }) => block.cache_control), 'cache_control on the blocks that had it');
    t.ok(system.content[0]?.text.startsWith('x-anthropic-billing-header'), 'the billing line first');

    // role: "system" inside messages, kept where the client put it.
    const inside = (body.messages as { role: string; content: unknown }[]).map((m, i) => ({ ...m, i })).filter((m) => m.role === 'system');
    const inline = draft.messages.filter((m): m is SystemMessage => m.role === 'system' && m.inline === true);
    if (rec.file.includes('openai-gpt-5')) t.ok(inside.length > 0, 'Claude Code puts a system turn inside messages for a name it does not know');
    t.equal(inline.length, inside.length, 'each system turn inside messages → an inline system message');
    t.same(inline.map((m) => textOf(m.content)), inside.map((m) => (typeof m.content === 'string' ? m.content : (m.content as { text: string }[]).map((b) => b.text).join(''))), 'with its text');
    const roles = draft.messages.slice(1).map((m) => m.role);
    const bodyRoles = (body.messages as { role: string; content: unknown }[]).flatMap((m) => (Array.isArray(m.content) && m.content.every((b: { type: string }) => b.type === 'tool_result') ? m.content.map(() => 'tool') : [m.role]));
    t.same(roles, bodyRoles, 'the turns in the client\'s order (tool results as tool messages)');

    // Tools: all twelve, plain.
    t.same(draft.tools?.map((tool) => tool.name), body.tools.map((tool: { name: string }) => tool.name), 'every tool');
    t.ok(draft.tools?.some((tool) => tool.name === 'Bash'), 'the shell tool, Bash');

    // Turn 2: the tool_use and its tool_result.
    if (rec.file.endsWith('02-messages-tool-result.json')) {
      const assistant = draft.messages.find((m): m is AssistantMessage => m.role === 'assistant');
      const use = body.messages.flatMap((m: { content: unknown }) => (Array.isArray(m.content) ? m.content : [])).find((b: { type: string }) => b.type === 'tool_use');
      t.strictSame(assistant?.toolCalls, [{ id: use.id, name: 'Bash', arguments: JSON.stringify(use.input) }], 'the tool_use as a call');
      const result = draft.messages.at(-1) as ToolMessage;
      t.equal(result.role, 'tool');
      t.equal(result.toolCallId, use.id);
      t.equal(result.isError, undefined, 'is_error: false is no error');
      t.same(result.content.at(-1)?.cacheControl, { type: 'ephemeral' }, 'the tool_result\'s cache_control on its content');
    }

    // The same with the anthropic-version header Claude Code sends (2023-06-01: system turns stay inline).
    t.strictSame(decodeMessagesRequest(body, rec.headers['anthropic-beta'], rec.headers['anthropic-version']), draft, 'anthropic-version 2023-06-01 changes nothing');
    t.equal(decodeMessagesRequest(body).passthrough?.headers, undefined, 'without the header, no beta');
    const withModels = decodeMessagesRequest({ ...body, models: ['gemini/gemini-2.5-flash'] }, rec.headers['anthropic-beta']);
    t.same(withModels.fallbacks, ['gemini/gemini-2.5-flash'], 'models → fallbacks');
    t.notOk('models' in (withModels.passthrough?.fields ?? {}), 'models is the gateway\'s, not passed to Claude');
  });
}

// Claude Code → each family

const claudeDraft = (name: string): { draft: ChatDraft; rec: Recorded } => {
  const rec = claudeCode.find((r) => r.file === `claude-code/${name}`);
  if (!rec) throw new Error(`no recorded body ${name}`);
  return { draft: decodeMessagesRequest(rec.body, rec.headers['anthropic-beta']), rec };
};

t.test('claude code → Anthropic: thinking under max_tokens, betas, output_config and context_management', async (t) => {
  const { draft, rec } = claudeDraft('01-messages-tool-call.json');
  const built = build('anthropic', toRequest(draft, 'anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5', 32_000));
  t.same(built.body.thinking, { type: 'enabled', budget_tokens: 31_999, display: 'omitted' }, 'the client\'s thinking, display kept');
  t.same(built.body.context_management, rec.body.context_management, 'context_management passed on');
  t.equal(built.headers['anthropic-beta'], betasOf(rec), 'the betas in anthropic-beta');
  t.same(built.body.system, rec.body.system, 'the system blocks as sent, cache_control included');
  t.same(built.ignoredParams, [], 'nothing ignored');
  const clamped = build('anthropic', toRequest(draft, 'anthropic/claude-haiku-4-5', 'claude-haiku-4-5', 8192));
  t.same(clamped.body.thinking, { type: 'enabled', budget_tokens: 8191, display: 'omitted' }, 'max_tokens lowered to the model\'s limit: the budget below it');
  t.equal(clamped.body.max_tokens, 8192);
  const old = build('anthropic', toRequest(draft, 'anthropic/claude-3-5-haiku', 'claude-3-5-haiku-20241022', 8192));
  t.equal(old.body.thinking, undefined, 'a Claude without thinking: none');
  t.ok(old.ignoredParams.includes('thinking'), 'and thinking named as ignored');

  const turn2 = build('anthropic', toRequest(claudeDraft('02-messages-tool-result.json').draft, 'anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5', 32_000));
  t.equal(turn2.body.thinking, undefined, 'turn 2: the tool turn was replayed without a thinking block, so no thinking (Claude would refuse it)');
  t.ok(turn2.ignoredParams.includes('thinking'));
  t.match(turn2.body.messages.at(-1), { role: 'user', content: [{ type: 'tool_result', cache_control: { type: 'ephemeral' } }] }, 'the tool_result with its cache_control');

  const other = claudeDraft('openai-gpt-5/01-messages-tool-call.json');
  const adaptive = build('anthropic', toRequest(other.draft, 'anthropic/claude-sonnet-4-5', 'claude-sonnet-4-5', 32_000));
  t.same(adaptive.body.thinking, { type: 'adaptive', display: 'omitted' }, 'adaptive thinking as sent');
  t.same(adaptive.body.output_config, { effort: 'high' }, 'output_config passed on');
  t.same(adaptive.body.context_management, other.rec.body.context_management);
  t.equal(adaptive.headers['anthropic-beta'], betasOf(other.rec));
  t.ok(adaptive.headers['anthropic-beta']?.includes('effort-2025-11-24'));
  const systemTurns = adaptive.body.messages.filter((m: { role: string }) => m.role === 'system');
  t.equal(systemTurns.length, 1, 'the system turn inside messages goes to Claude where the client put it (Claude answers for itself)');
  t.equal(adaptive.body.messages.at(-1).role, 'system', 'last, as sent');
});

t.test('claude code → Gemini: thinkingBudget capped, inline system turns in systemInstruction', async (t) => {
  const { draft, rec } = claudeDraft('01-messages-tool-call.json');
  const built = build('gemini', toRequest(draft, 'gemini/gemini-2.5-flash', 'gemini-2.5-flash', 32_000));
  t.same(built.body.generationConfig.thinkingConfig, { thinkingBudget: 24_576 }, '31999 capped at Flash\'s 24576; display omitted: no thoughts');
  t.same(built.body.systemInstruction.parts.map((part: { text: string }) => part.text), rec.body.system.map((block: { text: string }) => block.text), 'the system blocks');
  const pro = build('gemini', toRequest(draft, 'gemini/gemini-2.5-pro', 'gemini-2.5-pro', 32_000));
  t.same(pro.body.generationConfig.thinkingConfig, { thinkingBudget: 31_999 }, 'within 2.5 Pro\'s range: as asked');
  t.equal(built.body.context_management, undefined, 'context_management is Claude\'s only');
  t.notOk('anthropic-beta' in built.headers, 'no beta header');
  const declarations = built.body.tools[0].functionDeclarations as { name: string; parameters: Record<string, unknown> }[];
  t.equal(declarations.length, 12);
  t.notOk(JSON.stringify(declarations).includes('"$schema"') || JSON.stringify(declarations).includes('additionalProperties'), 'no $schema nor additionalProperties (Gemini refuses them)');

  for (const name of ['openai-gpt-5/01-messages-tool-call.json', 'openai-gpt-5/02-messages-tool-result.json']) {
    const other = claudeDraft(name);
    const gemini = build('gemini', toRequest(other.draft, 'gemini/gemini-2.5-flash', 'gemini-2.5-flash', 32_000));
    const inside = (other.rec.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'system').map((m) => (typeof m.content === 'string' ? m.content : (m.content as { text: string }[]).map((b) => b.text).join('')));
    t.same(gemini.body.systemInstruction.parts.map((part: { text: string }) => part.text), [...other.rec.body.system.map((block: { text: string }) => block.text), ...inside], `${name}: the system turn inside messages folded into systemInstruction, after the system prompt`);
    t.ok(gemini.body.contents.every((c: { role: string }) => c.role === 'user' || c.role === 'model'), `${name}: no system turn in contents`);
    t.same(gemini.body.generationConfig.thinkingConfig, { thinkingBudget: -1 }, `${name}: adaptive → dynamic thinking`);
  }
  const turn2 = build('gemini', toRequest(claudeDraft('openai-gpt-5/02-messages-tool-result.json').draft, 'gemini/gemini-2.5-flash', 'gemini-2.5-flash', 32_000));
  t.match(turn2.body.contents.at(-2), { role: 'model', parts: [{ functionCall: { name: 'Bash' } }] }, 'the call as a functionCall');
  t.match(turn2.body.contents.at(-1), { role: 'user', parts: [{ functionResponse: { name: 'Bash' } }] }, 'its result as a functionResponse named after it');
});

t.test('claude code → OpenAI: reasoning_effort only for reasoning models, inline system turns as system messages', async (t) => {
  for (const name of ['01-messages-tool-call.json', '02-messages-tool-result.json', 'openai-gpt-5/01-messages-tool-call.json', 'openai-gpt-5/02-messages-tool-result.json']) {
    const { draft, rec } = claudeDraft(name);
    for (const upstream of ['gpt-5', 'o3', 'gpt-4o-mini']) {
      const label = `${name} on ${upstream}`;
      const built = build('openai', toRequest(draft, `openai/${upstream}`, upstream, 16_384));
      if (upstream === 'gpt-4o-mini') {
        t.notOk('reasoning_effort' in built.body, `${label}: no reasoning_effort`);
        t.ok(built.ignoredParams.includes('thinking'), `${label}: thinking named as ignored`);
      } else {
        t.equal(built.body.reasoning_effort, 'high', `${label}: ${rec.body.thinking.type === 'adaptive' ? 'output_config.effort high' : 'a 31999 budget'} → high`);
        t.notOk(built.ignoredParams.includes('thinking'), `${label}: thinking not ignored`);
      }
      t.equal(built.body.max_completion_tokens, 16_384);
      t.notOk('context_management' in built.body || 'output_config' in built.body || 'thinking' in built.body, `${label}: Claude's fields stay out`);
      t.notOk('anthropic-beta' in built.headers, `${label}: no beta header`);
      t.equal(built.body.user, rec.body.metadata.user_id, `${label}: metadata.user_id → user`);
      const systems = (built.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'system').map((m) => m.content);
      t.equal(systems[0], rec.body.system.map((block: { text: string }) => block.text).join(''), `${label}: the system prompt first`);
      for (const turn of (rec.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'system')) {
        t.ok(systems.includes(typeof turn.content === 'string' ? turn.content : (turn.content as { text: string }[]).map((b) => b.text).join('')), `${label}: the system turn inside messages as a system message`);
      }
    }
  }
});
