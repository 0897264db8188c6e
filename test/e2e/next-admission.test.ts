import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import t from 'tap';
import type { RunningGateway } from '../../src/main.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { redisSkipReason } from '../support/redis.js';
import { sampleAudio } from '../support/simulator/audio.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { postJson, twoDaemonsOnRedis, usageRow, type RawResponse } from '../support/e2e.js';
import { TEST_BACKEND } from '../support/store.js';

/**
 * A settled charge is visible to the next admission, on every path (issue 17). Settlement
 * writes a call's charge to the ledger in batches (every billing_batch_window, 100 ms by
 * default); until then the call's hold stays at its cost. Whatever the phase, the next call's
 * admission must see exactly the balance less that cost: not the balance (the charge lost from
 * sight), not less than it (the hold still at its worst case, or the charge counted twice).
 *
 * Admission's view is read with a probe: a chat call on a model priced 1 µINR per output token
 * (₹1 per 1M) and nothing for input, asking for more tokens than the wallet holds. Its 402
 * names the largest max_tokens the free funds cover, which is those funds in µINR, exactly.
 *
 * Each path runs twice: on one daemon whose batch window (5 s) keeps the first probe before
 * the charge reaches the ledger (on SQLite; PostgreSQL commits before the answer ends), and on
 * two daemons sharing the store and Redis, the call on one and the probes on the other (there,
 * right after the answer, the other daemon may see less: the call's hold is lowered to its
 * cost in Redis by a script that coalesces 5 ms of calls; once settled, exactly).
 */

const PROBE_MODEL = 'openai/funds-probe';

const sim = await ProviderSimulator.start();
t.teardown(() => sim.close());
const PROBE = { id: PROBE_MODEL, name: 'funds probe', context_window: 100_000_000, max_output_tokens: 100_000_000, input_cost_per_1m: 0, output_cost_per_1m: 1 };
const base = { providers: simulatedProviders(sim.url), models: [PROBE] };

/** The free funds the admission of `gw` sees for this key's account, in µINR (from the probe's 402). */
async function freeFunds(gw: RunningGateway, funded: FundedKey): Promise<number> {
  const res = await probe(gw, funded, 99_999_000);
  if (res.status !== 402) throw new Error(`the probe was not refused: ${res.status} ${res.text.slice(0, 200)}`);
  const match = /max_tokens=(\d+)/.exec(String(res.json?.error?.message));
  if (!match) throw new Error(`the probe's 402 names no max_tokens: ${res.text}`);
  return Number(match[1]);
}

/** The probe call asking for `maxTokens` output tokens: 402 when the free funds are fewer µINR. */
function probe(gw: RunningGateway, funded: FundedKey, maxTokens: number): Promise<RawResponse> {
  return postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: PROBE_MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: maxTokens });
}

const BALANCE_INR = 10;
const BALANCE = BALANCE_INR * 1_000_000;

interface Path {
  name: string;
  /** Makes the call through `gw` as a client would (streams read to their end); returns the gateway's request id. */
  call(gw: RunningGateway, funded: FundedKey): Promise<string | null>;
}

const openai = (gw: RunningGateway, funded: FundedKey) => new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const anthropic = (gw: RunningGateway, funded: FundedKey) => new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 });
// Chat calls bill what the upstream reports: a sizable, known usage.
const USAGE = { usage: { input: 1200, output: 800 } };
const MESSAGES = [{ role: 'user' as const, content: 'Count to three.' }];

const PATHS: Path[] = [
  {
    name: 'chat completions, JSON',
    call: async (gw, f) => {
      sim.enqueue(USAGE);
      const { response } = await openai(gw, f).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: MESSAGES, max_tokens: 2000 }).withResponse();
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'chat completions, stream',
    call: async (gw, f) => {
      sim.enqueue(USAGE);
      const { data, response } = await openai(gw, f).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: MESSAGES, max_tokens: 2000, stream: true, stream_options: { include_usage: true } }).withResponse();
      for await (const chunk of data) void chunk;
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'messages, JSON (Anthropic family)',
    call: async (gw, f) => {
      sim.enqueue(USAGE);
      const { response } = await anthropic(gw, f).messages.create({ model: 'anthropic/claude-haiku-4-5', max_tokens: 2000, messages: MESSAGES }).withResponse();
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'messages, stream, translated to the OpenAI family',
    call: async (gw, f) => {
      sim.enqueue(USAGE);
      const { data, response } = await anthropic(gw, f).messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 2000, messages: MESSAGES, stream: true }).withResponse();
      for await (const event of data) void event;
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'responses, JSON (Gemini family)',
    call: async (gw, f) => {
      sim.enqueue(USAGE);
      const { response } = await openai(gw, f).responses.create({ model: 'gemini/gemini-2.5-flash', input: 'Count to three.', max_output_tokens: 2000 }).withResponse();
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'responses, stream',
    call: async (gw, f) => {
      sim.enqueue(USAGE);
      const { data, response } = await openai(gw, f).responses.create({ model: 'openai/gpt-4o-mini', input: 'Count to three.', max_output_tokens: 2000, stream: true }).withResponse();
      for await (const event of data) void event;
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'embeddings',
    call: async (gw, f) => {
      // text-embedding-3-large, 64 inputs: enough tokens to cost a few hundred µINR.
      const input = Array.from({ length: 64 }, (_, i) => `${i}: ${'the quick brown fox jumps over the lazy dog '.repeat(20)}`);
      const { response } = await openai(gw, f).embeddings.create({ model: 'openai/text-embedding-3-large', input, dimensions: 256 }).withResponse();
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'speech, streamed',
    call: async (gw, f) => {
      const response = await openai(gw, f).audio.speech.create({ model: 'openai/tts-1', voice: 'alloy', input: 'Numbers, counted aloud. '.repeat(150) });
      await response.arrayBuffer();
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'transcription',
    call: async (gw, f) => {
      const { response } = await openai(gw, f)
        .audio.transcriptions.create({ model: 'openai/whisper-1', file: await toFile(sampleAudio('wav'), 'sample.wav', { type: 'audio/wav' }) })
        .withResponse();
      return response.headers.get('x-request-id');
    },
  },
  {
    name: 'image generation',
    call: async (gw, f) => {
      const { response } = await openai(gw, f).images.generate({ model: 'openai/dall-e-2', prompt: 'a lighthouse', n: 1, size: '256x256' }).withResponse();
      return response.headers.get('x-request-id');
    },
  },
];

/**
 * Every path through `caller`, the probes through `prober` (the same daemon, or another one
 * sharing the store and Redis). `pending`: the first probe must find the charge not yet in the
 * ledger (its batch pending), so that it tests the hold at cost, not the ledger.
 */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

/** Applies the caller's pending batch and waits for its holds to be released (with Redis, over its own connection). */
async function settled(caller: RunningGateway, funded: FundedKey): Promise<void> {
  caller.app.settlement.drain();
  for (const deadline = Date.now() + 2000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 10))) {
    const held = await caller.app.holds.held(funded.accountId, funded.keyId);
    if (held.accountHeldMicros === 0 && held.keyHeldMicros === 0) return;
  }
}

async function everyPath(t: Tap, caller: RunningGateway, prober: RunningGateway, admin: TestGateway, pending: boolean, exact: boolean): Promise<void> {
  for (const path of PATHS) {
    await t.test(path.name, async (t) => {
      // The call's cost, from the same call on another account (every call here is deterministic).
      const calibration = await fundedKey(admin, { balance: BALANCE_INR });
      const calibrated = await path.call(caller, calibration);
      await settled(caller, calibration);
      const cost = (await usageRow(caller, calibrated ?? undefined))?.costMicros ?? Number.NaN;
      t.ok(cost >= 50, `one call costs ${cost} µINR (enough for the probe to see)`);

      const funded = await fundedKey(admin, { balance: BALANCE_INR });
      t.equal(await freeFunds(prober, funded), BALANCE, 'the probe reads the whole balance before the call');
      // Twice: the second call is admitted against what the first left.
      for (let round = 1; round <= 2; round++) {
        const requestId = await path.call(caller, funded);
        t.ok(requestId, `call ${round}: answered, with its request id`);
        if (pending) t.ok(caller.app.settlement.backlog > 0, `call ${round}: its charge is not in the ledger yet (its batch is pending)`);
        const expected = BALANCE - round * cost;
        // Straight after the answer (the charge possibly still waiting for its batch): one µINR
        // more than is left is refused. Admitting it would spend money the wallet no longer has.
        t.equal((await probe(prober, funded, expected + 1)).status, 402, `call ${round}: right after the answer, the next admission refuses one µINR more than the wallet has left`);
        const seen = await freeFunds(prober, funded);
        if (exact) t.equal(seen, expected, `call ${round}: and sees exactly the balance less every settled charge`);
        // Another daemon may still see the call's hold at its worst case for a few ms (the
        // lowered hold reaches Redis in a coalesced script): less money, never more.
        else t.ok(seen <= expected, `call ${round}: and sees at most the balance less every settled charge (${seen} ≤ ${expected})`);
        // The charge in the ledger, the hold released: exactly.
        await settled(caller, funded);
        t.equal((await usageRow(caller, requestId ?? undefined))?.costMicros, cost, `call ${round}: its usage row, at the same cost`);
        t.equal(await freeFunds(prober, funded), expected, `call ${round}: once in the ledger, exactly the balance less every charge`);
      }
      const balance = await admin.http('GET', `/api/management/accounts/${funded.accountId}/balance`, { token: admin.adminKey });
      t.equal(Math.round(balance.body.balance * 1_000_000), BALANCE - 2 * cost, 'the wallet: charged exactly the two calls');
    });
  }
}

t.test('one daemon', async (t) => {
  // A 5 s batch window: the charge is certainly still pending at the first probe.
  const gw = await startTestGateway({ ...base, database: { billing_batch_window: '5s' } });
  t.teardown(() => gw.stop());
  await everyPath(t, gw, gw, gw, TEST_BACKEND === 'sqlite', true);
});

t.test('two daemons sharing the store and Redis: the call on one, the next admission on the other', { skip: redisSkipReason() }, async (t) => {
  const { a, b } = await twoDaemonsOnRedis(t, base);
  await everyPath(t, a, b, a, false, false);
});
