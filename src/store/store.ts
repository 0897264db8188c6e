import { AccountsRepo } from './accounts.js';
import { ReadBarrier } from './barrier.js';
import { Checkpointer } from './checkpointer.js';
import { openDatabase, type Db, type OpenOptions } from './db.js';
import { KeysRepo } from './keys.js';
import { LedgerRepo, type ChargeInput } from './ledger.js';
import { UsageRepo, type NewUsage, type UsageRecord } from './usage.js';
import { SessionsRepo } from './sessions.js';
import { AlertsRepo } from './alerts.js';
import type { Logger } from 'pino';
import { CacheStore, cacheFileOf, type CacheStoreLimits } from './cache-entries.js';
import { ServingLock } from './serving-lock.js';
import type { Account } from './accounts.js';
import type { KeyRecord, NewKey } from './keys.js';
import { FUNDS_COLUMNS, toFunds, type FundsRow } from './funds.js';
import type { Funds, LocalWrites, NewAccount, PeriodStarts, Store } from './types.js';

export type { Funds } from './types.js';

/** A charge as the funds cache sees it: money off an account, and spend on a key. */
type FundsCharge = Pick<ChargeInput, 'accountId' | 'apiKeyId' | 'amountMicros'>;

/**
 * Admission's funds, remembered, for a daemon that is the database's only writer (no Redis;
 * main.ts holds the serving lock that keeps other daemons off the file). It is right as long
 * as every write since it was filled is one it was told about: SQLite's `total_changes()`
 * counts this connection's row changes (a lock-free, sub-microsecond read), so any other
 * write (a top-up, a budget change, a deleted key) moves the count and empties the cache,
 * while a settlement batch, which says what it charged, updates it in place.
 */
class FundsCache {
  private readonly accounts = new Map<string, { balanceMicros: number; account: Funds['account'] }>();
  /** By account and key; null when the key is not one of the account's. */
  private readonly keys = new Map<string, NonNullable<Funds['key']> | null>();
  /** total_changes() when the cache was last known right. */
  private mark = -1;
  /** PRAGMA data_version then (other connections' commits change it), when they may write. */
  private version = -1;

  /**
   * @param changes this connection's total_changes()
   * @param dataVersion PRAGMA data_version, for a database other daemons write too (Redis):
   *   it changes when any other connection commits, so their charges and top-ups clear the cache
   */
  constructor(
    private readonly changes: () => number,
    private readonly dataVersion?: () => number,
  ) {}

  get(accountId: string, apiKeyId: string): Funds | undefined {
    this.check();
    const account = this.accounts.get(accountId);
    const key = this.keys.get(`${accountId}\n${apiKeyId}`);
    if (account === undefined || key === undefined) return undefined;
    return { balanceMicros: account.balanceMicros, account: { ...account.account }, key: key === null ? undefined : { ...key } };
  }

  set(accountId: string, apiKeyId: string, funds: Funds): void {
    this.check();
    if (this.keys.size >= MAX_CACHED) this.clear();
    this.accounts.set(accountId, { balanceMicros: funds.balanceMicros, account: { ...funds.account } });
    this.keys.set(`${accountId}\n${apiKeyId}`, funds.key ? { ...funds.key } : null);
  }

  /** Charges committed since `before` (total_changes() then), and no other write. */
  charged(before: number, charges: readonly FundsCharge[]): void {
    if (this.mark !== before) {
      this.clear();
      this.mark = this.changes();
      return;
    }
    for (const charge of charges) {
      const account = this.accounts.get(charge.accountId);
      if (account !== undefined) {
        account.balanceMicros -= charge.amountMicros;
        account.account.spentMicros += charge.amountMicros;
      }
      const key = charge.apiKeyId ? this.keys.get(`${charge.accountId}\n${charge.apiKeyId}`) : undefined;
      if (key && charge.amountMicros > 0) key.spentMicros += charge.amountMicros;
    }
    this.mark = this.changes();
  }

  private check(): void {
    const now = this.changes();
    if (now !== this.mark) {
      this.clear();
      this.mark = now;
    }
    if (this.dataVersion) {
      const version = this.dataVersion();
      if (version !== this.version) {
        this.clear();
        this.version = version;
      }
    }
  }

  private clear(): void {
    this.accounts.clear();
    this.keys.clear();
  }
}

/** Accounts (and keys) the funds cache holds at most before it starts over. */
const MAX_CACHED = 50_000;

/** The SQLite store (the embedded default): one connection and a repository per table group. */
export class SqliteStore implements Store, LocalWrites {
  readonly backend = 'sqlite' as const;
  /** Hosted images are files beside the database (core/gateway/hosted-images.ts). */
  readonly images = undefined;
  readonly accounts: AccountsRepo;
  readonly apiKeys: KeysRepo;
  readonly managementKeys: KeysRepo;
  readonly ledger: LedgerRepo;
  readonly usage: UsageRepo;
  readonly sessions: SessionsRepo;
  readonly alerts: AlertsRepo;
  /** Passed by the reads that show money; settlement registers its pending calls here. */
  readonly barrier: ReadBarrier;
  /** Present for a database file opened with Store.open. */
  checkpointer: Checkpointer | undefined;

  /** Built once: better-sqlite3 builds four wrappers per transaction() call. */
  private readonly runInTransaction;
  private readonly fundsStmt;
  private readonly keyPeriodStmt;
  private readonly accountPeriodStmt;
  private readonly changesStmt;
  private readonly dataVersionStmt;
  private fundsCache: FundsCache | undefined;

  /** @param path the database file (':memory:' for none), for files kept beside it. */
  constructor(
    readonly db: Db,
    readonly path = ':memory:',
  ) {
    this.runInTransaction = db.transaction((fn: () => unknown) => fn());
    this.fundsStmt = db.prepare(`SELECT ${FUNDS_COLUMNS} FROM accounts a LEFT JOIN api_keys k ON k.id = ? AND k.account_id = a.id WHERE a.id = ?`);
    this.keyPeriodStmt = db.prepare('UPDATE api_keys SET period_base_micros = spent_micros, period_start = ? WHERE id = ? AND account_id = ? AND period_start < ?');
    this.accountPeriodStmt = db.prepare('UPDATE accounts SET period_base_micros = spent_micros, period_start = ? WHERE id = ? AND period_start < ?');
    this.changesStmt = db.prepare('SELECT total_changes()').pluck();
    this.dataVersionStmt = db.prepare('PRAGMA data_version').pluck();
    this.barrier = new ReadBarrier(db);
    this.accounts = new AccountsRepo(db, this.barrier);
    this.apiKeys = new KeysRepo(db, 'api', this.barrier);
    this.managementKeys = new KeysRepo(db, 'management');
    this.ledger = new LedgerRepo(db, this.barrier);
    this.usage = new UsageRepo(db, this.barrier);
    this.sessions = new SessionsRepo(db);
    this.alerts = new AlertsRepo(db);
  }

  static open(path: string, options: OpenOptions & { onCheckpointError?: (message: string) => void } = {}): SqliteStore {
    const store = new SqliteStore(openDatabase(path, options), path);
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
    const cached = this.fundsCache?.get(accountId, apiKeyId);
    if (cached) return cached;
    const row = this.fundsStmt.get(apiKeyId, accountId) as FundsRow | undefined;
    if (!row) return undefined;
    const funds = toFunds(row);
    this.fundsCache?.set(accountId, apiKeyId, funds);
    return funds;
  }

  /** Settled calls go in first (the barrier), so the old period keeps what it spent. */
  beginPeriods(starts: PeriodStarts): void {
    this.barrier.pass();
    this.transaction(() => {
      if (starts.keyStart !== undefined && starts.apiKeyId !== undefined) this.keyPeriodStmt.run(starts.keyStart, starts.apiKeyId, starts.accountId, starts.keyStart);
      if (starts.accountStart !== undefined) this.accountPeriodStmt.run(starts.accountStart, starts.accountId, starts.accountStart);
    });
  }

  /**
   * Remember admission's funds between calls (see FundsCache). With `sharedWriters` (daemons
   * sharing the file through Redis) each use first reads PRAGMA data_version (about 2 µs; the
   * funds query it saves costs several times that), so another process's commit clears the
   * cache; alone, this connection's total_changes() is enough.
   */
  cacheFunds(options: { sharedWriters?: boolean } = {}): void {
    this.fundsCache ??= new FundsCache(
      () => this.changesStmt.get() as number,
      options.sharedWriters ? () => this.dataVersionStmt.get() as number : undefined,
    );
  }

  /**
   * Runs `write` (the charges, with whatever else belongs in their transaction) in one
   * transaction; the funds cache then takes the charges instead of starting over.
   */
  charge<T>(charges: readonly FundsCharge[], write: () => T): T {
    const before = this.changesStmt.get() as number;
    const result = this.transaction(write);
    this.fundsCache?.charged(before, charges);
    return result;
  }

  get local(): LocalWrites {
    return this;
  }

  get description(): string {
    return this.path;
  }

  /** Settled calls in one transaction; the funds cache takes their charges. */
  settle(charges: readonly ChargeInput[], rows: readonly NewUsage[]): UsageRecord[] {
    const records: UsageRecord[] = [];
    this.charge(charges, () => {
      if (charges.length === 1) this.ledger.chargeInTransaction(charges[0] as ChargeInput);
      else if (charges.length > 0) this.ledger.chargeManyInTransaction(charges);
      for (const row of rows) records.push(this.usage.insert(row));
    });
    this.checkpointer?.wrote();
    return records;
  }

  hasUsage(requestId: string): boolean {
    return this.usage.has(requestId);
  }

  createFirstAdmin(account: NewAccount, key: NewKey): { account: Account; key: KeyRecord } | undefined {
    return this.transaction(() => {
      if (this.accounts.countAdmins() > 0) return undefined;
      const created = this.accounts.insert(account);
      return { account: created, key: this.managementKeys.insert({ ...key, accountId: created.id }) };
    });
  }

  lockServing(mode: 'alone' | 'shared'): ServingLock | undefined {
    return ServingLock.take(this.path, mode);
  }

  /** The response cache's own file beside the database (`gateway.db` ► `gateway-cache.db`). */
  openCache(limits: CacheStoreLimits, logger: Logger): CacheStore {
    return CacheStore.open(cacheFileOf(this.path), limits, logger);
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
