import type { Logger } from 'pino';
import type { GatewayConfig, ModelConfig, ProviderConfig } from '../../config/types.js';
import { CallSignal } from '../abort.js';
import { CallAborted, isGatewayError, type GatewayError } from '../errors.js';
import type { HoldStore } from '../limits/holds.js';
import { backoffMs, classifyFailure, isSoftRest, pickDeployment, type Choice, type Option, type Rest } from '../routing/decide.js';
import type { RouteHealth } from '../routing/health.js';
import type { Admission } from './admission.js';
import { rateHeaders } from './refusals.js';
import type { CallContext, CallKind, Routed, Target } from './call.js';
import { providerNotConfigured, restingError, routingTimeout } from './chain.js';
import type { Span } from '@opentelemetry/api';
import type { AttemptOutcome } from '../telemetry/metrics.js';
import type { Telemetry } from '../telemetry/telemetry.js';

/** What the loop knows of one deployment of one candidate model during a call. */
interface Tried {
  tried: number;
  blocked: boolean;
  readyAt: number;
  /** Keys of its provider this call was refused with. */
  refusedKeys: Set<number> | undefined;
}

/** What the loop needs of the pipeline that runs it. */
export interface LoopDeps {
  config: GatewayConfig;
  health: RouteHealth;
  holds: HoldStore;
  logger: Logger;
  telemetry: Telemetry;
  /** The provider's config carrying key `index`. */
  withKey(provider: ProviderConfig, index: number): ProviderConfig;
}

/** How a call that got no answer ended, for its usage row. */
export interface Unanswered {
  error: unknown;
  /** The model asked for, and the provider of the first attempt. */
  model: ModelConfig;
  provider: string;
  hold: Admission['hold'];
  attempts: number;
}

/**
 * One call's attempt loop (pipeline.ts runs it): the router picks a deployment and a key
 * (routing/decide.ts), the kind's attempt runs, a failure is classified (retry, rest, give
 * up), and the next attempt goes to another deployment or a fallback model, re-planned and
 * re-admitted at that model's prices, until an answer, the retries, the candidates or
 * `routing.timeout` run out. A class, not closures: a call that succeeds at once allocates
 * this object and its target, nothing more (no timer: the pipeline sweeps deadlines).
 */
export class AttemptLoop<Plan, Answer> {
  /**
   * What the attempts run under: the client's own signal (aborted when it leaves, or here when
   * the deadline passes, before any byte went out); a signal of its own for a kind that reads
   * on after the client left (speech), linked to the client's until the answer.
   */
  readonly signal: CallSignal;
  attempts = 0;
  /** When `routing.timeout` ends the call (the pipeline's sweep calls `expire`). */
  readonly deadline: number;
  private timedOut = false;
  private readonly onClientAbort: (() => void) | undefined;
  /** The candidate the call is admitted at now. */
  private candidate = 0;
  private plan: Plan;
  private admission: Admission;
  private readonly firstRate: Admission['rate'];
  private firstProvider: string;
  private states: Map<string, Tried> | undefined;
  private errors: Map<number, GatewayError> | undefined;
  private plans: Map<number, Plan | null> | undefined;
  private blocked: Set<number> | undefined;
  /** Admitted at no candidate (a switch to a fallback failed its admission). */
  private unadmitted = false;
  /** The last failed attempt, not yet reported to telemetry. */
  private lastFailure: { target: Target; sent: number; ended: number; span: Span | undefined; error: GatewayError; rested: boolean } | undefined;

  constructor(
    private readonly deps: LoopDeps,
    private readonly kind: CallKind<Plan, Answer>,
    private readonly ctx: CallContext,
    private readonly chain: readonly ModelConfig[],
    plan: Plan,
    admission: Admission,
  ) {
    this.plan = plan;
    this.admission = admission;
    this.firstRate = admission.rate;
    const asked = chain[0] as ModelConfig;
    this.firstProvider = asked.deployments[0]?.provider ?? asked.provider;
    this.deadline = Date.now() + deps.config.routing.timeoutMs;
    if (kind.detach) {
      const own = new CallSignal();
      this.onClientAbort = () => own.abort();
      if (ctx.signal.aborted) own.abort();
      else ctx.signal.on('abort', this.onClientAbort);
      this.signal = own;
    } else this.signal = ctx.signal;
  }

  /** `routing.timeout` passed before an answer: the attempt in flight is aborted, the call answers 504. */
  expire(): void {
    this.timedOut = true;
    this.signal.abort();
  }

  /** The answer, or throws the error the client gets (with `unanswered()` telling what to settle). */
  async run(): Promise<Routed<Plan, Answer>> {
    const { config, health, logger } = this.deps;
    const routing = config.routing;
    const ctx = this.ctx;
    let rotated: Option | undefined;
    try {
      while (this.attempts <= routing.retries) {
        const now = Date.now();
        const choice: Choice | undefined = rotated ? { option: rotated, waitMs: 0 } : this.choose(now);
        rotated = undefined;
        if (!choice) break;
        const { option } = choice;
        if (!(await this.admitAt(option.candidate))) {
          (this.blocked ??= new Set()).add(option.candidate);
          continue;
        }
        if (choice.waitMs > 0) {
          // Waiting for an upstream's Retry-After or a backoff: the upstream's time, not the gateway's.
          ctx.observation?.upstreamOpen(performance.now());
          await sleep(choice.waitMs, this.signal);
          ctx.observation?.upstreamClose(performance.now());
          if (this.signal.aborted) break;
        }
        const deployment = option.deployment;
        const provider = config.providers[deployment.provider] as ProviderConfig;
        const state = this.stateOf(option);
        const keyIndex = health.nextKey(provider, Date.now(), state?.refusedKeys);
        if (keyIndex === undefined) {
          this.stateFor(option).blocked = true;
          continue;
        }
        this.attempts += 1;
        if (state) state.tried += 1;
        const model = this.chain[option.candidate] as ModelConfig;
        const target: Target = { model, deployment, provider: this.deps.withKey(provider, keyIndex) };
        if (this.attempts === 1) this.firstProvider = deployment.provider;
        const began = Date.now();
        health.begin(deployment.id, began);
        const { telemetry } = this.deps;
        const observation = ctx.observation;
        // The previous attempt failed and this one follows it: it was retried.
        this.reportFailed(true);
        const sent = observation ? performance.now() : 0;
        const span = telemetry.attemptStarted(observation, target, this.kind.type, this.attempts, sent);
        if (span) target.traceHeaders = telemetry.traceHeaders(span);
        try {
          const answer = await this.kind.attempt(target, this.plan, this.admission, this.signal);
          health.answered(deployment.id, Date.now() - began);
          if (observation) telemetry.attemptEnded(observation, target, sent, performance.now(), 'ok', span);
          // Once answered, the client's leaving still aborts the rest of the answer, unless the kind reads on.
          this.stop();
          const headers = rateHeaders(this.firstRate);
          headers['x-gateway-model'] = model.id;
          headers['x-gateway-provider'] = deployment.provider;
          headers['x-gateway-attempts'] = String(this.attempts);
          return { answer, model, plan: this.plan, target, admission: this.admission, attempts: this.attempts, headers, signal: this.signal };
        } catch (error) {
          health.end(deployment.id);
          if (this.timedOut || ctx.signal.aborted || !isGatewayError(error)) {
            const cut = this.timedOut || ctx.signal.aborted;
            if (observation) telemetry.attemptEnded(observation, target, sent, performance.now(), cut ? 'cancelled' : 'failed', span, isGatewayError(error) ? error : undefined);
            throw error;
          }
          const failed = Date.now();
          const tried = this.stateFor(option);
          if (!state) tried.tried += 1;
          const verdict = classifyFailure(error.upstream, routing, backoffMs(tried.tried, Math.random()));
          if (error.upstream) health.failed(deployment.id, verdict.countFailure, failed);
          if (verdict.restKey) health.restKey(provider, keyIndex, verdict.restKey.ms, verdict.restKey.reason, failed);
          if (verdict.restDeployment) health.restDeployment(deployment.id, verdict.restDeployment.ms, verdict.restDeployment.reason, failed);
          this.noteError(option.candidate, error);
          // Reported once it is known whether another attempt follows (retried) or the call gives up (failed).
          if (observation) this.lastFailure = { target, sent, ended: performance.now(), span, error, rested: Boolean(verdict.restKey || verdict.restDeployment) };
          logger.warn({ req_id: ctx.requestId, model: model.id, deployment: deployment.id, attempt: this.attempts, status: error.upstream?.status, reason: error.reason, retry: verdict.retry }, 'upstream attempt failed');
          if (!verdict.retry) break;
          if (verdict.rotateKey) {
            (tried.refusedKeys ??= new Set()).add(keyIndex);
            // The same deployment next, with its next key (or, with none left, never again).
            rotated = option;
          } else if (verdict.againAfterMs !== undefined) tried.readyAt = failed + verdict.againAfterMs;
          else tried.blocked = true;
        }
      }
      // Nothing answered: the first candidate's error (its status and envelope), not the last.
      let failure: GatewayError | undefined;
      for (let candidate = 0; candidate < this.chain.length && !failure; candidate++) failure = this.errors?.get(candidate);
      throw failure ?? restingError(this.chain[0] as ModelConfig, this.soonestRest(Date.now()));
    } catch (error) {
      this.stop();
      this.reportFailed(false);
      const thrown = this.timedOut ? routingTimeout(routing.timeoutMs) : ctx.signal.aborted ? new CallAborted('client disconnected') : error;
      // The client's error says how many upstream attempts the call made.
      if (isGatewayError(thrown) && this.attempts > 0) thrown.headers['x-gateway-attempts'] = String(this.attempts);
      throw thrown;
    }
  }

  /** Reports the last failed attempt: retried when another attempt follows it, else failed (resting when it rested its deployment or key). */
  private reportFailed(followed: boolean): void {
    const failure = this.lastFailure;
    if (!failure) return;
    this.lastFailure = undefined;
    const outcome: AttemptOutcome = failure.rested ? 'resting' : followed ? 'retried' : 'failed';
    this.deps.telemetry.attemptEnded(this.ctx.observation, failure.target, failure.sent, failure.ended, outcome, failure.span, failure.error);
  }

  /** What the usage row of a call that got no answer records. */
  unanswered(error: unknown): Unanswered {
    return { error, model: this.chain[0] as ModelConfig, provider: this.firstProvider, hold: this.admission.hold, attempts: this.attempts };
  }

  /** Answered, or given up: a kind's own signal no longer follows the client's. */
  stop(): void {
    if (this.onClientAbort) this.ctx.signal.off('abort', this.onClientAbort);
  }

  private noteError(candidate: number, error: GatewayError): void {
    const errors = (this.errors ??= new Map());
    if (!errors.has(candidate)) errors.set(candidate, error);
  }

  private stateOf(option: Option): Tried | undefined {
    return this.states?.get(`${option.candidate}|${option.deployment.id}`);
  }

  private stateFor(option: Option): Tried {
    const states = (this.states ??= new Map());
    const key = `${option.candidate}|${option.deployment.id}`;
    let state = states.get(key);
    if (!state) {
      state = { tried: 0, blocked: false, readyAt: 0, refusedKeys: undefined };
      states.set(key, state);
    }
    return state;
  }

  /** Moves the call's admission to another candidate model (its plan, at its prices); false when it cannot take the call. */
  private async admitAt(candidate: number): Promise<boolean> {
    if (candidate === this.candidate && !this.unadmitted) return true;
    const model = this.chain[candidate] as ModelConfig;
    // Made at the first switch, which is always away from the model asked for: its plan is kept.
    const plans = (this.plans ??= new Map([[0, this.plan]]));
    let plan = plans.get(candidate);
    if (plan === undefined) {
      try {
        plan = this.kind.plan(model);
      } catch (error) {
        this.deps.logger.info({ req_id: this.ctx.requestId, model: model.id, reason: isGatewayError(error) ? error.message : String(error) }, 'fallback skipped: the model cannot take the call');
        plan = null;
      }
      plans.set(candidate, plan);
    }
    if (plan === null) return false;
    // The call's count against its key's tokens per minute (taken once, at the first admission)
    // is corrected at settlement through whichever hold the call ends with.
    const counted = this.admission.hold.countedTokens;
    if (!this.unadmitted) await this.deps.holds.release(this.admission.hold).catch(() => undefined);
    this.unadmitted = true;
    try {
      this.admission = await this.kind.admit(model, plan, false);
      if (counted !== undefined) this.admission.hold.countedTokens = counted;
    } catch (error) {
      this.deps.logger.info({ req_id: this.ctx.requestId, model: model.id, reason: isGatewayError(error) ? error.message : String(error) }, 'fallback skipped: not admitted at its prices');
      return false;
    }
    this.unadmitted = false;
    this.candidate = candidate;
    this.plan = plan;
    return true;
  }

  /** The next deployment (decide.ts). A one-deployment model's first attempt skips building the options. */
  private choose(now: number): Choice | undefined {
    const { config, health } = this.deps;
    const routing = config.routing;
    const chain = this.chain;
    if (this.attempts === 0 && chain.length === 1 && !this.states) {
      const only = (chain[0] as ModelConfig).deployments;
      if (only.length === 1) {
        const deployment = only[0] as ModelConfig['deployments'][number];
        const provider = config.providers[deployment.provider] as ProviderConfig;
        const rest = this.restOf(deployment.id, provider, now);
        if (!(provider.apiKeys.length === 0 && provider.apiKeyEnv) && (!rest || isSoftRest(rest))) {
          return { option: { candidate: 0, deployment, rest, busy: 0, latencyMs: undefined, tried: 0, blocked: false, readyAt: now }, waitMs: 0 };
        }
      }
    }
    const options: Option[] = [];
    for (let candidate = 0; candidate < chain.length; candidate++) {
      for (const deployment of (chain[candidate] as ModelConfig).deployments) {
        const provider = config.providers[deployment.provider] as ProviderConfig;
        const state = this.states?.get(`${candidate}|${deployment.id}`);
        let blocked = this.blocked?.has(candidate) === true || state?.blocked === true;
        if (!blocked && provider.apiKeys.length === 0 && provider.apiKeyEnv) {
          this.noteError(candidate, providerNotConfigured(provider));
          blocked = true;
        }
        options.push({
          candidate,
          deployment,
          rest: this.restOf(deployment.id, provider, now),
          busy: routing.strategy === 'least-busy' ? health.busy(deployment.id) : 0,
          latencyMs: routing.strategy === 'latency' ? health.latency(deployment.id) : undefined,
          tried: state?.tried ?? 0,
          blocked,
          readyAt: state?.readyAt ?? now,
        });
      }
    }
    return pickDeployment(options, routing.strategy, now, this.deadline, Math.random());
  }

  private restOf(deploymentId: string, provider: ProviderConfig, now: number): Rest | undefined {
    return this.deps.health.deploymentRest(deploymentId, now) ?? this.deps.health.keysRest(provider, now);
  }

  private soonestRest(now: number): Rest | undefined {
    let soonest: Rest | undefined;
    for (const deployment of (this.chain[0] as ModelConfig).deployments) {
      const rest = this.restOf(deployment.id, this.deps.config.providers[deployment.provider] as ProviderConfig, now);
      if (rest && (!soonest || rest.until < soonest.until)) soonest = rest;
    }
    return soonest;
  }
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
