import type { RunningGateway } from '../../src/main.js';
import { PgStore } from '../../src/store/pg/store.js';
import { SqliteStore } from '../../src/store/store.js';
import type { Store } from '../../src/store/types.js';

/**
 * Which store the test daemons run on: SQLite by default, PostgreSQL with
 * GATEWAY_TEST_BACKEND=postgres (CI runs the suite both ways; each test daemon then gets a
 * scratch database of its own, see gateway.ts).
 */
export const TEST_BACKEND: 'sqlite' | 'postgres' = process.env.GATEWAY_TEST_BACKEND === 'postgres' ? 'postgres' : 'sqlite';

function storeOf(target: Store | RunningGateway): Store {
  return 'app' in target ? target.app.store : target;
}

/**
 * A statement straight on the test daemon's database (setting up what no API can, like an
 * expiry in the past), on either backend: `?` placeholders, the SQL both dialects read.
 */
export async function sqlAll<T = Record<string, unknown>>(target: Store | RunningGateway, query: string, ...params: unknown[]): Promise<T[]> {
  const store = storeOf(target);
  if (store instanceof SqliteStore) {
    const statement = store.db.prepare(query);
    return (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[];
  }
  if (store instanceof PgStore) {
    let n = 0;
    const text = query.replace(/\?/g, () => `$${++n}`);
    return (await store.sql.unsafe(text, params as never[])) as unknown as T[];
  }
  throw new Error('sqlAll: an unknown store');
}

export async function sqlRun(target: Store | RunningGateway, query: string, ...params: unknown[]): Promise<void> {
  await sqlAll(target, query, ...params);
}

/** The one value of a one-row, one-column query. */
export async function sqlValue(target: Store | RunningGateway, query: string, ...params: unknown[]): Promise<unknown> {
  const [row] = await sqlAll(target, query, ...params);
  return row === undefined ? undefined : Object.values(row)[0];
}

/** Makes the daemon's store fail every query from now on (as a database that went away). */
export async function breakStore(target: Store | RunningGateway): Promise<void> {
  const store = storeOf(target);
  if (store instanceof SqliteStore) store.db.close();
  else if (store instanceof PgStore) await store.sql.end({ timeout: 1 });
}

export function storeIsOpen(target: Store | RunningGateway): boolean {
  const store = storeOf(target);
  if (store instanceof SqliteStore) return store.db.open;
  if (store instanceof PgStore) return !store.isClosed;
  return false;
}
