import t from 'tap';
import type { RunningGateway } from '../../src/main.js';
import { postJson, twoDaemonsOnRedis } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * A key's tpm_limit (issue 30): tokens per minute, input + output. Admission counts each call
 * at its bound (prompt bound + max_tokens), so calls in flight together never pass the limit;
 * settlement counts the real figure instead, giving the rest back at once. Refusals are 429
 * tpm_limit_exceeded with retry-after and OpenAI's x-ratelimit-*-tokens headers. With Redis,
 * one minute across the daemons.
 */

let sim: ProviderSimulator;

t.before(async () => {
  sim = await ProviderSimulator.start();
});
t.teardown(async () => {
  await sim?.close();
});

const chat = (gw: RunningGateway, key: string, maxTokens: number) =>
  postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens });

t.test('counted at its bound while in flight, at its real figure once settled', async (t) => {
  const gw: TestGateway = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(() => gw.stop());
  const { key, keyId } = await fundedKey(gw, { balance: 50, key: { tpm_limit: 300 } });
  t.equal((await gw.http('GET', `/api/management/api-keys/${keyId}`, { token: gw.adminKey })).body.tpm_limit, 300);

  // Six calls at once, each bounded at a little over 80 tokens: three fit in 300, in flight.
  sim.reset();
  sim.setDefault({ text: 'ok', delayMs: 400 });
  const together = await Promise.all(Array.from({ length: 6 }, () => chat(gw, key, 80)));
  const admitted = together.filter((res) => res.status === 200);
  const refused = together.filter((res) => res.status === 429);
  t.equal(admitted.length, 3, `three admitted at their bound (${together.map((res) => res.status).join(',')})`);
  t.equal(refused.length, 3);
  const first = refused[0];
  t.match(first?.json.error, { code: 429, type: 'rate_limit_exceeded', reason: 'tpm_limit_exceeded', message: /token limit of 300 tokens per minute/ });
  t.equal(first?.headers['x-ratelimit-limit-tokens'], '300');
  t.ok(Number(first?.headers['retry-after']) >= 1 && Number(first?.headers['retry-after']) <= 60, 'retry-after within the minute');
  t.equal(sim.requests.length, 3, 'refused calls never went upstream');

  // Settled: each counts its real tokens (a dozen), so ten more calls of the same bound fit in
  // the same minute, which their bounds alone (800+) would not.
  sim.setDefault({ text: 'ok' });
  for (let i = 0; i < 10; i++) {
    const res = await chat(gw, key, 80);
    if (res.status !== 200) {
      t.fail(`call ${i} after settlement: ${res.status} ${res.text}`);
      break;
    }
  }
  t.pass('the real figures left room for ten more');

  // A call alone larger than the limit is admitted only into an empty minute.
  const big = await chat(gw, key, 400);
  t.equal(big.status, 429, 'the minute is not empty: a bound of 400+ does not fit');
  const { key: fresh } = await fundedKey(gw, { balance: 50, key: { tpm_limit: 300 } });
  t.equal((await chat(gw, fresh, 400)).status, 200, 'an empty minute takes it');
  sim.reset();
});

t.test('tpm_limit across two daemons on Redis', async (t) => {
  const { a, b } = await twoDaemonsOnRedis(t, { providers: simulatedProviders(sim.url) });
  const { key } = await fundedKey(a, { balance: 50, key: { tpm_limit: 200 } });
  sim.reset();
  sim.setDefault({ text: 'ok', delayMs: 400 });
  const [onA, onB] = await Promise.all([chat(a, key, 120), new Promise((resolve) => setTimeout(resolve, 100)).then(() => chat(b, key, 120))]);
  t.equal(onA.status, 200);
  t.equal(onB.status, 429, "b sees a's call in flight");
  t.equal(onB.json.error.reason, 'tpm_limit_exceeded');
  sim.reset();
});

t.test('tpm_limit on create and update', async (t) => {
  const gw: TestGateway = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(() => gw.stop());
  const { accountId, keyId } = await fundedKey(gw, { balance: 5 });
  for (const bad of [-5, 1.5, 'many', 2_000_000_000]) {
    const res = await gw.http('POST', `/api/management/accounts/${accountId}/api-keys`, { token: gw.adminKey, body: { name: 'x', tpm_limit: bad } });
    t.equal(res.status, 400, `tpm_limit ${JSON.stringify(bad)}`);
    t.equal(res.body.error.param, 'tpm_limit');
  }
  t.equal((await gw.http('PATCH', `/api/management/api-keys/${keyId}`, { token: gw.adminKey, body: { tpm_limit: 5000 } })).body.tpm_limit, 5000);
  t.equal((await gw.http('PATCH', `/api/management/api-keys/${keyId}`, { token: gw.adminKey, body: { tpm_limit: null } })).body.tpm_limit, null);
});
