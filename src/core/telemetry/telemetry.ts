import type { Attributes, Span } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import type { Deployment, ModelConfig, ModelType, ProviderConfig } from '../../config/types.js';
import { providerIdentity } from '../../providers/semconv.js';
import type { NewUsage } from '../../store/usage.js';
import type { GatewayError } from '../errors.js';
import type { AttemptOutcome, GatewayMetrics } from './metrics.js';
import { Observation } from './observation.js';
import { failSpan } from './span.js';
// Type only: the OpenTelemetry SDK is loaded when tracing is on (main.ts).
import type { GatewayTracer } from './tracing.js';

/**
 * Where the request path reports to metrics and traces: the HTTP server at a request's start
 * and end, the attempt loop around each upstream attempt, settlement with each usage row.
 * With metrics off and traces off every method is a few checks.
 */

/** gen_ai.operation.name by kind of call (the conventions' values where they have one). */
/** Where an attempt goes (the attempt loop's Target). */
export interface AttemptTarget {
  model: Pick<ModelConfig, 'id'>;
  deployment: Deployment;
  provider: ProviderConfig;
}

/** How long an attempt span waits for the settlement of a call whose client left mid-answer. */
const ABORTED_SETTLE_MS = 10_000;

/** The most of a prompt or answer put on a span (telemetry.capture_content). */
export const MAX_CONTENT_CHARS = 64 * 1024;

/** A prompt or answer as a span attribute: JSON, cut at MAX_CONTENT_CHARS. */
export function contentAttribute(value: unknown): string {
  const text = JSON.stringify(value) ?? '';
  return text.length > MAX_CONTENT_CHARS ? `${text.slice(0, MAX_CONTENT_CHARS)}…` : text;
}

const OPERATION: Readonly<Record<ModelType, string>> = { chat: 'chat', embedding: 'embeddings', speech: 'speech', transcription: 'transcription', image: 'image_generation' };

/** A deployment's CLIENT span name and the attributes every attempt on it shares, built once per deployment and key. */
const fixedAttributes = new WeakMap<AttemptTarget['provider'], Map<string, { name: string; attributes: Attributes }>>();

function clientAttributes(target: AttemptTarget, operation: string): { name: string; attributes: Attributes } {
  let byDeployment = fixedAttributes.get(target.provider);
  if (!byDeployment) {
    byDeployment = new Map();
    fixedAttributes.set(target.provider, byDeployment);
  }
  const key = `${operation} ${target.deployment.id} ${target.model.id}`;
  let fixed = byDeployment.get(key);
  if (!fixed) {
    const identity = providerIdentity(target.provider);
    const upstreamModel = target.deployment.upstreamModel;
    fixed = {
      name: `${operation} ${upstreamModel}`,
      attributes: {
        'gen_ai.operation.name': operation,
        'gen_ai.provider.name': identity.provider,
        'gen_ai.request.model': upstreamModel,
        ...(identity.host ? { 'server.address': identity.host } : {}),
        'gateway.model': target.model.id,
        'gateway.provider': target.deployment.provider,
        'gateway.deployment': target.deployment.id,
      },
    };
    byDeployment.set(key, fixed);
  }
  return fixed;
}

export class Telemetry {
  constructor(
    readonly metrics: GatewayMetrics | undefined,
    readonly tracer: GatewayTracer | undefined,
  ) {}

  /** A request was routed: its observation (and SERVER span, when traced). */
  requestStarted(startedAt: number, endpoint: string, requestId: string, method: string, headers: IncomingHttpHeaders, path: string, clientIp: () => string): Observation {
    const observation = new Observation(startedAt, endpoint, requestId);
    if (this.metrics) {
      const series = this.metrics.inFlight.labels(endpoint);
      series.value += 1;
      observation.inFlight = series;
    }
    if (this.tracer) {
      observation.span = this.tracer.startServer(`${method} ${endpoint}`, headers, {
        'http.request.method': method,
        'http.route': endpoint,
        'url.path': path,
        'client.address': clientIp(),
        'gateway.request_id': requestId,
      });
    }
    return observation;
  }

  /** The response closed (or the client left): counted, timed, and its spans ended. */
  requestEnded(observation: Observation, status: number, now: number, aborted: boolean): void {
    observation.upstreamClose(now);
    if (observation.inFlight) observation.inFlight.value -= 1;
    const seconds = (now - observation.startedAt) / 1000;
    this.metrics?.requestEnded(observation.endpoint, observation.model, observation.provider, status, seconds, observation.upstreamMs / 1000);
    const span = observation.span;
    if (!span) return;
    const attempt = observation.attemptSpan;
    if (attempt) {
      if (aborted) {
        // The client left mid-answer: the call still settles (billed for what was delivered) a
        // moment after, and settled() ends the span with its usage; ended here if it never does.
        failSpan(attempt, 'client_disconnected');
        setTimeout(() => {
          if (observation.attemptSpan !== attempt) return;
          attempt.end();
          observation.attemptSpan = undefined;
        }, ABORTED_SETTLE_MS).unref();
      } else {
        // An answer whose call never settled: ended here.
        attempt.end();
        observation.attemptSpan = undefined;
      }
    }
    span.setAttribute('http.response.status_code', status);
    if (observation.model !== 'none') span.setAttribute('gateway.model', observation.model);
    if (observation.provider !== 'none') span.setAttribute('gateway.provider', observation.provider);
    if (aborted) failSpan(span, 'client_disconnected');
    else if (status >= 500) failSpan(span, String(status));
    span.end();
  }

  /** An attempt goes upstream: the wait starts; traced, its CLIENT span (and the headers that carry it) . */
  attemptStarted(observation: Observation | undefined, target: AttemptTarget, type: ModelType, attempt: number, now: number): Span | undefined {
    if (!observation) return undefined;
    observation.upstreamOpen(now);
    const parent = observation.span;
    if (!parent || !this.tracer) return undefined;
    const fixed = clientAttributes(target, OPERATION[type]);
    const span = this.tracer.startClient(parent, fixed.name, fixed.attributes);
    span.setAttribute('gateway.attempt', attempt);
    span.setAttribute('gateway.request_id', observation.requestId);
    const request = observation.request;
    if (request) {
      if (request.maxTokens !== undefined) span.setAttribute('gen_ai.request.max_tokens', request.maxTokens);
      if (request.temperature !== undefined) span.setAttribute('gen_ai.request.temperature', request.temperature);
      if (request.input !== undefined) span.setAttribute('gen_ai.input.messages', request.input);
    }
    return span;
  }

  /**
   * An upstream token count (POST /v1/messages/count_tokens counted by the provider): the wait
   * is the upstream's; traced, a CLIENT span `count_tokens {model}` (the conventions have no
   * operation for it: `gen_ai.operation.name` is `count_tokens`). Not an attempt in metrics: it
   * is no model call.
   */
  countStarted(observation: Observation | undefined, target: AttemptTarget, now: number): Span | undefined {
    if (!observation) return undefined;
    observation.upstreamOpen(now);
    const parent = observation.span;
    if (!parent || !this.tracer) return undefined;
    const fixed = clientAttributes(target, 'count_tokens');
    return this.tracer.startClient(parent, fixed.name, fixed.attributes).setAttribute('gateway.request_id', observation.requestId);
  }

  /** The count answered (its input tokens) or failed (its reason). */
  countEnded(observation: Observation | undefined, span: Span | undefined, now: number, inputTokens: number | undefined, error?: GatewayError): void {
    observation?.upstreamClose(now);
    if (!span) return;
    if (inputTokens !== undefined) span.setAttribute('gen_ai.usage.input_tokens', inputTokens);
    if (error) {
      if (error.upstream?.status !== undefined) span.setAttribute('http.response.status_code', error.upstream.status);
      failSpan(span, error.reason, error.message);
    } else if (inputTokens === undefined) failSpan(span, 'invalid_count');
    span.end();
  }

  /** The headers that carry an attempt's span upstream (W3C traceparent). */
  traceHeaders(span: Span): Record<string, string> {
    return this.tracer ? this.tracer.headersOf(span) : {};
  }

  /** An attempt answered or failed: counted by outcome; a failed one's span ended with its error. */
  attemptEnded(observation: Observation | undefined, target: AttemptTarget, began: number, now: number, outcome: AttemptOutcome, span: Span | undefined, error?: GatewayError): void {
    observation?.upstreamClose(now);
    this.metrics?.attempt(target.deployment.provider, target.model.id, outcome, (now - began) / 1000);
    if (!span) return;
    if (outcome === 'ok' && observation) {
      observation.attemptSpan?.end();
      observation.attemptSpan = span;
      return;
    }
    if (error) {
      if (error.upstream?.status !== undefined) span.setAttribute('http.response.status_code', error.upstream.status);
      failSpan(span, error.reason, error.message);
    }
    span.end();
  }

  /** A stream's first content arrived from upstream. */
  firstToken(observation: Observation | undefined, model: string, now: number): void {
    if (!observation || !this.metrics) return;
    this.metrics.firstToken(model, (now - observation.startedAt) / 1000);
  }

  /** A call settled: its usage row in metrics; on its answering span, usage, cost and cache. */
  settled(row: NewUsage, observation: Observation | undefined): void {
    this.metrics?.settled(row);
    if (!observation) return;
    // The request's own call (not the semantic cache's embedding lookup, `<id>-cache`, which
    // shares its observation) decides the model and provider it is counted under.
    if (row.requestId === observation.requestId) {
      observation.model = row.model;
      // A cache hit went to no provider: its requests are counted under provider="cache".
      observation.provider = row.cache === 'exact' || row.cache === 'semantic' ? 'cache' : row.provider;
    }
    const span = observation.attemptSpan ?? (row.cache === 'exact' || row.cache === 'semantic' ? observation.span : undefined);
    if (!span) return;
    if (row.unit === undefined || row.unit === 'tokens') {
      span.setAttribute('gen_ai.usage.input_tokens', row.inputTokens);
      span.setAttribute('gen_ai.usage.output_tokens', row.outputTokens);
    }
    span.setAttribute('gateway.cost_micro_inr', row.costMicros);
    if (row.cache) span.setAttribute('gateway.cache', row.cache);
    const response = observation.response;
    if (response?.id !== undefined) span.setAttribute('gen_ai.response.id', response.id);
    if (response?.finishReasons) span.setAttribute('gen_ai.response.finish_reasons', response.finishReasons);
    if (response?.output !== undefined) span.setAttribute('gen_ai.output.messages', response.output);
    span.setAttribute('gen_ai.response.model', response?.model ?? row.deployment?.slice(row.deployment.indexOf(':') + 1) ?? row.model);
    if (row.status >= 400) failSpan(span, row.errorType ?? String(row.status));
    if (span === observation.attemptSpan) {
      span.end();
      observation.attemptSpan = undefined;
    }
  }

  /** telemetry.capture_content: prompts and answers go on spans (cut at 64 KiB each). */
  get capturesContent(): boolean {
    return this.tracer?.captureContent === true;
  }

  async shutdown(timeoutMs: number): Promise<void> {
    await this.tracer?.shutdown(timeoutMs);
  }
}
