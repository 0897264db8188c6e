import type { Funds } from './types.js';

/**
 * What admission reads for a call, as both backends select it in one statement: the wallet,
 * the account's spend limit, and the key's budget (its columns NULL when the key is not the
 * account's). `FUNDS_COLUMNS` is the select list over `accounts a LEFT JOIN api_keys k`.
 */
export const FUNDS_COLUMNS =
  'a.balance_micros, a.spent_micros AS a_spent, a.spend_limit_micros, a.spend_period, a.period_start AS a_period_start, a.period_base_micros AS a_period_base, a.created_at AS a_created, ' +
  'k.budget_micros, k.spent_micros AS k_spent, k.budget_period, k.period_start AS k_period_start, k.period_base_micros AS k_period_base, k.created_at AS k_created';

export interface FundsRow {
  balance_micros: number;
  a_spent: number;
  spend_limit_micros: number | null;
  spend_period: string | null;
  a_period_start: number;
  a_period_base: number;
  a_created: number;
  budget_micros: number | null;
  k_spent: number | null;
  budget_period: string | null;
  k_period_start: number | null;
  k_period_base: number | null;
  k_created: number | null;
}

export function toFunds(row: FundsRow): Funds {
  return {
    balanceMicros: row.balance_micros,
    account: {
      spentMicros: row.a_spent,
      spendLimitMicros: row.spend_limit_micros,
      spendPeriod: row.spend_period,
      periodStart: row.a_period_start,
      periodBaseMicros: row.a_period_base,
      createdAt: row.a_created,
    },
    key:
      row.k_spent === null
        ? undefined
        : {
            budgetMicros: row.budget_micros,
            spentMicros: row.k_spent,
            budgetPeriod: row.budget_period,
            periodStart: row.k_period_start ?? 0,
            periodBaseMicros: row.k_period_base ?? 0,
            createdAt: row.k_created ?? 0,
          },
  };
}
