import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { request } from 'undici';
import { countTextTokens, promptTokenBound, promptTokenEstimate } from '../../src/core/tokens.js';
import { openAiFamily } from '../../src/providers/openai/index.js';
import type { UsageRecord } from '../../src/store/usage.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator, type SimUsage } from '../support/simulator/server.js';
import { balanceMicros, ceilMillion, charges, header, inr, noHolds, postJson, until, usageRow, type RawResponse } from '../support/e2e.js';

/**
 * End-to-end parity of the three ingress formats (OpenAI chat completions, OpenAI Responses,
 * Anthropic Messages) on what the gateway does around the model call: exact µINR bills
 * (JSON and streamed, raw HTTP and the official clients), 402 insufficient_credits and
 * budget_exceeded, one rate-limit window per key across formats, client disconnects (499),
 * and holds. Each format only changes the wire shape; the money must not change.
 */

// ---------------------------------------------------------------------------------------------
// Helpers

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

type Format = 'chat' | 'responses' | 'messages';
const FORMATS: Format[] = ['chat', 'responses', 'messages'];
const PATH: Record<Format, string> = { chat: '/v1/chat/completions', responses: '/v1/responses', messages: '/v1/messages' };
const ENDPOINT: Record<Format, string> = { chat: 'chat.completions', responses: 'responses', messages: 'messages' };
/** The field each format names its output limit with. */
const LIMIT_FIELD: Record<Format, string> = { chat: 'max_tokens', responses: 'max_output_tokens', messages: 'max_tokens' };

const MINI = 'openai/gpt-4o-mini';
const HAIKU = 'anthropic/claude-haiku-4-5';
const PROMPT = 'hi';
/** Messages requires max_tokens; the other formats get the same limit so holds are alike. */
const DEFAULT_LIMIT = 1000;

type Raw = RawResponse;

interface CallOptions {
  model?: string;
  prompt?: string;
  maxTokens?: number | undefined;
  stream?: boolean;
}

/** The same call in each format's request shape. */
function bodyFor(format: Format, options: CallOptions = {}): Record<string, unknown> {
  const model = options.model ?? MINI;
  const prompt = options.prompt ?? PROMPT;
  const limit = options.maxTokens === undefined ? {} : { [LIMIT_FIELD[format]]: options.maxTokens };
  const stream = options.stream ? { stream: true } : {};
  switch (format) {
    case 'chat':
      return { model, messages: [{ role: 'user', content: prompt }], ...limit, ...stream, ...(options.stream ? { stream_options: { include_usage: true } } : {}) };
    case 'responses':
      return { model, input: prompt, ...limit, ...stream };
    case 'messages':
      return { model, messages: [{ role: 'user', content: prompt }], ...limit, ...stream };
  }
}

/** Chat and Responses authenticate with a bearer key; raw Messages calls use x-api-key as Anthropic's 0.x clients do. */
function authHeaders(format: Format, key: string): Record<string, string> {
  return format === 'messages' ? { 'x-api-key': key, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${key}` };
}

async function post(gw: TestGateway, format: Format, key: string, body: unknown): Promise<Raw> {
  return postJson(`${gw.url}${PATH[format]}`, authHeaders(format, key), body);
}

/** µINR per 1M tokens, written out by hand from config/models.yaml. */
const PRICE = {
  mini: { input: 12_600_000n, output: 50_400_000n, cacheRead: 6_300_000n },
  haiku: { input: 84_000_000n, output: 420_000_000n, cacheRead: 8_400_000n, cacheWrite: 105_000_000n },
};

async function rowsOfKey(gw: TestGateway, keyId: string): Promise<UsageRecord[]> {
  return (await gw.app.store.usage.list({ limit: 1000 })).filter((row) => row.apiKeyId === keyId);
}

async function credits(gw: TestGateway, key: string): Promise<unknown> {
  return (await gw.http('GET', '/v1/credits', { token: key })).body;
}

/** What must be equal across formats in a usage row (everything but ids, endpoint and time). */
function billed(row: UsageRecord | undefined) {
  if (!row) return undefined;
  const { model, provider, stream, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, costMicros, status, errorType } = row;
  return { model, provider, stream, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, costMicros, status, errorType };
}

/** The usage a format reports, mapped back to canonical counts (each format counts input its own way). */
function reportedUsage(format: Format, usage: any): SimUsage & { cacheRead: number; cacheWrite: number } {
  switch (format) {
    case 'chat':
      return { input: usage?.prompt_tokens, output: usage?.completion_tokens, cacheRead: usage?.prompt_tokens_details?.cached_tokens, cacheWrite: 0 };
    case 'responses':
      return { input: usage?.input_tokens, output: usage?.output_tokens, cacheRead: usage?.input_tokens_details?.cached_tokens, cacheWrite: 0 };
    case 'messages':
      // Anthropic's input_tokens exclude cache reads and writes.
      return {
        input: usage?.input_tokens + usage?.cache_read_input_tokens + usage?.cache_creation_input_tokens,
        output: usage?.output_tokens,
        cacheRead: usage?.cache_read_input_tokens,
        cacheWrite: usage?.cache_creation_input_tokens,
      };
  }
}

/** The error type Anthropic clients expect for a status (docs.anthropic.com "Errors"). */
const ANTHROPIC_TYPE: Record<number, string> = { 400: 'invalid_request_error', 402: 'billing_error', 429: 'rate_limit_error' };

/**
 * The error envelope of each format: {error:{message,type,code,reason,param}} with `code` the
 * integer HTTP status; messages adds the top-level `"type": "error"` and uses Anthropic's error
 * type, while `reason` keeps the gateway's precise cause (insufficient_credits, budget_exceeded,
 * rate_limit_exceeded) in every format.
 */
function expectErrorBody(t: Tap, format: Format, res: Raw, status: number, type: string, reason: string): void {
  t.equal(res.status, status, `${format}: status ${status} (${res.text.slice(0, 200)})`);
  t.match(header(res, 'content-type') ?? '', /^application\/json/, `${format}: the error is JSON`);
  t.same(Object.keys(res.json ?? {}).sort(), format === 'messages' ? ['error', 'type'] : ['error'], `${format}: top-level keys`);
  if (format === 'messages') t.equal(res.json?.type, 'error', 'messages: top-level "type": "error"');
  t.same(Object.keys(res.json?.error ?? {}).sort(), ['code', 'message', 'param', 'reason', 'type'], `${format}: error {message, type, code, reason, param}`);
  t.equal(res.json?.error?.type, format === 'messages' ? ANTHROPIC_TYPE[status] : type, `${format}: error.type`);
  t.equal(res.json?.error?.code, status, `${format}: error.code is the integer status`);
  t.equal(res.json?.error?.reason, reason, `${format}: error.reason`);
  t.match(header(res, 'x-request-id'), /^req_/, `${format}: x-request-id`);
}

/** Reads an SSE response frame by frame as the bytes arrive; null once it ended. */
function sseReader(body: AsyncIterable<Buffer>): () => Promise<{ event: string | undefined; data: string } | null> {
  const iterator = body[Symbol.asyncIterator]();
  let buffer = '';
  const parse = (frame: string) => {
    const lines = frame.split('\n');
    const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
    const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
    return { event, data };
  };
  return async () => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end !== -1) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        return parse(frame);
      }
      const next = await iterator.next();
      if (next.done) return buffer.length > 0 ? parse(buffer) : null;
      buffer += next.value.toString('utf8');
    }
  };
}

/**
 * The frame each format writes when the gateway handles the call's end: after settlement and
 * before the final event (chat: the finish chunk before the usage chunk and [DONE]; responses:
 * the last item's output_item.done before response.completed; messages: message_delta before
 * message_stop).
 */
function isClosingFrame(format: Format, frame: { event: string | undefined; data: string }): boolean {
  switch (format) {
    case 'chat':
      return frame.data !== '[DONE]' && JSON.parse(frame.data).choices?.[0]?.finish_reason != null;
    case 'responses':
      return frame.event === 'response.output_item.done';
    case 'messages':
      return frame.event === 'message_delta';
  }
}

// ---------------------------------------------------------------------------------------------

const sim = await ProviderSimulator.start();
t.teardown(() => sim.close());
const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
t.teardown(() => gw.stop());

/** Every funded key of this file, for the final no-holds check. */
const used: FundedKey[] = [];
async function fund(options: Parameters<typeof fundedKey>[1]): Promise<FundedKey> {
  const funded = await fundedKey(gw, options);
  used.push(funded);
  return funded;
}

interface CostCase {
  name: string;
  model: string;
  usage: SimUsage;
  micros: number;
  header: string;
}

const CASES: [CostCase, CostCase] = [
  {
    name: 'gpt-4o-mini 1000 in / 500 out: 1000 × 12.6 + 500 × 50.4 = 37 800 µINR',
    model: MINI,
    usage: { input: 1000, output: 500 },
    micros: ceilMillion(1000n * PRICE.mini.input + 500n * PRICE.mini.output),
    header: '0.0378',
  },
  {
    name: 'claude-haiku-4-5 with cache: 500 × 84 + 300 read × 8.4 + 200 write × 105 + 100 out × 420 = 107 520 µINR',
    model: HAIKU,
    usage: { input: 1000, output: 100, cacheRead: 300, cacheWrite: 200 },
    micros: ceilMillion(500n * PRICE.haiku.input + 300n * PRICE.haiku.cacheRead + 200n * PRICE.haiku.cacheWrite + 100n * PRICE.haiku.output),
    header: '0.10752',
  },
];

t.test('hand-computed costs', async (t) => {
  t.same(
    CASES.map((c) => c.micros),
    [37_800, 107_520],
    'µINR by hand',
  );
});

t.test('exact cost, JSON: the same usage is the same bill in every format', async (t) => {
  for (const c of CASES) {
    await t.test(c.name, async (t) => {
      const funded = await fund({ balance: 10 });
      const rows: Record<string, ReturnType<typeof billed>> = {};
      let expectedBalance = 10_000_000;
      for (const format of FORMATS) {
        await t.test(format, async (t) => {
          const before = await credits(gw, funded.key);
          t.same(before, { balance: inr(expectedBalance), currency: 'INR' }, '/v1/credits before');
          sim.enqueue({ usage: c.usage });
          const res = await post(gw, format, funded.key, bodyFor(format, { model: c.model, maxTokens: DEFAULT_LIMIT }));
          t.equal(res.status, 200, res.status === 200 ? 'status 200' : res.text.slice(0, 300));
          t.equal(header(res, 'x-gateway-cost-inr'), c.header, 'x-gateway-cost-inr');
          t.equal(header(res, 'x-gateway-model'), c.model, 'x-gateway-model');
          t.same(
            reportedUsage(format, res.json?.usage),
            { input: c.usage.input, output: c.usage.output, cacheRead: c.usage.cacheRead ?? 0, cacheWrite: format === 'messages' ? (c.usage.cacheWrite ?? 0) : 0 },
            'the usage in the response body',
          );
          const id = header(res, 'x-request-id');
          const row = await usageRow(gw, id);
          t.ok(row, 'a usage row with the call’s request id');
          t.equal(row?.endpoint, ENDPOINT[format], `endpoint ${ENDPOINT[format]}`);
          t.equal(row?.apiKeyId, funded.keyId, 'the row names the key');
          t.match(billed(row), {
            model: c.model,
            stream: false,
            inputTokens: c.usage.input,
            outputTokens: c.usage.output,
            cacheReadTokens: c.usage.cacheRead ?? 0,
            cacheWriteTokens: c.usage.cacheWrite ?? 0,
            costMicros: c.micros,
            status: 200,
            errorType: null,
          });
          rows[format] = billed(row);
          const charged = await charges(gw, funded.accountId, id);
          t.equal(charged.length, 1, 'one ledger charge');
          t.equal(charged[0]?.amountMicros, -c.micros, 'charged exactly the cost');
          t.equal(charged[0]?.apiKeyId, funded.keyId);
          expectedBalance -= c.micros;
          t.equal(charged[0]?.balanceAfterMicros, expectedBalance, 'balance after the charge');
          t.same(await credits(gw, funded.key), { balance: inr(expectedBalance), currency: 'INR' }, '/v1/credits dropped by exactly the cost');
        });
      }
      t.same(rows.responses, rows.chat, 'responses row = chat row');
      t.same(rows.messages, rows.chat, 'messages row = chat row');
      t.equal((await charges(gw, funded.accountId)).length, 3, 'three charges in all');
      t.equal(await balanceMicros(gw, funded.accountId), 10_000_000 - 3 * c.micros, 'wallet: 10 − 3 × cost');
      t.equal(await gw.app.store.ledger.sum(funded.accountId), await balanceMicros(gw, funded.accountId), 'balance = ledger sum');
      t.equal((await gw.app.store.apiKeys.byId(funded.keyId))?.spentMicros, 3 * c.micros, 'key spent = Σ costs');
      await noHolds(t, gw, funded);
    });
  }
});

t.test('exact cost, streamed: billed the same, settled before the final event is read', async (t) => {
  const FINAL: Record<Format, (frame: { event: string | undefined; data: string }) => boolean> = {
    chat: (f) => f.data === '[DONE]',
    responses: (f) => f.event === 'response.completed',
    messages: (f) => f.event === 'message_stop',
  };
  for (const c of CASES) {
    await t.test(c.name, async (t) => {
      const funded = await fund({ balance: 10 });
      const rows: Record<string, ReturnType<typeof billed>> = {};
      for (const format of FORMATS) {
        await t.test(format, async (t) => {
          const before = await balanceMicros(gw, funded.accountId);
          sim.enqueue({ usage: c.usage, text: 'Streaming for money.' });
          const res = await request(`${gw.url}${PATH[format]}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...authHeaders(format, funded.key) },
            body: JSON.stringify(bodyFor(format, { model: c.model, maxTokens: DEFAULT_LIMIT, stream: true })),
          });
          t.equal(res.statusCode, 200);
          t.match(header(res, 'content-type'), /^text\/event-stream/);
          const id = header(res, 'x-request-id');
          const next = sseReader(res.body as AsyncIterable<Buffer>);
          const head: { event: string | undefined; data: string }[] = [];
          for (let frame = await next(); frame !== null; frame = await next()) {
            head.push(frame);
            t.notOk(FINAL[format](frame), 'the final event does not come before the closing frame');
            if (isClosingFrame(format, frame)) break;
          }
          t.ok(head.length > 0 && isClosingFrame(format, head.at(-1) as { event: string | undefined; data: string }), 'read up to the frame before the final event');
          // Nothing more read yet: the call is already settled.
          const row = await usageRow(gw, id);
          t.equal(row?.costMicros, c.micros, 'usage row with the exact cost before the final event is read');
          t.equal((await charges(gw, funded.accountId, id))[0]?.amountMicros, -c.micros, 'ledger charge before the final event is read');
          t.equal(await balanceMicros(gw, funded.accountId), before - c.micros, 'balance lowered before the final event is read');
          const rest: { event: string | undefined; data: string }[] = [];
          for (let frame = await next(); frame !== null; frame = await next()) rest.push(frame);
          const last = rest.at(-1);
          t.ok(last && FINAL[format](last), `the stream ends with its final event (${last?.event ?? last?.data.slice(0, 40)})`);
          t.equal(rest.filter((f) => FINAL[format](f)).length, 1, 'exactly one final event');

          // The usage the stream reports.
          let usage: unknown;
          if (format === 'chat') usage = JSON.parse(rest.at(-2)?.data ?? '{}').usage;
          if (format === 'responses') usage = JSON.parse(last?.data ?? '{}').response?.usage;
          if (format === 'messages') usage = JSON.parse(head.at(-1)?.data ?? '{}').usage;
          t.same(
            reportedUsage(format, usage),
            { input: c.usage.input, output: c.usage.output, cacheRead: c.usage.cacheRead ?? 0, cacheWrite: format === 'messages' ? (c.usage.cacheWrite ?? 0) : 0 },
            'the usage the stream reports',
          );
          t.equal(row?.endpoint, ENDPOINT[format], `endpoint ${ENDPOINT[format]}`);
          t.match(billed(row), { stream: true, status: 200, inputTokens: c.usage.input, outputTokens: c.usage.output, errorType: null });
          rows[format] = billed(row);
          t.equal((await charges(gw, funded.accountId, id)).length, 1, 'one ledger charge');
        });
      }
      t.same(rows.responses, rows.chat, 'responses row = chat row');
      t.same(rows.messages, rows.chat, 'messages row = chat row');
      t.equal(await balanceMicros(gw, funded.accountId), 10_000_000 - 3 * c.micros, 'wallet: 10 − 3 × cost');
      t.same(await credits(gw, funded.key), { balance: inr(10_000_000 - 3 * c.micros), currency: 'INR' }, '/v1/credits');
      await noHolds(t, gw, funded);
    });
  }
});

t.test('official clients (openai v6, @anthropic-ai/sdk v1): the same bill', async (t) => {
  const c = CASES[0];
  const funded = await fund({ balance: 10 });
  const openai = new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  // The 1.x SDK sends Authorization: Bearer and anthropic-version 2026-10-21.
  const anthropic = new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 });
  const seen: { format: Format; stream: boolean; id: string | null }[] = [];
  const rowIds = async (): Promise<Set<string>> => new Set((await rowsOfKey(gw, funded.keyId)).map((row) => row.requestId));
  const newRowId = async (before: Set<string>): Promise<string | null> => {
    const fresh = [...(await rowIds())].filter((id) => !before.has(id));
    return fresh.length === 1 ? (fresh[0] as string) : null;
  };

  await t.test('chat.completions.create', async (t) => {
    sim.enqueue({ usage: c.usage });
    const { data, response } = await openai.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: PROMPT }], max_tokens: DEFAULT_LIMIT }).withResponse();
    t.equal(response.headers.get('x-gateway-cost-inr'), c.header);
    t.equal(data.usage?.prompt_tokens, c.usage.input);
    t.equal(data.usage?.completion_tokens, c.usage.output);
    seen.push({ format: 'chat', stream: false, id: response.headers.get('x-request-id') });
  });
  await t.test('responses.create', async (t) => {
    sim.enqueue({ usage: c.usage });
    const { data, response } = await openai.responses.create({ model: MINI, input: PROMPT, max_output_tokens: DEFAULT_LIMIT }).withResponse();
    t.equal(response.headers.get('x-gateway-cost-inr'), c.header);
    t.equal(data.status, 'completed');
    t.equal(data.usage?.input_tokens, c.usage.input);
    t.equal(data.usage?.output_tokens, c.usage.output);
    t.ok(data.output_text.length > 0, 'output_text');
    seen.push({ format: 'responses', stream: false, id: response.headers.get('x-request-id') });
  });
  await t.test('messages.create', async (t) => {
    sim.enqueue({ usage: c.usage });
    const { data, response } = await anthropic.messages.create({ model: MINI, max_tokens: DEFAULT_LIMIT, messages: [{ role: 'user', content: PROMPT }] }).withResponse();
    t.equal(response.headers.get('x-gateway-cost-inr'), c.header);
    t.equal(data.usage.input_tokens, c.usage.input);
    t.equal(data.usage.output_tokens, c.usage.output);
    seen.push({ format: 'messages', stream: false, id: response.headers.get('x-request-id') });
  });
  await t.test('chat.completions.stream', async (t) => {
    sim.enqueue({ usage: c.usage });
    const stream = openai.chat.completions.stream({ model: MINI, messages: [{ role: 'user', content: PROMPT }], max_tokens: DEFAULT_LIMIT, stream_options: { include_usage: true } });
    const before = await rowIds();
    const final = await stream.finalChatCompletion();
    t.equal(final.usage?.completion_tokens, c.usage.output);
    t.equal(final.choices[0]?.finish_reason, 'stop');
    // ChatCompletionStream does not expose the response headers: the call's row is the new one.
    seen.push({ format: 'chat', stream: true, id: await newRowId(before) });
  });
  await t.test('responses.stream', async (t) => {
    sim.enqueue({ usage: c.usage });
    const stream = openai.responses.stream({ model: MINI, input: PROMPT, max_output_tokens: DEFAULT_LIMIT });
    const before = await rowIds();
    const final = await stream.finalResponse();
    t.equal(final.status, 'completed');
    t.equal(final.usage?.output_tokens, c.usage.output);
    t.ok(final.output_text.length > 0, 'output_text');
    seen.push({ format: 'responses', stream: true, id: await newRowId(before) });
  });
  await t.test('messages.stream', async (t) => {
    sim.enqueue({ usage: c.usage });
    const stream = anthropic.messages.stream({ model: MINI, max_tokens: DEFAULT_LIMIT, messages: [{ role: 'user', content: PROMPT }] });
    const final = await stream.finalMessage();
    t.equal(final.stop_reason, 'end_turn');
    t.equal(final.usage.output_tokens, c.usage.output);
    t.equal(final.usage.input_tokens, c.usage.input, 'input tokens from message_delta');
    const { response } = await stream.withResponse();
    seen.push({ format: 'messages', stream: true, id: response.headers.get('x-request-id') });
  });

  t.equal(seen.length, 6, 'six calls');
  for (const call of seen) {
    const row = await usageRow(gw, call.id ?? undefined);
    t.equal(row?.endpoint, ENDPOINT[call.format], `${call.format} stream=${call.stream}: endpoint`);
    t.same(billed(row), { ...billed(await usageRow(gw, seen[0]?.id ?? undefined)), stream: call.stream }, `${call.format} stream=${call.stream}: billed as the first`);
    t.equal((await charges(gw, funded.accountId, call.id ?? undefined))[0]?.amountMicros, -c.micros, `${call.format} stream=${call.stream}: charge`);
  }
  t.equal(await balanceMicros(gw, funded.accountId), 10_000_000 - 6 * c.micros, 'wallet: 10 − 6 × 37 800 µINR');
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// 402

/** The prompt bound the gateway holds for the single PROMPT user message (the same in every format). */
const BOUND = promptTokenBound({ messages: [{ role: 'user', content: [{ type: 'text', text: PROMPT }] }] });
function worstMini(maxTokens: number): number {
  return ceilMillion(BigInt(BOUND) * PRICE.mini.input + BigInt(maxTokens) * PRICE.mini.output);
}
function affordableMini(micros: number): number {
  return Number((BigInt(micros) * 1_000_000n - BigInt(BOUND) * PRICE.mini.input) / PRICE.mini.output);
}
/**
 * The tight prompt bound admission tries before it refuses a call the fast (byte) bound does not
 * fit (src/core/tokens.ts): the prompt's cl100k tokens times the OpenAI family's margin, plus
 * framing (4 per message, 8 per call). A 402 states the largest max_tokens by this bound.
 */
const TIGHT = await promptTokenEstimate({ messages: [{ role: 'user', content: [{ type: 'text', text: PROMPT }] }] }, openAiFamily.promptTokenMargin);
function worstTight(maxTokens: number): number {
  return ceilMillion(BigInt(TIGHT) * PRICE.mini.input + BigInt(maxTokens) * PRICE.mini.output);
}
function affordableTight(micros: number): number {
  return Number((BigInt(micros) * 1_000_000n - BigInt(TIGHT) * PRICE.mini.input) / PRICE.mini.output);
}

t.test('402 insufficient_credits: an empty wallet, in every format (JSON and stream)', async (t) => {
  const funded = await fund({ balance: 0 });
  const before = sim.requests.length;
  const messages = new Set<string>();
  for (const format of FORMATS) {
    for (const stream of [false, true]) {
      const res = await post(gw, format, funded.key, bodyFor(format, { maxTokens: 1, stream }));
      expectErrorBody(t, format, res, 402, 'insufficient_credits', 'insufficient_credits');
      t.equal(res.json?.error?.param, null, `${format}: param null`);
      messages.add(res.json?.error?.message);
    }
  }
  t.same([...messages], ['insufficient credits: the wallet balance is ₹0.00; top up the wallet'], 'one message, stating the balance, in every format');
  t.equal(sim.requests.length, before, 'nothing upstream');
  t.same(await rowsOfKey(gw, funded.keyId), [], 'no usage rows');
  t.same(await charges(gw, funded.accountId), [], 'no charges');
  await noHolds(t, gw, funded);
});

t.test('402 insufficient_credits: a max tokens the wallet cannot cover, in every format', async (t) => {
  // The fast bound (1010 tokens) would cover 1731; the tight bound decides, and says more.
  t.equal(affordableMini(100_000), 1731, 'by hand, fast bound: ⌊(100 000 − 1010 × 12.6) / 50.4⌋ = 1731');
  t.equal(TIGHT, Math.ceil(1 * openAiFamily.promptTokenMargin.ratio) + 4 + 8, "tight bound: 'hi' is 1 cl100k token, times the margin, plus framing");
  const affordable = affordableTight(100_000);
  t.ok(affordable > 1731, `the tight bound covers more (${affordable})`);
  t.ok(worstTight(affordable) <= 100_000 && worstTight(affordable + 1) > 100_000, 'it is the largest that fits');
  // The same message in every format, naming the format's own limit field.
  const expectedFor = (format: Format): string => `insufficient credits: the wallet balance is ₹0.10, which covers at most ${LIMIT_FIELD[format]}=${affordable} for ${MINI}; top up the wallet`;
  for (const format of FORMATS) {
    await t.test(`${format} (${LIMIT_FIELD[format]})`, async (t) => {
      const expected = expectedFor(format);
      const funded = await fund({ balance: 0.1 });
      const before = sim.requests.length;
      for (const maxTokens of [16_000, affordable + 1]) {
        for (const stream of [false, true]) {
          const res = await post(gw, format, funded.key, bodyFor(format, { maxTokens, stream }));
          expectErrorBody(t, format, res, 402, 'insufficient_credits', 'insufficient_credits');
          t.equal(res.json?.error?.message, expected, `${LIMIT_FIELD[format]}=${maxTokens} stream=${stream}: balance and the largest affordable max_tokens`);
        }
      }
      t.equal(sim.requests.length, before, 'nothing upstream');
      sim.enqueue({ usage: { input: 10, output: 5 } });
      const fits = await post(gw, format, funded.key, bodyFor(format, { maxTokens: affordable }));
      t.equal(fits.status, 200, `the stated max_tokens is accepted (${fits.text.slice(0, 200)})`);
      t.equal((sim.requests.at(-1)?.body as Record<string, unknown>).max_completion_tokens, affordable, 'sent upstream as the limit');
      await noHolds(t, gw, funded);
    });
  }
});

t.test('402 budget_exceeded: a key that used its budget, whichever format used it', async (t) => {
  const maxTokens = 10;
  const callMicros = worstMini(maxTokens);
  t.equal(callMicros, 13_230, '1010 × 12.6 + 10 × 50.4 = 13 230 µINR');
  const messages = new Set<string>();
  for (const spender of FORMATS) {
    await t.test(`spent through ${spender}`, async (t) => {
      const funded = await fund({ balance: 10, key: { budget: inr(callMicros) } });
      sim.enqueue({ usage: { input: BOUND, output: maxTokens } });
      const first = await post(gw, spender, funded.key, bodyFor(spender, { maxTokens }));
      t.equal(first.status, 200, 'a call costing exactly the budget');
      t.equal((await gw.app.store.apiKeys.byId(funded.keyId))?.spentMicros, callMicros, 'spent = budget');
      const before = sim.requests.length;
      for (const format of FORMATS) {
        for (const stream of [false, true]) {
          const res = await post(gw, format, funded.key, bodyFor(format, { maxTokens: 1, stream }));
          expectErrorBody(t, format, res, 402, 'budget_exceeded', 'budget_exceeded');
          messages.add(res.json?.error?.message);
        }
      }
      t.equal(sim.requests.length, before, 'nothing upstream');
      t.equal((await rowsOfKey(gw, funded.keyId)).length, 1, 'only the first call has a usage row');
      await noHolds(t, gw, funded);
    });
  }
  t.same([...messages], ["this API key has used its budget of ₹0.01323: raise the key's budget or use another key"], 'one message in every format');
});

t.test('402 budget_exceeded: a max tokens the key budget cannot cover, in every format', async (t) => {
  const funded = await fund({ balance: 10, key: { budget: 0.1 } });
  const before = sim.requests.length;
  for (const format of FORMATS) {
    const expected = `this API key's remaining budget (₹0.10) covers at most ${LIMIT_FIELD[format]}=${affordableTight(100_000)} for ${MINI}`;
    for (const stream of [false, true]) {
      const res = await post(gw, format, funded.key, bodyFor(format, { maxTokens: 16_000, stream }));
      expectErrorBody(t, format, res, 402, 'budget_exceeded', 'budget_exceeded');
      t.equal(res.json?.error?.message, expected, `${format} stream=${stream}: the remaining budget and the largest affordable max_tokens`);
    }
  }
  t.equal(sim.requests.length, before, 'nothing upstream');
  await noHolds(t, gw, funded);
});

t.test('402 through the official clients', async (t) => {
  const funded = await fund({ balance: 0 });
  const openai = new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const anthropic = new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 });
  const caught = async (call: () => Promise<unknown>): Promise<any> => {
    try {
      await call();
    } catch (error) {
      return error;
    }
    return undefined;
  };
  const chat = await caught(() => openai.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: PROMPT }] }));
  t.ok(chat instanceof OpenAI.APIError, 'chat: APIError');
  t.match(chat, { status: 402, code: 402, type: 'insufficient_credits' }, 'chat: status, code, type');
  t.equal(chat?.error?.reason, 'insufficient_credits', 'chat: the reason');
  const responses = await caught(() => openai.responses.create({ model: MINI, input: PROMPT }));
  t.ok(responses instanceof OpenAI.APIError, 'responses: APIError');
  t.match(responses, { status: 402, code: 402, type: 'insufficient_credits' }, 'responses: status, code, type');
  t.equal(responses?.error?.reason, 'insufficient_credits', 'responses: the reason');
  const messages = await caught(() => anthropic.messages.create({ model: MINI, max_tokens: 10, messages: [{ role: 'user', content: PROMPT }] }));
  t.ok(messages instanceof Anthropic.APIError, 'messages: APIError');
  t.equal(messages?.status, 402, 'messages: status');
  t.match(messages?.error, { type: 'error', error: { type: 'billing_error', code: 402, reason: 'insufficient_credits' } }, 'messages: the Anthropic error body');
  t.equal(messages?.error?.error?.message, chat?.error?.message, 'messages: the same message as chat');
  t.equal(chat?.message.replace(/^402 /, ''), responses?.message.replace(/^402 /, ''), 'the same message through both OpenAI endpoints');
  await noHolds(t, gw, funded);
});

t.test('a max tokens above the model’s own limit: 400 naming the field of the format, before any hold', async (t) => {
  const funded = await fund({ balance: 10 });
  const before = sim.requests.length;
  // The messages format lowers it to the limit instead (issue 27: max-tokens-clamp.test.ts).
  for (const format of FORMATS.filter((f) => f !== 'messages')) {
    const res = await post(gw, format, funded.key, bodyFor(format, { maxTokens: 20_000 }));
    expectErrorBody(t, format, res, 400, 'invalid_request_error', 'invalid_field');
    // Regression: admission named `max_tokens` whatever the format.
    t.equal(res.json?.error?.param, LIMIT_FIELD[format], `${format}: param names ${LIMIT_FIELD[format]}`);
    t.equal(res.json?.error?.message, `${LIMIT_FIELD[format]}: must be at most 16384 for ${MINI}`, `${format}: the message names ${LIMIT_FIELD[format]}`);
  }
  t.equal(sim.requests.length, before, 'nothing upstream');
  t.same(await rowsOfKey(gw, funded.keyId), [], 'no usage rows');
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// 429

t.test('429 rate_limit_exceeded: one window per key across the three formats', async (t) => {
  const orders: Format[][] = [
    ['chat', 'responses', 'messages'],
    ['responses', 'messages', 'chat'],
    ['messages', 'chat', 'responses'],
  ];
  for (const order of orders) {
    await t.test(order.join(' → '), async (t) => {
      const funded = await fund({ balance: 10, key: { rate_limit: 3 } });
      const before = sim.requests.length;
      const remaining: Array<string | undefined> = [];
      for (const [i, format] of order.entries()) {
        const res = await post(gw, format, funded.key, bodyFor(format, { maxTokens: 5, stream: i === 1 }));
        t.equal(res.status, 200, `call ${i + 1} (${format}) succeeds`);
        t.equal(header(res, 'x-ratelimit-limit-requests'), '3', `${format}: x-ratelimit-limit-requests`);
        t.match(header(res, 'x-ratelimit-reset-requests'), /^\d+(\.\d+)?s$/, `${format}: x-ratelimit-reset-requests`);
        remaining.push(header(res, 'x-ratelimit-remaining-requests'));
      }
      t.same(remaining, ['2', '1', '0'], 'x-ratelimit-remaining-requests counts down across formats');
      const messages: string[] = [];
      for (const format of FORMATS) {
        for (const stream of [false, true]) {
          const limited = await post(gw, format, funded.key, bodyFor(format, { maxTokens: 5, stream }));
          expectErrorBody(t, format, limited, 429, 'rate_limit_exceeded', 'rate_limit_exceeded');
          const retryAfter = Number(header(limited, 'retry-after'));
          t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${format}: retry-after in 1..60 (${header(limited, 'retry-after')})`);
          t.equal(header(limited, 'x-ratelimit-limit-requests'), '3', `${format}: x-ratelimit-limit-requests on the 429`);
          t.equal(header(limited, 'x-ratelimit-remaining-requests'), '0', `${format}: x-ratelimit-remaining-requests on the 429`);
          t.match(header(limited, 'x-ratelimit-reset-requests'), /^\d+(\.\d+)?s$/, `${format}: x-ratelimit-reset-requests on the 429`);
          messages.push(String(limited.json?.error?.message).replace(/\d+ s$/, 'N s'));
        }
      }
      t.same(new Set(messages), new Set(['rate limit of 3 requests per minute reached for this API key: retry in N s']), 'the same message in every format');
      t.equal(sim.requests.length, before + 3, 'only the three admitted calls reached the upstream');
      t.equal((await rowsOfKey(gw, funded.keyId)).length, 3, 'three usage rows');
      t.same(new Set((await rowsOfKey(gw, funded.keyId)).map((row) => row.endpoint)), new Set(Object.values(ENDPOINT)), 'one per endpoint');
      t.equal((await charges(gw, funded.accountId)).length, 3, 'three charges');
      await noHolds(t, gw, funded);
    });
  }
});

t.test('429 through the official clients', async (t) => {
  const funded = await fund({ balance: 10, key: { rate_limit: 1 } });
  const openai = new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const anthropic = new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 });
  const ok = await anthropic.messages.create({ model: MINI, max_tokens: 5, messages: [{ role: 'user', content: PROMPT }] });
  t.equal(ok.type, 'message', 'the one allowed call');
  const errors: any[] = [];
  for (const call of [
    () => openai.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: PROMPT }] }),
    () => openai.responses.create({ model: MINI, input: PROMPT }),
    () => anthropic.messages.create({ model: MINI, max_tokens: 5, messages: [{ role: 'user', content: PROMPT }] }),
  ]) {
    errors.push(await call().then(() => undefined, (error: unknown) => error));
  }
  t.ok(errors[0] instanceof OpenAI.RateLimitError, 'chat: RateLimitError');
  t.ok(errors[1] instanceof OpenAI.RateLimitError, 'responses: RateLimitError');
  t.ok(errors[2] instanceof Anthropic.RateLimitError, 'messages: RateLimitError');
  for (const error of errors) {
    t.ok(Number(error?.headers?.get?.('retry-after')) >= 1, 'retry-after header');
    t.equal(error?.headers?.get?.('x-ratelimit-remaining-requests'), '0');
  }
  for (const [i, format] of (['chat', 'responses'] as const).entries()) {
    t.match(errors[i]?.error, { type: 'rate_limit_exceeded', code: 429, reason: 'rate_limit_exceeded' }, `${format}: the OpenAI error object`);
  }
  t.match(errors[2]?.error, { type: 'error', error: { type: 'rate_limit_error', code: 429, reason: 'rate_limit_exceeded' } }, 'messages: the Anthropic error body');
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// Client disconnects

/** A delta of the answer text in each format's stream. */
const DELTA: Record<Format, RegExp> = {
  chat: /"content":"[^"]/g,
  responses: /event: response\.output_text\.delta\n/g,
  messages: /event: content_block_delta\n/g,
};

t.test('a client that disconnects mid-stream aborts the upstream call; 499 with the delivered tokens, in every format', async (t) => {
  const funded = await fund({ balance: 10 });
  const fullText = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
  const fullTokens = await countTextTokens(fullText);
  for (const model of [MINI, HAIKU]) {
    for (const format of FORMATS) {
      await t.test(`${format} on ${model}`, async (t) => {
        sim.enqueue({ text: fullText, chunkSize: 4, chunkDelayMs: 20, usage: 'omit' });
        const controller = new AbortController();
        const res = await request(`${gw.url}${PATH[format]}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...authHeaders(format, funded.key) },
          body: JSON.stringify(bodyFor(format, { model, maxTokens: DEFAULT_LIMIT, stream: true })),
          signal: controller.signal,
        });
        t.equal(res.statusCode, 200);
        const id = header(res, 'x-request-id');
        let buffer = '';
        let deltas = 0;
        try {
          for await (const chunk of res.body as AsyncIterable<Buffer>) {
            buffer += chunk.toString('utf8');
            deltas = (buffer.match(DELTA[format]) ?? []).length;
            if (deltas >= 4) break;
          }
        } catch {
          // the abort below may surface here
        }
        controller.abort();
        t.ok(deltas >= 4, `read a few text deltas before leaving (${deltas})`);
        await until('the upstream call to be aborted', () => sim.activeRequests() === 0);
        t.equal(sim.activeRequests(), 0, 'no upstream request left open');
        await until('the usage row', async () => await usageRow(gw, id) !== undefined);
        const row = await usageRow(gw, id);
        t.equal(row?.status, 499, 'usage row status 499');
        t.equal(row?.errorType, 'client_disconnected');
        t.equal(row?.endpoint, ENDPOINT[format], `endpoint ${ENDPOINT[format]}`);
        t.equal(row?.stream, true);
        t.ok((row?.outputTokens ?? 0) > 0, `output tokens delivered are billed (${row?.outputTokens})`);
        t.ok((row?.outputTokens ?? Infinity) < fullTokens, `fewer than the full answer (${row?.outputTokens} < ${fullTokens})`);
        t.ok((row?.costMicros ?? 0) > 0, 'cost > 0');
        t.equal((await charges(gw, funded.accountId, id)).length, 1, 'one ledger charge');
        t.equal((await charges(gw, funded.accountId, id))[0]?.amountMicros, -(row?.costMicros ?? 0), 'charged the row’s cost');
        await noHolds(t, gw, funded);
      });
    }
  }
  t.equal(await gw.app.store.ledger.sum(funded.accountId), await balanceMicros(gw, funded.accountId), 'balance = ledger sum');
});

// ---------------------------------------------------------------------------------------------

t.test('no hold outlives its call, for every key of this file', async (t) => {
  t.ok(used.length > 10, `keys checked: ${used.length}`);
  for (const funded of used) await noHolds(t, gw, funded);
});
