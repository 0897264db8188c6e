import type { GatewayConfig } from '../config/types.js';
import { SqliteStore } from './store.js';
import type { Store } from './types.js';

export interface OpenStoreOptions {
  onCheckpointError?: (message: string) => void;
}

/**
 * The store the config names: PostgreSQL with `database.url`, else the SQLite file at
 * `database.path`. The PostgreSQL driver is loaded only when it is used.
 */
export async function openStore(database: GatewayConfig['database'], options: OpenStoreOptions = {}): Promise<Store> {
  if (database.url !== undefined) {
    const { PgStore } = await import('./pg/store.js');
    return PgStore.open(database.url, { max: database.poolMax });
  }
  return SqliteStore.open(database.path, {
    busyTimeoutMs: database.busyTimeoutMs,
    ...(options.onCheckpointError ? { onCheckpointError: options.onCheckpointError } : {}),
  });
}
