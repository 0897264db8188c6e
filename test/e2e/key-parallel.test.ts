import OpenAI from 'openai';
import t from 'tap';
import { postJson, twoDaemonsOnRedis, until } from '../support/e2e.js';
import type { RunningGateway } from '../../src/main.js';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * A key's max_parallel (issue 30): exactly N of its calls in flight at once, the next one 429
 * with retry-after; a slot is free again as soon as a response ends (the client may go on at
 * once), or its client leaves. With Redis, N across every daemon.
 */

let sim: ProviderSimulator;

t.before(async () => {
  sim = await ProviderSimulator.start();
});
t.teardown(async () => {
  await sim?.close();
});

/** A stream that stays open (the upstream hangs after two events) until `abort()`. */
async function openStream(gw: RunningGateway, key: string): Promise<{ abort: () => void; done: Promise<unknown> }> {
  const controller = new AbortController();
  const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 50 }, { signal: controller.signal });
  const iterator = stream[Symbol.asyncIterator]();
  await iterator.next(); // admitted and streaming
  const done = (async () => {
    try {
      for (;;) if ((await iterator.next()).done) return;
    } catch {
      // aborted
    }
  })();
  return { abort: () => controller.abort(), done };
}

const chat = (gw: RunningGateway, key: string) =>
  postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 });

t.test('exactly max_parallel streams in flight; the next is 429 with retry-after; a slot frees when a stream ends', async (t) => {
  const gw: TestGateway = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(() => gw.stop());
  const { key, keyId } = await fundedKey(gw, { balance: 50, key: { max_parallel: 2 } });
  const shown = await gw.http('GET', `/api/management/api-keys/${keyId}`, { token: gw.adminKey });
  t.equal(shown.body.max_parallel, 2, 'the key shows its max_parallel');

  sim.reset();
  sim.setDefault({ text: 'one two three four five six', hangAfterEvents: 2 });
  const first = await openStream(gw, key);
  const second = await openStream(gw, key);
  const refused = await chat(gw, key);
  t.equal(refused.status, 429, refused.text);
  t.match(refused.json.error, { code: 429, type: 'rate_limit_exceeded', reason: 'max_parallel_exceeded', message: /2 calls in flight at once \(max_parallel\)/ });
  t.equal(refused.headers['retry-after'], '1');
  const sdk = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const error: unknown = await sdk.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
  t.ok(error instanceof OpenAI.RateLimitError && error.status === 429, 'the SDK sees a RateLimitError');

  first.abort();
  await first.done;
  sim.setDefault({ text: 'done' });
  await until('the aborted stream gives its slot back', async () => (await chat(gw, key)).status === 200);
  second.abort();
  await second.done;

  // Calls one after another never meet the limit: each response's end frees its slot first.
  const { key: single } = await fundedKey(gw, { balance: 50, key: { max_parallel: 1 } });
  for (let i = 0; i < 20; i++) {
    const res = await chat(gw, single);
    if (res.status !== 200) t.fail(`call ${i}: ${res.status} ${res.text}`);
  }
  // And a key without the limit runs any number at once.
  const { key: free } = await fundedKey(gw, { balance: 50 });
  sim.setDefault({ text: 'slow', delayMs: 300 });
  const many = await Promise.all(Array.from({ length: 6 }, () => chat(gw, free)));
  t.same(many.map((res) => res.status), [200, 200, 200, 200, 200, 200], 'no max_parallel: no limit');
  sim.reset();
});

t.test('max_parallel across two daemons on Redis: N in flight between them', async (t) => {
  const { a, b } = await twoDaemonsOnRedis(t, { providers: simulatedProviders(sim.url) });
  const { key } = await fundedKey(a, { balance: 50, key: { max_parallel: 2 } });
  sim.reset();
  sim.setDefault({ text: 'one two three four five six', hangAfterEvents: 2 });
  const onA = await openStream(a, key);
  const onB = await openStream(b, key);
  for (const gw of [a, b]) {
    const res = await chat(gw, key);
    t.equal(res.status, 429, `the third call is refused on either daemon (${res.text.slice(0, 100)})`);
    t.equal(res.json.error.reason, 'max_parallel_exceeded');
  }
  onB.abort();
  await onB.done;
  sim.setDefault({ text: 'done' });
  await until("b's ended stream frees a slot for a", async () => (await chat(a, key)).status === 200);
  onA.abort();
  await onA.done;
  sim.reset();
});

t.test('max_parallel on create and update: bad values are 400 naming the field; null clears', async (t) => {
  const gw: TestGateway = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(() => gw.stop());
  const { accountId, keyId } = await fundedKey(gw, { balance: 5 });
  for (const bad of [0.5, -1, 10_001, 'two']) {
    const res = await gw.http('POST', `/api/management/accounts/${accountId}/api-keys`, { token: gw.adminKey, body: { name: 'x', max_parallel: bad } });
    t.equal(res.status, 400, `max_parallel ${JSON.stringify(bad)}`);
    t.match(res.body.error, { param: 'max_parallel', message: /^max_parallel: must be an integer from 1 to 10000/ });
  }
  const set = await gw.http('PATCH', `/api/management/api-keys/${keyId}`, { token: gw.adminKey, body: { max_parallel: 3 } });
  t.equal(set.body.max_parallel, 3);
  const cleared = await gw.http('PATCH', `/api/management/api-keys/${keyId}`, { token: gw.adminKey, body: { max_parallel: null } });
  t.equal(cleared.body.max_parallel, null, 'null clears');
});
