import { createHash } from 'node:crypto';
import type { ProviderConfig, RoutingConfig } from '../../config/types.js';
import { isSoftRest, type Rest, type RestReason } from './decide.js';

/**
 * What the router knows of every deployment and provider key: rests (cooldowns, refused keys,
 * long Retry-Afters), calls in flight, recent time to first byte, and calls and failures in
 * the last window (for `gateway routes`). In memory, per daemon; with Redis a `SharedRoutes`
 * (redis-routes.ts) makes rests and failure counts common to every daemon, and adds the
 * other daemons' in-flight counts and stats. The hot path reads only memory.
 */

/** What several daemons share through Redis (redis-routes.ts). */
export interface SharedRoutes {
  /** Tells every daemon (this one included) that `id` rests. */
  rest(id: string, rest: Rest): void;
  /** Counts a failure of a deployment for every daemon; the shared count rests it when due. */
  failure(deploymentId: string): void;
  /** The other daemons' calls in flight on a deployment (their last report). */
  othersBusy(deploymentId: string): number;
  /** The other daemons' calls and failures in the last window. */
  othersStats(deploymentId: string): { calls: number; failures: number };
}

export interface DeploymentStats {
  calls: number;
  failures: number;
}

/** A provider key's identity in rests and views: a fingerprint, never the key. */
/**
 * The credentials a provider's calls rotate over: its API keys, or the one set of cloud
 * credentials it signs with (Bedrock's IAM keys, Vertex's service account), which rests when
 * refused as a key does.
 */
function credentialCount(provider: ProviderConfig): number {
  if (provider.apiKeys.length > 0) return provider.apiKeys.length;
  return provider.bedrock?.credentials !== undefined || provider.vertex?.serviceAccount !== undefined ? 1 : 0;
}

export function keyFingerprint(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

/** Counts over a sliding window of BUCKETS buckets. */
const BUCKETS = 6;

class WindowCounter {
  private readonly counts = new Array<number>(BUCKETS).fill(0);
  private epoch = 0;

  constructor(private readonly bucketMs: number) {}

  add(now: number): void {
    this.roll(now);
    this.counts[this.epoch % BUCKETS] = (this.counts[this.epoch % BUCKETS] as number) + 1;
  }

  total(now: number): number {
    this.roll(now);
    let sum = 0;
    for (const count of this.counts) sum += count;
    return sum;
  }

  private roll(now: number): void {
    const epoch = Math.floor(now / this.bucketMs);
    if (epoch === this.epoch) return;
    const steps = Math.min(BUCKETS, epoch - this.epoch);
    for (let i = 1; i <= steps; i++) this.counts[(this.epoch + i) % BUCKETS] = 0;
    this.epoch = epoch;
  }
}

interface DeploymentState {
  busy: number;
  /** Exponentially weighted time to first byte, ms. */
  latencyMs: number | undefined;
  calls: WindowCounter;
  failures: WindowCounter;
  /** The last `cooldown.failures` failure times (without Redis: the cooldown's count). */
  recentFailures: number[];
}

/** Weight of a new time-to-first-byte sample. */
const LATENCY_ALPHA = 0.3;

export class RouteHealth {
  private readonly deployments = new Map<string, DeploymentState>();
  private readonly rests = new Map<string, Rest>();
  private readonly turns = new Map<string, number>();
  /** Fingerprints of each provider's keys, computed once. */
  private readonly fingerprints = new WeakMap<ProviderConfig, readonly string[]>();
  private shared: SharedRoutes | undefined;
  /** Called when a rest starts (logged by the pipeline's owner). */
  onRest: ((id: string, rest: Rest) => void) | undefined;

  constructor(private readonly routing: RoutingConfig) {}

  /** Rests and failure counts through Redis from now on (redis-routes.ts calls this once started). */
  share(shared: SharedRoutes | undefined): void {
    this.shared = shared;
  }

  // ---- Rests ---------------------------------------------------------------------------------

  deploymentRest(deploymentId: string, now: number): Rest | undefined {
    return this.restOf(`d:${deploymentId}`, now);
  }

  keyRest(provider: ProviderConfig, index: number, now: number): Rest | undefined {
    // Nothing rests (almost always): no key id is built.
    if (this.rests.size === 0) return undefined;
    return this.restOf(this.keyRestId(provider, index), now);
  }

  /**
   * The index of the provider key for the next attempt: in turn over the keys that do not
   * rest, skipping `exclude` (keys this call was refused with); when every other key rests,
   * the soft-resting one whose rest ends first (decide.ts isSoftRest). Undefined when none is left.
   */
  nextKey(provider: ProviderConfig, now: number, exclude?: ReadonlySet<number>): number | undefined {
    const count = credentialCount(provider);
    if (count <= 1) {
      if (exclude?.has(0)) return undefined;
      const rest = count === 1 ? this.keyRest(provider, 0, now) : undefined;
      return rest && !isSoftRest(rest) ? undefined : 0;
    }
    const start = this.turns.get(provider.name) ?? 0;
    let resting: { index: number; until: number } | undefined;
    for (let step = 0; step < count; step++) {
      const index = (start + step) % count;
      if (exclude?.has(index)) continue;
      const rest = this.keyRest(provider, index, now);
      if (rest) {
        if (isSoftRest(rest) && (!resting || rest.until < resting.until)) resting = { index, until: rest.until };
        continue;
      }
      this.turns.set(provider.name, index + 1);
      return index;
    }
    return resting?.index;
  }

  /** When every key of the provider rests: the soonest-ending of their rests. */
  keysRest(provider: ProviderConfig, now: number): Rest | undefined {
    const count = credentialCount(provider);
    if (count === 0 || this.rests.size === 0) return undefined;
    let soonest: Rest | undefined;
    for (let index = 0; index < count; index++) {
      const rest = this.keyRest(provider, index, now);
      if (!rest) return undefined;
      if (!soonest || rest.until < soonest.until) soonest = rest;
    }
    return soonest;
  }

  restDeployment(deploymentId: string, ms: number, reason: RestReason, now: number): void {
    this.rest(`d:${deploymentId}`, { until: now + ms, reason });
  }

  restKey(provider: ProviderConfig, index: number, ms: number, reason: RestReason, now: number): void {
    this.rest(this.keyRestId(provider, index), { until: now + ms, reason });
  }

  /** A rest another daemon announced (or this one, echoed back): kept when it ends later than ours. */
  applyRest(id: string, rest: Rest): void {
    const current = this.rests.get(id);
    if (current && current.until >= rest.until) return;
    this.rests.set(id, rest);
    this.onRest?.(id, rest);
  }

  /** Every rest still running, by id (`d:<deployment>`, `k:<provider>:<key fingerprint>`). */
  activeRests(now: number): Map<string, Rest> {
    const out = new Map<string, Rest>();
    for (const [id, rest] of this.rests) {
      if (rest.until > now) out.set(id, rest);
      else this.rests.delete(id);
    }
    return out;
  }

  keyRestId(provider: ProviderConfig, index: number): string {
    let prints = this.fingerprints.get(provider);
    if (!prints) {
      prints = provider.apiKeys.map(keyFingerprint);
      this.fingerprints.set(provider, prints);
    }
    return `k:${provider.name}:${prints[index] ?? index}`;
  }

  private rest(id: string, rest: Rest): void {
    this.applyRest(id, rest);
    this.shared?.rest(id, rest);
  }

  private restOf(id: string, now: number): Rest | undefined {
    if (this.rests.size === 0) return undefined;
    const rest = this.rests.get(id);
    if (!rest) return undefined;
    if (rest.until > now) return rest;
    this.rests.delete(id);
    return undefined;
  }

  // ---- Calls ---------------------------------------------------------------------------------

  /** An attempt starts on a deployment (least-busy counts it until `end`). */
  begin(deploymentId: string, now: number): void {
    const state = this.state(deploymentId);
    state.busy += 1;
    state.calls.add(now);
  }

  end(deploymentId: string): void {
    const state = this.deployments.get(deploymentId);
    if (state && state.busy > 0) state.busy -= 1;
  }

  /** The upstream answered (headers): its time to first byte. */
  answered(deploymentId: string, ttfbMs: number): void {
    const state = this.state(deploymentId);
    state.latencyMs = state.latencyMs === undefined ? ttfbMs : state.latencyMs + LATENCY_ALPHA * (ttfbMs - state.latencyMs);
  }

  /** A failed attempt; when it counts toward the cooldown, the deployment may rest. */
  failed(deploymentId: string, countsTowardCooldown: boolean, now: number): void {
    const state = this.state(deploymentId);
    state.failures.add(now);
    if (!countsTowardCooldown) return;
    if (this.shared) {
      this.shared.failure(deploymentId);
      return;
    }
    const { failures, windowMs, durationMs } = this.routing.cooldown;
    const recent = state.recentFailures;
    recent.push(now);
    if (recent.length > failures) recent.shift();
    if (recent.length === failures && now - (recent[0] as number) <= windowMs) {
      recent.length = 0;
      this.restDeployment(deploymentId, durationMs, 'failures', now);
    }
  }

  busy(deploymentId: string): number {
    return (this.deployments.get(deploymentId)?.busy ?? 0) + (this.shared?.othersBusy(deploymentId) ?? 0);
  }

  latency(deploymentId: string): number | undefined {
    return this.deployments.get(deploymentId)?.latencyMs;
  }

  /** Calls and failed attempts in the last window (every daemon's, with Redis). */
  stats(deploymentId: string, now: number): DeploymentStats {
    const state = this.deployments.get(deploymentId);
    const others = this.shared?.othersStats(deploymentId) ?? { calls: 0, failures: 0 };
    return { calls: (state?.calls.total(now) ?? 0) + others.calls, failures: (state?.failures.total(now) ?? 0) + others.failures };
  }

  /** This daemon's own counts, for the other daemons (redis-routes.ts). */
  localSnapshot(now: number): Record<string, { busy: number; calls: number; failures: number }> {
    const out: Record<string, { busy: number; calls: number; failures: number }> = {};
    for (const [id, state] of this.deployments) out[id] = { busy: state.busy, calls: state.calls.total(now), failures: state.failures.total(now) };
    return out;
  }

  private state(deploymentId: string): DeploymentState {
    let state = this.deployments.get(deploymentId);
    if (!state) {
      const bucketMs = Math.max(1000, Math.ceil(this.routing.cooldown.windowMs / BUCKETS));
      state = { busy: 0, latencyMs: undefined, calls: new WindowCounter(bucketMs), failures: new WindowCounter(bucketMs), recentFailures: [] };
      this.deployments.set(deploymentId, state);
    }
    return state;
  }
}
