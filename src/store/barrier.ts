import type { Db } from './db.js';

/**
 * Settled calls reach the ledger in batches (core/gateway/settlement.ts). Reads that show
 * money (balances, ledger, usage rows, key spend) pass this barrier first, which applies this
 * process's settled-but-unapplied calls, so what a client was answered is what it then reads.
 * Admission's own read (`Store.funds`) does not: the calls' holds cover them until applied.
 */
export class ReadBarrier {
  private hook: (() => boolean) | undefined;

  constructor(private readonly db: Db) {}

  set(hook: (() => boolean) | undefined): void {
    this.hook = hook;
  }

  /** True when it applied something. */
  pass(): boolean {
    // Inside a transaction the caller is a write path that passed the barrier before it began.
    return this.hook !== undefined && !this.db.inTransaction && this.hook();
  }
}
