import type { ReadBarrier } from './barrier.js';
import type { Db } from './db.js';

export interface UsageRecord {
  id: number;
  requestId: string;
  accountId: string;
  apiKeyId: string | null;
  model: string;
  provider: string;
  endpoint: string;
  stream: boolean;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** What the call is billed in: tokens (chat, embeddings), characters (speech), seconds (transcription), images. */
  unit: string;
  /** How many of `unit` it was billed for (chat: input plus output tokens). */
  units: number;
  costMicros: number;
  /** What the provider's usage cost beyond the call's hold: not charged (the charge is capped at the hold). */
  unchargedMicros: number;
  status: number;
  errorType: string | null;
  latencyMs: number;
  createdAt: number;
  /** The response cache's part in a chat call: a hit (exact, semantic), a miss, bypassed; null: not cached (off, media). */
  cache: CacheOutcome | null;
  /** A semantic hit's cosine similarity. */
  cacheSimilarity: number | null;
  /** What a hit saved at list price (the answer's price less what the hit was charged). */
  cacheSavedMicros: number;
  /** The deployment that served (`<provider>:<upstream model>`); null for rows from before routing, and calls no upstream served. */
  deployment: string | null;
  /** Upstream attempts the call made (retries and fallbacks included); 0 for a cache hit. */
  attempts: number;
  /** The alias the client named the model by (`aliases:`); `model` is the catalog model it stands for. Null: named directly. */
  requestedModel: string | null;
}

export type CacheOutcome = 'exact' | 'semantic' | 'miss' | 'bypass';

/** A row to insert; without `unit`/`units` it is a token call (journal lines from before those columns). */
export type NewUsage = Omit<UsageRecord, 'id' | 'unit' | 'units' | 'cache' | 'cacheSimilarity' | 'cacheSavedMicros' | 'deployment' | 'attempts' | 'requestedModel'> & {
  deployment?: string | null;
  requestedModel?: string | null;
  attempts?: number;
  unit?: string;
  units?: number;
  cache?: CacheOutcome | null;
  cacheSimilarity?: number | null;
  cacheSavedMicros?: number;
};

/** A usage row, as both backends read it (`stream` is 0/1 in SQLite, a boolean in PostgreSQL). */
export interface UsageRow {
  id: number;
  request_id: string;
  account_id: string;
  api_key_id: string | null;
  model: string;
  provider: string;
  endpoint: string;
  stream: number | boolean;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  unit: string;
  units: number;
  cost_micros: number;
  uncharged_micros: number;
  status: number;
  error_type: string | null;
  latency_ms: number;
  created_at: number;
  cache: CacheOutcome | null;
  cache_similarity: number | null;
  cache_saved_micros: number;
  deployment: string | null;
  attempts: number;
  requested_model: string | null;
}

export const toUsageRecord = (row: UsageRow): UsageRecord => ({
  id: row.id,
  requestId: row.request_id,
  accountId: row.account_id,
  apiKeyId: row.api_key_id,
  model: row.model,
  provider: row.provider,
  endpoint: row.endpoint,
  stream: row.stream === 1 || row.stream === true,
  inputTokens: row.input_tokens,
  outputTokens: row.output_tokens,
  cacheReadTokens: row.cache_read_tokens,
  cacheWriteTokens: row.cache_write_tokens,
  unit: row.unit,
  units: row.units,
  costMicros: row.cost_micros,
  unchargedMicros: row.uncharged_micros,
  status: row.status,
  errorType: row.error_type,
  latencyMs: row.latency_ms,
  createdAt: row.created_at,
  cache: row.cache,
  cacheSimilarity: row.cache_similarity,
  cacheSavedMicros: row.cache_saved_micros,
  deployment: row.deployment,
  attempts: row.attempts,
  // Absent from rows read by a query that names its columns (none today); null before the column existed.
  requestedModel: row.requested_model ?? null,
});

export interface UsageFilter {
  accountId?: string;
  apiKeyId?: string;
  /** A catalog model id (the model that served), or an alias (the name the client used). */
  model?: string;
  /** Inclusive lower bound, ms. */
  since?: number;
  /** Exclusive upper bound, ms. */
  until?: number;
  /** Rows with id below this (paging, newest first). */
  before?: number;
  /** The endpoint (chat.completions, embeddings, audio.speech, ...). */
  endpoint?: string;
  /** ok: status below 400; error: 400 and above. */
  outcome?: 'ok' | 'error';
  limit: number;
}

export interface UsageTotals {
  calls: number;
  errors: number;
  costMicros: number;
}

export interface UsageDay extends UsageTotals {
  /** YYYY-MM-DD (UTC). */
  day: string;
  model: string;
}

export interface UsageTop extends UsageTotals {
  /** The key id or the model. */
  id: string | null;
}

export class UsageRepo {
  private readonly insertStmt;
  private readonly existsStmt;

  constructor(
    private readonly db: Db,
    private readonly barrier?: ReadBarrier,
  ) {
    this.existsStmt = db.prepare('SELECT 1 FROM usage WHERE request_id = ?').pluck();
    this.insertStmt = db.prepare(
      `INSERT INTO usage (request_id, account_id, api_key_id, model, provider, endpoint, stream, input_tokens, output_tokens,
         cache_read_tokens, cache_write_tokens, unit, units, cost_micros, uncharged_micros, status, error_type, latency_ms, created_at,
         cache, cache_similarity, cache_saved_micros, deployment, attempts, requested_model)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** Whether a call's row is in (its charge, if any, went in with it). */
  has(requestId: string): boolean {
    return this.existsStmt.get(requestId) !== undefined;
  }

  insert(usage: NewUsage): UsageRecord {
    // Positional parameters: settlement inserts a row per call, and binding by name costs more.
    const result = this.insertStmt.run(
      usage.requestId,
      usage.accountId,
      usage.apiKeyId,
      usage.model,
      usage.provider,
      usage.endpoint,
      usage.stream ? 1 : 0,
      usage.inputTokens,
      usage.outputTokens,
      usage.cacheReadTokens,
      usage.cacheWriteTokens,
      // Absent in journal lines written before the columns existed (all token calls then).
      usage.unit ?? 'tokens',
      usage.units ?? usage.inputTokens + usage.outputTokens,
      usage.costMicros,
      // Absent in journal lines written before the column existed.
      usage.unchargedMicros ?? 0,
      usage.status,
      usage.errorType,
      usage.latencyMs,
      usage.createdAt,
      usage.cache ?? null,
      usage.cacheSimilarity ?? null,
      usage.cacheSavedMicros ?? 0,
      // Absent in journal lines written before the columns existed.
      usage.deployment ?? null,
      usage.attempts ?? 1,
      usage.requestedModel ?? null,
    );
    // Every field written out, not `{...usage, …}`: spreading the row into a new object cost
    // ~5 µs per settled call, as much as the INSERT itself (test/bench/diag/sqlite-settle.ts).
    return {
      id: Number(result.lastInsertRowid),
      requestId: usage.requestId,
      accountId: usage.accountId,
      apiKeyId: usage.apiKeyId,
      model: usage.model,
      provider: usage.provider,
      endpoint: usage.endpoint,
      stream: usage.stream,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cacheReadTokens: usage.cacheReadTokens,
      cacheWriteTokens: usage.cacheWriteTokens,
      unit: usage.unit ?? 'tokens',
      units: usage.units ?? usage.inputTokens + usage.outputTokens,
      costMicros: usage.costMicros,
      unchargedMicros: usage.unchargedMicros ?? 0,
      status: usage.status,
      errorType: usage.errorType,
      latencyMs: usage.latencyMs,
      createdAt: usage.createdAt,
      cache: usage.cache ?? null,
      cacheSimilarity: usage.cacheSimilarity ?? null,
      cacheSavedMicros: usage.cacheSavedMicros ?? 0,
      deployment: usage.deployment ?? null,
      attempts: usage.attempts ?? 1,
      requestedModel: usage.requestedModel ?? null,
    };
  }

  /** Newest first. */
  list(filter: UsageFilter): UsageRecord[] {
    this.barrier?.pass();
    const where: string[] = [];
    const params: Record<string, unknown> = { limit: filter.limit };
    const add = (clause: string, name: string, value: unknown): void => {
      where.push(clause);
      params[name] = value;
    };
    if (filter.accountId !== undefined) add('account_id = @accountId', 'accountId', filter.accountId);
    if (filter.apiKeyId !== undefined) {
      add('api_key_id = @apiKeyId', 'apiKeyId', filter.apiKeyId);
      // The key's account, so that the account index narrows the walk (there is no key index).
      if (filter.accountId === undefined) where.push('account_id = (SELECT account_id FROM api_keys WHERE id = @apiKeyId)');
    }
    // The model that served, or the alias the client named it by.
    if (filter.model !== undefined) add('(model = @model OR requested_model = @model)', 'model', filter.model);
    if (filter.since !== undefined) add('created_at >= @since', 'since', filter.since);
    if (filter.until !== undefined) add('created_at < @until', 'until', filter.until);
    if (filter.before !== undefined) add('id < @before', 'before', filter.before);
    if (filter.endpoint !== undefined) add('endpoint = @endpoint', 'endpoint', filter.endpoint);
    if (filter.outcome !== undefined) where.push(filter.outcome === 'ok' ? 'status < 400' : 'status >= 400');
    const sql = `SELECT * FROM usage ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
    return (this.db.prepare(sql).all(params) as UsageRow[]).map(toUsageRecord);
  }

  /** An account's calls, failures and spend in [since, until): one walk of the account index. */
  totals(accountId: string, since: number, until: number): UsageTotals {
    this.barrier?.pass();
    const row = this.db
      .prepare('SELECT COUNT(*) AS calls, COALESCE(SUM(status >= 400), 0) AS errors, COALESCE(SUM(cost_micros), 0) AS cost FROM usage WHERE account_id = ? AND created_at >= ? AND created_at < ?')
      .get(accountId, since, until) as { calls: number; errors: number; cost: number };
    return { calls: row.calls, errors: row.errors, costMicros: row.cost };
  }

  /** An account's calls and spend per UTC day and model since `since`, oldest first. */
  daily(accountId: string, since: number): UsageDay[] {
    this.barrier?.pass();
    const rows = this.db
      .prepare(
        `SELECT strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS day, model, COUNT(*) AS calls, SUM(status >= 400) AS errors, SUM(cost_micros) AS cost
           FROM usage WHERE account_id = ? AND created_at >= ? GROUP BY day, model ORDER BY day, model`,
      )
      .all(accountId, since) as Array<{ day: string; model: string; calls: number; errors: number; cost: number }>;
    return rows.map((row) => ({ day: row.day, model: row.model, calls: row.calls, errors: row.errors, costMicros: row.cost }));
  }

  /** An account's dearest keys or models since `since`. */
  top(accountId: string, since: number, by: 'key' | 'model', limit: number): UsageTop[] {
    this.barrier?.pass();
    const column = by === 'key' ? 'api_key_id' : 'model';
    const rows = this.db
      .prepare(
        `SELECT ${column} AS id, COUNT(*) AS calls, SUM(status >= 400) AS errors, SUM(cost_micros) AS cost
           FROM usage WHERE account_id = ? AND created_at >= ? GROUP BY ${column} ORDER BY cost DESC, calls DESC LIMIT ?`,
      )
      .all(accountId, since, limit) as Array<{ id: string | null; calls: number; errors: number; cost: number }>;
    return rows.map((row) => ({ id: row.id, calls: row.calls, errors: row.errors, costMicros: row.cost }));
  }
}
