import { SpanStatusCode, type Attributes, type AttributeValue, type Exception, type HrTime, type Link, type Span, type SpanContext, type SpanKind, type SpanStatus, type TimeInput } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { randomFillSync } from 'node:crypto';

/**
 * The gateway's spans: the OpenTelemetry API's `Span` for the request path, and the SDK's
 * `ReadableSpan` for the SDK's span processor (the BatchSpanProcessor, then the OTLP exporter),
 * which takes them as it takes its own. The SDK's span class does general work the gateway's
 * two spans per call do not need (a context object per span, each attribute validated against
 * limits, a sampler call for a child whose parent already decided, self-metrics): at 100%
 * sampling it was most of what traces cost a chat call (issue 31's +10% budget). The
 * sampling decision is still the SDK's sampler's (tracing.ts), made once per trace at the
 * SERVER span; a CLIENT span follows its parent, as the SDK's default parent-based sampler does.
 */

/** What every span of one tracer shares: where ended spans go and what they describe. */
export interface SpanSink {
  readonly processor: SpanProcessor;
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
  /** OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT (or OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT): strings cut to it; Infinity: not cut. */
  readonly valueLengthLimit: number;
  /** OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT (or OTEL_ATTRIBUTE_COUNT_LIMIT), 128 by default: attributes past it dropped and counted. */
  readonly attributeCountLimit: number;
}

const UNSET: SpanStatus = { code: SpanStatusCode.UNSET };
const NOT_ENDED: HrTime = [0, 0];

/** Wall-clock milliseconds, monotonic between corrections: performance.now() on an offset re-read from Date.now() each second. */
let offsetMs = Date.now() - performance.now();
let offsetReadAt = performance.now();
function epochMs(now: number): number {
  if (now - offsetReadAt > 1000) {
    offsetMs = Date.now() - performance.now();
    offsetReadAt = now;
  }
  return offsetMs + now;
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

function hrDuration(ms: number): HrTime {
  const nanos = Math.max(0, Math.round(ms * 1e6));
  return [Math.floor(nanos / 1e9), nanos % 1e9];
}

/** A time the API's callers may give (epoch or performance milliseconds, HrTime, Date) as epoch milliseconds. */
function inputMs(time: TimeInput): number {
  if (Array.isArray(time)) return time[0] * 1000 + time[1] / 1e6;
  if (time instanceof Date) return time.getTime();
  // The API's convention: a number under the time origin is performance.now()'s.
  return time < performance.timeOrigin ? epochMs(time) : time;
}

// Random ids from a pool refilled by the kernel's CSPRNG 4 KiB at a time.
const pool = Buffer.allocUnsafe(4096);
let poolAt = pool.length;
function randomHex(bytes: 8 | 16): string {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const start = poolAt;
  poolAt += bytes;
  let zero = true;
  for (let i = start; i < poolAt; i++) if (pool[i] !== 0) zero = false;
  // An all-zero id is invalid (W3C): vanishingly rare, made valid as the SDK's generator does.
  if (zero) pool[poolAt - 1] = 1;
  return pool.toString('hex', start, poolAt);
}

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);

export class GatewaySpan implements Span, ReadableSpan {
  readonly attributes: Attributes = {};
  readonly links: Link[] = [];
  readonly events: TimedEvent[] = [];
  status: SpanStatus = UNSET;
  readonly startTime: HrTime;
  endTime: HrTime = NOT_ENDED;
  duration: HrTime = NOT_ENDED;
  ended = false;
  droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  private attributeCount = 0;
  private readonly startedMs: number;

  /**
   * @param recording whether the sampler chose to record it (its context's sampled flag says
   *   whether it is exported); a span not recording takes nothing and is never exported.
   */
  constructor(
    private readonly sink: SpanSink,
    private readonly context: SpanContext,
    readonly parentSpanContext: SpanContext | undefined,
    public name: string,
    readonly kind: SpanKind,
    private readonly recording: boolean,
    startedAt = performance.now(),
  ) {
    this.startedMs = epochMs(startedAt);
    this.startTime = hrTime(this.startedMs);
  }

  get resource(): Resource {
    return this.sink.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.sink.scope;
  }

  spanContext(): SpanContext {
    return this.context;
  }

  isRecording(): boolean {
    return this.recording && !this.ended;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (value === undefined || value === null || !this.recording || this.ended || key.length === 0) return this;
    if (!Object.prototype.hasOwnProperty.call(this.attributes, key)) {
      if (this.attributeCount >= this.sink.attributeCountLimit) {
        this.droppedAttributesCount += 1;
        return this;
      }
      this.attributeCount += 1;
    }
    this.attributes[key] = typeof value === 'string' && value.length > this.sink.valueLengthLimit ? value.slice(0, this.sink.valueLengthLimit) : value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) if (Object.prototype.hasOwnProperty.call(attributes, key)) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (!this.recording || this.ended) return this;
    const attributes = attributesOrTime !== undefined && typeof attributesOrTime === 'object' && !Array.isArray(attributesOrTime) && !(attributesOrTime instanceof Date) ? attributesOrTime : undefined;
    const at = time ?? (attributes === undefined ? (attributesOrTime as TimeInput | undefined) : undefined);
    this.events.push({ name, time: hrTime(at === undefined ? epochMs(performance.now()) : inputMs(at)), droppedAttributesCount: 0, ...(attributes ? { attributes: { ...attributes } } : {}) });
    return this;
  }

  addLink(link: Link): this {
    if (this.recording && !this.ended) this.links.push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.recording && !this.ended) this.status = { ...status };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === 'string') attributes['exception.message'] = exception;
    else {
      if (exception.name !== undefined) attributes['exception.type'] = exception.name;
      if (exception.message !== undefined) attributes['exception.message'] = exception.message;
      if (exception.stack !== undefined) attributes['exception.stacktrace'] = exception.stack;
    }
    this.addEvent('exception', attributes, time);
  }

  /** Ended once; a recording span goes to the SDK's span processor (the sampled ones are exported). */
  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.recording) return;
    const endMs = endTime === undefined ? epochMs(performance.now()) : inputMs(endTime);
    this.endTime = hrTime(Math.max(endMs, this.startedMs));
    this.duration = hrDuration(endMs - this.startedMs);
    this.sink.processor.onEnd(this);
  }
}

/** Marks `span` failed: `error.type` and an ERROR status (with `message` when given). */
export function failSpan(span: Span, errorType: string, message?: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message !== undefined ? { message } : {}) });
}
