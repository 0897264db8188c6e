import postgres from 'postgres';
import type { Account } from '../accounts.js';
import type { KeyRecord, NewKey } from '../keys.js';
import type { ChargeInput } from '../ledger.js';
import type { Funds, NewAccount, PeriodStarts, ReadBarrierLike, Store } from '../types.js';
import type { NewUsage, UsageRecord } from '../usage.js';
import { PgAccounts, PgKeys, PgSessions } from './accounts.js';
import { connectPostgres, migratePostgres, type PgOptions, type PgSql } from './db.js';
import { PgFundsReader } from './funds-reader.js';
import { PgFundsCache } from './funds-cache.js';
import type { Logger } from 'pino';
import type { CacheStoreLimits } from '../cache-entries.js';
import { PgCacheEntries } from './cache-entries.js';
import { PgImages } from './images.js';
import { PgLedger } from './ledger.js';
import { PgAlerts } from './alerts.js';
import { PgUsage } from './usage.js';

/** Serializes `createFirstAdmin` across daemons (transaction-scoped). */
const FIRST_ADMIN_LOCK = 0x67617465696en; // "gatein"
/** Held for a daemon's life: exclusive without Redis, shared with it. */
const SERVING_LOCK = 0x676174657376n; // "gatesv"
/** How often the serving lock's session is checked. */
const LOCK_CHECK_MS = 3000;

/**
 * The PostgreSQL store (issue 16): daemons on several hosts share one database. Every
 * settled call is committed here before its answer's last bytes (settlement.ts groups the
 * calls that end together into one commit), so a host that never comes back loses no charge.
 */
export class PgStore implements Store {
  readonly backend = 'postgres' as const;
  readonly accounts: PgAccounts;
  readonly apiKeys: PgKeys;
  readonly managementKeys: PgKeys;
  readonly ledger: PgLedger;
  readonly usage: PgUsage;
  readonly sessions: PgSessions;
  readonly alerts: PgAlerts;
  /**
   * Nothing waits for a barrier here (every settled call is committed before its answer
   * ends); passing it empties the funds cache, so that a refusal, or an alert's check, reads
   * the wallet as it is.
   */
  readonly barrier: ReadBarrierLike = {
    set: () => undefined,
    pass: () => this.fundsCache.drop(),
  };
  readonly local = undefined;
  readonly images: PgImages;
  readonly description: string;
  private closed = false;
  private readonly fundsReader: PgFundsReader;
  /** Holds nothing until cacheFunds() (a daemon without Redis); told of own writes either way. */
  readonly fundsCache = new PgFundsCache();

  constructor(
    readonly sql: PgSql,
    private readonly url: string,
  ) {
    this.description = redactUrl(url);
    this.accounts = new PgAccounts(sql, this.fundsCache);
    this.apiKeys = new PgKeys(sql, 'api', this.fundsCache);
    this.managementKeys = new PgKeys(sql, 'management');
    this.ledger = new PgLedger(sql, this.fundsCache);
    this.usage = new PgUsage(sql);
    this.sessions = new PgSessions(sql);
    this.alerts = new PgAlerts(sql);
    this.images = new PgImages(sql);
    this.fundsReader = new PgFundsReader(sql);
  }

  /** Connects and brings the schema up to date (once, when several daemons start together). */
  static async open(url: string, options: PgOptions = {}): Promise<PgStore> {
    const sql = connectPostgres(url, options);
    try {
      await migratePostgres(sql);
    } catch (error) {
      await sql.end({ timeout: 1 }).catch(() => undefined);
      throw error;
    }
    return new PgStore(sql, url);
  }

  /** From the funds cache when it holds them (funds-cache.ts), else several calls' reads in one statement (funds-reader.ts). */
  funds(accountId: string, apiKeyId: string): Promise<Funds | undefined> {
    return this.fundsCache.read(accountId, apiKeyId, () => this.fundsReader.read(accountId, apiKeyId));
  }

  beginPeriods(starts: PeriodStarts): Promise<void> {
    return this.fundsCache.run(() => this.beginPeriodsNow(starts));
  }

  private async beginPeriodsNow(starts: PeriodStarts): Promise<void> {
    const { accountId, apiKeyId, keyStart, accountStart } = starts;
    if (keyStart !== undefined && apiKeyId !== undefined) {
      await this.sql`UPDATE api_keys SET period_base_micros = spent_micros, period_start = ${keyStart} WHERE id = ${apiKeyId} AND account_id = ${accountId} AND period_start < ${keyStart}`;
    }
    if (accountStart !== undefined) {
      await this.sql`UPDATE accounts SET period_base_micros = spent_micros, period_start = ${accountStart} WHERE id = ${accountId} AND period_start < ${accountStart}`;
    }
  }

  async settle(charges: readonly ChargeInput[], rows: readonly NewUsage[]): Promise<UsageRecord[]> {
    // The usage rows go in the charges' statement (one round trip); the funds cache takes the
    // charges once committed, before settlement releases their holds.
    return this.fundsCache.settle(charges, () => this.ledger.chargeMany(charges, rows));
  }

  async createFirstAdmin(account: NewAccount, key: NewKey): Promise<{ account: Account; key: KeyRecord } | undefined> {
    return this.sql.begin(async (raw) => {
      const tx = raw as unknown as PgSql;
      await tx`SELECT pg_advisory_xact_lock(${String(FIRST_ADMIN_LOCK)}::bigint)`;
      if ((await new PgAccounts(tx).countAdmins()) > 0) return undefined;
      const created = await new PgAccounts(tx).insert(account);
      return { account: created, key: await new PgKeys(tx, 'management').insert({ ...key, accountId: created.id }) };
    });
  }

  /**
   * Remember admission's funds (funds-cache.ts) when this daemon serves the database alone:
   * it applies its own settlement batches, and hears of every other change through notices.
   * With `sharedWriters` (daemons on several hosts, through Redis) every call reads the
   * database: another daemon's charge is released from Redis as soon as it commits, and
   * until its notice arrived a cache would show that money twice.
   */
  cacheFunds(options: { sharedWriters?: boolean } = {}): void {
    if (!options.sharedWriters) this.fundsCache.start(this.url);
  }

  /**
   * A session-level advisory lock, on a connection of its own kept for the daemon's life:
   * PostgreSQL drops it when that session ends, a dead daemon's included (as soon as the
   * server sees the connection gone; TCP keepalive bounds it for a lost host). The session is
   * checked every few seconds; when it was cut (a server restart, a network cut), the lock is
   * taken again on a new one, and `onLost` is told if another daemon took it meanwhile.
   */
  async lockServing(mode: 'alone' | 'shared', onLost: (reason: string) => void = () => undefined): Promise<{ release(): Promise<void> }> {
    // No idle timeout and no maximum lifetime (the driver's default recycles a connection
    // after 30 to 60 minutes, which would drop the lock).
    const client = postgres(this.url, { max: 1, connect_timeout: 5, onnotice: () => undefined, idle_timeout: 0, max_lifetime: 0 });
    const take = async (): Promise<{ locked: boolean; pid: number }> => {
      const [row] =
        mode === 'alone'
          ? await client<Array<{ locked: boolean; pid: number }>>`SELECT pg_try_advisory_lock(${String(SERVING_LOCK)}::bigint) AS locked, pg_backend_pid() AS pid`
          : await client<Array<{ locked: boolean; pid: number }>>`SELECT pg_try_advisory_lock_shared(${String(SERVING_LOCK)}::bigint) AS locked, pg_backend_pid() AS pid`;
      return row ?? { locked: false, pid: -1 };
    };
    const refused = () =>
      mode === 'alone'
        ? `another gateway daemon is serving ${this.description}: without redis configured only one daemon may serve a database (configure redis on every daemon to run several)`
        : `a gateway daemon without redis is serving ${this.description}: stop it, or configure redis on it too, before starting more daemons on this database`;
    let held: { locked: boolean; pid: number };
    try {
      held = await take();
    } catch (error) {
      await client.end({ timeout: 1 }).catch(() => undefined);
      throw error;
    }
    if (!held.locked) {
      await client.end({ timeout: 1 }).catch(() => undefined);
      throw new Error(refused());
    }
    let stopped = false;
    let released = false;
    let checking = false;
    const check = async (): Promise<void> => {
      if (stopped || checking) return;
      checking = true;
      try {
        const [row] = await client<Array<{ pid: number }>>`SELECT pg_backend_pid() AS pid`;
        if (stopped || row?.pid === held.pid) return;
        // A new session: the old one (and its lock) is gone. Take the lock again.
        held = await take();
        if (!held.locked && !stopped) {
          stopped = true;
          onLost(refused());
        }
      } catch {
        // The database is unreachable: checked again on the next tick (readiness reports it).
      } finally {
        checking = false;
      }
    };
    const timer = setInterval(() => void check(), LOCK_CHECK_MS);
    timer.unref();
    return {
      release: async () => {
        if (released) return;
        released = true;
        stopped = true;
        clearInterval(timer);
        // Ending the session drops its lock.
        await client.end({ timeout: 2 }).catch(() => undefined);
      },
    };
  }

  /** The response cache's entries, in a table every daemon shares. */
  openCache(limits: CacheStoreLimits, logger: Logger): PgCacheEntries {
    return new PgCacheEntries(this.sql, limits, (error) => logger.warn({ err: error }, 'could not count the response cache entries'));
  }

  /** Readable and writable: a read-only server (a standby after failover) is not ready. */
  async ping(): Promise<void> {
    const [row] = await this.sql<Array<{ writable: boolean }>>`SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable`;
    if (!row?.writable) throw new Error('the database is read-only');
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.fundsCache.close();
    await this.sql.end({ timeout: 5 });
  }
}

/** The URL without its password, for logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable url)';
  }
}
