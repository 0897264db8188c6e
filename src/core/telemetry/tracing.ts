import { ROOT_CONTEXT, SpanKind, TraceFlags, trace, type Attributes, type Context, type Span, type SpanContext, type TextMapGetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator, getNumberFromEnv, getStringFromEnv } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, SamplingDecision, TraceIdRatioBasedSampler, type ReadableSpan, type Sampler, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { TelemetryConfig } from '../../config/types.js';
import { encodeTraceRequest } from './otlp-proto.js';
import { GatewaySpan, newSpanId, newTraceId, type SpanSink } from './span.js';

/**
 * OpenTelemetry traces (issue 31): one SERVER span per HTTP request (a client's W3C
 * `traceparent` continued), a CLIENT span per upstream attempt under it (telemetry.ts), its
 * context sent upstream. Spans are created explicitly and carried on the request's
 * Observation: no global context manager, no patched modules. The spans are the gateway's own
 * (span.ts: the API's Span, the SDK's ReadableSpan); the sampler, the BatchSpanProcessor, the
 * resource and the OTLP exporters are the SDK's. The BatchSpanProcessor exports off the request
 * path; when the collector is down or slow, its queue drops the newest spans and no call waits.
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

/** OTEL_TRACES_SAMPLER[_ARG], read as the SDK reads them (default parentbased_always_on; a bad value: the default). */
function samplerFromEnv(): Sampler {
  const ratio = (): number => {
    const arg = getNumberFromEnv('OTEL_TRACES_SAMPLER_ARG');
    return arg === undefined || arg < 0 || arg > 1 ? 1 : arg;
  };
  switch (getStringFromEnv('OTEL_TRACES_SAMPLER')) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** The config's ratio (a client's sampled parent followed); else OTEL_TRACES_SAMPLER[_ARG]. */
function samplerFor(config: Pick<TelemetryConfig, 'sampleRatio'>): Sampler {
  if (config.sampleRatio === undefined) return samplerFromEnv();
  return new ParentBasedSampler({ root: config.sampleRatio >= 1 ? new AlwaysOnSampler() : new TraceIdRatioBasedSampler(config.sampleRatio) });
}

/** The SDK's span limits from the environment (its defaults: values not cut, 128 attributes). */
function limitsFromEnv(): Pick<SpanSink, 'valueLengthLimit' | 'attributeCountLimit'> {
  return {
    valueLengthLimit: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT') ?? getNumberFromEnv('OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT') ?? Infinity,
    attributeCountLimit: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT') ?? getNumberFromEnv('OTEL_ATTRIBUTE_COUNT_LIMIT') ?? 128,
  };
}

export class GatewayTracer {
  private readonly propagator = new W3CTraceContextPropagator();

  private constructor(
    private readonly sink: SpanSink,
    private readonly sampler: Sampler,
    readonly captureContent: boolean,
  ) {}

  /** The tracer for `telemetry:` (the exporter's module loaded by protocol, only when traces are on). */
  static async create(config: TelemetryConfig, logger: Logger): Promise<GatewayTracer> {
    const options = config.endpoint !== undefined ? { url: config.endpoint } : {};
    const exporter: SpanExporter = config.protocol === 'http/json' ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options) : await protobufExporter(options);
    logger.info({ protocol: config.protocol, endpoint: config.endpoint ?? 'from OTEL_EXPORTER_OTLP_* (default http://localhost:4318/v1/traces)', service: config.serviceName, capture_content: config.captureContent }, 'OpenTelemetry traces on');
    return GatewayTracer.withExporter(config, exporter);
  }

  /**
   * The tracer with a given exporter (tests: the SDK's in-memory one). Batches of 128 spans or
   * every 200 ms (the SDK's 512 and 5 s kept spans long enough to reach V8's old generation),
   * a queue of 2,048, a 10 s export timeout; OTEL_BSP_* set any of them.
   */
  static withExporter(config: Pick<TelemetryConfig, 'serviceName' | 'sampleRatio' | 'captureContent'>, exporter: SpanExporter): GatewayTracer {
    // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (the environment's own), the config's service name over both.
    const resource = detectResources({ detectors: [envDetector] }).merge(resourceFromAttributes({ 'service.name': config.serviceName }));
    const processor: SpanProcessor = new BatchSpanProcessor(exporter, {
      maxQueueSize: getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE') ?? 2048,
      maxExportBatchSize: getNumberFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE') ?? 128,
      scheduledDelayMillis: getNumberFromEnv('OTEL_BSP_SCHEDULE_DELAY') ?? 200,
      exportTimeoutMillis: getNumberFromEnv('OTEL_BSP_EXPORT_TIMEOUT') ?? 10_000,
    });
    const sink: SpanSink = { processor, resource, scope: { name: 'llm-gateway' }, ...limitsFromEnv() };
    return new GatewayTracer(sink, samplerFor(config), config.captureContent);
  }

  /** The request's SERVER span: the child of the client's `traceparent` when it sent one; sampled by the sampler. */
  startServer(name: string, headers: IncomingHttpHeaders, attributes: Attributes): Span {
    const context: Context = headers.traceparent === undefined ? ROOT_CONTEXT : this.propagator.extract(ROOT_CONTEXT, headers, getter);
    const parent = context === ROOT_CONTEXT ? undefined : trace.getSpanContext(context);
    const traceId = parent?.traceId ?? newTraceId();
    const sampling = this.sampler.shouldSample(context, traceId, name, SpanKind.SERVER, attributes, []);
    const spanContext: SpanContext = { traceId, spanId: newSpanId(), traceFlags: sampling.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE };
    const traceState = sampling.traceState ?? parent?.traceState;
    if (traceState) spanContext.traceState = traceState;
    const span = new GatewaySpan(this.sink, spanContext, parent, name, SpanKind.SERVER, sampling.decision !== SamplingDecision.NOT_RECORD);
    this.sink.processor.onStart(span, context);
    span.setAttributes(attributes);
    if (sampling.attributes) span.setAttributes(sampling.attributes);
    return span;
  }

  /** A CLIENT span under `parent`: recorded when the parent is sampled (the parent-based rule). */
  startClient(parent: Span, name: string, attributes: Attributes): Span {
    const parentContext = parent.spanContext();
    const context: SpanContext = { traceId: parentContext.traceId, spanId: newSpanId(), traceFlags: parentContext.traceFlags };
    if (parentContext.traceState) context.traceState = parentContext.traceState;
    const span = new GatewaySpan(this.sink, context, parentContext, name, SpanKind.CLIENT, (parentContext.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED);
    this.sink.processor.onStart(span, ROOT_CONTEXT);
    return span.setAttributes(attributes);
  }

  /** The W3C headers that carry `span` upstream (traceparent, and tracestate when there is one). */
  headersOf(span: Span): Record<string, string> {
    const context = span.spanContext();
    const headers: Record<string, string> = { traceparent: `00-${context.traceId}-${context.spanId}-${context.traceFlags & 1 ? '01' : '00'}` };
    const state = context.traceState?.serialize();
    if (state) headers.tracestate = state;
    return headers;
  }

  /** Exports what is queued (at shutdown), within `timeoutMs`. */
  async shutdown(timeoutMs: number): Promise<void> {
    await Promise.race([this.sink.processor.shutdown(), new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  }

  /** Exports what is queued now (tests). */
  async flush(): Promise<void> {
    await this.sink.processor.forceFlush();
  }
}
