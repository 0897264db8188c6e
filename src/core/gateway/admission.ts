import type { ModelConfig } from '../../config/types.js';
import { errors, GatewayError } from '../errors.js';
import { isTransient } from '../../store/errors.js';
import type { HoldRef, HoldStore, HoldTotals } from '../limits/holds.js';
import type { RateDecision, RateLimiter } from '../limits/rate-limit.js';
import { formatInrDisplay } from '../money.js';
import { affordableOutputTokens, worstCaseMicros } from '../pricing.js';
import type { Funds, Store } from '../../store/types.js';

export interface AdmissionInput {
  requestId: string;
  accountId: string;
  apiKeyId: string;
  rateLimit: number;
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

/** When the catalog states no output limit, and the client none either. */
const DEFAULT_MAX_TOKENS = 4096;

/**
 * Admission, before any upstream call: the key's rate limit, then its budget, then a hold of
 * the call's worst-case cost against the wallet and the key budget. The hold is taken first
 * and the balance read after it, so a concurrent settlement is always seen (holds.ts).
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
  ) {}

  async admit(input: AdmissionInput): Promise<Admission> {
    return refuseWhenLimitsFail(() => this.admitOnce(input));
  }

  /**
   * Admission of a call priced up front: the same rate limit, budget and wallet rules as a
   * chat call, with a hold of exactly `amountMicros` (no output to size).
   */
  async admitAmount(input: FixedAdmissionInput): Promise<Admission> {
    return refuseWhenLimitsFail(() => this.admitAmountOnce(input));
  }

  /**
   * The wallet and key read of an admission that holds `hold`. When the store cannot answer
   * (a PostgreSQL connection cut past its retries), the hold is released, not left to
   * shrink what the wallet can spend, and the call gets 503 database_unavailable (not the
   * Redis error its caller would otherwise report).
   */
  private async fundsHolding(hold: HoldRef, accountId: string, apiKeyId: string): Promise<Funds | undefined> {
    try {
      return await this.store.funds(accountId, apiKeyId);
    } catch (error) {
      await this.holds.release(hold).catch(() => undefined);
      if (isTransient(error)) throw errors.databaseUnavailable();
      throw error;
    }
  }

  private async admitAmountOnce(input: FixedAdmissionInput): Promise<Admission> {
    const hold: HoldRef = { id: input.requestId, accountId: input.accountId, keyId: input.apiKeyId, amountMicros: input.amountMicros };
    const first = input.unmetered ? { rate: UNMETERED, totals: await this.holds.acquire(hold) } : await this.rateAndHold(input.apiKeyId, input.rateLimit, input.requestId, hold);
    const rate = first.rate;
    if (!first.totals) throw rateLimited(rate);
    let totals: HoldTotals = first.totals;
    // Twice at most: once more after applying settled calls not yet in the ledger (as admit()).
    for (let attempt = 0; ; attempt++) {
      const funds = await this.fundsHolding(hold, input.accountId, input.apiKeyId);
      const key = funds?.key;
      const balance = funds?.balanceMicros ?? 0;
      const others = { account: totals.accountHeldMicros - hold.amountMicros, key: totals.keyHeldMicros - hold.amountMicros };
      const walletFree = balance - others.account;
      const keyFree = key?.budgetMicros === null || key === undefined ? Number.POSITIVE_INFINITY : key.budgetMicros - key.spentMicros - others.key;
      const refusal = emptyOrExhausted(balance, key);
      if (!refusal && hold.amountMicros <= Math.min(walletFree, keyFree)) return { hold, maxTokens: 0, rate, promptTokens: 0 };
      await this.holds.release(hold);
      if (attempt === 0 && this.store.barrier.pass()) {
        totals = await this.holds.acquire(hold);
        continue;
      }
      if (refusal) throw refusal;
      const cost = formatInrDisplay(hold.amountMicros);
      throw keyFree < walletFree
        ? new GatewayError({
            status: 402,
            type: 'budget_exceeded',
            reason: 'budget_exceeded',
            message: `this API key's remaining budget (${formatInrDisplay(Math.max(0, keyFree))}${others.key > 0 ? ` after ${formatInrDisplay(others.key)} held by calls in progress` : ''}) does not cover ${input.what} on ${input.model.id} (${cost})`,
          })
        : new GatewayError({
            status: 402,
            type: 'insufficient_credits',
            reason: 'insufficient_credits',
            message: `insufficient credits: the wallet balance is ${formatInrDisplay(balance)}${others.account > 0 ? ` with ${formatInrDisplay(others.account)} held by calls in progress` : ''}, which does not cover ${input.what} on ${input.model.id} (${cost}); top up the wallet`,
          });
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
    const first = input.unmetered ? { rate: UNMETERED, totals: await this.holds.acquire(hold) } : await this.rateAndHold(input.apiKeyId, input.rateLimit, input.requestId, hold);
    const rate = first.rate;
    if (!first.totals) throw rateLimited(rate);
    let admitted: HoldTotals | undefined = first.totals;
    for (let attempt = 0; attempt < 2; attempt++) {
      hold.amountMicros = worstCaseMicros(input.model.pricing, promptTokens, maxTokens, input.cacheWrites);
      const totals = admitted ?? (await this.holds.acquire(hold));
      admitted = undefined;
      // Read after the hold is taken (see holds.ts): one read of each, fresh from the store.
      const funds = await this.fundsHolding(hold, input.accountId, input.apiKeyId);
      const key = funds?.key;
      const balance = funds?.balanceMicros ?? 0;
      const refusal = emptyOrExhausted(balance, key);
      if (refusal) {
        await this.holds.release(hold);
        if (!drained && (drained = this.store.barrier.pass())) {
          attempt -= 1;
          continue;
        }
        throw refusal;
      }
      const others = { account: totals.accountHeldMicros - hold.amountMicros, key: totals.keyHeldMicros - hold.amountMicros };
      const walletFree = balance - others.account;
      const keyFree = key?.budgetMicros === null || key === undefined ? Number.POSITIVE_INFINITY : key.budgetMicros - key.spentMicros - others.key;
      const free = Math.min(walletFree, keyFree);
      if (hold.amountMicros <= free) return clampedFrom === undefined ? { hold, maxTokens, rate, promptTokens } : { hold, maxTokens, rate, promptTokens, clampedFrom };
      await this.holds.release(hold);
      if (!drained && (drained = this.store.barrier.pass())) {
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
      throw keyFree < walletFree
        ? new GatewayError({
            status: 402,
            type: 'budget_exceeded',
            reason: 'budget_exceeded',
            message: `this API key's remaining budget (${formatInrDisplay(Math.max(0, keyFree))}${others.key > 0 ? ` after ${formatInrDisplay(others.key)} held by calls in progress` : ''}) ${coverage(affordable, input)}`,
          })
        : new GatewayError({
            status: 402,
            type: 'insufficient_credits',
            reason: 'insufficient_credits',
            message: `insufficient credits: the wallet balance is ${formatInrDisplay(balance)}${others.account > 0 ? ` with ${formatInrDisplay(others.account)} held by calls in progress` : ''}, which ${coverage(affordable, input)}; top up the wallet`,
          });
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
    throw new GatewayError({
      status: 503,
      type: 'service_unavailable',
      reason: 'limits_unavailable',
      message: 'the gateway cannot check rate limits and wallet holds right now (its Redis is unreachable); retry shortly',
      retryable: true,
      cause: error,
    });
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

/** 402 for a key that has used its whole budget: it stops working, free requests (count_tokens) included. */
export function exhaustedKey(key: { budgetMicros: number | null; spentMicros: number }): GatewayError | undefined {
  if (key.budgetMicros === null || key.spentMicros < key.budgetMicros) return undefined;
  return new GatewayError({
    status: 402,
    type: 'budget_exceeded',
    reason: 'budget_exceeded',
    message: `this API key has used its budget of ${formatInrDisplay(key.budgetMicros)}: raise the key's budget or use another key`,
  });
}

/** An empty wallet pays for nothing, not even a free model's call; a key past its budget neither. */
function emptyOrExhausted(balance: number, key: Funds['key']): GatewayError | undefined {
  const spent = key ? exhaustedKey(key) : undefined;
  if (spent) return spent;
  if (balance <= 0) {
    return new GatewayError({
      status: 402,
      type: 'insufficient_credits',
      reason: 'insufficient_credits',
      message: `insufficient credits: the wallet balance is ${formatInrDisplay(balance)}; top up the wallet`,
    });
  }
  return undefined;
}

function coverage(affordable: number, input: AdmissionInput): string {
  return affordable >= 1 ? `covers at most ${input.maxTokensField}=${affordable} for ${input.model.id}` : `does not cover this prompt on ${input.model.id}`;
}

/** 429 for a key past its requests per minute, with Retry-After and the x-ratelimit-* headers. */
export function rateLimited(rate: RateDecision): GatewayError {
  return new GatewayError({
    status: 429,
    type: 'rate_limit_exceeded',
    reason: 'rate_limit_exceeded',
    message: `rate limit of ${rate.limit} requests per minute reached for this API key: retry in ${Math.ceil(rate.retryAfterMs / 1000)} s`,
    headers: { 'retry-after': String(Math.ceil(rate.retryAfterMs / 1000)), ...rateHeaders(rate) },
  });
}

/** The x-ratelimit-* headers OpenAI clients read. */
export function rateHeaders(rate: RateDecision): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(rate.limit),
    'x-ratelimit-remaining-requests': String(rate.remaining),
    // Whole milliseconds as seconds ("1.25s"): the shortest form, as toFixed(3) trimmed gave.
    'x-ratelimit-reset-requests': `${Math.round(rate.resetMs) / 1000}s`,
  };
}
