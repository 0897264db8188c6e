import { errors } from '../errors.js';
import type { LedgerEntry } from '../../store/ledger.js';
import type { Store } from '../../store/types.js';

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
  async topup(input: TopupInput): Promise<{ entry: LedgerEntry; replayed: boolean; balanceMicros: number }> {
    // Calls settled before the top-up go into the ledger before it, and the balance it
    // answers includes them.
    this.store.barrier.pass();
    const result = await this.store.ledger.credit('topup', {
      accountId: input.accountId,
      amountMicros: input.amountMicros,
      reference: input.reference ?? null,
      note: input.note ?? null,
      createdBy: input.createdBy ?? null,
      now: this.now(),
    });
    // A replay wrote nothing: the first entry answers, with the balance as it is now.
    if (!result.replayed) return { ...result, balanceMicros: result.entry.balanceAfterMicros };
    if (result.entry.amountMicros !== input.amountMicros) throw errors.idempotencyConflict(input.reference as string);
    return { ...result, balanceMicros: await this.balance(input.accountId) };
  }

  async balance(accountId: string): Promise<number> {
    const account = await this.store.accounts.byId(accountId);
    if (!account) throw errors.notFound('account', accountId);
    return account.balanceMicros;
  }

  async ledger(accountId: string, limit: number, before?: number): Promise<LedgerEntry[]> {
    return this.store.ledger.list(accountId, limit, before);
  }
}
