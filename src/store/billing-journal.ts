import { appendFileSync, closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, readdirSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { NewUsage } from './usage.js';

/**
 * The billing journal: settled calls not yet applied to the ledger, one JSON line each, in an
 * append-only file per daemon process (`<database>-billing/<pid>.<start>.<n>.log`).
 *
 * A call is settled when its line is written: one write(2) for all the calls that end in the
 * same turn of the event loop, before any of their clients gets its last bytes. The charges
 * and usage rows are then applied to SQLite in batches (settlement.ts), and the file is
 * emptied once everything written to it is committed. If the process dies in between, the
 * next daemon to start on the database (or a running one, on its next scan) applies the
 * lines the dead process left, each exactly once: a request id already in the usage table is
 * skipped. Durability matches the database's `synchronous = NORMAL`: a process crash loses
 * nothing, an OS crash can lose the last writes of both.
 */
let opened = 0;

export class BillingJournal {
  private fd: number | undefined;
  private size = 0;

  private constructor(readonly path: string) {}

  /** A journal for this process, next to the database; none for an in-memory database. */
  static open(databasePath: string): BillingJournal | undefined {
    if (databasePath === ':memory:' || databasePath === '') return undefined;
    const dir = journalDir(databasePath);
    mkdirSync(dir, { recursive: true });
    // A third part tells apart several gateways in one process (tests run two on one file).
    const journal = new BillingJournal(join(dir, `${process.pid}.${processStart(process.pid) ?? Date.now()}.${++opened}.log`));
    journal.fd = openSync(journal.path, 'a', 0o600);
    return journal;
  }

  /** Writes the lines of one batch of settled calls in one write. Throws when it cannot. */
  append(rows: readonly NewUsage[]): void {
    if (this.fd === undefined) throw new Error('the billing journal is closed');
    let text = '';
    for (const row of rows) text += `${JSON.stringify(row)}\n`;
    // One write(2) for a usual batch; a short write (rare, on a regular file) writes the rest.
    const size = Buffer.byteLength(text);
    const first = writeSync(this.fd, text);
    if (first < size) {
      const bytes = Buffer.from(text, 'utf8');
      for (let written = first; written < size; ) written += writeSync(this.fd, bytes, written, size - written);
    }
    this.size += size;
  }

  /** Calls the database refused for good, kept for an operator in `rejected.log` beside the journals. */
  reject(rows: readonly NewUsage[]): void {
    appendFileSync(join(dirname(this.path), 'rejected.log'), rows.map((row) => `${JSON.stringify(row)}\n`).join(''), { mode: 0o600 });
  }

  /** Everything written so far is committed to the database: empty the file. */
  clear(): void {
    if (this.fd === undefined || this.size === 0) return;
    ftruncateSync(this.fd, 0);
    this.size = 0;
  }

  /** At a clean stop, once everything is applied: close and remove the file. */
  close(): void {
    if (this.fd === undefined) return;
    const empty = this.size === 0;
    closeSync(this.fd);
    this.fd = undefined;
    if (empty) unlinkSync(this.path);
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
}

/**
 * The journals of processes that are gone (not this one, not a live daemon). Their rows
 * still need applying; `remove` them once applied.
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
    const match = /^(\d+)\.(\d+)\.\d+\.log$/.exec(name);
    if (!match) continue;
    const pid = Number(match[1]);
    const start = Number(match[2]);
    if (pid === process.pid || isAlive(pid, start)) continue;
    const path = join(dir, name);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      continue; // another daemon took it meanwhile
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
    orphans.push({ path, rows, unreadable });
  }
  return orphans;
}

export function removeJournal(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already removed by another daemon
  }
}

/** A process's start time in clock ticks since boot (Linux), to tell it from a later process with the same pid. */
function processStart(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[19]);
    return Number.isSafeInteger(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number, start: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the pid exists but belongs to someone else; it is still a live process.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const actual = processStart(pid);
  // Without /proc the pid alone decides; with it, a reused pid is not the journal's owner.
  return actual === undefined || actual === start;
}
