import t from 'tap';
import { buildReport } from '../../src/cli/commands/status.js';
import { bucketsOf, histogramQuantile, MetricsParseError, parsePrometheusText, parseSampleLine, percentiles, sumOf } from '../../src/cli/prometheus.js';
import { closedPort, lines, runCli, type CliResult } from '../support/cli.js';
import { postJson, until } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * `gateway status`: the Prometheus text reader (labels, bucket quantiles) on its own; then the
 * command in a child process against a real daemon after known traffic (its numbers against
 * the ledger and the usage rows), a daemon that is not ready, an unreachable one, and a
 * token-protected /metrics.
 */

const MINI = 'openai/gpt-4o-mini';
const ANSI = /\u001b\[/;

function doc<T = any>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code}):\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  }
}

/** Floating point: equal to 1e-12. */
function near(t: Pick<typeof import('tap'), 'ok'>, actual: number | null, expected: number, what: string): void {
  t.ok(actual !== null && Math.abs(actual - expected) < 1e-12, `${what} (${actual} ≈ ${expected})`);
}

t.test('the Prometheus text reader', async (t) => {
  t.test('labels, escapes and values', async (t) => {
    const sample = parseSampleLine('gateway_requests_total{endpoint="/v1/chat",model="say \\"hi\\", {now}",path="C:\\\\dir\\nnext"} 12 1700000000000');
    t.same(sample, { name: 'gateway_requests_total', labels: { endpoint: '/v1/chat', model: 'say "hi", {now}', path: 'C:\\dir\nnext' }, value: 12 }, 'escaped quote, backslash and newline; a brace and comma inside a value; a timestamp');
    t.same(parseSampleLine('up 1'), { name: 'up', labels: {}, value: 1 }, 'no labels');
    t.same(parseSampleLine('x{a="1",} 2.5e-3'), { name: 'x', labels: { a: '1' }, value: 0.0025 }, 'a trailing comma; an exponent');
    t.equal(parseSampleLine('h_bucket{le="+Inf"} +Inf').value, Infinity);
    t.ok(Number.isNaN(parseSampleLine('g NaN').value));
    t.ok(Number.isNaN(parseSampleLine('nodejs_eventloop_lag_mean_seconds Nan').value), 'prom-client\'s "Nan"');
    t.equal(parseSampleLine('g -Inf').value, -Infinity);
    const text = '# HELP a_total help text\n# TYPE a_total counter\na_total{k="x"} 1\na_total{k="y"} 2\n\nb 3\n';
    const samples = parsePrometheusText(text);
    t.equal(samples.length, 3, 'comments and blank lines skipped');
    t.equal(sumOf(samples, 'a_total'), 3);
    t.equal(sumOf(samples, 'a_total', { k: 'y' }), 2);
    t.equal(sumOf(samples, 'a_total', { k: (v) => v !== 'y' }), 1);
    t.throws(() => parsePrometheusText('ok 1\nbad{a=1} 2\n'), MetricsParseError, 'an unquoted label value');
    t.throws(() => parsePrometheusText('bad{a="1"'), MetricsParseError, 'an unterminated label set');
    t.throws(() => parsePrometheusText('bad 1 2 3'), MetricsParseError, 'too many fields');
    t.throws(() => parsePrometheusText('<html>'), MetricsParseError, 'not the text format');
  });

  t.test('histogram quantiles as histogram_quantile() computes them', async (t) => {
    const buckets = [
      { le: 0.1, count: 10 },
      { le: 0.5, count: 30 },
      { le: 1, count: 40 },
      { le: Infinity, count: 40 },
    ];
    near(t, histogramQuantile(0.5, buckets), 0.3, 'p50: rank 20, 10 of the 20 in (0.1, 0.5]');
    near(t, histogramQuantile(0.95, buckets), 0.9, 'p95: rank 38, 8 of the 10 in (0.5, 1]');
    t.equal(histogramQuantile(0.25, buckets), 0.1, 'a rank at a bucket\'s top is its bound');
    near(t, histogramQuantile(0.1, buckets), 0.04, 'the first bucket starts at 0');
    const tail = [
      { le: 1, count: 5 },
      { le: 2, count: 8 },
      { le: Infinity, count: 10 },
    ];
    t.equal(histogramQuantile(0.95, tail), 2, 'a rank in the +Inf bucket answers the highest finite bound');
    t.equal(histogramQuantile(0.5, [{ le: 1, count: 0 }, { le: Infinity, count: 0 }]), null, 'no observations');
    t.equal(histogramQuantile(0.5, [{ le: 1, count: 3 }]), null, 'no +Inf bucket');
    near(t, histogramQuantile(0.5, [...buckets].reverse()), 0.3, 'order does not matter');

    const samples = parsePrometheusText(
      ['h_bucket{e="a",le="0.1"} 10', 'h_bucket{e="a",le="0.5"} 10', 'h_bucket{e="a",le="+Inf"} 10', 'h_bucket{e="b",le="0.1"} 0', 'h_bucket{e="b",le="0.5"} 20', 'h_bucket{e="b",le="+Inf"} 30', 'h_count{e="a"} 10', 'h_count{e="b"} 30'].join('\n'),
    );
    t.same(bucketsOf(samples, 'h'), [{ le: 0.1, count: 10 }, { le: 0.5, count: 30 }, { le: Infinity, count: 40 }], 'series summed by bound');
    const one = percentiles(samples, 'h', { e: 'a' });
    near(t, one.p50, 0.05, 'one series: p50');
    near(t, one.p95, 0.095, 'one series: p95');
    t.equal(one.count, 10, 'one series: its count');
    near(t, percentiles(samples, 'h').p50, 0.3, 'both series');
    t.equal(percentiles(samples, 'h').p95, 0.5, 'rank 38 lands in +Inf: the highest finite bound');
  });

  t.test('a report from a scrape: probes aside, rates, null where nothing was measured', async (t) => {
    const samples = parsePrometheusText(
      [
        'gateway_requests_total{endpoint="/v1/chat/completions",model="m",provider="p",status="200"} 3',
        'gateway_requests_total{endpoint="/v1/chat/completions",model="unknown",provider="none",status="404"} 1',
        'gateway_requests_total{endpoint="/health/ready",model="none",provider="none",status="200"} 50',
        'gateway_requests_total{endpoint="/metrics",model="none",provider="none",status="200"} 9',
        'gateway_in_flight_requests{endpoint="/metrics"} 1',
        'gateway_upstream_attempts_total{provider="p",model="m",outcome="ok"} 3',
        'gateway_upstream_attempts_total{provider="p",model="m",outcome="retried"} 1',
        'gateway_cost_micro_inr_total{model="m"} 1500',
        'gateway_wallet_holds_micro_inr 2500000',
        'gateway_deployment_resting{provider="p",model="m"} 1',
        'gateway_deployment_resting{provider="q",model="m"} 0',
      ].join('\n'),
    );
    const report = buildReport('http://x', 503, { status: 'not_ready', db: 'error', redis: 'disabled', error: { message: 'the database does not answer', reason: 'database_unavailable' } }, samples);
    t.equal(report.ready, false);
    t.same(report.readiness, { http_status: 503, status: 'not_ready', db: 'error', redis: 'disabled', reason: 'database_unavailable', message: 'the database does not answer', unapplied_calls: null });
    t.same(report.requests, { total: 4, by_class: { '2xx': 3, '3xx': 0, '4xx': 1, '5xx': 0 }, in_flight: 0, error_rate: 0.25, server_error_rate: 0 }, 'health checks and scrapes are not traffic');
    t.same(report.upstream.attempts, { total: 4, ok: 3, retried: 1, failed: 0, resting: 0 });
    t.equal(report.upstream.failure_rate, 0.25);
    t.same(report.latency_seconds, { p50: null, p95: null }, 'no histogram: null');
    t.same(report.charged, { micro_inr: 1500, inr: 0.0015 });
    t.same(report.wallet_holds, { micro_inr: 2500000, inr: 2.5 });
    t.same(report.deployments_resting, { count: 1, deployments: [{ provider: 'p', model: 'm' }] });
    t.equal(report.cache.hit_ratio, null, 'no lookups: no ratio');
    t.equal(report.process.rss_bytes, null, 'no process metrics: null');
  });
});

t.test('status of a daemon after known traffic', async (t) => {
  const sim = await ProviderSimulator.start();
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), cache: { enabled: true, ttl: '1h', exact: { models: ['*'] } } });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  sim.setDefault({ text: 'status is counted', usage: { input: 40, output: 12 } });
  // Three management calls (201 each).
  const funded = await fundedKey(gw, { balance: 20 });
  const chat = (body: Record<string, unknown> = {}) =>
    postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: MINI, messages: [{ role: 'user', content: 'hello' }], ...body });

  const statuses: number[] = [];
  statuses.push((await chat()).status);
  await gw.app.cache?.flush();
  await until('the answer cached', () => (gw.app.cache?.internals.store?.size.entries ?? 0) >= 1);
  statuses.push((await chat()).status); // the exact-cache hit
  statuses.push((await chat({ messages: [{ role: 'user', content: 'second' }] })).status);
  statuses.push((await chat({ messages: [{ role: 'user', content: 'third' }], stream: true })).status);
  statuses.push((await chat({ model: 'no-such/model-x' })).status);
  t.same(statuses, [200, 200, 200, 200, 404], 'four answers and one unknown model');
  const upstreamCalls = 3;
  gw.app.settlement.drain();

  const result = await runCli(['status', '--json', '--url', gw.url]);
  t.equal(result.code, 0, 'exits 0: ready');
  t.equal(result.stderr, '', 'nothing on stderr');
  const report = doc(result);
  t.same(Object.keys(report), ['url', 'ready', 'readiness', 'requests', 'latency_seconds', 'overhead_seconds', 'upstream', 'tokens', 'charged', 'cache', 'wallet_holds', 'settlement_pending', 'deployments_resting', 'process'], 'stable top-level keys');
  t.equal(report.url, gw.url);
  t.equal(report.ready, true);
  t.match(report.readiness, { http_status: 200, status: 'ready', db: 'ok', redis: 'disabled', reason: null, message: null });
  t.same(report.requests, { total: 8, by_class: { '2xx': 7, '3xx': 0, '4xx': 1, '5xx': 0 }, in_flight: 0, error_rate: 1 / 8, server_error_rate: 0 }, '3 management calls and 5 chat calls; the probe and the scrape aside');
  t.same(report.upstream.attempts, { total: upstreamCalls, ok: upstreamCalls, retried: 0, failed: 0, resting: 0 }, 'one ok attempt per call that went upstream (the cache hit did not)');
  t.equal(report.upstream.failure_rate, 0);
  for (const [name, p] of Object.entries({ latency: report.latency_seconds, overhead: report.overhead_seconds, upstream: report.upstream.latency_seconds }) as [string, { p50: number; p95: number }][]) {
    t.ok(typeof p.p50 === 'number' && p.p50 > 0 && p.p95 >= p.p50, `${name}: p50 ${p.p50} s, p95 ${p.p95} s`);
  }

  const rows = (await gw.app.store.usage.list({ limit: 1000 })).filter((row) => row.model === MINI);
  const input = rows.reduce((sum, row) => sum + row.inputTokens, 0);
  const output = rows.reduce((sum, row) => sum + row.outputTokens, 0);
  t.ok(report.tokens.input > 0 && report.tokens.output > 0, 'tokens counted');
  t.same(report.tokens, { input, output, cache_read: 0, cache_write: 0 }, 'tokens equal the usage rows\'');
  const charged = (await gw.app.store.ledger.list(funded.accountId, 10_000)).filter((e) => e.kind === 'charge').reduce((sum, e) => sum - e.amountMicros, 0);
  t.ok(charged > 0, 'the calls were charged');
  t.same(report.charged, { micro_inr: charged, inr: charged / 1_000_000 }, `INR charged equals the ledger's charges (${charged} µINR)`);
  t.same(report.cache, { lookups: 4, hits: 1, misses: 3, bypasses: 0, hit_ratio: 0.25 }, 'one hit in four lookups');
  t.same(report.wallet_holds, { micro_inr: 0, inr: 0 }, 'nothing held once every call settled');
  t.equal(report.settlement_pending, 0);
  t.same(report.deployments_resting, { count: 0, deployments: [] });
  t.ok(report.process.rss_bytes > 0, 'RSS');
  t.equal(typeof report.process.event_loop_lag_seconds, 'number', 'event-loop lag');
  t.equal(typeof report.process.uptime_seconds, 'number', 'uptime');

  const human = await runCli(['status', '--url', gw.url]);
  t.equal(human.code, 0, 'human output exits 0');
  t.equal(human.stderr, '');
  t.notMatch(human.stdout, ANSI, 'plain text without a TTY');
  t.match(human.stdout, new RegExp(`gateway ${gw.url.replace(/[.]/g, '\\.')}: ready`), 'the title says ready');
  t.match(human.stdout, /readiness\s+ready\n/);
  t.match(human.stdout, /dependencies\s+db ok, redis disabled\n/);
  t.match(human.stdout, /requests\s+\d+ \(2xx \d+, 3xx 0, 4xx 1, 5xx 0\), 0 in flight/);
  t.match(human.stdout, /upstream attempts\s+3 \(3 ok, 0 retried, 0 failed, 0 resting\)/);
  t.match(human.stdout, /latency\s+p50 [\d.]+ m?s, p95 [\d.]+ m?s/);
  t.match(human.stdout, new RegExp(`tokens\\s+${input} in, ${output} out`));
  t.match(human.stdout, /charged\s+₹0\.\d+/);
  t.match(human.stdout, /response cache\s+25\.0% hits \(1 hits, 3 misses, 0 bypassed\)/);
  t.match(human.stdout, /deployments resting\s+none/);
  t.match(human.stdout, /process\s+RSS [\d.]+ MB/);

  t.test('a daemon that is not ready: the picture, then exit 1 with the reason', async (t) => {
    Object.defineProperty(gw.app.settlement, 'failing', { get: () => true, configurable: true });
    t.teardown(() => {
      delete (gw.app.settlement as unknown as Record<string, unknown>).failing;
    });
    const [json, text] = await Promise.all([runCli(['status', '--json', '--url', gw.url]), runCli(['status', '--url', gw.url])]);
    t.equal(json.code, 1, '--json exits 1');
    const report = doc(json);
    t.equal(report.ready, false, 'one JSON document, the report, with ready false');
    t.match(report.readiness, { http_status: 503, status: 'not_ready', reason: 'ledger_writes_failing', unapplied_calls: 0 });
    t.equal(report.upstream.attempts.ok, upstreamCalls, 'the numbers still there');
    t.same(lines(json.stderr), [`error: the gateway at ${gw.url} is not ready: settled calls cannot be written to the ledger (database busy or full)`], 'one line on stderr');
    t.equal(text.code, 1, 'human output exits 1');
    t.match(text.stdout, /NOT READY/);
    t.match(text.stdout, /readiness\s+not ready \(ledger_writes_failing\)\n/);
    t.match(text.stdout, /why\s+settled calls cannot be written to the ledger \(database busy or full\)\n/);
    t.match(text.stdout, /dependencies\s+db error, redis disabled\n/);
    t.match(text.stdout, /ledger backlog\s+0 settled calls not in the ledger\n/);
    t.match(text.stderr, /^error: the gateway at .* is not ready/);
  });
});

t.test('an unreachable daemon: exit 1 naming the URL', async (t) => {
  const dead = `http://127.0.0.1:${await closedPort()}`;
  const [text, json] = await Promise.all([runCli(['status', '--url', dead]), runCli(['status', '--json', '--url', dead])]);
  t.equal(text.code, 1);
  t.equal(text.stdout, '', 'nothing on stdout');
  t.same(lines(text.stderr).length, 1, 'one line on stderr');
  t.match(text.stderr, new RegExp(`^error: cannot reach the gateway at ${dead.replace(/[.]/g, '\\.')} \\(ECONNREFUSED\\)`));
  t.equal(json.code, 1);
  t.match(doc(json), { error: { message: /cannot reach the gateway at/ } }, '--json: the error document');
});

t.test('a token-protected /metrics', async (t) => {
  const token = 'metrics-token-0123456789abcdef';
  const gw = await startTestGateway({ metrics: { token } });
  t.teardown(() => gw.stop());
  const [missing, missingJson, wrong, flag, env] = await Promise.all([
    runCli(['status', '--url', gw.url]),
    runCli(['status', '--json', '--url', gw.url]),
    runCli(['status', '--json', '--url', gw.url, '--metrics-token', 'not-the-token-at-all']),
    runCli(['status', '--json', '--url', gw.url, '--metrics-token', token]),
    runCli(['status', '--json', '--url', gw.url], { env: { GATEWAY_METRICS_TOKEN: token } }),
  ]);
  t.equal(missing.code, 1, 'without the token: exit 1');
  t.equal(missing.stdout, '');
  t.same(lines(missing.stderr).length, 1, 'one line on stderr');
  t.match(missing.stderr, new RegExp(`^error: GET ${gw.url.replace(/[.]/g, '\\.')}/metrics answered 401 \\(missing credentials.*\\): the daemon sets metrics\\.token: pass --metrics-token or set GATEWAY_METRICS_TOKEN`));
  t.equal(missingJson.code, 1);
  t.match(doc(missingJson), { error: { status: 401, code: 401, type: 'authentication_error', reason: 'missing_credentials', message: /answered 401/ } }, '--json: the 401 as the error document');
  t.equal(wrong.code, 1, 'a wrong token: exit 1');
  t.match(doc(wrong), { error: { status: 401, reason: 'invalid_metrics_token', message: /not the daemon's metrics\.token/ } });
  for (const [what, result] of [['--metrics-token', flag], ['GATEWAY_METRICS_TOKEN', env]] as const) {
    t.equal(result.code, 0, `${what}: exit 0`);
    t.equal(result.stderr, '', `${what}: nothing on stderr`);
    t.match(doc(result), { ready: true, requests: { by_class: { '2xx': 0 } } }, `${what}: the report`);
  }
});
