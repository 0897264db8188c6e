import { Box, Text } from 'ink';
import type { UsageView } from '../commands/types.js';
import { formatInrDisplay } from '../../core/money.js';
import { inr } from '../render.js';
import { Table, type Column } from './components.js';
import { cacheTokens, type UsageTotals } from '../usage-totals.js';

/** Usage rows and the live tail view: props in, no I/O. */

export const USAGE_COLUMNS: Column<UsageView>[] = [
  { title: 'TIME', value: (u) => u.created_at.slice(11, 19) },
  { title: 'ACCOUNT', value: (u) => u.account_email ?? u.account_id },
  { title: 'KEY', value: (u) => u.api_key_name ?? u.api_key_id ?? '' },
  // An alias the client used shows before the model it stands for (`claude-haiku-5-5 → openai/gpt-4o-mini`).
  { title: 'MODEL', value: (u) => (u.requested_model ? `${u.requested_model} → ${u.model}` : u.model) },
  { title: 'IN', value: (u) => (u.unit === 'tokens' || u.unit === undefined ? String(u.input_tokens) : unitsText(u)), align: 'right' },
  { title: 'OUT', value: (u) => (u.unit === 'tokens' || u.unit === undefined ? String(u.output_tokens) : ''), align: 'right' },
  { title: 'COST', value: (u) => inr(u.cost), align: 'right' },
  { title: 'LATENCY', value: (u) => `${u.latency_ms} ms`, align: 'right' },
  { title: 'STATUS', value: (u) => (u.error_type ? `${u.status} ${u.error_type}` : String(u.status)) },
];


/**
 * "read/written" tokens of the provider's prompt cache (Anthropic's cache_control), for the calls
 * that used one; not the gateway's response cache.
 */
export const CACHE_COLUMN: Column<UsageView> = {
  title: 'PROMPT CACHE R/W',
  value: (u) => {
    const { read, write } = cacheTokens(u);
    return read > 0 || write > 0 ? `${read}/${write}` : '';
  },
  align: 'right',
};

/** The gateway's response cache: "exact", "semantic 0.97" (its similarity), "miss", "bypass". */
export const RESPONSE_CACHE_COLUMN: Column<UsageView> = {
  title: 'CACHE',
  value: (u) => (u.cache === 'semantic' && typeof u.cache_similarity === 'number' ? `semantic ${u.cache_similarity.toFixed(2)}` : (u.cache ?? '')),
};

/**
 * The usage table's columns: PROMPT CACHE R/W (after IN) only when some row read or wrote a
 * prompt cache; CACHE (after COST) only when the response cache answered some row.
 */
export function usageColumns(rows: readonly UsageView[]): Column<UsageView>[] {
  let columns = USAGE_COLUMNS;
  if (rows.some((u) => cacheTokens(u).read > 0 || cacheTokens(u).write > 0)) {
    const at = columns.findIndex((column) => column.title === 'IN') + 1;
    columns = [...columns.slice(0, at), CACHE_COLUMN, ...columns.slice(at)];
  }
  if (rows.some((u) => u.cache === 'exact' || u.cache === 'semantic')) {
    const at = columns.findIndex((column) => column.title === 'COST') + 1;
    columns = [...columns.slice(0, at), RESPONSE_CACHE_COLUMN, ...columns.slice(at)];
  }
  return columns;
}

const UNIT_SHORT: Record<string, string> = { characters: 'chars', seconds: 's', images: 'img' };

/** A media call's billed quantity with its unit ("412 chars", "31 s", "2 img"). */
export function unitsText(u: Pick<UsageView, 'unit' | 'units'>): string {
  return `${u.units ?? 0} ${UNIT_SHORT[u.unit ?? ''] ?? u.unit ?? ''}`;
}

export function UsageTail({ rows, totals, url }: { rows: UsageView[]; totals: UsageTotals; url: string }) {
  return (
    <Box flexDirection="column">
      <Text dimColor>Live usage from {url} — Ctrl+C to stop</Text>
      <Table columns={usageColumns(rows)} rows={rows} empty="waiting for calls…" />
      <Text>
        <Text bold>{totals.calls}</Text> calls ({totals.failed} failed) · <Text bold>{totals.inputTokens}</Text> in
        {totals.cacheReadTokens > 0 || totals.cacheWriteTokens > 0 ? (
          <>
            {' '}(prompt cache: <Text bold>{totals.cacheReadTokens}</Text> read, <Text bold>{totals.cacheWriteTokens}</Text> written)
          </>
        ) : null}{' '}
        · <Text bold>{totals.outputTokens}</Text> out ·{' '}
        <Text bold color="green">
          {formatInrDisplay(totals.costMicros)}
        </Text>
      </Text>
    </Box>
  );
}
