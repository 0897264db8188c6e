import { createServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import t from 'tap';
import { request } from 'undici';
import { countTextTokens } from '../../src/core/tokens.js';
import type { UsageRecord } from '../../src/store/usage.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator, type Scenario } from '../support/simulator/server.js';
import { charges, header, noHolds, postJson, until, usageRow, type RawResponse } from '../support/e2e.js';
import { sqlAll, sqlRun, sqlValue } from '../support/store.js';

/**
 * End-to-end: POST /v1/chat/completions over raw HTTP against the provider simulator. SSE
 * framing on the bytes, request validation, model and credential errors, upstream errors
 * (before and after the SSE headers), client disconnects, and request ids.
 */

// ---------------------------------------------------------------------------------------------
// Helpers

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

type Raw = RawResponse;

const FAMILY_MODELS = {
  openai: 'openai/gpt-4o-mini',
  anthropic: 'anthropic/claude-haiku-4-5',
  gemini: 'gemini/gemini-2.5-flash',
} as const;
type FamilyName = keyof typeof FAMILY_MODELS;
const FAMILIES = Object.keys(FAMILY_MODELS) as FamilyName[];

const USER = [{ role: 'user', content: 'Say something.' }];

async function post(gw: TestGateway, key: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<Raw> {
  return postJson(`${gw.url}/v1/chat/completions`, key === undefined ? headers : { ...headers, authorization: `Bearer ${key}` }, body);
}

/**
 * The error envelope with exactly message/type/code/reason/param (`code` the integer HTTP
 * status, `reason` the precise cause), a request id, and no stack trace.
 */
function expectError(t: Tap, res: Raw, status: number, type: string, reason?: string, param?: string | null): void {
  t.equal(res.status, status, `status ${status} (${res.text.slice(0, 200)})`);
  t.match(header(res, 'content-type') ?? '', /^application\/json/, 'error is JSON');
  t.ok(res.json && typeof res.json === 'object', 'error body is JSON');
  const error = res.json?.error;
  t.same(Object.keys(error ?? {}).sort(), ['code', 'message', 'param', 'reason', 'type'], 'error envelope {message, type, code, reason, param}');
  t.equal(error?.type, type, 'error.type');
  t.equal(error?.code, status, 'error.code is the integer HTTP status');
  t.type(error?.reason, 'string', 'error.reason is a string');
  if (reason !== undefined) t.equal(error?.reason, reason, 'error.reason');
  if (param !== undefined) t.equal(error?.param, param, 'error.param');
  t.equal(typeof error?.message, 'string', 'error.message is a string');
  t.ok((error?.message ?? '').length > 0, 'error.message is not empty');
  t.ok(header(res, 'x-request-id'), 'x-request-id on the error response');
  t.notMatch(res.text, /\n\s+at |node_modules|\.ts:\d+/, 'no stack trace in the body');
}


interface SseFrame {
  lines: string[];
  data: string;
}

/** Splits an SSE body into frames; every line of every frame is kept to check the framing. */
function sseFrames(text: string): SseFrame[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.length > 0)
    .map((frame) => {
      const lines = frame.split('\n');
      return { lines, data: lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n') };
    });
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// ---------------------------------------------------------------------------------------------
// One simulator and one gateway for most tests

const sim = await ProviderSimulator.start();
t.teardown(() => sim.close());

const deadPort = await closedPort();
const shortIdle = { connect: '2s', first_byte: '5s', idle: '600ms' };
// How each upstream failure reaches the client: no retries here (they are routing's, tested in
// test/e2e/routing*.test.ts), so that every failure is the answer.
const gw = await startTestGateway({
  routing: { retries: 0 },
  providers: {
    ...simulatedProviders(sim.url),
    openai: { type: 'openai', base_url: `${sim.url}/v1`, api_key: 'sim-key', timeouts: shortIdle },
    anthropic: { type: 'anthropic', base_url: sim.url, api_key: 'sim-key', timeouts: shortIdle },
    gemini: { type: 'gemini', base_url: sim.url, api_key: 'sim-key', timeouts: shortIdle },
    // Short first-byte timeout, for the 504 case.
    mistral: { type: 'openai', base_url: `${sim.url}/v1`, api_key: 'sim-key', timeouts: { connect: '2s', first_byte: '300ms', idle: '300ms' } },
    // Nothing listens there: connection refused.
    dead: { type: 'openai', base_url: `http://127.0.0.1:${deadPort}/v1`, api_key: 'sim-key', timeouts: { connect: '2s', first_byte: '2s', idle: '2s' } },
  },
  models: [
    { id: 'groq/gpt-4o-mini', input_cost_per_1m: 1, output_cost_per_1m: 1 },
    { id: 'dead/model-x', input_cost_per_1m: 1, output_cost_per_1m: 1 },
  ],
});
t.teardown(() => gw.stop());
const funded = await fundedKey(gw, { balance: 1000 });

// ---------------------------------------------------------------------------------------------
// SSE framing

t.test('SSE framing on the raw bytes, per family, with and without include_usage', async (t) => {
  const text = 'Hello, streaming world! Fine weather.';
  const toolCalls = [
    { name: 'get_weather', arguments: { city: 'Paris' } },
    { name: 'get_time', arguments: { tz: 'UTC', format: '24h' } },
  ];
  for (const family of FAMILIES) {
    const model = FAMILY_MODELS[family];
    for (const includeUsage of [false, true]) {
      await t.test(`${family} include_usage=${includeUsage}`, async (t) => {
        sim.enqueue({ text, toolCalls, usage: { input: 21, output: 34 }, chunkSize: 5 });
        const body: Record<string, unknown> = { model, messages: USER, stream: true };
        if (includeUsage) body.stream_options = { include_usage: true };
        const res = await post(gw, funded.key, body);
        t.equal(res.status, 200, res.text.slice(0, 300));
        t.match(header(res, 'content-type') ?? '', /^text\/event-stream/, 'content-type text/event-stream');
        t.ok(res.text.endsWith('\n\n'), 'the body ends with a complete event');

        const frames = sseFrames(res.text);
        for (const frame of frames) {
          for (const line of frame.lines) t.ok(line.startsWith('data: '), `only data: lines (got ${JSON.stringify(line.slice(0, 40))})`);
        }
        t.notMatch(res.text, /^event:/m, 'no event: line');
        t.equal(frames.at(-1)?.data, '[DONE]', 'data: [DONE] is last');
        t.equal(frames.filter((f) => f.data === '[DONE]').length, 1, 'exactly one [DONE]');

        const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data));
        t.ok(chunks.length > 4, 'several chunks');
        const first = chunks[0];
        t.match(first.id, /^chatcmpl-/, 'chatcmpl- id');
        t.equal(first.model, model, 'model is the catalog id');
        t.equal(typeof first.created, 'number');
        for (const chunk of chunks) {
          t.equal(chunk.id, first.id, 'same id on every chunk');
          t.equal(chunk.created, first.created, 'same created on every chunk');
          t.equal(chunk.model, first.model, 'same model on every chunk');
          t.equal(chunk.object, 'chat.completion.chunk');
          t.notOk('error' in chunk, 'no error chunk');
        }
        t.same(first.choices?.[0]?.delta, { role: 'assistant', content: '' }, 'first delta is {role: assistant, content: ""}');

        if (includeUsage) {
          for (const chunk of chunks.slice(0, -1)) {
            t.ok(Object.hasOwn(chunk, 'usage') && chunk.usage === null, 'every chunk but the last has usage: null');
            t.equal(chunk.choices.length, 1, 'one choice');
          }
          const last = chunks.at(-1);
          t.same(last.choices, [], 'the usage chunk has choices: []');
          t.match(last.usage, { prompt_tokens: 21, completion_tokens: 34, total_tokens: 55 }, 'usage right before [DONE]');
        } else {
          t.notOk(chunks.some((c) => Object.hasOwn(c, 'usage')), 'no chunk has a usage key');
          t.notOk(chunks.some((c) => Array.isArray(c.choices) && c.choices.length === 0), 'no choices: [] chunk');
        }

        const choiceChunks = chunks.filter((c) => c.choices.length === 1);
        const finishing = choiceChunks.filter((c) => c.choices[0].finish_reason !== null);
        t.equal(finishing.length, 1, 'finish_reason is set exactly once');
        t.equal(finishing[0], choiceChunks.at(-1), 'on the last choice chunk');
        t.same(finishing[0]?.choices[0].delta, {}, 'the finish chunk has an empty delta');
        t.equal(finishing[0]?.choices[0].finish_reason, 'tool_calls');

        const deltas = choiceChunks.slice(1).map((c) => c.choices[0].delta);
        const contentDeltas = deltas.filter((d) => typeof d.content === 'string');
        t.ok(contentDeltas.length > 1, 'text arrives as several content deltas');
        t.equal(contentDeltas.map((d) => d.content).join(''), text, 'content deltas add up to the text');
        for (const d of deltas) if (d.content !== undefined || d.tool_calls !== undefined) t.notOk('role' in d, 'role only on the first delta');

        const fragments = deltas.flatMap((d) => (Array.isArray(d.tool_calls) ? d.tool_calls : []));
        t.ok(deltas.every((d) => !Array.isArray(d.tool_calls) || d.tool_calls.length === 1), 'one tool-call fragment per chunk');
        const byIndex = new Map<number, any[]>();
        for (const fragment of fragments) {
          t.equal(typeof fragment.index, 'number', 'every fragment has an index');
          byIndex.set(fragment.index, [...(byIndex.get(fragment.index) ?? []), fragment]);
        }
        t.same([...byIndex.keys()], [0, 1], 'tool calls by index 0, 1');
        toolCalls.forEach((call, index) => {
          const list = byIndex.get(index) ?? [];
          const [head, ...rest] = list;
          t.ok(typeof head?.id === 'string' && head.id.length > 0, `call ${index}: id on the first fragment`);
          t.equal(head?.type, 'function', `call ${index}: type on the first fragment`);
          t.equal(head?.function?.name, call.name, `call ${index}: name on the first fragment`);
          t.ok(rest.length > 0, `call ${index}: argument pieces follow`);
          for (const piece of rest) {
            t.notOk('id' in piece || 'type' in piece || 'name' in (piece.function ?? {}), `call ${index}: later fragments carry only arguments`);
            t.equal(typeof piece.function?.arguments, 'string');
          }
          const args = list.map((f) => f.function?.arguments ?? '').join('');
          t.same(JSON.parse(args), call.arguments, `call ${index}: arguments add up to the JSON`);
        });
        const ids = [...byIndex.values()].map((list) => list[0]?.id);
        t.equal(new Set(ids).size, 2, 'distinct tool call ids');
      });
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Request validation

t.test('request validation: 400 naming the field, nothing upstream, no usage row', async (t) => {
  const base = { model: 'openai/gpt-4o-mini', messages: USER };
  const tool = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object', properties: {} } } });
  const cases: Array<{ name: string; body: unknown; param: string | null; reason?: string }> = [
    { name: 'missing model', body: { messages: USER }, param: 'model', reason: 'missing_field' },
    { name: 'messages missing', body: { model: base.model }, param: 'messages', reason: 'missing_field' },
    { name: 'messages empty', body: { ...base, messages: [] }, param: 'messages', reason: 'invalid_field' },
    { name: 'messages not an array', body: { ...base, messages: 'hello' }, param: 'messages', reason: 'invalid_field' },
    { name: 'bad role', body: { ...base, messages: [{ role: 'wizard', content: 'hi' }] }, param: 'messages[0].role' },
    { name: 'user content of a wrong type', body: { ...base, messages: [{ role: 'user', content: 42 }] }, param: 'messages[0].content' },
    {
      name: 'bad image_url url',
      body: { ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://example.com/cat.png' } }] }] },
      param: 'messages[0].content[0].image_url.url',
    },
    { name: 'temperature 3', body: { ...base, temperature: 3 }, param: 'temperature' },
    { name: 'top_p 2', body: { ...base, top_p: 2 }, param: 'top_p' },
    { name: 'max_tokens 0', body: { ...base, max_tokens: 0 }, param: 'max_tokens' },
    { name: 'max_tokens 1.5', body: { ...base, max_tokens: 1.5 }, param: 'max_tokens' },
    { name: 'max_tokens "10"', body: { ...base, max_tokens: '10' }, param: 'max_tokens' },
    { name: 'max_tokens and max_completion_tokens differ', body: { ...base, max_tokens: 10, max_completion_tokens: 20 }, param: 'max_tokens' },
    { name: 'n 2', body: { ...base, n: 2 }, param: 'n' },
    { name: 'stream "yes"', body: { ...base, stream: 'yes' }, param: 'stream' },
    { name: 'stream_options without stream', body: { ...base, stream_options: { include_usage: true } }, param: 'stream_options' },
    { name: 'stop with 5 entries', body: { ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, param: 'stop' },
    { name: 'tool with a bad name', body: { ...base, tools: [tool('bad name!')] }, param: 'tools[0].function.name' },
    { name: 'duplicate tool name', body: { ...base, tools: [tool('lookup'), tool('lookup')] }, param: 'tools[1].function.name' },
    {
      name: 'tool_choice naming a function not in tools',
      body: { ...base, tools: [tool('lookup')], tool_choice: { type: 'function', function: { name: 'other' } } },
      param: 'tool_choice',
    },
    { name: 'response_format of an unknown type', body: { ...base, response_format: { type: 'xml' } }, param: 'response_format.type' },
    {
      name: 'tool message answering no call',
      body: {
        ...base,
        messages: [
          { role: 'user', content: 'weather?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'call_2', content: 'sunny' },
        ],
      },
      param: 'messages[2].tool_call_id',
    },
    { name: 'invalid JSON body', body: '{"model": "openai/gpt-4o-mini", "messages": [', param: null, reason: 'invalid_json' },
    { name: 'body not an object', body: '[1, 2, 3]', param: null, reason: 'invalid_body' },
  ];
  const requestsBefore = sim.requests.length;
  const rowsBefore = (await gw.app.store.usage.list({ limit: 1000 })).length;
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const res = await post(gw, funded.key, c.body);
      expectError(t, res, 400, 'invalid_request_error', c.reason, c.param);
      if (c.param) t.ok(String(res.json?.error?.message).includes(c.param), `the message names ${c.param}: ${res.json?.error?.message}`);
    });
  }
  t.equal(sim.requests.length, requestsBefore, 'nothing reached the simulator');
  t.equal((await gw.app.store.usage.list({ limit: 1000 })).length, rowsBefore, 'no usage row written');
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// Model errors

t.test('model errors', async (t) => {
  const requestsBefore = sim.requests.length;
  const rowsBefore = (await gw.app.store.usage.list({ limit: 1000 })).length;

  const unknown = await post(gw, funded.key, { model: 'openai/gpt-nope', messages: USER });
  expectError(t, unknown, 404, 'not_found_error', 'model_not_found', 'model');
  t.match(unknown.json.error.message, /GET \/v1\/models/, 'says how to list models');

  const embedding = await post(gw, funded.key, { model: 'openai/text-embedding-3-small', messages: USER });
  expectError(t, embedding, 400, 'invalid_request_error', 'model_not_supported', 'model');

  const ambiguous = await post(gw, funded.key, { model: 'gpt-4o-mini', messages: USER });
  expectError(t, ambiguous, 400, 'invalid_request_error', 'model_ambiguous', 'model');
  t.match(ambiguous.json.error.message, /openai\/gpt-4o-mini/, 'names openai/gpt-4o-mini');
  t.match(ambiguous.json.error.message, /groq\/gpt-4o-mini/, 'names groq/gpt-4o-mini');

  const tooMany = await post(gw, funded.key, { model: 'openai/gpt-4o-mini', messages: USER, max_tokens: 16385 });
  expectError(t, tooMany, 400, 'invalid_request_error', 'invalid_field', 'max_tokens');
  t.match(tooMany.json.error.message, /max_tokens/);
  t.match(tooMany.json.error.message, /16384/, 'states the model limit');

  const streamTooMany = await post(gw, funded.key, { model: 'openai/gpt-4o-mini', messages: USER, max_completion_tokens: 20000, stream: true });
  expectError(t, streamTooMany, 400, 'invalid_request_error', 'invalid_field', 'max_completion_tokens');
  t.match(streamTooMany.json.error.message, /^max_completion_tokens: /, 'names the field the client used');

  t.equal(sim.requests.length, requestsBefore, 'nothing reached the simulator');
  t.equal((await gw.app.store.usage.list({ limit: 1000 })).length, rowsBefore, 'no usage row written');
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// Credentials

t.test('credentials', async (t) => {
  const requestsBefore = sim.requests.length;
  const body = { model: 'openai/gpt-4o-mini', messages: USER };

  expectError(t, await post(gw, undefined, body), 401, 'authentication_error', 'missing_credentials');
  expectError(t, await post(gw, `sk-${'0'.repeat(64)}`, body), 401, 'authentication_error', 'invalid_api_key');
  expectError(t, await post(gw, 'sk-short', body), 401, 'authentication_error', 'invalid_api_key');

  const management = await post(gw, gw.adminKey, body);
  expectError(t, management, 403, 'permission_error', 'management_key_not_allowed');
  t.match(management.json.error.message, /management keys cannot make inference calls/);

  const revoked = await fundedKey(gw, { balance: 10 });
  const del = await gw.http('DELETE', `/api/management/api-keys/${revoked.keyId}`, { token: gw.adminKey });
  t.equal(del.status, 200, 'key revoked');
  expectError(t, await post(gw, revoked.key, body), 401, 'authentication_error', 'revoked_api_key');

  // Expired: the API only takes future dates, so move expires_at into the past in the store
  // (before the key's first use, so no cached record hides it).
  const expired = await fundedKey(gw, { balance: 10 });
  await sqlRun(gw, 'UPDATE api_keys SET expires_at = ? WHERE id = ?', Date.now() - 60_000, expired.keyId);
  expectError(t, await post(gw, expired.key, body), 401, 'authentication_error', 'expired_api_key');

  t.equal(sim.requests.length, requestsBefore, 'nothing reached the simulator');
});

t.test('a provider whose api_key variable is unset: 503 naming the variable', async (t) => {
  const unsetGw = await startTestGateway(
    { providers: { ...simulatedProviders(sim.url), anthropic: { type: 'anthropic', base_url: sim.url, api_key: '${SIM_UNSET_KEY_VAR}' } } },
    {},
  );
  t.teardown(() => unsetGw.stop());
  const key = await fundedKey(unsetGw, { balance: 10 });
  const before = sim.requests.length;
  for (const stream of [false, true]) {
    const res = await post(unsetGw, key.key, { model: 'anthropic/claude-haiku-4-5', messages: USER, stream });
    expectError(t, res, 503, 'service_unavailable', 'provider_not_configured');
    t.match(res.json.error.message, /SIM_UNSET_KEY_VAR/, 'the message names the variable');
  }
  t.equal(sim.requests.length, before, 'nothing reached the simulator');
  unsetGw.app.settlement.drain();
  t.same(await unsetGw.app.holds.held(key.accountId, key.keyId), { accountHeldMicros: 0, keyHeldMicros: 0 }, 'no hold left');
  t.equal((await unsetGw.app.store.ledger.list(key.accountId, 100)).filter((e) => e.kind === 'charge').length, 0, 'no charge');
});

// ---------------------------------------------------------------------------------------------
// Upstream errors before any output

interface UpstreamCase {
  name: string;
  model: string;
  scenario: Scenario | null;
  status: number;
  type: string;
  /** The error's reason (also the usage row's error type). */
  reason: string;
  check?: (t: Tap, res: Raw) => void;
}

function upstreamCases(family: FamilyName): UpstreamCase[] {
  const model = FAMILY_MODELS[family];
  const noKey = (t: Tap, res: Raw): void => {
    t.notMatch(res.text, /sim-key/, 'the provider key is not in the body');
    t.notMatch(JSON.stringify(res.headers), /sim-key/, 'nor in the headers');
  };
  const cases: UpstreamCase[] = [
    {
      name: '400',
      model,
      scenario: { error: { status: 400, message: 'Unsupported value: frobnicate is not a thing' } },
      status: 400,
      type: 'invalid_request_error',
      reason: 'upstream_invalid_request',
      check: (t, res) => t.match(res.json.error.message, /frobnicate is not a thing/, 'carries the upstream message'),
    },
    { name: '401', model, scenario: { error: { status: 401, message: 'Incorrect API key provided: sim-key' } }, status: 502, type: 'upstream_error', reason: 'upstream_auth_failed', check: noKey },
    { name: '403', model, scenario: { error: { status: 403, message: 'Key sim-key may not use this model' } }, status: 502, type: 'upstream_error', reason: 'upstream_auth_failed', check: noKey },
    {
      name: '429 with retry-after',
      model,
      scenario: { error: { status: 429, message: 'Slow down', retryAfterSeconds: 7 } },
      status: 429,
      type: 'rate_limit_exceeded',
      reason: 'upstream_rate_limited',
      check: (t, res) => t.equal(header(res, 'retry-after'), '7', 'retry-after forwarded'),
    },
    { name: '500', model, scenario: { error: { status: 500, message: 'Internal failure' } }, status: 502, type: 'upstream_error', reason: 'upstream_error' },
    { name: '529', model, scenario: { error: { status: 529, message: 'Overloaded' } }, status: 502, type: 'upstream_error', reason: 'upstream_error' },
  ];
  if (family === 'openai') {
    cases.push(
      { name: 'first-byte timeout', model: 'mistral/mistral-small-latest', scenario: { delayMs: 2000 }, status: 504, type: 'timeout_error', reason: 'upstream_timeout' },
      { name: 'connection refused', model: 'dead/model-x', scenario: null, status: 502, type: 'upstream_error', reason: 'upstream_connection_failed' },
    );
  }
  return cases;
}

t.test('upstream errors are normalized (JSON and stream before any output)', async (t) => {
  for (const family of FAMILIES) {
    for (const c of upstreamCases(family)) {
      for (const stream of [false, true]) {
        await t.test(`${family} ${c.name} stream=${stream}`, async (t) => {
          const before = sim.requests.length;
          if (c.scenario) sim.enqueue(c.scenario);
          const res = await post(gw, funded.key, { model: c.model, messages: USER, stream });
          expectError(t, res, c.status, c.type, c.reason);
          c.check?.(t, res);
          if (c.scenario) t.equal(sim.requests.length, before + 1, 'one upstream request');
          const id = header(res, 'x-request-id');
          await until('the usage row', async () => await usageRow(gw, id) !== undefined);
          const row = await usageRow(gw, id);
          t.equal(row?.status, c.status, 'usage row has the status');
          t.equal(row?.errorType, c.reason, 'usage row has the error reason');
          t.equal(row?.costMicros, 0, 'cost 0');
          t.same(await charges(gw, funded.accountId, id), [], 'no ledger charge');
          await noHolds(t, gw, funded);
        });
      }
    }
  }
  // The timed-out requests were dropped by the gateway: the simulator lets go of them.
  await until('the simulator to finish', () => sim.activeRequests() === 0);
});

// ---------------------------------------------------------------------------------------------
// Errors after the SSE headers

interface StreamFault {
  name: string;
  scenario: Scenario;
  type: string;
  /** The error's reason (also the usage row's error type). */
  reason: string;
  status: number;
}

const FAULT_TEXT = 'The quick brown fox jumps over the lazy dog, then naps in the warm afternoon sun.';

function faults(): StreamFault[] {
  // Five family events: OpenAI role + 4 text chunks, Anthropic message_start/block start/ping + 2 deltas, Gemini 5 chunks.
  return [
    { name: 'disconnect', scenario: { text: FAULT_TEXT, disconnectAfterEvents: 5 }, type: 'upstream_error', reason: 'upstream_connection_failed', status: 502 },
    { name: 'malformed event', scenario: { text: FAULT_TEXT, malformedAfterEvents: 5 }, type: 'upstream_error', reason: 'upstream_malformed_response', status: 502 },
    { name: 'error event', scenario: { text: FAULT_TEXT, errorAfterEvents: { events: 5, message: 'overloaded right now' } }, type: 'upstream_error', reason: 'upstream_stream_error', status: 502 },
    { name: 'hang (idle timeout)', scenario: { text: FAULT_TEXT, hangAfterEvents: 5 }, type: 'timeout_error', reason: 'upstream_timeout', status: 504 },
  ];
}

t.test('errors after the SSE headers end the stream with an error chunk, no [DONE]', async (t) => {
  for (const family of FAMILIES) {
    for (const fault of faults()) {
      await t.test(`${family} ${fault.name}`, async (t) => {
        // chunkDelayMs: the fault comes after the first content reached the client (one read
        // with content and the fault, before any byte went out, is a failed attempt instead).
        sim.enqueue({ ...fault.scenario, chunkSize: 4, chunkDelayMs: 20 });
        const res = await post(gw, funded.key, { model: FAMILY_MODELS[family], messages: USER, stream: true });
        t.equal(res.status, 200, 'the SSE headers were already sent');
        t.match(header(res, 'content-type') ?? '', /^text\/event-stream/);
        const frames = sseFrames(res.text);
        for (const frame of frames) for (const line of frame.lines) t.ok(line.startsWith('data: '), 'only data: lines');
        t.notOk(frames.some((f) => f.data === '[DONE]'), 'no [DONE]');
        const last = JSON.parse(frames.at(-1)?.data ?? 'null');
        t.same(Object.keys(last ?? {}), ['error'], 'the last chunk is {error}');
        t.same(Object.keys(last?.error ?? {}).sort(), ['code', 'message', 'param', 'reason', 'type']);
        t.equal(last?.error?.type, fault.type, 'error type');
        t.equal(last?.error?.code, fault.status, 'error code: the integer status');
        t.equal(last?.error?.reason, fault.reason, 'error reason');
        if (fault.name === 'error event') t.match(last?.error?.message, /overloaded right now/, 'carries the upstream message');
        t.notMatch(res.text, /sim-key|\n\s+at /, 'no secret, no stack');

        const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data));
        t.same(chunks[0]?.choices?.[0]?.delta, { role: 'assistant', content: '' }, 'the role chunk came first');
        const delivered = chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
        t.ok(delivered.length > 0, `content received so far is relayed (${JSON.stringify(delivered)})`);
        t.ok(FAULT_TEXT.startsWith(delivered) && delivered.length < FAULT_TEXT.length, 'a proper prefix of the answer');
        t.notOk(chunks.some((c) => c.choices?.[0]?.finish_reason), 'no finish chunk');

        const id = header(res, 'x-request-id');
        await until('the usage row', async () => await usageRow(gw, id) !== undefined);
        const row = await usageRow(gw, id);
        t.equal(row?.status, fault.status, 'usage row has the error status');
        t.equal(row?.errorType, fault.reason, 'and the error reason');
        t.ok((row?.outputTokens ?? 0) > 0, 'bills output tokens');
        t.equal(row?.outputTokens, await countTextTokens(delivered), 'exactly the tokens of the delivered text');
        t.ok((row?.costMicros ?? 0) > 0, 'cost > 0 since text was delivered');
        t.equal((await charges(gw, funded.accountId, id))[0]?.amountMicros, -(row?.costMicros ?? 0), 'one ledger charge of that cost');
        await noHolds(t, gw, funded);
      });
    }
  }
  await until('the simulator to finish', () => sim.activeRequests() === 0);
});

t.test('the openai SDK stream iteration throws an APIError for a mid-stream error', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: funded.key, maxRetries: 0 });
  for (const fault of faults()) {
    sim.enqueue({ ...fault.scenario, chunkSize: 4, chunkDelayMs: 20 });
    const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say something.' }], stream: true });
    let text = '';
    let caught: unknown;
    try {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    } catch (error) {
      caught = error;
    }
    t.ok(caught instanceof OpenAI.APIError, `${fault.name}: APIError thrown (${String(caught)})`);
    t.match((caught as { error?: unknown }).error, { code: fault.status, reason: fault.reason }, `${fault.name}: the APIError carries the envelope`);
    t.ok(text.length > 0 && FAULT_TEXT.startsWith(text), `${fault.name}: the text before the error was delivered`);
  }
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// Client disconnects

t.test('a client that disconnects mid-stream aborts the upstream call; billed 499 for what was delivered', async (t) => {
  for (const family of FAMILIES) {
    await t.test(family, async (t) => {
      const fullText = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
      const fullTokens = await countTextTokens(fullText);
      sim.enqueue({ text: fullText, chunkSize: 4, chunkDelayMs: 20, usage: 'omit' });
      const controller = new AbortController();
      const res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${funded.key}` },
        body: JSON.stringify({ model: FAMILY_MODELS[family], messages: USER, stream: true }),
        signal: controller.signal,
      });
      t.equal(res.statusCode, 200);
      const id = header(res, 'x-request-id');
      let buffer = '';
      let contentChunks = 0;
      try {
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          buffer += chunk.toString('utf8');
          contentChunks = (buffer.match(/"content":"[^"]/g) ?? []).length;
          if (contentChunks >= 4) break;
        }
      } catch {
        // the abort below may surface here
      }
      controller.abort();
      t.ok(contentChunks >= 4, 'read a few content chunks before leaving');
      await until('the upstream call to be aborted', () => sim.activeRequests() === 0);
      t.equal(sim.activeRequests(), 0, 'no upstream request left open');
      await until('the usage row', async () => await usageRow(gw, id) !== undefined);
      const row = await usageRow(gw, id);
      t.equal(row?.status, 499, 'usage row status 499');
      t.equal(row?.errorType, 'client_disconnected');
      t.ok((row?.outputTokens ?? 0) > 0, 'output tokens delivered are billed');
      t.ok((row?.outputTokens ?? Infinity) < fullTokens, `fewer than the full answer (${row?.outputTokens} < ${fullTokens})`);
      t.ok((row?.costMicros ?? 0) > 0, 'cost > 0');
      t.equal((await charges(gw, funded.accountId, id)).length, 1, 'one ledger charge');
      await noHolds(t, gw, funded);
    });
  }
});

t.test('a client that disconnects while a non-streaming call waits: upstream aborted, 499, cost 0', async (t) => {
  const before = sim.requests.length;
  const rowsBefore = new Set((await gw.app.store.usage.list({ limit: 1000 })).map((row) => row.requestId));
  sim.enqueue({ delayMs: 4000 });
  const controller = new AbortController();
  const pending = request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${funded.key}` },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: USER }),
    signal: controller.signal,
  }).catch((error: unknown) => error);
  await until('the upstream request', () => sim.requests.length > before && sim.activeRequests() > 0);
  controller.abort();
  t.ok((await pending) instanceof Error, 'the client request was aborted');
  await until('the upstream call to be aborted', () => sim.activeRequests() === 0);
  t.equal(sim.activeRequests(), 0, 'upstream aborted');
  // The client never saw its request id (it went away before the headers): find the new row.
  const newRow = async (): Promise<UsageRecord | undefined> => (await gw.app.store.usage.list({ limit: 1000 })).find((row) => !rowsBefore.has(row.requestId));
  await until('the usage row', async () => (await newRow()) !== undefined);
  const row = await newRow();
  t.equal(row?.status, 499, 'status 499');
  t.equal(row?.errorType, 'client_disconnected');
  t.equal(row?.costMicros, 0, 'cost 0');
  t.same(await charges(gw, funded.accountId, row?.requestId), [], 'no charge');
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// Request ids

t.test('request ids: on every error, and one per call', async (t) => {
  const noKey = await post(gw, undefined, { model: 'openai/gpt-4o-mini', messages: USER });
  t.match(header(noKey, 'x-request-id'), /^req_[0-9a-f]{32}$/, 'generated request id on a 401');
  const invalid = await post(gw, funded.key, '{');
  t.match(header(invalid, 'x-request-id'), /^req_/, 'request id on a 400');

  const ok1 = await post(gw, funded.key, { model: 'openai/gpt-4o-mini', messages: USER });
  const ok2 = await post(gw, funded.key, { model: 'openai/gpt-4o-mini', messages: USER });
  t.equal(ok1.status, 200);
  t.not(header(ok1, 'x-request-id'), header(ok2, 'x-request-id'), 'each call gets its own id');
  t.equal(ok1.json.id, `chatcmpl-${(header(ok1, 'x-request-id') ?? '').replace(/^req_/, '')}`, 'the completion id follows the request id');

  // The same client-chosen x-request-id twice: two calls, two usage rows with their own ids.
  const shared = `client-${randomUUID()}`;
  const rowsBefore = (await gw.app.store.usage.list({ limit: 1000 })).length;
  const chargesBefore = (await charges(gw, funded.accountId)).length;
  const first = await post(gw, funded.key, { model: 'openai/gpt-4o-mini', messages: USER }, { 'x-request-id': shared });
  const second = await post(gw, funded.key, { model: 'openai/gpt-4o-mini', messages: USER }, { 'x-request-id': shared });
  t.equal(first.status, 200, 'first call succeeds');
  // Regression: the client's x-request-id was the call's id, so a reused one broke billing
  // (500 at settlement, one charge for two answers).
  t.equal(second.status, 200, `second call with the same x-request-id succeeds (got ${second.status} ${second.text.slice(0, 120)})`);
  const allRows = await gw.app.store.usage.list({ limit: 1000 });
  const rows = allRows.slice(0, allRows.length - rowsBefore); // newest first: the rows of these two calls
  t.equal(rows.length, 2, 'two usage rows');
  t.equal(new Set(rows.map((r) => r.requestId)).size, rows.length, "the usage rows' request_id differ");
  t.equal((await charges(gw, funded.accountId)).length - chargesBefore, 2, 'both calls are charged');

  // Streamed, the reused id lets the whole answer through before settlement fails.
  const text = 'A streamed answer that should be billed.';
  sim.enqueue({ text, usage: { input: 100, output: 50 } });
  const requestsBefore = sim.requests.length;
  const streamed = await post(gw, funded.key, { model: 'openai/gpt-4o-mini', messages: USER, stream: true }, { 'x-request-id': shared });
  t.equal(sim.requests.length, requestsBefore + 1, 'the streamed call reached the upstream');
  const frames = sseFrames(streamed.text);
  const delivered = frames
    .filter((f) => f.data.startsWith('{'))
    .map((f) => JSON.parse(f.data).choices?.[0]?.delta?.content ?? '')
    .join('');
  t.equal(delivered, text, 'the client received the whole answer');
  t.equal(frames.at(-1)?.data, '[DONE]', 'the stream ends with [DONE]');
  t.equal((await charges(gw, funded.accountId)).length - chargesBefore, 3, 'the streamed call is charged too');
  await noHolds(t, gw, funded);
});

t.test('Redis configured but unreachable: calls are refused with 503, not admitted unchecked', async (t) => {
  const down = await startTestGateway({ providers: simulatedProviders(sim.url), redis: { url: 'redis://127.0.0.1:1' } });
  t.teardown(() => down.stop());
  const key = await fundedKey(down, { balance: 10 });
  const before = sim.requests.length;
  const res = await post(down, key.key, { model: 'openai/gpt-4o-mini', messages: USER });
  t.equal(res.status, 503);
  t.equal(res.json?.error?.reason, 'limits_unavailable');
  t.equal(res.json?.error?.code, 503);
  t.equal(sim.requests.length, before, 'nothing reached the provider');
});
