import { batchTotals, toEntry, type ChargeInput, type CreditInput, type LedgerEntry, type LedgerKind, type LedgerRow } from '../ledger.js';
import { isUniqueViolation } from '../errors.js';
import type { PgSql } from './db.js';

/**
 * The wallet on PostgreSQL (issue 16): the same contract as the SQLite `LedgerRepo`, async.
 * The balance and its ledger entries change in one transaction; the account row is locked by
 * its UPDATE, so concurrent writers to one wallet serialize and every `balance_after` is
 * exact. One top-up per reference and one charge per request id are the unique indexes'
 * (a race between two daemons ends with one entry and the other replayed).
 */


type Tx = PgSql;

export class PgLedger {
  constructor(private readonly sql: PgSql) {}

  /**
   * Adds money. With a reference, a second call with the same reference (from any daemon)
   * returns the first entry instead of applying again (`replayed: true`).
   */
  async credit(kind: 'topup' | 'refund', input: CreditInput): Promise<{ entry: LedgerEntry; replayed: boolean }> {
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
   * A settlement batch in one transaction (the group commit of the calls that ended
   * together): one balance update per account and one spend update per key, then one entry
   * per charge with its running balance. A request id already charged makes the whole batch
   * fail (unique index), as in SQLite; the caller then applies the calls one by one.
   */
  async chargeMany(inputs: readonly ChargeInput[], more?: (tx: Tx) => Promise<void>): Promise<void> {
    const { perAccount, perKey } = batchTotals(inputs);
    await this.sql.begin(async (raw) => {
      const tx = raw as unknown as Tx;
      // Accounts in a fixed order: two daemons' batches lock shared wallets without deadlock.
      const running = new Map<string, number>();
      for (const [accountId, { total, now }] of [...perAccount].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        const [applied] = await tx<Array<{ balance_micros: number }>>`UPDATE accounts SET balance_micros = balance_micros - ${total}, spent_micros = spent_micros + ${total}, updated_at = ${now} WHERE id = ${accountId} RETURNING balance_micros`;
        if (!applied) throw new Error(`account ${accountId} does not exist`);
        running.set(accountId, applied.balance_micros + total);
      }
      const rows = inputs.map((input) => {
        const balanceAfter = (running.get(input.accountId) as number) - input.amountMicros;
        running.set(input.accountId, balanceAfter);
        return { account_id: input.accountId, kind: 'charge', amount_micros: -input.amountMicros, balance_after_micros: balanceAfter, request_id: input.requestId, api_key_id: input.apiKeyId ?? null, created_at: input.now };
      });
      for (let i = 0; i < rows.length; i += 1000) await tx`INSERT INTO ledger ${tx(rows.slice(i, i + 1000))}`;
      for (const [keyId, total] of [...perKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) await tx`UPDATE api_keys SET spent_micros = spent_micros + ${total} WHERE id = ${keyId}`;
      if (more) await more(tx);
    });
  }

  /** One charge, once per request id (a second returns the first entry). */
  async charge(input: ChargeInput): Promise<{ entry: LedgerEntry; replayed: boolean }> {
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
