import { spawn } from 'node:child_process';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { formatCacheTokens } from '../../src/dashboard/lib/format.js';
import type { UsageRecord } from '../../src/store/usage.js';
import { cliEnv, ROOT, runCli } from '../support/cli.js';
import { ceilMillion, charges, inr } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * Claude prompt caching end to end: the provider simulator caches like Anthropic's API
 * (breakpoints, minimum prefix per model, 20-block lookback, 5-minute and 1-hour TTLs refreshed
 * by reads, JSON and stream), and the gateway bills what the upstream reports — uncached input,
 * cache writes, cache reads and output each at its own catalog price, to the µINR — in every
 * ingress format, JSON and streamed, reports it the way each format's wire does, and shows the
 * cache tokens in the management API, the CLI and the dashboard's usage view.
 */

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

/** Anthropic's usage object, as the simulator answered it (RecordedRequest.usage). */
interface WireUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

const SONNET = 'anthropic/claude-sonnet-4-5';
const MINI = 'openai/gpt-4o-mini';

/** µINR per 1M tokens, by hand from config/models.yaml (INR × 1e6). */
const PRICE = {
  sonnet: { input: 252_000_000n, output: 1_260_000_000n, cacheRead: 25_200_000n, cacheWrite: 315_000_000n },
};

/** A contract of `clauses` numbered clauses: about 16 Claude tokens each. */
function contract(clauses: number, topic = 'the tenant shall keep the premises in good repair'): string {
  return Array.from({ length: clauses }, (_, i) => `Clause ${i + 1}: ${topic}, and notify the landlord in writing within ${(i % 27) + 3} days.`).join(' ');
}
/** Long enough for every model's minimum (4096 tokens on Haiku 4.5). */
const LONG = contract(400);
/** Between 2048 and 4096 tokens: cacheable on Sonnet 4.5 / Opus 4.1 (1024) and Haiku 3.5 (2048), not on Haiku 4.5 (4096). */
const MEDIUM = contract(115, 'the landlord shall insure the building');
/** Under every minimum. */
const SHORT = contract(20, 'rent is due on the first day of the month');

const sim = await ProviderSimulator.start();
const gw: TestGateway = await startTestGateway({ providers: simulatedProviders(sim.url) });
t.teardown(async () => {
  await gw.stop();
  await sim.close();
});

/** The usage the simulator reported for the last upstream call. */
function upstream(): WireUsage {
  const usage = sim.requests.at(-1)?.usage as WireUsage | undefined;
  if (!usage) throw new Error('the simulator recorded no usage');
  return usage;
}

/** The whole prompt of an Anthropic usage (its input_tokens exclude cache reads and writes). */
function promptOf(u: WireUsage): number {
  return u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
}

/** uncached input × input + writes × cache write + reads × cache read + output × output, rounded up once. */
function billOf(u: WireUsage, price = PRICE.sonnet): number {
  return ceilMillion(
    BigInt(u.input_tokens) * price.input +
      BigInt(u.cache_creation_input_tokens) * price.cacheWrite +
      BigInt(u.cache_read_input_tokens) * price.cacheRead +
      BigInt(u.output_tokens) * price.output,
  );
}

async function row(requestId: string | null | undefined): Promise<UsageRecord | undefined> {
  gw.app.settlement.drain();
  return (await gw.app.store.usage.list({ limit: 1000 })).find((r) => r.requestId === requestId);
}

/** The usage row and the ledger charge of a call hold exactly what the upstream reported, at the catalog prices. */
async function checkBill(t: Tap, funded: FundedKey, requestId: string | null | undefined, u: WireUsage, endpoint: string, stream: boolean): Promise<void> {
  const record = await row(requestId);
  t.ok(record, `a usage row for ${requestId}`);
  t.match(record, { model: SONNET, endpoint, stream, status: 200 }, 'the call');
  t.equal(record?.inputTokens, promptOf(u), 'input tokens: uncached + written + read');
  t.equal(record?.cacheWriteTokens, u.cache_creation_input_tokens, 'cache write tokens');
  t.equal(record?.cacheReadTokens, u.cache_read_input_tokens, 'cache read tokens');
  t.equal(record?.outputTokens, u.output_tokens, 'output tokens');
  t.equal(record?.costMicros, billOf(u), 'cost: each kind of token at its own price, to the µINR');
  t.equal(record?.unchargedMicros, 0, 'all of it charged');
  const charge = await charges(gw, funded.accountId, requestId ?? undefined);
  t.same(
    charge.map((e) => e.amountMicros),
    [-billOf(u)],
    'one ledger charge of exactly the cost',
  );
}

// ---------------------------------------------------------------------------------------------
// The simulator is faithful to Anthropic's prompt caching

t.test('simulator: Anthropic prompt caching', async (t) => {
  const claude = new Anthropic({ baseURL: sim.anthropicBaseUrl, apiKey: sim.apiKey, maxRetries: 0 });
  const MODEL = 'claude-opus-4-1';
  type Params = Anthropic.MessageCreateParamsNonStreaming;
  const withSystem = (doc: string, question: string, control: Anthropic.CacheControlEphemeral | null = { type: 'ephemeral' }, model = MODEL): Params => ({
    model,
    max_tokens: 100,
    system: [
      { type: 'text', text: 'You are a careful lawyer.' },
      { type: 'text', text: doc, ...(control ? { cache_control: control } : {}) },
    ],
    messages: [{ role: 'user', content: question }],
  });
  t.beforeEach(() => sim.reset());

  await t.test('a cached system prompt: written on the first call, read on a repeat; input_tokens exclude both', async (t) => {
    const plain = await claude.messages.create(withSystem(LONG, 'What does clause 3 say?', null));
    t.same([plain.usage.cache_creation_input_tokens, plain.usage.cache_read_input_tokens], [0, 0], 'no breakpoint: nothing cached');
    const whole = plain.usage.input_tokens;

    const first = await claude.messages.create(withSystem(LONG, 'What does clause 3 say?'));
    t.ok(first.usage.cache_creation_input_tokens! > 4096, `the prefix is written (${first.usage.cache_creation_input_tokens} tokens)`);
    t.equal(first.usage.cache_read_input_tokens, 0, 'nothing to read yet');
    t.same(first.usage.cache_creation, { ephemeral_5m_input_tokens: first.usage.cache_creation_input_tokens, ephemeral_1h_input_tokens: 0 }, 'written at the default 5-minute TTL');
    t.equal(first.usage.input_tokens + first.usage.cache_creation_input_tokens!, whole, 'input_tokens + cache_creation_input_tokens = the whole prompt');
    t.ok(first.usage.input_tokens > 0 && first.usage.input_tokens < 50, 'input_tokens: only what follows the breakpoint');

    const repeat = await claude.messages.create(withSystem(LONG, 'What does clause 3 say?'));
    t.equal(repeat.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens, 'the repeat reads the written prefix');
    t.equal(repeat.usage.cache_creation_input_tokens, 0, 'and writes nothing');
    t.equal(repeat.usage.input_tokens, first.usage.input_tokens, 'the same uncached input');

    const other = await claude.messages.create(withSystem(LONG, 'And what does clause 12 say, in two sentences please?'));
    t.equal(other.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens, 'another question after the same prefix reads it too');
    t.ok(other.usage.input_tokens > first.usage.input_tokens, 'its longer question is uncached input');

    const changed = await claude.messages.create(withSystem(`${LONG} Clause 401: pets are allowed.`, 'What does clause 3 say?'));
    t.equal(changed.usage.cache_read_input_tokens, 0, 'a changed prefix misses');
    t.ok(changed.usage.cache_creation_input_tokens! > first.usage.cache_creation_input_tokens!, 'and is written anew');

    const otherModel = await claude.messages.create(withSystem(LONG, 'What does clause 3 say?', { type: 'ephemeral' }, 'claude-sonnet-4-0'));
    t.equal(otherModel.usage.cache_read_input_tokens, 0, 'caches are per model');
  });

  await t.test('the stream: message_start carries the cache reads and writes', async (t) => {
    const params = { ...withSystem(LONG, 'Summarize clause 7.'), stream: true as const };
    for (const expect of ['write', 'read'] as const) {
      const stream = claude.messages.stream(params);
      let start: Anthropic.Usage | undefined;
      for await (const event of stream) if (event.type === 'message_start') start = event.message.usage;
      const final = await stream.finalMessage();
      t.ok(start, 'message_start arrived');
      if (expect === 'write') {
        t.ok(start!.cache_creation_input_tokens! > 4096 && start!.cache_read_input_tokens === 0, `first stream: message_start reports the write (${start!.cache_creation_input_tokens})`);
      } else {
        t.ok(start!.cache_read_input_tokens! > 4096 && start!.cache_creation_input_tokens === 0, `second stream: message_start reports the read (${start!.cache_read_input_tokens})`);
      }
      t.ok(start!.input_tokens > 0 && start!.input_tokens < 50, 'message_start input_tokens exclude the cached prefix');
      t.same(
        [final.usage.input_tokens, final.usage.cache_creation_input_tokens, final.usage.cache_read_input_tokens],
        [start!.input_tokens, start!.cache_creation_input_tokens, start!.cache_read_input_tokens],
        'the final message keeps the input usage of message_start',
      );
      t.ok(final.usage.output_tokens > 1, 'output from message_delta');
    }
  });

  await t.test('TTL: 5 minutes from the last read; 1 hour with ttl "1h"', async (t) => {
    const params = withSystem(LONG, 'Clause 9?');
    const written = (await claude.messages.create(params)).usage.cache_creation_input_tokens;
    sim.promptCache.advance(4 * 60_000);
    t.equal((await claude.messages.create(params)).usage.cache_read_input_tokens, written, 'read after 4 min');
    sim.promptCache.advance(4 * 60_000);
    t.equal((await claude.messages.create(params)).usage.cache_read_input_tokens, written, 'read again 8 min after the write: the read refreshed it');
    sim.promptCache.advance(5 * 60_000 + 1000);
    const expired = await claude.messages.create(params);
    t.same([expired.usage.cache_read_input_tokens, expired.usage.cache_creation_input_tokens], [0, written], 'over 5 min after the last read: expired, written again');

    sim.reset();
    const hour = withSystem(LONG, 'Clause 9?', { type: 'ephemeral', ttl: '1h' });
    const first = await claude.messages.create(hour);
    t.same(first.usage.cache_creation, { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: first.usage.cache_creation_input_tokens }, 'written at the 1-hour TTL');
    sim.promptCache.advance(30 * 60_000);
    t.equal((await claude.messages.create(hour)).usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens, 'read after 30 min');
    sim.promptCache.advance(60 * 60_000 + 1000);
    t.equal((await claude.messages.create(hour)).usage.cache_read_input_tokens, 0, 'expired an hour after the last read');
  });

  await t.test('minimum prefix per model: 1024 (Opus 4.1, Sonnet 4.5), 2048 (Haiku 3.5), 4096 (Haiku 4.5)', async (t) => {
    const short = await claude.messages.create(withSystem(SHORT, 'When is rent due?'));
    t.same([short.usage.cache_creation_input_tokens, short.usage.cache_read_input_tokens], [0, 0], `a ${short.usage.input_tokens}-token prompt is not cached, marked or not`);
    const again = await claude.messages.create(withSystem(SHORT, 'When is rent due?'));
    t.equal(again.usage.cache_read_input_tokens, 0, 'nor read on a repeat');

    for (const [model, cached] of [
      ['claude-opus-4-1', true],
      ['claude-3-5-haiku-latest', true],
      ['claude-haiku-4-5', false],
    ] as const) {
      const res = await claude.messages.create(withSystem(MEDIUM, 'Who insures?', { type: 'ephemeral' }, model));
      const prompt = res.usage.input_tokens + res.usage.cache_creation_input_tokens!;
      t.ok(prompt > 2048 && prompt < 4096, `the medium prompt is ${prompt} tokens`);
      t.equal(res.usage.cache_creation_input_tokens! > 0, cached, `${model}: ${cached ? 'cached' : 'too short to cache'}`);
    }
  });

  await t.test('a conversation: the breakpoint moves to the last turn; the lookback reads the previous turn\'s prefix', async (t) => {
    const turn = (text: string, control: boolean): Anthropic.TextBlockParam => ({ type: 'text', text, ...(control ? { cache_control: { type: 'ephemeral' as const } } : {}) });
    const first = await claude.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: [turn(LONG, false), turn('Is clause 2 fair?', true)] }] });
    t.ok(first.usage.cache_creation_input_tokens! > 4096, 'turn 1 writes its prompt');
    const second = await claude.messages.create({
      model: MODEL,
      max_tokens: 100,
      messages: [
        { role: 'user', content: [turn(LONG, false), turn('Is clause 2 fair?', false)] },
        { role: 'assistant', content: 'Yes, it is a standard repair clause.' },
        { role: 'user', content: [turn('And clause 3?', true)] },
      ],
    });
    t.equal(second.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens, 'turn 2 reads turn 1\'s prefix (found by the lookback from its own breakpoint)');
    t.ok(second.usage.cache_creation_input_tokens! > 0 && second.usage.cache_creation_input_tokens! < 100, `and writes only the new turns (${second.usage.cache_creation_input_tokens})`);
  });

  await t.test('automatic caching: a top-level cache_control marks the last block', async (t) => {
    const params = { model: MODEL, max_tokens: 50, cache_control: { type: 'ephemeral' as const }, messages: [{ role: 'user' as const, content: `${LONG} Which clause is about repairs?` }] };
    const first = await claude.messages.create(params);
    const second = await claude.messages.create(params);
    t.ok(first.usage.cache_creation_input_tokens! > 4096, 'written');
    t.equal(second.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens, 'read');
  });

  await t.test('refused uses of cache_control, with the API\'s messages', async (t) => {
    const control = { type: 'ephemeral' as const };
    const five = claude.messages.create({
      model: MODEL,
      max_tokens: 10,
      system: [1, 2, 3, 4, 5].map((n) => ({ type: 'text' as const, text: `Rule ${n}.`, cache_control: control })),
      messages: [{ role: 'user', content: 'hi' }],
    });
    t.match(await five.catch((error: unknown) => error), { status: 400, error: { error: { type: 'invalid_request_error', message: 'A maximum of 4 blocks with cache_control may be provided. Found 5.' } } }, 'five breakpoints');
    const order = claude.messages.create({
      model: MODEL,
      max_tokens: 10,
      system: [{ type: 'text', text: 'Rules.', cache_control: control }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '1h' } }] }],
    });
    t.match(
      await order.catch((error: unknown) => error),
      {
        status: 400,
        error: { error: { type: 'invalid_request_error', message: "messages.0.content.0.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`." } },
      },
      'a 1-hour breakpoint after a 5-minute one',
    );
  });
});

// ---------------------------------------------------------------------------------------------
// The gateway bills and reports it, in every format

t.test('chat completions: cache: true is billed per kind of token and reported as cached_tokens', async (t) => {
  sim.reset();
  const funded = await fundedKey(gw, { balance: 1000 });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: funded.key, maxRetries: 0 });
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: `You are a careful lawyer. ${LONG}` },
    { role: 'user', content: 'What does clause 3 say?' },
  ];
  // `cache` is the gateway's extension field (spec: chat request table); the SDK sends extra fields as given.
  const body = { model: SONNET, messages, max_tokens: 200, cache: true } as OpenAI.ChatCompletionCreateParamsNonStreaming;

  const { data: first, response } = await client.chat.completions.create(body).withResponse();
  const sent = sim.requests.at(-1)?.body as { system: Array<{ cache_control?: unknown }> };
  t.same(sent.system.at(-1)?.cache_control, { type: 'ephemeral' }, 'the gateway marked the system prompt upstream');
  const wrote = upstream();
  t.ok(wrote.cache_creation_input_tokens > 4096 && wrote.cache_read_input_tokens === 0, `the upstream wrote ${wrote.cache_creation_input_tokens} tokens`);
  t.match(
    first.usage,
    { prompt_tokens: promptOf(wrote), completion_tokens: wrote.output_tokens, total_tokens: promptOf(wrote) + wrote.output_tokens, prompt_tokens_details: { cached_tokens: 0 } },
    'prompt_tokens count the whole prompt; a write is not a cached read',
  );
  await checkBill(t, funded, response.headers.get('x-request-id'), wrote, 'chat.completions', false);
  t.equal(response.headers.get('x-gateway-cost-inr'), String(inr(billOf(wrote))), 'x-gateway-cost-inr');

  // The same prompt, streamed: read from the cache.
  const { data: stream, response: streamed } = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }).withResponse();
  let usage: OpenAI.CompletionUsage | undefined | null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  const read = upstream();
  t.ok(read.cache_read_input_tokens > 4096 && read.cache_creation_input_tokens === 0, `the upstream read ${read.cache_read_input_tokens} tokens`);
  t.match(
    usage,
    { prompt_tokens: promptOf(read), completion_tokens: read.output_tokens, total_tokens: promptOf(read) + read.output_tokens, prompt_tokens_details: { cached_tokens: read.cache_read_input_tokens } },
    'the usage chunk: cached_tokens are the cache reads',
  );
  await checkBill(t, funded, streamed.headers.get('x-request-id'), read, 'chat.completions', true);
  t.ok(billOf(read) < billOf(wrote) / 5, `the read call costs far less (${billOf(read)} vs ${billOf(wrote)} µINR)`);
});

t.test('messages: client cache_control is billed per kind of token and reported with Anthropic\'s fields', async (t) => {
  sim.reset();
  const funded = await fundedKey(gw, { balance: 1000 });
  const client = new Anthropic({ baseURL: gw.url, apiKey: funded.key, maxRetries: 0 });
  const params: Anthropic.MessageCreateParamsNonStreaming = {
    model: SONNET,
    max_tokens: 200,
    system: [
      { type: 'text', text: 'You are a careful lawyer.' },
      { type: 'text', text: LONG, cache_control: { type: 'ephemeral' } },
    ],
    messages: [{ role: 'user', content: 'What does clause 3 say?' }],
  };

  const { data: first, response } = await client.messages.create(params).withResponse();
  const sent = sim.requests.at(-1)?.body as { system: Array<{ cache_control?: unknown }> };
  t.same(sent.system[1]?.cache_control, { type: 'ephemeral' }, 'the breakpoint went upstream');
  const wrote = upstream();
  t.ok(wrote.cache_creation_input_tokens > 4096, 'the upstream wrote the prefix');
  t.match(
    first.usage,
    { input_tokens: wrote.input_tokens, cache_creation_input_tokens: wrote.cache_creation_input_tokens, cache_read_input_tokens: 0, output_tokens: wrote.output_tokens },
    'input_tokens exclude the cache write, as Anthropic\'s do',
  );
  await checkBill(t, funded, response.headers.get('x-request-id'), wrote, 'messages', false);

  const stream = client.messages.stream(params);
  const { response: streamed } = await stream.withResponse();
  let delta: Anthropic.MessageDeltaUsage | undefined;
  for await (const event of stream) if (event.type === 'message_delta') delta = event.usage;
  const final = await stream.finalMessage();
  const read = upstream();
  t.ok(read.cache_read_input_tokens > 4096 && read.cache_creation_input_tokens === 0, 'the upstream read the prefix');
  t.match(delta, { input_tokens: read.input_tokens, cache_read_input_tokens: read.cache_read_input_tokens, cache_creation_input_tokens: 0 }, 'message_delta carries the whole usage, cache reads included');
  t.match(
    final.usage,
    { input_tokens: read.input_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: read.cache_read_input_tokens, output_tokens: read.output_tokens },
    'the SDK\'s final message has the cache read',
  );
  await checkBill(t, funded, streamed.headers.get('x-request-id'), read, 'messages', true);

  // Automatic caching (a top-level cache_control) passes through to an Anthropic upstream.
  const auto = { model: SONNET, max_tokens: 50, cache_control: { type: 'ephemeral' as const }, messages: [{ role: 'user' as const, content: `${MEDIUM} Who insures?` }] };
  const { response: autoFirst } = await client.messages.create(auto).withResponse();
  const autoWrote = upstream();
  t.ok(autoWrote.cache_creation_input_tokens > 2048, 'automatic caching: written');
  await checkBill(t, funded, autoFirst.headers.get('x-request-id'), autoWrote, 'messages', false);
  const { data: autoAgain, response: autoSecond } = await client.messages.create(auto).withResponse();
  t.equal(autoAgain.usage.cache_read_input_tokens, autoWrote.cache_creation_input_tokens, 'automatic caching: read');
  await checkBill(t, funded, autoSecond.headers.get('x-request-id'), upstream(), 'messages', false);
});

t.test('responses: no breakpoints reach Claude; cache tokens an upstream reports are billed and shown as cached_tokens', async (t) => {
  sim.reset();
  const funded = await fundedKey(gw, { balance: 1000 });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: funded.key, maxRetries: 0 });
  const body: OpenAI.Responses.ResponseCreateParamsNonStreaming = { model: SONNET, instructions: `You are a careful lawyer. ${LONG}`, input: 'What does clause 3 say?', max_output_tokens: 200 };

  // The Responses format has no way to mark a breakpoint: Claude is sent none, and caches nothing.
  for (const n of [1, 2]) {
    const { data, response } = await client.responses.create(body).withResponse();
    t.notMatch(JSON.stringify(sim.requests.at(-1)?.body), /cache_control/, `call ${n}: no cache_control upstream`);
    const u = upstream();
    t.same([u.cache_creation_input_tokens, u.cache_read_input_tokens], [0, 0], `call ${n}: nothing cached`);
    t.match(data.usage, { input_tokens: promptOf(u), input_tokens_details: { cached_tokens: 0 }, output_tokens: u.output_tokens });
    await checkBill(t, funded, response.headers.get('x-request-id'), u, 'responses', false);
  }

  // What an upstream reports as cached is billed and shown all the same (scripted usage).
  const scripted = { input: 8000, output: 40, cacheRead: 6000, cacheWrite: 1500 };
  const expected: WireUsage = { input_tokens: 500, output_tokens: 40, cache_creation_input_tokens: 1500, cache_read_input_tokens: 6000, cache_creation: { ephemeral_5m_input_tokens: 1500, ephemeral_1h_input_tokens: 0 } };
  t.equal(billOf(expected), ceilMillion(500n * 252_000_000n + 1500n * 315_000_000n + 6000n * 25_200_000n + 40n * 1_260_000_000n), 'the bill by hand');
  t.equal(billOf(expected), 800_100, '500 × 252 + 1500 × 315 + 6000 × 25.2 + 40 × 1260 = 800 100 µINR');

  sim.enqueue({ usage: scripted });
  const { data: json, response } = await client.responses.create(body).withResponse();
  t.same(upstream(), { ...expected, service_tier: 'standard' }, 'the upstream reported the scripted cache tokens');
  t.match(json.usage, { input_tokens: 8000, input_tokens_details: { cached_tokens: 6000 }, output_tokens: 40, total_tokens: 8040 }, 'JSON: cached_tokens are the reads');
  await checkBill(t, funded, response.headers.get('x-request-id'), expected, 'responses', false);

  sim.enqueue({ usage: scripted });
  const { data: stream, response: streamed } = await client.responses.create({ ...body, stream: true }).withResponse();
  let completed: OpenAI.Responses.Response | undefined;
  for await (const event of stream) if (event.type === 'response.completed') completed = event.response;
  t.match(completed?.usage, { input_tokens: 8000, input_tokens_details: { cached_tokens: 6000 }, output_tokens: 40, total_tokens: 8040 }, 'stream: response.completed usage');
  await checkBill(t, funded, streamed.headers.get('x-request-id'), expected, 'responses', true);
});

t.test('1-hour cache writes', async (t) => {
  sim.reset();
  const funded = await fundedKey(gw, { balance: 1000 });
  const client = new Anthropic({ baseURL: gw.url, apiKey: funded.key, maxRetries: 0 });
  const { response } = await client.messages
    .create({ model: SONNET, max_tokens: 50, system: [{ type: 'text', text: LONG, cache_control: { type: 'ephemeral', ttl: '1h' } }], messages: [{ role: 'user', content: 'Clause 1?' }] })
    .withResponse();
  const u = upstream();
  t.equal(u.cache_creation.ephemeral_1h_input_tokens, u.cache_creation_input_tokens, 'written at the 1-hour TTL');
  const oneHourWrite = 2n * PRICE.sonnet.input; // Anthropic: 1h writes cost 2x the base input price ($6/MTok on Sonnet 4.5)
  t.equal(
    (await row(response.headers.get('x-request-id')))?.costMicros,
    ceilMillion(BigInt(u.input_tokens) * PRICE.sonnet.input + BigInt(u.cache_creation_input_tokens) * oneHourWrite + BigInt(u.output_tokens) * PRICE.sonnet.output),
    'billed at the 1-hour write price (2x input)',
  );
  // The same through a stream (message_start carries the split), and in a mix of 5-minute and 1-hour writes.
  const stream = client.messages.stream({ model: SONNET, max_tokens: 50, system: [{ type: 'text', text: `${LONG} (again)`, cache_control: { type: 'ephemeral', ttl: '1h' } }], messages: [{ role: 'user', content: 'Clause 2?' }] });
  const final = await stream.finalMessage();
  t.ok(final.usage.cache_creation_input_tokens && final.usage.cache_creation_input_tokens > 0, 'a write');
  const s = upstream();
  const streamedId = (await stream.withResponse()).response.headers.get('x-request-id');
  t.equal(
    (await row(streamedId))?.costMicros,
    ceilMillion(BigInt(s.input_tokens) * PRICE.sonnet.input + BigInt(s.cache_creation_input_tokens) * oneHourWrite + BigInt(s.output_tokens) * PRICE.sonnet.output),
    'stream: billed at the 1-hour write price',
  );
});

// ---------------------------------------------------------------------------------------------
// The usage views show cache reads and writes

t.test('usage views: management API, CLI list and tail, dashboard', async (t) => {
  sim.reset();
  const funded = await fundedKey(gw, { balance: 1000, email: 'cache-views@example.com', key: { name: 'cache app' } });
  const client = new Anthropic({ baseURL: gw.url, apiKey: funded.key, maxRetries: 0 });
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: funded.key, maxRetries: 0 });
  const params: Anthropic.MessageCreateParamsNonStreaming = { model: SONNET, max_tokens: 50, system: [{ type: 'text', text: LONG, cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: 'Clause 5?' }] };
  const { response: first } = await client.messages.create(params).withResponse();
  const wrote = upstream();
  // A write and a read in one call: a new turn after the cached prefix, with its own breakpoint.
  const { response: second } = await client.messages
    .create({ ...params, messages: [{ role: 'user', content: [{ type: 'text', text: `Clause 6? ${MEDIUM}`, cache_control: { type: 'ephemeral' } }] }] })
    .withResponse();
  const both = upstream();
  t.ok(both.cache_read_input_tokens === wrote.cache_creation_input_tokens && both.cache_creation_input_tokens > 2000, 'the second call read the prefix and wrote the new turn');
  await openai.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: 'no cache here' }] });
  gw.app.settlement.drain();
  const ids = [first.headers.get('x-request-id'), second.headers.get('x-request-id')];

  await t.test('management API rows', async (t) => {
    const res = await gw.http('GET', `/api/management/usage?account=${funded.accountId}&limit=10`, { token: gw.adminKey });
    t.equal(res.status, 200);
    const rows = res.body.data as Array<Record<string, unknown>>;
    t.match(rows.find((r) => r.request_id === ids[0]), { cache_write_tokens: wrote.cache_creation_input_tokens, cache_read_tokens: 0, input_tokens: promptOf(wrote), cost: inr(billOf(wrote)) });
    t.match(rows.find((r) => r.request_id === ids[1]), { cache_write_tokens: both.cache_creation_input_tokens, cache_read_tokens: both.cache_read_input_tokens, input_tokens: promptOf(both), cost: inr(billOf(both)) });
    t.match(rows.find((r) => r.model === MINI), { cache_write_tokens: 0, cache_read_tokens: 0 });
  });

  await t.test('gateway usage list: --json has the fields; the table a PROMPT CACHE R/W column when some call used a cache', async (t) => {
    const json = await runCli(['usage', 'list', '--json', '--account', funded.accountId, '--url', gw.url, '--key', gw.adminKey]);
    t.equal(json.code, 0, json.stderr);
    const listed = (JSON.parse(json.stdout) as { data: Array<Record<string, unknown>> }).data;
    t.match(listed.find((r) => r.request_id === ids[1]), { cache_read_tokens: both.cache_read_input_tokens, cache_write_tokens: both.cache_creation_input_tokens });

    const table = await runCli(['usage', 'list', '--account', funded.accountId, '--url', gw.url, '--key', gw.adminKey]);
    t.equal(table.code, 0, table.stderr);
    t.match(table.stdout, /TIME\s+ACCOUNT\s+KEY\s+MODEL\s+IN\s+PROMPT CACHE R\/W\s+OUT\s+COST\s+LATENCY\s+STATUS/, 'the header');
    const line = (model: string, input: number, cache: string, output: number) => new RegExp(`cache app\\s+${model.replace('/', '\\/')}\\s+${input}\\s+${cache}\\s+${output}\\s+₹`);
    t.match(table.stdout, line(SONNET, promptOf(wrote), `0/${wrote.cache_creation_input_tokens}`, wrote.output_tokens), 'the write');
    t.match(table.stdout, line(SONNET, promptOf(both), `${both.cache_read_input_tokens}/${both.cache_creation_input_tokens}`, both.output_tokens), 'read and write');
    t.match(table.stdout, /cache app\s+openai\/gpt-4o-mini\s+\d+\s+\d+\s+₹/, 'a call without cache: an empty cell');

    const plain = await runCli(['usage', 'list', '--model', MINI, '--account', funded.accountId, '--url', gw.url, '--key', gw.adminKey]);
    t.match(plain.stdout, /MODEL\s+IN\s+OUT\s+COST/, 'no call used a cache: no column');
    t.notMatch(plain.stdout, /PROMPT CACHE/);
  });

  await t.test('gateway usage tail: the cache tokens of each call as it settles', async (t) => {
    for (const json of [true, false]) {
      const args = ['bin/gateway.js', 'usage', 'tail', '--count', '1', '--account', funded.accountId, '--url', gw.url, '--key', gw.adminKey, ...(json ? ['--json'] : [])];
      const tail = spawn(process.execPath, args, { cwd: ROOT, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      tail.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      const exited = new Promise<number | null>((resolve) => tail.on('close', (code) => resolve(code)));
      const subscribers = gw.app.usage.subscribers;
      for (let i = 0; i < 200 && gw.app.usage.subscribers <= subscribers; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      t.ok(gw.app.usage.subscribers > subscribers, 'the tail subscribed');
      await client.messages.create(params);
      const read = upstream();
      t.equal(await exited, 0, 'the tail exits after --count calls');
      if (json) t.match(JSON.parse(out.trim()), { model: SONNET, cache_read_tokens: read.cache_read_input_tokens, cache_write_tokens: 0 }, '--json: the fields');
      else {
        t.match(out, /IN\s+PROMPT CACHE R\/W\s+OUT/, 'the table has the column');
        t.match(out, new RegExp(`${promptOf(read)}\\s+${read.cache_read_input_tokens}/0\\s+${read.output_tokens}\\s+₹`), 'and the read');
      }
    }
  });

  await t.test('dashboard: the usage table notes what a call read from and wrote to the cache', async (t) => {
    t.equal(formatCacheTokens({ unit: 'tokens', cache_read_tokens: 6502, cache_write_tokens: 0 }), 'prompt cache: 6,502 read');
    t.equal(formatCacheTokens({ unit: 'tokens', cache_read_tokens: 6502, cache_write_tokens: 123456 }), 'prompt cache: 6,502 read · 1,23,456 written');
    t.equal(formatCacheTokens({ unit: 'tokens', cache_read_tokens: 0, cache_write_tokens: 7 }), 'prompt cache: 7 written');
    t.equal(formatCacheTokens({ unit: 'tokens', cache_read_tokens: 0, cache_write_tokens: 0 }), null, 'nothing cached: no note');
    t.equal(formatCacheTokens({ unit: 'characters', cache_read_tokens: 0, cache_write_tokens: 0 }), null);
  });
});
