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

  /** Runs `fn` in one transaction (nested calls become savepoints). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  /** A trivial query: proves the file is open and readable. */
  ping(): void {
    this.db.prepare('SELECT 1').get();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
