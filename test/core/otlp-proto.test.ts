import t from 'tap';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, createTraceState } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { encodeTraceRequest } from '../../src/core/telemetry/otlp-proto.js';

/**
 * The gateway's OTLP/protobuf encoder (core/telemetry/otlp-proto.ts) against the SDK's own
 * serializer: the same ExportTraceServiceRequest bytes for every kind of attribute value,
 * events, links, trace state, remote parents, error statuses, lengths that need one to four
 * bytes, and several resources and scopes in one batch.
 */

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

function recorder(resourceAttributes: Record<string, string>): { provider: BasicTracerProvider; memory: InMemorySpanExporter } {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes(resourceAttributes), spanProcessors: [new SimpleSpanProcessor(memory)] });
  return { provider, memory };
}

function same(t: Tap, spans: ReadableSpan[], what: string): void {
  const theirs = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans) ?? new Uint8Array());
  const ours = Buffer.from(encodeTraceRequest(spans));
  t.ok(theirs.length > 0, `${what}: the SDK wrote ${theirs.length} bytes`);
  t.ok(ours.equals(theirs), `${what}: the same bytes (${ours.length})`);
}

t.test('the gateway\'s spans: a SERVER span and its CLIENT span', async (t) => {
  const { provider, memory } = recorder({ 'service.name': 'gateway', 'host.name': 'h1' });
  const tracer = provider.getTracer('llm-gateway', '1.0.0');
  const server = tracer.startSpan('POST /v1/chat/completions', { kind: SpanKind.SERVER }, ROOT_CONTEXT).setAttributes({ 'http.request.method': 'POST', 'http.route': '/v1/chat/completions', 'client.address': '127.0.0.1' });
  const client = tracer.startSpan('chat gpt-4o-mini', { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, server));
  client.setAttributes({ 'gen_ai.operation.name': 'chat', 'gen_ai.usage.input_tokens': 12, 'gen_ai.request.temperature': 0.5, 'gen_ai.response.finish_reasons': ['stop'], 'gateway.cost_micro_inr': 845 });
  client.end();
  server.setAttribute('http.response.status_code', 200).end();
  same(t, memory.getFinishedSpans(), 'two spans');
});

t.test('every attribute value kind and length', async (t) => {
  const { provider, memory } = recorder({ 'service.name': 'gateway' });
  const tracer = provider.getTracer('llm-gateway');
  const span = tracer.startSpan('values', { kind: SpanKind.INTERNAL }, ROOT_CONTEXT);
  span.setAttributes({
    empty: '',
    unicode: 'नमस्ते — ₹845 🚀',
    ascii127: 'a'.repeat(127),
    ascii128: 'b'.repeat(128),
    long: 'c'.repeat(20_000),
    longUnicode: '₹'.repeat(50_000),
    zero: 0,
    small: 127,
    medium: 16_384,
    large: 0x0fffffff,
    u32: 0xffffffff,
    beyond32: 2 ** 40 + 3,
    negative: -1,
    negativeLarge: -(2 ** 40),
    double: 3.25,
    nan: Number.NaN,
    infinite: Number.POSITIVE_INFINITY,
    yes: true,
    no: false,
    strings: ['a', 'ब', ''],
    numbers: [1, 2.5, -3],
    bools: [true, false],
    emptyArray: [],
    [`key-${'k'.repeat(118)}`]: 'v',
    [`key-${'k'.repeat(130)}`]: 1,
  });
  span.end();
  same(t, memory.getFinishedSpans(), 'values');
});

t.test('events, links, trace state, a remote parent, an error status', async (t) => {
  const { provider, memory } = recorder({ 'service.name': 'gateway' });
  const tracer = provider.getTracer('llm-gateway');
  const remote = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: createTraceState('vendor=abc,other=1'),
  });
  const span = tracer.startSpan('with everything', { kind: SpanKind.CLIENT, links: [{ context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 0 }, attributes: { why: 'retry of' } }] }, remote);
  span.addEvent('first token', { 'gen_ai.usage.output_tokens': 1 });
  span.addEvent('plain');
  span.recordException(new Error('upstream reset'));
  span.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream_error: 502 from openai' });
  span.end();
  const ok = tracer.startSpan('ok', { kind: SpanKind.PRODUCER }, ROOT_CONTEXT);
  ok.setStatus({ code: SpanStatusCode.OK });
  ok.end();
  same(t, memory.getFinishedSpans(), 'everything');
});

t.test('several resources and scopes in one batch, and a batch far over the first buffer', async (t) => {
  const a = recorder({ 'service.name': 'a' });
  const b = recorder({ 'service.name': 'b', 'deployment.environment': 'prod' });
  for (const [scope, version] of [['one', '1.2.3'], ['two', undefined]] as const) {
    for (const { provider } of [a, b]) {
      const tracer = provider.getTracer(scope, version);
      for (let i = 0; i < 3; i++) tracer.startSpan(`${scope} ${i}`, {}, ROOT_CONTEXT).setAttribute('i', i).end();
    }
  }
  same(t, [...a.memory.getFinishedSpans(), ...b.memory.getFinishedSpans()], 'two resources, two scopes each');
  const many = recorder({ 'service.name': 'many' });
  const tracer = many.provider.getTracer('llm-gateway');
  for (let i = 0; i < 600; i++) tracer.startSpan(`span ${i}`, {}, ROOT_CONTEXT).setAttributes({ 'gateway.request_id': `req_${i}`, n: i, text: 'x'.repeat(i % 200) }).end();
  same(t, many.memory.getFinishedSpans(), '600 spans');
  same(t, many.memory.getFinishedSpans().slice(0, 1), 'then one span (a smaller buffer than the last)');
  t.equal(encodeTraceRequest([]).length, 0, 'no spans: an empty request');
});

t.test("the gateway's own spans (span.ts): the same bytes as the SDK's serializer writes for them", async (t) => {
  const { GatewayTracer } = await import('../../src/core/telemetry/tracing.js');
  const memory = new InMemorySpanExporter();
  const tracer = GatewayTracer.withExporter({ serviceName: 'gateway', sampleRatio: 1, captureContent: false }, memory);
  const shared = { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o-mini', 'server.address': '127.0.0.1', 'gateway.deployment': 'openai:gpt-4o-mini' };
  for (let i = 0; i < 3; i++) {
    const server = tracer.startServer('POST /v1/chat/completions', { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'vendor=abc' }, { 'http.request.method': 'POST', 'client.address': '127.0.0.1' });
    const client = tracer.startClient(server, 'chat gpt-4o-mini', shared);
    client.setAttribute('gateway.attempt', i + 1).setAttribute('gen_ai.usage.input_tokens', 12).setAttribute('gen_ai.response.finish_reasons', ['stop']).setAttribute('gen_ai.request.temperature', 0.25);
    // An attribute of the deployment's set changed on one span: only that span's.
    if (i === 1) client.setAttribute('gen_ai.request.model', 'gpt-4o-mini-2024-07-18');
    if (i === 2) client.recordException(new Error('boom'));
    client.setStatus({ code: i === 2 ? SpanStatusCode.ERROR : SpanStatusCode.UNSET });
    client.end();
    server.setAttribute('http.response.status_code', 200).end();
  }
  await tracer.flush();
  const spans = memory.getFinishedSpans();
  t.equal(spans.length, 6);
  same(t, spans, "the gateway's spans");
  const clients = spans.filter((span) => span.kind === SpanKind.CLIENT);
  t.equal(clients[1]?.attributes['gen_ai.request.model'], 'gpt-4o-mini-2024-07-18', 'the changed one');
  t.equal(clients[2]?.attributes['gen_ai.request.model'], 'gpt-4o-mini', 'the others keep the shared value');
  t.same(Object.keys(clients[1]?.attributes ?? {}).slice(0, 5), Object.keys(shared), 'the shared ones first, in their order');
  t.equal(shared['gen_ai.request.model'], 'gpt-4o-mini', 'the shared object is never written');
  await tracer.shutdown(1000);
});
