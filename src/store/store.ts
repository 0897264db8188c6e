import { AccountsRepo } from './accounts.js';
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

  constructor(readonly db: Db) {
    this.accounts = new AccountsRepo(db);
    this.apiKeys = new KeysRepo(db, 'api');
    this.managementKeys = new KeysRepo(db, 'management');
    this.ledger = new LedgerRepo(db);
    this.usage = new UsageRepo(db);
  }

  static open(path: string, options: OpenOptions = {}): Store {
    return new Store(openDatabase(path, options));
  }

  /**
   * Runs `fn` in one write transaction (nested calls become savepoints). IMMEDIATE takes the
   * write lock at BEGIN, so a concurrent writer waits for busy_timeout instead of failing
   * with SQLITE_BUSY when a read turns into a write.
   */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  /** A trivial query: proves the file is open and readable. */
  ping(): void {
    this.db.prepare('SELECT 1').get();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
