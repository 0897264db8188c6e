import { toAccount, type Account, type AccountRow, type Role } from '../accounts.js';
import type { KeyKind } from '../../core/keys.js';
import { listColumn, toKeyRecord, type KeyChanges, type KeyRecord, type KeyRow, type NewKey } from '../keys.js';
import { readRetrying, type PgSql } from './db.js';
import { UNTRACKED, type FundsWrites } from './funds-cache.js';

/**
 * Accounts, keys and ended sessions on PostgreSQL (issue 16): the SQLite repos' contracts,
 * async (PgStore, store.ts).
 */

export class PgAccounts {
  /** @param funds told of writes to what admission reads (the funds cache) */
  constructor(
    private readonly sql: PgSql,
    private readonly funds: FundsWrites = UNTRACKED,
  ) {}

  /** Inserts an account; a taken e-mail (whatever its case) is a unique violation (23505). */
  async insert(input: { id: string; email: string; name: string; passwordHash: string | null; role: Role; now: number }): Promise<Account> {
    const [row] = await this.sql<AccountRow[]>`
      INSERT INTO accounts (id, email, name, password_hash, role, balance_micros, created_at, updated_at)
      VALUES (${input.id}, ${input.email}, ${input.name}, ${input.passwordHash}, ${input.role}, 0, ${input.now}, ${input.now}) RETURNING *`;
    return toAccount(row as AccountRow);
  }

  async byId(id: string): Promise<Account | undefined> {
    const [row] = await this.sql<AccountRow[]>`SELECT * FROM accounts WHERE id = ${id}`;
    return row && toAccount(row);
  }

  /** By e-mail, whatever its case (SQLite's COLLATE NOCASE). */
  async byEmail(email: string): Promise<Account | undefined> {
    const [row] = await this.sql<AccountRow[]>`SELECT * FROM accounts WHERE lower(email) = lower(${email})`;
    return row && toAccount(row);
  }

  async list(limit: number, offset: number): Promise<Account[]> {
    return (await this.sql<AccountRow[]>`SELECT * FROM accounts ORDER BY created_at, id LIMIT ${limit} OFFSET ${offset}`).map(toAccount);
  }

  async setSpendLimit(id: string, limitMicros: number | null, period: string | null, now: number): Promise<Account | undefined> {
    const [row] = await this.funds.run(() => this.sql<AccountRow[]>`
      UPDATE accounts SET spend_limit_micros = ${limitMicros}, spend_period = ${period},
        period_start = CASE WHEN spend_period IS NOT DISTINCT FROM ${period}::text THEN period_start ELSE 0 END, updated_at = ${now}
      WHERE id = ${id} RETURNING *`);
    return row && toAccount(row);
  }

  async countAdmins(): Promise<number> {
    const [row] = await this.sql<Array<{ n: number }>>`SELECT count(*)::bigint AS n FROM accounts WHERE role = 'admin'`;
    return row?.n ?? 0;
  }
}

export class PgKeys {
  private readonly table: 'api_keys' | 'management_keys';

  /** @param funds told of writes to what admission reads (the funds cache) */
  constructor(
    private readonly sql: PgSql,
    readonly kind: KeyKind,
    private readonly funds: FundsWrites = UNTRACKED,
  ) {
    this.table = kind === 'api' ? 'api_keys' : 'management_keys';
  }

  async insert(key: NewKey): Promise<KeyRecord> {
    if (this.kind === 'api') {
      await this.sql`
        INSERT INTO api_keys (id, account_id, name, key_hash, masked_key, rate_limit, budget_micros, expires_at, created_at, cache, models, allowed_ips, max_parallel, tpm_limit, budget_period)
        VALUES (${key.id}, ${key.accountId}, ${key.name}, ${key.keyHash}, ${key.maskedKey}, ${key.rateLimit ?? 10_000}, ${key.budgetMicros ?? null}, ${key.expiresAt}, ${key.now}, ${key.cache !== false}, ${listColumn(key.models)}, ${listColumn(key.allowedIps)}, ${key.maxParallel ?? null}, ${key.tpmLimit ?? null}, ${key.budgetPeriod ?? null})`;
    } else {
      await this.sql`
        INSERT INTO management_keys (id, account_id, name, key_hash, masked_key, expires_at, created_at)
        VALUES (${key.id}, ${key.accountId}, ${key.name}, ${key.keyHash}, ${key.maskedKey}, ${key.expiresAt}, ${key.now})`;
    }
    return (await this.byId(key.id)) as KeyRecord;
  }

  async byId(id: string): Promise<KeyRecord | undefined> {
    const [row] = await this.sql<KeyRow[]>`SELECT ${this.columns()} FROM ${this.sql(this.table)} WHERE id = ${id}`;
    return row && this.toRecord(row);
  }

  async byHash(hash: string): Promise<KeyRecord | undefined> {
    return readRetrying(() => this.byHashOnce(hash));
  }

  private async byHashOnce(hash: string): Promise<KeyRecord | undefined> {
    const [row] = await this.sql<KeyRow[]>`SELECT ${this.columns()} FROM ${this.sql(this.table)} WHERE key_hash = ${hash}`;
    return row && this.toRecord(row);
  }

  async listByAccount(accountId: string): Promise<KeyRecord[]> {
    const rows = await this.sql<KeyRow[]>`SELECT ${this.columns()} FROM ${this.sql(this.table)} WHERE account_id = ${accountId} ORDER BY created_at, id`;
    return rows.map((row) => this.toRecord(row));
  }

  async update(id: string, changes: KeyChanges): Promise<KeyRecord | undefined> {
    await this.funds.run(() => this.write(id, changes));
    return this.byId(id);
  }

  private async write(id: string, changes: KeyChanges): Promise<void> {
    const set: Record<string, unknown> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.expiresAt !== undefined) set.expires_at = changes.expiresAt;
    if (this.kind === 'api') {
      if (changes.rateLimit !== undefined) set.rate_limit = changes.rateLimit;
      if (changes.budgetMicros !== undefined) set.budget_micros = changes.budgetMicros;
      if (changes.cache !== undefined) set.cache = changes.cache;
      if (changes.models !== undefined) set.models = listColumn(changes.models);
      if (changes.allowedIps !== undefined) set.allowed_ips = listColumn(changes.allowedIps);
      if (changes.maxParallel !== undefined) set.max_parallel = changes.maxParallel;
      if (changes.tpmLimit !== undefined) set.tpm_limit = changes.tpmLimit;
      if (changes.budgetPeriod !== undefined) {
        // A changed period starts over (the same one sent again keeps its spend).
        await this.sql`UPDATE api_keys SET period_start = 0 WHERE id = ${id} AND budget_period IS DISTINCT FROM ${changes.budgetPeriod}::text`;
        set.budget_period = changes.budgetPeriod;
      }
    }
    const columns = Object.keys(set);
    if (columns.length > 0) await this.sql`UPDATE ${this.sql(this.table)} SET ${this.sql(set as Record<string, string | number | boolean | null>, columns)} WHERE id = ${id}`;
  }

  /** Sets revoked_at once; revoking again keeps the first time. */
  async revoke(id: string, now: number): Promise<KeyRecord | undefined> {
    await this.sql`UPDATE ${this.sql(this.table)} SET revoked_at = coalesce(revoked_at, ${now}) WHERE id = ${id}`;
    return this.byId(id);
  }

  /**
   * Last use times collected in memory, in one transaction. The rows are locked in id order
   * first (byte order, as JavaScript sorts ASCII), as a settlement batch locks the keys whose
   * spend it adds to (ledger.ts). A single UPDATE … FROM unnest() locks them in its join's
   * order: against another daemon's batch that deadlocked (found by the soak, test/soak/).
   */
  async touchMany(entries: Iterable<[string, number]>): Promise<void> {
    const list = [...entries];
    if (list.length === 0) return;
    const ids = list.map(([id]) => id);
    const times = list.map(([, at]) => at);
    await this.sql.begin(async (tx) => {
      await tx`SELECT id FROM ${tx(this.table)} WHERE id = ANY(${ids}::text[]) ORDER BY id COLLATE "C" FOR UPDATE`;
      await tx`
        UPDATE ${tx(this.table)} AS k SET last_used_at = greatest(coalesce(k.last_used_at, 0), t.at)
          FROM unnest(${ids}::text[], ${times}::bigint[]) AS t(id, at) WHERE k.id = t.id`;
    });
  }

  private columns() {
    return this.kind === 'api'
      ? this.sql`*`
      : this.sql`id, account_id, name, key_hash, masked_key, NULL::integer AS rate_limit, NULL::bigint AS budget_micros, 0::bigint AS spent_micros, expires_at, revoked_at, last_used_at, created_at, true AS cache, NULL::text AS models, NULL::text AS allowed_ips, NULL::integer AS max_parallel, NULL::bigint AS tpm_limit, NULL::text AS budget_period, 0::bigint AS period_start, 0::bigint AS period_base_micros`;
  }

  private toRecord(row: KeyRow): KeyRecord {
    return toKeyRecord(this.kind, row);
  }
}

export class PgSessions {
  constructor(private readonly sql: PgSql) {}

  async revoke(jti: string, accountId: string, expiresAt: number): Promise<void> {
    await this.sql`INSERT INTO session_revocations (jti, account_id, expires_at) VALUES (${jti}, ${accountId}, ${expiresAt}) ON CONFLICT (jti) DO NOTHING`;
  }

  async isRevoked(jti: string): Promise<boolean> {
    return (await this.sql`SELECT 1 FROM session_revocations WHERE jti = ${jti}`).length > 0;
  }

  async purge(now: number): Promise<number> {
    return (await this.sql`DELETE FROM session_revocations WHERE expires_at <= ${now}`).count;
  }
}
