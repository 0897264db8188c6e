import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { request } from 'undici';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kRanks from 'js-tiktoken/ranks/cl100k_base';
import { ProviderSimulator, type Scenario } from '../support/simulator/server.js';

/**
 * The provider simulator, driven with raw HTTP (undici) and with the official OpenAI and Anthropic
 * SDKs. The SDK checks are the proof that the simulator's wire formats are faithful.
 */

const KEY = 'sim-key';

// The simulator's token counts (test/support/simulator/tokens.ts), recomputed here with an
// independent cl100k: the vendor's ratio, for Gemini 2/3 of a token more per digit (it splits
// numbers that cl100k groups by three), and each vendor's framing.
const cl100k = new Tiktoken(cl100kRanks);
const tokens = (text: string): number => cl100k.encode(text, 'all').length;
const digits = (text: string): number => text.replace(/[^0-9]/g, '').length;
const openaiPrompt = (text: string, messages: number): number => tokens(text) + 3 * messages + 3;
const anthropicCount = (text: string): number => Math.ceil(tokens(text) * 1.16);
const anthropicPrompt = (text: string, messages: number): number => anthropicCount(text) + 3 * messages + 7;
const geminiCount = (text: string): number => Math.ceil(tokens(text) * 1.07) + Math.ceil((digits(text) * 2) / 3);

// ---------------------------------------------------------------------------------------------
// Wire shapes the tests read (the SDKs provide OpenAI's and Anthropic's; Gemini's are written here)

type ChatCompletion = OpenAI.ChatCompletion;
type ChatCompletionChunk = OpenAI.ChatCompletionChunk;
type AnthropicMessage = Anthropic.Message;
type AnthropicEvent = Anthropic.RawMessageStreamEvent;

interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
  request_id?: string;
}
interface GeminiErrorBody {
  error: { code: number; message: string; status: string; details?: Array<Record<string, unknown>> };
}
interface GeminiPart {
  text?: string;
  functionCall?: { name: string; args: Record<string, unknown>; id?: string };
  thoughtSignature?: string;
}
interface GeminiResponse {
  candidates: Array<{ content: { role: string; parts: GeminiPart[] }; finishReason?: string; index: number }>;
  usageMetadata?: {
    promptTokenCount: number;
    candidatesTokenCount?: number;
    totalTokenCount: number;
    cachedContentTokenCount?: number;
    thoughtsTokenCount?: number;
  };
  modelVersion: string;
  responseId: string;
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP helpers

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<Raw> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

function parse<T>(raw: Raw): T {
  return JSON.parse(raw.text) as T;
}

interface Sse {
  event?: string;
  data: string;
}

/** Splits an SSE body into events (blank-line separated, LF or CRLF). */
function parseSse(text: string): Sse[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const out: Sse = { data: '' };
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event: ')) out.event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      out.data = data.join('\n');
      return out;
    });
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Reads a response body until it fails or ends: returns what arrived and the error, if any. */
async function readAll(body: AsyncIterable<Buffer>): Promise<{ text: string; error: Error | undefined }> {
  let text = '';
  try {
    for await (const chunk of body) text += chunk.toString('utf8');
    return { text, error: undefined };
  } catch (error) {
    return { text, error: error as Error };
  }
}

/** Polls a condition (no timing assertion: it only bounds how long a broken build can hang). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never happened: ${what}`);
}

const sim = await ProviderSimulator.start({ apiKey: KEY });
t.teardown(() => sim.close());

const oai = {
  url: `${sim.openaiBaseUrl}/chat/completions`,
  headers: { authorization: `Bearer ${KEY}` },
  body: (extra: Record<string, unknown> = {}, text = 'Hello there') => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: text }], ...extra }),
};
const ant = {
  url: `${sim.anthropicBaseUrl}/v1/messages`,
  headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
  body: (extra: Record<string, unknown> = {}, text = 'Hello there') => ({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: text }], ...extra }),
};
const gem = {
  url: (model = 'gemini-2.5-flash', action = 'generateContent', query = '') => `${sim.geminiBaseUrl}/v1beta/models/${model}:${action}${query}`,
  headers: { 'x-goog-api-key': KEY },
  body: (extra: Record<string, unknown> = {}, text = 'Hello there') => ({ contents: [{ role: 'user', parts: [{ text }] }], ...extra }),
};

function openaiChunks(raw: Raw): ChatCompletionChunk[] {
  return parseSse(raw.text)
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as ChatCompletionChunk);
}

function anthropicEvents(raw: Raw): AnthropicEvent[] {
  return parseSse(raw.text).map((e) => JSON.parse(e.data) as AnthropicEvent);
}

function geminiChunks(raw: Raw): GeminiResponse[] {
  return parseSse(raw.text).map((e) => JSON.parse(e.data) as GeminiResponse);
}

const twoCalls: Scenario = {
  toolCalls: [
    { id: 'call_given', name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
    { name: 'get_time', arguments: { zone: 'Europe/Paris' } },
  ],
};

// ---------------------------------------------------------------------------------------------

t.test('OpenAI JSON: default reply, full shape, default usage and recording', async (t) => {
  sim.reset();
  const res = await post(oai.url, { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }] }, oai.headers);
  t.equal(res.status, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.match(res.headers['x-request-id'], /^req_/);
  const body = parse<ChatCompletion>(res);
  const text = 'Hello from the openai simulator (model gpt-4o-mini).';
  t.match(body.id, /^chatcmpl-[A-Za-z0-9]{20,}$/);
  t.equal(body.object, 'chat.completion');
  t.ok(Number.isInteger(body.created) && body.created > 1_600_000_000, 'created is unix seconds');
  t.equal(body.model, 'gpt-4o-mini');
  t.same(body.choices, [{ index: 0, message: { role: 'assistant', content: text, refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }]);
  t.same(body.usage, {
    prompt_tokens: openaiPrompt('Be brief.Hello there', 2),
    completion_tokens: tokens(text),
    total_tokens: openaiPrompt('Be brief.Hello there', 2) + tokens(text),
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  });
  t.equal(body.service_tier, 'default');
  t.match(body.system_fingerprint, /^fp_[0-9a-f]+$/);
  t.equal(sim.requests.length, 1);
  const recorded = sim.requests[0];
  t.equal(recorded?.family, 'openai');
  t.equal(recorded?.method, 'POST');
  t.equal(recorded?.path, '/v1/chat/completions');
  t.equal(recorded?.model, 'gpt-4o-mini');
  t.equal(recorded?.stream, false);
  t.equal(recorded?.headers.authorization, `Bearer ${KEY}`);
  t.same(recorded?.body, { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }] });
});

t.test('OpenAI SSE: chunks, usage chunk only with include_usage, [DONE]', async (t) => {
  sim.reset();
  sim.enqueue({ text: 'Hello, streaming world!', chunkSize: 5 });
  const plain = await post(oai.url, oai.body({ stream: true }), oai.headers);
  t.equal(plain.status, 200);
  t.match(plain.headers['content-type'], /^text\/event-stream/);
  const events = parseSse(plain.text);
  t.notOk(events.some((e) => e.event !== undefined), 'no event: lines');
  t.equal(events.at(-1)?.data, '[DONE]', 'ends with [DONE]');
  const chunks = openaiChunks(plain);
  t.ok(chunks.every((c) => !('usage' in c)), 'no usage key without include_usage');
  t.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]?.id && c.model === 'gpt-4o-mini'));
  t.ok(chunks.every((c) => 'obfuscation' in c && typeof c.obfuscation === 'string'), 'obfuscation padding by default');
  t.same(chunks[0]?.choices[0]?.delta, { role: 'assistant', content: '', refusal: null });
  const deltas = chunks.map((c) => c.choices[0]?.delta.content).filter((c): c is string => typeof c === 'string' && c !== '');
  t.same(deltas, ['Hello', ', str', 'eamin', 'g wor', 'ld!']);
  const finishes = chunks.filter((c) => c.choices[0]?.finish_reason !== null);
  t.equal(finishes.length, 1, 'finish_reason non-null exactly once');
  t.same(finishes[0]?.choices[0]?.delta, {});
  t.equal(finishes[0]?.choices[0]?.finish_reason, 'stop');

  const withUsage = await post(oai.url, oai.body({ stream: true, stream_options: { include_usage: true, include_obfuscation: false } }), oai.headers);
  const usageChunks = openaiChunks(withUsage);
  const last = usageChunks.at(-1);
  t.same(last?.choices, [], 'usage chunk has no choices');
  t.equal(last?.usage?.prompt_tokens, openaiPrompt('Hello there', 1));
  t.ok(usageChunks.slice(0, -1).every((c) => c.usage === null), 'every earlier chunk has usage: null');
  t.ok(usageChunks.every((c) => !('obfuscation' in c)), 'include_obfuscation: false drops the padding');
  t.equal(parseSse(withUsage.text).at(-1)?.data, '[DONE]');
  t.equal(sim.requests[1]?.stream, true);
});

t.test('OpenAI tool calls: JSON and SSE, two parallel calls', async (t) => {
  sim.reset();
  sim.enqueue(twoCalls, twoCalls, { ...twoCalls, text: 'Checking.' });
  const json = parse<ChatCompletion>(await post(oai.url, oai.body(), oai.headers));
  const message = json.choices[0]?.message;
  t.equal(message?.content, null, 'content is null when there are only tool calls');
  t.equal(json.choices[0]?.finish_reason, 'tool_calls');
  const calls = (message?.tool_calls ?? []).map((c) => (c.type === 'function' ? c : undefined));
  t.equal(calls.length, 2);
  t.equal(calls[0]?.id, 'call_given');
  t.match(calls[1]?.id, /^call_[A-Za-z0-9]{24}$/);
  t.same(calls.map((c) => c?.function.name), ['get_weather', 'get_time']);
  t.same(JSON.parse(calls[0]?.function.arguments ?? ''), { city: 'Paris', unit: 'celsius' });

  const stream = openaiChunks(await post(oai.url, oai.body({ stream: true }), oai.headers));
  const first = stream[0]?.choices[0]?.delta;
  t.equal(first?.role, 'assistant');
  t.equal(first?.content, null, 'a tool-only stream starts with content: null and the first call fragment');
  const assembled = new Map<number, { id?: string; type?: string; name?: string; args: string; fragments: number }>();
  for (const chunk of stream) {
    for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) {
      const entry = assembled.get(tc.index) ?? { args: '', fragments: 0 };
      if (entry.fragments === 0) {
        t.ok(tc.id && tc.type === 'function' && tc.function?.name, `first fragment of call ${tc.index} has id, type and name`);
        entry.id = tc.id;
        entry.type = tc.type;
        entry.name = tc.function?.name;
      } else t.same(Object.keys(tc).sort(), ['function', 'index'], 'later fragments only carry arguments');
      entry.args += tc.function?.arguments ?? '';
      entry.fragments += 1;
      assembled.set(tc.index, entry);
    }
  }
  t.same([...assembled.keys()], [0, 1]);
  t.same(JSON.parse(assembled.get(0)?.args ?? ''), { city: 'Paris', unit: 'celsius' });
  t.same(JSON.parse(assembled.get(1)?.args ?? ''), { zone: 'Europe/Paris' });
  t.ok((assembled.get(0)?.fragments ?? 0) > 2, 'arguments arrive in pieces');
  t.equal(stream.at(-1)?.choices[0]?.finish_reason, 'tool_calls');

  const mixed = openaiChunks(await post(oai.url, oai.body({ stream: true }), oai.headers));
  t.same(mixed[0]?.choices[0]?.delta, { role: 'assistant', content: '', refusal: null }, 'text first when there is text');
  t.equal(mixed.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Checking.');
});

t.test('Anthropic JSON and SSE: text, tool_use blocks, event order', async (t) => {
  sim.reset();
  const res = await post(ant.url, ant.body({ system: 'Be brief.' }), ant.headers);
  t.equal(res.status, 200);
  t.match(res.headers['request-id'], /^req_/);
  const msg = parse<AnthropicMessage>(res);
  const text = 'Hello from the anthropic simulator (model claude-sonnet-4-5).';
  t.match(msg.id, /^msg_/);
  t.equal(msg.type, 'message');
  t.equal(msg.role, 'assistant');
  t.equal(msg.model, 'claude-sonnet-4-5');
  t.same(msg.content, [{ type: 'text', text, citations: null }]);
  t.equal(msg.stop_reason, 'end_turn');
  t.equal(msg.stop_sequence, null);
  t.same(msg.usage, {
    input_tokens: anthropicPrompt('Be brief.Hello there', 1),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: anthropicCount(text),
    service_tier: 'standard',
  });

  sim.enqueue(twoCalls, { ...twoCalls, text: 'Let me check.', chunkSize: 6 });
  const tools = parse<AnthropicMessage>(await post(ant.url, ant.body(), ant.headers));
  t.equal(tools.stop_reason, 'tool_use');
  t.same(
    tools.content.map((b) => (b.type === 'tool_use' ? { name: b.name, input: b.input } : b.type)),
    [
      { name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } },
      { name: 'get_time', input: { zone: 'Europe/Paris' } },
    ],
  );
  t.ok(tools.content.every((b) => b.type === 'tool_use' && /^(call_given|toolu_01[A-Za-z0-9]{22})$/.test(b.id)), 'tool_use ids');

  const raw = await post(ant.url, ant.body({ stream: true }), ant.headers);
  t.match(raw.headers['content-type'], /^text\/event-stream/);
  const sse = parseSse(raw.text);
  t.ok(sse.every((e) => e.event === (JSON.parse(e.data) as { type: string }).type), 'event: line equals the JSON type');
  const events = anthropicEvents(raw);
  t.same(
    events.map((e) => e.type + ('index' in e ? `:${e.index}` : '')).filter((s, i, all) => s !== all[i - 1]),
    ['message_start', 'content_block_start:0', 'ping', 'content_block_delta:0', 'content_block_stop:0', 'content_block_start:1', 'content_block_delta:1', 'content_block_stop:1', 'content_block_start:2', 'content_block_delta:2', 'content_block_stop:2', 'message_delta', 'message_stop'],
  );
  const start = events[0];
  t.ok(start?.type === 'message_start' && start.message.content.length === 0 && start.message.stop_reason === null && start.message.usage.output_tokens === 1);
  const textDeltas = events.flatMap((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? [e.delta.text] : []));
  t.same(textDeltas, ['Let me', ' check', '.']);
  const json1 = events.flatMap((e) => (e.type === 'content_block_delta' && e.index === 1 && e.delta.type === 'input_json_delta' ? [e.delta.partial_json] : []));
  t.equal(json1[0], '', 'tool input starts with an empty partial_json');
  t.same(JSON.parse(json1.join('')), { city: 'Paris', unit: 'celsius' });
  const toolStart = events.find((e) => e.type === 'content_block_start' && e.index === 1);
  t.ok(toolStart?.type === 'content_block_start' && toolStart.content_block.type === 'tool_use' && toolStart.content_block.id === 'call_given');
  const delta = events.find((e) => e.type === 'message_delta');
  t.ok(delta?.type === 'message_delta' && delta.delta.stop_reason === 'tool_use' && delta.delta.stop_sequence === null && delta.usage.output_tokens > 0);
  t.equal(events.at(-1)?.type, 'message_stop');
});

t.test('Gemini JSON, SSE (CRLF) and JSON-array streaming; function calls', async (t) => {
  sim.reset();
  const res = await post(gem.url(), gem.body({ systemInstruction: { parts: [{ text: 'Be brief.' }] } }), gem.headers);
  t.equal(res.status, 200);
  const body = parse<GeminiResponse>(res);
  const text = 'Hello from the gemini simulator (model gemini-2.5-flash).';
  t.same(body.candidates, [{ content: { parts: [{ text }], role: 'model' }, finishReason: 'STOP', index: 0 }]);
  t.equal(body.usageMetadata?.promptTokenCount, geminiCount('Be brief.Hello there'));
  t.equal(body.usageMetadata?.candidatesTokenCount, geminiCount(text), 'the digits of 2.5 count one token each');
  t.equal(body.modelVersion, 'gemini-2.5-flash');
  t.match(body.responseId, /^[A-Za-z0-9_-]{10,}$/);
  t.equal(sim.requests[0]?.model, 'gemini-2.5-flash', 'model comes from the path');

  sim.enqueue({ text: 'Streaming from Gemini', chunkSize: 8 });
  const sse = await post(gem.url('gemini-2.5-flash', 'streamGenerateContent', '?alt=sse'), gem.body(), gem.headers);
  t.match(sse.headers['content-type'], /^text\/event-stream/);
  t.ok(sse.text.endsWith('\r\n\r\n'), 'CRLF event separators');
  t.notOk(sse.text.includes('[DONE]'), 'no terminator');
  const chunks = geminiChunks(sse);
  t.same(chunks.map((c) => c.candidates[0]?.content.parts[0]?.text), ['Streamin', 'g from G', 'emini']);
  t.same(chunks.map((c) => c.candidates[0]?.finishReason), [undefined, undefined, 'STOP'], 'finishReason only on the last chunk');
  t.ok(chunks.every((c) => c.usageMetadata?.promptTokenCount === chunks[0]?.usageMetadata?.promptTokenCount), 'usageMetadata on every chunk');
  t.equal(chunks.at(-1)?.usageMetadata?.candidatesTokenCount, geminiCount('Streaming from Gemini'), 'last chunk has the final numbers');
  t.equal(sim.requests[1]?.stream, true);
  t.equal(sim.requests[1]?.query, 'alt=sse');

  sim.enqueue({ ...twoCalls, text: 'Checking' });
  const toolSse = geminiChunks(await post(gem.url('gemini-2.5-flash', 'streamGenerateContent', '?alt=sse'), gem.body(), gem.headers));
  const callChunk = toolSse.at(-1);
  t.same(callChunk?.candidates[0]?.content.parts, [
    { functionCall: { name: 'get_weather', args: { city: 'Paris', unit: 'celsius' } } },
    { functionCall: { name: 'get_time', args: { zone: 'Europe/Paris' } } },
  ], 'function calls arrive whole, without ids');
  t.equal(callChunk?.candidates[0]?.finishReason, 'STOP', 'function calls end with STOP');

  sim.enqueue({ text: 'abcdefgh', chunkSize: 5 });
  const array = await post(gem.url('gemini-2.5-flash', 'streamGenerateContent'), gem.body(), gem.headers);
  t.match(array.headers['content-type'], /^application\/json/);
  const elements = JSON.parse(array.text) as GeminiResponse[];
  t.same(elements.map((e) => e.candidates[0]?.content.parts[0]?.text), ['abcde', 'fgh'], 'without alt=sse: one JSON array');

  sim.enqueue(twoCalls);
  const g3 = parse<GeminiResponse>(await post(gem.url('gemini-3-pro-preview'), gem.body(), gem.headers));
  const parts = g3.candidates[0]?.content.parts ?? [];
  t.equal(parts.length, 2, 'no empty text part next to function calls');
  t.type(parts[0]?.thoughtSignature, 'string', 'Gemini 3 signs the first function call');
  t.equal(parts[1]?.thoughtSignature, undefined);
});

t.test('usage numbers: cache and reasoning, omit, finish mapping', async (t) => {
  sim.reset();
  const usage = { input: 100, output: 40, cacheRead: 30, cacheWrite: 10, reasoning: 15 };
  sim.setDefault({ text: 'Numbers.', usage });
  const o = parse<ChatCompletion>(await post(oai.url, oai.body(), oai.headers));
  t.same(o.usage, {
    prompt_tokens: 100,
    completion_tokens: 40,
    total_tokens: 140,
    prompt_tokens_details: { cached_tokens: 30, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 15, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  });
  const a = parse<AnthropicMessage>(await post(ant.url, ant.body(), ant.headers));
  t.equal(a.usage.input_tokens, 60, 'input_tokens excludes cache reads and writes');
  t.equal(a.usage.cache_read_input_tokens, 30);
  t.equal(a.usage.cache_creation_input_tokens, 10);
  t.equal(a.usage.output_tokens, 40);
  const as = anthropicEvents(await post(ant.url, ant.body({ stream: true }), ant.headers));
  const start = as[0];
  t.ok(start?.type === 'message_start' && start.message.usage.input_tokens === 60 && start.message.usage.cache_read_input_tokens === 30 && start.message.usage.cache_creation_input_tokens === 10);
  const md = as.find((e) => e.type === 'message_delta');
  t.equal(md?.type === 'message_delta' ? md.usage.output_tokens : -1, 40);
  const g = parse<GeminiResponse>(await post(gem.url(), gem.body(), gem.headers));
  t.same(g.usageMetadata, {
    promptTokenCount: 100,
    candidatesTokenCount: 25,
    totalTokenCount: 140,
    cachedContentTokenCount: 30,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: 100 }],
    cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 30 }],
    thoughtsTokenCount: 15,
  });
  const gs = geminiChunks(await post(gem.url('gemini-2.5-flash', 'streamGenerateContent', '?alt=sse'), gem.body(), gem.headers));
  t.equal(gs.at(-1)?.usageMetadata?.candidatesTokenCount, 25);
  t.equal(gs.at(-1)?.usageMetadata?.thoughtsTokenCount, 15);

  sim.setDefault({ usage: 'omit' });
  t.notOk('usage' in parse<ChatCompletion>(await post(oai.url, oai.body(), oai.headers)), 'OpenAI: no usage key');
  const noUsage = openaiChunks(await post(oai.url, oai.body({ stream: true, stream_options: { include_usage: true } }), oai.headers));
  t.notOk(noUsage.some((c) => c.choices.length === 0), 'OpenAI stream: no usage chunk');
  t.notOk('usageMetadata' in parse<GeminiResponse>(await post(gem.url(), gem.body(), gem.headers)), 'Gemini: no usageMetadata');
  const az = parse<AnthropicMessage>(await post(ant.url, ant.body(), ant.headers));
  t.equal(az.usage.input_tokens, 0, "Anthropic always has usage: 'omit' becomes zeros");
  t.equal(az.usage.output_tokens, 0);

  const cases: Array<[Scenario['finish'], string, string, string]> = [
    ['length', 'length', 'max_tokens', 'MAX_TOKENS'],
    ['content_filter', 'content_filter', 'refusal', 'SAFETY'],
    ['stop', 'stop', 'end_turn', 'STOP'],
  ];
  for (const [finish, openai, anthropic, gemini] of cases) {
    sim.setDefault({ text: 'x', finish });
    t.equal(parse<ChatCompletion>(await post(oai.url, oai.body(), oai.headers)).choices[0]?.finish_reason, openai);
    t.equal(parse<AnthropicMessage>(await post(ant.url, ant.body(), ant.headers)).stop_reason, anthropic);
    t.equal(parse<GeminiResponse>(await post(gem.url(), gem.body(), gem.headers)).candidates[0]?.finishReason, gemini);
  }
});

t.test('scripted errors: every status in each family shape, retry-after', async (t) => {
  sim.reset();
  const anthropicTypes: Record<number, string> = {
    400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 429: 'rate_limit_error', 500: 'api_error', 529: 'overloaded_error',
  };
  const geminiStatuses: Record<number, string> = {
    400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE',
  };
  for (const status of [400, 401, 403, 404, 429, 500, 503, 529]) {
    sim.enqueue({ error: { status } }, { error: { status } }, { error: { status } });
    const o = await post(oai.url, oai.body(), oai.headers);
    t.equal(o.status, status);
    const oe = parse<OpenAIErrorBody>(o);
    t.same(Object.keys(oe.error).sort(), ['code', 'message', 'param', 'type'], `OpenAI ${status}: all four keys`);
    t.equal(typeof oe.error.message, 'string');
    const a = await post(ant.url, ant.body(), ant.headers);
    t.equal(a.status, status);
    const ae = parse<AnthropicErrorBody>(a);
    t.equal(ae.type, 'error');
    t.equal(ae.error.type, anthropicTypes[status] ?? 'api_error', `Anthropic ${status} type`);
    t.match(ae.request_id, /^req_/);
    const g = await post(gem.url(), gem.body(), gem.headers);
    t.equal(g.status, status);
    const ge = parse<GeminiErrorBody>(g);
    t.equal(ge.error.code, status);
    t.equal(ge.error.status, geminiStatuses[status] ?? 'INTERNAL', `Gemini ${status} status`);
  }
  sim.enqueue({ error: { status: 429, message: 'Slow down', retryAfterSeconds: 7 } }, { error: { status: 529, message: 'Busy', retryAfterSeconds: 3 } });
  const o = await post(oai.url, oai.body(), oai.headers);
  t.equal(o.headers['retry-after'], '7');
  t.equal(parse<OpenAIErrorBody>(o).error.message, 'Slow down');
  t.equal(parse<OpenAIErrorBody>(o).error.code, 'rate_limit_exceeded');
  const a = await post(ant.url, ant.body(), ant.headers);
  t.equal(a.headers['retry-after'], '3');
  t.same(parse<AnthropicErrorBody>(a).error, { type: 'overloaded_error', message: 'Busy' });
  const plain = await post(oai.url, oai.body(), oai.headers);
  t.equal(plain.status, 200, 'the queue is used up: back to the default');
  t.equal(plain.headers['retry-after'], undefined);
});

t.test('stream faults: disconnect, malformed, hang, errorAfterEvents', async (t) => {
  sim.reset();
  const targets = [
    { family: 'openai', url: oai.url, headers: oai.headers, body: oai.body({ stream: true }) },
    { family: 'anthropic', url: ant.url, headers: ant.headers, body: ant.body({ stream: true }) },
    { family: 'gemini', url: gem.url('gemini-2.5-flash', 'streamGenerateContent', '?alt=sse'), headers: gem.headers, body: gem.body() },
  ];
  for (const target of targets) {
    // disconnect: the client sees a terminated body after exactly N events, no terminator
    sim.enqueue({ text: 'A fairly long reply to cut short.', disconnectAfterEvents: 3 });
    const cut = await request(target.url, { method: 'POST', headers: { 'content-type': 'application/json', ...target.headers }, body: JSON.stringify(target.body) });
    t.equal(cut.statusCode, 200);
    const got = await readAll(cut.body);
    t.ok(got.error, `${target.family}: reading the cut stream fails`);
    t.equal(parseSse(got.text).length, 3, `${target.family}: exactly 3 events arrived`);
    t.notOk(got.text.includes('[DONE]') || got.text.includes('message_stop'), 'no terminator');

    // malformed: one bad event after N, then the stream continues and ends normally
    sim.enqueue({ text: 'Malformed in the middle.', malformedAfterEvents: 2 });
    const bad = await post(target.url, target.body, target.headers);
    const events = parseSse(bad.text).filter((e) => e.data !== '[DONE]');
    const broken = events.map((e, i) => (tryJson(e.data) === undefined ? i : -1)).filter((i) => i >= 0);
    t.same(broken, [2], `${target.family}: the only invalid event is the third one`);
    if (target.family === 'openai') t.equal(parseSse(bad.text).at(-1)?.data, '[DONE]');
    if (target.family === 'anthropic') t.equal(events.at(-1)?.event, 'message_stop');

    // errorAfterEvents: the family's mid-stream error event, then the end
    sim.enqueue({ text: 'This will fail.', errorAfterEvents: { events: 2, message: 'upstream broke' } });
    const failed = await post(target.url, target.body, target.headers);
    const all = parseSse(failed.text);
    t.equal(all.length, 3, `${target.family}: 2 events then the error`);
    const last = all.at(-1);
    if (target.family === 'anthropic') {
      t.equal(last?.event, 'error');
      t.same(JSON.parse(last?.data ?? ''), { type: 'error', error: { type: 'overloaded_error', message: 'upstream broke' } });
    } else {
      const err = JSON.parse(last?.data ?? '') as { error: { message: string } };
      t.equal(err.error.message, 'upstream broke', `${target.family}: data: {"error":...}`);
    }

    // hang: N events, then nothing; a client-side abort ends it and reaches the simulator
    sim.enqueue({ text: 'Hanging reply here.', hangAfterEvents: 2 });
    const controller = new AbortController();
    const hung = await request(target.url, { method: 'POST', headers: { 'content-type': 'application/json', ...target.headers }, body: JSON.stringify(target.body), signal: controller.signal });
    let received = '';
    const reading = (async () => {
      try {
        for await (const chunk of hung.body) {
          received += (chunk as Buffer).toString('utf8');
          if (parseSse(received).length >= 2) controller.abort();
        }
        return undefined;
      } catch (error) {
        return error as Error;
      }
    })();
    const error = await reading;
    t.ok(error, `${target.family}: the hung stream ends only through the client abort`);
    t.equal(parseSse(received).length, 2);
    await eventually(() => sim.activeRequests() === 0, 'the simulator saw the abort');
  }

  // a hanging non-streaming request: no headers at all until the client gives up
  sim.enqueue({ hangAfterEvents: 0 });
  await t.rejects(request(oai.url, { method: 'POST', headers: { 'content-type': 'application/json', ...oai.headers }, body: JSON.stringify(oai.body()), signal: AbortSignal.timeout(300) }));
  await eventually(() => sim.activeRequests() === 0, 'the hung JSON request was released');
  sim.enqueue({ disconnectAfterEvents: 0 });
  await t.rejects(post(oai.url, oai.body(), oai.headers), 'non-streaming disconnect drops the socket');
  t.equal((await post(oai.url, oai.body(), oai.headers)).status, 200, 'the simulator keeps serving');
});

t.test('SIM: directives', async (t) => {
  sim.reset();
  sim.enqueue({ text: 'from the queue' });
  const directive = 'Please answer. SIM: {"text":"Scripted!","usage":{"input":9,"output":3}}';
  const o = parse<ChatCompletion>(await post(oai.url, oai.body({}, directive), oai.headers));
  t.equal(o.choices[0]?.message.content, 'Scripted!');
  t.equal(o.usage?.prompt_tokens, 9);
  const a = parse<AnthropicMessage>(await post(ant.url, ant.body({}, 'SIM: {"toolCalls":[{"name":"lookup","arguments":{"q":"x"}}]}'), ant.headers));
  t.equal(a.stop_reason, 'tool_use');
  t.ok(a.content[0]?.type === 'tool_use' && a.content[0].name === 'lookup');
  const g = parse<GeminiResponse>(await post(gem.url(), gem.body({}, 'SIM: {"text":"Gemini scripted","finish":"length"}'), gem.headers));
  t.equal(g.candidates[0]?.content.parts[0]?.text, 'Gemini scripted');
  t.equal(g.candidates[0]?.finishReason, 'MAX_TOKENS');
  const queued = parse<ChatCompletion>(await post(oai.url, oai.body(), oai.headers));
  t.equal(queued.choices[0]?.message.content, 'from the queue', 'directives override without consuming the queue');

  const earlier = await post(
    oai.url,
    { model: 'm', messages: [{ role: 'user', content: 'SIM: {"text":"old"}' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: [{ type: 'text', text: 'new question' }] }] },
    oai.headers,
  );
  t.not(parse<ChatCompletion>(earlier).choices[0]?.message.content, 'old', 'only the last user message counts');

  const badO = await post(oai.url, oai.body({}, 'SIM: {not json'), oai.headers);
  t.equal(badO.status, 400);
  t.match(parse<OpenAIErrorBody>(badO).error.message, /SIM directive is not valid JSON/);
  const badA = await post(ant.url, ant.body({}, 'SIM: {"chunkSize":"big"}'), ant.headers);
  t.equal(badA.status, 400);
  t.match(parse<AnthropicErrorBody>(badA).error.message, /chunkSize must be a non-negative integer/);
  const badG = await post(gem.url(), gem.body({}, 'SIM: {"colour":"red"}'), gem.headers);
  t.equal(badG.status, 400);
  t.match(parse<GeminiErrorBody>(badG).error.message, /unknown scenario field "colour"/);
});

t.test('auth failures in each family', async (t) => {
  sim.reset();
  const none = await post(oai.url, oai.body(), {});
  t.equal(none.status, 401);
  t.match(parse<OpenAIErrorBody>(none).error, { type: 'invalid_request_error', code: null, message: /didn't provide an API key/ });
  const wrong = await post(oai.url, oai.body(), { authorization: 'Bearer sk-wrong-key-123456' });
  t.equal(wrong.status, 401);
  t.equal(parse<OpenAIErrorBody>(wrong).error.code, 'invalid_api_key');

  const aNone = await post(ant.url, ant.body(), { 'anthropic-version': '2023-06-01' });
  t.equal(aNone.status, 401);
  t.same(parse<AnthropicErrorBody>(aNone).error, { type: 'authentication_error', message: 'x-api-key header is required' });
  const aWrong = await post(ant.url, ant.body(), { 'x-api-key': 'nope', 'anthropic-version': '2023-06-01' });
  t.equal(aWrong.status, 401);
  t.equal(parse<AnthropicErrorBody>(aWrong).error.type, 'authentication_error');
  const aBearer = await post(ant.url, ant.body(), { authorization: `Bearer ${KEY}`, 'anthropic-version': '2026-10-21' });
  t.equal(aBearer.status, 200, 'Authorization: Bearer is accepted too');
  const aVersion = await post(ant.url, ant.body(), { 'x-api-key': KEY });
  t.equal(aVersion.status, 400);
  t.same(parse<AnthropicErrorBody>(aVersion).error, { type: 'invalid_request_error', message: 'anthropic-version: header is required' });

  const gNone = await post(gem.url(), gem.body(), {});
  t.equal(gNone.status, 403);
  t.equal(parse<GeminiErrorBody>(gNone).error.status, 'PERMISSION_DENIED');
  const gWrong = await post(gem.url(), gem.body(), { 'x-goog-api-key': 'nope' });
  t.equal(gWrong.status, 400);
  t.match(parse<GeminiErrorBody>(gWrong).error, { status: 'INVALID_ARGUMENT', message: /API key not valid/ });
  const gQuery = await post(gem.url('gemini-2.5-flash', 'generateContent', `?key=${KEY}`), gem.body(), {});
  t.equal(gQuery.status, 200, '?key= works');

  t.equal(sim.requests.length, 9, 'rejected requests are recorded too');
  t.same(sim.requests.map((r) => r.family), ['openai', 'openai', 'anthropic', 'anthropic', 'anthropic', 'anthropic', 'gemini', 'gemini', 'gemini']);
});

t.test('request validation like the real APIs', async (t) => {
  sim.reset();
  const oaiBad = async (body: unknown, pattern: RegExp, param?: string | null): Promise<void> => {
    const res = await post(oai.url, body, oai.headers);
    t.equal(res.status, 400, `OpenAI 400: ${pattern}`);
    const err = parse<OpenAIErrorBody>(res).error;
    t.match(err.message, pattern);
    t.equal(err.type, 'invalid_request_error');
    if (param !== undefined) t.equal(err.param, param);
  };
  await oaiBad({ messages: [{ role: 'user', content: 'x' }] }, /must provide a model/);
  await oaiBad({ model: 'm' }, /Missing required parameter: 'messages'/, 'messages');
  await oaiBad({ model: 'm', messages: [] }, /empty array/, 'messages');
  await oaiBad({ model: 'm', messages: [{ role: 'robot', content: 'x' }] }, /Invalid value: 'robot'/, 'messages[0].role');
  await oaiBad({ model: 'm', messages: [{ role: 'user', content: 'x' }, { role: 'tool', content: 'r' }] }, /tool_call_id/);
  await oaiBad({ model: 'm', messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'call_1', content: 'r' }] }, /must be a response to a preceeding message with 'tool_calls'/);
  const asked = { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }, { id: 'call_2', type: 'function', function: { name: 'g', arguments: '{}' } }] };
  await oaiBad({ model: 'm', messages: [{ role: 'user', content: 'x' }, asked, { role: 'tool', tool_call_id: 'call_9', content: 'r' }] }, /'call_9' not found/);
  await oaiBad({ model: 'm', messages: [{ role: 'user', content: 'x' }, asked, { role: 'tool', tool_call_id: 'call_1', content: 'r' }, { role: 'user', content: 'y' }] }, /did not have response messages: call_2/);
  await oaiBad(oai.body({ stream_options: { include_usage: true } }), /only allowed when 'stream' is enabled/, 'stream_options');
  await oaiBad('{"model": "m", "messages": [', /could not parse the JSON body/);
  const okTools = await post(oai.url, { model: 'm', messages: [{ role: 'developer', content: 'd' }, { role: 'user', content: 'x' }, asked, { role: 'tool', tool_call_id: 'call_1', content: 'r' }, { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'r2' }] }] }, oai.headers);
  t.equal(okTools.status, 200, 'answered tool calls are fine');

  const antBad = async (body: unknown, message: string | RegExp, headers: Record<string, string> = ant.headers): Promise<void> => {
    const res = await post(ant.url, body, headers);
    t.equal(res.status, 400, `Anthropic 400: ${message}`);
    const err = parse<AnthropicErrorBody>(res).error;
    t.equal(err.type, 'invalid_request_error');
    if (typeof message === 'string') t.equal(err.message, message);
    else t.match(err.message, message);
  };
  const user = { role: 'user', content: 'Hi' };
  await antBad({ max_tokens: 10, messages: [user] }, 'model: Field required');
  await antBad({ model: 'c', messages: [user] }, 'max_tokens: Field required');
  await antBad({ model: 'c', max_tokens: 0, messages: [user] }, 'max_tokens: Input should be greater than or equal to 1');
  await antBad({ model: 'c', max_tokens: 10 }, 'messages: Field required');
  await antBad({ model: 'c', max_tokens: 10, messages: [{ role: 'system', content: 'S' }, user] }, 'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.');
  await antBad({ model: 'c', max_tokens: 10, messages: [{ role: 'robot', content: 'S' }, user] }, "messages.0.role: Input should be 'user' or 'assistant'");
  await antBad({ model: 'c', max_tokens: 10, messages: [{ role: 'assistant', content: 'A' }, user] }, /first message must use the "user" role/);
  await antBad({ model: 'c', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] }, 'messages: text content blocks must be non-empty');
  await antBad(ant.body({ temperature: 1.5 }), 'temperature: Input should be less than or equal to 1');
  const toolUse = { role: 'assistant', content: [{ type: 'text', text: 'Checking' }, { type: 'tool_use', id: 'toolu_A', name: 'f', input: {} }, { type: 'tool_use', id: 'toolu_B', name: 'g', input: {} }] };
  const onlyA = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_A', content: 'ok' }] };
  await antBad({ model: 'c', max_tokens: 10, messages: [user, toolUse, onlyA] }, /^messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_B\./);
  await antBad({ model: 'c', max_tokens: 10, messages: [user, toolUse, user, onlyA] }, /tool_use` ids were found without `tool_result` blocks immediately after: toolu_A, toolu_B/);
  const both = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_A', content: 'ok' }, { type: 'tool_result', tool_use_id: 'toolu_B', content: [{ type: 'text', text: 'ok' }] }] };
  t.equal((await post(ant.url, { model: 'c', max_tokens: 10, messages: [user, toolUse, both] }, ant.headers)).status, 200, 'answered tool_use is fine');
  t.equal((await post(ant.url, { model: 'c', max_tokens: 10, messages: [{ role: 'system', content: 'S' }, user] }, { authorization: `Bearer ${KEY}`, 'anthropic-version': '2026-10-21' })).status, 200, 'version 2026-10-21 accepts system turns in messages');

  const gemBad = async (url: string, body: unknown, pattern: RegExp, code = 400): Promise<GeminiErrorBody> => {
    const res = await post(url, body, gem.headers);
    t.equal(res.status, code, `Gemini ${code}: ${pattern}`);
    const err = parse<GeminiErrorBody>(res);
    t.match(err.error.message, pattern);
    return err;
  };
  await gemBad(gem.url(), { contents: [] }, /contents is not specified/);
  await gemBad(gem.url(), { contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] }, /Please use a valid role: user, model/);
  await gemBad(gem.url(), { contents: [{ role: 'user', parts: [{ functionResponse: { name: 'f', response: 'sunny' } }] }] }, /function_response\.response/);
  const schemaErr = await gemBad(
    gem.url(),
    gem.body({ tools: [{ functionDeclarations: [{ name: 'f', parameters: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { a: { type: 'string' }, b: { type: 'object', additionalProperties: false } } } }] }] }),
    /Invalid JSON payload received\. Unknown name "\$schema" at 'tools\[0\]\.function_declarations\[0\]\.parameters': Cannot find field\./,
  );
  t.match(schemaErr.error.message, /Unknown name "additionalProperties" at 'tools\[0\]\.function_declarations\[0\]\.parameters\.properties\[1\]\.value'/);
  t.equal(schemaErr.error.status, 'INVALID_ARGUMENT');
  const fine = await post(gem.url(), gem.body({ tools: [{ functionDeclarations: [{ name: 'f', parameters: { type: 'OBJECT', properties: { a: { type: 'STRING', enum: ['x'] } }, required: ['a'] } }] }] }), gem.headers);
  t.equal(fine.status, 200, 'a schema in the supported subset is fine');
  await gemBad(`${sim.geminiBaseUrl}/v1beta/models/gemini-2.5-flash:explode`, gem.body(), /was not found/, 404);
  await gemBad(`${sim.geminiBaseUrl}/v1beta/nothing/here`, gem.body(), /was not found/, 404);
  const call = { role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }] };
  const result = { role: 'user', parts: [{ functionResponse: { name: 'f', response: { output: 1 } } }] };
  await gemBad(gem.url('gemini-3-pro-preview'), { contents: [{ role: 'user', parts: [{ text: 'x' }] }, call, result] }, /missing a thought_signature/);
  const signed = { role: 'model', parts: [{ functionCall: { name: 'f', args: {} }, thoughtSignature: 'c2ln' }] };
  t.equal((await post(gem.url('gemini-3-pro-preview'), { contents: [{ role: 'user', parts: [{ text: 'x' }] }, signed, result] }, gem.headers)).status, 200);
  t.equal((await post(gem.url(), { contents: [{ role: 'user', parts: [{ text: 'x' }] }, call, result] }, gem.headers)).status, 200, 'Gemini 2.5 does not require signatures');

  const notFound = await post(`${sim.openaiBaseUrl}/completions`, {}, oai.headers);
  t.equal(notFound.status, 404);
  t.match(parse<OpenAIErrorBody>(notFound).error.message, /Invalid URL \(POST \/v1\/completions\)/);
});

t.test('OpenAI SDK: create (JSON and stream), stream helper with tool calls, errors', async (t) => {
  sim.reset();
  const client = new OpenAI({ apiKey: KEY, baseURL: sim.openaiBaseUrl, maxRetries: 0 });
  sim.enqueue({ text: 'SDK hello', usage: { input: 12, output: 3, cacheRead: 4 } });
  const completion = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(completion.choices[0]?.message.content, 'SDK hello');
  t.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 4);

  sim.enqueue({ text: 'Streamed through the SDK', chunkSize: 3 });
  const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usageTotal = 0;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usageTotal = chunk.usage.total_tokens;
  }
  t.equal(text, 'Streamed through the SDK');
  t.ok(usageTotal > 0, 'usage chunk read by the SDK');

  sim.enqueue({ ...twoCalls, text: 'Let me look.' });
  const runner = client.chat.completions.stream({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'weather and time?' }],
    tools: [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } },
    ],
  });
  const deltas: string[] = [];
  runner.on('content.delta', ({ delta }) => deltas.push(delta));
  const final = await runner.finalChatCompletion();
  const message = final.choices[0]?.message;
  t.equal(final.choices[0]?.finish_reason, 'tool_calls');
  t.equal(message?.content, 'Let me look.');
  t.equal(deltas.join(''), 'Let me look.', 'content.delta events fire (role was seen)');
  const calls = (message?.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [c] : []));
  t.same(calls.map((c) => [c.id.startsWith('call_'), c.function.name, JSON.parse(c.function.arguments) as unknown]), [
    [true, 'get_weather', { city: 'Paris', unit: 'celsius' }],
    [true, 'get_time', { zone: 'Europe/Paris' }],
  ]);

  sim.enqueue(twoCalls);
  const toolOnly = await client.chat.completions
    .stream({ model: 'gpt-4o', messages: [{ role: 'user', content: 'tools only' }], tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }] })
    .finalChatCompletion();
  t.equal(toolOnly.choices[0]?.message.content, null, 'tool-only stream: content stays null');
  t.equal(toolOnly.choices[0]?.message.tool_calls?.length, 2);

  sim.enqueue({ error: { status: 429, message: 'Too many', retryAfterSeconds: 1 } });
  const rateLimited = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(rateLimited instanceof OpenAI.RateLimitError, 'a 429 becomes RateLimitError');
  t.equal(rateLimited instanceof OpenAI.APIError ? rateLimited.message : '', '429 Too many');

  sim.enqueue({ text: 'about to fail', errorAfterEvents: { events: 2, message: 'mid-stream failure' } });
  const failing = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true });
  const midStream = await (async () => {
    try {
      for await (const chunk of failing) void chunk;
      return undefined;
    } catch (error) {
      return error;
    }
  })();
  t.ok(midStream instanceof OpenAI.APIError, 'the SDK throws on data: {"error":...}');
  t.match(midStream instanceof Error ? midStream.message : '', /mid-stream failure/);

  sim.enqueue({ text: 'cut', disconnectAfterEvents: 2 });
  const cut = client.chat.completions.stream({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  await t.rejects(cut.finalChatCompletion(), 'a dropped stream rejects finalChatCompletion');
});

t.test('Anthropic SDK 1.x: create, stream().finalMessage() with tool_use, errors', async (t) => {
  sim.reset();
  const client = new Anthropic({ apiKey: KEY, baseURL: sim.anthropicBaseUrl, maxRetries: 0 });
  sim.enqueue({ text: 'Hi from Claude', usage: { input: 50, output: 5, cacheRead: 20, cacheWrite: 5 } });
  const msg = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  t.same(msg.content.map((b) => (b.type === 'text' ? b.text : b.type)), ['Hi from Claude']);
  t.equal(msg.usage.input_tokens, 25);
  t.equal(msg.usage.cache_read_input_tokens, 20);
  const sent = sim.requests[0];
  t.equal(sent?.headers.authorization, `Bearer ${KEY}`, 'SDK 1.x sends Authorization: Bearer');
  t.equal(sent?.headers['anthropic-version'], '2026-10-21');
  t.equal(sent?.headers['x-api-key'], undefined);

  sim.enqueue({ text: 'Looking it up.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris', days: [1, 2] } }], usage: { input: 30, output: 22 }, chunkSize: 5 });
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'weather?' }] });
  let streamedText = '';
  stream.on('text', (delta) => {
    streamedText += delta;
  });
  const final = await stream.finalMessage();
  t.equal(streamedText, 'Looking it up.');
  t.equal(final.stop_reason, 'tool_use');
  t.equal(final.usage.output_tokens, 22);
  t.equal(final.usage.input_tokens, 30);
  const [textBlock, toolBlock] = final.content;
  t.ok(textBlock?.type === 'text' && textBlock.text === 'Looking it up.');
  t.ok(toolBlock?.type === 'tool_use', 'second block is tool_use');
  if (toolBlock?.type === 'tool_use') {
    t.match(toolBlock.id, /^toolu_/);
    t.equal(toolBlock.name, 'get_weather');
    t.same(toolBlock.input, { city: 'Paris', days: [1, 2] }, 'partial_json pieces assemble into the input');
  }

  sim.enqueue(twoCalls);
  const toolOnly = await client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'tools only' }] }).finalMessage();
  t.same(
    toolOnly.content.map((b) => (b.type === 'tool_use' ? [b.id, b.name, b.input] : b.type)),
    [
      ['call_given', 'get_weather', { city: 'Paris', unit: 'celsius' }],
      [toolOnly.content[1]?.type === 'tool_use' ? toolOnly.content[1].id : 'missing', 'get_time', { zone: 'Europe/Paris' }],
    ],
    'tool-only stream: two tool_use blocks',
  );

  sim.enqueue({ error: { status: 529 } });
  const overloaded = await client.messages.create({ model: 'c', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(overloaded instanceof Anthropic.APIError, 'a 529 is an APIError');
  if (overloaded instanceof Anthropic.APIError) {
    t.equal(overloaded.status, 529);
    t.equal(overloaded.type, 'overloaded_error');
  }

  sim.enqueue({ text: 'will break', errorAfterEvents: { events: 3 } });
  const broken = client.messages.stream({ model: 'c', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  const midStream = await broken.finalMessage().then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(midStream instanceof Anthropic.APIError, 'event: error raises APIError');
  t.match(midStream instanceof Error ? midStream.message : '', /Overloaded/);

  sim.enqueue({ text: 'cut off', disconnectAfterEvents: 4 });
  await t.rejects(client.messages.stream({ model: 'c', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).finalMessage(), 'a dropped stream rejects');

  const legacy = await post(ant.url, ant.body(), { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });
  t.equal(legacy.status, 200, 'older clients (x-api-key, 2023-06-01) work too');
});

t.test('queue, default, reset, delays and client disconnects', async (t) => {
  sim.reset();
  sim.setDefault({ text: 'default' });
  sim.enqueue({ text: 'one' }, { text: 'two', delayMs: 20 });
  const texts: Array<string | null | undefined> = [];
  for (let i = 0; i < 3; i++) texts.push(parse<ChatCompletion>(await post(oai.url, oai.body(), oai.headers)).choices[0]?.message.content);
  t.same(texts, ['one', 'two', 'default'], 'FIFO, then the default');
  const rejected = await post(oai.url, oai.body(), {});
  t.equal(rejected.status, 401);
  sim.enqueue({ text: 'kept' });
  await post(oai.url, { model: 'm', messages: [] }, oai.headers);
  t.equal(parse<ChatCompletion>(await post(oai.url, oai.body(), oai.headers)).choices[0]?.message.content, 'kept', 'rejected requests do not use up scenarios');
  t.equal(sim.requests.length, 6);
  sim.reset();
  t.equal(sim.requests.length, 0);
  t.equal(parse<ChatCompletion>(await post(oai.url, oai.body(), oai.headers)).choices[0]?.message.content, 'Hello from the openai simulator (model gpt-4o-mini).');

  // A client that goes away during the delay or in the middle of a slow stream does not break anything.
  sim.enqueue({ delayMs: 60_000 });
  await t.rejects(request(oai.url, { method: 'POST', headers: { 'content-type': 'application/json', ...oai.headers }, body: JSON.stringify(oai.body()), signal: AbortSignal.timeout(100) }));
  sim.enqueue({ text: 'x'.repeat(400), chunkSize: 1, chunkDelayMs: 5 });
  const controller = new AbortController();
  const slow = await request(oai.url, { method: 'POST', headers: { 'content-type': 'application/json', ...oai.headers }, body: JSON.stringify(oai.body({ stream: true })), signal: controller.signal });
  const aborted = await readAll(
    (async function* () {
      for await (const chunk of slow.body) {
        controller.abort();
        yield chunk as Buffer;
      }
    })(),
  );
  t.ok(aborted.error, 'the client abort ends the slow stream');
  await eventually(() => sim.activeRequests() === 0, 'aborted requests are released');
  t.equal((await post(oai.url, oai.body(), oai.headers)).status, 200);
});

t.test('close() ends hung streams and every socket', { timeout: 10_000 }, async (t) => {
  const own = await ProviderSimulator.start({ apiKey: 'other-key' });
  t.match(own.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal(own.openaiBaseUrl, `${own.url}/v1`);
  t.equal(own.anthropicBaseUrl, own.url);
  t.equal(own.geminiBaseUrl, own.url);
  own.enqueue({ text: 'never finishes', hangAfterEvents: 1 });
  const res = await request(`${own.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'other-key', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(ant.body({ stream: true })),
  });
  t.equal(res.statusCode, 200);
  const reading = readAll(res.body);
  await eventually(() => own.openConnections() === 1, 'the stream is open');
  t.equal(own.activeRequests(), 1);
  await own.close();
  const got = await reading;
  t.equal(parseSse(got.text).length, 1, 'one event, then the hang');
  t.ok(got.error, 'close() terminates the hung stream');
  t.equal(own.openConnections(), 0);
  t.equal(own.activeRequests(), 0);
  await own.close();
});
