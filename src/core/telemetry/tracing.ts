import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type TextMapGetter, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { TelemetryConfig } from '../../config/types.js';
import { encodeTraceRequest } from './otlp-proto.js';

/**
 * OpenTelemetry traces (issue 31): one SERVER span per HTTP request (a client's W3C
 * `traceparent` continued), a CLIENT span per upstream attempt under it (telemetry.ts), its
 * context sent upstream. Spans are created explicitly and carried on the request's
 * Observation: no global context manager, no patched modules. The BatchSpanProcessor exports
 * off the request path; when the collector is down or slow, its queue (2,048 spans) drops the
 * newest spans and no call waits.
 */

const getter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/**
 * The OTLP/HTTP protobuf exporter: the SDK's transport (headers, timeout, compression and
 * retries from OTEL_EXPORTER_OTLP_*), with the request encoded by otlp-proto.ts (the same
 * bytes as the SDK's serializer, at a third to 40% of its CPU).
 */
async function protobufExporter(options: { url?: string }): Promise<SpanExporter> {
  const [{ OTLPExporterBase }, http, { ProtobufTraceSerializer, TraceExporterMetricsHelper }] = await Promise.all([
    import('@opentelemetry/otlp-exporter-base'),
    import('@opentelemetry/otlp-exporter-base/node-http'),
    import('@opentelemetry/otlp-transformer'),
  ]);
  const serializer = { serializeRequest: encodeTraceRequest, deserializeResponse: ProtobufTraceSerializer.deserializeResponse };
  const settings = http.convertLegacyHttpOptions(options, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' });
  return new OTLPExporterBase<ReadableSpan[]>(http.createOtlpHttpExportDelegate(settings, serializer, 'otlp_http_span_exporter', TraceExporterMetricsHelper, undefined));
}

const SERVER = { kind: SpanKind.SERVER };
const CLIENT = { kind: SpanKind.CLIENT };

export class GatewayTracer {
  private readonly propagator = new W3CTraceContextPropagator();

  private constructor(
    private readonly provider: BasicTracerProvider,
    private readonly tracer: Tracer,
    readonly captureContent: boolean,
  ) {}

  /** The tracer for `telemetry:` (the exporter's module loaded by protocol, only when traces are on). */
  static async create(config: TelemetryConfig, logger: Logger): Promise<GatewayTracer> {
    const options = config.endpoint !== undefined ? { url: config.endpoint } : {};
    const exporter: SpanExporter = config.protocol === 'http/json' ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options) : await protobufExporter(options);
    // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (the environment's own), the config's service name over both.
    const resource = detectResources({ detectors: [envDetector] }).merge(resourceFromAttributes({ 'service.name': config.serviceName }));
    const provider = new BasicTracerProvider({
      resource,
      // The config's ratio (a client's sampled parent followed); else OTEL_TRACES_SAMPLER[_ARG] (the SDK's default: all).
      ...(config.sampleRatio !== undefined ? { sampler: new ParentBasedSampler({ root: config.sampleRatio >= 1 ? new AlwaysOnSampler() : new TraceIdRatioBasedSampler(config.sampleRatio) }) } : {}),
      spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 2048, maxExportBatchSize: 128, scheduledDelayMillis: 200, exportTimeoutMillis: 10_000 })],
    });
    logger.info({ protocol: config.protocol, endpoint: config.endpoint ?? 'from OTEL_EXPORTER_OTLP_* (default http://localhost:4318/v1/traces)', service: config.serviceName, capture_content: config.captureContent }, 'OpenTelemetry traces on');
    return new GatewayTracer(provider, provider.getTracer('llm-gateway'), config.captureContent);
  }

  /** The request's SERVER span: the child of the client's `traceparent` when it sent one. */
  startServer(name: string, headers: IncomingHttpHeaders, attributes: Attributes): Span {
    const parent = headers.traceparent === undefined ? ROOT_CONTEXT : this.propagator.extract(ROOT_CONTEXT, headers, getter);
    // Attributes set after the start: given to startSpan the SDK validates and copies them three times.
    return this.tracer.startSpan(name, SERVER, parent).setAttributes(attributes);
  }

  /** A CLIENT span under `parent`. */
  startClient(parent: Span, name: string, attributes: Attributes): Span {
    return this.tracer.startSpan(name, CLIENT, trace.setSpan(ROOT_CONTEXT, parent)).setAttributes(attributes);
  }

  /** The W3C headers that carry `span` upstream (traceparent, and tracestate when the client sent one). */
  headersOf(span: Span): Record<string, string> {
    // W3C Trace Context, written directly (the propagator builds a context per call for this).
    const context = span.spanContext();
    const headers: Record<string, string> = { traceparent: `00-${context.traceId}-${context.spanId}-${context.traceFlags & 1 ? '01' : '00'}` };
    const state = context.traceState?.serialize();
    if (state) headers.tracestate = state;
    return headers;
  }

  /** Ends a span with an error: its status and `error.type`. */
  static fail(span: Span, errorType: string, message?: string): void {
    span.setAttribute('error.type', errorType);
    span.setStatus({ code: SpanStatusCode.ERROR, ...(message !== undefined ? { message } : {}) });
  }

  /** Exports what is queued (at shutdown), within `timeoutMs`. */
  async shutdown(timeoutMs: number): Promise<void> {
    await Promise.race([this.provider.shutdown(), new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  }

  /** Exports what is queued now (tests). */
  async flush(): Promise<void> {
    await this.provider.forceFlush();
  }
}
