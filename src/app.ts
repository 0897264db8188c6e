import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { providerRank } from './config/clouds.js';
import type { GatewayConfig, ModelConfig } from './config/types.js';
import { KeyAuthenticator } from './core/auth/key-auth.js';
import { KeyInvalidations } from './core/auth/key-invalidation.js';
import { PasswordPool } from './core/auth/password-pool.js';
import { UsageRelay } from './core/management/usage-relay.js';
import { resolveJwtSecret, SessionTokens } from './core/auth/sessions.js';
import { Catalog } from './core/catalog.js';
import type { KeyKind } from './core/keys.js';
import { AccountService } from './core/management/accounts.js';
import { KeyService } from './core/management/keys.js';
import { UsageService } from './core/management/usage.js';
import { WalletService } from './core/management/wallet.js';
import { Admitter } from './core/gateway/admission.js';
import { ChatService } from './core/gateway/chat.js';
import { HostedImages } from './core/gateway/hosted-images.js';
import { MediaService } from './core/gateway/media.js';
import { CallPipeline } from './core/gateway/pipeline.js';
import { RouteHealth } from './core/routing/health.js';
import { RedisRoutes } from './core/routing/redis-routes.js';
import { Settlement } from './core/gateway/settlement.js';
import { AlertMonitor } from './core/alerts/monitor.js';
import { MemoryHoldStore, RedisHoldStore, type HoldStore } from './core/limits/holds.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './core/limits/rate-limit.js';
import { MemoryParallelLimiter, RedisParallelLimiter, type ParallelLimiter } from './core/limits/parallel.js';
import { MemoryTokenLimiter, RedisTokenLimiter, type TokenLimiter } from './core/limits/tokens.js';
import { UpstreamClient } from './providers/shared/upstream.js';
import { ResponseCache, type PromptEmbedder } from './core/cache/response-cache.js';
import { ConfigError } from './config/load.js';
import type { Store } from './store/types.js';
import { GatewayMetrics } from './core/telemetry/metrics.js';
import { Telemetry } from './core/telemetry/telemetry.js';
import type { GatewayTracer } from './core/telemetry/tracing.js';

/** Everything a request handler may use, built once at start. */
export interface App {
  readonly config: GatewayConfig;
  readonly logger: Logger;
  readonly store: Store;
  readonly redis: Redis | undefined;
  readonly sessions: SessionTokens;
  readonly keyAuth: Record<KeyKind, KeyAuthenticator>;
  readonly accounts: AccountService;
  /** bcrypt's worker threads (started on first use; closed by main.ts). */
  readonly passwords: PasswordPool;
  readonly keys: KeyService;
  readonly wallet: WalletService;
  readonly usage: UsageService;
  readonly catalog: Catalog;
  readonly lifecycle: Lifecycle;
  readonly limiter: RateLimiter;
  /** Keys' calls in flight (max_parallel). */
  readonly parallel: ParallelLimiter;
  readonly holds: HoldStore;
  readonly upstream: UpstreamClient;
  readonly settlement: Settlement;
  /** Alerts on spend and resting deployments (alerts: in the config). */
  readonly alerts: AlertMonitor;
  readonly chat: ChatService;
  readonly media: MediaService;
  /** The one call path (routing, admission, attempts, settlement) every kind of call goes through. */
  readonly pipeline: CallPipeline;
  /** What the router knows of every deployment and key (rests, calls in flight, stats). */
  readonly routes: RouteHealth;
  /** Routing state shared with the other daemons, with Redis (started by main.ts). */
  readonly routeSync: RedisRoutes | undefined;
  readonly hostedImages: HostedImages;
  /** The response cache, when `cache.enabled`. */
  readonly cache: ResponseCache | undefined;
  /** Key changes told to the other daemons, with Redis (started by main.ts). */
  readonly keyInvalidations: KeyInvalidations | undefined;
  /** The live usage feed across daemons, with Redis (started by main.ts). */
  readonly usageRelay: UsageRelay | undefined;
  /** Prometheus metrics (`metrics:`) and OpenTelemetry traces (`telemetry:`). */
  readonly telemetry: Telemetry;
}

/** Shutdown state, and hooks that end long-lived responses (SSE streams) when it begins. */
export class Lifecycle {
  private stopping = false;
  private readonly hooks = new Set<() => void>();

  get shuttingDown(): boolean {
    return this.stopping;
  }

  onShutdown(hook: () => void): () => void {
    this.hooks.add(hook);
    return () => this.hooks.delete(hook);
  }

  beginShutdown(): void {
    if (this.stopping) return;
    this.stopping = true;
    for (const hook of [...this.hooks]) hook();
    this.hooks.clear();
  }
}

/**
 * Identifies this daemon's Redis holds across its restarts (to drop what a crash left):
 * host and configured port, or a random id when the port is picked at start.
 */
export function instanceId(config: GatewayConfig): string {
  return config.server.port === 0 ? `${hostname()}:${randomUUID()}` : `${hostname()}:${config.server.port}`;
}

export function createApp(config: GatewayConfig, store: Store, redis: Redis | undefined, logger: Logger, tracer?: GatewayTracer): App {
  const keyAuth = { api: new KeyAuthenticator(store.apiKeys), management: new KeyAuthenticator(store.managementKeys) };
  const prefix = config.redis?.keyPrefix ?? 'gateway:';
  const limiter: RateLimiter = redis ? new RedisRateLimiter(redis, prefix) : new MemoryRateLimiter();
  const redisHolds = redis ? new RedisHoldStore(redis, prefix, instanceId(config), config.redis?.holdLeaseMs) : undefined;
  const holds: HoldStore = redisHolds ?? new MemoryHoldStore();
  const usage = new UsageService(store);
  const catalog = new Catalog(config.models, config.aliases, (name) => providerRank(config.providers[name]));
  const upstream = new UpstreamClient();
  const tokens: TokenLimiter = redis ? new RedisTokenLimiter(redis, prefix) : new MemoryTokenLimiter();
  const alerts = new AlertMonitor(config.alerts, store, config.governance.timeZone, logger);
  const routes = new RouteHealth(config.routing);
  // The gauges read the holds, settlement's backlog and the router's rests when scraped.
  let settlementRef: Settlement | undefined;
  const metrics = config.metrics.enabled
    ? new GatewayMetrics(config.metrics, {
        heldMicros: () => holds.heldHere(),
        settlementPending: () => settlementRef?.backlog ?? 0,
        restingDeployments: () => restingDeployments(routes),
        models: config.models,
        backend: config.database.url ? 'postgres' : 'sqlite',
      })
    : undefined;
  if (metrics) redis?.on('error', () => metrics.redisError());
  const telemetry = new Telemetry(metrics, tracer);
  const settlement = new Settlement(store, holds, usage, logger, { applyDelayMs: config.database.billingBatchMs, tokens, telemetry, ...(metrics ? { settleTimer: metrics.store('settle') } : {}), onCharged: (accountId, keyId, watched) => alerts.observe(accountId, keyId, watched) });
  settlementRef = settlement;
  const admitter = new Admitter(
    store,
    limiter,
    holds,
    redisHolds && ((keyId, limit, requestId, hold) => redisHolds.acquireIfAdmitted(keyId, limit, requestId, hold)),
    { timeZone: config.governance.timeZone, tokens, onRefused: (reason, accountId, keyId) => alerts.refused(reason, accountId, keyId), committing: () => settlement.committing(), ...(metrics ? { fundsTimer: metrics.store('funds') } : {}) },
  );
  const hostedImages = new HostedImages(config.database.path, logger, undefined, store.images);
  routes.onRest = (id, rest) => {
    logger.warn({ rest: id, reason: rest.reason, until: new Date(rest.until).toISOString() }, id.startsWith('k:') ? 'provider key resting' : 'deployment resting');
    alerts.resting(id, rest.until, rest.reason);
  };
  const pipeline = new CallPipeline(config, catalog, routes, holds, settlement, logger, telemetry);
  const media = new MediaService(config, catalog, admitter, pipeline, upstream, hostedImages, logger);
  const cache = config.cache.enabled
    ? new ResponseCache(config.cache, { openEntries: (limits) => store.openCache(limits, logger), redis, redisPrefix: prefix, embed: promptEmbedder(config, catalog, media), logger })
    : undefined;
  const chat = new ChatService(config, catalog, admitter, pipeline, upstream, logger, cache);
  const passwords = new PasswordPool({ logger });
  return {
    config,
    logger,
    store,
    redis,
    sessions: new SessionTokens(resolveJwtSecret(config.auth.jwtSecret, config.database.path), config.auth.sessionTtlSeconds),
    keyAuth,
    accounts: new AccountService(store, { bcryptRounds: config.auth.bcryptRounds, passwords, login: config.auth.login, ...(redis ? { redis: { client: redis, prefix } } : {}) }),
    passwords,
    keys: new KeyService(store, keyAuth),
    wallet: new WalletService(store),
    usage,
    catalog,
    lifecycle: new Lifecycle(),
    limiter,
    parallel: redis ? new RedisParallelLimiter(redis, prefix, instanceId(config)) : new MemoryParallelLimiter(),
    holds,
    upstream,
    settlement,
    alerts,
    chat,
    media,
    pipeline,
    routes,
    routeSync: redis ? new RedisRoutes(redis, prefix, instanceId(config), routes, config.routing, logger) : undefined,
    hostedImages,
    cache,
    keyInvalidations: redis ? new KeyInvalidations(redis, prefix, keyAuth, logger) : undefined,
    usageRelay: redis ? new UsageRelay(redis, prefix, usage, logger) : undefined,
    telemetry,
  };
}

/** The deployment ids resting now (the metrics' gauge). */
function restingDeployments(routes: RouteHealth): Set<string> {
  const resting = new Set<string>();
  for (const id of routes.activeRests(Date.now()).keys()) if (id.startsWith('d:')) resting.add(id.slice(2));
  return resting;
}

/**
 * The semantic cache's embedding call: the configured catalog model through the media
 * service (the gateway's own provider layer), billed to the caller as its own usage row
 * (`cache.embeddings`, request id `<id>-cache`), taking no rate-limit slot of its own.
 */
function promptEmbedder(config: GatewayConfig, catalog: Catalog, media: MediaService): PromptEmbedder {
  const setting = config.cache.semantic;
  let model: ModelConfig | undefined;
  try {
    model = catalog.resolve(setting.embeddingModel, 'embedding');
  } catch {
    if (setting.models.length > 0) throw new ConfigError(config.source, [`cache.semantic.embedding_model: '${setting.embeddingModel}' is not an embedding model of the catalog`]);
  }
  const spec = model?.embedding;
  // Shorter vectors when the model can give them (cheaper to search, as good for matching).
  const dimensions = spec?.minDimensions !== undefined && setting.dimensions !== undefined && setting.dimensions >= spec.minDimensions && setting.dimensions < spec.dimensions ? setting.dimensions : undefined;
  return async (text, ctx) => {
    if (!model) return undefined;
    // Its own call: not the chat call's alias (its usage row names the embedding model only),
    // nor its fallbacks, nor the key's models list (the gateway's lookup, not the key's choice).
    const { requestedModel: _alias, fallbacks: _fallbacks, policy: _policy, ...caller } = ctx;
    const outcome = await media.embed(
      { model: model.id, input: { kind: 'text', texts: [text] }, encodingFormat: 'float', ...(dimensions !== undefined ? { dimensions } : {}) },
      { ...caller, requestId: `${ctx.requestId}-cache`, endpoint: 'cache.embeddings', startedAt: Date.now(), unmetered: true },
    );
    const vector = outcome.result.vectors[0];
    if (vector === undefined) return undefined;
    if (vector instanceof Float32Array) return vector;
    if (typeof vector === 'string') {
      const bytes = Buffer.from(vector, 'base64');
      return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    }
    return Float32Array.from(vector);
  };
}
