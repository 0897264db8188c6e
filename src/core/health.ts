import type { Redis } from 'ioredis';
import type { ErrorBody } from './errors.js';
import { pingRedis, withTimeout } from '../store/redis.js';
import type { Store } from '../store/types.js';

export type DependencyState = 'ok' | 'error' | 'disabled';

export interface Readiness {
  ready: boolean;
  body: {
    status: 'ready' | 'not_ready';
    db: DependencyState;
    redis: DependencyState;
    reason?: string;
    unapplied_calls?: number;
    /** On a 503 only: the error envelope every error response carries (code 503). */
    error?: ErrorBody;
  };
}

/** What readiness needs to know of settlement (core/gateway/settlement.ts). */
export interface BillingState {
  /** Batches of settled calls fail to reach the ledger (the database takes reads but not writes). */
  failing: boolean;
  backlog: number;
}

const NOT_READY: Record<string, string> = {
  shutting_down: 'the gateway is shutting down',
  ledger_writes_failing: 'settled calls cannot be written to the ledger (database busy or full)',
  database_unavailable: 'the database does not answer',
  redis_unavailable: 'Redis does not answer',
};

/**
 * Readiness: the database answers a query and takes the ledger's batches and, when
 * configured, Redis answers PING.
 */
export async function checkReadiness(store: Store, redis: Redis | undefined, shuttingDown: boolean, billing?: BillingState): Promise<Readiness> {
  let db: DependencyState = 'ok';
  try {
    // Bounded: a database host that stopped answering must not hold the probe open.
    await withTimeout(Promise.resolve().then(() => store.ping()), 2000);
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
  if (!ready) {
    const reason = body.reason ?? (db === 'error' ? 'database_unavailable' : 'redis_unavailable');
    body.error = { message: NOT_READY[reason] ?? 'the gateway is not ready', type: 'service_unavailable', code: 503, reason, param: null };
  }
  return { ready, body };
}
