import { AccountsRepo } from './accounts.js';
import { ReadBarrier } from './barrier.js';
import { Checkpointer } from './checkpointer.js';
import { openDatabase, type Db, type OpenOptions } from './db.js';
import { KeysRepo } from './keys.js';
import { LedgerRepo } from './ledger.js';
import { UsageRepo } from './usage.js';

export interface Funds {
  balanceMicros: number;
  key: { budgetMicros: number | null; spentMicros: number } | undefined;
}

/** The SQLite store: one connection and a repository per table group. */
export class Store {
  readonly accounts: AccountsRepo;
  readonly apiKeys: KeysRepo;
  readonly managementKeys: KeysRepo;
  readonly ledger: LedgerRepo;
  readonly usage: UsageRepo;
  /** Passed by the reads that show money; settlement registers its pending calls here. */
  readonly barrier: ReadBarrier;
  /** Present for a database file opened with Store.open. */
  checkpointer: Checkpointer | undefined;

  /** Built once: better-sqlite3 builds four wrappers per transaction() call. */
  private readonly runInTransaction;
  private readonly fundsStmt;

  /** @param path the database file (':memory:' for none), for files kept beside it. */
  constructor(
    readonly db: Db,
    readonly path = ':memory:',
  ) {
    this.runInTransaction = db.transaction((fn: () => unknown) => fn());
    this.fundsStmt = db
      .prepare('SELECT a.balance_micros, k.budget_micros, k.spent_micros FROM accounts a LEFT JOIN api_keys k ON k.id = ? AND k.account_id = a.id WHERE a.id = ?')
      .raw();
    this.barrier = new ReadBarrier(db);
    this.accounts = new AccountsRepo(db, this.barrier);
    this.apiKeys = new KeysRepo(db, 'api', this.barrier);
    this.managementKeys = new KeysRepo(db, 'management');
    this.ledger = new LedgerRepo(db, this.barrier);
    this.usage = new UsageRepo(db, this.barrier);
  }

  static open(path: string, options: OpenOptions & { onCheckpointError?: (message: string) => void } = {}): Store {
    const store = new Store(openDatabase(path, options), path);
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


  /**
   * What admission reads for a call, in one statement: the wallet balance and the API key's
   * budget and spend (`key` undefined when the key is not the account's). Undefined when the
   * account does not exist.
   */
  funds(accountId: string, apiKeyId: string): Funds | undefined {
    const row = this.fundsStmt.get(apiKeyId, accountId) as [number, number | null, number | null] | undefined;
    if (!row) return undefined;
    return { balanceMicros: row[0], key: row[2] === null ? undefined : { budgetMicros: row[1], spentMicros: row[2] } };
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
