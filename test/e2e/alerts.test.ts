import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { postJson, twoDaemonsOnRedis, until } from '../support/e2e.js';
import { redisSkipReason } from '../support/redis.js';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * Alerts (issue 30): a key at 80% and 100% of its budget, an account at its spend limit, a
 * wallet below balance_low_inr, a resting deployment; each raised once per subject and period,
 * POSTed to the webhook signed with HMAC-SHA256 (x-gateway-signature), with a Slack-style
 * `text`, retried after a 500; a webhook that never answers slows no call; the last alerts
 * listed for admins.
 */

const SECRET = 'whsec-test-0123456789';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  json: Record<string, unknown>;
}

/** A webhook receiver: answers with `statuses` in turn (then 200), or never (`hang`). */
async function receiver(t: Tap, options: { statuses?: number[]; hang?: boolean } = {}): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const statuses = [...(options.statuses ?? [])];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ headers: req.headers, body, json: JSON.parse(body) as Record<string, unknown> });
      if (options.hang) return;
      res.writeHead(statuses.shift() ?? 200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

let sim: ProviderSimulator;
t.before(async () => {
  sim = await ProviderSimulator.start();
});
t.teardown(async () => {
  await sim?.close();
});

const chat = (gw: TestGateway, key: string) =>
  postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });

t.test("a key's budget at 80% and 100%: each sent once, signed, Slack-ready, retried after a 500", async (t) => {
  const hook = await receiver(t, { statuses: [500] });
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), alerts: { webhook_url: hook.url, webhook_secret: SECRET } });
  t.teardown(() => gw.stop());
  const { key, keyId, accountId } = await fundedKey(gw, { balance: 50, key: { budget: 0.003, budget_period: 'daily' } });
  sim.setDefault({ text: 'hello there' });
  const statuses: number[] = [];
  for (let i = 0; i < 40; i++) {
    const res = await chat(gw, key);
    statuses.push(res.status);
    if (res.status === 402) break;
    // The monitor checks a moment after calls end (gathering them); here, after each one.
    await gw.app.alerts.flush(0);
  }
  t.equal(statuses.at(-1), 402, `calls until the budget refuses one (${statuses.join(',')})`);
  await gw.app.alerts.flush(10_000);
  const forKey = hook.received.filter((r) => r.json.subject === keyId);
  const delivered = new Map(forKey.map((r) => [r.json.id, r]));
  t.same([...delivered.values()].map((r) => r.json.threshold).sort(), [100, 80], 'one alert at 80%, one at 100% (the sum of their attempts)');
  t.equal(forKey.length, 3, 'the first POST got a 500 and was sent again');
  for (const r of forKey) {
    const expected = `sha256=${createHmac('sha256', SECRET).update(r.body).digest('hex')}`;
    t.equal(r.headers['x-gateway-signature'], expected, 'signed over the exact body');
    t.equal(r.headers['x-gateway-event'], 'key_budget');
    t.equal(r.headers['content-type'], 'application/json');
    t.match(r.json, { event: 'key_budget', subject: keyId, account_id: accountId, period: 'daily', limit_inr: 0.003 });
    // Ids are base64url: they may hold '-' or '_', so the sentence is matched with the id itself.
    t.ok(String(r.json.text).startsWith(`The API key 'test' (${keyId}) of user-`), `the sentence names the key: ${String(r.json.text)}`);
    t.match(r.json.text, /@example\.com has (used 80% of|reached) its daily budget of ₹0\.003/, 'a sentence a Slack channel shows as is');
    t.notMatch(r.body, SECRET, 'the secret is never in the body');
  }
  // More calls in the same period raise nothing new.
  await chat(gw, key);
  await gw.app.alerts.flush(5000);
  t.equal(hook.received.filter((r) => r.json.subject === keyId).length, 3, 'at most one per threshold and period');

  const listed = await gw.http('GET', '/api/management/alerts', { token: gw.adminKey });
  t.equal(listed.status, 200);
  const mine = (listed.body.data as Array<Record<string, unknown>>).filter((a) => a.subject === keyId);
  t.equal(mine.length, 2);
  t.match(mine[0], { event: 'key_budget', delivery: 'delivered', account_id: accountId, text: /has reached its daily budget/ });
  t.equal(mine.find((a) => (a.payload as { threshold: number }).threshold === 80)?.attempts, 2, '80% took two attempts');
});

t.test('balance_low and account_spend_limit; no webhook: recorded and listed, sent nowhere', async (t) => {
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), alerts: { balance_low_inr: 49.999 } });
  t.teardown(() => gw.stop());
  const { key, accountId } = await fundedKey(gw, { balance: 50 });
  await gw.http('PATCH', `/api/management/accounts/${accountId}`, { token: gw.adminKey, body: { spend_limit: 0.003, spend_period: 'monthly' } });
  sim.setDefault({ text: 'hello there' });
  for (let i = 0; i < 30; i++) if ((await chat(gw, key)).status !== 200) break;
  await gw.app.alerts.flush(5000);
  const listed = await gw.http('GET', '/api/management/alerts?limit=100', { token: gw.adminKey });
  const events = (listed.body.data as Array<{ event: string; subject: string; delivery: string; payload: Record<string, unknown> }>).filter((a) => a.subject === accountId);
  t.same(events.map((a) => `${a.event}:${a.payload.threshold ?? ''}`).sort(), ['account_spend_limit:100', 'account_spend_limit:80', 'balance_low:'], `each once (${JSON.stringify(events.map((a) => a.payload.text))})`);
  t.ok(events.every((a) => a.delivery === 'not_sent'), 'no webhook: not sent');
  t.match(events.find((a) => a.event === 'balance_low')?.payload, { threshold_inr: 49.999, text: /below ₹49\.999/ });
  const user = await gw.http('POST', `/api/management/accounts/${accountId}/management-keys`, { token: gw.adminKey, body: { name: 'tool' } });
  t.equal((await gw.http('GET', '/api/management/alerts', { token: user.body.management_key as string })).status, 403, 'admins only');
});

t.test('a webhook that never answers slows no call', async (t) => {
  const hook = await receiver(t, { hang: true });
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), alerts: { webhook_url: hook.url, balance_low_inr: 1000 } });
  t.teardown(() => gw.stop());
  const { key } = await fundedKey(gw, { balance: 50 });
  sim.setDefault({ text: 'hello there' });
  for (let i = 0; i < 5; i++) t.equal((await chat(gw, key)).status, 200);
  await until('the alert reached the hanging webhook', () => hook.received.length > 0);
  // The webhook holds its request open; calls go on answering meanwhile.
  for (let i = 0; i < 5; i++) t.equal((await chat(gw, key)).status, 200, 'answered while the webhook hangs');
  t.equal(hook.received.length, 1, 'one alert a day for a low balance');
});

t.test('a resting deployment: one alert, though both daemons on Redis rest it', { skip: redisSkipReason() }, async (t) => {
  const hook = await receiver(t);
  const [failing, healthy] = await Promise.all([ProviderSimulator.start(), ProviderSimulator.start()]);
  t.teardown(async () => Promise.all([failing.close(), healthy.close()]).then(() => undefined));
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  const { a, b } = await twoDaemonsOnRedis(t, {
    providers: {
      ...simulatedProviders(failing.url),
      openai: { type: 'openai', base_url: `${failing.url}/v1`, api_key: 'sim-key', timeouts: fast },
      'openai-eu': { type: 'openai', base_url: `${healthy.url}/v1`, api_key: 'sim-key', timeouts: fast },
    },
    routing: { cooldown: { failures: 2, window: '60s', duration: '60s' } },
    alerts: { webhook_url: hook.url, webhook_secret: SECRET },
    models: [{ id: 'openai/shared', name: 'shared', input_cost_per_1m: 1, output_cost_per_1m: 2, context_window: 8000, max_output_tokens: 1000, deployments: [{ provider: 'openai', upstream_model: 'shared' }, { provider: 'openai-eu', upstream_model: 'shared', priority: 2 }] }],
  });
  const { key } = await fundedKey(a, { balance: 10 });
  failing.setDefault({ error: { status: 500 } });
  for (const gw of [a, b]) {
    const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, { model: 'openai/shared', messages: [{ role: 'user', content: 'hi' }] });
    t.equal(res.status, 200, 'the next deployment answers');
  }
  for (const gw of [a, b]) await until('both daemons rest it', () => gw.app.routes.deploymentRest('openai:shared', Date.now()) !== undefined, 2000);
  await until('the alert reaches the webhook', () => hook.received.some((r) => r.json.event === 'deployment_resting'), 5000);
  await Promise.all([a.app.alerts.flush(2000), b.app.alerts.flush(2000)]);
  const resting = hook.received.filter((r) => r.json.event === 'deployment_resting');
  t.equal(resting.length, 1, 'one alert for both daemons');
  t.match(resting[0]?.json, { subject: 'openai:shared', reason: 'failures', text: /Deployment openai:shared is resting until/ });
});
