import { GatewayError } from '../errors.js';
import type { HoldRef, HoldTotals } from '../limits/holds.js';
import type { RateDecision } from '../limits/rate-limit.js';
import type { TokenDecision } from '../limits/tokens.js';
import { formatInrDisplay } from '../money.js';

/**
 * Admission's refusals (admission.ts): which limit leaves a call least room (the wallet, the
 * key's budget in its period, the account's spend limit) and the 402s and 429s that say so.
 */

/** 402 for a key that has used its whole budget: it stops working, free requests (count_tokens) included. */
export function exhaustedKey(key: { budgetMicros: number | null; spentMicros: number; resetsAt?: number | undefined }): GatewayError | undefined {
  if (key.budgetMicros === null || key.spentMicros < key.budgetMicros) return undefined;
  return new GatewayError({
    status: 402,
    type: 'budget_exceeded',
    reason: 'budget_exceeded',
    message:
      key.resetsAt === undefined
        ? `this API key has used its budget of ${formatInrDisplay(key.budgetMicros)}: raise the key's budget or use another key`
        : `this API key has used its budget of ${formatInrDisplay(key.budgetMicros)} for this period: it renews at ${new Date(key.resetsAt).toISOString()}`,
  });
}

/** The limits a call is admitted under: the wallet, the key's budget, the account's spend limit. */
export interface Limits {
  balance: number;
  /** `spentMicros`: in the budget's current period (its life without one). */
  key: { budgetMicros: number | null; spentMicros: number; resetsAt: number | undefined } | undefined;
  account: { limitMicros: number; spentMicros: number; resetsAt: number | undefined } | undefined;
}

/** What each limit leaves for this call once the other calls' holds are counted, and the least of them. */
export interface Room {
  wallet: number;
  key: number;
  account: number;
  free: number;
  others: { account: number; key: number };
}

export function roomOf(limits: Limits, totals: HoldTotals, hold: HoldRef): Room {
  const others = { account: totals.accountHeldMicros - hold.amountMicros, key: totals.keyHeldMicros - hold.amountMicros };
  const wallet = limits.balance - others.account;
  const key = limits.key === undefined || limits.key.budgetMicros === null ? Number.POSITIVE_INFINITY : limits.key.budgetMicros - limits.key.spentMicros - others.key;
  const account = limits.account === undefined ? Number.POSITIVE_INFINITY : limits.account.limitMicros - limits.account.spentMicros - others.account;
  return { wallet, key, account, free: Math.min(wallet, key, account), others };
}

/** " (renews 2026-12-01T00:00:00+05:30)"-style tail for a limit that renews. */
function renewal(resetsAt: number | undefined): string {
  return resetsAt === undefined ? '' : `; it renews at ${new Date(resetsAt).toISOString()}`;
}

/**
 * Refusals that mean a budget or spend limit is used up (its 100% alert): it is spent, or what
 * it leaves (after the other calls' holds) is a fifth of it or less. A large call refused by a
 * budget far from spent is not one.
 */
export const exhaustion = new WeakSet<GatewayError>();

function exhausted(error: GatewayError, limit: number, room: number): GatewayError {
  if (room * 5 <= limit) exhaustion.add(error);
  return error;
}

/** 402 naming the limit that leaves least room (`what`: "does not cover ..."). */
export function notCovered(limits: Limits, room: Room, what: string): GatewayError {
  const held = (micros: number, word: string) => (micros > 0 ? ` ${word} ${formatInrDisplay(micros)} held by calls in progress` : '');
  if (room.account < room.key && room.account < room.wallet && limits.account) {
    return exhausted(
      accountLimitError(`this account's spend limit leaves ${formatInrDisplay(Math.max(0, room.account))}${held(room.others.account, 'after')}, which ${what}${renewal(limits.account.resetsAt)}`),
      limits.account.limitMicros,
      room.account,
    );
  }
  if (room.key < room.wallet) {
    const error = new GatewayError({
      status: 402,
      type: 'budget_exceeded',
      reason: 'budget_exceeded',
      message: `this API key's remaining budget (${formatInrDisplay(Math.max(0, room.key))}${held(room.others.key, 'after')}) ${what}${renewal(limits.key?.resetsAt)}`,
    });
    return limits.key?.budgetMicros ? exhausted(error, limits.key.budgetMicros, room.key) : error;
  }
  return new GatewayError({
    status: 402,
    type: 'insufficient_credits',
    reason: 'insufficient_credits',
    message: `insufficient credits: the wallet balance is ${formatInrDisplay(limits.balance)}${held(room.others.account, 'with')}, which ${what}; top up the wallet`,
  });
}

function accountLimitError(message: string): GatewayError {
  return new GatewayError({ status: 402, type: 'budget_exceeded', reason: 'account_spend_limit', message });
}

/** An empty wallet pays for nothing, not even a free model's call; a key past its budget, or an account past its spend limit, neither. */
export function emptyOrExhausted(limits: Limits): GatewayError | undefined {
  const spent = limits.key ? exhaustedKey(limits.key) : undefined;
  if (spent) {
    exhaustion.add(spent);
    return spent;
  }
  const account = limits.account;
  if (account && account.spentMicros >= account.limitMicros) {
    const error = accountLimitError(`this account has reached its spend limit of ${formatInrDisplay(account.limitMicros)}${renewal(account.resetsAt)}; an admin can raise it`);
    exhaustion.add(error);
    return error;
  }
  if (limits.balance <= 0) {
    return new GatewayError({
      status: 402,
      type: 'insufficient_credits',
      reason: 'insufficient_credits',
      message: `insufficient credits: the wallet balance is ${formatInrDisplay(limits.balance)}; top up the wallet`,
    });
  }
  return undefined;
}

/** 429 for a key past its tokens per minute, with Retry-After and OpenAI's token headers. */
export function tokensExceeded(decision: TokenDecision, bound: number): GatewayError {
  const seconds = Math.ceil(decision.retryAfterMs / 1000);
  return new GatewayError({
    status: 429,
    type: 'rate_limit_exceeded',
    reason: 'tpm_limit_exceeded',
    message: `token limit of ${decision.limit} tokens per minute reached for this API key: ${decision.used} counted in the last minute (calls in progress at their bound), and this call may use ${bound}; retry in ${seconds} s`,
    retryable: true,
    headers: {
      'retry-after': String(seconds),
      'x-ratelimit-limit-tokens': String(decision.limit),
      'x-ratelimit-remaining-tokens': String(Math.max(0, decision.limit - decision.used)),
      'x-ratelimit-reset-tokens': `${Math.round(decision.retryAfterMs) / 1000}s`,
    },
  });
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
