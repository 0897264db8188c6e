import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t, { type Test } from 'tap';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { ProviderSimulator, type RecordedRequest, type Scenario, type SimToolCall, type SimUsage } from '../support/simulator/server.js';

/**
 * THE MATRIX: every ingress format (OpenAI chat completions, OpenAI Responses, Anthropic
 * Messages) × every upstream wire family (OpenAI-compatible, Anthropic, Gemini) × every core
 * case, driven by the official SDKs exactly as a user would drive them. Each cell checks both
 * sides: what the SDK hands back, and what the provider simulator received.
 */

// Parsed upstream JSON is read field by field; its shape is what is under test.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Format = 'chat' | 'responses' | 'messages';
type Family = 'openai' | 'anthropic' | 'gemini';
type CaseName = 'text' | 'streamed text' | 'tool call round trip' | 'streamed tool call' | 'image input' | 'system prompt' | 'error from upstream';
type Upstream = RecordedRequest & { body: Json };

interface ModelCase {
  family: Family;
  id: string;
  upstream: string;
}

const MODELS: ModelCase[] = [
  { family: 'openai', id: 'openai/gpt-4o-mini', upstream: 'gpt-4o-mini' },
  { family: 'anthropic', id: 'anthropic/claude-haiku-4-5', upstream: 'claude-haiku-4-5' },
  { family: 'gemini', id: 'gemini/gemini-2.5-flash', upstream: 'gemini-2.5-flash' },
];
const FORMATS: Format[] = ['chat', 'responses', 'messages'];
const CASES: CaseName[] = ['text', 'streamed text', 'tool call round trip', 'streamed tool call', 'image input', 'system prompt', 'error from upstream'];

/** Canonical usage for every scenario: cache reads on all families, cache writes only Anthropic can report. */
const USAGE: SimUsage = { input: 120, output: 30, cacheRead: 40, cacheWrite: 10 };

const TEXT = 'Hello from the matrix.';
const LONG_TEXT = 'This answer streams in many small pieces, so that the gateway relays several deltas before the end.';
const SYSTEM = 'You are a terse assistant. Answer in five words.';
const MAX_TOKENS = 1024;

/** A 1x1 PNG. */
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG_DATA_URL = `data:image/png;base64,${PNG_B64}`;

const WEATHER_SCHEMA = {
  type: 'object' as const,
  properties: { city: { type: 'string', description: 'City name' } },
  required: ['city'],
};
const TIME_SCHEMA = {
  type: 'object' as const,
  properties: { tz: { type: 'string', description: 'IANA time zone' } },
  required: ['tz'],
};
const TOOL_NAMES = ['get_weather', 'get_time'];
const QUESTION = 'What is the weather and the time in Paris?';
const CALL_ARGS: Record<string, Record<string, unknown>> = { get_weather: { city: 'Paris' }, get_time: { tz: 'Europe/Paris' } };
const RESULTS: Record<string, Record<string, unknown>> = { get_weather: { temp_c: 21, sky: 'clear' }, get_time: { time: '14:05' } };
const FINAL_ANSWER = 'It is 21°C and clear in Paris, 14:05.';

/** Two parallel tool calls; fixed ids make a JSON answer and a streamed answer comparable (Gemini has no ids). */
function toolCalls(family: Family, fixedIds = false): SimToolCall[] {
  return TOOL_NAMES.map((name, i) => {
    const call: SimToolCall = { name, arguments: CALL_ARGS[name] ?? {} };
    if (fixedIds) call.id = family === 'anthropic' ? `toolu_01Matrix${i}` : `call_matrix${i}`;
    return call;
  });
}

/** Tool-call ids the client sees: the upstream's own, or the gateway's for Gemini (which has none). */
function callIdPattern(family: Family): RegExp {
  return family === 'anthropic' ? /^toolu_01\w+$/ : /^call_[\w-]+$/;
}

const CHAT_TOOLS: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather for a city', parameters: WEATHER_SCHEMA } },
  { type: 'function', function: { name: 'get_time', description: 'Current time in a time zone', parameters: TIME_SCHEMA } },
];
const RESPONSES_TOOLS: OpenAI.Responses.FunctionTool[] = [
  { type: 'function', name: 'get_weather', description: 'Current weather for a city', parameters: WEATHER_SCHEMA, strict: false },
  { type: 'function', name: 'get_time', description: 'Current time in a time zone', parameters: TIME_SCHEMA, strict: false },
];
const MESSAGES_TOOLS: Anthropic.Tool[] = [
  { name: 'get_weather', description: 'Current weather for a city', input_schema: WEATHER_SCHEMA },
  { name: 'get_time', description: 'Current time in a time zone', input_schema: TIME_SCHEMA },
];

/** Error types an Anthropic client knows (the SDK's `ErrorType`). */
const ANTHROPIC_ERROR_TYPES = [
  'invalid_request_error', 'authentication_error', 'billing_error', 'permission_error', 'not_found_error', 'rate_limit_error', 'timeout_error', 'api_error',
  'overloaded_error', 'memory_precondition_failed_error', 'memory_path_conflict_error', 'conflict_error',
];

// ---------------------------------------------------------------------------------------------
// One simulator, one gateway, one funded key, three unchanged SDK clients

const sim = await ProviderSimulator.start();
// No retries: each cell scripts exactly the upstream answers it checks (routing's retries are
// tested in test/e2e/routing*.test.ts).
const gw = await startTestGateway({ providers: simulatedProviders(sim.url), routing: { retries: 0 } });
const { key } = await fundedKey(gw, { balance: 1000 });
const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });

t.teardown(async () => {
  await gw.stop();
  await sim.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers: the simulator side

/** Clears what the simulator recorded and queues the scenarios the next calls get. */
function script(...scenarios: Scenario[]): void {
  sim.reset();
  sim.enqueue(...scenarios);
}

/** The upstream requests since the last script() call; there must be exactly `count`. */
function upstream(t: Test, count: number): Upstream[] {
  t.equal(sim.requests.length, count, `${count} upstream request(s)`);
  return sim.requests as Upstream[];
}

function only(t: Test): Upstream {
  const request = upstream(t, 1)[0];
  if (!request) throw new Error('no upstream request was recorded');
  return request;
}

function upstreamPath(model: ModelCase, stream: boolean): string {
  if (model.family === 'openai') return '/v1/chat/completions';
  if (model.family === 'anthropic') return '/v1/messages';
  return `/v1beta/models/${model.upstream}:${stream ? 'streamGenerateContent' : 'generateContent'}`;
}

/** The right family, path, model and stream mode. */
function checkRoute(t: Test, req: Upstream | undefined, model: ModelCase, stream: boolean): void {
  if (!req) {
    t.fail('no upstream request');
    return;
  }
  t.equal(req.family, model.family, 'upstream family');
  t.equal(req.method, 'POST', 'upstream method');
  t.equal(req.path, upstreamPath(model, stream), 'upstream path');
  t.equal(req.model, model.upstream, 'upstream model name');
  t.equal(req.stream, stream, stream ? 'streamed upstream' : 'not streamed upstream');
  if (model.family === 'gemini' && stream) t.equal(req.query, 'alt=sse', 'Gemini SSE streaming');
}

function textOf(content: Json): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: Json) => (typeof part?.text === 'string' && part.type !== 'tool_result' ? part.text : '')).join('');
}

/** The text of every user turn (tool results excluded), in order. */
function userTexts(family: Family, body: Json): string[] {
  if (family === 'openai') return body.messages.filter((m: Json) => m.role === 'user').map((m: Json) => textOf(m.content));
  if (family === 'anthropic') {
    return body.messages
      .filter((m: Json) => m.role === 'user')
      .map((m: Json) => (typeof m.content === 'string' ? m.content : textOf(m.content.filter((b: Json) => b.type === 'text'))))
      .filter((text: string) => text !== '');
  }
  return body.contents
    .filter((c: Json) => c.role === 'user')
    .map((c: Json) => c.parts.filter((p: Json) => typeof p.text === 'string').map((p: Json) => p.text).join(''))
    .filter((text: string) => text !== '');
}

/** The output limit the upstream request carries. */
function sentMaxTokens(family: Family, body: Json): unknown {
  if (family === 'anthropic') return body.max_tokens;
  if (family === 'gemini') return body.generationConfig?.maxOutputTokens;
  return body.max_completion_tokens ?? body.max_tokens;
}

/** System prompt placement: Anthropic top-level `system`, Gemini `systemInstruction`, OpenAI a system message. */
function checkSystem(t: Test, family: Family, body: Json, expected: string): void {
  if (family === 'anthropic') {
    t.same(body.system, [{ type: 'text', text: expected }], 'Anthropic: top-level system blocks');
    t.notOk(body.messages.some((m: Json) => m.role === 'system'), 'no system turn in messages');
    t.same(
      body.messages.map((m: Json) => m.role),
      ['user'],
      'only the user turn in messages',
    );
  } else if (family === 'gemini') {
    t.same(body.systemInstruction, { parts: [{ text: expected }] }, 'Gemini: systemInstruction');
    t.same(
      body.contents.map((c: Json) => c.role),
      ['user'],
      'only the user turn in contents',
    );
    t.notOk(JSON.stringify(body.contents).includes(expected), 'the system text is not repeated in contents');
  } else {
    t.same(body.messages[0], { role: 'system', content: expected }, 'OpenAI: the first message is the system message');
    t.same(
      body.messages.map((m: Json) => m.role),
      ['system', 'user'],
      'system, then user',
    );
  }
}

/** The image part as each family carries it. */
function checkImage(t: Test, family: Family, body: Json): void {
  if (family === 'openai') {
    const parts = body.messages.find((m: Json) => m.role === 'user')?.content;
    const image = Array.isArray(parts) ? parts.find((p: Json) => p.type === 'image_url') : undefined;
    t.equal(image?.image_url?.url, PNG_DATA_URL, 'OpenAI: an image_url part with the data URL');
  } else if (family === 'anthropic') {
    const blocks = body.messages.find((m: Json) => m.role === 'user')?.content;
    const image = Array.isArray(blocks) ? blocks.find((b: Json) => b.type === 'image') : undefined;
    t.same(image?.source, { type: 'base64', media_type: 'image/png', data: PNG_B64 }, 'Anthropic: a base64 image source');
  } else {
    const parts = body.contents.find((c: Json) => c.role === 'user')?.parts ?? [];
    const image = parts.find((p: Json) => p.inlineData !== undefined);
    t.same(image?.inlineData, { mimeType: 'image/png', data: PNG_B64 }, 'Gemini: inlineData');
  }
  t.same(userTexts(family, body), ['What is in this picture?'], 'the text part travels with the image');
}

/** The tools as each family declares them: names in order, schemas kept. */
function checkToolDeclarations(t: Test, family: Family, body: Json): void {
  let declared: { name: string; required: unknown }[];
  if (family === 'openai') declared = (body.tools ?? []).map((tool: Json) => ({ name: tool.function?.name, required: tool.function?.parameters?.required }));
  else if (family === 'anthropic') declared = (body.tools ?? []).map((tool: Json) => ({ name: tool.name, required: tool.input_schema?.required }));
  else declared = (body.tools ?? []).flatMap((tool: Json) => tool.functionDeclarations ?? []).map((d: Json) => ({ name: d.name, required: d.parameters?.required }));
  t.same(
    declared,
    [
      { name: 'get_weather', required: ['city'] },
      { name: 'get_time', required: ['tz'] },
    ],
    `${family}: tools declared in the family's shape`,
  );
}

/**
 * The second round-trip request: the assistant's earlier calls are in the history, and every
 * result is matched to its call — by id (OpenAI `tool_call_id`, Anthropic `tool_result.tool_use_id`)
 * or by function name (Gemini `functionResponse.name`).
 */
function checkToolHistory(t: Test, family: Family, body: Json, ids: string[]): void {
  if (family === 'openai') {
    const assistant = body.messages.find((m: Json) => m.role === 'assistant');
    t.same(
      (assistant?.tool_calls ?? []).map((c: Json) => ({ id: c.id, name: c.function?.name, args: JSON.parse(c.function?.arguments ?? 'null') })),
      TOOL_NAMES.map((name, i) => ({ id: ids[i], name, args: CALL_ARGS[name] })),
      'OpenAI: the assistant tool_calls in the history',
    );
    t.same(
      body.messages.filter((m: Json) => m.role === 'tool').map((m: Json) => ({ id: m.tool_call_id, result: JSON.parse(textOf(m.content)) })),
      TOOL_NAMES.map((name, i) => ({ id: ids[i], result: RESULTS[name] })),
      'OpenAI: tool messages answer the right tool_call_id',
    );
    t.same(
      body.messages.map((m: Json) => m.role),
      ['user', 'assistant', 'tool', 'tool'],
      'turn order',
    );
  } else if (family === 'anthropic') {
    const assistant = body.messages.find((m: Json) => m.role === 'assistant');
    t.same(
      (assistant?.content ?? []).filter((b: Json) => b.type === 'tool_use').map((b: Json) => ({ id: b.id, name: b.name, input: b.input })),
      TOOL_NAMES.map((name, i) => ({ id: ids[i], name, input: CALL_ARGS[name] })),
      'Anthropic: the tool_use blocks in the history',
    );
    const last = body.messages.at(-1);
    t.equal(last?.role, 'user', 'the results are in a user turn');
    t.same(
      (last?.content ?? []).filter((b: Json) => b.type === 'tool_result').map((b: Json) => ({ id: b.tool_use_id, result: JSON.parse(textOf(b.content)) })),
      TOOL_NAMES.map((name, i) => ({ id: ids[i], result: RESULTS[name] })),
      'Anthropic: tool_result.tool_use_id matches each call',
    );
    t.same(
      body.messages.map((m: Json) => m.role),
      ['user', 'assistant', 'user'],
      'turn order',
    );
  } else {
    const model = body.contents.find((c: Json) => c.role === 'model');
    t.same(
      (model?.parts ?? []).filter((p: Json) => p.functionCall).map((p: Json) => p.functionCall),
      TOOL_NAMES.map((name) => ({ name, args: CALL_ARGS[name] })),
      'Gemini: the functionCall parts in the history',
    );
    const last = body.contents.at(-1);
    t.equal(last?.role, 'user', 'the results are in a user turn');
    t.same(
      (last?.parts ?? []).filter((p: Json) => p.functionResponse).map((p: Json) => p.functionResponse),
      TOOL_NAMES.map((name) => ({ name, response: RESULTS[name] })),
      'Gemini: functionResponse.name matches each call',
    );
    t.same(
      body.contents.map((c: Json) => c.role),
      ['user', 'model', 'user'],
      'turn order',
    );
  }
}

/** Client-visible tool calls: ids of the right kind, distinct; names and arguments as the model sent them. */
function checkCalls(t: Test, family: Family, calls: { id: string; name: string; args: unknown }[]): string[] {
  t.same(
    calls.map((c) => ({ name: c.name, args: c.args })),
    TOOL_NAMES.map((name) => ({ name, args: CALL_ARGS[name] })),
    'two tool calls: names and parsed arguments',
  );
  for (const call of calls) t.match(call.id, callIdPattern(family), `call id ${call.id}`);
  t.equal(new Set(calls.map((c) => c.id)).size, calls.length, 'call ids are distinct');
  return calls.map((c) => c.id);
}

function parseArgs(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? '');
  } catch {
    return { unparseable: text };
  }
}

/** The error a promise rejects with (undefined when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Helpers: usage as each format reports it

function checkChatUsage(t: Test, usage: OpenAI.CompletionUsage | undefined): void {
  t.match(usage, { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, prompt_tokens_details: { cached_tokens: 40 } }, 'chat usage');
}

function checkResponsesUsage(t: Test, usage: OpenAI.Responses.ResponseUsage | null | undefined): void {
  t.match(usage, { input_tokens: 120, output_tokens: 30, total_tokens: 150, input_tokens_details: { cached_tokens: 40 } }, 'responses usage');
}

/** Anthropic's input_tokens exclude cache reads and writes (only the Anthropic family reports writes). */
function checkMessagesUsage(t: Test, family: Family, usage: Anthropic.Usage | undefined): void {
  const written = family === 'anthropic' ? 10 : 0;
  t.match(usage, { input_tokens: 120 - 40 - written, output_tokens: 30, cache_read_input_tokens: 40, cache_creation_input_tokens: written }, 'messages usage');
}

// ---------------------------------------------------------------------------------------------
// Helpers: the Responses output

type ResponseLike = { output: OpenAI.Responses.ResponseOutputItem[] };

/** Output items without the per-response ids (Gemini call ids are the gateway's, fresh per call). */
function outputShape(response: ResponseLike, family: Family): Json[] {
  return response.output.map((item) => {
    if (item.type === 'message') {
      return {
        type: item.type,
        role: item.role,
        status: item.status,
        content: item.content.map((c) => (c.type === 'output_text' ? { type: c.type, text: c.text } : { type: c.type })),
      };
    }
    if (item.type === 'function_call') {
      return { type: item.type, call_id: family === 'gemini' ? '(gateway id)' : item.call_id, name: item.name, arguments: parseArgs(item.arguments), status: item.status };
    }
    return { type: item.type };
  });
}

function checkResponseEnvelope(t: Test, response: OpenAI.Responses.Response, model: ModelCase, status: string): void {
  t.match(response.id, /^resp_\S+$/, 'id starts with resp_');
  t.equal(response.object, 'response');
  t.equal(response.status, status, `status ${status}`);
  t.equal(response.model, model.id, 'the response names the catalog id');
  t.equal(response.error, null, 'no error');
  for (const item of response.output) t.match(item.id, /^(msg|fc)_\S+$/, `output item id ${item.id ?? ''}`);
  t.equal(new Set(response.output.map((i) => i.id)).size, response.output.length, 'output item ids are distinct');
}

function responseCalls(response: ResponseLike): { id: string; name: string; args: unknown }[] {
  return response.output.flatMap((item) => (item.type === 'function_call' ? [{ id: item.call_id, name: item.name, args: parseArgs(item.arguments) }] : []));
}

// ---------------------------------------------------------------------------------------------
// Helpers: the Messages content

function blockShape(block: Anthropic.ContentBlock): Json {
  if (block.type === 'text') return { type: 'text', text: block.text };
  if (block.type === 'tool_use') return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
  return { type: block.type };
}

function messageCalls(message: Anthropic.Message): { id: string; name: string; args: unknown }[] {
  return message.content.flatMap((block) => (block.type === 'tool_use' ? [{ id: block.id, name: block.name, args: block.input }] : []));
}

function checkMessageEnvelope(t: Test, message: Anthropic.Message, model: ModelCase): void {
  t.match(message.id, /^msg_\S+$/, 'id starts with msg_');
  t.equal(message.type, 'message');
  t.equal(message.role, 'assistant');
  t.equal(message.model, model.id, 'the message names the catalog id');
}

// ---------------------------------------------------------------------------------------------
// The cells, per format

type Cell = (t: Test, model: ModelCase) => Promise<void>;

const chatCells: Record<CaseName, Cell> = {
  async text(t, m) {
    script({ text: TEXT, usage: USAGE });
    const res = await openai.chat.completions.create({ model: m.id, messages: [{ role: 'user', content: 'Say hello.' }] });
    t.match(res.id, /^chatcmpl-\S+$/);
    t.equal(res.object, 'chat.completion');
    t.equal(res.model, m.id);
    t.equal(res.choices.length, 1);
    t.equal(res.choices[0]?.message.role, 'assistant');
    t.equal(res.choices[0]?.message.content, TEXT);
    t.notOk(res.choices[0]?.message.tool_calls?.length, 'no tool calls');
    t.equal(res.choices[0]?.finish_reason, 'stop');
    checkChatUsage(t, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    t.same(userTexts(m.family, req.body), ['Say hello.']);
  },

  async 'streamed text'(t, m) {
    script({ text: LONG_TEXT, usage: USAGE, chunkSize: 6 });
    const stream = openai.chat.completions.stream({ model: m.id, messages: [{ role: 'user', content: 'Tell me something.' }], stream_options: { include_usage: true } });
    let deltas = 0;
    stream.on('content.delta', () => (deltas += 1));
    const res = await stream.finalChatCompletion();
    t.ok(deltas > 1, `the text arrived in pieces (${deltas} deltas)`);
    t.match(res.id, /^chatcmpl-\S+$/);
    t.equal(res.model, m.id);
    t.equal(res.choices[0]?.message.content, LONG_TEXT);
    t.notOk(res.choices[0]?.message.tool_calls?.length, 'no tool calls');
    t.equal(res.choices[0]?.finish_reason, 'stop');
    checkChatUsage(t, res.usage ?? undefined);

    const req = only(t);
    checkRoute(t, req, m, true);
    t.same(userTexts(m.family, req.body), ['Tell me something.']);
  },

  async 'tool call round trip'(t, m) {
    script({ toolCalls: toolCalls(m.family), usage: USAGE }, { text: FINAL_ANSWER, usage: USAGE });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: QUESTION }];
    const first = await openai.chat.completions.create({ model: m.id, messages, tools: CHAT_TOOLS });
    const message = first.choices[0]?.message;
    t.equal(first.choices[0]?.finish_reason, 'tool_calls');
    t.equal(message?.content, null, 'no text beside the tool calls');
    const calls = (message?.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ id: c.id, name: c.function.name, args: parseArgs(c.function.arguments) }] : []));
    t.equal(message?.tool_calls?.length, 2, 'two function tool calls');
    const ids = checkCalls(t, m.family, calls);
    checkChatUsage(t, first.usage);
    if (!message) return;

    messages.push(message);
    for (const [i, name] of TOOL_NAMES.entries()) messages.push({ role: 'tool', tool_call_id: ids[i] ?? '', content: JSON.stringify(RESULTS[name]) });
    const second = await openai.chat.completions.create({ model: m.id, messages, tools: CHAT_TOOLS });
    t.equal(second.choices[0]?.message.content, FINAL_ANSWER);
    t.equal(second.choices[0]?.finish_reason, 'stop');

    const [req1, req2] = upstream(t, 2);
    checkRoute(t, req1, m, false);
    checkToolDeclarations(t, m.family, req1?.body);
    checkRoute(t, req2, m, false);
    checkToolHistory(t, m.family, req2?.body, ids);
  },

  async 'streamed tool call'(t, m) {
    script({ text: 'Let me check.', toolCalls: toolCalls(m.family), usage: USAGE, chunkSize: 3 });
    const stream = openai.chat.completions.stream({
      model: m.id,
      messages: [{ role: 'user', content: QUESTION }],
      tools: CHAT_TOOLS,
      stream_options: { include_usage: true },
    });
    let argumentDeltas = 0;
    stream.on('tool_calls.function.arguments.delta', () => (argumentDeltas += 1));
    const res = await stream.finalChatCompletion();
    const message = res.choices[0]?.message;
    t.ok(argumentDeltas >= 2, `tool arguments streamed (${argumentDeltas} deltas)`);
    t.equal(res.choices[0]?.finish_reason, 'tool_calls');
    t.equal(message?.content, 'Let me check.', 'the text before the calls');
    t.equal(message?.tool_calls?.length, 2, 'two function tool calls');
    checkCalls(
      t,
      m.family,
      (message?.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ id: c.id, name: c.function.name, args: parseArgs(c.function.arguments) }] : [])),
    );
    checkChatUsage(t, res.usage ?? undefined);

    const req = only(t);
    checkRoute(t, req, m, true);
    checkToolDeclarations(t, m.family, req.body);
  },

  async 'image input'(t, m) {
    script({ text: 'A single pixel.', usage: USAGE });
    const res = await openai.chat.completions.create({
      model: m.id,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: PNG_DATA_URL } },
          ],
        },
      ],
    });
    t.equal(res.choices[0]?.message.content, 'A single pixel.');
    t.equal(res.choices[0]?.finish_reason, 'stop');
    checkChatUsage(t, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    checkImage(t, m.family, req.body);
  },

  async 'system prompt'(t, m) {
    script({ text: 'Short answer, as asked.', usage: USAGE });
    const res = await openai.chat.completions.create({
      model: m.id,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Describe Paris.' },
      ],
    });
    t.equal(res.choices[0]?.message.content, 'Short answer, as asked.');
    t.equal(res.choices[0]?.finish_reason, 'stop');
    checkChatUsage(t, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    checkSystem(t, m.family, req.body, SYSTEM);
    t.same(userTexts(m.family, req.body), ['Describe Paris.']);
  },

  async 'error from upstream'(t, m) {
    script({ error: { status: 400, message: 'bad thing' } }, { error: { status: 500, message: 'upstream exploded' } });
    const params = { model: m.id, messages: [{ role: 'user' as const, content: 'Hello?' }] };
    const bad = await rejection(openai.chat.completions.create(params));
    t.ok(bad instanceof OpenAI.BadRequestError, `BadRequestError (${String(bad)})`);
    if (bad instanceof OpenAI.APIError) {
      t.equal(bad.status, 400);
      t.match(bad.message, /bad thing/, 'the upstream message reaches the client');
      t.match(bad.error, { type: 'invalid_request_error', code: 400, reason: 'upstream_invalid_request', message: /bad thing/ });
    }
    const failed = await rejection(openai.chat.completions.stream(params).finalChatCompletion());
    t.ok(failed instanceof OpenAI.InternalServerError, `InternalServerError (${String(failed)})`);
    if (failed instanceof OpenAI.APIError) {
      t.equal(failed.status, 502, 'an upstream 500 is a 502');
      t.match(failed.error, { type: 'upstream_error', code: 502, reason: 'upstream_error', message: /upstream exploded/ });
    }

    const [req1, req2] = upstream(t, 2);
    checkRoute(t, req1, m, false);
    checkRoute(t, req2, m, true);
  },
};

const responsesCells: Record<CaseName, Cell> = {
  async text(t, m) {
    script({ text: TEXT, usage: USAGE });
    const res = await openai.responses.create({ model: m.id, input: 'Say hello.' });
    checkResponseEnvelope(t, res, m, 'completed');
    t.same(outputShape(res, m.family), [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: TEXT }] }], 'one message item with output_text');
    t.equal(res.output_text, TEXT, 'output_text');
    t.equal(res.incomplete_details, null);
    checkResponsesUsage(t, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    t.same(userTexts(m.family, req.body), ['Say hello.']);
  },

  async 'streamed text'(t, m) {
    const scenario: Scenario = { text: LONG_TEXT, usage: USAGE, chunkSize: 6 };
    script(scenario, scenario);
    const params = { model: m.id, input: 'Tell me something.' };
    const json = await openai.responses.create(params);
    const stream = openai.responses.stream(params);
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    const res = await stream.finalResponse();
    t.equal(types[0], 'response.created', 'the stream opens with response.created');
    t.equal(types.at(-1), 'response.completed', 'and ends with response.completed');
    t.ok(types.filter((type) => type === 'response.output_text.delta').length > 1, 'the text arrived in pieces');
    checkResponseEnvelope(t, res, m, 'completed');
    t.same(outputShape(res, m.family), [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: LONG_TEXT }] }]);
    t.same(outputShape(res, m.family), outputShape(json, m.family), 'the streamed output equals the JSON output');
    t.equal(res.output_text, LONG_TEXT);
    checkResponsesUsage(t, res.usage);

    const [req1, req2] = upstream(t, 2);
    checkRoute(t, req1, m, false);
    checkRoute(t, req2, m, true);
    t.same(userTexts(m.family, req2?.body), ['Tell me something.']);
  },

  async 'tool call round trip'(t, m) {
    script({ toolCalls: toolCalls(m.family), usage: USAGE }, { text: FINAL_ANSWER, usage: USAGE });
    const first = await openai.responses.create({ model: m.id, input: QUESTION, tools: RESPONSES_TOOLS });
    checkResponseEnvelope(t, first, m, 'completed');
    t.same(
      first.output.map((item) => item.type),
      ['function_call', 'function_call'],
      'two function_call items, no message',
    );
    for (const item of first.output) if (item.type === 'function_call') t.equal(item.status, 'completed');
    const ids = checkCalls(t, m.family, responseCalls(first));
    checkResponsesUsage(t, first.usage);

    // As a user does: the earlier output items go back as input, each followed by its result.
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: QUESTION }];
    for (const item of first.output) if (item.type === 'function_call') input.push(item);
    for (const [i, name] of TOOL_NAMES.entries()) input.push({ type: 'function_call_output', call_id: ids[i] ?? '', output: JSON.stringify(RESULTS[name]) });
    const second = await openai.responses.create({ model: m.id, input, tools: RESPONSES_TOOLS });
    checkResponseEnvelope(t, second, m, 'completed');
    t.equal(second.output_text, FINAL_ANSWER);
    t.same(
      second.output.map((item) => item.type),
      ['message'],
    );

    const [req1, req2] = upstream(t, 2);
    checkRoute(t, req1, m, false);
    checkToolDeclarations(t, m.family, req1?.body);
    checkRoute(t, req2, m, false);
    checkToolHistory(t, m.family, req2?.body, ids);
  },

  async 'streamed tool call'(t, m) {
    const scenario: Scenario = { text: 'Let me check.', toolCalls: toolCalls(m.family, true), usage: USAGE, chunkSize: 3 };
    script(scenario, scenario);
    const params = { model: m.id, input: QUESTION, tools: RESPONSES_TOOLS };
    const json = await openai.responses.create(params);
    const stream = openai.responses.stream(params);
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    const res = await stream.finalResponse();
    t.equal(types.at(-1), 'response.completed');
    t.ok(types.filter((type) => type === 'response.function_call_arguments.delta').length >= 2, 'arguments streamed');
    checkResponseEnvelope(t, res, m, 'completed');
    t.same(
      res.output.map((item) => item.type),
      ['message', 'function_call', 'function_call'],
      'the text, then the two calls',
    );
    t.equal(res.output_text, 'Let me check.');
    checkCalls(t, m.family, responseCalls(res));
    checkResponsesUsage(t, res.usage);
    t.same(outputShape(res, m.family), outputShape(json, m.family), 'the streamed output equals the JSON output');

    const [req1, req2] = upstream(t, 2);
    checkRoute(t, req1, m, false);
    checkRoute(t, req2, m, true);
    checkToolDeclarations(t, m.family, req2?.body);
  },

  async 'image input'(t, m) {
    script({ text: 'A single pixel.', usage: USAGE });
    const res = await openai.responses.create({
      model: m.id,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is in this picture?' },
            { type: 'input_image', image_url: PNG_DATA_URL, detail: 'auto' },
          ],
        },
      ],
    });
    checkResponseEnvelope(t, res, m, 'completed');
    t.equal(res.output_text, 'A single pixel.');
    checkResponsesUsage(t, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    checkImage(t, m.family, req.body);
  },

  async 'system prompt'(t, m) {
    script({ text: 'Short answer, as asked.', usage: USAGE });
    const res = await openai.responses.create({ model: m.id, instructions: SYSTEM, input: 'Describe Paris.' });
    checkResponseEnvelope(t, res, m, 'completed');
    t.equal(res.output_text, 'Short answer, as asked.');
    t.equal(res.instructions, SYSTEM, 'instructions echoed');
    checkResponsesUsage(t, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    checkSystem(t, m.family, req.body, SYSTEM);
    t.same(userTexts(m.family, req.body), ['Describe Paris.']);
  },

  async 'error from upstream'(t, m) {
    script({ error: { status: 400, message: 'bad thing' } }, { error: { status: 500, message: 'upstream exploded' } });
    const params = { model: m.id, input: 'Hello?' };
    const bad = await rejection(openai.responses.create(params));
    t.ok(bad instanceof OpenAI.BadRequestError, `BadRequestError (${String(bad)})`);
    if (bad instanceof OpenAI.APIError) {
      t.equal(bad.status, 400);
      t.match(bad.message, /bad thing/, 'the upstream message reaches the client');
      t.match(bad.error, { type: 'invalid_request_error', code: 400, reason: 'upstream_invalid_request', message: /bad thing/ });
    }
    const failed = await rejection(openai.responses.stream(params).finalResponse());
    t.ok(failed instanceof OpenAI.InternalServerError, `InternalServerError (${String(failed)})`);
    if (failed instanceof OpenAI.APIError) {
      t.equal(failed.status, 502, 'an upstream 500 is a 502');
      t.match(failed.error, { type: 'upstream_error', code: 502, reason: 'upstream_error', message: /upstream exploded/ });
    }

    const [req1, req2] = upstream(t, 2);
    checkRoute(t, req1, m, false);
    checkRoute(t, req2, m, true);
  },
};

const messagesCells: Record<CaseName, Cell> = {
  async text(t, m) {
    script({ text: TEXT, usage: USAGE });
    const res = await anthropic.messages.create({ model: m.id, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'Say hello.' }] });
    checkMessageEnvelope(t, res, m);
    t.same(res.content.map(blockShape), [{ type: 'text', text: TEXT }], 'one text block');
    t.equal(res.stop_reason, 'end_turn');
    t.equal(res.stop_sequence, null);
    checkMessagesUsage(t, m.family, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    t.same(userTexts(m.family, req.body), ['Say hello.']);
    t.equal(sentMaxTokens(m.family, req.body), MAX_TOKENS, 'max_tokens forwarded');
  },

  async 'streamed text'(t, m) {
    script({ text: LONG_TEXT, usage: USAGE, chunkSize: 6 });
    const stream = anthropic.messages.stream({ model: m.id, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'Tell me something.' }] });
    let deltas = 0;
    stream.on('text', () => (deltas += 1));
    const res = await stream.finalMessage();
    t.ok(deltas > 1, `the text arrived in pieces (${deltas} deltas)`);
    checkMessageEnvelope(t, res, m);
    t.same(res.content.map(blockShape), [{ type: 'text', text: LONG_TEXT }]);
    t.equal(res.stop_reason, 'end_turn');
    checkMessagesUsage(t, m.family, res.usage);

    const req = only(t);
    checkRoute(t, req, m, true);
    t.same(userTexts(m.family, req.body), ['Tell me something.']);
  },

  async 'tool call round trip'(t, m) {
    script({ toolCalls: toolCalls(m.family), usage: USAGE }, { text: FINAL_ANSWER, usage: USAGE });
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: QUESTION }];
    const first = await anthropic.messages.create({ model: m.id, max_tokens: MAX_TOKENS, messages, tools: MESSAGES_TOOLS });
    checkMessageEnvelope(t, first, m);
    t.equal(first.stop_reason, 'tool_use');
    t.same(
      first.content.map((b) => b.type),
      ['tool_use', 'tool_use'],
      'two tool_use blocks, no text',
    );
    const ids = checkCalls(t, m.family, messageCalls(first));
    checkMessagesUsage(t, m.family, first.usage);

    // As a user does: the assistant content goes back as it came, then one user turn of results.
    messages.push({
      role: 'assistant',
      content: first.content.flatMap((b): Anthropic.ContentBlockParam[] => (b.type === 'tool_use' ? [{ type: 'tool_use', id: b.id, name: b.name, input: b.input }] : [])),
    });
    messages.push({
      role: 'user',
      content: TOOL_NAMES.map((name, i): Anthropic.ToolResultBlockParam => ({ type: 'tool_result', tool_use_id: ids[i] ?? '', content: JSON.stringify(RESULTS[name]) })),
    });
    const second = await anthropic.messages.create({ model: m.id, max_tokens: MAX_TOKENS, messages, tools: MESSAGES_TOOLS });
    t.same(second.content.map(blockShape), [{ type: 'text', text: FINAL_ANSWER }]);
    t.equal(second.stop_reason, 'end_turn');

    const [req1, req2] = upstream(t, 2);
    checkRoute(t, req1, m, false);
    checkToolDeclarations(t, m.family, req1?.body);
    checkRoute(t, req2, m, false);
    checkToolHistory(t, m.family, req2?.body, ids);
  },

  async 'streamed tool call'(t, m) {
    script({ text: 'Let me check.', toolCalls: toolCalls(m.family), usage: USAGE, chunkSize: 3 });
    const stream = anthropic.messages.stream({ model: m.id, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: QUESTION }], tools: MESSAGES_TOOLS });
    let jsonDeltas = 0;
    stream.on('inputJson', () => (jsonDeltas += 1));
    const res = await stream.finalMessage();
    t.ok(jsonDeltas >= 2, `tool input streamed (${jsonDeltas} deltas)`);
    checkMessageEnvelope(t, res, m);
    t.equal(res.stop_reason, 'tool_use');
    t.same(
      res.content.map((b) => b.type),
      ['text', 'tool_use', 'tool_use'],
      'the text, then the two calls',
    );
    t.same(res.content[0] && blockShape(res.content[0]), { type: 'text', text: 'Let me check.' });
    checkCalls(t, m.family, messageCalls(res));
    checkMessagesUsage(t, m.family, res.usage);

    const req = only(t);
    checkRoute(t, req, m, true);
    checkToolDeclarations(t, m.family, req.body);
  },

  async 'image input'(t, m) {
    script({ text: 'A single pixel.', usage: USAGE });
    const res = await anthropic.messages.create({
      model: m.id,
      max_tokens: MAX_TOKENS,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_B64 } },
            { type: 'text', text: 'What is in this picture?' },
          ],
        },
      ],
    });
    checkMessageEnvelope(t, res, m);
    t.same(res.content.map(blockShape), [{ type: 'text', text: 'A single pixel.' }]);
    t.equal(res.stop_reason, 'end_turn');
    checkMessagesUsage(t, m.family, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    checkImage(t, m.family, req.body);
  },

  async 'system prompt'(t, m) {
    script({ text: 'Short answer, as asked.', usage: USAGE });
    const res = await anthropic.messages.create({ model: m.id, max_tokens: MAX_TOKENS, system: SYSTEM, messages: [{ role: 'user', content: 'Describe Paris.' }] });
    checkMessageEnvelope(t, res, m);
    t.same(res.content.map(blockShape), [{ type: 'text', text: 'Short answer, as asked.' }]);
    checkMessagesUsage(t, m.family, res.usage);

    const req = only(t);
    checkRoute(t, req, m, false);
    checkSystem(t, m.family, req.body, SYSTEM);
    t.same(userTexts(m.family, req.body), ['Describe Paris.']);
  },

  async 'error from upstream'(t, m) {
    script({ error: { status: 400, message: 'bad thing' } }, { error: { status: 500, message: 'upstream exploded' } });
    const params = { model: m.id, max_tokens: MAX_TOKENS, messages: [{ role: 'user' as const, content: 'Hello?' }] };
    const bad = await rejection(anthropic.messages.create(params));
    t.ok(bad instanceof Anthropic.BadRequestError, `BadRequestError (${String(bad)})`);
    if (bad instanceof Anthropic.APIError) {
      t.equal(bad.status, 400);
      t.match(bad.message, /bad thing/, 'the upstream message reaches the client');
      t.match(bad.apiMessage, /bad thing/, 'apiMessage is error.message');
      t.equal(bad.type, 'invalid_request_error', 'type is error.type');
      t.match(bad.error, { type: 'error', error: { type: 'invalid_request_error', code: 400, reason: 'upstream_invalid_request', message: /bad thing/ } }, 'the messages error body');
    }
    const failed = await rejection(anthropic.messages.stream(params).finalMessage());
    t.ok(failed instanceof Anthropic.InternalServerError, `InternalServerError (${String(failed)})`);
    if (failed instanceof Anthropic.APIError) {
      t.equal(failed.status, 502, 'an upstream 500 is a 502');
      t.match(failed.apiMessage, /upstream exploded/);
      t.match(failed.error, { type: 'error', error: { type: 'api_error', code: 502, reason: 'upstream_error', message: /upstream exploded/ } });
      // Regression: the JSON error body carried the gateway's own type ('upstream_error').
      t.ok(ANTHROPIC_ERROR_TYPES.includes(String(failed.type)), `error.type is an Anthropic error type (got ${String(failed.type)})`);
    }

    const [req1, req2] = upstream(t, 2);
    checkRoute(t, req1, m, false);
    checkRoute(t, req2, m, true);
  },
};

const CELLS: Record<Format, Record<CaseName, Cell>> = { chat: chatCells, responses: responsesCells, messages: messagesCells };

// ---------------------------------------------------------------------------------------------
// THE MATRIX: 3 formats × 3 families × 7 cases = 63 cells

for (const format of FORMATS) {
  for (const model of MODELS) {
    for (const name of CASES) {
      t.test(`${format} × ${model.family} × ${name}`, (t) => CELLS[format][name](t, model));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Once per format: the output limit cut the answer short

const byFamily = (family: Family): ModelCase => MODELS.find((m) => m.family === family) as ModelCase;
const CUT: Scenario = { text: 'The answer was cut off in the mid', finish: 'length', usage: USAGE };

t.test('chat: max tokens cut (gemini)', async (t) => {
  const m = byFamily('gemini');
  script(CUT, CUT);
  const params = { model: m.id, max_completion_tokens: 16, messages: [{ role: 'user' as const, content: 'Write an essay.' }] };
  const res = await openai.chat.completions.create(params);
  t.equal(res.choices[0]?.finish_reason, 'length');
  t.equal(res.choices[0]?.message.content, CUT.text);
  const streamed = await openai.chat.completions.stream(params).finalChatCompletion();
  t.equal(streamed.choices[0]?.finish_reason, 'length', 'streamed: length too');
  const [req1, req2] = upstream(t, 2);
  checkRoute(t, req1, m, false);
  checkRoute(t, req2, m, true);
  t.equal(sentMaxTokens(m.family, req1?.body), 16, 'the limit reaches the upstream');
});

t.test('responses: max tokens cut (anthropic)', async (t) => {
  const m = byFamily('anthropic');
  script(CUT, CUT);
  const params = { model: m.id, max_output_tokens: 16, input: 'Write an essay.' };
  const res = await openai.responses.create(params);
  checkResponseEnvelope(t, res, m, 'incomplete');
  t.same(res.incomplete_details, { reason: 'max_output_tokens' });
  t.equal(res.max_output_tokens, 16, 'max_output_tokens echoed');
  t.same(outputShape(res, m.family), [{ type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: CUT.text }] }]);
  const stream = openai.responses.stream(params);
  const types: string[] = [];
  stream.on('event', (event) => types.push(event.type));
  const streamed = await stream.finalResponse();
  t.equal(types.at(-1), 'response.incomplete', 'the stream ends with response.incomplete');
  t.equal(streamed.status, 'incomplete');
  t.same(streamed.incomplete_details, { reason: 'max_output_tokens' });
  t.same(outputShape(streamed, m.family), outputShape(res, m.family), 'the streamed output equals the JSON output');
  const [req1, req2] = upstream(t, 2);
  checkRoute(t, req1, m, false);
  checkRoute(t, req2, m, true);
  t.equal(sentMaxTokens(m.family, req1?.body), 16, 'the limit reaches the upstream');
});

t.test('messages: max tokens cut (openai)', async (t) => {
  const m = byFamily('openai');
  script(CUT, CUT);
  const params = { model: m.id, max_tokens: 16, messages: [{ role: 'user' as const, content: 'Write an essay.' }] };
  const res = await anthropic.messages.create(params);
  t.equal(res.stop_reason, 'max_tokens');
  t.same(res.content.map(blockShape), [{ type: 'text', text: CUT.text }]);
  const streamed = await anthropic.messages.stream(params).finalMessage();
  t.equal(streamed.stop_reason, 'max_tokens', 'streamed: max_tokens too');
  const [req1, req2] = upstream(t, 2);
  checkRoute(t, req1, m, false);
  checkRoute(t, req2, m, true);
  t.equal(sentMaxTokens(m.family, req1?.body), 16, 'the limit reaches the upstream');
});

// ---------------------------------------------------------------------------------------------
// Format-specific refusals

t.test('responses: previous_response_id is refused (stateless gateway)', async (t) => {
  script({ text: TEXT });
  const error = await rejection(openai.responses.create({ model: MODELS[0]?.id ?? '', input: 'And then?', previous_response_id: 'resp_abc123' }));
  t.ok(error instanceof OpenAI.BadRequestError, `BadRequestError (${String(error)})`);
  if (error instanceof OpenAI.APIError) {
    t.equal(error.status, 400);
    t.match(error.message, /stateful responses are not supported/);
    t.equal(error.param, 'previous_response_id');
  }
  upstream(t, 0);
});

t.test('messages: max_tokens is required', async (t) => {
  script({ text: TEXT });
  const body = { model: MODELS[1]?.id ?? '', messages: [{ role: 'user', content: 'Hello?' }] };
  const error = await rejection(anthropic.messages.create(body as unknown as Anthropic.MessageCreateParamsNonStreaming));
  t.ok(error instanceof Anthropic.BadRequestError, `BadRequestError (${String(error)})`);
  if (error instanceof Anthropic.APIError) {
    t.equal(error.status, 400);
    t.match(error.apiMessage, /max_tokens/, 'the error names max_tokens');
    t.equal(error.type, 'invalid_request_error');
  }

  // The raw error body: Anthropic's top-level "type": "error", then error.{message, type, code, reason, param}.
  const raw = await gw.http('POST', '/v1/messages', { body, headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' } });
  t.equal(raw.status, 400);
  t.match(raw.headers['content-type'], /application\/json/);
  t.equal(raw.body?.type, 'error', 'top-level type: error');
  t.match(raw.body?.error, { type: 'invalid_request_error', code: 400, reason: 'missing_field', param: 'max_tokens', message: /max_tokens/ });
  t.same(Object.keys(raw.body?.error ?? {}).sort(), ['code', 'message', 'param', 'reason', 'type'], 'the spec envelope');
  t.type(raw.body?.error?.message, 'string');
  t.type(raw.body?.error?.type, 'string');
  t.equal(raw.body?.error?.code, 400, 'code is the integer status');
  t.type(raw.body?.error?.reason, 'string');
  upstream(t, 0);
});

// ---------------------------------------------------------------------------------------------
// Mid-stream upstream failure: an `error` event, and the SDK stream rejects

// chunkDelayMs: the failure comes after the first content reached the client.
const MID_STREAM: Scenario = { text: LONG_TEXT, usage: USAGE, chunkSize: 4, chunkDelayMs: 20, errorAfterEvents: { events: 3, message: 'overloaded right now' } };

interface SseEvent {
  event: string | undefined;
  data: string;
}

function sseEvents(text: string): SseEvent[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((frame) => frame.trim() !== '')
    .map((frame) => {
      const lines = frame.split(/\r?\n/);
      const event = lines.find((l) => l.startsWith('event:'))?.slice(6).trim();
      const data = lines
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .join('\n');
      return { event, data };
    });
}

t.test('responses: mid-stream upstream failure (openai)', async (t) => {
  const m = byFamily('openai');
  script(MID_STREAM, MID_STREAM);
  const raw = await gw.http('POST', '/v1/responses', { token: key, body: { model: m.id, input: 'Tell me something.', stream: true } });
  t.equal(raw.status, 200, 'the stream had started');
  const events = sseEvents(raw.text);
  t.notOk(events.some((e) => e.event === 'error'), 'no bare `event: error` frame');
  // As OpenAI ends a failed response: response.failed, its response carrying the error
  // (OpenAI's ResponseError: a string code) and, from the gateway, the integer status and reason.
  const failed = events.at(-1);
  t.equal(failed?.event, 'response.failed', 'the last frame is response.failed');
  const payload = JSON.parse(failed?.data ?? '{}');
  t.match(payload.response, { status: 'failed', error: { code: 'server_error', message: /overloaded right now/, type: 'upstream_error', status: 502, reason: 'upstream_stream_error' } });
  t.match(payload.response.output, [{ type: 'message', status: 'incomplete' }], 'the text so far, marked incomplete');
  t.notOk(
    events.some((e) => e.event === 'response.completed'),
    'no response.completed',
  );

  // openai-node's ResponseStream ends with the failed response (as with OpenAI's own failures).
  const stream = openai.responses.stream({ model: m.id, input: 'Tell me something.' });
  const final = await stream.finalResponse();
  t.equal(final.status, 'failed', 'responses.stream(...).finalResponse() is the failed response');
  t.match(final.error?.message, /overloaded right now/, 'carrying the upstream message');
  const [req1, req2] = upstream(t, 2);
  checkRoute(t, req1, m, true);
  checkRoute(t, req2, m, true);
});

t.test('messages: mid-stream upstream failure (gemini)', async (t) => {
  const m = byFamily('gemini');
  script(MID_STREAM, MID_STREAM);
  const raw = await gw.http('POST', '/v1/messages', {
    body: { model: m.id, max_tokens: MAX_TOKENS, stream: true, messages: [{ role: 'user', content: 'Tell me something.' }] },
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
  });
  t.equal(raw.status, 200, 'the stream had started');
  const events = sseEvents(raw.text);
  const error = events.find((e) => e.event === 'error');
  t.ok(error, 'an `event: error` frame');
  t.match(JSON.parse(error?.data ?? '{}'), { type: 'error', error: { type: 'api_error', code: 502, reason: 'upstream_stream_error', param: null, message: /overloaded right now/ } });
  t.same(Object.keys(JSON.parse(error?.data ?? '{}').error ?? {}).sort(), ['code', 'message', 'param', 'reason', 'type'], 'the envelope of every error');
  t.notOk(
    events.some((e) => e.event === 'message_stop'),
    'no message_stop',
  );
  t.equal(events.at(-1)?.event, 'error', 'the error is the last frame');

  const failure = await rejection(anthropic.messages.stream({ model: m.id, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'Tell me something.' }] }).finalMessage());
  t.ok(failure instanceof Anthropic.APIError, `messages.stream(...).finalMessage() rejects with an APIError (${String(failure)})`);
  if (failure instanceof Anthropic.APIError) t.match(failure.apiMessage, /overloaded right now/);
  const [req1, req2] = upstream(t, 2);
  checkRoute(t, req1, m, true);
  checkRoute(t, req2, m, true);
});

// ---------------------------------------------------------------------------------------------
// Messages over raw HTTP with the old-style headers, and the base-address pitfall

t.test('messages: raw HTTP with x-api-key and anthropic-version 2023-06-01', async (t) => {
  for (const m of MODELS) {
    script({ text: TEXT, usage: USAGE });
    const res = await gw.http('POST', '/v1/messages', {
      body: { model: m.id, max_tokens: MAX_TOKENS, system: SYSTEM, messages: [{ role: 'user', content: 'Say hello.' }] },
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    });
    t.equal(res.status, 200, `${m.family}: 200`);
    t.match(res.body, { type: 'message', role: 'assistant', model: m.id, content: [{ type: 'text', text: TEXT }], stop_reason: 'end_turn' }, `${m.family}: a message`);
    t.match(res.body?.id, /^msg_/);
    checkMessagesUsage(t, m.family, res.body?.usage);
    const req = only(t);
    checkRoute(t, req, m, false);
    checkSystem(t, m.family, req.body, SYSTEM);
  }
});

t.test('messages: /v1/v1/messages is 404 (the SDK base address has no /v1)', async (t) => {
  script({ text: TEXT });
  const raw = await gw.http('POST', '/v1/v1/messages', {
    body: { model: MODELS[1]?.id, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'Hi' }] },
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
  });
  t.equal(raw.status, 404);
  const misconfigured = new Anthropic({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
  const error = await rejection(misconfigured.messages.create({ model: MODELS[1]?.id ?? '', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'Hi' }] }));
  t.ok(error instanceof Anthropic.NotFoundError, `a base address with /v1 gets NotFoundError (${String(error)})`);
  upstream(t, 0);
});

t.test('messages: a system turn inside messages (SDK 1.x SystemMessageParam, anthropic-version 2026-10-21)', async (t) => {
  const m = byFamily('anthropic');
  script({ text: 'Short answer, as asked.', usage: USAGE });
  const result = await rejection(
    anthropic.messages.create({
      model: m.id,
      max_tokens: MAX_TOKENS,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Describe Paris.' },
      ],
    }),
  );
  // Regression: system turns inside messages (API version 2026-10-21) were refused.
  t.equal(result instanceof Anthropic.APIError ? result.status : result === undefined ? 200 : String(result), 200, `accepted (${result instanceof Error ? result.message : 'ok'})`);
  const req = sim.requests.at(-1) as Upstream | undefined;
  if (req) checkSystem(t, m.family, req.body, SYSTEM);
  else t.fail('nothing reached the upstream');
});
