import type { Logger } from 'pino';
import type { TokenLimiter } from '../limits/tokens.js';
import type { ModelConfig } from '../../config/types.js';
import type { Usage } from '../canonical.js';
import type { HoldRef, HoldStore } from '../limits/holds.js';
import type { UsageService } from '../management/usage.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { costMicros } from '../pricing.js';
import { orphanJournals } from '../../store/billing-journal.js';
import { isTransient, isUniqueViolation } from '../../store/errors.js';
import type { LocalWrites, Store } from '../../store/types.js';
import type { CacheOutcome, NewUsage } from '../../store/usage.js';
import { LedgerWriter, writeCall, type LedgerWriterOptions } from './ledger-writer.js';
import type { Observation } from '../telemetry/observation.js';
import type { Telemetry } from '../telemetry/telemetry.js';

export interface SettleInput {
  requestId: string;
  accountId: string;
  apiKeyId: string;
  model: ModelConfig;
  /** The provider entry that served (a deployment's); absent: the model's own. */
  provider?: string | undefined;
  /** The deployment that served (`<provider>:<upstream model>`); absent: not routed. */
  deployment?: string | undefined;
  /** Upstream attempts the call made (retries and fallbacks included); absent: 1. */
  attempts?: number | undefined;
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
  /** The alias the client named the model by (CallContext.requestedModel); `model` is the catalog model billed. */
  requestedModel?: string | undefined;
  /** The request's metrics and traces (CallContext.observation). */
  observation?: Observation | undefined;
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

export interface SettlementOptions extends LedgerWriterOptions {
  /** Keys' tokens per minute: a call counted at its bound is counted at its real figure once settled. */
  tokens?: TokenLimiter;
  /** Told of every charged call once it is in the ledger's queue (the alerts watch spend: core/alerts/monitor.ts). */
  onCharged?: (accountId: string, apiKeyId: string | null, watched: boolean) => void;
  /** How often to look for journals that stopped daemons left (0: only at start). */
  orphanScanMs?: number;
  /** Told of every settled call once it is on its way to the ledger (metrics count what the ledger charges). */
  telemetry?: Telemetry;
}

/**
 * Ends a call. Its charge is capped at its hold, so a wallet or key budget is never overspent
 * even if a provider reports more tokens than the bound the hold was computed from.
 *
 * `settle` prices the call and builds its usage row; the LedgerWriter (ledger-writer.ts) gets
 * it into the ledger: journaled or committed before the client gets its last bytes, then (on
 * SQLite) applied in batches. Calls the journals of stopped daemons left are applied here
 * (`recoverOrphans`).
 */
export class Settlement {
  private readonly writer: LedgerWriter;
  /** SQLite: where stopped daemons' journals are applied. Absent (PostgreSQL): no journals. */
  private readonly local: LocalWrites | undefined;
  private readonly orphanTimer: NodeJS.Timeout | undefined;
  private readonly tokens: TokenLimiter | undefined;
  private readonly onCharged: ((accountId: string, apiKeyId: string | null, watched: boolean) => void) | undefined;
  private readonly telemetry: Telemetry | undefined;

  constructor(
    store: Store,
    private readonly holds: HoldStore,
    usage: UsageService,
    private readonly logger: Logger,
    options: SettlementOptions = {},
  ) {
    this.writer = new LedgerWriter(store, holds, usage, logger, options);
    this.tokens = options.tokens;
    this.onCharged = options.onCharged;
    this.telemetry = options.telemetry;
    this.local = store.local;
    const scanMs = options.orphanScanMs ?? 30_000;
    if (this.writer.journal && scanMs > 0) {
      this.orphanTimer = setInterval(() => this.recoverOrphans(), scanMs);
      this.orphanTimer.unref();
    }
  }

  /** Settled calls waiting for their batch (for readiness and tests). */
  get backlog(): number {
    return this.writer.backlog;
  }

  /** True while batches fail to apply (the database is busy or full). */
  get failing(): boolean {
    return this.writer.failing;
  }

  async settle(input: SettleInput): Promise<SettledCall> {
    let cost: number;
    let row: NewUsage;
    try {
      const usage = input.usage;
      const metered = input.metered;
      const counted = input.hold.countedTokens;
      if (counted !== undefined && this.tokens) {
        // The minute's count takes the real figure (0 for a call that failed before any answer).
        const real = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
        input.hold.countedTokens = undefined;
        if (real !== counted) this.tokens.settle(input.hold.keyId, input.hold.id, real).catch((error: unknown) => this.logger.warn({ err: error, req_id: input.requestId }, 'could not count the call\'s tokens'));
      }
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
        provider: input.provider ?? input.model.provider,
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
        deployment: input.deployment ?? null,
        attempts: input.attempts ?? 1,
        requestedModel: input.requestedModel ?? null,
      };
      if (input.cache) {
        row.cache = input.cache.outcome;
        if (input.cache.similarity !== undefined) row.cacheSimilarity = input.cache.similarity;
        if (input.cache.savedMicros !== undefined) row.cacheSavedMicros = input.cache.savedMicros;
      }
      await this.writer.enqueue(cost, row, input.hold);
      if (cost > 0) this.onCharged?.(row.accountId, row.apiKeyId, input.hold.watched === true);
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
    // Billed: telemetry never turns a billed call into an error.
    try {
      this.telemetry?.settled(row, input.observation);
    } catch (error) {
      this.logger.warn({ err: error, req_id: input.requestId }, 'could not record a settled call\'s metrics');
    }
    return { costMicros: cost, row };
  }

  /** PostgreSQL's settlement commits in flight, done once their holds are released (undefined: none). */
  committing(): Promise<void> | undefined {
    return this.writer.committing();
  }

  /** Applies every settled call to the ledger now (reads that show money call this first). */
  drain(): boolean {
    return this.writer.drain();
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
          writeCall(local, row.costMicros, row);
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
              this.writer.journal?.reject([row]);
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
    if (this.orphanTimer) clearInterval(this.orphanTimer);
    await this.writer.close();
  }
}
