import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { APIError } from 'openai';
import pino from 'pino';
import t from 'tap';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { ProviderSimulator, type RecordedRequest, type Scenario, type SimUsage } from '../support/simulator/server.js';

/**
 * End to end: the official `openai` SDK, unchanged, against POST /v1/chat/completions for a model
 * of each upstream wire family (OpenAI-compatible, Anthropic Messages, Gemini generateContent).
 * Every check looks at both sides: what the SDK returns, and what the provider simulator received.
 */

// Parsed upstream JSON is read field by field; its shape is what is under test.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Test = Parameters<Parameters<typeof t.test>[0]>[0];
type Family = 'openai' | 'anthropic' | 'gemini';
type Params = OpenAI.ChatCompletionCreateParamsNonStreaming;
type Message = OpenAI.ChatCompletionMessageParam;

interface ModelCase {
  id: string;
  family: Family;
  upstream: string;
  /** The catalog's max_output_tokens: what the gateway sends when the client sets no limit. */
  maxOutput: number;
}

const OPENAI: ModelCase = { id: 'openai/gpt-4o-mini', family: 'openai', upstream: 'gpt-4o-mini', maxOutput: 16384 };
const GROQ: ModelCase = { id: 'groq/llama-3.3-70b-versatile', family: 'openai', upstream: 'llama-3.3-70b-versatile', maxOutput: 32768 };
const CLAUDE: ModelCase = { id: 'anthropic/claude-haiku-4-5', family: 'anthropic', upstream: 'claude-haiku-4-5', maxOutput: 64000 };
const GEMINI: ModelCase = { id: 'gemini/gemini-2.5-flash', family: 'gemini', upstream: 'gemini-2.5-flash', maxOutput: 65536 };
const MODELS = [OPENAI, GROQ, CLAUDE, GEMINI];

/** A 1x1 PNG. */
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG = Buffer.from(PNG_B64, 'base64');

/** Canonical usage for the scenarios: cached, written-to-cache and reasoning tokens all present. */
const USAGE: SimUsage = { input: 120, output: 30, cacheRead: 40, cacheWrite: 10, reasoning: 5 };

/** What the client must see for USAGE: Anthropic has no reasoning count (it is inside output_tokens). */
function expectedUsage(family: Family): OpenAI.CompletionUsage {
  return {
    prompt_tokens: 120,
    completion_tokens: 30,
    total_tokens: 150,
    prompt_tokens_details: { cached_tokens: 40, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: family === 'anthropic' ? 0 : 5, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

const WEATHER_PARAMETERS = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['c', 'f'] } },
  required: ['city'],
  additionalProperties: false,
};
const TIME_PARAMETERS = {
  type: 'object',
  properties: {
    tz: { type: 'string' },
    options: { type: 'object', properties: { format: { type: 'string' } }, additionalProperties: false },
  },
  required: ['tz'],
  additionalProperties: false,
};
const TOOLS: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather for a city', parameters: WEATHER_PARAMETERS } },
  { type: 'function', function: { name: 'get_time', parameters: TIME_PARAMETERS } },
];
const TWO_CALLS: Scenario = {
  toolCalls: [
    { name: 'get_weather', arguments: { city: 'Paris', unit: 'c' } },
    { name: 'get_time', arguments: { tz: 'Europe/Paris' } },
  ],
  usage: USAGE,
  chunkSize: 5,
};

// ---------------------------------------------------------------------------------------------
// Shared fixtures: one simulator, one image server, one gateway, one funded key

const sim = await ProviderSimulator.start();

const imageHits: string[] = [];
const images: Server = createServer((req, res) => {
  imageHits.push(req.url ?? '');
  if (req.url === '/pixel.png') {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(PNG.length) });
    res.end(PNG);
  } else if (req.url === '/moved.png') {
    res.writeHead(302, { location: '/pixel.png' });
    res.end();
  } else if (req.url === '/redirect-internal') {
    // An allowed host that redirects to one that is not.
    res.writeHead(302, { location: `${internalBase}/pixel.png` });
    res.end();
  } else if (req.url === '/page.html') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<html><body>not an image</body></html>');
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  }
});
await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
const imagePort = (images.address() as AddressInfo).port;
const imageBase = `http://127.0.0.1:${imagePort}`;

/** Also on loopback, on a port the gateway is not allowed to fetch from: it must never be reached. */
let internalConnections = 0;
const internal: Server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'image/png' });
  res.end(PNG);
});
internal.on('connection', () => (internalConnections += 1));
await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
const internalBase = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;

// The daemon's log lines, to check that a refused image's real reason is logged.
const logLines: Array<Record<string, unknown>> = [];
const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) });
// Loopback is refused unless allowed: the image server is "an internal image host" here.
const gw = await startTestGateway(
  { providers: simulatedProviders(sim.url), outbound: { allow_private: ['127.0.0.1/32'], allow_ports: [imagePort] } },
  {},
  { logger },
);
const { key } = await fundedKey(gw, { balance: 100000 });
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });

t.teardown(async () => {
  await gw.stop();
  await sim.close();
  images.closeAllConnections();
  await new Promise<void>((resolve) => images.close(() => resolve()));
  internal.closeAllConnections();
  await new Promise<void>((resolve) => internal.close(() => resolve()));
});

// ---------------------------------------------------------------------------------------------
// Helpers

/** Clears what the simulator recorded and queues the scenarios the next calls get. */
function script(...scenarios: Scenario[]): void {
  sim.reset();
  sim.enqueue(...scenarios);
}

/** The single upstream request since the last script() call. */
function upstream(t: Test): RecordedRequest & { body: Json } {
  t.equal(sim.requests.length, 1, 'exactly one upstream request');
  const request = sim.requests.at(-1);
  if (!request) throw new Error('no upstream request was recorded');
  return request as RecordedRequest & { body: Json };
}

function upstreamPath(model: ModelCase, stream: boolean): string {
  if (model.family === 'openai') return '/v1/chat/completions';
  if (model.family === 'anthropic') return '/v1/messages';
  return `/v1beta/models/${model.upstream}:${stream ? 'streamGenerateContent' : 'generateContent'}`;
}

/** A non-streaming call, with the gateway's x-gateway-ignored-params header split into names. */
async function call(params: Params): Promise<{ data: OpenAI.ChatCompletion; ignored: string[] | null; headers: Headers }> {
  const { data, response } = await client.chat.completions.create(params).withResponse();
  const header = response.headers.get('x-gateway-ignored-params');
  return { data, ignored: header === null ? null : header.split(',').map((s) => s.trim()), headers: response.headers };
}

/** create({stream: true}) iterated by hand: every chunk, the text, the tool calls by index. */
async function iterate(params: OpenAI.ChatCompletionCreateParamsStreaming) {
  const stream = await client.chat.completions.create(params);
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  let text = '';
  const calls: { id: string; name: string; arguments: string; fragments: number }[] = [];
  const finishes: string[] = [];
  for (const chunk of chunks) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.delta.content ?? '';
    if (choice.finish_reason) finishes.push(choice.finish_reason);
    for (const delta of choice.delta.tool_calls ?? []) {
      const slot = (calls[delta.index] ??= { id: '', name: '', arguments: '', fragments: 0 });
      if (delta.id) slot.id += delta.id;
      if (delta.function?.name) slot.name += delta.function.name;
      slot.arguments += delta.function?.arguments ?? '';
      slot.fragments += 1;
    }
  }
  return { chunks, text, calls, finishes };
}

function systemPrompt(model: ModelCase, body: Json): unknown {
  if (model.family === 'anthropic') return body.system;
  if (model.family === 'gemini') return body.systemInstruction;
  return body.messages.filter((m: Json) => m.role === 'system' || m.role === 'developer');
}

/** The output limit the upstream request carries, by family and provider setting. */
function sentMaxTokens(model: ModelCase, body: Json): unknown {
  if (model.family === 'anthropic') return body.max_tokens;
  if (model.family === 'gemini') return body.generationConfig?.maxOutputTokens;
  return model === OPENAI ? body.max_completion_tokens : body.max_tokens;
}

function checkToolCalls(t: Test, calls: { id: string; type?: string; function: { name: string; arguments: string } }[] | undefined, idPrefix: RegExp): void {
  t.equal(calls?.length, 2, 'two parallel tool calls');
  if (!calls) return;
  t.same(
    calls.map((c) => c.function.name),
    ['get_weather', 'get_time'],
    'names, in order',
  );
  t.same(JSON.parse(calls[0]?.function.arguments ?? 'null'), { city: 'Paris', unit: 'c' }, 'first call arguments are JSON');
  t.same(JSON.parse(calls[1]?.function.arguments ?? 'null'), { tz: 'Europe/Paris' }, 'second call arguments are JSON');
  for (const c of calls) {
    t.match(c.id, idPrefix, `call id ${c.id}`);
    if (c.type !== undefined) t.equal(c.type, 'function');
  }
  t.not(calls[0]?.id, calls[1]?.id, 'ids are distinct');
}

/** Tool-call ids the client sees: the upstream's own, or the gateway's for Gemini (which has none). */
function callIdPattern(model: ModelCase): RegExp {
  if (model.family === 'anthropic') return /^toolu_01/;
  if (model.family === 'gemini') return /^call_\S+$/;
  return /^call_/;
}

// ---------------------------------------------------------------------------------------------
// Plain text answers

for (const model of MODELS) {
  t.test(`${model.id}: create() text answer, usage mapping, upstream auth and defaults`, async (t) => {
    script({ text: 'Hello there, general Kenobi.', usage: USAGE });
    const { data, headers, ignored } = await call({ model: model.id, messages: [{ role: 'user', content: 'Say hello.' }] });

    t.match(data.id, /^chatcmpl-\S+$/);
    t.equal(data.object, 'chat.completion');
    t.equal(data.model, model.id, 'the response names the catalog id');
    t.type(data.created, 'number');
    t.equal(data.choices.length, 1);
    t.equal(data.choices[0]?.index, 0);
    t.equal(data.choices[0]?.message.role, 'assistant');
    t.equal(data.choices[0]?.message.content, 'Hello there, general Kenobi.');
    t.equal(data.choices[0]?.message.tool_calls, undefined, 'no tool calls');
    t.equal(data.choices[0]?.finish_reason, 'stop');
    t.same(data.usage, expectedUsage(model.family), 'usage through the family mapping');
    t.equal(headers.get('x-gateway-model'), model.id);
    t.equal(ignored, null, 'nothing ignored');

    const req = upstream(t);
    t.equal(req.family, model.family);
    t.equal(req.method, 'POST');
    t.equal(req.path, upstreamPath(model, false));
    t.equal(req.stream, false);
    if (model.family !== 'gemini') t.equal(req.body.model, model.upstream, 'upstream model name');
    t.equal(sentMaxTokens(model, req.body), model.maxOutput, 'no client limit: the catalog max_output_tokens');
    if (model.family === 'openai') {
      t.notOk('max_tokens' in req.body && 'max_completion_tokens' in req.body, 'only one limit field');
      t.same(req.body.messages, [{ role: 'user', content: 'Say hello.' }]);
    } else if (model.family === 'anthropic') {
      t.same(req.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'Say hello.' }] }]);
    } else {
      t.same(req.body.contents, [{ role: 'user', parts: [{ text: 'Say hello.' }] }]);
    }

    // Upstream credentials: the provider's key in the family's header; the client's sk- key nowhere.
    const h = req.headers;
    if (model.family === 'openai') {
      t.equal(h.authorization, 'Bearer sim-key');
      t.equal(h['x-api-key'], undefined);
    } else if (model.family === 'anthropic') {
      t.equal(h['x-api-key'], 'sim-key');
      t.equal(h['anthropic-version'], '2023-06-01');
      t.equal(h.authorization, undefined);
    } else {
      t.equal(h['x-goog-api-key'], 'sim-key');
      t.equal(h.authorization, undefined);
      t.notMatch(req.query, /key=/, 'no key in the query string');
    }
    t.notOk(JSON.stringify(h).includes(key), "the client's sk- key is not in the upstream headers");
    t.notOk(JSON.stringify(req.body).includes(key), "nor in the upstream body");
  });
}

t.test('short model names resolve to the catalog id', async (t) => {
  for (const [short, model] of [
    ['gpt-4o-mini', OPENAI],
    ['claude-haiku-4-5', CLAUDE],
    ['gemini-2.5-flash', GEMINI],
  ] as const) {
    script({ text: 'ok' });
    const { data } = await call({ model: short, messages: [{ role: 'user', content: 'hi' }] });
    t.equal(data.model, model.id, `${short} answers as ${model.id}`);
    const req = upstream(t);
    t.equal(req.family, model.family);
    t.equal(req.path, upstreamPath(model, false));
    if (model.family !== 'gemini') t.equal(req.body.model, model.upstream);
  }
});

// ---------------------------------------------------------------------------------------------
// Streaming text

for (const model of MODELS) {
  t.test(`${model.id}: stream().finalChatCompletion() and create({stream: true})`, async (t) => {
    const text = 'Streaming works across every family, chunk by chunk.';
    script({ text, usage: USAGE, chunkSize: 3 });
    const final = await client.chat.completions
      .stream({ model: model.id, messages: [{ role: 'user', content: 'Stream please.' }], stream_options: { include_usage: true } })
      .finalChatCompletion();
    t.match(final.id, /^chatcmpl-/);
    t.equal(final.model, model.id);
    t.equal(final.choices[0]?.message.content, text, 'text reassembled');
    t.equal(final.choices[0]?.finish_reason, 'stop');
    t.same(final.usage, expectedUsage(model.family), 'include_usage: the usage arrives');
    const req = upstream(t);
    t.equal(req.path, upstreamPath(model, true));
    t.equal(req.stream, true);
    if (model.family === 'gemini') t.equal(req.query, 'alt=sse');
    else t.equal(req.body.stream, true);
    if (model.family === 'openai') t.same(req.body.stream_options, { include_usage: true }, 'the gateway asks for usage upstream');

    // Without include_usage: no usage chunk, no usage field; with it, one usage chunk last.
    for (const includeUsage of [false, true]) {
      script({ text, usage: USAGE, chunkSize: 3 });
      const params: OpenAI.ChatCompletionCreateParamsStreaming = { model: model.id, messages: [{ role: 'user', content: 'Stream please.' }], stream: true };
      if (includeUsage) params.stream_options = { include_usage: true };
      const { chunks, text: got, finishes } = await iterate(params);
      t.equal(got, text, `text (include_usage ${includeUsage})`);
      t.same(finishes, ['stop'], 'exactly one finish_reason');
      t.ok(chunks.length > 3, 'several chunks');
      t.ok(
        chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === model.id && c.id === chunks[0]?.id),
        'every chunk: same id, catalog model, chunk object',
      );
      t.match(chunks[0]?.id, /^chatcmpl-/);
      t.equal(chunks[0]?.choices[0]?.delta.role, 'assistant', 'the first delta carries the role');
      const usageChunks = chunks.filter((c) => c.usage);
      if (includeUsage) {
        t.equal(usageChunks.length, 1, 'one usage chunk');
        t.equal(chunks.at(-1), usageChunks[0], 'the usage chunk is last');
        t.same(usageChunks[0]?.choices, [], 'with choices: []');
        t.same(usageChunks[0]?.usage, expectedUsage(model.family));
      } else {
        t.equal(usageChunks.length, 0, 'no usage without include_usage');
        t.ok(
          chunks.every((c) => c.choices.length === 1 && !('usage' in c)),
          'every chunk has one choice and no usage field',
        );
      }
      upstream(t);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Tool calls

for (const model of MODELS) {
  t.test(`${model.id}: two parallel tool calls, JSON and streamed; tool definitions upstream`, async (t) => {
    script(TWO_CALLS);
    const { data } = await call({ model: model.id, messages: [{ role: 'user', content: 'Weather and time in Paris?' }], tools: TOOLS });
    const message = data.choices[0]?.message;
    t.equal(data.choices[0]?.finish_reason, 'tool_calls', 'finish_reason tool_calls (Gemini reports STOP on the wire)');
    t.equal(message?.content, null, 'no text: content null');
    checkToolCalls(t, message?.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[] | undefined, callIdPattern(model));
    t.same(data.usage, expectedUsage(model.family));

    const req = upstream(t);
    if (model.family === 'openai') {
      t.same(req.body.tools, TOOLS, 'tools forwarded unchanged');
    } else if (model.family === 'anthropic') {
      t.same(req.body.tools, [
        { name: 'get_weather', description: 'Current weather for a city', input_schema: WEATHER_PARAMETERS },
        { name: 'get_time', input_schema: TIME_PARAMETERS },
      ]);
      t.equal(req.body.tool_choice, undefined, 'no tool_choice when the client set none');
    } else {
      // The simulator rejects $schema / additionalProperties like Gemini does: success proves sanitizing.
      const declarations = req.body.tools?.[0]?.functionDeclarations;
      t.same(
        declarations?.map((d: Json) => d.name),
        ['get_weather', 'get_time'],
      );
      t.notMatch(JSON.stringify(req.body.tools), /additionalProperties|\$schema/, 'unsupported schema keys removed, nested ones too');
      t.same(declarations?.[0], {
        name: 'get_weather',
        description: 'Current weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] },
      });
      t.same(declarations?.[1]?.parameters, {
        type: 'object',
        properties: { tz: { type: 'string' }, options: { type: 'object', properties: { format: { type: 'string' } } } },
        required: ['tz'],
      });
    }

    // stream() helper: the tool calls come back whole.
    script(TWO_CALLS);
    const final = await client.chat.completions
      .stream({ model: model.id, messages: [{ role: 'user', content: 'Weather and time in Paris?' }], tools: TOOLS, stream_options: { include_usage: true } })
      .finalChatCompletion();
    t.equal(final.choices[0]?.finish_reason, 'tool_calls');
    checkToolCalls(t, final.choices[0]?.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[] | undefined, callIdPattern(model));
    t.same(final.usage, expectedUsage(model.family));
    upstream(t);

    // Iterated by hand: indices 0 and 1, id and name on the first fragment of each.
    script(TWO_CALLS);
    const { calls, finishes, chunks } = await iterate({ model: model.id, messages: [{ role: 'user', content: 'Weather and time in Paris?' }], tools: TOOLS, stream: true });
    t.same(finishes, ['tool_calls']);
    t.equal(calls.length, 2, 'two indices');
    checkToolCalls(
      t,
      calls.map((c) => ({ id: c.id, function: { name: c.name, arguments: c.arguments } })),
      callIdPattern(model),
    );
    for (const chunk of chunks) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (delta.id !== undefined) t.equal(delta.function?.arguments, '', 'a call opens with id, name and empty arguments');
      }
    }
    upstream(t);
  });

  t.test(`${model.id}: tool round trip (assistant tool_calls + two tool messages)`, async (t) => {
    script(TWO_CALLS);
    const first = await call({ model: model.id, messages: [{ role: 'user', content: 'Weather and time in Paris?' }], tools: TOOLS });
    const calls = (first.data.choices[0]?.message.tool_calls ?? []) as OpenAI.ChatCompletionMessageFunctionToolCall[];
    t.equal(calls.length, 2);
    const [weather, time] = calls;
    if (!weather || !time) return;

    const messages: Message[] = [
      { role: 'system', content: 'You are a travel assistant.' },
      { role: 'user', content: 'Weather and time in Paris?' },
      {
        role: 'assistant',
        // An empty string next to tool calls must not become an empty Anthropic text block.
        content: model.family === 'openai' ? null : '',
        tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.function.name, arguments: c.function.arguments } })),
      },
      { role: 'tool', tool_call_id: weather.id, content: '{"temp_c":21,"sky":"sunny"}' },
      { role: 'tool', tool_call_id: time.id, content: '14:05' },
      { role: 'user', content: 'Summarize.' },
    ];
    script({ text: 'Sunny, 21 C, and it is 14:05.', usage: USAGE });
    const second = await call({ model: model.id, messages, tools: TOOLS });
    t.equal(second.data.choices[0]?.message.content, 'Sunny, 21 C, and it is 14:05.');
    t.equal(second.data.choices[0]?.finish_reason, 'stop');

    const body = upstream(t).body;
    if (model.family === 'openai') {
      t.same(body.messages, messages, 'messages forwarded as they are');
    } else if (model.family === 'anthropic') {
      t.same(body.system, [{ type: 'text', text: 'You are a travel assistant.' }]);
      t.same(
        body.messages.map((m: Json) => m.role),
        ['user', 'assistant', 'user'],
        'tool results and the follow-up share ONE user message',
      );
      t.same(
        body.messages[1].content,
        [
          { type: 'tool_use', id: weather.id, name: 'get_weather', input: { city: 'Paris', unit: 'c' } },
          { type: 'tool_use', id: time.id, name: 'get_time', input: { tz: 'Europe/Paris' } },
        ],
        'tool_use blocks with parsed input, no empty text block',
      );
      t.same(body.messages[2].content, [
        { type: 'tool_result', tool_use_id: weather.id, content: '{"temp_c":21,"sky":"sunny"}' },
        { type: 'tool_result', tool_use_id: time.id, content: '14:05' },
        { type: 'text', text: 'Summarize.' },
      ], 'the user message starts with both tool_result blocks');
    } else {
      t.same(body.systemInstruction, { parts: [{ text: 'You are a travel assistant.' }] });
      t.same(body.contents, [
        { role: 'user', parts: [{ text: 'Weather and time in Paris?' }] },
        {
          role: 'model',
          parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris', unit: 'c' } } }, { functionCall: { name: 'get_time', args: { tz: 'Europe/Paris' } } }],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { temp_c: 21, sky: 'sunny' } } },
            { functionResponse: { name: 'get_time', response: { output: '14:05' } } },
            { text: 'Summarize.' },
          ],
        },
      ], 'functionCall parts in the model turn; functionResponse parts named after the calls in a user turn');
    }
  });

  t.test(`${model.id}: tool_choice and parallel_tool_calls`, async (t) => {
    const ask = { model: model.id, messages: [{ role: 'user' as const, content: 'Use a tool.' }], tools: TOOLS };

    script({ text: 'ok' });
    const required = await call({ ...ask, tool_choice: 'required', parallel_tool_calls: false });
    let body = upstream(t).body;
    if (model.family === 'openai') {
      t.equal(body.tool_choice, 'required');
      t.equal(body.parallel_tool_calls, false);
      t.equal(required.ignored, null);
    } else if (model.family === 'anthropic') {
      t.same(body.tool_choice, { type: 'any', disable_parallel_tool_use: true });
      t.equal(required.ignored, null);
    } else {
      t.same(body.toolConfig, { functionCallingConfig: { mode: 'ANY' } });
      t.ok(required.ignored?.includes('parallel_tool_calls'), 'Gemini has no equivalent: named as ignored');
    }

    script({ text: 'ok' });
    await call({ ...ask, tool_choice: { type: 'function', function: { name: 'get_time' } } });
    body = upstream(t).body;
    if (model.family === 'openai') t.same(body.tool_choice, { type: 'function', function: { name: 'get_time' } });
    else if (model.family === 'anthropic') t.same(body.tool_choice, { type: 'tool', name: 'get_time' });
    else t.same(body.toolConfig, { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_time'] } });

    script({ text: 'ok' });
    await call({ ...ask, tool_choice: 'none' });
    body = upstream(t).body;
    if (model.family === 'openai') t.equal(body.tool_choice, 'none');
    else if (model.family === 'anthropic') t.same(body.tool_choice, { type: 'none' });
    else t.same(body.toolConfig, { functionCallingConfig: { mode: 'NONE' } });

    if (model.family === 'anthropic') {
      script({ text: 'ok' });
      await call({ ...ask, parallel_tool_calls: false });
      t.same(upstream(t).body.tool_choice, { type: 'auto', disable_parallel_tool_use: true }, 'parallel_tool_calls: false alone');
    }
  });
}

for (const model of MODELS) {
  t.test(`${model.id}: text followed by two tool calls in one answer`, async (t) => {
    const scripted: Scenario = { ...TWO_CALLS, text: 'Let me check both.', chunkSize: 3 };
    const ask = { model: model.id, messages: [{ role: 'user' as const, content: 'Weather and time in Paris?' }], tools: TOOLS };
    script(scripted);
    const { data } = await call(ask);
    t.equal(data.choices[0]?.message.content, 'Let me check both.');
    checkToolCalls(t, data.choices[0]?.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[] | undefined, callIdPattern(model));
    t.equal(data.choices[0]?.finish_reason, 'tool_calls');
    upstream(t);

    script(scripted);
    const final = await client.chat.completions.stream(ask).finalChatCompletion();
    t.equal(final.choices[0]?.message.content, 'Let me check both.', 'streamed text');
    checkToolCalls(t, final.choices[0]?.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[] | undefined, callIdPattern(model));
    t.equal(final.choices[0]?.finish_reason, 'tool_calls');
    upstream(t);
  });
}

// ---------------------------------------------------------------------------------------------
// System and developer messages, multi-turn history

for (const model of MODELS) {
  t.test(`${model.id}: system + developer messages and multi-turn history`, async (t) => {
    script({ text: 'Très bien.' });
    const messages: Message[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Bonjour' },
      { role: 'user', content: 'How are you?' },
    ];
    const { data } = await call({ model: model.id, messages });
    t.equal(data.choices[0]?.message.content, 'Très bien.');
    const body = upstream(t).body;
    if (model.family === 'openai') {
      t.same(
        body.messages.map((m: Json) => [m.role, typeof m.content === 'string' ? m.content : m.content.map((p: Json) => p.text).join('')]),
        [
          [body.messages[0].role, 'You are terse.'],
          [body.messages[1].role, 'Answer in French.'],
          ['user', 'Hi'],
          ['assistant', 'Bonjour'],
          ['user', 'How are you?'],
        ],
        'same turns, same order',
      );
      t.equal(body.messages[0].role, 'system');
      t.ok(['system', 'developer'].includes(body.messages[1].role), 'the developer message stays an instruction');
    } else if (model.family === 'anthropic') {
      t.same(body.system, [
        { type: 'text', text: 'You are terse.' },
        { type: 'text', text: 'Answer in French.' },
      ], 'top-level system blocks, in order');
      t.same(body.messages, [
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Bonjour' }] },
        { role: 'user', content: [{ type: 'text', text: 'How are you?' }] },
      ]);
    } else {
      t.same(body.systemInstruction, { parts: [{ text: 'You are terse.' }, { text: 'Answer in French.' }] });
      t.same(body.contents, [
        { role: 'user', parts: [{ text: 'Hi' }] },
        { role: 'model', parts: [{ text: 'Bonjour' }] },
        { role: 'user', parts: [{ text: 'How are you?' }] },
      ], 'assistant turns have role model');
    }
  });
}

// ---------------------------------------------------------------------------------------------
// JSON mode

const ANSWER_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { answer: { type: 'integer' }, note: { type: ['string', 'null'] } },
  required: ['answer'],
  additionalProperties: false,
};
const JSON_SCHEMA_FORMAT: OpenAI.ResponseFormatJSONSchema = { type: 'json_schema', json_schema: { name: 'answer', schema: ANSWER_SCHEMA, strict: true } };

for (const model of [OPENAI, GROQ]) {
  t.test(`${model.id}: response_format is forwarded`, async (t) => {
    for (const format of [{ type: 'json_object' as const }, JSON_SCHEMA_FORMAT]) {
      script({ text: '{"answer":42}' });
      const { data } = await call({ model: model.id, messages: [{ role: 'user', content: 'JSON please' }], response_format: format });
      t.equal(data.choices[0]?.message.content, '{"answer":42}');
      t.same(upstream(t).body.response_format, format, `${format.type} unchanged`);
    }
  });
}

t.test(`${GEMINI.id}: JSON mode becomes responseMimeType and a sanitized responseSchema`, async (t) => {
  script({ text: '{"answer":42}' });
  const object = await call({ model: GEMINI.id, messages: [{ role: 'user', content: 'JSON please' }], response_format: { type: 'json_object' } });
  t.equal(object.data.choices[0]?.message.content, '{"answer":42}');
  let config = upstream(t).body.generationConfig;
  t.equal(config.responseMimeType, 'application/json');
  t.equal(config.responseSchema, undefined, 'json_object has no schema');

  script({ text: '{"answer":42}' });
  const schema = await call({ model: GEMINI.id, messages: [{ role: 'user', content: 'JSON please' }], response_format: JSON_SCHEMA_FORMAT });
  t.equal(schema.data.choices[0]?.message.content, '{"answer":42}', 'the simulator accepted the schema (it rejects $schema/additionalProperties)');
  config = upstream(t).body.generationConfig;
  t.equal(config.responseMimeType, 'application/json');
  t.same(config.responseSchema, {
    type: 'object',
    properties: { answer: { type: 'integer' }, note: { type: 'string', nullable: true } },
    required: ['answer'],
  });
});

t.test(`${CLAUDE.id}: JSON mode is a forced json_response tool whose input is the answer`, async (t) => {
  const scripted: Scenario = { toolCalls: [{ name: 'json_response', arguments: { answer: 42, note: null } }], usage: USAGE };
  script(scripted);
  const { data } = await call({ model: CLAUDE.id, messages: [{ role: 'user', content: 'JSON please' }], response_format: JSON_SCHEMA_FORMAT });
  const message = data.choices[0]?.message;
  t.type(message?.content, 'string', 'the tool input comes back as message.content');
  t.same(JSON.parse(message?.content ?? 'null'), { answer: 42, note: null });
  t.equal(message?.tool_calls, undefined, 'no tool calls reach the client');
  t.equal(data.choices[0]?.finish_reason, 'stop', 'finish_reason stop, not tool_calls');
  const body = upstream(t).body;
  t.equal(body.tools?.length, 1);
  t.equal(body.tools?.[0]?.name, 'json_response');
  t.same(body.tools?.[0]?.input_schema, ANSWER_SCHEMA, 'the client schema is the tool input schema');
  t.same(body.tool_choice, { type: 'tool', name: 'json_response' });

  script(scripted);
  const final = await client.chat.completions
    .stream({ model: CLAUDE.id, messages: [{ role: 'user', content: 'JSON please' }], response_format: JSON_SCHEMA_FORMAT })
    .finalChatCompletion();
  t.same(JSON.parse(final.choices[0]?.message.content ?? 'null'), { answer: 42, note: null }, 'streamed: input_json deltas become content');
  t.equal(final.choices[0]?.finish_reason, 'stop');
  t.same(final.choices[0]?.message.tool_calls ?? [], []);
  upstream(t);

  script({ toolCalls: [{ name: 'json_response', arguments: { ok: true } }] });
  const object = await call({ model: CLAUDE.id, messages: [{ role: 'user', content: 'JSON please' }], response_format: { type: 'json_object' } });
  t.same(JSON.parse(object.data.choices[0]?.message.content ?? 'null'), { ok: true });
  const objectBody = upstream(t).body;
  t.same(objectBody.tools?.[0]?.input_schema, { type: 'object' }, 'json_object: a permissive object schema');
  t.same(objectBody.tool_choice, { type: 'tool', name: 'json_response' });
});

// ---------------------------------------------------------------------------------------------
// Images

for (const model of MODELS) {
  t.test(`${model.id}: data URL and http URL images`, async (t) => {
    const dataUrl = `data:image/png;base64,${PNG_B64}`;
    const content: OpenAI.ChatCompletionContentPart[] = [
      { type: 'text', text: 'What is in this image?' },
      { type: 'image_url', image_url: { url: dataUrl } },
    ];
    script({ text: 'A pixel.' });
    const { data } = await call({ model: model.id, messages: [{ role: 'user', content }] });
    t.equal(data.choices[0]?.message.content, 'A pixel.');
    let body = upstream(t).body;
    if (model.family === 'openai') t.same(body.messages, [{ role: 'user', content }], 'forwarded unchanged');
    else if (model.family === 'anthropic') {
      t.same(body.messages[0].content, [
        { type: 'text', text: 'What is in this image?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_B64 } },
      ]);
    } else {
      t.same(body.contents[0].parts, [{ text: 'What is in this image?' }, { inlineData: { mimeType: 'image/png', data: PNG_B64 } }]);
    }

    imageHits.length = 0;
    const url = `${imageBase}/pixel.png`;
    const remote: OpenAI.ChatCompletionContentPart[] = [
      { type: 'text', text: 'And this one?' },
      { type: 'image_url', image_url: { url, detail: 'low' } },
    ];
    script({ text: 'Another pixel.' });
    const second = await call({ model: model.id, messages: [{ role: 'user', content: remote }] });
    t.equal(second.data.choices[0]?.message.content, 'Another pixel.');
    body = upstream(t).body;
    if (model.family === 'openai') {
      t.same(body.messages, [{ role: 'user', content: remote }], 'URL forwarded unchanged (the provider fetches it)');
      t.same(imageHits, [], 'the gateway did not download it');
    } else if (model.family === 'anthropic') {
      t.same(body.messages[0].content[1], { type: 'image', source: { type: 'url', url } });
      t.same(imageHits, [], 'the gateway did not download it');
    } else {
      t.same(body.contents[0].parts[1], { inlineData: { mimeType: 'image/png', data: PNG_B64 } }, 'downloaded and inlined');
      t.same(imageHits, ['/pixel.png'], 'downloaded once');
    }
  });
}

/** A Gemini-model call with one image URL, as an sk- key holder would send it; resolves to the error. */
async function imageCallError(url: string): Promise<unknown> {
  script({ text: 'never' });
  return client.chat.completions
    .create({ model: GEMINI.id, messages: [{ role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image_url', image_url: { url } }] }] })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
}

/** The one answer every unfetched image URL gets, whatever the cause. */
function assertUnfetchable(t: Test, error: unknown, what: string): void {
  t.ok(error instanceof OpenAI.BadRequestError, `${what}: BadRequestError`);
  const apiError = error as APIError;
  t.equal(apiError.status, 400);
  t.match(apiError.message, /image URL could not be fetched/);
  t.equal(apiError.code, 400, 'error.code is the integer status');
  t.same(apiError.error, {
    message: 'messages: image URL could not be fetched',
    type: 'invalid_request_error',
    code: 400,
    reason: 'image_url_unfetchable',
    param: 'messages',
  });
  t.equal(sim.requests.length, 0, 'nothing reached the provider');
}

t.test(`${GEMINI.id}: an image URL that is not an image is a 400 and no upstream call`, async (t) => {
  for (const path of ['/missing.png', '/page.html']) {
    assertUnfetchable(t, await imageCallError(`${imageBase}${path}`), path);
  }
});

t.test(`${GEMINI.id}: an image URL on the operator's network is refused with the same 400, and never fetched`, async (t) => {
  const before = internalConnections;
  logLines.length = 0;
  for (const url of [
    `${internalBase}/pixel.png`, // loopback, on a port that is not allowed
    `http://[::1]:${imagePort}/pixel.png`,
    'http://169.254.169.254/latest/meta-data/',
    `http://user:secret@127.0.0.1:${imagePort}/pixel.png`,
    `${imageBase}/redirect-internal`, // an allowed host redirecting to one that is not
  ]) {
    assertUnfetchable(t, await imageCallError(url), url);
  }
  t.equal(internalConnections, before, 'the server on the port not allowed saw no connection');
  const refusals = logLines.filter((line) => line.msg === 'image URL refused');
  t.same(
    refusals.map((line) => line.reason),
    ['forbidden_port', 'forbidden_address', 'forbidden_address', 'credentials', 'forbidden_port'],
    'the log keeps each real reason',
  );
  t.ok(refusals.every((line) => line.level === 40 && typeof line.req_id === 'string' && typeof line.detail === 'string'), 'warn lines with the request id and the detail');
  t.notOk(JSON.stringify(refusals).includes('secret'), 'credentials are not logged');
});

t.test(`${GEMINI.id}: image download details`, async (t) => {
  const url = `${imageBase}/pixel.png`;
  imageHits.length = 0;
  script({ text: 'ok' });
  await call({
    model: GEMINI.id,
    messages: [
      { role: 'user', content: [{ type: 'image_url', image_url: { url } }, { type: 'image_url', image_url: { url } }] },
      { role: 'assistant', content: 'Two pixels.' },
      { role: 'user', content: [{ type: 'text', text: 'Again' }, { type: 'image_url', image_url: { url } }] },
    ],
  });
  t.same(imageHits, ['/pixel.png'], 'one URL used three times is downloaded once');
  const contents = upstream(t).body.contents;
  const inline = { inlineData: { mimeType: 'image/png', data: PNG_B64 } };
  t.same(contents[0].parts, [inline, inline]);
  t.same(contents[2].parts, [{ text: 'Again' }, inline]);

  // A URL that redirects to an image (CDNs, http -> https, short links) is still an image.
  imageHits.length = 0;
  script({ text: 'ok' });
  const moved = await client.chat.completions
    .create({ model: GEMINI.id, messages: [{ role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image_url', image_url: { url: `${imageBase}/moved.png` } }] }] })
    .then(
      (completion) => completion.choices[0]?.message.content,
      (error: unknown) => `rejected: ${String(error)}`,
    );
  // Regression: a redirect (302 to a valid PNG) used to be refused as a failed download.
  t.equal(moved, 'ok', 'a redirected image URL is followed and inlined');
  if (moved === 'ok') t.same(upstream(t).body.contents[0].parts[1], inline);
});

// ---------------------------------------------------------------------------------------------
// Parameters

for (const model of MODELS) {
  t.test(`${model.id}: max_tokens and stop`, async (t) => {
    script({ text: 'ok' });
    await call({ model: model.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100, stop: ['END', '###'] });
    let body = upstream(t).body;
    t.equal(sentMaxTokens(model, body), 100, 'max_tokens mapped');
    if (model === OPENAI) t.equal(body.max_tokens, undefined, 'openai/* sends only max_completion_tokens');
    if (model === GROQ) t.equal(body.max_completion_tokens, undefined, 'groq/* sends only max_tokens');
    if (model.family === 'openai') t.same(body.stop, ['END', '###']);
    else if (model.family === 'anthropic') t.same(body.stop_sequences, ['END', '###']);
    else t.same(body.generationConfig.stopSequences, ['END', '###']);

    // max_completion_tokens from the client is the same limit.
    script({ text: 'ok' });
    await call({ model: model.id, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 77, stop: 'STOP' });
    body = upstream(t).body;
    t.equal(sentMaxTokens(model, body), 77);
    if (model.family === 'openai') t.same(body.stop, ['STOP']);
    else if (model.family === 'anthropic') t.same(body.stop_sequences, ['STOP']);
    else t.same(body.generationConfig.stopSequences, ['STOP']);
  });

  t.test(`${model.id}: temperature, seed, user and passthrough fields`, async (t) => {
    script({ text: 'ok' });
    const hot = await call({ model: model.id, messages: [{ role: 'user', content: 'hi' }], temperature: 1.5, seed: 7, user: 'user-123' });
    let body = upstream(t).body;
    if (model.family === 'openai') {
      t.equal(body.temperature, 1.5);
      t.equal(body.seed, 7);
      t.equal(body.user, 'user-123');
      t.equal(hot.ignored, null);
    } else if (model.family === 'anthropic') {
      t.equal(body.temperature, undefined, 'temperature above 1 is dropped');
      t.equal(body.seed, undefined);
      t.same(body.metadata, { user_id: 'user-123' }, 'user → metadata.user_id');
      t.same([...(hot.ignored ?? [])].sort(), ['seed', 'temperature'], 'both named in x-gateway-ignored-params');
    } else {
      t.equal(body.generationConfig.temperature, 1.5);
      t.equal(body.generationConfig.seed, 7);
      t.same(hot.ignored, ['user'], 'Gemini has no user field');
    }

    if (model.family === 'anthropic') {
      script({ text: 'streamed' });
      const { data: stream, response } = await client.chat.completions
        .create({ model: model.id, messages: [{ role: 'user', content: 'hi' }], temperature: 1.5, stream: true })
        .withResponse();
      let streamed = '';
      for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
      t.equal(streamed, 'streamed');
      t.equal(response.headers.get('x-gateway-ignored-params'), 'temperature', 'named on an SSE response too');
      t.equal(upstream(t).body.temperature, undefined);
    }

    script({ text: 'ok' });
    const mild = await call({ model: model.id, messages: [{ role: 'user', content: 'hi' }], temperature: 0.5 });
    body = upstream(t).body;
    if (model.family === 'gemini') t.equal(body.generationConfig.temperature, 0.5);
    else t.equal(body.temperature, 0.5, 'temperature 0.5 forwarded');
    t.equal(mild.ignored, null, 'nothing ignored');

    script({ text: 'ok' });
    const extra = await call({ model: model.id, messages: [{ role: 'user', content: 'hi' }], presence_penalty: 0.5, logprobs: true });
    body = upstream(t).body;
    if (model.family === 'openai') {
      t.equal(body.presence_penalty, 0.5, 'passthrough to an openai-family upstream');
      // The answer has no place for log probabilities, so they are not asked for and named instead.
      t.equal(body.logprobs, undefined, 'logprobs not forwarded');
      t.same(extra.ignored, ['logprobs'], 'logprobs named in x-gateway-ignored-params');
    } else {
      t.equal(body.presence_penalty, undefined);
      t.equal(body.logprobs, undefined);
      t.same([...(extra.ignored ?? [])].sort(), ['logprobs', 'presence_penalty'], 'named in x-gateway-ignored-params');
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Prompt caching (gateway extension `cache: true`)

t.test(`${CLAUDE.id}: cache: true marks the last system block and the last user block`, async (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'Rules part one.' },
    { role: 'system', content: [{ type: 'text', text: 'Rules part two.' }] },
    { role: 'user', content: 'First question' },
    { role: 'assistant', content: 'First answer' },
    { role: 'user', content: [{ type: 'text', text: 'Context' }, { type: 'text', text: 'Second question' }] },
  ];
  const cached: Params & { cache: boolean } = { model: CLAUDE.id, messages, cache: true };
  script({ text: 'ok' });
  await call(cached);
  let body = upstream(t).body;
  t.same(body.system, [
    { type: 'text', text: 'Rules part one.' },
    { type: 'text', text: 'Rules part two.', cache_control: { type: 'ephemeral' } },
  ]);
  t.same(body.messages, [
    { role: 'user', content: [{ type: 'text', text: 'First question' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'First answer' }] },
    { role: 'user', content: [{ type: 'text', text: 'Context' }, { type: 'text', text: 'Second question', cache_control: { type: 'ephemeral' } }] },
  ]);
  t.notOk('cache' in body, 'the extension field is not sent upstream');

  script({ text: 'ok' });
  await call({ model: CLAUDE.id, messages });
  body = upstream(t).body;
  t.notMatch(JSON.stringify(body), /cache_control/, 'without cache: no cache_control');

  script({ text: 'ok' });
  await call({ ...cached, model: OPENAI.id } as Params);
  body = upstream(t).body;
  t.notOk('cache' in body, 'openai family: the extension field is not forwarded');
  t.notMatch(JSON.stringify(body), /cache_control/);
});

t.test(`${CLAUDE.id}: cache: true in a tool loop marks the final user turn (the tool results)`, async (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_01loop', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'toolu_01loop', content: 'sunny' },
  ];
  const params: Params & { cache: boolean } = { model: CLAUDE.id, messages, tools: TOOLS, cache: true };
  script({ text: 'Sunny.' });
  await call(params);
  const body = upstream(t).body;
  t.same(body.system, [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }]);
  t.equal(body.messages.length, 3);
  // Regression: the breakpoint went on the last user-role chat message instead of the final
  // Anthropic user turn (the tool_result), so agent loops re-read their tool history uncached.
  t.same(
    body.messages[2].content.at(-1),
    { type: 'tool_result', tool_use_id: 'toolu_01loop', content: 'sunny', cache_control: { type: 'ephemeral' } },
    'the final user turn (tool results) carries the breakpoint',
  );
  t.same(body.messages[0].content, [{ type: 'text', text: 'Weather in Paris?' }], 'the earlier question does not');
});

t.test('openai family: per-message fields such as name reach the upstream', async (t) => {
  const messages: Message[] = [
    { role: 'system', content: 'Two people talk to you.', name: 'setup' },
    { role: 'user', content: 'Hi, I am Alice.', name: 'alice' },
    { role: 'user', content: 'And I am Bob.', name: 'bob' },
  ];
  script({ text: 'Hello both.' });
  const { ignored } = await call({ model: GROQ.id, messages });
  const sent = upstream(t).body.messages;
  t.same(
    sent.map((m: Json) => m.content),
    ['Two people talk to you.', 'Hi, I am Alice.', 'And I am Bob.'],
  );
  // Regression: participant names were dropped silently.
  t.same(
    sent.map((m: Json) => m.name),
    ['setup', 'alice', 'bob'],
    `participant names forwarded (x-gateway-ignored-params: ${ignored?.join(', ') ?? 'none'})`,
  );
});

// ---------------------------------------------------------------------------------------------
// Finish reasons

for (const model of MODELS) {
  t.test(`${model.id}: finish reasons length and content_filter`, async (t) => {
    for (const finish of ['length', 'content_filter'] as const) {
      script({ text: 'Partial answer', finish, usage: USAGE });
      const { data } = await call({ model: model.id, messages: [{ role: 'user', content: 'go' }] });
      t.equal(data.choices[0]?.finish_reason, finish, `${finish} (JSON)`);
      t.equal(data.choices[0]?.message.content, 'Partial answer');
      upstream(t);

      script({ text: 'Partial answer', finish, usage: USAGE });
      const { finishes, text } = await iterate({ model: model.id, messages: [{ role: 'user', content: 'go' }], stream: true });
      t.same(finishes, [finish], `${finish} (stream)`);
      t.equal(text, 'Partial answer');
      upstream(t);
    }
  });
}
