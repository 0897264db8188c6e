import type { KeyKind } from '../core/keys.js';
import type { Logger } from 'pino';
import type { Account, Role } from './accounts.js';
import type { CacheStoreLimits, NewEntry, StoredEntry, VectorRow } from './cache-entries.js';
import type { KeyChanges, KeyRecord, NewKey } from './keys.js';
import type { AlertDelivery, AlertRecord } from './alerts.js';
import type { ChargeInput, CreditInput, LedgerEntry, LedgerKind } from './ledger.js';
import type { NewUsage, UsageDay, UsageFilter, UsageRecord, UsageTop, UsageTotals } from './usage.js';

/**
 * The store the gateway runs on, with two implementations: SQLite (`store.ts`, the embedded
 * default, one file on one host) and PostgreSQL (`pg/store.ts`, shared by daemons on many
 * hosts). Nothing outside `src/store/` writes SQL or knows which one it has.
 *
 * Methods answer `Awaitable<T>`: SQLite (better-sqlite3) answers synchronously, PostgreSQL
 * with a promise; callers always `await`, and the embedded default pays no promise for it.
 */
export type Awaitable<T> = T | Promise<T>;

export interface NewAccount {
  id: string;
  email: string;
  name: string;
  passwordHash: string | null;
  role: Role;
  now: number;
}

export interface AccountStore {
  /** A taken e-mail (whatever its case) throws an error `isUniqueViolation` recognizes. */
  insert(input: NewAccount): Awaitable<Account>;
  byId(id: string): Awaitable<Account | undefined>;
  byEmail(email: string): Awaitable<Account | undefined>;
  list(limit: number, offset: number): Awaitable<Account[]>;
  countAdmins(): Awaitable<number>;
  /** Sets (null: removes) the spend limit; its period starts over. Undefined when no such account. */
  setSpendLimit(id: string, limitMicros: number | null, period: string | null, now: number): Awaitable<Account | undefined>;
}

export interface KeyStore {
  readonly kind: KeyKind;
  insert(key: NewKey): Awaitable<KeyRecord>;
  /** `spentMicros` includes calls settled but not yet in the ledger (the read barrier). */
  byId(id: string): Awaitable<KeyRecord | undefined>;
  byHash(hash: string): Awaitable<KeyRecord | undefined>;
  listByAccount(accountId: string): Awaitable<KeyRecord[]>;
  update(id: string, changes: KeyChanges): Awaitable<KeyRecord | undefined>;
  /** Sets revoked_at once; revoking again keeps the first time. */
  revoke(id: string, now: number): Awaitable<KeyRecord | undefined>;
  touchMany(entries: Iterable<[string, number]>): Awaitable<void>;
}

export interface LedgerStore {
  /**
   * Adds money, the balance in the same transaction. With a reference, a second call (from
   * any daemon) returns the first entry instead of applying again (`replayed: true`).
   */
  credit(kind: 'topup' | 'refund', input: CreditInput): Awaitable<{ entry: LedgerEntry; replayed: boolean }>;
  /**
   * Takes money for one request, at most once per request id (a second call returns the first
   * entry, `replayed: true`); the key's `spent` grows with it. (Calls are settled in batches
   * through `Store.settle`; this is the single charge, for tools and repairs.)
   */
  charge(input: ChargeInput): Awaitable<{ entry: LedgerEntry; replayed: boolean }>;
  byReference(accountId: string, kind: LedgerKind, reference: string): Awaitable<LedgerEntry | undefined>;
  /** Newest first; `before` is an entry id for paging. */
  list(accountId: string, limit: number, before?: number): Awaitable<LedgerEntry[]>;
  /** The ledger's sum for the account (consistency checks against the stored balance). */
  sum(accountId: string): Awaitable<number>;
}

export interface UsageStore {
  /** Whether a call's row is in (its charge, if any, went in with it). */
  has(requestId: string): Awaitable<boolean>;
  /** Newest first. */
  list(filter: UsageFilter): Awaitable<UsageRecord[]>;
  totals(accountId: string, since: number, until: number): Awaitable<UsageTotals>;
  daily(accountId: string, since: number): Awaitable<UsageDay[]>;
  top(accountId: string, since: number, by: 'key' | 'model', limit: number): Awaitable<UsageTop[]>;
}

export interface AlertStore {
  /** True when this alert is the first of its event, subject and period (any daemon's). */
  insert(alert: Omit<AlertRecord, 'attempts' | 'lastError'>): Awaitable<boolean>;
  /** Newest first. */
  recent(limit: number): Awaitable<AlertRecord[]>;
  delivered(id: string, result: AlertDelivery): Awaitable<void>;
}

export interface SessionStore {
  revoke(jti: string, accountId: string, expiresAt: number): Awaitable<void>;
  isRevoked(jti: string): Awaitable<boolean>;
  purge(now: number): Awaitable<number>;
}

/**
 * The response cache's entries (core/cache/response-cache.ts): SQLite keeps them in a file of
 * their own beside the database (cache-entries.ts), PostgreSQL in a table every daemon shares
 * (pg/cache-entries.ts). Last-use times are collected by `touch` and written in batches.
 */
export interface CacheEntryStore {
  /** The SQLite file the vector index loads from at start; undefined: it loads through `vectorsAfter`. */
  readonly file: string | undefined;
  /** Entries and bytes as this daemon last counted them (exact on SQLite's own file). */
  readonly size: { entries: number; bytes: number };
  /** A live entry by its exact key. */
  getExact(key: string, now: number): Awaitable<StoredEntry | undefined>;
  get(id: number, now: number): Awaitable<StoredEntry | undefined>;
  touch(id: number, now: number): void;
  /**
   * Stores answers in one transaction (replacing entries of the same exact key), then evicts
   * the least recently used beyond the limits. The new ids in order, and the ids that left.
   */
  putMany(entries: readonly NewEntry[]): Awaitable<{ ids: number[]; removed: number[] }>;
  delete(id: number): Awaitable<void>;
  /** Removes every entry, or one account's; the ids removed. */
  purge(accountId: string | undefined): Awaitable<number[]>;
  stats(): Awaitable<{ entries: number; bytes: number; semanticEntries: number }>;
  /** Drops expired entries and writes pending last-use times; the ids removed. */
  sweep(now: number): Awaitable<number[]>;
  /** Semantic entries with an id above `afterId`, in id order, 1,000 at most. */
  vectorsAfter(afterId: number, now: number): Awaitable<VectorRow[]>;
  /** The highest id stored (0 when empty). */
  maxId(): Awaitable<number>;
  /**
   * How far below the last id seen a reader must look again for entries committed late: 0 for
   * one file's rowids; a window for a sequence several daemons draw from concurrently.
   */
  readonly idLookback: number;
  flushTouched(): Awaitable<void>;
  close(): Awaitable<void>;
}

/** Hosted images kept in the store (PostgreSQL: shared by every host's daemons). */
export interface ImageStore {
  put(name: string, data: Buffer, contentType: string, expiresAt: number): Awaitable<void>;
  /** The image while unexpired at `now`. */
  get(name: string, now: number): Awaitable<{ data: Buffer; contentType: string; expiresAt: number } | undefined>;
  /** Deletes the images expired at `now`; how many. */
  sweep(now: number): Awaitable<number>;
}

/**
 * A spend counter that renews per period: the spend in the current period is `spentMicros`
 * (lifetime) minus `periodBaseMicros`, the spend when the period that began at `periodStart`
 * began (core/periods.ts computes the periods; admission starts a new one: Store.beginPeriods).
 */
export interface PeriodCounter {
  spentMicros: number;
  periodStart: number;
  periodBaseMicros: number;
  createdAt: number;
}

export interface Funds {
  balanceMicros: number;
  /** The account's lifetime spend and its spend limit per `spendPeriod` (null: none). */
  account: PeriodCounter & { spendLimitMicros: number | null; spendPeriod: string | null };
  /** The key's budget (per `budgetPeriod`, or for its life when null). */
  key: (PeriodCounter & { budgetMicros: number | null; budgetPeriod: string | null }) | undefined;
}

/** New periods to start (each only when the stored one began earlier): the spend so far becomes the base. */
export interface PeriodStarts {
  accountId: string;
  accountStart?: number;
  apiKeyId?: string;
  keyStart?: number;
}

/**
 * Reads that show money pass it first: it applies this process's settled calls that are not
 * in the ledger yet (SQLite's batches; see core/gateway/settlement.ts). True when it applied
 * something. PostgreSQL commits each call before its answer ends, so nothing waits there.
 */
export interface ReadBarrierLike {
  set(hook: (() => boolean) | undefined): void;
  pass(): boolean;
}

/**
 * What a store on a local file also offers: synchronous writes, for the billing journal's
 * batches (settled calls are journaled on this host before their answers end, applied to
 * the database a few milliseconds later). A store without it (PostgreSQL) is written before
 * each answer ends, the calls that end together in one commit.
 */
export interface LocalWrites {
  /** The database file; the billing journal lives beside it. */
  readonly path: string;
  settle(charges: readonly ChargeInput[], rows: readonly NewUsage[]): UsageRecord[];
  hasUsage(requestId: string): boolean;
}

export interface Store {
  readonly backend: 'sqlite' | 'postgres';
  readonly accounts: AccountStore;
  readonly apiKeys: KeyStore;
  readonly managementKeys: KeyStore;
  readonly ledger: LedgerStore;
  readonly usage: UsageStore;
  readonly sessions: SessionStore;
  readonly alerts: AlertStore;
  readonly barrier: ReadBarrierLike;
  /** Present for SQLite: see LocalWrites. */
  readonly local: LocalWrites | undefined;
  /** Where hosted images live; undefined: files beside the database file (one host). */
  readonly images: ImageStore | undefined;
  /** A short description for logs (a file path, or a URL without its password). */
  readonly description: string;

  /**
   * What admission reads for a call, in one round trip: the wallet balance and the API key's
   * budget and spend (`key` undefined when the key is not the account's). Undefined when the
   * account does not exist.
   */
  funds(accountId: string, apiKeyId: string): Awaitable<Funds | undefined>;

  /**
   * Starts new spend periods (the key's budget, the account's spend limit): each counter whose
   * stored period began before the given start takes its spend so far as the new base. Any
   * number of daemons may race: the first write wins, the rest change nothing.
   */
  beginPeriods(starts: PeriodStarts): Awaitable<void>;

  /**
   * Settled calls into the ledger, in one transaction: the charges (one per request id: a
   * second throws a unique violation and nothing is written), balances, key spend, usage rows.
   */
  settle(charges: readonly ChargeInput[], rows: readonly NewUsage[]): Awaitable<UsageRecord[]>;

  /**
   * The first admin account and its management key, in one transaction that refuses (answers
   * undefined) when any admin exists, even with several daemons starting at once.
   */
  createFirstAdmin(account: NewAccount, key: NewKey): Awaitable<{ account: Account; key: KeyRecord } | undefined>;

  /**
   * Remember admission's funds between calls. `sharedWriters`: other daemons write the same
   * store (Redis configured), so the cache must see their commits (a store that cannot tell
   * keeps no cache then).
   */
  cacheFunds(options?: { sharedWriters?: boolean }): void;

  /**
   * Keeps other daemons off the store while this one runs: `alone` (no Redis: limits and holds
   * in this process's memory) excludes every other daemon; `shared` (Redis) admits any
   * number of shared ones. Throws when refused; the lock dies with the process. `onLost`: the
   * lock was lost and another daemon took it (the daemon must stop serving).
   */
  lockServing(mode: 'alone' | 'shared', onLost?: (reason: string) => void): Awaitable<{ release(): Awaitable<void> } | undefined>;

  /** The response cache's entries (opened once, when caching is on). Throws when they cannot be opened. */
  openCache(limits: CacheStoreLimits, logger: Logger): CacheEntryStore;

  /** Proves the store can be read and written now. */
  ping(): Awaitable<void>;

  close(): Promise<void>;
}
