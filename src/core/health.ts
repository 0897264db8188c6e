import type { Redis } from 'ioredis';
import { pingRedis } from '../store/redis.js';
import type { Store } from '../store/store.js';

export type DependencyState = 'ok' | 'error' | 'disabled';

export interface Readiness {
  ready: boolean;
  body: { status: 'ready' | 'not_ready'; db: DependencyState; redis: DependencyState; reason?: string };
}

/** Readiness: the database answers a query and, when configured, Redis answers PING. */
export async function checkReadiness(store: Store, redis: Redis | undefined, shuttingDown: boolean): Promise<Readiness> {
  let db: DependencyState = 'ok';
  try {
    store.ping();
  } catch {
    db = 'error';
  }
  const redisState: DependencyState = redis ? ((await pingRedis(redis, 1000)) ? 'ok' : 'error') : 'disabled';
  const ready = db === 'ok' && redisState !== 'error' && !shuttingDown;
  const body: Readiness['body'] = { status: ready ? 'ready' : 'not_ready', db, redis: redisState };
  if (shuttingDown) body.reason = 'shutting_down';
  return { ready, body };
}
