import type { Deployment, ModelConfig, ModelType, ProviderConfig } from '../../config/types.js';
import type { CallSignal } from '../abort.js';
import type { CallContext } from '../call-context.js';
import type { Admission } from './admission.js';

export type { CallContext } from '../call-context.js';

/** Where one attempt goes: a deployment of a model, with the provider entry carrying the key to use. */
export interface Target {
  model: ModelConfig;
  deployment: Deployment;
  /** The provider's config with `apiKey` set to the key of this attempt. */
  provider: ProviderConfig;
}

/**
 * One kind of call (chat JSON, a chat stream, embeddings, speech, transcription, images) as
 * the attempt loop drives it (pipeline.ts): the parts that differ between kinds, nothing else.
 */
export interface CallKind<Plan, Answer> {
  readonly type: ModelType;
  /** Once answered, the client's leaving no longer aborts the upstream read (speech reads on to measure what the client took). */
  readonly detach?: boolean;
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
