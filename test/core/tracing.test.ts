import { SpanKind, SpanStatusCode, type HrTime } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import t from 'tap';
import { GatewayTracer } from '../../src/core/telemetry/tracing.js';

/**
 * The tracer's own spans (span.ts) as the SDK's span processor and exporters see them:
 * sampling decided by the SDK's samplers (the config's ratio, or OTEL_TRACES_SAMPLER), a
 * client's parent and trace state followed, a CLIENT span following its parent's decision,
 * times and ids well formed, the SDK's span limits from the environment, nothing recorded
 * after the end, each span exported once.
 */

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

function tracerWith(t: Tap, sampleRatio: number | undefined, env: Record<string, string> = {}): { tracer: GatewayTracer; spans: () => Promise<ReadableSpan[]> } {
  const saved: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) {
    saved[key] = process.env[key];
    process.env[key] = value;
  }
  const exporter = new InMemorySpanExporter();
  const tracer = GatewayTracer.withExporter({ serviceName: 'tracing-test', sampleRatio, captureContent: false }, exporter);
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  t.teardown(() => tracer.shutdown(1000));
  return {
    tracer,
    spans: async () => {
      await tracer.flush();
      return exporter.getFinishedSpans();
    },
  };
}

/** One request's two spans, as the request path makes them. */
function call(tracer: GatewayTracer, headers: Record<string, string> = {}) {
  const server = tracer.startServer('POST /v1/chat/completions', headers, { 'http.request.method': 'POST' });
  const client = tracer.startClient(server, 'chat gpt-4o-mini', { 'gen_ai.operation.name': 'chat' });
  const upstream: { traceparent: string; tracestate?: string } = { traceparent: '', ...tracer.headersOf(client) };
  client.setAttribute('gen_ai.usage.input_tokens', 12);
  client.end();
  server.setAttribute('http.response.status_code', 200);
  server.end();
  return { server, client, upstream };
}

const ms = (time: HrTime): number => time[0] * 1000 + time[1] / 1e6;

t.test('a sampled call: a SERVER span and its CLIENT child, exported once each, well-formed times and ids', async (t) => {
  const { tracer, spans } = tracerWith(t, 1);
  t.equal(tracer.startServer('x', {}, {}).isRecording(), true, 'sampled: recording until its end');
  const before = Date.now();
  const { server, client, upstream } = call(tracer);
  client.end(); // a second end changes nothing
  server.setAttribute('late', 'ignored');
  const after = Date.now();
  const exported = await spans();
  t.equal(exported.length, 2);
  const [c, s] = exported as [ReadableSpan, ReadableSpan];
  t.equal(s.kind, SpanKind.SERVER);
  t.equal(c.kind, SpanKind.CLIENT);
  t.equal(s.parentSpanContext, undefined, 'a root span without a client parent');
  t.equal(c.parentSpanContext?.spanId, s.spanContext().spanId);
  t.equal(c.spanContext().traceId, s.spanContext().traceId);
  t.match(s.spanContext().traceId, /^[0-9a-f]{32}$/);
  t.match(s.spanContext().spanId, /^[0-9a-f]{16}$/);
  t.not(c.spanContext().spanId, s.spanContext().spanId);
  t.equal(upstream.traceparent, `00-${c.spanContext().traceId}-${c.spanContext().spanId}-01`, 'the CLIENT span goes upstream, sampled');
  t.same(c.attributes, { 'gen_ai.operation.name': 'chat', 'gen_ai.usage.input_tokens': 12 });
  t.same(s.attributes, { 'http.request.method': 'POST', 'http.response.status_code': 200 }, 'nothing set after the end');
  for (const span of exported) {
    t.ok(ms(span.startTime) >= before - 5 && ms(span.endTime) <= after + 5, 'epoch times of now');
    t.ok(ms(span.endTime) >= ms(span.startTime));
    t.ok(Math.abs(ms(span.endTime) - ms(span.startTime) - ms(span.duration)) < 0.01, 'duration = end - start');
    t.ok(span.ended);
    t.equal(span.resource.attributes['service.name'], 'tracing-test');
    t.equal(span.instrumentationScope.name, 'llm-gateway');
    t.equal(span.status.code, SpanStatusCode.UNSET);
  }
});

t.test('ids are unique', async (t) => {
  const { tracer } = tracerWith(t, 0);
  const ids = new Set<string>();
  for (let i = 0; i < 5000; i++) {
    const span = tracer.startServer('x', {}, {});
    ids.add(span.spanContext().traceId);
    ids.add(span.spanContext().spanId);
  }
  t.equal(ids.size, 10_000);
});

t.test('sample_ratio 0: nothing recorded or exported; the unsampled context still goes upstream', async (t) => {
  const { tracer, spans } = tracerWith(t, 0);
  const server = tracer.startServer('x', {}, {});
  t.equal(server.isRecording(), false, 'an unsampled SERVER span records nothing');
  t.equal(tracer.startClient(server, 'y', {}).isRecording(), false, 'nor its CLIENT span');
  server.end();
  const { client, upstream } = call(tracer);
  t.equal(upstream.traceparent, `00-${client.spanContext().traceId}-${client.spanContext().spanId}-00`);
  t.equal((await spans()).length, 0);
});

t.test("a client's parent is followed: its trace id, its decision, its trace state", async (t) => {
  const { tracer, spans } = tracerWith(t, 0);
  const sampled = call(tracer, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`, tracestate: 'vendor=abc,other=1' });
  t.equal(sampled.upstream.traceparent.slice(0, 35), `00-${TRACE_ID}`, 'its trace');
  t.equal(sampled.upstream.tracestate, 'vendor=abc,other=1', 'its trace state, passed upstream');
  t.ok(sampled.upstream.traceparent.endsWith('-01'), 'sampled, though the ratio is 0: the parent decided');
  const exported = await spans();
  t.equal(exported.length, 2);
  const server = exported.find((s) => s.kind === SpanKind.SERVER);
  t.equal(server?.parentSpanContext?.spanId, PARENT_ID);
  t.equal(server?.parentSpanContext?.isRemote, true);

  const { tracer: on, spans: onSpans } = tracerWith(t, 1);
  const unsampled = call(on, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-00` });
  t.ok(unsampled.upstream.traceparent.endsWith('-00'), "a client's unsampled parent is not sampled at ratio 1");
  t.equal((await onSpans()).length, 0);

  const bad = call(on, { traceparent: 'not-a-traceparent' });
  t.not(bad.server.spanContext().traceId, TRACE_ID);
  t.ok(bad.upstream.traceparent.endsWith('-01'), 'a malformed traceparent starts a new trace');
  t.equal((await onSpans()).length, 2);
});

t.test('without sample_ratio, OTEL_TRACES_SAMPLER[_ARG] decide, as in the SDK', async (t) => {
  for (const [env, expected] of [
    [{ OTEL_TRACES_SAMPLER: 'always_off' }, 0],
    [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, 0],
    [{ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' }, 2],
    [{ OTEL_TRACES_SAMPLER: 'always_on' }, 2],
    [{ OTEL_TRACES_SAMPLER: 'nonsense' }, 2],
    [{}, 2],
  ] as const) {
    const { tracer, spans } = tracerWith(t, undefined, env);
    call(tracer);
    t.equal((await spans()).length, expected, JSON.stringify(env));
  }
  const { tracer, spans } = tracerWith(t, undefined, { OTEL_TRACES_SAMPLER: 'parentbased_always_off' });
  call(tracer, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
  call(tracer);
  t.equal((await spans()).length, 2, 'parentbased_always_off: only the sampled parent is followed');
});

t.test("the SDK's span limits from the environment", async (t) => {
  const { tracer, spans } = tracerWith(t, 1, { OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: '5', OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '3' });
  const span = tracer.startServer('x', {}, { a: 'abcdefgh', b: 1 });
  span.setAttribute('c', true).setAttribute('d', 'dropped').setAttribute('a', 'replaced').setAttribute('e', 2);
  span.end();
  const [exported] = await spans();
  t.same(exported?.attributes, { a: 'repla', b: 1, c: true }, 'strings cut to 5; the fourth and fifth dropped; an existing key replaced');
  t.equal(exported?.droppedAttributesCount, 2);
});

t.test('status, events and exceptions', async (t) => {
  const { tracer, spans } = tracerWith(t, 1);
  const span = tracer.startServer('x', {}, {});
  span.addEvent('first', { n: 1 });
  span.recordException(new TypeError('boom'));
  span.setStatus({ code: SpanStatusCode.ERROR, message: 'failed' });
  span.updateName('renamed');
  span.end();
  const [exported] = await spans();
  t.equal(exported?.name, 'renamed');
  t.same(exported?.status, { code: SpanStatusCode.ERROR, message: 'failed' });
  t.same(
    exported?.events.map((e) => [e.name, e.attributes?.['exception.type'] ?? e.attributes?.n]),
    [
      ['first', 1],
      ['exception', 'TypeError'],
    ],
  );
  t.ok(exported?.events.every((e) => ms(e.time) >= ms(exported.startTime) - 1));
});
