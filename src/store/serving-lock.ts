import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { journalDir } from './billing-journal.js';
import { takeFileLock } from './file-lock.js';

/**
 * Which daemons may serve one database file at once. A daemon without Redis keeps rate
 * limits, wallet holds and admission's funds in its own memory, so it must be the file's
 * only daemon: it takes an exclusive lock. Daemons with Redis share limits and holds there,
 * so they take a shared lock: any number of them, but none beside a daemon without Redis.
 *
 * The lock is an SQLite (fcntl) lock on `<database>-billing/serving.lock`, an empty file:
 * the kernel drops it when the process dies, so a crash never leaves the file locked.
 */
export class ServingLock {
  private constructor(private readonly db: Database.Database) {}

  /** Undefined for an in-memory database (no other process can open it). Throws when refused. */
  static take(databasePath: string, mode: 'alone' | 'shared'): ServingLock | undefined {
    if (databasePath === ':memory:' || databasePath === '') return undefined;
    const dir = journalDir(databasePath);
    mkdirSync(dir, { recursive: true });
    const db = takeFileLock(join(dir, 'serving.lock'), mode === 'alone' ? 'exclusive' : 'shared');
    if (db) return new ServingLock(db);
    throw new Error(
      mode === 'alone'
        ? `another gateway daemon is serving ${databasePath}: without redis configured only one daemon may serve a database (configure redis on every daemon to run several)`
        : `a gateway daemon without redis is serving ${databasePath}: stop it, or configure redis on it too, before starting more daemons on this database`,
    );
  }

  release(): void {
    if (this.db.open) this.db.close();
  }
}
