import Database from 'better-sqlite3';

/**
 * A process-lifetime lock: an SQLite (fcntl) lock on a (possibly new, empty) SQLite file,
 * held by the returned connection until it is closed; the kernel drops it when the process
 * dies. `exclusive` excludes every other holder; `shared` excludes only an exclusive one.
 * Undefined when another connection holds a conflicting lock.
 */
export function takeFileLock(path: string, mode: 'exclusive' | 'shared'): Database.Database | undefined {
  const db = new Database(path, { timeout: 0 });
  try {
    if (mode === 'exclusive') db.exec('BEGIN EXCLUSIVE');
    else {
      // A read transaction holds SQLite's SHARED lock until it ends.
      db.exec('BEGIN');
      db.prepare('SELECT count(*) FROM sqlite_master').get();
    }
    return db;
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return undefined;
    throw error;
  }
}
