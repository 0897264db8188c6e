import t from 'tap';
import { Problems } from '../../src/config/fields.js';
import { readMetrics, readTelemetry } from '../../src/config/observability.js';
import { isLoopback } from '../../src/api/metrics.js';
import { CounterFamily, GaugeFamily, HistogramFamily } from '../../src/core/telemetry/prom.js';
import { Observation } from '../../src/core/telemetry/observation.js';
import { parseMetrics, total } from '../support/prometheus.js';

/** The metrics' exposition, the observation's upstream clock, and the metrics and telemetry config (issue 31). */

t.test('families render the text format: escaped labels, cumulative buckets, +Inf equal to the count', async (t) => {
  const counter = new CounterFamily('x_total', 'A counter.\nTwo lines.', ['model', 'status']);
  counter.labels('a"b\\c\nd', '200').value += 3;
  counter.labels('a"b\\c\nd', '200').value += 2;
  counter.labels('plain', '500').value += 1;
  t.equal(counter.size, 2, 'one series per label set');
  const histogram = new HistogramFamily('y_seconds', 'A histogram.', ['endpoint'], [0.1, 1]);
  for (const v of [0.05, 0.1, 0.5, 2, 3]) histogram.labels('/v1/x').observe(v);
  const gauge = new GaugeFamily('z', 'A gauge.', [], (g) => g.set(42));
  const out: string[] = [];
  counter.render(out);
  histogram.render(out);
  gauge.render(out);
  const text = out.join('\n');
  t.match(text, /# HELP x_total A counter\.\\nTwo lines\./, 'help on one line');
  t.match(text, /# TYPE y_seconds histogram/);
  const samples = parseMetrics(text);
  t.equal(samples.find((s) => s.name === 'x_total' && s.labels.status === '200')?.labels.model, 'a"b\\c\nd', 'a label value with a quote, backslash and newline survives');
  t.equal(total(samples, 'x_total', { status: '200' }), 5);
  const buckets = samples.filter((s) => s.name === 'y_seconds_bucket').map((s) => [s.labels.le, s.value]);
  t.same(buckets, [['0.1', 2], ['1', 3], ['+Inf', 5]], 'le is inclusive and cumulative; +Inf holds every observation');
  t.equal(total(samples, 'y_seconds_count'), 5);
  t.equal(total(samples, 'y_seconds_sum'), 5.65);
  t.equal(total(samples, 'z'), 42, 'a collect-time gauge reads its source at render');
});

t.test('the observation counts closed upstream intervals once, and an unclosed one at the end', async (t) => {
  const o = new Observation(0, '/v1/chat/completions', 'req');
  o.upstreamOpen(10);
  o.upstreamOpen(12); // already open: the first start stands
  o.upstreamClose(30);
  o.upstreamClose(40); // nothing open
  t.equal(o.upstreamMs, 20);
  o.upstreamOpen(50);
  o.upstreamClose(55);
  t.equal(o.upstreamMs, 25);
});

t.test('metrics config: defaults, and each bad field named with its rule', async (t) => {
  const ok = new Problems();
  t.same(readMetrics(undefined, ok), { enabled: true, path: '/metrics', keyLabels: false, maxKeySeries: 1000 }, 'on, at /metrics, no token, no per-key series');
  t.same(ok.lines, []);
  const bad = new Problems();
  readMetrics({ token: 'short', path: '/v1/metrics', max_key_series: 0, key_labels: 'yes', extra: 1 }, bad);
  const text = bad.lines.join('\n');
  t.match(text, /metrics\.token: must be at least 16 characters/);
  t.match(text, /metrics\.path: must not be one of the gateway's own paths/);
  t.match(text, /metrics\.max_key_series/);
  t.match(text, /metrics\.key_labels: must be true or false/);
  t.match(text, /metrics\.extra: unknown key/);
  for (const path of ['/mcp', '/assets/metrics', '/favicon.ico', '/metrics/', '/', 'metrics']) {
    const problems = new Problems();
    readMetrics({ path }, problems);
    t.match(problems.lines.join('\n'), /metrics\.path: must/, `path ${path} refused`);
  }
  const custom = new Problems();
  t.equal(readMetrics({ path: '/internal/prometheus' }, custom).path, '/internal/prometheus');
  t.same(custom.lines, []);
  t.notMatch(text, /short/, 'the token is never echoed');
});

t.test('telemetry config: off by default, on by the OTLP environment, the config over the variables', async (t) => {
  const p = new Problems();
  t.equal(readTelemetry(undefined, {}, p).enabled, false, 'off by default');
  const fromEnv = readTelemetry(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'edge-gw' }, p);
  t.match(fromEnv, { enabled: true, protocol: 'http/json', serviceName: 'edge-gw', captureContent: false });
  t.equal(readTelemetry(undefined, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/v1/traces', OTEL_SDK_DISABLED: 'true' }, p).enabled, false, 'OTEL_SDK_DISABLED keeps it off');
  t.equal(readTelemetry(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_TRACES_EXPORTER: 'none' }, p).enabled, false, 'OTEL_TRACES_EXPORTER=none keeps it off');
  t.equal(readTelemetry({ enabled: false }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }, p).enabled, false, 'the config wins');
  t.match(readTelemetry({ enabled: true, protocol: 'http/protobuf', service_name: 'mine' }, { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'theirs' }, p), { protocol: 'http/protobuf', serviceName: 'mine' });
  t.same(p.lines, []);
  const bad = new Problems();
  readTelemetry({ enabled: true, protocol: 'grpc', sample_ratio: 2, endpoint: 'collector:4318' }, {}, bad);
  const text = bad.lines.join('\n');
  t.match(text, /telemetry\.protocol: must be one of: http\/protobuf, http\/json \(gRPC is not served/);
  t.match(text, /telemetry\.sample_ratio: must be a number from 0 to 1/);
  t.match(text, /telemetry\.endpoint: must be an http\(s\) URL/);
  const envGrpc = new Problems();
  readTelemetry(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, envGrpc);
  t.match(envGrpc.lines.join('\n'), /telemetry\.protocol/, 'a gRPC protocol from the environment is refused too, when traces are on');
});

t.test('loopback: 127/8, ::1 and their IPv4-mapped forms only', async (t) => {
  for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) t.ok(isLoopback(address), address);
  for (const address of ['10.0.0.1', '::ffff:10.0.0.1', '203.0.113.5', '::2', 'fe80::1', '', 'localhost']) t.notOk(isLoopback(address), address || '(empty)');
});

t.test('telemetry config: the collector URL from the OTLP variables, the config over them', async (t) => {
  const p = new Problems();
  t.equal(readTelemetry(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, p).endpoint, 'http://collector:4318/v1/traces', 'the base endpoint gets /v1/traces');
  t.equal(readTelemetry(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom' }, p).endpoint, 'http://b:4318/custom', 'the traces endpoint as given');
  t.equal(readTelemetry({ enabled: true, endpoint: 'http://mine:4318/v1/traces' }, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b/x' }, p).endpoint, 'http://mine:4318/v1/traces', 'the config wins');
  t.equal(readTelemetry({ enabled: true }, {}, p).endpoint, undefined, 'none: the exporter\'s default (localhost:4318)');
});
