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
   * together): every account's balance and every key's spend in one UPDATE each, one entry
   * per charge with its running balance. A request id already charged makes the whole batch
   * fail (unique index), as in SQLite; the caller then applies the calls one by one.
   *
   * The statements are sent together, without waiting for one answer before the next (the
   * driver pipelines a transaction's queries; PostgreSQL still runs them in order, each seeing
   * the ones before): one round trip for the batch and one for its COMMIT, where a statement
   * per account and per key took one each (issue 32). The rows are locked in id order first
   * (byte order, as JavaScript sorts ASCII) and accounts before keys, so two daemons' batches
   * never deadlock: an UPDATE … FROM unnest() alone locks in its join's order. `more` adds the
   * batch's other statements (the usage rows), sent with them.
   */
  async chargeMany<T>(inputs: readonly ChargeInput[], more?: (tx: Tx) => Promise<T>): Promise<T | undefined> {
    const { perAccount, perKey } = batchTotals(inputs);
    const byId = ([a]: [string, unknown], [b]: [string, unknown]): number => (a < b ? -1 : a > b ? 1 : 0);
    const accounts = [...perAccount].sort(byId);
    const keys = [...perKey].sort(byId);
    const accountIds = accounts.map(([id]) => id);
    return this.sql.begin(async (raw) => {
      const tx = raw as unknown as Tx;
      const sent: Array<Promise<unknown>> = [];
      const locked = accounts.length === 0 ? Promise.resolve([]) : tx<Array<{ id: string }>>`SELECT id FROM accounts WHERE id = ANY(${accountIds}::text[]) ORDER BY id COLLATE "C" FOR UPDATE`;
      sent.push(locked);
      if (accounts.length > 0) {
        sent.push(tx`
          UPDATE accounts AS a SET balance_micros = a.balance_micros - t.total, spent_micros = a.spent_micros + t.total, updated_at = t.now
            FROM unnest(${accountIds}::text[], ${accounts.map(([, a]) => a.total)}::bigint[], ${accounts.map(([, a]) => a.now)}::bigint[]) AS t(id, total, now)
            WHERE a.id = t.id`);
      }
      if (inputs.length > 0) {
        // Each entry's balance after it: the account's balance after the whole batch plus the
        // charges that follow it in the batch.
        sent.push(tx`
          INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, request_id, api_key_id, created_at)
            SELECT t.account_id, 'charge', -t.amount, a.balance_micros + coalesce(sum(t.amount) OVER (PARTITION BY t.account_id ORDER BY t.ord DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0), t.request_id, t.api_key_id, t.created_at
            FROM unnest(${inputs.map((i) => i.accountId)}::text[], ${inputs.map((i) => i.amountMicros)}::bigint[], ${inputs.map((i) => i.requestId)}::text[], ${inputs.map((i) => i.apiKeyId ?? null)}::text[], ${inputs.map((i) => i.now)}::bigint[]) WITH ORDINALITY AS t(account_id, amount, request_id, api_key_id, created_at, ord)
            JOIN accounts AS a ON a.id = t.account_id
            ORDER BY t.ord`);
      }
      if (keys.length > 0) {
        const keyIds = keys.map(([id]) => id);
        sent.push(tx`SELECT id FROM api_keys WHERE id = ANY(${keyIds}::text[]) ORDER BY id COLLATE "C" FOR UPDATE`);
        sent.push(tx`UPDATE api_keys AS k SET spent_micros = k.spent_micros + t.total FROM unnest(${keyIds}::text[], ${keys.map(([, total]) => total)}::bigint[]) AS t(id, total) WHERE k.id = t.id`);
      }
      // Started in this order (a query is sent when first awaited): the locks before any other
      // statement takes a lock on the same rows (the usage rows' foreign key takes one).
      const charged = Promise.all(sent);
      const extra = more?.(tx);
      // Whichever fails first rolls the batch back; the other then fails with the same abort.
      extra?.catch(() => undefined);
      await charged;
      const result = await extra;
      const found = await locked;
      // Checked before the COMMIT: a missing account rolls the batch back.
      if (found.length !== accounts.length) {
        const present = new Set(found.map((row) => row.id));
        throw new Error(`account ${accountIds.find((id) => !present.has(id)) ?? '?'} does not exist`);
      }
      return result;
    }) as Promise<T | undefined>;
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
