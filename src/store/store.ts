import { AccountsRepo } from './accounts.js';
import { Checkpointer } from './checkpointer.js';
import { openDatabase, type Db, type OpenOptions } from './db.js';
import { KeysRepo } from './keys.js';
import { LedgerRepo } from './ledger.js';
import { UsageRepo } from './usage.js';

/** The SQLite store: one connection and a repository per table group. */
export class Store {
  readonly accounts: AccountsRepo;
  readonly apiKeys: KeysRepo;
  readonly managementKeys: KeysRepo;
  readonly ledger: LedgerRepo;
  readonly usage: UsageRepo;
  /** Present for a database file opened with Store.open. */
  checkpointer: Checkpointer | undefined;

  /** Built once: better-sqlite3 builds four wrappers per transaction() call. */
  private readonly runInTransaction;

  constructor(readonly db: Db) {
    this.runInTransaction = db.transaction((fn: () => unknown) => fn());
    this.accounts = new AccountsRepo(db);
    this.apiKeys = new KeysRepo(db, 'api');
    this.managementKeys = new KeysRepo(db, 'management');
    this.ledger = new LedgerRepo(db);
    this.usage = new UsageRepo(db);
  }

  static open(path: string, options: OpenOptions & { onCheckpointError?: (message: string) => void } = {}): Store {
    const store = new Store(openDatabase(path, options));
    store.checkpointer = new Checkpointer(store.db, path, options.busyTimeoutMs ?? 5000, options.onCheckpointError ?? (() => {}));
    return store;
  }

  /**
   * Runs `fn` in one write transaction (nested calls become savepoints). IMMEDIATE takes the
   * write lock at BEGIN, so a concurrent writer waits for busy_timeout instead of failing
   * with SQLITE_BUSY when a read turns into a write.
   */
  transaction<T>(fn: () => T): T {
    return this.runInTransaction.immediate(fn) as T;
  }


  /** A trivial query: proves the file is open and readable. */
  ping(): void {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    await this.checkpointer?.stop();
    if (this.db.open) this.db.close();
  }
}
