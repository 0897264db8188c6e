import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { encodeTraceRequest } from '../../../src/core/telemetry/otlp-proto.js';
import { SpanKind, trace, ROOT_CONTEXT } from '@opentelemetry/api';

/**
 * The OTLP protobuf serializer's CPU per span, on spans shaped like the gateway's (a SERVER
 * span and a CLIENT span per chat call), in batches of 128 as the BatchSpanProcessor sends.
 *
 *   node --import tsx test/bench/diag/otlp-serialize.ts
 */
const memory = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'bench', 'host.name': 'h' }), spanProcessors: [new SimpleSpanProcessor(memory)] });
const tracer = provider.getTracer('llm-gateway');
for (let i = 0; i < 64; i++) {
  const server = tracer.startSpan('POST /v1/chat/completions', { kind: SpanKind.SERVER }, ROOT_CONTEXT).setAttributes({ 'http.request.method': 'POST', 'http.route': '/v1/chat/completions', 'url.path': '/v1/chat/completions', 'client.address': '127.0.0.1', 'gateway.request_id': `req_${i}abcdefghijkl` });
  const client = tracer.startSpan('chat gpt-4o-mini', { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, server)).setAttributes({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o-mini', 'server.address': '127.0.0.1', 'gateway.model': 'openai/gpt-4o-mini', 'gateway.provider': 'openai', 'gateway.deployment': 'openai:gpt-4o-mini' });
  client.setAttribute('gateway.attempt', 1).setAttribute('gateway.request_id', `req_${i}abcdefghijkl`).setAttribute('gen_ai.request.max_tokens', 8).setAttribute('gen_ai.request.temperature', 0.5);
  client.setAttributes({ 'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 30, 'gateway.cost_micro_inr': 845, 'gateway.cache': 'miss', 'gen_ai.response.id': 'chatcmpl-abc', 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.response.model': 'gpt-4o-mini' });
  client.end();
  server.setAttributes({ 'http.response.status_code': 200, 'gateway.model': 'openai/gpt-4o-mini', 'gateway.provider': 'openai' });
  server.end();
}
const spans: ReadableSpan[] = memory.getFinishedSpans();
function measure(name: string, serialize: (spans: ReadableSpan[]) => Uint8Array | undefined): number {
  const N = 3000;
  for (let i = 0; i < 500; i++) serialize(spans);
  const figures: number[] = [];
  for (let round = 0; round < 5; round++) {
    const before = process.cpuUsage();
    for (let i = 0; i < N; i++) serialize(spans);
    const used = process.cpuUsage(before);
    figures.push((used.user + used.system) / (N * spans.length));
  }
  figures.sort((a, b) => a - b);
  const median = figures[2] ?? 0;
  console.log(`${name}: ${median.toFixed(3)} µs per span, ${serialize(spans)?.length} bytes per ${spans.length} spans`);
  return median;
}
const theirs = ProtobufTraceSerializer.serializeRequest(spans) ?? new Uint8Array();
const ours = encodeTraceRequest(spans);
console.log(`same bytes: ${Buffer.from(theirs).equals(Buffer.from(ours))}`);
measure('otlp-transformer', (s) => ProtobufTraceSerializer.serializeRequest(s));
measure('otlp-proto.ts', (s) => encodeTraceRequest(s));
