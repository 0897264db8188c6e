import type { Logger } from 'pino';
import type { Deployment, GatewayConfig, ModelConfig, ModelType, ProviderConfig } from '../../config/types.js';
import { CallSignal } from '../abort.js';
import type { Catalog } from '../catalog.js';
import { CallAborted, GatewayError, isGatewayError } from '../errors.js';
import type { HoldStore } from '../limits/holds.js';
import { backoffMs, classifyFailure, pickDeployment, type Choice, type Option, type Rest } from '../routing/decide.js';
import type { RouteHealth } from '../routing/health.js';
import type { Usage } from '../canonical.js';
import { rateHeaders, type Admission } from './admission.js';
import type { CallContext, CallKind, Routed, Target } from './call.js';
import { buildChain, providerNotConfigured, restingError, routingTimeout, type FallbackName } from './chain.js';
import { InFlight } from './in-flight.js';
import { nothing } from './media-calls.js';
import type { CacheRecord, Metered, SettledCall, Settlement } from './settlement.js';

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

/** What the loop knows of one deployment of one candidate model during a call. */
interface Tried {
  tried: number;
  blocked: boolean;
  readyAt: number;
  /** Keys of its provider this call was refused with. */
  refusedKeys: Set<number> | undefined;
}

/** The candidate model the call is admitted at now. */
interface Active<Plan> {
  candidate: number;
  plan: Plan;
  admission: Admission;
}

/**
 * The one call path every kind of call goes through, after its cache stage: resolve the chain
 * (the model asked for, the request's fallbacks, the config's) ► admit at the model's prices ►
 * the attempt loop (the router picks a deployment and a key; the kind's attempt; a failure
 * classified as retry, rest or give up; the next deployment or fallback, re-planned and
 * re-admitted at its own prices) ► the answer, which the kind relays and settles once, here,
 * at the model that served. Errors before an answer settle here too (a usage row, no charge,
 * the hold released), and the client gets the first candidate's error.
 */
export class CallPipeline {
  private readonly inFlight = new InFlight();
  /** Each provider's config with each of its keys (index 0 of a one-key provider is the config itself). */
  private readonly keyed = new Map<string, ProviderConfig[]>();

  constructor(
    private readonly config: GatewayConfig,
    private readonly catalog: Catalog,
    private readonly health: RouteHealth,
    private readonly holds: HoldStore,
    private readonly settlement: Settlement,
    private readonly logger: Logger,
  ) {}

  /** Resolves once every admitted call has settled, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    return this.inFlight.settled(timeoutMs);
  }

  /** The models a call may be served by, in order (chain.ts); 400 naming the field for a fallback that is not in the catalog. */
  chain(asked: ModelConfig, type: ModelType, requested: readonly FallbackName[]): ModelConfig[] {
    return buildChain(this.catalog, this.config.routing.fallbacks, asked, type, requested);
  }

  async route<Plan, Answer>(kind: CallKind<Plan, Answer>, ctx: CallContext, chain: readonly ModelConfig[]): Promise<Routed<Plan, Answer>> {
    const routing = this.config.routing;
    const asked = chain[0] as ModelConfig;
    // The model asked for is checked and admitted before anything else: its refusals (400,
    // 402, 429) are the client's answer, as with no routing at all.
    const firstPlan = kind.plan(asked);
    const firstAdmission = await kind.admit(asked, firstPlan, true);
    this.inFlight.enter();
    let active: Active<Plan> | undefined = { candidate: 0, plan: firstPlan, admission: firstAdmission };
    let lastHold = firstAdmission.hold;
    const plans = new Map<number, Plan | null>([[0, firstPlan]]);

    // The whole call's deadline, and a signal of its own: aborted when the client leaves or the deadline passes.
    const signal = new CallSignal();
    const onClientAbort = (): void => signal.abort();
    if (ctx.signal.aborted) signal.abort();
    else ctx.signal.once('abort', onClientAbort);
    let timedOut = false;
    const deadline = Date.now() + routing.timeoutMs;
    const timer = setTimeout(() => {
      timedOut = true;
      signal.abort();
    }, routing.timeoutMs);
    const done = (): void => clearTimeout(timer);

    const states = new Map<string, Tried>();
    const errors = new Map<number, GatewayError>();
    const blockedCandidates = new Set<number>();
    let attempts = 0;
    let firstProvider = asked.deployments[0]?.provider ?? asked.provider;
    const noteError = (candidate: number, error: GatewayError): void => {
      if (!errors.has(candidate)) errors.set(candidate, error);
    };

    /** Moves the call's admission to another candidate model (its plan and prices); undefined when it cannot take the call. */
    const admitAt = async (candidate: number): Promise<Active<Plan> | undefined> => {
      if (active?.candidate === candidate) return active;
      const model = chain[candidate] as ModelConfig;
      let plan = plans.get(candidate);
      if (plan === undefined) {
        try {
          plan = kind.plan(model);
        } catch (error) {
          this.logger.info({ req_id: ctx.requestId, model: model.id, reason: isGatewayError(error) ? error.message : String(error) }, 'fallback skipped: the model cannot take the call');
          plan = null;
        }
        plans.set(candidate, plan);
      }
      if (plan === null) return undefined;
      if (active) await this.holds.release(active.admission.hold).catch(() => undefined);
      active = undefined;
      try {
        const admission = await kind.admit(model, plan, false);
        lastHold = admission.hold;
        active = { candidate, plan, admission };
        return active;
      } catch (error) {
        this.logger.info({ req_id: ctx.requestId, model: model.id, reason: isGatewayError(error) ? error.message : String(error) }, 'fallback skipped: not admitted at its prices');
        return undefined;
      }
    };

    try {
      while (attempts <= routing.retries) {
        const now = Date.now();
        const choice = this.choose(chain, states, blockedCandidates, noteError, now, deadline);
        if (!choice) break;
        const { option } = choice;
        const stateKey = `${option.candidate}|${option.deployment.id}`;
        const state = stateOf(states, stateKey);
        const current = await admitAt(option.candidate);
        if (!current) {
          blockedCandidates.add(option.candidate);
          continue;
        }
        if (choice.waitMs > 0) {
          await sleep(choice.waitMs, signal);
          if (signal.aborted) break;
        }
        const deployment = option.deployment;
        const provider = this.config.providers[deployment.provider] as ProviderConfig;
        const keyIndex = this.health.nextKey(provider, Date.now(), state.refusedKeys);
        if (keyIndex === undefined) {
          state.blocked = true;
          continue;
        }
        attempts += 1;
        state.tried += 1;
        const model = chain[option.candidate] as ModelConfig;
        const target: Target = { model, deployment, provider: this.withKey(provider, keyIndex) };
        if (attempts === 1) firstProvider = deployment.provider;
        const began = Date.now();
        this.health.begin(deployment.id, began);
        try {
          const answer = await kind.attempt(target, current.plan, current.admission, signal);
          this.health.answered(deployment.id, Date.now() - began);
          done();
          ctx.signal.off('abort', onClientAbort);
          // From here the client's leaving still aborts the rest of the answer (unless the kind reads on).
          if (!kind.detach && !ctx.signal.aborted) ctx.signal.once('abort', onClientAbort);
          const headers = rateHeaders(firstAdmission.rate);
          headers['x-gateway-model'] = model.id;
          headers['x-gateway-provider'] = deployment.provider;
          headers['x-gateway-attempts'] = String(attempts);
          return { answer, model, plan: current.plan, target, admission: current.admission, attempts, headers, signal };
        } catch (error) {
          this.health.end(deployment.id);
          if (timedOut || ctx.signal.aborted || !isGatewayError(error)) throw error;
          const failed = Date.now();
          const verdict = classifyFailure(error.upstream, routing, backoffMs(state.tried, Math.random()));
          if (error.upstream) this.health.failed(deployment.id, verdict.countFailure, failed);
          if (verdict.restKey) this.health.restKey(provider, keyIndex, verdict.restKey.ms, verdict.restKey.reason, failed);
          if (verdict.restDeployment) this.health.restDeployment(deployment.id, verdict.restDeployment.ms, verdict.restDeployment.reason, failed);
          noteError(option.candidate, error);
          this.logger.warn(
            { req_id: ctx.requestId, model: model.id, deployment: deployment.id, attempt: attempts, status: error.upstream?.status, reason: error.reason, retry: verdict.retry },
            'upstream attempt failed',
          );
          if (!verdict.retry) break;
          if (verdict.rotateKey) {
            (state.refusedKeys ??= new Set()).add(keyIndex);
            // The same deployment with its next key, as if untried (or never again, with none left).
            state.tried = 0;
          } else if (verdict.againAfterMs !== undefined) state.readyAt = failed + verdict.againAfterMs;
          else state.blocked = true;
        }
      }
      // Nothing answered: the first candidate's error (its status and envelope), not the last.
      let failure: GatewayError | undefined;
      for (let candidate = 0; candidate < chain.length && !failure; candidate++) failure = errors.get(candidate);
      if (timedOut) failure = routingTimeout(routing.timeoutMs);
      failure ??= restingError(asked, this.soonestRest(asked, Date.now()));
      throw failure;
    } catch (error) {
      done();
      ctx.signal.off('abort', onClientAbort);
      const thrown = timedOut ? routingTimeout(routing.timeoutMs) : ctx.signal.aborted ? new CallAborted('client disconnected') : error;
      await this.settleFailure(ctx, asked, firstProvider, lastHold, attempts, thrown);
      throw thrown;
    }
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
  private async settleFailure(ctx: CallContext, model: ModelConfig, provider: string, hold: Admission['hold'], attempts: number, error: unknown): Promise<void> {
    const aborted = error instanceof CallAborted;
    const status = aborted ? 499 : isGatewayError(error) ? error.status : 500;
    const reason = aborted ? 'client_disconnected' : isGatewayError(error) ? error.reason : 'internal_error';
    try {
      await this.settlement.settle({
        requestId: ctx.requestId,
        accountId: ctx.accountId,
        apiKeyId: ctx.apiKeyId,
        model,
        provider,
        attempts,
        endpoint: ctx.endpoint,
        stream: false,
        usage: undefined,
        metered: model.type === 'chat' ? undefined : nothing(model),
        status,
        errorType: reason,
        startedAt: ctx.startedAt,
        hold,
      });
    } catch (settleError) {
      this.logger.error({ err: settleError, req_id: ctx.requestId }, 'could not settle a failed call');
    } finally {
      this.inFlight.leave();
    }
  }

  /** The next deployment (decide.ts); the first attempt of a one-deployment model skips building the options. */
  private choose(chain: readonly ModelConfig[], states: Map<string, Tried>, blocked: ReadonlySet<number>, noteError: (candidate: number, error: GatewayError) => void, now: number, deadline: number): Choice | undefined {
    const routing = this.config.routing;
    const options: Option[] = [];
    for (let candidate = 0; candidate < chain.length; candidate++) {
      const model = chain[candidate] as ModelConfig;
      for (const deployment of model.deployments) {
        const provider = this.config.providers[deployment.provider] as ProviderConfig;
        const state = states.get(`${candidate}|${deployment.id}`);
        let unusable = blocked.has(candidate) || state?.blocked === true;
        if (!unusable && provider.apiKeys.length === 0 && provider.apiKeyEnv) {
          noteError(candidate, providerNotConfigured(provider));
          unusable = true;
        }
        options.push({
          candidate,
          deployment,
          rest: this.restOf(deployment, provider, now),
          busy: routing.strategy === 'least-busy' ? this.health.busy(deployment.id) : 0,
          latencyMs: routing.strategy === 'latency' ? this.health.latency(deployment.id) : undefined,
          tried: state?.tried ?? 0,
          blocked: unusable,
          readyAt: state?.readyAt ?? now,
        });
      }
    }
    return pickDeployment(options, routing.strategy, now, deadline, Math.random());
  }

  private restOf(deployment: Deployment, provider: ProviderConfig, now: number): Rest | undefined {
    return this.health.deploymentRest(deployment.id, now) ?? this.health.keysRest(provider, now);
  }

  private soonestRest(model: ModelConfig, now: number): Rest | undefined {
    let soonest: Rest | undefined;
    for (const deployment of model.deployments) {
      const rest = this.restOf(deployment, this.config.providers[deployment.provider] as ProviderConfig, now);
      if (rest && (!soonest || rest.until < soonest.until)) soonest = rest;
    }
    return soonest;
  }

  /** The provider's config carrying key `index` (built once per key; a one-key provider's is the config itself). */
  private withKey(provider: ProviderConfig, index: number): ProviderConfig {
    if (provider.apiKeys.length <= 1) return provider;
    let list = this.keyed.get(provider.name);
    if (!list) {
      list = provider.apiKeys.map((key) => Object.freeze({ ...provider, apiKey: key }));
      this.keyed.set(provider.name, list);
    }
    return list[index] ?? provider;
  }
}

function stateOf(states: Map<string, Tried>, key: string): Tried {
  let state = states.get(key);
  if (!state) {
    state = { tried: 0, blocked: false, readyAt: 0, refusedKeys: undefined };
    states.set(key, state);
  }
  return state;
}

/** Waits `ms`, or less when the signal aborts. */
function sleep(ms: number, signal: CallSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const wake = (): void => {
      clearTimeout(timer);
      signal.off('abort', wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    signal.once('abort', wake);
  });
}
