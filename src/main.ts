import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import pino, { type Logger } from 'pino';
import { createApp, type App } from './app.js';
import { RedisHoldStore } from './core/limits/holds.js';
import { LogDestination } from './core/log-destination.js';
import { buildRouter } from './api/routes.js';
import type { GatewayConfig } from './config/types.js';
import { createHttpServer } from './http/server.js';
import { connectRedis, createRedis } from './store/redis.js';
import { openStore } from './store/open.js';
import type { Store } from './store/types.js';

export interface RunningGateway {
  app: App;
  server: Server;
  /** `http://host:port`, with the port actually bound (config port 0 picks a free one). */
  url: string;
  /** Graceful stop: refuse new requests, let in-flight ones finish, close the store. */
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Overrides config.server.port (tests pass 0). */
  port?: number;
}

const LAST_USED_FLUSH_MS = 5000;

/** load config ► open store and Redis ► build app ► listen. Signals are the caller's (the CLI's). */
export async function startGateway(config: GatewayConfig, options: StartOptions = {}): Promise<RunningGateway> {
  // Log lines are buffered (written per 64 KiB, every second, at shutdown and at exit) instead
  // of one write(2) per request line (core/log-destination.ts).
  const destination = options.logger ? undefined : new LogDestination(1);
  const logger = options.logger ?? pino({ level: config.logging.level, base: { service: 'llm-gateway' } }, destination);
  const logFlush = setInterval(() => logger.flush(), 1000);
  logFlush.unref();
  // Without Redis this daemon must be the database's only one (serving-lock.ts). Admission's
  // funds are remembered between calls: on SQLite either way (with Redis, other daemons writing
  // the same file, the cache checks for their commits on each use); on PostgreSQL alone only
  // (store/pg/funds-cache.ts).
  /** Set once the daemon can stop (below): what losing the serving lock calls. */
  let lost: (() => Promise<void>) | undefined;
  const store: Store = await openStore(config.database, { onCheckpointError: (message) => logger.warn({ err: { message } }, 'WAL checkpoint failed') });
  let servingLock: Awaited<ReturnType<Store['lockServing']>>;
  try {
    servingLock = await store.lockServing(config.redis ? 'shared' : 'alone', (reason) => {
      // Serving on would break the one-daemon rule the lock keeps (limits and holds in memory).
      logger.fatal({ reason }, 'lost the serving lock to another daemon: stopping');
      process.exitCode = 1;
      void lost?.();
    });
  } catch (error) {
    await store.close();
    throw error;
  }
  let redis: Awaited<ReturnType<typeof createRedis>> | undefined;
  if (config.redis) {
    let lastError = '';
    redis = await createRedis(config.redis.url, (error) => {
      // ioredis repeats the same error on every reconnect attempt; log it once per change.
      if (error.message !== lastError) logger.warn({ err: { message: error.message } }, 'redis error');
      lastError = error.message;
    });
    redis.on('ready', () => {
      lastError = '';
      logger.info('redis connected');
    });
    if (!(await connectRedis(redis, 3000))) logger.warn('redis is not reachable yet; /health/ready reports not_ready until it is');
  }

  // Traces only when asked for (telemetry.enabled or an OTLP endpoint in the environment): the exporter loads then.
  // The OpenTelemetry SDK only when tracing is on (about 2 MB of heap otherwise unused).
  const tracer = config.telemetry.enabled ? await (await import('./core/telemetry/tracing.js')).GatewayTracer.create(config.telemetry, logger) : undefined;
  const app = createApp(config, store, redis, logger, tracer);
  await Promise.all([app.keyInvalidations?.start(), app.usageRelay?.start(), app.routeSync?.start()]);
  // Calls a stopped run settled but did not get into the ledger, before any new call (and
  // before the previous run's Redis holds, which still cover them, are dropped).
  if (!app.settlement.recoverOrphans().complete) {
    await app.settlement.close();
    app.holds.close();
    app.parallel.close();
    app.alerts.close();
    app.keyInvalidations?.close();
    app.usageRelay?.close();
    app.routeSync?.close();
    if (redis) redis.disconnect();
    await servingLock?.release();
    await store.close();
    throw new Error('the billing journal a stopped daemon left could not be applied (the database is busy): start again once it is free');
  }
  if (app.holds instanceof RedisHoldStore) {
    const cleared = await app.holds.clearStale().catch(() => 0);
    if (cleared > 0) logger.warn({ cleared }, 'dropped wallet holds left by this daemon\'s previous run');
  }
  const { router, fallback } = buildRouter(app);
  const server = createHttpServer({
    router,
    fallback,
    logger,
    maxBodyBytes: config.server.maxBodyBytes,
    trustProxy: config.server.trustProxy,
    trustedProxies: config.server.trustedProxies,
    isShuttingDown: () => app.lifecycle.shuttingDown,
    limits: config.server.limits,
    telemetry: app.telemetry,
    neverShed: config.metrics.enabled ? [config.metrics.path] : [],
  });
  const flushTimer = setInterval(() => void flushLastUsed(app), LAST_USED_FLUSH_MS);
  flushTimer.unref();
  // Logged-out sessions are remembered until their tokens would have expired anyway.
  const purgeSessions = (): void => {
    try {
      Promise.resolve(app.store.sessions.purge(Date.now())).catch((error: unknown) => logger.warn({ err: error }, 'could not purge ended sessions'));
    } catch (error) {
      logger.warn({ err: error }, 'could not purge ended sessions');
    }
  };
  purgeSessions();
  const sessionTimer = setInterval(purgeSessions, 60 * 60 * 1000);
  sessionTimer.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? config.server.port, config.server.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Admission's funds remembered between calls (on PostgreSQL a listening session of its own):
  // once the daemon has started, so that a start that fails leaves nothing open. Calls before
  // it read the database.
  store.cacheFunds({ sharedWriters: Boolean(config.redis) });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info({ url, config: config.source, database: store.description, redis: config.redis ? 'enabled' : 'disabled', models: config.models.length }, 'gateway listening');
  logger.flush();

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      app.lifecycle.beginShutdown();
      clearInterval(flushTimer);
      clearInterval(sessionTimer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), config.server.shutdownTimeoutMs).unref());
      if ((await Promise.race([closed, timeout])) === 'timeout') {
        logger.warn('shutdown timeout: closing the remaining connections');
        server.closeAllConnections();
        await closed;
      }
      await flushLastUsed(app);
      // Streams cut at the timeout settle (as 499) once their connections have closed.
      app.media.stopDrains();
      await Promise.all([app.chat.settled(2000), app.media.settled(2000)]);
      app.pipeline.close();
      await app.passwords.close();
      app.hostedImages.close();
      await app.cache?.close();
      await app.settlement.close();
      // The last spans go to the collector if it answers within two seconds.
      await app.telemetry.shutdown(2000).catch(() => undefined);
      // The last calls' alerts are raised, and sent if the webhook answers within a second.
      await app.alerts.flush(1000).catch(() => undefined);
      app.holds.close();
      app.parallel.close();
      app.alerts.close();
      await app.upstream.close();
      app.keyInvalidations?.close();
      app.usageRelay?.close();
      app.routeSync?.close();
      if (redis) await redis.quit().catch(() => redis?.disconnect());
      await servingLock?.release();
      await store.close();
      clearInterval(logFlush);
      logger.info('gateway stopped');
      // Lines logged after this (a caller's own) still go out: the once-a-second flush has
      // stopped, but the destination writes what it holds when the process exits.
      await new Promise<void>((resolve) => logger.flush(() => resolve()));
    })();
    return closing;
  };
  lost = close;
  return { app, server, url, close };
}

async function flushLastUsed(app: App): Promise<void> {
  try {
    await Promise.all([app.keyAuth.api.flushLastUsed(), app.keyAuth.management.flushLastUsed()]);
  } catch (error) {
    app.logger.error({ err: error }, 'could not record key last-use times');
  }
}
