import { randomUUID } from 'node:crypto';
import t from 'tap';
import { request } from 'undici';
import type { RunningGateway } from '../../src/main.js';
import { countTextTokens, promptTokenBound, promptTokenEstimate } from '../../src/core/tokens.js';
import { openAiFamily } from '../../src/providers/openai/index.js';
import type { UsageRecord } from '../../src/store/usage.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { redisSkipReason } from '../support/redis.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { balanceMicros, ceilMillion, charges, drainAll, header, inr, noHolds, postJson, twoDaemonsOnRedis, usageRow, type RawResponse } from '../support/e2e.js';

/**
 * End-to-end billing of /v1/chat/completions: exact µINR costs, ledger and usage rows,
 * streamed settlement order, wallet holds under concurrency, key budgets, 402 messages, rate
 * limits, and two daemons sharing Redis and one SQLite file.
 */

// ---------------------------------------------------------------------------------------------
// Helpers

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

type Raw = RawResponse;

const MINI = 'openai/gpt-4o-mini';
const HAIKU = 'anthropic/claude-haiku-4-5';
const FLASH = 'gemini/gemini-2.5-flash';
const PROMPT = 'hi';
const USER = [{ role: 'user', content: PROMPT }];

async function post(baseUrl: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<Raw> {
  return postJson(`${baseUrl}/v1/chat/completions`, { authorization: `Bearer ${key}`, ...headers }, body);
}

/** INR per 1M tokens → µINR per 1M tokens, written out by hand for the catalog prices used here. */
const PRICE = {
  mini: { input: 12_600_000n, output: 50_400_000n, cacheRead: 6_300_000n },
  haiku: { input: 84_000_000n, output: 420_000_000n, cacheRead: 8_400_000n, cacheWrite: 105_000_000n },
  flash: { input: 25_200_000n, output: 210_000_000n, cacheRead: 2_520_000n },
};

/** Reads an SSE response frame by frame as the bytes arrive; null once it ended. */
function sseReader(body: AsyncIterable<Buffer>): () => Promise<string | null> {
  const iterator = body[Symbol.asyncIterator]();
  let buffer = '';
  return async () => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end !== -1) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        return frame;
      }
      const next = await iterator.next();
      if (next.done) return buffer.length > 0 ? buffer : null;
      buffer += next.value.toString('utf8');
    }
  };
}

/** The prompt bound the gateway holds for a single user message, and the worst case of a call with it. */
const BOUND = promptTokenBound({ messages: [{ role: 'user', content: [{ type: 'text', text: PROMPT }] }] });
function worstMini(maxTokens: number): number {
  return ceilMillion(BigInt(BOUND) * PRICE.mini.input + BigInt(maxTokens) * PRICE.mini.output);
}
/** The largest max_tokens a wallet of `micros` covers for the PROMPT call on gpt-4o-mini. */
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

// ---------------------------------------------------------------------------------------------

const sim = await ProviderSimulator.start();
t.teardown(() => sim.close());
const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
t.teardown(() => gw.stop());

t.test('exact µINR: gpt-4o-mini 1000 in / 500 out = 37 800 µINR', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const expected = ceilMillion(1000n * PRICE.mini.input + 500n * PRICE.mini.output);
  t.equal(expected, 37_800, 'by hand: 1000 × 12.6 + 500 × 50.4 = 37 800 µINR');

  sim.enqueue({ usage: { input: 1000, output: 500 } });
  const res = await post(gw.url, funded.key, { model: MINI, messages: USER });
  t.equal(res.status, 200, res.text.slice(0, 200));
  t.equal(header(res, 'x-gateway-cost-inr'), '0.0378', 'x-gateway-cost-inr');
  t.match(res.json.usage, { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 });

  // The balance is lower at once.
  const credits = await gw.http('GET', '/v1/credits', { token: funded.key });
  t.same(credits.body, { balance: 9.9622, currency: 'INR' }, '/v1/credits: 10 − 0.0378');

  const usage = await gw.http('GET', `/api/management/usage?key=${funded.keyId}`, { token: gw.adminKey });
  t.equal(usage.status, 200);
  t.equal(usage.body.data.length, 1, 'one usage row');
  const row = usage.body.data[0];
  t.equal(row.cost, 0.0378, 'usage row cost');
  t.equal(row.request_id, header(res, 'x-request-id'), 'usage row request id is the call’s');
  t.match(row, { model: MINI, input_tokens: 1000, output_tokens: 500, status: 200, stream: false, error_type: null });

  const ledger = await gw.http('GET', `/api/management/accounts/${funded.accountId}/ledger`, { token: gw.adminKey });
  const ledgerCharges = ledger.body.data.filter((e: any) => e.kind === 'charge');
  t.equal(ledgerCharges.length, 1, 'one ledger charge');
  t.equal(ledgerCharges[0]?.amount, -0.0378, 'charge of −0.0378');
  t.equal(ledgerCharges[0]?.request_id, row.request_id, 'the charge’s request_id is the usage row’s');
  t.equal(ledgerCharges[0]?.api_key_id, funded.keyId);
  t.equal(ledgerCharges[0]?.balance_after, 9.9622);

  const key = await gw.http('GET', `/api/management/api-keys/${funded.keyId}`, { token: gw.adminKey });
  t.equal(key.body.spent, 0.0378, 'key spent');
  t.equal(await gw.app.store.ledger.sum(funded.accountId), await balanceMicros(gw, funded.accountId), 'balance equals the ledger sum');
  await noHolds(t, gw, funded);
});

t.test('exact µINR: rounding, cached tokens, Anthropic cache read/write', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const cases = [
    {
      name: 'rounding: 1 input token at 12.6 INR/1M is 12.6 µINR, billed 13',
      model: MINI,
      usage: { input: 1, output: 0 },
      micros: ceilMillion(1n * PRICE.mini.input),
      header: '0.000013',
    },
    {
      name: 'cached tokens at the cache price: 600 × 12.6 + 400 × 6.3 = 10 080',
      model: MINI,
      usage: { input: 1000, output: 0, cacheRead: 400 },
      micros: ceilMillion(600n * PRICE.mini.input + 400n * PRICE.mini.cacheRead),
      header: '0.01008',
    },
    {
      name: 'anthropic: 500 plain × 84 + 300 read × 8.4 + 200 write × 105 + 100 out × 420 = 107 520',
      model: HAIKU,
      usage: { input: 1000, output: 100, cacheRead: 300, cacheWrite: 200 },
      micros: ceilMillion(500n * PRICE.haiku.input + 300n * PRICE.haiku.cacheRead + 200n * PRICE.haiku.cacheWrite + 100n * PRICE.haiku.output),
      header: '0.10752',
    },
    {
      name: 'anthropic, odd counts: 7 × 84 + 3 × 8.4 + 5 × 105 + 11 × 420 = 5758.2, billed 5759',
      model: HAIKU,
      usage: { input: 15, output: 11, cacheRead: 3, cacheWrite: 5 },
      micros: ceilMillion(7n * PRICE.haiku.input + 3n * PRICE.haiku.cacheRead + 5n * PRICE.haiku.cacheWrite + 11n * PRICE.haiku.output),
      header: '0.005759',
    },
    {
      name: 'gemini: 600 × 25.2 + 400 cached × 2.52 + (100 + 200 thinking) out × 210 = 79 128',
      model: FLASH,
      usage: { input: 1000, output: 300, cacheRead: 400, reasoning: 200 },
      micros: ceilMillion(600n * PRICE.flash.input + 400n * PRICE.flash.cacheRead + 300n * PRICE.flash.output),
      header: '0.079128',
    },
  ];
  t.same(
    cases.map((c) => c.micros),
    [13, 10_080, 107_520, 5759, 79_128],
    'hand-computed µINR',
  );
  let spent = 0;
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      sim.enqueue({ usage: c.usage });
      const before = await balanceMicros(gw, funded.accountId);
      const res = await post(gw.url, funded.key, { model: c.model, messages: USER });
      t.equal(res.status, 200, res.text.slice(0, 200));
      t.equal(header(res, 'x-gateway-cost-inr'), c.header, 'x-gateway-cost-inr');
      const row = await usageRow(gw, header(res, 'x-request-id'));
      t.equal(row?.costMicros, c.micros, 'usage row cost');
      t.equal(row?.inputTokens, c.usage.input, 'input tokens (cached included)');
      t.equal(row?.cacheReadTokens, c.usage.cacheRead ?? 0, 'cache read tokens');
      t.equal(row?.cacheWriteTokens, (c.usage as { cacheWrite?: number }).cacheWrite ?? 0, 'cache write tokens');
      if (c.usage.cacheRead) t.equal(res.json.usage.prompt_tokens_details.cached_tokens, c.usage.cacheRead, 'cached_tokens in the response');
      const charge = (await charges(gw, funded.accountId)).find((e) => e.requestId === row?.requestId);
      t.equal(charge?.amountMicros, -c.micros, 'ledger charge');
      t.equal(await balanceMicros(gw, funded.accountId), before - c.micros, 'balance lowered by exactly the cost');
      spent += c.micros;
    });
  }
  const key = await gw.http('GET', `/api/management/api-keys/${funded.keyId}`, { token: gw.adminKey });
  t.equal(key.body.spent, inr(spent), 'key spent is the sum');
  t.equal(await balanceMicros(gw, funded.accountId), 10_000_000 - spent, 'wallet: initial − Σ costs');
  t.equal(await gw.app.store.ledger.sum(funded.accountId), await balanceMicros(gw, funded.accountId), 'balance equals the ledger sum');
  await noHolds(t, gw, funded);
});

t.test('streamed calls are billed the same, and settled before the last bytes', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  for (const [model, usage, micros] of [
    [MINI, { input: 1000, output: 500 }, 37_800],
    [HAIKU, { input: 1000, output: 100, cacheRead: 300, cacheWrite: 200 }, 107_520],
    [FLASH, { input: 1000, output: 300, cacheRead: 400, reasoning: 200 }, 79_128],
  ] as const) {
    await t.test(model, async (t) => {
      sim.enqueue({ usage, text: 'Streaming for money.' });
      const res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${funded.key}` },
        body: JSON.stringify({ model, messages: USER, stream: true, stream_options: { include_usage: true } }),
      });
      t.equal(res.statusCode, 200);
      const id = header(res, 'x-request-id');
      const next = sseReader(res.body as AsyncIterable<Buffer>);
      let sawFinish = false;
      for (let frame = await next(); frame !== null; frame = await next()) {
        const data = frame.replace(/^data: /, '');
        if (data === '[DONE]') break;
        if (JSON.parse(data).choices?.[0]?.finish_reason) {
          sawFinish = true;
          break;
        }
      }
      t.ok(sawFinish, 'read up to the finish chunk');
      // Before reading further: the call is already settled.
      const row = await usageRow(gw, id);
      t.equal(row?.costMicros, micros, 'usage row exists with the exact cost before [DONE] is read');
      t.equal(row?.stream, true);
      t.equal((await charges(gw, funded.accountId)).find((e) => e.requestId === id)?.amountMicros, -micros, 'ledger charge exists before [DONE] is read');
      const rest: string[] = [];
      for (let frame = await next(); frame !== null; frame = await next()) rest.push(frame.replace(/^data: /, ''));
      t.equal(rest.at(-1), '[DONE]', '[DONE] follows');
      const usageChunk = JSON.parse(rest.at(-2) ?? '{}');
      t.same(usageChunk.choices, [], 'the usage chunk');
      t.equal(usageChunk.usage.prompt_tokens, usage.input);
      t.equal(usageChunk.usage.completion_tokens, usage.output);
    });
  }
  t.equal(await balanceMicros(gw, funded.accountId), 10_000_000 - 37_800 - 107_520 - 79_128, 'wallet lowered by each');
  await noHolds(t, gw, funded);
});

t.test('no upstream usage: billed from the gateway’s own token count', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const text = 'An answer without any usage numbers from the provider, to be counted by the gateway.';
  const textTokens = await countTextTokens(text);
  for (const stream of [false, true]) {
    await t.test(`stream=${stream}`, async (t) => {
      sim.enqueue({ text, usage: 'omit' });
      const res = await post(gw.url, funded.key, { model: MINI, messages: USER, stream });
      t.equal(res.status, 200);
      if (stream) t.match(res.text, /data: \[DONE\]\n\n$/, 'the stream completes');
      const row = await usageRow(gw, header(res, 'x-request-id'));
      t.equal(row?.status, 200);
      t.ok((row?.inputTokens ?? 0) > 0, 'input tokens > 0');
      t.equal(row?.outputTokens, textTokens, 'output tokens are the tokenizer count of the answer');
      t.ok((row?.costMicros ?? 0) > 0, 'cost > 0');
      t.equal(
        row?.costMicros,
        ceilMillion(BigInt(row?.inputTokens ?? 0) * PRICE.mini.input + BigInt(row?.outputTokens ?? 0) * PRICE.mini.output),
        'cost is the price of the counted tokens',
      );
      t.equal((await charges(gw, funded.accountId)).find((e) => e.requestId === row?.requestId)?.amountMicros, -(row?.costMicros ?? 0), 'charged');
      if (!stream) t.equal(res.json.usage.completion_tokens, textTokens, 'the response reports the counted usage');
    });
  }
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// Concurrency against wallets and budgets

const MAX_TOKENS = 10;
const CALL_MICROS = worstMini(MAX_TOKENS);

t.test('the worst case used for holds, computed by hand', async (t) => {
  t.equal(BOUND, 1000 + 8 + 2, 'prompt bound: 1000 call overhead + 8 per message + 2 bytes');
  t.equal(CALL_MICROS, 13_230, '1010 × 12.6 + 10 × 50.4 = 13 230 µINR');
});

async function burst(baseUrls: string[], key: string, count: number): Promise<Raw[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) => post(baseUrls[i % baseUrls.length] as string, key, { model: MINI, messages: USER, max_tokens: MAX_TOKENS })),
  );
}

/** Each call costs exactly its worst case (its hold), and calls overlap. */
function overlapping(): void {
  sim.setDefault({ usage: { input: BOUND, output: MAX_TOKENS }, delayMs: 500 });
}

t.test('200 concurrent calls against a wallet for exactly 50', async (t) => {
  const initial = 50 * CALL_MICROS;
  const funded = await fundedKey(gw, { balance: inr(initial) });
  t.equal(await balanceMicros(gw, funded.accountId), initial, 'funded with 50 × the hold');
  const requestsBefore = sim.requests.length;
  overlapping();
  let results: Raw[];
  try {
    results = await burst([gw.url], funded.key, 200);
  } finally {
    sim.setDefault({});
  }
  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 402);
  t.ok(ok.length <= 50, `never more than 50 succeed (${ok.length})`);
  t.equal(ok.length, 50, 'exactly 50 succeed');
  t.equal(refused.length, 200 - ok.length, 'the rest are 402');
  t.ok(refused.every((r) => r.json?.error?.code === 402 && r.json?.error?.reason === 'insufficient_credits' && r.json?.error?.type === 'insufficient_credits'), '402 insufficient_credits');
  t.equal(sim.requests.length - requestsBefore, ok.length, 'only admitted calls reached the upstream');
  t.ok(ok.every((r) => header(r, 'x-gateway-cost-inr') === inr(CALL_MICROS).toString()), 'each cost exactly the hold');

  const final = await balanceMicros(gw, funded.accountId);
  const list = await charges(gw, funded.accountId);
  const charged = list.reduce((sum, e) => sum - e.amountMicros, 0);
  t.ok(final >= 0, `balance never negative (${final})`);
  t.equal(final, initial - charged, 'balance = initial − Σ charges');
  t.equal(await gw.app.store.ledger.sum(funded.accountId), final, 'balance = ledger sum');
  t.equal(list.length, ok.length, 'one ledger charge per successful call');
  t.same(new Set(list.map((e) => e.requestId)), new Set(ok.map((r) => header(r, 'x-request-id'))), 'the charges are the successful calls');
  t.equal(final, 0, 'the wallet is exactly used up');
  await noHolds(t, gw, funded);
});

t.test('concurrent calls against a key budget smaller than the wallet', async (t) => {
  const budget = 20 * CALL_MICROS;
  const funded = await fundedKey(gw, { balance: 5, key: { budget: inr(budget) } });
  overlapping();
  let results: Raw[];
  try {
    results = await burst([gw.url], funded.key, 100);
  } finally {
    sim.setDefault({});
  }
  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  t.ok(ok.length <= 20, `never more than the budget allows (${ok.length})`);
  t.equal(ok.length, 20, 'exactly 20 succeed');
  t.ok(refused.every((r) => r.status === 402 && r.json?.error?.type === 'budget_exceeded' && r.json?.error?.code === 402 && r.json?.error?.reason === 'budget_exceeded'), '402 budget_exceeded');
  const key = await gw.app.store.apiKeys.byId(funded.keyId);
  t.ok((key?.spentMicros ?? Infinity) <= budget, `spent never above the budget (${key?.spentMicros} ≤ ${budget})`);
  t.equal(key?.spentMicros, ok.length * CALL_MICROS, 'spent = Σ charges');
  t.equal(await balanceMicros(gw, funded.accountId), 5_000_000 - ok.length * CALL_MICROS, 'wallet charged the same');
  t.equal(await gw.app.store.ledger.sum(funded.accountId), await balanceMicros(gw, funded.accountId), 'balance = ledger sum');
  await noHolds(t, gw, funded);
});

t.test('a reused x-request-id cannot buy more answers than the wallet pays for', async (t) => {
  const funded = await fundedKey(gw, { balance: inr(CALL_MICROS) });
  const text = 'A paid answer.';
  const shared = `reuse-${randomUUID()}`;
  sim.setDefault({ text, usage: { input: BOUND, output: MAX_TOKENS }, delayMs: 300 });
  let results: Raw[];
  try {
    results = await Promise.all(
      Array.from({ length: 5 }, () => post(gw.url, funded.key, { model: MINI, messages: USER, max_tokens: MAX_TOKENS, stream: true }, { 'x-request-id': shared })),
    );
  } finally {
    sim.setDefault({});
  }
  const answered = results.filter((r) => r.status === 200 && r.text.includes('"content":"A pa'));
  const paid = await charges(gw, funded.accountId);
  // Regression: holds were keyed by the client's x-request-id, so calls reusing one id shared a hold.
  t.ok(answered.length <= 1, `a wallet for one call delivers at most one answer (${answered.length} delivered)`);
  t.equal(paid.length, answered.length, `every delivered answer is charged (${paid.length} charges for ${answered.length} answers)`);
  t.ok(await balanceMicros(gw, funded.accountId) >= 0, 'balance never negative');
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// 402 messages

t.test('402 messages', async (t) => {
  await t.test('an empty wallet always gets 402, even for a tiny call', async (t) => {
    const funded = await fundedKey(gw, { balance: 0 });
    const before = sim.requests.length;
    for (const body of [
      { model: MINI, messages: USER, max_tokens: 1 },
      { model: MINI, messages: USER },
      { model: HAIKU, messages: USER, max_tokens: 1, stream: true },
    ]) {
      const res = await post(gw.url, funded.key, body);
      t.equal(res.status, 402);
      t.equal(res.json?.error?.type, 'insufficient_credits');
      t.equal(res.json?.error?.code, 402);
      t.equal(res.json?.error?.reason, 'insufficient_credits');
      t.match(res.json?.error?.message, /₹0\.00/, 'states the balance');
    }
    t.equal(sim.requests.length, before, 'nothing upstream');
    await noHolds(t, gw, funded);
  });

  await t.test('a wallet that cannot pay the requested max_tokens: balance and the largest affordable max_tokens', async (t) => {
    const funded = await fundedKey(gw, { balance: 0.1 });
    // The fast bound (1010 tokens) would cover 1731; the tight bound decides, and says more.
    t.equal(affordableMini(100_000), 1731, 'by hand, fast bound: ⌊(100 000 − 1010 × 12.6) / 50.4⌋ = 1731');
    t.equal(TIGHT, Math.ceil(1 * openAiFamily.promptTokenMargin.ratio) + 4 + 8, "tight bound: 'hi' is 1 cl100k token, times the margin, plus framing");
    const affordable = affordableTight(100_000);
    t.ok(affordable > 1731, `the tight bound covers more (${affordable})`);
    t.ok(worstTight(affordable) <= 100_000 && worstTight(affordable + 1) > 100_000, 'it is the largest that fits');
    const before = sim.requests.length;
    for (const maxTokens of [16_000, affordable + 1]) {
      const res = await post(gw.url, funded.key, { model: MINI, messages: USER, max_tokens: maxTokens });
      t.equal(res.status, 402, `max_tokens=${maxTokens} refused`);
      t.equal(res.json?.error?.type, 'insufficient_credits');
      t.equal(res.json?.error?.code, 402);
      t.equal(res.json?.error?.reason, 'insufficient_credits');
      t.match(res.json?.error?.message, /₹0\.10/, 'states the balance');
      t.match(res.json?.error?.message, new RegExp(`max_tokens=${affordable}\\b`), `states max_tokens=${affordable}`);
    }
    t.equal(sim.requests.length, before, 'nothing upstream');
    sim.enqueue({ usage: { input: 10, output: 5 } });
    const fits = await post(gw.url, funded.key, { model: MINI, messages: USER, max_tokens: affordable });
    t.equal(fits.status, 200, 'the stated max_tokens is accepted');
    await noHolds(t, gw, funded);
  });

  await t.test('without max_tokens a small wallet still works: the gateway lowers it', async (t) => {
    const funded = await fundedKey(gw, { balance: 0.1 });
    const before = sim.requests.length;
    sim.enqueue({ usage: { input: 10, output: 5 } });
    const res = await post(gw.url, funded.key, { model: MINI, messages: USER });
    t.equal(res.status, 200, res.text.slice(0, 200));
    t.equal(sim.requests.length, before + 1);
    const upstream = sim.requests.at(-1)?.body as Record<string, unknown>;
    t.ok(typeof upstream.max_completion_tokens === 'number' && upstream.max_completion_tokens < 16384, `upstream max_completion_tokens below the catalog 16384 (${upstream.max_completion_tokens})`);
    t.equal(upstream.max_completion_tokens, affordableTight(100_000), 'the most the wallet covers, by the tight bound');
    await noHolds(t, gw, funded);
  });

  await t.test('a key whose spent reached its budget: 402 budget_exceeded', async (t) => {
    const funded = await fundedKey(gw, { balance: 10, key: { budget: inr(CALL_MICROS) } });
    sim.enqueue({ usage: { input: BOUND, output: MAX_TOKENS } });
    const first = await post(gw.url, funded.key, { model: MINI, messages: USER, max_tokens: MAX_TOKENS });
    t.equal(first.status, 200, 'a call costing exactly the budget');
    t.equal((await gw.app.store.apiKeys.byId(funded.keyId))?.spentMicros, CALL_MICROS, 'spent = budget');
    const before = sim.requests.length;
    const second = await post(gw.url, funded.key, { model: MINI, messages: USER, max_tokens: 1 });
    t.equal(second.status, 402);
    t.equal(second.json?.error?.type, 'budget_exceeded');
    t.equal(second.json?.error?.code, 402);
    t.equal(second.json?.error?.reason, 'budget_exceeded');
    t.equal(sim.requests.length, before, 'nothing upstream');
    const key = await gw.http('GET', `/api/management/api-keys/${funded.keyId}`, { token: gw.adminKey });
    t.equal(key.body.status, 'exhausted');
    await noHolds(t, gw, funded);
  });
});

// ---------------------------------------------------------------------------------------------
// Rate limit

t.test('rate limit: 5 per minute', async (t) => {
  const funded = await fundedKey(gw, { balance: 10, key: { rate_limit: 5 } });
  const before = sim.requests.length;
  const remaining: Array<string | undefined> = [];
  for (let i = 0; i < 5; i++) {
    const res = await post(gw.url, funded.key, { model: MINI, messages: USER, max_tokens: 5 });
    t.equal(res.status, 200, `call ${i + 1} succeeds`);
    t.equal(header(res, 'x-ratelimit-limit-requests'), '5');
    t.match(header(res, 'x-ratelimit-reset-requests'), /^\d+(\.\d+)?s$/, 'x-ratelimit-reset-requests');
    remaining.push(header(res, 'x-ratelimit-remaining-requests'));
  }
  t.same(remaining, ['4', '3', '2', '1', '0'], 'x-ratelimit-remaining-requests counts down');
  const limited = await post(gw.url, funded.key, { model: MINI, messages: USER, max_tokens: 5 });
  t.equal(limited.status, 429);
  t.equal(limited.json?.error?.code, 429);
  t.equal(limited.json?.error?.reason, 'rate_limit_exceeded');
  t.equal(limited.json?.error?.type, 'rate_limit_exceeded');
  t.ok(Number(header(limited, 'retry-after')) >= 1, `retry-after ≥ 1 (${header(limited, 'retry-after')})`);
  t.equal(header(limited, 'x-ratelimit-limit-requests'), '5');
  t.equal(header(limited, 'x-ratelimit-remaining-requests'), '0');
  t.match(header(limited, 'x-ratelimit-reset-requests'), /^\d+(\.\d+)?s$/);
  t.equal(sim.requests.length, before + 5, 'the 6th did not reach the upstream');
  t.equal((await charges(gw, funded.accountId)).length, 5, 'five charges');
  await noHolds(t, gw, funded);
});

// ---------------------------------------------------------------------------------------------
// Two daemons, one Redis, one SQLite file

const twoDaemons = (t: Tap): Promise<{ a: TestGateway; b: RunningGateway }> => twoDaemonsOnRedis(t, { providers: simulatedProviders(sim.url) });

t.test('two daemons sharing Redis: one rate limit', { skip: redisSkipReason() }, async (t) => {
  const { a, b } = await twoDaemons(t);
  t.not(a.url, b.url, 'two daemons');
  const funded = await fundedKey(a, { balance: 10, key: { rate_limit: 6 } });
  const remaining: Array<string | undefined> = [];
  for (let i = 0; i < 6; i++) {
    const daemon = i % 2 === 0 ? a : b;
    const res = await post(daemon.url, funded.key, { model: MINI, messages: USER, max_tokens: 5 });
    t.equal(res.status, 200, `call ${i + 1} on daemon ${i % 2 === 0 ? 'A' : 'B'} succeeds`);
    remaining.push(header(res, 'x-ratelimit-remaining-requests'));
  }
  t.same(remaining, ['5', '4', '3', '2', '1', '0'], 'one window across both daemons');
  for (const [name, daemon] of [['A', a], ['B', b]] as const) {
    const res = await post(daemon.url, funded.key, { model: MINI, messages: USER, max_tokens: 5 });
    t.equal(res.status, 429, `429 from daemon ${name}`);
    t.equal(res.json?.error?.code, 429);
    t.equal(res.json?.error?.reason, 'rate_limit_exceeded');
    t.ok(Number(header(res, 'retry-after')) >= 1);
  }
  // Each daemon applies the calls it settled in its own batches; a read sees both once both are in.
  drainAll(a, b);
  t.equal((await charges(a, funded.accountId)).length, 6, 'six charges in the shared ledger');
  await noHolds(t, a, funded);
  await noHolds(t, b, funded);
});

t.test('two daemons sharing Redis: a reused x-request-id does not escape the rate limit', { skip: redisSkipReason() }, async (t) => {
  const { a, b } = await twoDaemons(t);
  const funded = await fundedKey(a, { balance: 10, key: { rate_limit: 2 } });
  const shared = `reuse-${randomUUID()}`;
  const statuses: number[] = [];
  const before = sim.requests.length;
  for (let i = 0; i < 4; i++) {
    const res = await post((i % 2 === 0 ? a : b).url, funded.key, { model: MINI, messages: USER, max_tokens: 5, stream: true }, { 'x-request-id': shared });
    statuses.push(res.status);
  }
  // Regression: the Redis window stored admissions by the client's id, so reused ids counted once.
  t.same(statuses.slice(2), [429, 429], `calls 3 and 4 are rate limited (statuses ${statuses.join(', ')})`);
  t.ok(sim.requests.length - before <= 2, `at most 2 calls reached the provider (${sim.requests.length - before})`);
  drainAll(a, b);
  await noHolds(t, a, funded);
});

t.test('two daemons sharing Redis: concurrent calls never overspend one wallet', { skip: redisSkipReason() }, async (t) => {
  const { a, b } = await twoDaemons(t);
  const calls = 20;
  const initial = calls * CALL_MICROS;
  const funded = await fundedKey(a, { balance: inr(initial) });
  overlapping();
  let results: Raw[];
  try {
    results = await burst([a.url, b.url], funded.key, 80);
  } finally {
    sim.setDefault({});
  }
  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  t.ok(ok.length <= calls, `never more than ${calls} succeed (${ok.length})`);
  t.ok(ok.length > 0, 'some succeed');
  t.ok(refused.every((r) => r.status === 402 && r.json?.error?.code === 402 && r.json?.error?.reason === 'insufficient_credits'), 'the rest are 402 insufficient_credits');
  const fromB = ok.filter((r) => results.indexOf(r) % 2 === 1).length;
  t.ok(fromB > 0 && fromB < ok.length, `both daemons served calls (B: ${fromB} of ${ok.length})`);

  drainAll(a, b);
  const final = await balanceMicros(a, funded.accountId);
  t.equal(await balanceMicros(b, funded.accountId), final, 'both daemons read the same balance');
  const list = await charges(a, funded.accountId);
  const charged = list.reduce((sum, e) => sum - e.amountMicros, 0);
  t.ok(final >= 0, `balance never negative (${final})`);
  t.equal(final, initial - charged, 'balance = initial − Σ charges');
  t.equal(await a.app.store.ledger.sum(funded.accountId), final, 'balance = ledger sum');
  t.equal(list.length, ok.length, 'one charge per successful call');
  await noHolds(t, a, funded);
  await noHolds(t, b, funded);
});

t.test('no hold outlives its call on the main daemon', async (t) => {
  // Every account this file used: all holds released after successes, 402s, 429s.
  for (const account of await gw.app.store.accounts.list(1000, 0)) {
    for (const key of await gw.app.store.apiKeys.listByAccount(account.id)) {
      gw.app.settlement.drain();
      t.same(await gw.app.holds.held(account.id, key.id), { accountHeldMicros: 0, keyHeldMicros: 0 }, `no hold on ${key.id}`);
    }
  }
});
