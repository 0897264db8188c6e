import type { Span } from '@opentelemetry/api';
import type { CounterSeries } from './prom.js';

/**
 * One request as telemetry sees it: made by the HTTP server when the request starts, carried
 * to the call path on CallContext.observation, and read when the response closes. The call
 * path fills in the model and provider that served, and the time spent waiting on upstreams
 * (the rest is the gateway's own overhead).
 */
export class Observation {
  /** The catalog model that served ("unknown" until a model call resolves one; "none": no model call). */
  model = 'none';
  /** The provider entry that served ("none": no upstream, or not yet). */
  provider = 'none';
  /** Milliseconds spent waiting on upstreams, in closed intervals. */
  upstreamMs = 0;
  /** The open interval's start (performance.now()), or -1. */
  private openedAt = -1;
  /** The SERVER span, when traces are on and this request is sampled. */
  span: Span | undefined;
  /** The answering attempt's CLIENT span: ended when the call settles (its usage known). */
  attemptSpan: Span | undefined;
  /** GenAI request attributes for the attempt spans (chat calls, traces on). */
  request: { maxTokens?: number | undefined; temperature?: number | undefined; /** telemetry.capture_content: the prompt, as JSON. */ input?: string } | undefined;
  /** GenAI response attributes, once known. */
  response: { id?: string | undefined; model?: string | undefined; finishReasons?: string[]; /** telemetry.capture_content: the answer, as JSON. */ output?: string } | undefined;
  /** The request's own in-flight gauge series (metrics.ts), moved back at close. */
  inFlight: CounterSeries | undefined;

  constructor(
    readonly startedAt: number,
    readonly endpoint: string,
    readonly requestId: string,
  ) {}

  /** An upstream wait starts (an attempt is sent, or a stream's rest is read). */
  upstreamOpen(now: number): void {
    if (this.openedAt < 0) this.openedAt = now;
  }

  /** The upstream wait ends. */
  upstreamClose(now: number): void {
    if (this.openedAt < 0) return;
    this.upstreamMs += now - this.openedAt;
    this.openedAt = -1;
  }
}
