import { errors } from '../errors.js';
import type { LedgerEntry } from '../../store/ledger.js';
import type { Store } from '../../store/store.js';

export interface TopupInput {
  accountId: string;
  amountMicros: number;
  /** Idempotency reference: a retried top-up with the same reference applies once. */
  reference?: string;
  note?: string;
  createdBy?: string;
}

/** The prepaid INR wallet of each account. */
export class WalletService {
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    now?: () => number,
  ) {
    this.now = now ?? Date.now;
  }

  /**
   * Credits the wallet. A retry with the same reference and amount returns the first entry
   * (`replayed: true`); the same reference with another amount is a 409.
   */
  topup(input: TopupInput): { entry: LedgerEntry; replayed: boolean; balanceMicros: number } {
    // Calls settled before the top-up go into the ledger before it (the barrier is skipped
    // inside the transaction below), and the balance it answers includes them.
    this.store.barrier.pass();
    return this.store.transaction(() => {
      const result = this.store.ledger.credit('topup', {
        accountId: input.accountId,
        amountMicros: input.amountMicros,
        reference: input.reference ?? null,
        note: input.note ?? null,
        createdBy: input.createdBy ?? null,
        now: this.now(),
      });
      if (result.replayed && result.entry.amountMicros !== input.amountMicros) throw errors.idempotencyConflict(input.reference as string);
      return { ...result, balanceMicros: this.balance(input.accountId) };
    });
  }

  balance(accountId: string): number {
    const account = this.store.accounts.byId(accountId);
    if (!account) throw errors.notFound('account', accountId);
    return account.balanceMicros;
  }

  ledger(accountId: string, limit: number, before?: number): LedgerEntry[] {
    return this.store.ledger.list(accountId, limit, before);
  }
}
