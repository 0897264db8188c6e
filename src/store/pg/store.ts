import type { ReservedSql } from 'postgres';
import type { Account } from '../accounts.js';
import type { KeyRecord, NewKey } from '../keys.js';
import type { ChargeInput } from '../ledger.js';
import type { Funds, NewAccount, ReadBarrierLike, Store } from '../types.js';
import type { NewUsage, UsageRecord } from '../usage.js';
import { PgAccounts, PgKeys, PgSessions } from './accounts.js';
import { connectPostgres, migratePostgres, type PgOptions, type PgSql } from './db.js';
import { PgLedger } from './ledger.js';
import { PgUsage } from './usage.js';

/** Serializes `createFirstAdmin` across daemons (transaction-scoped). */
const FIRST_ADMIN_LOCK = 0x67617465696en; // "gatein"
/** Held for a daemon's life: exclusive without Redis, shared with it. */
const SERVING_LOCK = 0x676174657376n; // "gatesv"

/** Nothing waits for a barrier here: every settled call is committed before its answer ends. */
const NO_BARRIER: ReadBarrierLike = {
  set: () => undefined,
  pass: () => false,
};

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
  readonly barrier = NO_BARRIER;
  readonly local = undefined;
  private closed = false;

  constructor(
    readonly sql: PgSql,
    readonly description: string,
  ) {
    this.accounts = new PgAccounts(sql);
    this.apiKeys = new PgKeys(sql, 'api');
    this.managementKeys = new PgKeys(sql, 'management');
    this.ledger = new PgLedger(sql);
    this.usage = new PgUsage(sql);
    this.sessions = new PgSessions(sql);
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
    return new PgStore(sql, redactUrl(url));
  }

  async funds(accountId: string, apiKeyId: string): Promise<Funds | undefined> {
    const [row] = await this.sql<Array<{ balance_micros: number; budget_micros: number | null; spent_micros: number | null }>>`
      SELECT a.balance_micros, k.budget_micros, k.spent_micros FROM accounts a LEFT JOIN api_keys k ON k.id = ${apiKeyId} AND k.account_id = a.id WHERE a.id = ${accountId}`;
    if (!row) return undefined;
    return { balanceMicros: row.balance_micros, key: row.spent_micros === null ? undefined : { budgetMicros: row.budget_micros, spentMicros: row.spent_micros } };
  }

  async settle(charges: readonly ChargeInput[], rows: readonly NewUsage[]): Promise<UsageRecord[]> {
    let records: UsageRecord[] = [];
    await this.ledger.chargeMany(charges, async (tx) => {
      records = await this.usage.insertMany(rows, tx);
    });
    return records;
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
   * No funds cache: reading a wallet is one indexed round trip, and there is no cheap way to
   * know no other writer (a CLI top-up on another host) changed it since.
   */
  cacheFunds(): void {}

  /**
   * A session-level advisory lock on a connection kept for the daemon's life: PostgreSQL drops
   * it when that connection ends, a daemon that dies included (within TCP keepalive).
   */
  async lockServing(mode: 'alone' | 'shared'): Promise<{ release(): Promise<void> }> {
    const connection: ReservedSql<{ bigint: number }> = await this.sql.reserve();
    const [row] =
      mode === 'alone'
        ? await connection<Array<{ locked: boolean }>>`SELECT pg_try_advisory_lock(${String(SERVING_LOCK)}::bigint) AS locked`
        : await connection<Array<{ locked: boolean }>>`SELECT pg_try_advisory_lock_shared(${String(SERVING_LOCK)}::bigint) AS locked`;
    if (!row?.locked) {
      connection.release();
      throw new Error(
        mode === 'alone'
          ? `another gateway daemon is serving ${this.description}: without redis configured only one daemon may serve a database (configure redis on every daemon to run several)`
          : `a gateway daemon without redis is serving ${this.description}: stop it, or configure redis on it too, before starting more daemons on this database`,
      );
    }
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        await (mode === 'alone'
          ? connection`SELECT pg_advisory_unlock(${String(SERVING_LOCK)}::bigint)`
          : connection`SELECT pg_advisory_unlock_shared(${String(SERVING_LOCK)}::bigint)`
        ).catch(() => undefined);
        connection.release();
      },
    };
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
