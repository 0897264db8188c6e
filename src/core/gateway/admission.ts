import type { ModelConfig } from '../../config/types.js';
import { errors, GatewayError } from '../errors.js';
import { isTransient } from '../../store/errors.js';
import type { HoldRef, HoldStore, HoldTotals } from '../limits/holds.js';
import type { RateDecision, RateLimiter } from '../limits/rate-limit.js';
import type { TokenDecision, TokenLimiter } from '../limits/tokens.js';
import { emptyOrExhausted, exhaustion, notCovered, rateLimited, roomOf, tokensExceeded, type Limits } from './refusals.js';
import { formatInrDisplay } from '../money.js';
import { affordableOutputTokens, worstCaseMicros } from '../pricing.js';
import type { Funds, PeriodStarts, Store } from '../../store/types.js';
import { DEFAULT_PERIOD_TIME_ZONE as DEFAULT_TIME_ZONE } from '../periods.js';
import { periodSpend } from '../spend.js';

export interface AdmissionInput {
  requestId: string;
  accountId: string;
  apiKeyId: string;
  rateLimit: number;
  /** The key's tokens per minute: the call counts at its bound (prompt + output limit). */
  tpmLimit?: number;
  model: ModelConfig;
  /** The fast upper bound of the prompt's tokens (UTF-8 bytes: no tokenizing). */
  promptTokens: number;
  /**
   * The tight bound (the tokenizer with the family's margin), computed only when the fast
   * bound would refuse the call: tokenizing costs CPU that a call far from its limits never pays.
   */
  promptEstimate?: () => Promise<number>;
  /** Whether the call can be billed cache writes (pricing.ts mayWriteCache); the hold prices the prompt at that price only then. */
  cacheWrites: boolean;
  /** The client's output limit; when absent the gateway picks the most the wallet covers. */
  requestedMaxTokens: number | undefined;
  /** What the client's format calls that limit, to name it in errors. */
  maxTokensField: string;
  /**
   * A requested limit above the model's output limit is lowered to it (the answer says so in
   * `x-gateway-max-tokens-clamped`) instead of refused with 400; the hold is priced at the
   * lowered limit. Each model a call is admitted at (its fallbacks too) clamps to its own.
   */
  clampMaxTokens?: boolean;
  /** A fallback of a call already admitted: takes no rate-limit slot of its own. */
  unmetered?: boolean;
}

/** A call whose worst-case cost is known before it is made (the media kinds: characters, seconds, images). */
export interface FixedAdmissionInput {
  requestId: string;
  accountId: string;
  apiKeyId: string;
  rateLimit: number;
  /** The key's tokens per minute: refused when the minute is full; the call's tokens count at settlement. */
  tpmLimit?: number;
  model: ModelConfig;
  /** The most the call can cost, µINR: its hold. */
  amountMicros: number;
  /** What the amount pays for, for a 402 ("4,096 characters of speech"). */
  what: string;
  /** Part of another call already counted (the semantic cache's embedding lookup): takes no rate-limit slot. */
  unmetered?: boolean;
}

/** The key's rate limit and, when it admits the call, the call's hold (totals included). */
export type RateAndHold = (keyId: string, limit: number, requestId: string, hold: HoldRef) => Promise<{ rate: RateDecision; totals?: HoldTotals }>;

export interface Admission {
  hold: HoldRef;
  maxTokens: number;
  rate: RateDecision;
  /** The prompt bound the hold was priced with (the fast bound, or the tight one when it did not fit). */
  promptTokens: number;
  /** The client's limit when it was lowered to the model's output limit (`maxTokens`): AdmissionInput.clampMaxTokens. */
  clampedFrom?: number;
}

export interface AdmitterOptions {
  /** governance.timezone: the calendar periods of budgets and spend limits. */
  timeZone?: string;
  /** The clock periods are read with (tests inject one). */
  now?: () => number;
  /** Keys' tokens per minute; absent: tpm_limit is not enforced (unit tests). */
  tokens?: TokenLimiter;
  /** A call refused because the key's budget or the account's spend limit cannot cover it (the alerts' 100%). */
  onRefused?: (reason: 'budget_exceeded' | 'account_spend_limit', accountId: string, apiKeyId: string) => void;
  /** Times each funds read (the metrics' gateway_store_duration_seconds{op="funds"}). */
  fundsTimer?: { observe(seconds: number): void };
  /**
   * This process's settlement commits in flight (PostgreSQL; Settlement.committing), done once
   * they have released their holds. A refusal waits for them before deciding whether to try
   * again: the wallet read may already show a charge whose hold was still counted.
   */
  committing?: () => Promise<void> | undefined;
}

/** When the catalog states no output limit, and the client none either. */
const DEFAULT_MAX_TOKENS = 4096;

/**
 * Admission, before any upstream call: the key's rate limit, then its budget, then a hold of
 * the call's worst-case cost against the wallet and the key budget. The hold is taken first
 * and the balance read after it, so a concurrent settlement is always seen (holds.ts). A call
 * that settled in between may then be counted twice (its hold and its charge): a refusal is
 * tried once more when this process has applied pending calls (the read barrier) or released
 * holds since the first hold was taken (HoldStore.releases), counting the releases of the
 * commits in flight when it refuses (on PostgreSQL a read can see a commit before this process
 * has its answer and releases that call's hold).
 */
/** The rate decision of a call that takes no slot of its own. */
const UNMETERED: RateDecision = { allowed: true, limit: 0, remaining: 0, retryAfterMs: 0, resetMs: 0 };

export class Admitter {
  /**
   * @param rateAndHold the rate limit and the first hold in one step (one Redis script when
   *   both live in Redis); by default the limiter, then the hold store.
   */
  constructor(
    private readonly store: Store,
    private readonly limiter: RateLimiter,
    private readonly holds: HoldStore,
    private readonly rateAndHold: RateAndHold = async (keyId, limit, requestId, hold) => {
      const rate = await limiter.check(keyId, limit, requestId);
      return rate.allowed ? { rate, totals: await holds.acquire(hold) } : { rate };
    },
    private readonly options: AdmitterOptions = {},
  ) {
    this.periods = { timeZone: options.timeZone ?? DEFAULT_TIME_ZONE, now: options.now ?? Date.now };
  }

  private readonly periods: { timeZone: string; now: () => number };

  /**
   * Counts an admitted call against its key's tokens per minute, at `bound` tokens (or the
   * tight bound `tighter` gives, when the fast one was used); past the limit the hold goes and
   * the call is refused with 429. Unmetered calls (fallbacks) were counted once.
   */
  private async countTokens(hold: HoldRef, limit: number | undefined, bound: number, tighter?: () => Promise<number>): Promise<void> {
    const tokens = this.options.tokens;
    if (limit === undefined || tokens === undefined) return;
    let decision: TokenDecision;
    try {
      // The tight bound (the tokenizer): the fast one counts bytes, four times the tokens of
      // prose, and the minute would hold a quarter of what it should.
      if (tighter) bound = Math.min(bound, await tighter());
      decision = await tokens.take(hold.keyId, limit, hold.id, bound);
    } catch (error) {
      // Redis unreachable: the hold goes, and the call is refused (limits_unavailable).
      await this.holds.release(hold).catch(() => undefined);
      throw error;
    }
    if (decision.allowed) {
      hold.countedTokens = bound;
      return;
    }
    await this.holds.release(hold);
    throw tokensExceeded(decision, bound);
  }

  /**
   * The wallet and key read of an admission that holds `hold`, as limits: the balance, the
   * key's budget and the account's spend limit with what each has spent in its current period.
   * A counter whose stored period ended starts its new one here (once per period, whichever
   * daemon's call comes first).
   */
  private async limitsHolding(hold: HoldRef, accountId: string, apiKeyId: string): Promise<Limits> {
    const funds = await this.fundsHolding(hold, accountId, apiKeyId);
    if (!funds) return { balance: 0, key: undefined, account: undefined };
    if ((funds.key !== undefined && funds.key.budgetMicros !== null) || funds.account.spendLimitMicros !== null) hold.watched = true;
    const now = this.periods.now();
    const zone = this.periods.timeZone;
    const key = funds.key && funds.key.budgetMicros !== null ? periodSpend(funds.key, funds.key.budgetPeriod, now, zone) : undefined;
    const account = funds.account.spendLimitMicros !== null ? periodSpend(funds.account, funds.account.spendPeriod, now, zone) : undefined;
    if (key?.stale || account?.stale) {
      await this.beginPeriods(hold, {
        accountId,
        ...(account?.stale && account.window ? { accountStart: account.window.start } : {}),
        ...(key?.stale && key.window ? { apiKeyId, keyStart: key.window.start } : {}),
      });
    }
    return {
      balance: funds.balanceMicros,
      key: funds.key && { budgetMicros: funds.key.budgetMicros, spentMicros: key?.spentMicros ?? funds.key.spentMicros, resetsAt: key?.window?.resetsAt },
      account: account && funds.account.spendLimitMicros !== null ? { limitMicros: funds.account.spendLimitMicros, spentMicros: account.spentMicros, resetsAt: account.window?.resetsAt } : undefined,
    };
  }

  private async beginPeriods(hold: HoldRef, starts: PeriodStarts): Promise<void> {
    try {
      await this.store.beginPeriods(starts);
    } catch (error) {
      await this.holds.release(hold).catch(() => undefined);
      if (isTransient(error)) throw errors.databaseUnavailable();
      throw error;
    }
  }

  /** Whether holds were released since `releases` was read, the commits in flight waited for first. */
  private async movedSince(releases: number): Promise<boolean> {
    const committing = this.options.committing?.();
    if (committing) await committing;
    return this.holds.releases !== releases;
  }

  async admit(input: AdmissionInput): Promise<Admission> {
    return this.told(input, refuseWhenLimitsFail(() => this.admitOnce(input)));
  }

  /** Tells onRefused of a call its budget or spend limit refused. */
  private async told<T>(input: { accountId: string; apiKeyId: string; unmetered?: boolean | undefined }, admission: Promise<T>): Promise<T> {
    try {
      return await admission;
    } catch (error) {
      // Only a limit used up (refusals.ts `exhaustion`), and not a fallback's own refusal.
      if (error instanceof GatewayError && exhaustion.has(error) && !input.unmetered && (error.reason === 'budget_exceeded' || error.reason === 'account_spend_limit')) {
        this.options.onRefused?.(error.reason, input.accountId, input.apiKeyId);
      }
      throw error;
    }
  }

  /**
   * Admission of a call priced up front: the same rate limit, budget and wallet rules as a
   * chat call, with a hold of exactly `amountMicros` (no output to size).
   */
  async admitAmount(input: FixedAdmissionInput): Promise<Admission> {
    return this.told(input, refuseWhenLimitsFail(() => this.admitAmountOnce(input)));
  }

  /**
   * The wallet and key read of an admission that holds `hold`. When the store cannot answer
   * (a PostgreSQL connection cut past its retries), the hold is released, not left to
   * shrink what the wallet can spend, and the call gets 503 database_unavailable (not the
   * Redis error its caller would otherwise report).
   */
  private async fundsHolding(hold: HoldRef, accountId: string, apiKeyId: string): Promise<Funds | undefined> {
    try {
      const timer = this.options.fundsTimer;
      if (!timer) return await this.store.funds(accountId, apiKeyId);
      const started = performance.now();
      const funds = await this.store.funds(accountId, apiKeyId);
      timer.observe((performance.now() - started) / 1000);
      return funds;
    } catch (error) {
      await this.holds.release(hold).catch(() => undefined);
      if (isTransient(error)) throw errors.databaseUnavailable();
      throw error;
    }
  }

  private async admitAmountOnce(input: FixedAdmissionInput): Promise<Admission> {
    const hold: HoldRef = { id: input.requestId, accountId: input.accountId, keyId: input.apiKeyId, amountMicros: input.amountMicros };
    const releases = this.holds.releases;
    const first = input.unmetered ? { rate: UNMETERED, totals: await this.holds.acquire(hold) } : await this.rateAndHold(input.apiKeyId, input.rateLimit, input.requestId, hold);
    const rate = first.rate;
    if (!first.totals) throw rateLimited(rate);
    let totals: HoldTotals = first.totals;
    // Twice at most: once more after applying settled calls not yet in the ledger (as admit()).
    for (let attempt = 0; ; attempt++) {
      const limits = await this.limitsHolding(hold, input.accountId, input.apiKeyId);
      const room = roomOf(limits, totals, hold);
      const refusal = emptyOrExhausted(limits);
      if (!refusal && hold.amountMicros <= room.free) {
        if (!input.unmetered) await this.countTokens(hold, input.tpmLimit, 0);
        return { hold, maxTokens: 0, rate, promptTokens: 0 };
      }
      const moved = await this.movedSince(releases);
      await this.holds.release(hold);
      if (attempt === 0 && (this.store.barrier.pass() || moved)) {
        totals = await this.holds.acquire(hold);
        continue;
      }
      if (refusal) throw refusal;
      throw notCovered(limits, room, `does not cover ${input.what} on ${input.model.id} (${formatInrDisplay(hold.amountMicros)})`);
    }
  }

  private async admitOnce(input: AdmissionInput): Promise<Admission> {
    const modelMax = input.model.maxOutputTokens;
    let requested = input.requestedMaxTokens;
    let clampedFrom: number | undefined;
    if (requested !== undefined && modelMax !== undefined && requested > modelMax) {
      if (!input.clampMaxTokens) {
        throw new GatewayError({
          status: 400,
          type: 'invalid_request_error',
          reason: 'invalid_field',
          param: input.maxTokensField,
          message: `${input.maxTokensField}: must be at most ${modelMax} for ${input.model.id}`,
        });
      }
      clampedFrom = requested;
      requested = modelMax;
    }
    let maxTokens = requested ?? modelMax ?? DEFAULT_MAX_TOKENS;
    const hold: HoldRef = { id: input.requestId, accountId: input.accountId, keyId: input.apiKeyId, amountMicros: 0 };
    // The prompt bound the hold is priced with: the fast byte bound, until it does not fit.
    let promptTokens = input.promptTokens;

    // At most twice: the worst case for the asked (or default) limit, then, when the client
    // set no limit, the largest limit the money covers. Before refusing, once each: calls
    // settled but not yet in the ledger are applied (their holds then go), so that a 402
    // states the wallet as it is; and the prompt is bounded again with the tokenizer (the
    // tight bound), which is about a quarter of the byte bound for prose.
    let drained = false;
    const estimate = input.promptEstimate;
    let tightened = false;
    hold.amountMicros = worstCaseMicros(input.model.pricing, promptTokens, maxTokens, input.cacheWrites);
    // Releases seen before the first hold: a refusal after others' releases is tried again once.
    const releases = this.holds.releases;
    const first = input.unmetered ? { rate: UNMETERED, totals: await this.holds.acquire(hold) } : await this.rateAndHold(input.apiKeyId, input.rateLimit, input.requestId, hold);
    const rate = first.rate;
    if (!first.totals) throw rateLimited(rate);
    let admitted: HoldTotals | undefined = first.totals;
    for (let attempt = 0; attempt < 2; attempt++) {
      hold.amountMicros = worstCaseMicros(input.model.pricing, promptTokens, maxTokens, input.cacheWrites);
      const totals = admitted ?? (await this.holds.acquire(hold));
      admitted = undefined;
      // Read after the hold is taken (see holds.ts): one read of each, fresh from the store.
      const limits = await this.limitsHolding(hold, input.accountId, input.apiKeyId);
      const refusal = emptyOrExhausted(limits);
      if (refusal) {
        const moved = await this.movedSince(releases);
        await this.holds.release(hold);
        if (!drained && (drained = this.store.barrier.pass() || moved)) {
          attempt -= 1;
          continue;
        }
        throw refusal;
      }
      const room = roomOf(limits, totals, hold);
      const free = room.free;
      if (hold.amountMicros <= free) {
        if (!input.unmetered) {
          const output = maxTokens;
          await this.countTokens(hold, input.tpmLimit, promptTokens + output, estimate && !tightened ? async () => (await estimate()) + output : undefined);
        }
        return clampedFrom === undefined ? { hold, maxTokens, rate, promptTokens } : { hold, maxTokens, rate, promptTokens, clampedFrom };
      }
      const moved = await this.movedSince(releases);
      await this.holds.release(hold);
      if (!drained && (drained = this.store.barrier.pass() || moved)) {
        attempt -= 1;
        continue;
      }
      if (!tightened && estimate) {
        tightened = true;
        const tight = await estimate();
        if (tight < promptTokens) {
          promptTokens = tight;
          attempt -= 1;
          continue;
        }
      }

      const affordable = Math.min(affordableOutputTokens(input.model.pricing, promptTokens, free, input.cacheWrites), modelMax ?? Number.MAX_SAFE_INTEGER);
      if (requested === undefined && affordable >= 1 && attempt === 0) {
        maxTokens = affordable;
        continue;
      }
      throw notCovered(limits, room, coverage(affordable, input));
    }
    throw new Error('unreachable');
  }
}

/** The shared limits store (Redis) failed: refuse rather than admit unchecked. */
async function refuseWhenLimitsFail<T>(admit: () => Promise<T>): Promise<T> {
  try {
    return await admit();
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    throw errors.limitsUnavailable(error);
  }
}

/**
 * A slot of the key's rate limit for a request that costs nothing and holds no money
 * (POST /v1/messages/count_tokens): the same window as a call's, 429 past it.
 */
export async function takeRateSlot(limiter: RateLimiter, keyId: string, limit: number, requestId: string): Promise<RateDecision> {
  const rate = await refuseWhenLimitsFail(() => limiter.check(keyId, limit, requestId));
  if (!rate.allowed) throw rateLimited(rate);
  return rate;
}

function coverage(affordable: number, input: AdmissionInput): string {
  return affordable >= 1 ? `covers at most ${input.maxTokensField}=${affordable} for ${input.model.id}` : `does not cover this prompt on ${input.model.id}`;
}
