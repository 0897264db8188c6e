import type { Deployment, ModelConfig, ModelType, ProviderConfig } from '../../config/types.js';
import type { CallSignal } from '../abort.js';
import type { ChatResult, GatewayStreamEvent, Usage } from '../canonical.js';
import type { GatewayError } from '../errors.js';
import type { Admission } from './admission.js';

export type { CallContext } from '../call-context.js';

/** Where one attempt goes: a deployment of a model, with the provider entry carrying the key to use. */
export interface Target {
  model: ModelConfig;
  deployment: Deployment;
  /** The provider's config with `apiKey` set to the key of this attempt. */
  provider: ProviderConfig;
  /** Headers that carry the attempt's trace upstream (W3C traceparent), when traced. */
  traceHeaders?: Record<string, string>;
}

/**
 * One kind of call (chat JSON, a chat stream, embeddings, speech, transcription, images) as
 * the attempt loop drives it (pipeline.ts): the parts that differ between kinds, nothing else.
 */
export interface CallKind<Plan, Answer> {
  readonly type: ModelType;
  /** Once answered, the client's leaving no longer aborts the upstream read (speech reads on to measure what the client took). */
  readonly detach?: boolean;
  /** The response cache's part in a call that fails before any answer (its usage row, and the cache metrics): looked up and missed, or bypassed. */
  readonly cache?: { outcome: 'bypass' | 'miss' } | undefined;
  /**
   * What the call needs on this model, checked: a GatewayError when the model cannot take it
   * (the client's 400 for the model asked for; a fallback that cannot is skipped).
   */
  plan(model: ModelConfig): Plan;
  /** Rate limit, budget and wallet at this model's prices; `first`: the call's rate-limit slot is taken by this one. */
  admit(model: ModelConfig, plan: Plan, first: boolean): Promise<Admission>;
  /**
   * One attempt on one deployment: sends, and reads up to the point of no return (an answer read
   * whole, a stream's first content, the first audio bytes), so that a failure until then can
   * be retried invisibly. Throws the attempt's error (a GatewayError with `upstream` set for the
   * upstream's failures).
   */
  attempt(target: Target, plan: Plan, admission: Admission, signal: CallSignal): Promise<Answer>;
}

/** A call the loop got an answer for: who served it, after how many attempts, and what it holds. */
export interface Routed<Plan, Answer> {
  answer: Answer;
  /** The model that served (the one asked for, or a fallback). */
  model: ModelConfig;
  plan: Plan;
  target: Target;
  admission: Admission;
  /** Upstream attempts made, this one included. */
  attempts: number;
  /** Rate-limit headers and x-gateway-model, -provider, -attempts. */
  headers: Record<string, string>;
  /** The signal the answer is still read under (aborted when the client leaves). */
  signal: CallSignal;
}

export interface ChatOutcome {
  result: ChatResult;
  usage: Usage;
  /** The model that served (the one asked for, or a fallback). */
  model: ModelConfig;
  costMicros: number;
  headers: Record<string, string>;
}

export interface ChatStreamOutcome {
  model: ModelConfig;
  headers: Record<string, string>;
  /**
   * Deltas as they arrive, then (after settlement) `usage` and `finish`, or one `error`: in
   * batches, one per upstream read (the parts that read carried, never held for a later one),
   * so that the ingress writes them to the client in one write, as a byte pipe would.
   */
  events: AsyncGenerator<GatewayStreamEvent[], void, undefined>;
  /** The prompt's usage as the upstream reported it before the first content (Anthropic does), if it did. */
  promptUsage?: Usage;
  /** The gateway's count of the prompt (its calibrated tokenizer), for a format that states it up front. */
  estimatePrompt(): Promise<Usage>;
  /**
   * The upstream answered in the ingress's own format (`ChatRequest.native`): the stream's
   * `native` parts are the answer, relayed as they are; the canonical parts are bookkeeping.
   */
  native: boolean;
  /**
   * Ends a stream the ingress will not read (it failed before writing anything): its upstream
   * closed, its hold released, the call recorded with `failure`'s status and never charged.
   * A stream already being read ends as the client's abort does.
   */
  cancel(failure: GatewayError): Promise<void>;
}

/**
 * Events with the cancel() of ChatStreamOutcome. A generator whose body never ran would skip
 * its own `finally` on return(), leaving its call unsettled; `make` gets a `started` callback
 * for the body's first line, and `unstarted` does the settling for a body that never ran.
 */
export function cancellable(
  make: (started: () => void) => AsyncGenerator<GatewayStreamEvent[], void, undefined>,
  unstarted: (failure: GatewayError) => Promise<void>,
): Pick<ChatStreamOutcome, 'events' | 'cancel'> {
  let started = false;
  const events = make(() => {
    started = true;
  });
  return {
    events,
    cancel: async (failure) => {
      if (started) {
        await events.return(undefined);
        return;
      }
      started = true;
      await unstarted(failure);
    },
  };
}

