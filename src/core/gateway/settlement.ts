import type { Logger } from 'pino';
import type { ModelConfig } from '../../config/types.js';
import type { Usage } from '../canonical.js';
import type { HoldRef, HoldStore } from '../limits/holds.js';
import type { UsageService } from '../management/usage.js';
import { costMicros } from '../pricing.js';
import type { Store } from '../../store/store.js';
import type { NewUsage, UsageRecord } from '../../store/usage.js';

export interface SettleInput {
  requestId: string;
  accountId: string;
  apiKeyId: string;
  model: ModelConfig;
  endpoint: string;
  stream: boolean;
  /** Tokens the call used; undefined when it produced nothing billable. */
  usage: Usage | undefined;
  /** The HTTP status the client saw (499 when it went away). */
  status: number;
  errorType?: string;
  startedAt: number;
  hold: HoldRef;
}

interface Pending {
  costMicros: number;
  row: NewUsage;
  resolve: (record: UsageRecord) => void;
  reject: (error: unknown) => void;
}

/**
 * Ends a call: the actual cost is charged and the usage row written in one SQLite
 * transaction, then the hold is released and the row published to live listeners. A charge
 * never exceeds the call's hold, so a wallet or key budget is never overspent even if a
 * provider reports more tokens than the bound the hold was computed from.
 *
 * Group commit: the calls that end in the same turn of the event loop are written in one
 * transaction; if any row fails, the batch is retried call by call so that only that call
 * fails. The commit is most of a settlement's cost, and concurrent calls share it. Each
 * caller still waits for its own row to be committed before it answers.
 */
export class Settlement {
  private queue: Pending[] = [];
  private scheduled = false;

  constructor(
    private readonly store: Store,
    private readonly holds: HoldStore,
    private readonly usage: UsageService,
    private readonly logger: Logger,
  ) {}

  async settle(input: SettleInput): Promise<UsageRecord> {
    try {
      const usage = input.usage;
      let cost = usage ? costMicros(input.model.pricing, usage) : 0;
      if (cost > input.hold.amountMicros) {
        this.logger.warn({ req_id: input.requestId, cost, hold: input.hold.amountMicros, model: input.model.id }, 'cost above the hold: charged the hold');
        cost = input.hold.amountMicros;
      }
      const now = Date.now();
      const record = await this.commit(cost, {
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
        costMicros: cost,
        status: input.status,
        errorType: input.errorType ?? null,
        latencyMs: Math.max(0, now - input.startedAt),
        createdAt: now,
      });
      this.usage.publish(record);
      return record;
    } finally {
      await this.holds.release(input.hold).catch((error: unknown) => this.logger.error({ err: error, req_id: input.requestId }, 'could not release a hold'));
    }
  }

  private commit(costMicros: number, row: NewUsage): Promise<UsageRecord> {
    return new Promise((resolve, reject) => {
      this.queue.push({ costMicros, row, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    let records: UsageRecord[] | undefined;
    try {
      records = this.store.transaction(() => batch.map((pending) => this.write(pending)));
    } catch {
      // Something in the batch failed and the whole transaction rolled back: write each call
      // on its own, so one bad row fails only its call (and a failed commit fails them all).
      for (const pending of batch) {
        try {
          pending.resolve(this.store.transaction(() => this.write(pending)));
        } catch (error) {
          pending.reject(error);
        }
      }
    }
    this.store.checkpointer?.wrote();
    if (records) batch.forEach((pending, index) => pending.resolve(records[index] as UsageRecord));
  }

  private write({ costMicros, row }: Pending): UsageRecord {
    if (costMicros > 0) this.store.ledger.chargeInTransaction({ accountId: row.accountId, amountMicros: costMicros, requestId: row.requestId, apiKeyId: row.apiKeyId, now: row.createdAt });
    return this.store.usage.insert(row);
  }
}
