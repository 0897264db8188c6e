import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { MigrationError } from './migration-error.js';
import { MIGRATIONS, type Migration } from './migrations.js';

export type Db = Database.Database;

export { MigrationError } from './migration-error.js';

export interface OpenOptions {
  busyTimeoutMs?: number;
  migrations?: readonly Migration[];
}

/**
 * Opens (creating if needed) the SQLite file with WAL, foreign keys and a busy timeout,
 * then applies pending migrations. SQLite is the source of truth; the daemon its only writer.
 */
export function openDatabase(path: string, options: OpenOptions = {}): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
    // WAL + NORMAL is durable across process crashes; only an OS crash can lose the last commits.
    db.pragma('synchronous = NORMAL');
    migrate(db, options.migrations ?? MIGRATIONS);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

export function schemaVersion(db: Db): number {
  const row = db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null };
  return row.version ?? 0;
}

/** Applies each migration newer than the file's version, each in its own transaction. */
export function migrate(db: Db, migrations: readonly Migration[]): { applied: number[] } {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  const latest = migrations.at(-1)?.version ?? 0;
  const found = schemaVersion(db);
  if (found > latest) {
    throw new MigrationError(
      `database schema version ${found} is newer than this gateway knows (${latest}): upgrade the gateway or use another database file`,
    );
  }
  const applied: number[] = [];
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const migration of migrations) {
    // IMMEDIATE takes the write lock first (waiting up to busy_timeout), and the version is
    // read again under it, so two processes starting on one new file apply each migration once.
    const ran = db
      .transaction(() => {
        if (schemaVersion(db) >= migration.version) return false;
        db.exec(migration.sql);
        record.run(migration.version, migration.name, Date.now());
        return true;
      })
      .immediate();
    if (ran) applied.push(migration.version);
  }
  return { applied };
}
