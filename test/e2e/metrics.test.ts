import t from 'tap';
import { Agent, request } from 'undici';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { postJson, until } from '../support/e2e.js';
import { parseMetrics, seriesOf, total, type Sample } from '../support/prometheus.js';

/**
 * Prometheus metrics (issue 31): after known traffic (chat JSON and stream, embeddings, a
 * cache hit, a 402, a 429, an upstream 500 retried, an unknown model) each family's values;
 * the cost counter equal to the ledger's charges; cardinality bounded (5,000 keys and 500
 * unknown model names later, the same series); per-key series opt-in and capped; the token
 * and loopback rules.
 */

const MINI = 'openai/gpt-4o-mini';
const EMBED = 'openai/text-embedding-3-small';
const CHAT = '/v1/chat/completions';

let sim: ProviderSimulator;
t.before(async () => {
  sim = await ProviderSimulator.start();
});
t.teardown(async () => {
  await sim?.close();
});

async function scrape(gw: TestGateway, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(`${gw.url}/metrics`, { headers });
  if (res.status !== 200) throw new Error(`/metrics: ${res.status} ${await res.text()}`);
  if (!/^text\/plain; version=0\.0\.4/.test(res.headers.get('content-type') ?? '')) throw new Error(`content-type ${res.headers.get('content-type')}`);
  return parseMetrics(await res.text());
}

const chat = (gw: TestGateway, key: string, body: Record<string, unknown> = {}) =>
  postJson(`${gw.url}${CHAT}`, { authorization: `Bearer ${key}` }, { model: MINI, messages: [{ role: 'user', content: 'count me' }], max_tokens: 8, ...body });

t.test('after known traffic, each family counts what happened; the cost counter equals the ledger', async (t) => {
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), cache: { enabled: true, ttl: '1h', exact: { models: ['*'] } } });
  t.teardown(() => gw.stop());
  sim.reset();
  sim.setDefault({ text: 'metrics are counted' });
  const funded = await fundedKey(gw, { balance: 50 });
  const broke = await fundedKey(gw, { balance: 0 });
  const limited = await fundedKey(gw, { balance: 50, key: { rate_limit: 1 } });

  const statuses: Record<string, number> = {};
  const note = (name: string, status: number) => (statuses[name] = status);
  note('json miss', (await chat(gw, funded.key)).status);
  await gw.app.cache?.flush();
  await until('the answer cached', () => (gw.app.cache?.internals.store?.size.entries ?? 0) >= 1);
  note('json hit', (await chat(gw, funded.key)).status);
  const stream = await chat(gw, funded.key, { stream: true, messages: [{ role: 'user', content: 'stream me' }] });
  note('stream', stream.status);
  t.match(stream.text, /data: \[DONE\]/, 'the stream ran to its end');
  sim.enqueue({ error: { status: 500, message: 'boom' } });
  const retried = await chat(gw, funded.key, { messages: [{ role: 'user', content: 'retry me' }] });
  note('retried', retried.status);
  t.equal(retried.headers['x-gateway-attempts'], '2', 'the upstream 500 was retried once');
  note('embeddings', (await postJson(`${gw.url}/v1/embeddings`, { authorization: `Bearer ${funded.key}` }, { model: EMBED, input: 'embed me' })).status);
  note('unknown model', (await chat(gw, funded.key, { model: 'no-such/model-x' })).status);
  note('no funds', (await chat(gw, broke.key)).status);
  note('first of limited', (await chat(gw, limited.key, { messages: [{ role: 'user', content: 'limited' }] })).status);
  note('rate limited', (await chat(gw, limited.key, { messages: [{ role: 'user', content: 'limited' }] })).status);
  t.same(statuses, { 'json miss': 200, 'json hit': 200, stream: 200, retried: 200, embeddings: 200, 'unknown model': 404, 'no funds': 402, 'first of limited': 200, 'rate limited': 429 });

  gw.app.settlement.drain();
  const m = await scrape(gw);
  const req = (labels: Record<string, string>) => total(m, 'gateway_requests_total', labels);
  t.equal(req({ endpoint: CHAT, model: MINI, provider: 'openai', status: '200' }), 4, 'chat 200s served by openai: json miss, stream, retried, limited key first');
  t.equal(req({ endpoint: CHAT, model: MINI, provider: 'cache', status: '200' }), 1, 'the cache hit, under provider="cache"');
  t.equal(req({ endpoint: CHAT, model: 'unknown', status: '404' }), 1, 'an unknown model name is model="unknown"');
  t.equal(req({ endpoint: CHAT, model: MINI, provider: 'none', status: '402' }), 1, 'the 402, at the model asked for, no provider');
  t.equal(req({ endpoint: CHAT, model: MINI, provider: 'none', status: '429' }), 1, 'the 429');
  t.equal(req({ endpoint: '/v1/embeddings', model: EMBED, provider: 'openai', status: '200' }), 1, 'the embeddings call');
  t.equal(total(m, 'gateway_request_duration_seconds_count', { endpoint: CHAT }), 8, 'every chat request timed');
  t.equal(total(m, 'gateway_in_flight_requests', { endpoint: CHAT }), 0, 'nothing in flight');
  t.equal(total(m, 'gateway_in_flight_requests', { endpoint: '/metrics' }), 1, 'the scrape itself is in flight');

  t.equal(total(m, 'gateway_upstream_attempts_total', { model: MINI, outcome: 'ok' }), 4, 'four chat attempts answered');
  t.equal(total(m, 'gateway_upstream_attempts_total', { model: MINI, outcome: 'retried' }), 1, 'one attempt failed and was retried');
  t.equal(total(m, 'gateway_upstream_attempts_total', { model: EMBED, outcome: 'ok' }), 1);
  t.equal(total(m, 'gateway_upstream_duration_seconds_count', { model: MINI }), 4, 'answered attempts timed');
  t.equal(total(m, 'gen_ai_server_time_to_first_token_seconds_count', { model: MINI }), 1, 'one stream, one time to first token');
  const overheadCount = total(m, 'gateway_overhead_seconds_count', { endpoint: CHAT });
  t.equal(overheadCount, 4, 'overhead measured on the calls that went upstream');
  const overhead = total(m, 'gateway_overhead_seconds_sum', { endpoint: CHAT });
  t.ok(overhead > 0 && overhead < total(m, 'gateway_request_duration_seconds_sum', { endpoint: CHAT }), `overhead ${overhead}s is a share of the duration`);

  // Tokens and cost against the ledger and the usage rows.
  const rows = (await gw.app.store.usage.list({ limit: 1000 })).filter((row) => row.model === MINI);
  const input = rows.reduce((sum, row) => sum + row.inputTokens, 0);
  const output = rows.reduce((sum, row) => sum + row.outputTokens, 0);
  t.ok(input > 0 && output > 0, 'the calls used tokens');
  t.equal(total(m, 'gateway_tokens_total', { model: MINI, type: 'input' }), input, 'input tokens equal the usage rows\'');
  t.equal(total(m, 'gateway_tokens_total', { model: MINI, type: 'output' }), output, 'output tokens equal the usage rows\'');
  t.equal(total(m, 'gen_ai_client_token_usage_sum', { model: MINI, gen_ai_token_type: 'input' }), input);
  t.equal(total(m, 'gen_ai_client_token_usage_count', { model: MINI, gen_ai_token_type: 'input' }), rows.filter((row) => row.inputTokens > 0).length, 'one observation per call with tokens');
  let charged = 0;
  for (const account of [funded, broke, limited]) {
    for (const entry of await gw.app.store.ledger.list(account.accountId, 10_000)) if (entry.kind === 'charge') charged += -entry.amountMicros;
  }
  t.ok(charged > 0, 'the calls were charged');
  t.equal(total(m, 'gateway_cost_micro_inr_total'), charged, `the cost counter equals the ledger's charges (${charged} µINR)`);

  t.equal(total(m, 'gateway_cache_requests_total', { tier: 'exact', result: 'hit' }), 1, 'one exact hit');
  const misses = rows.filter((row) => row.cache === 'miss').length;
  t.ok(misses >= 3, 'misses recorded on the rows');
  t.equal(total(m, 'gateway_cache_requests_total', { tier: 'none', result: 'miss' }), misses, 'misses equal the rows\' misses');
  t.equal(total(m, 'gateway_settlement_pending'), 0, 'nothing waits for the ledger after a drain');
  t.equal(total(m, 'gateway_wallet_holds_micro_inr'), 0, 'no wallet holds once every call is in the ledger');
  t.ok(total(m, 'gateway_store_duration_seconds_count', { op: 'settle' }) >= 1, 'settlement batches timed');
  t.ok(m.some((s) => s.name === 'process_cpu_user_seconds_total') && m.some((s) => s.name === 'nodejs_eventloop_lag_seconds'), 'the process defaults');
  t.equal(total(m, 'gateway_redis_errors_total'), 0);
});

t.test('cardinality: 5,000 keys and 500 unknown model names later, the same series', async (t) => {
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(() => gw.stop());
  sim.reset();
  sim.setDefault({ text: 'ok' });
  const funded = await fundedKey(gw, { balance: 1000 });
  t.equal((await chat(gw, funded.key)).status, 200);
  t.equal((await chat(gw, funded.key, { model: 'unknown-0' })).status, 404);
  await fundedKey(gw, { balance: 0 }); // the management routes' series
  // Every family's series once (a settlement batch applied, the scrape's own route seen).
  gw.app.settlement.drain();
  await scrape(gw);
  const series = (m: Sample[]) => seriesOf(m, 'gateway_') + seriesOf(m, 'gen_ai_');
  const names = (m: Sample[]) => new Set(m.filter((s) => /^(gateway_|gen_ai_)/.test(s.name) && !/_(bucket|sum)$/.test(s.name)).map((s) => `${s.name}${JSON.stringify(s.labels)}`));
  const first = await scrape(gw);
  const before = series(first);

  const agent = new Agent({ connections: 32 });
  t.teardown(() => agent.close());
  const keys: string[] = [];
  for (let i = 0; i < 5000; i++) keys.push((await gw.app.keys.create('api', funded.accountId, { name: `k${i}`, rateLimit: 10_000 })).secret);
  const call = async (key: string, model: string): Promise<number> => {
    const res = await request(`${gw.url}${CHAT}`, { dispatcher: agent, method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }) });
    await res.body.dump();
    return res.statusCode;
  };
  const counts = new Map<number, number>();
  const work = [...keys.map((key) => () => call(key, MINI)), ...Array.from({ length: 500 }, (_, i) => () => call(funded.key, `no-such-model-${i}`))];
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (let job = work.shift(); job; job = work.shift()) {
        const status = await job();
        counts.set(status, (counts.get(status) ?? 0) + 1);
      }
    }),
  );
  t.same(Object.fromEntries(counts), { 200: 5000, 404: 500 }, '5,000 keys called once each; 500 unknown names refused');
  gw.app.settlement.drain();
  const m = await scrape(gw);
  const added = [...names(m)].filter((name) => !names(first).has(name));
  t.equal(series(m), before, `the gateway's series: ${before} before, the same after (added: ${added.join(' ') || 'none'})`);
  t.equal(total(m, 'gateway_requests_total', { endpoint: CHAT, model: 'unknown', status: '404' }), 501, 'every unknown name under model="unknown"');
  t.notOk(m.some((s) => Object.values(s.labels).some((v) => v.startsWith('no-such-model') || v.startsWith('key_'))), 'no label holds a model name the catalog does not know, nor a key');
});

t.test('per-key series are opt-in and capped at max_key_series, the rest as key="other"', async (t) => {
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), metrics: { key_labels: true, max_key_series: 3 } });
  t.teardown(() => gw.stop());
  sim.reset();
  sim.setDefault({ text: 'ok' });
  const keys = [];
  for (let i = 0; i < 5; i++) keys.push(await fundedKey(gw, { balance: 10 }));
  for (const key of keys) t.equal((await chat(gw, key.key)).status, 200);
  gw.app.settlement.drain();
  const m = await scrape(gw);
  const perKey = m.filter((s) => s.name === 'gateway_key_requests_total');
  t.same(perKey.map((s) => s.labels.key).sort(), [...keys.slice(0, 3).map((k) => k.keyId), 'other'].sort(), 'three keys by id, then "other"');
  t.equal(total(m, 'gateway_key_requests_total', { key: 'other' }), 2);
  let charged = 0;
  for (const key of keys) for (const entry of await gw.app.store.ledger.list(key.accountId, 100)) if (entry.kind === 'charge') charged += -entry.amountMicros;
  t.equal(total(m, 'gateway_key_cost_micro_inr_total'), charged, 'per-key cost sums to the ledger');
  const plain = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(() => plain.stop());
  t.notOk((await scrape(plain)).some((s) => s.name.startsWith('gateway_key_')), 'off by default');
});

t.test('without a token: loopback only, by the real client address; with one: the bearer token, loopback included', async (t) => {
  const gw = await startTestGateway({ server: { trust_proxy: true, trusted_proxies: ['127.0.0.1'] } });
  t.teardown(() => gw.stop());
  t.equal((await fetch(`${gw.url}/metrics`)).status, 200, 'loopback: served');
  for (const forwarded of ['203.0.113.5', '127.0.0.1, 203.0.113.5']) {
    const res = await fetch(`${gw.url}/metrics`, { headers: { 'x-forwarded-for': forwarded } });
    const body = (await res.json()) as { error: { code: number; type: string; message: string } };
    t.equal(res.status, 403, `forwarded for ${forwarded}: 403`);
    t.match(body.error, { code: 403, type: 'permission_error', message: /metrics\.token/ });
  }

  const token = 'metrics-token-0123456789';
  const guarded = await startTestGateway({ metrics: { token } });
  t.teardown(() => guarded.stop());
  const bare = await fetch(`${guarded.url}/metrics`);
  t.equal(bare.status, 401, 'no token, even from loopback: 401');
  t.match(await bare.json(), { error: { code: 401, type: 'authentication_error' } });
  t.equal((await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401, 'a wrong token: 401');
  const ok = await fetch(`${guarded.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(ok.status, 200, 'the token: 200');
  t.match(await ok.text(), /# TYPE gateway_requests_total counter/);

  const off = await startTestGateway({ metrics: { enabled: false } });
  t.teardown(() => off.stop());
  t.equal((await fetch(`${off.url}/metrics`)).status, 404, 'metrics.enabled: false serves nothing');
});

t.test('a deployment put to rest: its attempt counted as resting, the gauge at 1 while it rests, the call served by the other', async (t) => {
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  const gw = await startTestGateway({
    providers: {
      ...simulatedProviders(sim.url),
      primary: { type: 'openai', base_url: `${sim.url}/v1`, api_key: 'sim-key', timeouts: fast },
      secondary: { type: 'openai', base_url: `${sim.url}/v1`, api_key: 'sim-key', timeouts: fast },
    },
    routing: { retries: 2, max_retry_after: '2s' },
    models: [{ id: 'openai/pair-m', name: 'pair', input_cost_per_1m: 10, output_cost_per_1m: 20, deployments: [{ provider: 'primary', upstream_model: 'pair' }, { provider: 'secondary', upstream_model: 'pair', priority: 2 }] }],
  });
  t.teardown(() => gw.stop());
  sim.reset();
  sim.setDefault({ text: 'ok' });
  const funded = await fundedKey(gw, { balance: 10 });
  const before = await scrape(gw);
  t.equal(total(before, 'gateway_deployment_resting', { provider: 'primary', model: 'openai/pair-m' }), 0, 'a routed model\'s deployments are listed at 0');
  sim.enqueue({ error: { status: 429, retryAfterSeconds: 30 } });
  const res = await chat(gw, funded.key, { model: 'openai/pair-m' });
  t.equal(res.status, 200);
  t.equal(res.headers['x-gateway-provider'], 'secondary');
  const m = await scrape(gw);
  t.equal(total(m, 'gateway_upstream_attempts_total', { provider: 'primary', model: 'openai/pair-m', outcome: 'resting' }), 1, 'the 429 with a long Retry-After: resting');
  t.equal(total(m, 'gateway_upstream_attempts_total', { provider: 'secondary', model: 'openai/pair-m', outcome: 'ok' }), 1);
  t.equal(total(m, 'gateway_deployment_resting', { provider: 'primary', model: 'openai/pair-m' }), 1, 'the primary rests');
  t.equal(total(m, 'gateway_deployment_resting', { provider: 'secondary', model: 'openai/pair-m' }), 0);
  t.equal(total(m, 'gateway_requests_total', { model: 'openai/pair-m', provider: 'secondary', status: '200' }), 1, 'the request counted under the provider that served');
});

t.test('a call that gives up: the attempts before the last retried, the last failed; a client that leaves early is a 499; each counted as a cache miss', async (t) => {
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), routing: { retries: 2 }, cache: { enabled: true, ttl: '1h', exact: { models: ['*'] } } });
  t.teardown(() => gw.stop());
  sim.reset();
  sim.setDefault({ text: 'ok' });
  const funded = await fundedKey(gw, { balance: 10 });
  sim.enqueue({ error: { status: 500 } }, { error: { status: 500 } }, { error: { status: 500 } });
  const failed = await chat(gw, funded.key);
  t.equal(failed.status, 502, 'three upstream 500s: 502');
  let m = await scrape(gw);
  t.equal(total(m, 'gateway_upstream_attempts_total', { model: MINI, outcome: 'retried' }), 2, 'two attempts followed by another');
  t.equal(total(m, 'gateway_upstream_attempts_total', { model: MINI, outcome: 'failed' }), 1, 'the last one: the call gave up');
  t.equal(total(m, 'gateway_requests_total', { endpoint: CHAT, model: MINI, status: '502' }), 1);
  gw.app.settlement.drain();
  t.equal(total(m, 'gateway_cache_requests_total', { tier: 'none', result: 'miss' }), 1, 'its cache lookup missed: counted, though the call failed');
  t.equal((await gw.app.store.usage.list({ limit: 10 })).find((row) => row.status === 502)?.cache, 'miss', 'and on its usage row');

  // A client that leaves while the upstream is still thinking.
  sim.enqueue({ text: 'late', delayMs: 1500 });
  const controller = new AbortController();
  const pending = fetch(`${gw.url}${CHAT}`, { method: 'POST', signal: controller.signal, headers: { authorization: `Bearer ${funded.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: MINI, messages: [{ role: 'user', content: 'leave' }], max_tokens: 4 }) }).catch(() => undefined);
  await until('the call reached the upstream', () => sim.requests.length >= 4);
  controller.abort();
  await pending;
  await until('the call ended', async () => total(parseMetrics(await (await fetch(`${gw.url}/metrics`)).text()), 'gateway_requests_total', { endpoint: CHAT, status: '499' }) === 1);
  m = await scrape(gw);
  t.equal(total(m, 'gateway_requests_total', { endpoint: CHAT, status: '200' }), 0, 'not counted as a 200');
  t.equal(total(m, 'gateway_upstream_attempts_total', { model: MINI, outcome: 'cancelled' }), 1, 'its attempt: cancelled, not an upstream failure');
  t.equal(total(m, 'gateway_cache_requests_total', { tier: 'none', result: 'miss' }), 2, 'its lookup missed too');
});
