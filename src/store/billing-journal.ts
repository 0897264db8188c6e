import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, readdirSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';
import { takeFileLock } from './file-lock.js';
import type { NewUsage } from './usage.js';

/**
 * The billing journal: settled calls not yet applied to the ledger, one JSON line each, in an
 * append-only file per daemon (`<database>-billing/<pid>.<random>.log`).
 *
 * A call is settled when its line is written: one write(2) for all the calls that end in the
 * same turn of the event loop, before any of their clients gets its last bytes. The charges
 * and usage rows are then applied to SQLite in batches (settlement.ts), and the file is
 * marked applied once everything written to it is committed (the file itself is cut back
 * only once it passes JOURNAL_TRIM_BYTES: appending to a file of allocated pages costs about
 * half as much as appending to one just truncated). If the process dies in between, the
 * next daemon to start on the database (or a running one, on its next scan) applies the
 * lines the dead process left, each exactly once: a request id already in the usage table is
 * skipped. Whether a journal's owner is alive is told by a lock, not by its pid (pids are
 * reused, and daemons in containers all run as pid 1): the owner holds an exclusive SQLite
 * lock (fcntl) on `<name>.lock` for as long as it runs, which the kernel drops when the
 * process dies; a daemon that can take the lock owns the orphan while it applies it.
 * Durability matches the database's `synchronous = NORMAL`: a process crash loses
 * nothing, an OS crash can lose the last writes of both.
 */
/** Past this size a journal whose lines are all applied is cut back to empty. */
export const JOURNAL_TRIM_BYTES = 1 << 20;

export class BillingJournal {
  private fd: number | undefined;
  /** Bytes in the file. */
  private size = 0;
  /** Whether the file holds lines not yet committed to the database. */
  private unapplied = false;

  private constructor(
    readonly path: string,
    private readonly lock: Database.Database,
  ) {}

  /** A journal for this daemon, next to the database; none for an in-memory database. */
  static open(databasePath: string): BillingJournal | undefined {
    if (databasePath === ':memory:' || databasePath === '') return undefined;
    const dir = journalDir(databasePath);
    mkdirSync(dir, { recursive: true });
    const name = `${process.pid}.${randomBytes(6).toString('hex')}`;
    // The lock first: a journal whose lock nobody holds is an orphan.
    const lock = takeFileLock(join(dir, `${name}.lock`), 'exclusive');
    if (!lock) throw new Error(`could not lock a new billing journal in ${dir}`);
    const journal = new BillingJournal(join(dir, `${name}.log`), lock);
    try {
      journal.fd = openSync(journal.path, 'a', 0o600);
    } catch (error) {
      lock.close();
      throw error;
    }
    return journal;
  }

  /** Writes the lines of one batch of settled calls in one write. Throws when it cannot. */
  append(rows: readonly NewUsage[]): void {
    if (this.fd === undefined) throw new Error('the billing journal is closed');
    let text = '';
    for (const row of rows) text += `${JSON.stringify(row)}\n`;
    // One write(2) for a usual batch; a short write (rare, on a regular file) writes the rest.
    const size = Buffer.byteLength(text);
    try {
      const first = writeSync(this.fd, text);
      if (first < size) {
        const bytes = Buffer.from(text, 'utf8');
        for (let written = first; written < size; ) written += writeSync(this.fd, bytes, written, size - written);
      }
    } catch (error) {
      // Part of the batch may be on disk: cut it off, so a replay never bills a call whose
      // settle failed (its caller gets the error) and the next batch starts on a line of its own.
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        // the next successful clear() empties the file
      }
      throw error;
    }
    this.size += size;
    this.unapplied = true;
  }

  /** Calls the database refused for good, kept for an operator in `rejected.log` beside the journals. */
  reject(rows: readonly NewUsage[]): void {
    appendFileSync(join(dirname(this.path), 'rejected.log'), rows.map((row) => `${JSON.stringify(row)}\n`).join(''), { mode: 0o600 });
  }

  /**
   * Everything written so far is committed to the database. The lines stay until the file
   * passes JOURNAL_TRIM_BYTES (a replay skips applied calls by their request ids).
   */
  clear(): void {
    this.unapplied = false;
    if (this.fd === undefined || this.size < JOURNAL_TRIM_BYTES) return;
    ftruncateSync(this.fd, 0);
    this.size = 0;
  }

  /** At a clean stop, once everything is applied: close and remove the file. */
  close(): void {
    if (this.fd === undefined) return;
    const applied = !this.unapplied;
    closeSync(this.fd);
    this.fd = undefined;
    if (applied) {
      removeFile(this.path);
      removeFile(lockPath(this.path));
    }
    // Last: while the lock is held nobody else applies this journal.
    this.lock.close();
  }
}

function lockPath(journalPath: string): string {
  return journalPath.replace(/\.log$/, '.lock');
}

function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already removed (by another daemon that recovered it)
  }
}

export function journalDir(databasePath: string): string {
  return `${databasePath}-billing`;
}

export interface OrphanJournal {
  path: string;
  rows: NewUsage[];
  /** Lines that could not be read (a write cut short by the crash: that call was never answered). */
  unreadable: number;
  /** Applied: remove the journal and its lock. */
  done(): void;
  /** Not applied (the database was busy): let go of it, for a later scan. */
  release(): void;
}

/**
 * The journals whose daemon is gone (its lock is free). The caller holds each one's lock
 * until it calls `done()` or `release()`, so two daemons never apply one journal at once.
 */
export function orphanJournals(databasePath: string): OrphanJournal[] {
  const dir = journalDir(databasePath);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const orphans: OrphanJournal[] = [];
  for (const name of names) {
    if (!/^\d+\.[0-9a-f]+\.log$/.test(name)) continue;
    const path = join(dir, name);
    let lock: Database.Database | undefined;
    try {
      lock = takeFileLock(lockPath(path), 'exclusive');
    } catch {
      continue;
    }
    if (!lock) continue; // its daemon is alive (or another daemon is applying it)
    const held = lock;
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      // applied and removed by another daemon between our listing and our lock
      held.close();
      removeFile(lockPath(path));
      continue;
    }
    const rows: NewUsage[] = [];
    let unreadable = 0;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      try {
        const row = JSON.parse(line) as NewUsage;
        if (typeof row.requestId === 'string' && typeof row.accountId === 'string' && Number.isSafeInteger(row.costMicros)) rows.push(row);
        else unreadable += 1;
      } catch {
        unreadable += 1;
      }
    }
    orphans.push({
      path,
      rows,
      unreadable,
      done: () => {
        removeFile(path);
        removeFile(lockPath(path));
        held.close();
      },
      release: () => held.close(),
    });
  }
  return orphans;
}
