import { toUsageRecord, type NewUsage, type UsageDay, type UsageFilter, type UsageRecord, type UsageRow, type UsageTop, type UsageTotals } from '../usage.js';
import type { PgSql } from './db.js';

/**
 * Usage rows on PostgreSQL (issue 16): the SQLite `UsageRepo` contract, async. Rows go in
 * with their settlement batch (in `PgLedger.chargeMany`'s statement), so a
 * charge never exists without its row.
 */

/** The columns of a new row, defaults filled as the SQLite repo fills them. */
export function usageColumns(usage: NewUsage) {
  return {
    request_id: usage.requestId,
    account_id: usage.accountId,
    api_key_id: usage.apiKeyId,
    model: usage.model,
    provider: usage.provider,
    endpoint: usage.endpoint,
    stream: usage.stream,
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_read_tokens: usage.cacheReadTokens,
    cache_write_tokens: usage.cacheWriteTokens,
    unit: usage.unit ?? 'tokens',
    units: usage.units ?? usage.inputTokens + usage.outputTokens,
    cost_micros: usage.costMicros,
    uncharged_micros: usage.unchargedMicros ?? 0,
    status: usage.status,
    error_type: usage.errorType,
    latency_ms: usage.latencyMs,
    created_at: usage.createdAt,
    cache: usage.cache ?? null,
    cache_similarity: usage.cacheSimilarity ?? null,
    cache_saved_micros: usage.cacheSavedMicros ?? 0,
    deployment: usage.deployment ?? null,
    attempts: usage.attempts ?? 1,
    requested_model: usage.requestedModel ?? null,
  };
}

/** The columns a new row sets (the rest are the table's defaults: its id). */
export const USAGE_COLUMNS: readonly string[] = Object.keys(usageColumns({} as NewUsage));

export class PgUsage {
  constructor(private readonly sql: PgSql) {}

  async has(requestId: string): Promise<boolean> {
    const rows = await this.sql`SELECT 1 FROM usage WHERE request_id = ${requestId}`;
    return rows.length > 0;
  }

  /** Rows in one statement (per 1,000); returns them with their ids. */
  async insertMany(rows: readonly NewUsage[]): Promise<UsageRecord[]> {
    const out: UsageRecord[] = [];
    for (let i = 0; i < rows.length; i += 1000) {
      const inserted = await this.sql<UsageRow[]>`INSERT INTO usage ${this.sql(rows.slice(i, i + 1000).map(usageColumns))} RETURNING *`;
      for (const row of inserted) out.push(toUsageRecord(row));
    }
    return out;
  }

  /** Newest first (the filters of the SQLite repo). */
  async list(filter: UsageFilter): Promise<UsageRecord[]> {
    const sql = this.sql;
    const where = [sql`TRUE`];
    if (filter.accountId !== undefined) where.push(sql`account_id = ${filter.accountId}`);
    if (filter.apiKeyId !== undefined) {
      where.push(sql`api_key_id = ${filter.apiKeyId}`);
      // The key's account, so that the account index narrows the walk (as in SQLite: no key index).
      if (filter.accountId === undefined) where.push(sql`account_id = (SELECT account_id FROM api_keys WHERE id = ${filter.apiKeyId})`);
    }
    // The model that served, or the alias the client named it by.
    if (filter.model !== undefined) where.push(sql`(model = ${filter.model} OR requested_model = ${filter.model})`);
    if (filter.since !== undefined) where.push(sql`created_at >= ${filter.since}`);
    if (filter.until !== undefined) where.push(sql`created_at < ${filter.until}`);
    if (filter.before !== undefined) where.push(sql`id < ${filter.before}`);
    if (filter.endpoint !== undefined) where.push(sql`endpoint = ${filter.endpoint}`);
    if (filter.outcome !== undefined) where.push(filter.outcome === 'ok' ? sql`status < 400` : sql`status >= 400`);
    const clause = where.reduce((all, part) => sql`${all} AND ${part}`);
    const rows = await sql<UsageRow[]>`SELECT * FROM usage WHERE ${clause} ORDER BY id DESC LIMIT ${filter.limit}`;
    return rows.map(toUsageRecord);
  }

  /** An account's calls, failures and spend in [since, until). */
  async totals(accountId: string, since: number, until: number): Promise<UsageTotals> {
    const [row] = await this.sql<Array<{ calls: number; errors: number; cost: number }>>`
      SELECT count(*)::bigint AS calls, count(*) FILTER (WHERE status >= 400)::bigint AS errors, coalesce(sum(cost_micros), 0)::bigint AS cost
        FROM usage WHERE account_id = ${accountId} AND created_at >= ${since} AND created_at < ${until}`;
    return { calls: row?.calls ?? 0, errors: row?.errors ?? 0, costMicros: row?.cost ?? 0 };
  }

  /** An account's calls and spend per UTC day and model since `since`, oldest first. */
  async daily(accountId: string, since: number): Promise<UsageDay[]> {
    const rows = await this.sql<Array<{ day: string; model: string; calls: number; errors: number; cost: number }>>`
      SELECT to_char(to_timestamp(created_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, model,
             count(*)::bigint AS calls, count(*) FILTER (WHERE status >= 400)::bigint AS errors, sum(cost_micros)::bigint AS cost
        FROM usage WHERE account_id = ${accountId} AND created_at >= ${since} GROUP BY day, model ORDER BY day, model`;
    return rows.map((row) => ({ day: row.day, model: row.model, calls: row.calls, errors: row.errors, costMicros: row.cost }));
  }

  /** An account's dearest keys or models since `since`. */
  async top(accountId: string, since: number, by: 'key' | 'model', limit: number): Promise<UsageTop[]> {
    const column = by === 'key' ? this.sql`api_key_id` : this.sql`model`;
    const rows = await this.sql<Array<{ id: string | null; calls: number; errors: number; cost: number }>>`
      SELECT ${column} AS id, count(*)::bigint AS calls, count(*) FILTER (WHERE status >= 400)::bigint AS errors, sum(cost_micros)::bigint AS cost
        FROM usage WHERE account_id = ${accountId} AND created_at >= ${since} GROUP BY 1 ORDER BY cost DESC, calls DESC LIMIT ${limit}`;
    return rows.map((row) => ({ id: row.id, calls: row.calls, errors: row.errors, costMicros: row.cost }));
  }
}
