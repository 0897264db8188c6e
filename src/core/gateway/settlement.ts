import type { Logger } from 'pino';
import type { ModelConfig } from '../../config/types.js';
import type { Usage } from '../canonical.js';
import type { HoldRef, HoldStore } from '../limits/holds.js';
import type { UsageService } from '../management/usage.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { costMicros } from '../pricing.js';
import { BillingJournal, orphanJournals } from '../../store/billing-journal.js';
import { isTransient, isUniqueViolation } from '../../store/errors.js';
import { chargeOf, type ChargeInput } from '../../store/ledger.js';
import type { LocalWrites, Store } from '../../store/types.js';
import type { CacheOutcome, NewUsage, UsageRecord } from '../../store/usage.js';

export interface SettleInput {
  requestId: string;
  accountId: string;
  apiKeyId: string;
  model: ModelConfig;
  endpoint: string;
  stream: boolean;
  /** Tokens the call used; undefined when it produced nothing billable. */
  usage: Usage | undefined;
  /**
   * A media call's billed quantity and its cost (priced by the media service: characters,
   * seconds, images; embeddings' tokens); when given, it is the charge instead of `usage`'s.
   */
  metered?: Metered | undefined;
  /** The HTTP status the client saw (499 when it went away). */
  status: number;
  errorType?: string | undefined;
  startedAt: number;
  hold: HoldRef;
  /** The response cache's part in the call (chat calls where caching is on). */
  cache?: CacheRecord | undefined;
}

export interface CacheRecord {
  outcome: CacheOutcome;
  similarity?: number;
  /** A hit: the answer's list price less the hit's charge. */
  savedMicros?: number;
}

export type MeterUnit = 'tokens' | 'characters' | 'seconds' | 'images';

export interface Metered {
  unit: MeterUnit;
  quantity: number;
  costMicros: number;
}

export interface SettledCall {
  costMicros: number;
  row: NewUsage;
}

export interface SettlementOptions {
  /** How long a settled call may wait for its batch to be applied to the ledger. */
  applyDelayMs?: number;
  /** A batch this large is applied at once. */
  maxBatch?: number;
  /** How often to look for journals that stopped daemons left (0: only at start). */
  orphanScanMs?: number;
}

interface Queued {
  costMicros: number;
  row: NewUsage;
  hold: HoldRef;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Journaled (the client may have its answer), not yet in the ledger. */
interface Pending {
  costMicros: number;
  row: NewUsage;
  hold: HoldRef | undefined;
}

const RETRY_FIRST_MS = 100;
/** Commits in flight at once without a local journal (PostgreSQL). */
const MAX_COMMITS = 4;
/** Waits before trying a commit again after a transient failure (then the calls fail: 503). */
const COMMIT_RETRY_MS = [50, 200, 500];
const RETRY_MAX_MS = 5000;

/**
 * Ends a call. Its charge is capped at its hold, so a wallet or key budget is never overspent
 * even if a provider reports more tokens than the bound the hold was computed from.
 *
 * Two steps:
 * 1. Settle, before the client gets its last bytes: the calls that end in the same turn of
 *    the event loop are written to the billing journal in one write (store/billing-journal.ts),
 *    and each call's hold is lowered to its cost. From here the call is billed: a crash
 *    after this point is recovered from the journal.
 * 2. Apply, in batches (every `applyDelayMs`, or at `maxBatch` calls): one SQLite transaction
 *    writes the ledger charges (unique per request id), the balances, key spend and usage
 *    rows; then the journal is emptied, the holds released and the rows published to live
 *    listeners.
 *
 * Until its batch is applied a call's hold stays on the wallet and key, at the call's cost,
 * so admission (balance minus holds) never sees more money than there is. A read that shows
 * money in this process first applies what is pending (Store.barrier). One SQLite commit per
 * call was most of a call's CPU in the gateway (benchmark, issue 5); a batch shares it.
 *
 * If the batch cannot be written (database busy past its timeout, disk full) it stays
 * pending and in the journal, and is retried with backoff; its holds stay, so the wallets it
 * charges cannot be spent meanwhile. A row refused for good (a broken constraint, an account
 * that is gone) is logged in full and kept in the journal directory's rejected file.
 */
export class Settlement {
  private queue: Queued[] = [];
  private flushScheduled = false;
  private pending: Pending[] = [];
  private applyTimer: NodeJS.Timeout | undefined;
  private applyImmediate = false;
  private retryMs = 0;
  private readonly journal: BillingJournal | undefined;
  /** SQLite: journal, then batches (below). Absent (PostgreSQL): each turn's calls committed before their answers end. */
  private readonly local: LocalWrites | undefined;
  /** Commits in flight (PostgreSQL), for close(). */
  private readonly commits = new Set<Promise<void>>();
  private readonly orphanTimer: NodeJS.Timeout | undefined;
  private readonly applyDelayMs: number;
  private readonly maxBatch: number;
  private closed = false;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly holds: HoldStore,
    private readonly usage: UsageService,
    private readonly logger: Logger,
    options: SettlementOptions = {},
  ) {
    this.applyDelayMs = options.applyDelayMs ?? 100;
    this.maxBatch = options.maxBatch ?? 64;
    this.local = store.local;
    this.journal = this.local ? BillingJournal.open(this.local.path) : undefined;
    if (this.local) store.barrier.set(() => this.drain());
    const scanMs = options.orphanScanMs ?? 30_000;
    if (this.journal && scanMs > 0) {
      this.orphanTimer = setInterval(() => this.recoverOrphans(), scanMs);
      this.orphanTimer.unref();
    }
  }

  /** Settled calls waiting for their batch (for readiness and tests). */
  get backlog(): number {
    return this.pending.length;
  }

  /** True while batches fail to apply (the database is busy or full). */
  get failing(): boolean {
    return this.retryMs > 0;
  }

  async settle(input: SettleInput): Promise<SettledCall> {
    let cost: number;
    let row: NewUsage;
    try {
      const usage = input.usage;
      const metered = input.metered;
      cost = metered ? metered.costMicros : usage ? costMicros(input.model.pricing, usage) : 0;
      // The provider counted past the prompt bound the hold was priced with: never charge past
      // the hold (no wallet or budget is overspent); the difference stays on the usage row
      // (uncharged_micros), where such calls are counted.
      const uncharged = Math.max(0, cost - input.hold.amountMicros);
      if (uncharged > 0) {
        cost = input.hold.amountMicros;
        this.logger.warn({ req_id: input.requestId, cost: cost + uncharged, hold: cost, uncharged, model: input.model.id, input_tokens: usage?.inputTokens }, 'cost above the hold: charged the hold');
      }
      const now = Date.now();
      row = {
        requestId: input.requestId,
        accountId: input.accountId,
        apiKeyId: input.apiKeyId,
        model: input.model.id,
        provider: input.model.provider,
        endpoint: input.endpoint,
        stream: input.stream,
        inputTokens: usage?.inputTokens ?? 0,
        outputTokens: usage?.outputTokens ?? 0,
        cacheReadTokens: usage?.cacheReadTokens ?? 0,
        cacheWriteTokens: usage?.cacheWriteTokens ?? 0,
        unit: metered?.unit ?? 'tokens',
        units: metered ? metered.quantity : (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0),
        costMicros: cost,
        unchargedMicros: uncharged,
        status: input.status,
        errorType: input.errorType ?? null,
        latencyMs: Math.max(0, now - input.startedAt),
        createdAt: now,
      };
      if (input.cache) {
        row.cache = input.cache.outcome;
        if (input.cache.similarity !== undefined) row.cacheSimilarity = input.cache.similarity;
        if (input.cache.savedMicros !== undefined) row.cacheSavedMicros = input.cache.savedMicros;
      }
      await this.enqueue(cost, row, input.hold);
    } catch (error) {
      // Not billed: the hold goes now, and the answer is not given (no call goes unbilled).
      await this.holds.release(input.hold).catch((releaseError: unknown) => this.logger.error({ err: releaseError, req_id: input.requestId }, 'could not release a hold'));
      if (isGatewayError(error)) throw error;
      throw new GatewayError({
        status: 503,
        type: 'service_unavailable',
        reason: 'billing_unavailable',
        message: 'the call could not be recorded in the ledger (the database is unavailable), so its answer is withheld and it is not billed: retry shortly',
      });
    }
    return { costMicros: cost, row };
  }

  /** Applies every settled call to the ledger now (reads that show money call this first). */
  drain(): boolean {
    // While the database refuses batches, the retry timer keeps trying; a read does not wait
    // for busy_timeout on every call (it sees the ledger without the pending calls).
    if (this.pending.length === 0 || this.retryMs > 0) return false;
    this.apply();
    return true;
  }

  /**
   * At start: applies what stopped daemons left in their journals, each call once. Also run
   * every `orphanScanMs`, for daemons sharing the database that stopped without restarting.
   */
  recoverOrphans(): { applied: number; skipped: number; rejected: number; complete: boolean } {
    const totals = { applied: 0, skipped: 0, rejected: 0, complete: true };
    const local = this.local;
    if (!local) return totals;
    const orphans = orphanJournals(local.path);
    for (const [index, orphan] of orphans.entries()) {
      const counts = { applied: 0, skipped: 0, rejected: 0 };
      for (const row of orphan.rows) {
        // Lines stay in a journal after they are applied (billing-journal.ts): skip those at
        // the cost of a read, not of a failed write.
        if (local.hasUsage(row.requestId)) {
          counts.skipped += 1;
          continue;
        }
        try {
          this.write(local, row.costMicros, row);
          counts.applied += 1;
        } catch (error) {
          if (isUniqueViolation(error)) {
            counts.skipped += 1; // applied before the daemon stopped
          } else if (isTransient(error)) {
            this.logger.error({ err: error, path: orphan.path }, 'could not apply a stopped daemon\'s billing journal now; it is kept for the next scan');
            for (const left of orphans.slice(index)) left.release();
            totals.complete = false;
            return totals;
          } else {
            counts.rejected += 1;
            try {
              this.journal?.reject([row]);
            } catch (rejectError) {
              this.logger.error({ err: rejectError }, 'could not write rejected.log');
            }
            this.logger.error({ err: error, call: row }, 'the ledger refused a settled call from a stopped daemon\'s journal; it is kept in the rejected file');
          }
        }
      }
      orphan.done();
      totals.applied += counts.applied;
      totals.skipped += counts.skipped;
      totals.rejected += counts.rejected;
      const level = counts.applied > 0 || counts.rejected > 0 || orphan.unreadable > 0 ? 'warn' : 'info';
      this.logger[level]({ path: orphan.path, ...counts, unreadable_lines: orphan.unreadable }, 'applied the billing journal a stopped daemon left');
    }
    return totals;
  }

  /** At a clean stop (no calls in flight): applies everything and removes the journal. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.orphanTimer) clearInterval(this.orphanTimer);
    if (this.queue.length > 0) this.flush();
    while (this.commits.size > 0) await Promise.allSettled([...this.commits]);
    // A last try even while failing; no timer or immediate runs after this (the store closes next).
    if (this.pending.length > 0) this.apply();
    this.stopped = true;
    if (this.applyTimer) clearTimeout(this.applyTimer);
    this.applyTimer = undefined;
    this.store.barrier.set(undefined);
    if (this.pending.length > 0) {
      this.logger.error({ calls: this.pending.length }, 'stopping with settled calls the database did not take; they stay in the billing journal for the next start');
    }
    this.journal?.close();
  }

  private enqueue(costMicros: number, row: NewUsage, hold: HoldRef): Promise<void> {
    if (this.closed) {
      return Promise.reject(new GatewayError({ status: 503, type: 'service_unavailable', reason: 'shutting_down', message: 'the gateway is stopping (settlement is closed): retry on another instance' }));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ costMicros, row, hold, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Step 1 for the calls of this turn: one journal write, holds lowered, callers resumed. */
  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    if (!this.local) {
      // Group commit: at most MAX_COMMITS in flight; calls that end meanwhile wait for a free
      // one and go in together.
      if (this.commits.size >= MAX_COMMITS && !this.closed) {
        this.queue = batch.concat(this.queue);
        return;
      }
      const commit = this.commit(batch);
      this.commits.add(commit);
      void commit.finally(() => {
        this.commits.delete(commit);
        if (this.queue.length > 0 && !this.flushScheduled) {
          this.flushScheduled = true;
          setImmediate(() => this.flush());
        }
      });
      return;
    }
    try {
      this.journal?.append(batch.map((queued) => queued.row));
    } catch (error) {
      this.logger.error({ err: error, calls: batch.length }, 'could not write the billing journal');
      for (const queued of batch) queued.reject(error);
      return;
    }
    for (const queued of batch) this.pending.push({ costMicros: queued.costMicros, row: queued.row, hold: queued.hold });
    this.holds
      .shrink(batch.map((queued) => ({ hold: queued.hold, amountMicros: queued.costMicros })))
      .catch((error: unknown) => this.logger.warn({ err: error }, 'could not lower holds to their costs (they stay at the worst case until released)'));
    for (const queued of batch) queued.resolve();
    this.scheduleApply();
  }

  private scheduleApply(): void {
    if (this.pending.length === 0 || this.retryMs > 0) return;
    if (this.pending.length >= this.maxBatch) {
      if (!this.applyImmediate) {
        this.applyImmediate = true;
        setImmediate(() => {
          this.applyImmediate = false;
          this.apply();
        });
      }
      return;
    }
    if (!this.applyTimer) {
      this.applyTimer = setTimeout(() => this.apply(), this.applyDelayMs);
      this.applyTimer.unref();
    }
  }

  /**
   * Without a local journal (PostgreSQL): the calls that ended in this turn in one commit (the
   * group commit), before any of their answers end; a host lost after this loses no charge.
   * Their holds go once the charges are in. A batch refused as a whole is written call by
   * call, so one bad row costs only its own call; a call the database cannot take now fails
   * (its client gets an error instead of an unbilled answer).
   */
  private async commit(batch: Queued[]): Promise<void> {
    const records: UsageRecord[] = [];
    const charges: ChargeInput[] = [];
    for (const { costMicros: cost, row } of batch) {
      const charge = chargeOf(cost, row);
      if (charge) charges.push(charge);
    }
    const done: Queued[] = [];
    try {
      records.push(...(await this.settleRetrying(charges, batch.map((queued) => queued.row))));
      done.push(...batch);
    } catch (error) {
      if (isTransient(error)) {
        this.logger.error({ err: error, calls: batch.length }, 'could not commit settled calls to the ledger');
        for (const queued of batch) queued.reject(error);
        await this.releaseHolds(batch.map((queued) => queued.hold));
        return;
      }
      for (const queued of batch) {
        try {
          const charge = chargeOf(queued.costMicros, queued.row);
          records.push(...(await this.settleRetrying(charge ? [charge] : [], [queued.row])));
          done.push(queued);
        } catch (rowError) {
          if (isUniqueViolation(rowError)) {
            done.push(queued); // already in the ledger
            continue;
          }
          this.logger.error({ err: rowError, call: queued.row }, 'the ledger refused a settled call');
          queued.reject(rowError);
          await this.releaseHolds([queued.hold]);
        }
      }
    }
    for (const queued of done) queued.resolve();
    await this.releaseHolds(done.map((queued) => queued.hold));
    this.publish(records);
  }

  /**
   * The store's settle, tried again after a transient failure (a dropped connection, a
   * failover): a commit whose acknowledgement was lost is not applied twice, its request ids
   * are unique in the ledger (the retry fails with a unique violation, and the call-by-call
   * pass above counts it as done).
   */
  private async settleRetrying(charges: readonly ChargeInput[], rows: readonly NewUsage[]): Promise<UsageRecord[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.store.settle(charges, rows);
      } catch (error) {
        const wait = COMMIT_RETRY_MS[attempt];
        if (wait === undefined || !isTransient(error) || this.stopped) throw error;
        this.logger.warn({ err: error, calls: rows.length, retry_ms: wait }, 'the ledger did not take settled calls; retrying');
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  private async releaseHolds(holds: HoldRef[]): Promise<void> {
    if (holds.length === 0) return;
    await this.holds.releaseAll(holds).catch((error: unknown) => this.logger.error({ err: error }, 'could not release holds'));
  }

  private publish(records: readonly UsageRecord[]): void {
    for (const record of records) {
      try {
        this.usage.publish(record);
      } catch (error) {
        this.logger.error({ err: error }, 'a usage listener failed');
      }
    }
  }

  /** Step 2: the pending calls into SQLite, in one transaction when all goes well. */
  private apply(): void {
    const local = this.local;
    if (this.stopped || !local) return;
    if (this.applyTimer) clearTimeout(this.applyTimer);
    this.applyTimer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const records: UsageRecord[] = [];
    const done: Pending[] = [];
    const rejected: Pending[] = [];
    try {
      const charges: ChargeInput[] = [];
      for (const { costMicros: cost, row } of batch) {
        const charge = chargeOf(cost, row);
        if (charge) charges.push(charge);
      }
      records.push(...local.settle(charges, batch.map((entry) => entry.row)));
      done.push(...batch);
    } catch (error) {
      records.length = 0;
      if (isTransient(error)) {
        // The database did not take the batch (busy, full, I/O): all of it waits for a retry.
        this.pending = batch.concat(this.pending);
        this.retryLater(error);
        return;
      }
      // A row was refused: write the calls one by one, so only that one is set aside.
      for (const entry of batch) {
        try {
          records.push(this.write(local, entry.costMicros, entry.row));
          done.push(entry);
        } catch (rowError) {
          if (isUniqueViolation(rowError)) {
            done.push(entry); // already in the ledger
          } else if (isTransient(rowError)) {
            this.pending.push(entry);
          } else {
            rejected.push(entry);
            this.logger.error({ err: rowError, call: entry.row }, 'the ledger refused a settled call; it is kept in the billing journal directory\'s rejected file');
          }
        }
      }
      if (rejected.length > 0) {
        try {
          this.journal?.reject(rejected.map((entry) => entry.row));
        } catch (rejectError) {
          this.logger.error({ err: rejectError, calls: rejected.map((entry) => entry.row) }, 'could not write rejected.log');
        }
      }
    }
    if (this.pending.length === 0) {
      this.retryMs = 0;
      try {
        this.journal?.clear();
      } catch (error) {
        // The lines stay: a replay skips what is applied.
        this.logger.warn({ err: error }, 'could not empty the billing journal');
      }
    } else {
      this.retryLater(new Error('some settled calls could not be written'));
    }
    const finished: HoldRef[] = [];
    for (const entry of done) if (entry.hold) finished.push(entry.hold);
    for (const entry of rejected) if (entry.hold) finished.push(entry.hold);
    if (finished.length > 0) {
      this.holds.releaseAll(finished).catch((error: unknown) => this.logger.error({ err: error }, 'could not release holds'));
    }
    this.publish(records);
  }

  private retryLater(error: unknown): void {
    this.retryMs = this.retryMs === 0 ? RETRY_FIRST_MS : Math.min(RETRY_MAX_MS, this.retryMs * 2);
    this.logger.error({ err: error, calls: this.pending.length, retry_ms: this.retryMs }, 'could not apply settled calls to the ledger; retrying (their holds stay)');
    if (this.applyTimer) clearTimeout(this.applyTimer);
    this.applyTimer = setTimeout(() => this.apply(), this.retryMs);
    this.applyTimer.unref();
  }

  /** One call in its own transaction. */
  private write(local: LocalWrites, cost: number, row: NewUsage): UsageRecord {
    const charge = chargeOf(cost, row);
    return local.settle(charge ? [charge] : [], [row])[0] as UsageRecord;
  }
}
