import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RoutingConfig } from '../../config/types.js';
import { defineScript, subscribe, type RedisScript } from '../../store/redis.js';
import type { Rest, RestReason } from './decide.js';
import type { RouteHealth, SharedRoutes } from './health.js';

/**
 * The router's state shared by every daemon on one Redis: a rest (a cooldown, a refused key, a
 * long Retry-After) is published at once and applied by every daemon within the pub/sub
 * delivery (milliseconds), and kept in a hash that each daemon reads back every
 * SYNC_MS (a daemon that starts, or missed a message, catches up); failures are counted
 * in Redis, so three failures seen by three daemons rest the deployment for all of them.
 * Each daemon also reports its calls in flight and its window's calls and failures, so that
 * least-busy routing and `gateway routes` count every daemon's. Nothing here is on a call's
 * path except a failure's one script call.
 */

/** INCR a deployment's failure count in its window; at the threshold, rest it for every daemon. */
const FAILURE_LUA = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if n >= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1])
  local value = ARGV[3] .. '|failures'
  redis.call('HSET', KEYS[2], ARGV[4], value)
  redis.call('PUBLISH', KEYS[3], ARGV[4] .. '|' .. value)
  return 1
end
return 0`;

/** How often rests are read back and this daemon's counts reported (least-busy: more often). */
const SYNC_MS = 1000;
const BUSY_SYNC_MS = 500;
/** Another daemon's report older than this is not counted (it stopped or lost Redis). */
const REPORT_TTL_MS = 5000;

interface Report {
  at: number;
  deployments: Record<string, { busy: number; calls: number; failures: number }>;
}

const REASONS: readonly RestReason[] = ['failures', 'auth', 'quota', 'retry-after'];

export class RedisRoutes implements SharedRoutes {
  private readonly restsKey: string;
  private readonly reportsKey: string;
  private readonly channel: string;
  private readonly failurePrefix: string;
  private readonly recordFailure: RedisScript;
  private subscriber: Redis | undefined;
  private timer: NodeJS.Timeout | undefined;
  private others = new Map<string, { busy: number; calls: number; failures: number }>();

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly instance: string,
    private readonly health: RouteHealth,
    private readonly routing: RoutingConfig,
    private readonly logger: Logger,
  ) {
    this.restsKey = `${prefix}routing:rests`;
    this.reportsKey = `${prefix}routing:reports`;
    this.channel = `${prefix}routing:rests`;
    this.failurePrefix = `${prefix}routing:failures:`;
    this.recordFailure = defineScript(redis, 'gatewayRoutingFailure', 3, FAILURE_LUA);
  }

  async start(): Promise<void> {
    const { subscriber, subscribed } = await subscribe(this.redis, this.channel, (message) => this.onMessage(message));
    this.subscriber = subscriber;
    if (!subscribed) this.logger.warn('could not subscribe to routing rests yet; other daemons\' rests are read every second');
    this.health.share(this);
    await this.sync();
    this.timer = setInterval(() => void this.sync(), this.routing.strategy === 'least-busy' ? BUSY_SYNC_MS : SYNC_MS);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.health.share(undefined);
    this.subscriber?.disconnect();
    // This daemon's report goes, so its calls stop counting at once.
    this.redis.hdel(this.reportsKey, this.instance).catch(() => undefined);
  }

  rest(id: string, rest: Rest): void {
    const value = `${rest.until}|${rest.reason}`;
    this.redis
      .multi()
      .hset(this.restsKey, id, value)
      .publish(this.channel, `${id}|${value}`)
      .exec()
      .catch((error: unknown) => this.logger.warn({ err: { message: (error as Error).message }, rest: id }, 'could not share a routing rest; other daemons learn it when they fail there themselves'));
  }

  failure(deploymentId: string): void {
    const { failures, windowMs, durationMs } = this.routing.cooldown;
    this.recordFailure(`${this.failurePrefix}${deploymentId}`, this.restsKey, this.channel, windowMs, failures, Date.now() + durationMs, `d:${deploymentId}`).catch((error: unknown) => {
      this.logger.warn({ err: { message: (error as Error).message } }, 'could not count a deployment failure in Redis');
    });
  }

  othersBusy(deploymentId: string): number {
    return this.others.get(deploymentId)?.busy ?? 0;
  }

  othersStats(deploymentId: string): { calls: number; failures: number } {
    const other = this.others.get(deploymentId);
    return other ? { calls: other.calls, failures: other.failures } : { calls: 0, failures: 0 };
  }

  /** Reads every rest back (catching up on missed messages), reports this daemon's counts, reads the others'. */
  async sync(): Promise<void> {
    const now = Date.now();
    const report: Report = { at: now, deployments: this.health.localSnapshot(now) };
    let results: Array<[Error | null, unknown]> | null;
    try {
      results = await this.redis.multi().hgetall(this.restsKey).hset(this.reportsKey, this.instance, JSON.stringify(report)).hgetall(this.reportsKey).exec();
    } catch (error) {
      this.logger.debug({ err: { message: (error as Error).message } }, 'could not sync routing state with Redis');
      return;
    }
    if (!results) return;
    const rests = (results[0]?.[1] ?? {}) as Record<string, string>;
    const expired: string[] = [];
    for (const [id, value] of Object.entries(rests)) {
      const rest = parseRest(value);
      if (!rest || rest.until <= now) expired.push(id);
      else this.health.applyRest(id, rest);
    }
    const reports = (results[2]?.[1] ?? {}) as Record<string, string>;
    const others = new Map<string, { busy: number; calls: number; failures: number }>();
    const stale: string[] = [];
    for (const [instance, text] of Object.entries(reports)) {
      if (instance === this.instance) continue;
      let other: Report;
      try {
        other = JSON.parse(text) as Report;
      } catch {
        stale.push(instance);
        continue;
      }
      if (now - other.at > REPORT_TTL_MS) {
        if (now - other.at > 60 * REPORT_TTL_MS) stale.push(instance);
        continue;
      }
      for (const [id, counts] of Object.entries(other.deployments)) {
        const sum = others.get(id) ?? { busy: 0, calls: 0, failures: 0 };
        sum.busy += counts.busy;
        sum.calls += counts.calls;
        sum.failures += counts.failures;
        others.set(id, sum);
      }
    }
    this.others = others;
    if (expired.length > 0 || stale.length > 0) {
      const cleanup = this.redis.multi();
      if (expired.length > 0) cleanup.hdel(this.restsKey, ...expired);
      if (stale.length > 0) cleanup.hdel(this.reportsKey, ...stale);
      await cleanup.exec().catch(() => undefined);
    }
  }

  private onMessage(message: string): void {
    // `<id>|<until>|<reason>`: the id may hold ':' but never '|'.
    const cut = message.indexOf('|');
    if (cut <= 0) return;
    const rest = parseRest(message.slice(cut + 1));
    if (rest) this.health.applyRest(message.slice(0, cut), rest);
  }
}

function parseRest(value: string): Rest | undefined {
  const [until, reason] = value.split('|');
  const at = Number(until);
  if (!Number.isFinite(at) || !REASONS.includes(reason as RestReason)) return undefined;
  return { until: at, reason: reason as RestReason };
}
