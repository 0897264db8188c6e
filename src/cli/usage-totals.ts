import type { UsageView } from './commands/types.js';

/** Running totals of `gateway usage tail` (kept in JSON mode too, for --count): no UI code here. */

/** Prompt-cache tokens of a call: read and written (both part of IN); 0 from daemons without the field. */
export function cacheTokens(u: UsageView): { read: number; write: number } {
  return { read: u.cache_read_tokens ?? 0, write: u.cache_write_tokens ?? 0 };
}

export interface UsageTotals {
  calls: number;
  failed: number;
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens: read from and written to prompt caches. */
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** µINR, summed exactly. */
  costMicros: number;
}

export const NO_USAGE: UsageTotals = { calls: 0, failed: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 0 };

export function addToTotals(totals: UsageTotals, row: UsageView, costMicros: number): UsageTotals {
  const cache = cacheTokens(row);
  return {
    calls: totals.calls + 1,
    failed: totals.failed + (row.status >= 400 ? 1 : 0),
    inputTokens: totals.inputTokens + row.input_tokens,
    outputTokens: totals.outputTokens + row.output_tokens,
    cacheReadTokens: totals.cacheReadTokens + cache.read,
    cacheWriteTokens: totals.cacheWriteTokens + cache.write,
    costMicros: totals.costMicros + costMicros,
  };
}
