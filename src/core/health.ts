import type { Redis } from 'ioredis';
import { pingRedis } from '../store/redis.js';
import type { Store } from '../store/store.js';

export type DependencyState = 'ok' | 'error' | 'disabled';

export interface Readiness {
  ready: boolean;
  body: { status: 'ready' | 'not_ready'; db: DependencyState; redis: DependencyState; reason?: string; unapplied_calls?: number };
}

/** What readiness needs to know of settlement (core/gateway/settlement.ts). */
export interface BillingState {
  /** Batches of settled calls fail to reach the ledger (the database takes reads but not writes). */
  failing: boolean;
  backlog: number;
}

/**
 * Readiness: the database answers a query and takes the ledger's batches and, when
 * configured, Redis answers PING.
 */
export async function checkReadiness(store: Store, redis: Redis | undefined, shuttingDown: boolean, billing?: BillingState): Promise<Readiness> {
  let db: DependencyState = 'ok';
  try {
    store.ping();
  } catch {
    db = 'error';
  }
  // A full disk or a writer holding the lock: reads work, the ledger does not move.
  const billingStuck = billing?.failing === true;
  if (billingStuck) db = 'error';
  const redisState: DependencyState = redis ? ((await pingRedis(redis, 1000)) ? 'ok' : 'error') : 'disabled';
  const ready = db === 'ok' && redisState !== 'error' && !shuttingDown;
  const body: Readiness['body'] = { status: ready ? 'ready' : 'not_ready', db, redis: redisState };
  if (shuttingDown) body.reason = 'shutting_down';
  else if (billingStuck) {
    body.reason = 'ledger_writes_failing';
    body.unapplied_calls = billing?.backlog ?? 0;
  }
  return { ready, body };
}
