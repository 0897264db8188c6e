import type { ReadBarrier } from './barrier.js';
import type { Db } from './db.js';

export type LedgerKind = 'topup' | 'charge' | 'refund';

export interface LedgerEntry {
  id: number;
  accountId: string;
  kind: LedgerKind;
  /** Signed µINR: positive for top-ups and refunds, negative (or 0) for charges. */
  amountMicros: number;
  balanceAfterMicros: number;
  reference: string | null;
  requestId: string | null;
  apiKeyId: string | null;
  note: string | null;
  createdBy: string | null;
  createdAt: number;
}

/** A ledger row, as both backends read it. */
export interface LedgerRow {
  id: number;
  account_id: string;
  kind: LedgerKind;
  amount_micros: number;
  balance_after_micros: number;
  reference: string | null;
  request_id: string | null;
  api_key_id: string | null;
  note: string | null;
  created_by: string | null;
  created_at: number;
}

export const toEntry = (row: LedgerRow): LedgerEntry => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  amountMicros: row.amount_micros,
  balanceAfterMicros: row.balance_after_micros,
  reference: row.reference,
  requestId: row.request_id,
  apiKeyId: row.api_key_id,
  note: row.note,
  createdBy: row.created_by,
  createdAt: row.created_at,
});

/**
 * A settlement batch's totals, for both backends: per account (the amount and the latest
 * time) and per key (the spend). Throws for an amount that is not a non-negative integer.
 */
export function batchTotals(inputs: readonly ChargeInput[]): { perAccount: Map<string, { total: number; now: number }>; perKey: Map<string, number> } {
    const perAccount = new Map<string, { total: number; now: number }>();
    const perKey = new Map<string, number>();
    for (const input of inputs) {
      if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros < 0) throw new RangeError('charge amount must be a non-negative integer of µINR');
      const account = perAccount.get(input.accountId);
      if (account) {
        account.total += input.amountMicros;
        account.now = Math.max(account.now, input.now);
      } else perAccount.set(input.accountId, { total: input.amountMicros, now: input.now });
      if (input.apiKeyId && input.amountMicros > 0) perKey.set(input.apiKeyId, (perKey.get(input.apiKeyId) ?? 0) + input.amountMicros);
    }
  return { perAccount, perKey };
}

/** The charge of a settled call, none when it cost nothing. */
export function chargeOf(costMicros: number, row: { accountId: string; requestId: string; apiKeyId: string | null; createdAt: number }): ChargeInput | undefined {
  return costMicros > 0 ? { accountId: row.accountId, amountMicros: costMicros, requestId: row.requestId, apiKeyId: row.apiKeyId, now: row.createdAt } : undefined;
}

export interface CreditInput {
  accountId: string;
  amountMicros: number;
  reference?: string | null;
  note?: string | null;
  createdBy?: string | null;
  now: number;
}

export interface ChargeInput {
  accountId: string;
  amountMicros: number;
  requestId: string;
  apiKeyId?: string | null;
  now: number;
}

/**
 * The wallet: an append-only ledger (triggers refuse UPDATE and DELETE) plus the account's
 * balance, both written in one transaction, so the balance always equals the ledger's sum.
 * Callers that must combine a charge with other writes (the usage row) call these inside
 * their own `db.transaction`; better-sqlite3 nests it as a savepoint.
 */
export class LedgerRepo {
  private readonly insertStmt;
  /** A charge's entry, positional (a batch inserts one per call). */
  private readonly insertChargeStmt;
  private readonly applyStmt;
  private readonly byReferenceStmt;
  private readonly byChargeRequestStmt;
  private readonly listStmt;
  private readonly listBeforeStmt;
  private readonly sumStmt;
  private readonly spendStmt;
  private readonly chargeTx;

  constructor(
    private readonly db: Db,
    private readonly barrier?: ReadBarrier,
  ) {
    this.insertStmt = db.prepare(
      `INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, reference, request_id, api_key_id, note, created_by, created_at)
       VALUES (@account_id, @kind, @amount, @balance_after, @reference, @request_id, @api_key_id, @note, @created_by, @now)`,
    );
    this.insertChargeStmt = db.prepare(
      `INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, reference, request_id, api_key_id, note, created_by, created_at)
       VALUES (?, 'charge', ?, ?, NULL, ?, ?, NULL, NULL, ?)`,
    );
    this.applyStmt = db.prepare(
      // A charge (a negative amount) also adds to the account's lifetime spend (spend limits).
      'UPDATE accounts SET balance_micros = balance_micros + @amount, spent_micros = spent_micros + max(0, -@amount), updated_at = @now WHERE id = @account_id RETURNING balance_micros',
    );
    this.byReferenceStmt = db.prepare('SELECT * FROM ledger WHERE account_id = ? AND kind = ? AND reference = ?');
    this.byChargeRequestStmt = db.prepare("SELECT * FROM ledger WHERE request_id = ? AND kind = 'charge'");
    this.listStmt = db.prepare('SELECT * FROM ledger WHERE account_id = ? ORDER BY id DESC LIMIT ?');
    this.listBeforeStmt = db.prepare('SELECT * FROM ledger WHERE account_id = ? AND id < ? ORDER BY id DESC LIMIT ?');
    this.sumStmt = db.prepare('SELECT coalesce(sum(amount_micros), 0) AS total FROM ledger WHERE account_id = ?');
    this.spendStmt = db.prepare('UPDATE api_keys SET spent_micros = spent_micros + ? WHERE id = ?');
    // Transaction functions are built once: building one per call costs more than its statements.
    this.chargeTx = db.transaction((input: ChargeInput) => this.chargeInTransaction(input));
  }

  /**
   * Adds money. With a reference, a second call with the same reference returns the first
   * entry instead of applying again (`replayed: true`); the caller checks the amounts match.
   */
  credit(kind: 'topup' | 'refund', input: CreditInput): { entry: LedgerEntry; replayed: boolean } {
    if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros <= 0) throw new RangeError('credit amount must be a positive integer of µINR');
    // Calls settled before this credit go into the ledger before it.
    this.barrier?.pass();
    return this.db.transaction(() => {
      if (input.reference) {
        const existing = this.byReferenceStmt.get(input.accountId, kind, input.reference) as LedgerRow | undefined;
        if (existing) return { entry: toEntry(existing), replayed: true };
      }
      const entry = this.append(kind, input.accountId, input.amountMicros, {
        reference: input.reference ?? null,
        note: input.note ?? null,
        created_by: input.createdBy ?? null,
        request_id: null,
        api_key_id: null,
        now: input.now,
      });
      return { entry, replayed: false };
    }).immediate();
  }

  /**
   * Takes money for one request, at most once per request id (a second call returns the
   * first entry). Also adds the amount to the key's `spent`.
   */
  charge(input: ChargeInput): { entry: LedgerEntry; replayed: boolean } {
    if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros < 0) throw new RangeError('charge amount must be a non-negative integer of µINR');
    // The unique index on charges' request ids makes a second charge fail; that rolls the
    // savepoint (balance included) back, and the first entry is returned. No read first: the
    // hot path does one statement less.
    try {
      return this.chargeTx.immediate(input);
    } catch (error) {
      const existing = (error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE' ? (this.byChargeRequestStmt.get(input.requestId) as LedgerRow | undefined) : undefined;
      if (existing) return { entry: toEntry(existing), replayed: true };
      throw error;
    }
  }

  /**
   * The charge's statements, for a caller already inside a transaction (settlement batches):
   * no savepoint of its own. A second charge for a request id throws (unique index).
   */
  chargeInTransaction(input: ChargeInput): { entry: LedgerEntry; replayed: boolean } {
    if (!this.db.inTransaction) throw new Error('chargeInTransaction needs an open transaction');
    const entry = this.append('charge', input.accountId, -input.amountMicros, {
      reference: null,
      note: null,
      created_by: null,
      request_id: input.requestId,
      api_key_id: input.apiKeyId ?? null,
      now: input.now,
    });
    if (input.apiKeyId && input.amountMicros > 0) this.spendStmt.run(input.amountMicros, input.apiKeyId);
    return { entry, replayed: false };
  }

  /**
   * Many charges, for a caller inside a transaction (settlement batches): one balance update
   * per account and one spend update per key for the whole batch, then one ledger entry per
   * charge in order, each with the running balance after it. A second charge for a request id
   * throws (unique index), as does an account that does not exist.
   */
  chargeManyInTransaction(inputs: readonly ChargeInput[]): void {
    if (!this.db.inTransaction) throw new Error('chargeManyInTransaction needs an open transaction');
    const { perAccount, perKey } = batchTotals(inputs);
    // The balance before the batch, per account; each entry then takes its own step down.
    const running = new Map<string, number>();
    for (const [accountId, { total, now }] of perAccount) {
      const applied = this.applyStmt.get({ amount: -total, now, account_id: accountId }) as { balance_micros: number } | undefined;
      if (!applied) throw new Error(`account ${accountId} does not exist`);
      running.set(accountId, applied.balance_micros + total);
    }
    for (const input of inputs) {
      const balanceAfter = (running.get(input.accountId) as number) - input.amountMicros;
      running.set(input.accountId, balanceAfter);
      this.insertChargeStmt.run(input.accountId, -input.amountMicros, balanceAfter, input.requestId, input.apiKeyId ?? null, input.now);
    }
    for (const [keyId, total] of perKey) this.spendStmt.run(total, keyId);
  }

  byReference(accountId: string, kind: LedgerKind, reference: string): LedgerEntry | undefined {
    this.barrier?.pass();
    const row = this.byReferenceStmt.get(accountId, kind, reference) as LedgerRow | undefined;
    return row && toEntry(row);
  }

  /** Newest first; `before` is an entry id for paging. */
  list(accountId: string, limit: number, before?: number): LedgerEntry[] {
    this.barrier?.pass();
    const rows = before === undefined ? this.listStmt.all(accountId, limit) : this.listBeforeStmt.all(accountId, before, limit);
    return (rows as LedgerRow[]).map(toEntry);
  }

  /** Sum of the account's ledger, for consistency checks against the stored balance. */
  sum(accountId: string): number {
    this.barrier?.pass();
    return (this.sumStmt.get(accountId) as { total: number }).total;
  }

  private append(kind: LedgerKind, accountId: string, amount: number, extra: Omit<LedgerRow, 'id' | 'account_id' | 'kind' | 'amount_micros' | 'balance_after_micros' | 'created_at'> & { now: number }): LedgerEntry {
    const applied = this.applyStmt.get({ amount, now: extra.now, account_id: accountId }) as { balance_micros: number } | undefined;
    if (!applied) throw new Error(`account ${accountId} does not exist`);
    const result = this.insertStmt.run({
      account_id: accountId,
      kind,
      amount,
      balance_after: applied.balance_micros,
      reference: extra.reference,
      request_id: extra.request_id,
      api_key_id: extra.api_key_id,
      note: extra.note,
      created_by: extra.created_by,
      now: extra.now,
    });
    return {
      id: Number(result.lastInsertRowid),
      accountId,
      kind,
      amountMicros: amount,
      balanceAfterMicros: applied.balance_micros,
      reference: extra.reference,
      requestId: extra.request_id,
      apiKeyId: extra.api_key_id,
      note: extra.note,
      createdBy: extra.created_by,
      createdAt: extra.now,
    };
  }
}
