import { batchTotals, toEntry, type ChargeInput, type CreditInput, type LedgerEntry, type LedgerKind, type LedgerRow } from '../ledger.js';
import { isUniqueViolation } from '../errors.js';
import type postgres from 'postgres';
import type { PgSql } from './db.js';
import { toUsageRecord, type NewUsage, type UsageRecord, type UsageRow } from '../usage.js';
import { USAGE_COLUMNS, usageColumns } from './usage.js';
import { UNTRACKED, type FundsWrites } from './funds-cache.js';

/**
 * The wallet on PostgreSQL (issue 16): the same contract as the SQLite `LedgerRepo`, async.
 * The balance and its ledger entries change in one transaction; the account row is locked by
 * its UPDATE, so concurrent writers to one wallet serialize and every `balance_after` is
 * exact. One top-up per reference and one charge per request id are the unique indexes'
 * (a race between two daemons ends with one entry and the other replayed).
 */


type Tx = PgSql;

export class PgLedger {
  /** @param funds told of top-ups and single charges (settlement batches tell it themselves: PgStore.settle) */
  constructor(
    private readonly sql: PgSql,
    private readonly funds: FundsWrites = UNTRACKED,
  ) {}

  /**
   * Adds money. With a reference, a second call with the same reference (from any daemon)
   * returns the first entry instead of applying again (`replayed: true`).
   */
  credit(kind: 'topup' | 'refund', input: CreditInput): Promise<{ entry: LedgerEntry; replayed: boolean }> {
    return this.funds.run(() => this.creditNow(kind, input));
  }

  private async creditNow(kind: 'topup' | 'refund', input: CreditInput): Promise<{ entry: LedgerEntry; replayed: boolean }> {
    if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros <= 0) throw new RangeError('credit amount must be a positive integer of µINR');
    try {
      return await this.sql.begin(async (tx) => {
        const entry = await append(tx as unknown as Tx, kind, input.accountId, input.amountMicros, {
          reference: input.reference ?? null,
          note: input.note ?? null,
          created_by: input.createdBy ?? null,
          request_id: null,
          api_key_id: null,
          now: input.now,
        });
        return { entry, replayed: false };
      });
    } catch (error) {
      // The transaction rolled back (balance included); the first entry answers.
      if (input.reference && isUniqueViolation(error)) {
        const existing = await this.byReference(input.accountId, kind, input.reference);
        if (existing) return { entry: existing, replayed: true };
      }
      throw error;
    }
  }

  /**
   * A settlement batch in one statement (the group commit of the calls that ended together):
   * every account's balance and every key's spend in one UPDATE each, one entry per charge
   * with its running balance, and the calls' usage rows; one round trip, committed as one
   * transaction (issue 32: BEGIN, the statements and COMMIT were three round trips, with the
   * wallet's row locked across two of them, and settlement batches queued behind that lock).
   * A request id already charged makes the whole batch fail (unique index), as in SQLite; the
   * caller then applies the calls one by one. So does an account that does not exist.
   *
   * Locks are taken in one order, so two batches (of one daemon or of several) never
   * deadlock: the accounts first, in id order (byte order, as JavaScript sorts ASCII), then
   * the keys, in id order, then the rows' inserts (the usage row's foreign key locks its
   * account, already held). A WITH query's parts run in no set order; each part here waits
   * for the one before it through a scalar subquery over it in its WHERE (PostgreSQL
   * evaluates one before the first row it filters; MATERIALIZED keeps a SELECT part from being
   * folded into the part that reads it, and `count(fail)` makes the missing-account check
   * compute the cast that fails). The first part marks the statement's transaction as a
   * settlement (`gateway.settling`): its changes to balances and spends send no notice on
   * gateway_funds (migration 9), since the daemon that commits them applies them to its own
   * funds cache (funds-cache.ts).
   */
  async chargeMany(inputs: readonly ChargeInput[], usage: readonly NewUsage[] = []): Promise<UsageRecord[]> {
    const { perAccount, perKey } = batchTotals(inputs);
    if (inputs.length === 0 && usage.length === 0) return [];
    // No charge (calls that failed, or cost nothing): the usage rows alone. Through the whole
    // statement its wallet UPDATEs would fire their triggers with no row, and no settlement mark.
    if (inputs.length === 0) {
      const only = await this.sql<UsageRow[]>`
        INSERT INTO usage (${this.sql.unsafe(USAGE_COLUMNS.join(', '))})
          SELECT ${this.sql.unsafe(USAGE_COLUMNS.join(', '))} FROM jsonb_populate_recordset(NULL::usage, ${this.sql.json(usage.map(usageColumns) as unknown as postgres.JSONValue)}::jsonb)
          RETURNING *`;
      return only.map(toUsageRecord);
    }
    const byId = ([a]: [string, unknown], [b]: [string, unknown]): number => (a < b ? -1 : a > b ? 1 : 0);
    const accounts = [...perAccount].sort(byId);
    const keys = [...perKey].sort(byId);
    const accountIds = accounts.map(([id]) => id);
    const keyIds = keys.map(([id]) => id);
    const rows = await this.sql<UsageRow[]>`
      WITH quiet AS MATERIALIZED (SELECT set_config('gateway.settling', 'on', true) AS s),
      la AS MATERIALIZED (SELECT id FROM accounts WHERE id = ANY(${accountIds}::text[]) AND (SELECT count(s) FROM quiet) = 1 ORDER BY id COLLATE "C" FOR UPDATE),
      missing AS MATERIALIZED (SELECT ('account ' || q.id || ' does not exist')::integer AS fail FROM unnest(${accountIds}::text[]) AS q(id) WHERE q.id NOT IN (SELECT id FROM la)),
      ua AS (
        UPDATE accounts AS a SET balance_micros = a.balance_micros - t.total, spent_micros = a.spent_micros + t.total, updated_at = t.now
          FROM unnest(${accountIds}::text[], ${accounts.map(([, a]) => a.total)}::bigint[], ${accounts.map(([, a]) => a.now)}::bigint[]) AS t(id, total, now)
          WHERE a.id = t.id AND (SELECT count(fail) FROM missing) = 0
          RETURNING a.id, a.balance_micros),
      lk AS MATERIALIZED (SELECT id FROM api_keys WHERE id = ANY(${keyIds}::text[]) AND (SELECT count(*) FROM ua) >= 0 ORDER BY id COLLATE "C" FOR UPDATE),
      uk AS (
        UPDATE api_keys AS k SET spent_micros = k.spent_micros + t.total
          FROM unnest(${keyIds}::text[], ${keys.map(([, total]) => total)}::bigint[]) AS t(id, total)
          WHERE k.id = t.id AND (SELECT count(*) FROM lk) >= 0
          RETURNING 1),
      -- Each entry's balance after it: the account's balance after the whole batch (ua) plus the
      -- charges that follow it in the batch.
      l AS (
        INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, request_id, api_key_id, created_at)
          SELECT t.account_id, 'charge', -t.amount, ua.balance_micros + coalesce(sum(t.amount) OVER (PARTITION BY t.account_id ORDER BY t.ord DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0), t.request_id, t.api_key_id, t.created_at
          FROM unnest(${inputs.map((i) => i.accountId)}::text[], ${inputs.map((i) => i.amountMicros)}::bigint[], ${inputs.map((i) => i.requestId)}::text[], ${inputs.map((i) => i.apiKeyId ?? null)}::text[], ${inputs.map((i) => i.now)}::bigint[]) WITH ORDINALITY AS t(account_id, amount, request_id, api_key_id, created_at, ord)
          JOIN ua ON ua.id = t.account_id
          WHERE (SELECT count(*) FROM uk) >= 0
          ORDER BY t.ord
          RETURNING 1)
      INSERT INTO usage (${this.sql.unsafe(USAGE_COLUMNS.join(', '))})
        SELECT ${this.sql.unsafe(USAGE_COLUMNS.join(', '))} FROM jsonb_populate_recordset(NULL::usage, ${this.sql.json(usage.map(usageColumns) as unknown as postgres.JSONValue)}::jsonb)
        WHERE (SELECT count(*) FROM l) >= 0
        RETURNING *`;
    return rows.map(toUsageRecord);
  }

  /** One charge, once per request id (a second returns the first entry). */
  charge(input: ChargeInput): Promise<{ entry: LedgerEntry; replayed: boolean }> {
    return this.funds.run(() => this.chargeNow(input));
  }

  private async chargeNow(input: ChargeInput): Promise<{ entry: LedgerEntry; replayed: boolean }> {
    if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros < 0) throw new RangeError('charge amount must be a non-negative integer of µINR');
    try {
      return await this.sql.begin(async (raw) => {
        const tx = raw as unknown as Tx;
        const entry = await append(tx, 'charge', input.accountId, -input.amountMicros, {
          reference: null,
          note: null,
          created_by: null,
          request_id: input.requestId,
          api_key_id: input.apiKeyId ?? null,
          now: input.now,
        });
        if (input.apiKeyId && input.amountMicros > 0) await tx`UPDATE api_keys SET spent_micros = spent_micros + ${input.amountMicros} WHERE id = ${input.apiKeyId}`;
        return { entry, replayed: false };
      });
    } catch (error) {
      if (isUniqueViolation(error)) {
        const [row] = await this.sql<LedgerRow[]>`SELECT * FROM ledger WHERE request_id = ${input.requestId} AND kind = 'charge'`;
        if (row) return { entry: toEntry(row), replayed: true };
      }
      throw error;
    }
  }

  async byReference(accountId: string, kind: LedgerKind, reference: string): Promise<LedgerEntry | undefined> {
    const [row] = await this.sql<LedgerRow[]>`SELECT * FROM ledger WHERE account_id = ${accountId} AND kind = ${kind} AND reference = ${reference}`;
    return row && toEntry(row);
  }

  /** Newest first; `before` is an entry id for paging. */
  async list(accountId: string, limit: number, before?: number): Promise<LedgerEntry[]> {
    const rows =
      before === undefined
        ? await this.sql<LedgerRow[]>`SELECT * FROM ledger WHERE account_id = ${accountId} ORDER BY id DESC LIMIT ${limit}`
        : await this.sql<LedgerRow[]>`SELECT * FROM ledger WHERE account_id = ${accountId} AND id < ${before} ORDER BY id DESC LIMIT ${limit}`;
    return rows.map(toEntry);
  }

  /** Sum of the account's ledger, for consistency checks against the stored balance. */
  async sum(accountId: string): Promise<number> {
    const [row] = await this.sql<Array<{ total: number }>>`SELECT coalesce(sum(amount_micros), 0)::bigint AS total FROM ledger WHERE account_id = ${accountId}`;
    return row?.total ?? 0;
  }
}

async function append(
  tx: Tx,
  kind: LedgerKind,
  accountId: string,
  amount: number,
  extra: Pick<LedgerRow, 'reference' | 'request_id' | 'api_key_id' | 'note' | 'created_by'> & { now: number },
): Promise<LedgerEntry> {
  const [applied] = await tx<Array<{ balance_micros: number }>>`UPDATE accounts SET balance_micros = balance_micros + ${amount}, spent_micros = spent_micros + ${Math.max(0, -amount)}, updated_at = ${extra.now} WHERE id = ${accountId} RETURNING balance_micros`;
  if (!applied) throw new Error(`account ${accountId} does not exist`);
  const [row] = await tx<LedgerRow[]>`
    INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, reference, request_id, api_key_id, note, created_by, created_at)
    VALUES (${accountId}, ${kind}, ${amount}, ${applied.balance_micros}, ${extra.reference}, ${extra.request_id}, ${extra.api_key_id}, ${extra.note}, ${extra.created_by}, ${extra.now})
    RETURNING *`;
  return toEntry(row as LedgerRow);
}
