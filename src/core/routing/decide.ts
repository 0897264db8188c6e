import type { Deployment, RoutingConfig } from '../../config/types.js';

/**
 * The router's decisions, pure: what a failed attempt means (retry, rest, give up) and which
 * deployment the next attempt goes to. No clock, no randomness, no I/O inside: time and a
 * random number come in, so that every rule is a row of a table test
 * (test/core/routing-decide.test.ts).
 */

/** What went wrong with one upstream attempt (set by the provider layer on its GatewayError). */
export interface UpstreamFailure {
  kind: 'http' | 'connect' | 'timeout' | 'malformed' | 'stream';
  /** The upstream's HTTP status (http). */
  status?: number;
  /** The upstream's Retry-After (or retry-after-ms), in ms. */
  retryAfterMs?: number;
  /** A 429 that says the quota or spend limit is exhausted: waiting a few seconds will not help. */
  quota?: boolean;
  /** The deployment's upstream does not know it (Azure's DeploymentNotFound): a configuration mistake, not the request's. */
  misconfigured?: boolean;
}

export type RestReason = 'failures' | 'auth' | 'quota' | 'retry-after';

/** A deployment or key taken out of rotation until `until`. */
export interface Rest {
  until: number;
  reason: RestReason;
}

/**
 * A rest after failures (the cooldown) or a refused key may still serve when nothing else
 * can: the call then gets the upstream's own answer rather than a gateway's refusal. A rest
 * the upstream asked for (a long Retry-After, an exhausted quota) is kept.
 */
export function isSoftRest(rest: Rest): boolean {
  return rest.reason === 'failures' || rest.reason === 'auth';
}

export interface Verdict {
  /** Whether another attempt may follow (on another deployment or key, or this one again). */
  retry: boolean;
  /** This deployment, with this key, may be tried again in this call no sooner than after this many ms; absent: never again. */
  againAfterMs?: number;
  /** Try this deployment again at once with its next key (a key refused with 401/403). */
  rotateKey?: boolean;
  /** Rest the key the attempt used, for every call (401/403, quota exhausted). */
  restKey?: { ms: number; reason: RestReason };
  /** Rest the deployment, for every call (a Retry-After longer than max_retry_after). */
  restDeployment?: { ms: number; reason: RestReason };
  /** Counts toward the deployment's cooldown (failures in a window). */
  countFailure: boolean;
}

const STOP: Verdict = { retry: false, countFailure: false };

/**
 * What a failed attempt means. `failure` undefined: not an upstream failure (the client left,
 * the gateway's own error): the call ends.
 */
export function classifyFailure(failure: UpstreamFailure | undefined, routing: Pick<RoutingConfig, 'retryOn' | 'maxRetryAfterMs' | 'cooldown'>, backoffMs: number): Verdict {
  if (!failure) return STOP;
  const status = failure.kind === 'http' ? (failure.status ?? 502) : failure.kind === 'malformed' || failure.kind === 'stream' ? 502 : undefined;
  if (status === 401 || status === 403) {
    // The key is refused: never that key again; the provider's next key, or another deployment.
    return { retry: true, rotateKey: true, restKey: { ms: routing.cooldown.durationMs, reason: 'auth' }, countFailure: false };
  }
  if (status === 429 && failure.quota) {
    // Quota or spend limit exhausted: the key's account is out, whatever Retry-After says.
    return { retry: routing.retryOn.has(429), restKey: { ms: Math.max(routing.cooldown.durationMs, failure.retryAfterMs ?? 0), reason: 'quota' }, countFailure: false };
  }
  if (failure.misconfigured) {
    // Fails the same way for every call: another deployment may serve, never this one again in this call.
    return { retry: true, countFailure: true };
  }
  if (status === undefined) {
    const condition = failure.kind === 'connect' ? 'connect' : 'timeout';
    return routing.retryOn.has(condition) ? { retry: true, againAfterMs: backoffMs, countFailure: true } : { retry: false, countFailure: true };
  }
  const serverSide = status >= 500 || status === 408 || status === 429;
  if (!routing.retryOn.has(status)) return { retry: false, countFailure: serverSide };
  // A status the operator listed that fails the same way anywhere (400, 404, 413, 422): other
  // deployments may be tried, never this one again.
  if (!serverSide) return { retry: true, countFailure: false };
  const wait = failure.retryAfterMs;
  if (wait !== undefined && wait > routing.maxRetryAfterMs) {
    return { retry: true, restDeployment: { ms: wait, reason: 'retry-after' }, countFailure: false };
  }
  return { retry: true, againAfterMs: wait ?? backoffMs, countFailure: true };
}

/** The wait before the same deployment is tried again without a Retry-After: 250 ms doubling per attempt, jittered to 50-100%, at most 5 s. */
export function backoffMs(attemptsOnDeployment: number, random: number): number {
  const base = Math.min(5000, 250 * 2 ** Math.max(0, attemptsOnDeployment - 1));
  return Math.round(base * (0.5 + random / 2));
}

/** One deployment as the selector sees it during a call. */
export interface Option {
  /** Position of its model in the call's chain (0: the model asked for). */
  candidate: number;
  deployment: Deployment;
  /** Its rest (or, when every key of its provider rests, the keys' soonest end); undefined: healthy. */
  rest: Rest | undefined;
  /** Calls in flight on it (every daemon's, with Redis). */
  busy: number;
  /** Recent time to first byte, ms; undefined: no data yet (tried first by the latency strategy). */
  latencyMs: number | undefined;
  /** Attempts this call made on it. */
  tried: number;
  /** Never again in this call (a refusal that would repeat, no key left). */
  blocked: boolean;
  /** Earliest time this call may try it again (Retry-After, backoff). */
  readyAt: number;
}

export interface Choice {
  option: Option;
  /** How long to wait before the attempt (a Retry-After or backoff of a deployment tried already). */
  waitMs: number;
}

/**
 * The next deployment, in order of preference:
 * 1. an untried, healthy deployment of the earliest model of the chain, lowest priority tier
 *    first, chosen by the strategy within its tier;
 * 2. a deployment this call tried that may be tried again (not refused, not resting unless by
 *    cooldown), the soonest ready, if that is before the deadline;
 * 3. an untried deployment resting after failures (the cooldown), when nothing else is left:
 *    a cooldown never makes a call fail that could still be tried.
 * Undefined: nothing can be tried (everything refused, or resting for a stated reason).
 */
export function pickDeployment(options: readonly Option[], strategy: RoutingConfig['strategy'], now: number, deadline: number, random: number): Choice | undefined {
  const tier: Option[] = [];
  let tierKey = '';
  for (const option of options) {
    if (option.tried > 0 || option.blocked || (option.rest && option.rest.until > now)) continue;
    const key = `${option.candidate}/${option.deployment.priority}`;
    if (tier.length === 0) tierKey = key;
    else if (key !== tierKey) break;
    tier.push(option);
  }
  // Options come in chain order and, within a model, by priority: the loop stopped at the end
  // of the first tier with a usable deployment.
  if (tier.length > 0) return { option: chooseInTier(tier, strategy, random), waitMs: 0 };

  let again: Option | undefined;
  for (const option of options) {
    if (option.tried === 0 || option.blocked) continue;
    if (option.rest && option.rest.until > now && !isSoftRest(option.rest)) continue;
    if (!again || option.readyAt < again.readyAt) again = option;
  }
  if (again && again.readyAt <= deadline) return { option: again, waitMs: Math.max(0, again.readyAt - now) };

  let resting: Option | undefined;
  for (const option of options) {
    if (option.tried > 0 || option.blocked || !option.rest || !isSoftRest(option.rest)) continue;
    if (!resting || option.candidate < resting.candidate || (option.candidate === resting.candidate && option.rest.until < (resting.rest as Rest).until)) resting = option;
  }
  return resting ? { option: resting, waitMs: 0 } : undefined;
}

function chooseInTier(tier: readonly Option[], strategy: RoutingConfig['strategy'], random: number): Option {
  if (tier.length === 1) return tier[0] as Option;
  let pool: readonly Option[] = tier;
  if (strategy === 'least-busy') {
    const least = Math.min(...tier.map((option) => option.busy));
    pool = tier.filter((option) => option.busy === least);
  } else if (strategy === 'latency') {
    // Unmeasured deployments first, so each gets measured; then the fastest.
    const unmeasured = tier.filter((option) => option.latencyMs === undefined);
    if (unmeasured.length > 0) pool = unmeasured;
    else {
      const fastest = Math.min(...tier.map((option) => option.latencyMs as number));
      pool = tier.filter((option) => option.latencyMs === fastest);
    }
  }
  return weightedChoice(pool, random);
}

/** One option at random, in proportion to the weights. */
export function weightedChoice(pool: readonly Option[], random: number): Option {
  let total = 0;
  for (const option of pool) total += option.deployment.weight;
  let point = random * total;
  for (const option of pool) {
    point -= option.deployment.weight;
    if (point < 0) return option;
  }
  return pool[pool.length - 1] as Option;
}
