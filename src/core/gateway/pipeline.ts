import type { Logger } from 'pino';
import type { GatewayConfig, ModelConfig, ModelType, ProviderConfig } from '../../config/types.js';
import type { Catalog } from '../catalog.js';
import { CallAborted, GatewayError, isGatewayError } from '../errors.js';
import type { HoldStore } from '../limits/holds.js';
import type { RouteHealth } from '../routing/health.js';
import type { Usage } from '../canonical.js';
import { AttemptLoop, type LoopDeps, type Unanswered } from './attempt-loop.js';
import type { CallContext, CallKind, Routed } from './call.js';
import { buildChain, type FallbackName } from './chain.js';
import { InFlight } from './in-flight.js';
import { nothing } from './media-calls.js';
import type { CacheRecord, Metered, SettledCall, Settlement } from './settlement.js';
import type { Telemetry } from '../telemetry/telemetry.js';

/** How a call that got an answer ended, for its one usage row. */
export interface CallEnd {
  usage?: Usage | undefined;
  metered?: Metered | undefined;
  status: number;
  errorType?: string | undefined;
  stream: boolean;
  cache?: CacheRecord | undefined;
  /** The upstream failed after the answer started (mid-stream): counted against the deployment. */
  failure?: GatewayError | undefined;
}

/** How often `routing.timeout` is checked: a call ends within this much after its deadline. */
const DEADLINE_SWEEP_MS = 250;

/**
 * The one call path every kind of call goes through, after its cache stage: resolve the chain
 * (the model asked for, the request's fallbacks, the config's) ► admit at the model's prices ►
 * the attempt loop (the router picks a deployment and a key; the kind's attempt; a failure
 * classified as retry, rest or give up; the next deployment or fallback, re-planned and
 * re-admitted at its own prices) ► the answer, which the kind relays and settles once, here,
 * at the model that served. Errors before an answer settle here too (a usage row, no charge,
 * the hold released), and the client gets the first candidate's error.
 */
export class CallPipeline implements LoopDeps {
  private readonly inFlight = new InFlight();
  /** Each provider's config with each of its keys (index 0 of a one-key provider is the config itself). */
  private readonly keyed = new Map<string, ProviderConfig[]>();
  private readonly alone = new WeakMap<ModelConfig, readonly ModelConfig[]>();
  /** Calls still looking for an answer (their deadlines are swept). */
  private readonly routing = new Set<AttemptLoop<unknown, unknown>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    readonly config: GatewayConfig,
    private readonly catalog: Catalog,
    readonly health: RouteHealth,
    readonly holds: HoldStore,
    private readonly settlement: Settlement,
    readonly logger: Logger,
    readonly telemetry: Telemetry,
  ) {
    this.sweeper = setInterval(() => this.sweep(), DEADLINE_SWEEP_MS);
    this.sweeper.unref();
  }

  /** Resolves once every admitted call has settled, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    return this.inFlight.settled(timeoutMs);
  }

  /**
   * The models a call may be served by, in order (chain.ts); 400 naming the field for a
   * fallback that is not in the catalog. A key with a models list (ctx.policy) gets 403 for the
   * model it asked for or a fallback it named outside that list; the config's fallbacks
   * outside it are left out.
   */
  chain(asked: ModelConfig, type: ModelType, requested: readonly FallbackName[], ctx?: CallContext): readonly ModelConfig[] {
    const policy = ctx?.policy;
    policy?.checkModel(asked, ctx?.requestedModel ?? asked.id);
    if (ctx?.observation && ctx.requestId === ctx.observation.requestId) ctx.observation.model = asked.id;
    // Most calls name no fallback and their model has none: one chain per model, built once.
    if (requested.length === 0 && this.config.routing.fallbacks[asked.id] === undefined) {
      let alone = this.alone.get(asked);
      if (!alone) {
        alone = Object.freeze([asked]);
        this.alone.set(asked, alone);
      }
      return alone;
    }
    const chain = buildChain(this.catalog, this.config.routing.fallbacks, asked, type, requested);
    if (!policy) return chain;
    requested.forEach(({ name, field }) => {
      const model = this.catalog.find(name);
      if (!policy.allowsModel(model)) throw policyRefusal(field, name);
    });
    return chain.filter((model) => policy.allowsModel(model));
  }

  async route<Plan, Answer>(kind: CallKind<Plan, Answer>, ctx: CallContext, chain: readonly ModelConfig[]): Promise<Routed<Plan, Answer>> {
    const asked = chain[0] as ModelConfig;
    // The model asked for is checked and admitted before anything else: its refusals (400,
    // 402, 429) are the client's answer, as with no routing at all.
    const plan = kind.plan(asked);
    const admission = await kind.admit(asked, plan, true);
    this.inFlight.enter();
    const loop = new AttemptLoop(this, kind, ctx, chain, plan, admission);
    this.routing.add(loop);
    try {
      return await loop.run();
    } catch (error) {
      await this.settleFailure(ctx, loop.unanswered(error), kind.cache);
      throw error;
    } finally {
      this.routing.delete(loop);
    }
  }

  /** Ends the calls past `routing.timeout` (checked every DEADLINE_SWEEP_MS: no timer per call). */
  private sweep(): void {
    if (this.routing.size === 0) return;
    const now = Date.now();
    for (const loop of this.routing) if (loop.deadline <= now) loop.expire();
  }

  /** At shutdown. */
  close(): void {
    clearInterval(this.sweeper);
  }

  /** Settles a call that got an answer: its one usage row, at the model that served, with its attempts. */
  async settle(routed: Routed<unknown, unknown>, ctx: CallContext, end: CallEnd): Promise<SettledCall> {
    const deployment = routed.target.deployment;
    try {
      if (end.failure?.upstream) this.health.failed(deployment.id, true, Date.now());
      return await this.settlement.settle({
        requestId: ctx.requestId,
        accountId: ctx.accountId,
        apiKeyId: ctx.apiKeyId,
        model: routed.model,
        provider: deployment.provider,
        deployment: deployment.id,
        attempts: routed.attempts,
        endpoint: ctx.endpoint,
        stream: end.stream,
        usage: end.usage,
        metered: end.metered,
        status: end.status,
        errorType: end.errorType,
        startedAt: ctx.startedAt,
        hold: routed.admission.hold,
        cache: end.cache,
        requestedModel: ctx.requestedModel,
        observation: ctx.observation,
      });
    } finally {
      this.health.end(deployment.id);
      this.inFlight.leave();
    }
  }

  /**
   * A call answered without an upstream (a response cache hit), admitted by its service:
   * counted in flight until `settleAlone` (shutdown waits for it).
   */
  enterAlone(): void {
    this.inFlight.enter();
  }

  async settleAlone(input: Parameters<Settlement['settle']>[0]): Promise<SettledCall> {
    try {
      return await this.settlement.settle(input);
    } finally {
      this.inFlight.leave();
    }
  }

  /** A call that failed before any answer: a usage row with the status the client got, no charge, the hold released. */
  private async settleFailure(ctx: CallContext, call: Unanswered, cache: CacheRecord | undefined): Promise<void> {
    const { error, model } = call;
    const aborted = error instanceof CallAborted;
    const status = aborted ? 499 : isGatewayError(error) ? error.status : 500;
    const reason = aborted ? 'client_disconnected' : isGatewayError(error) ? error.reason : 'internal_error';
    try {
      await this.settlement.settle({
        requestId: ctx.requestId,
        accountId: ctx.accountId,
        apiKeyId: ctx.apiKeyId,
        model,
        provider: call.provider,
        attempts: call.attempts,
        endpoint: ctx.endpoint,
        stream: false,
        usage: undefined,
        metered: model.type === 'chat' ? undefined : nothing(model),
        status,
        errorType: reason,
        startedAt: ctx.startedAt,
        hold: call.hold,
        requestedModel: ctx.requestedModel,
        observation: ctx.observation,
        ...(cache ? { cache } : {}),
      });
    } catch (settleError) {
      this.logger.error({ err: settleError, req_id: ctx.requestId }, 'could not settle a failed call');
    } finally {
      this.inFlight.leave();
    }
  }

  /** The provider's config carrying key `index` (built once per key; a one-key provider's is the config itself). */
  withKey(provider: ProviderConfig, index: number): ProviderConfig {
    if (provider.apiKeys.length <= 1) return provider;
    let list = this.keyed.get(provider.name);
    if (!list) {
      list = provider.apiKeys.map((key) => Object.freeze({ ...provider, apiKey: key }));
      this.keyed.set(provider.name, list);
    }
    return list[index] ?? provider;
  }
}

/** A fallback the client named that its key may not call. */
function policyRefusal(field: string, name: string): GatewayError {
  return new GatewayError({ status: 403, type: 'permission_error', reason: 'model_not_allowed', param: field, message: `${field}: this API key may not call '${name}': its models list does not include it` });
}
