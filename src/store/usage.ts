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
}

/** A row to insert; without `unit`/`units` it is a token call (journal lines from before those columns). */
export type NewUsage = Omit<UsageRecord, 'id' | 'unit' | 'units'> & { unit?: string; units?: number };

interface UsageRow {
  id: number;
  request_id: string;
  account_id: string;
  api_key_id: string | null;
  model: string;
  provider: string;
  endpoint: string;
  stream: number;
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
}

const toRecord = (row: UsageRow): UsageRecord => ({
  id: row.id,
  requestId: row.request_id,
  accountId: row.account_id,
  apiKeyId: row.api_key_id,
  model: row.model,
  provider: row.provider,
  endpoint: row.endpoint,
  stream: row.stream === 1,
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
});

export interface UsageFilter {
  accountId?: string;
  apiKeyId?: string;
  model?: string;
  /** Inclusive lower bound, ms. */
  since?: number;
  /** Exclusive upper bound, ms. */
  until?: number;
  /** Rows with id below this (paging, newest first). */
  before?: number;
  limit: number;
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
         cache_read_tokens, cache_write_tokens, unit, units, cost_micros, uncharged_micros, status, error_type, latency_ms, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
    );
    return { ...usage, unit: usage.unit ?? 'tokens', units: usage.units ?? usage.inputTokens + usage.outputTokens, id: Number(result.lastInsertRowid) };
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
    if (filter.model !== undefined) add('model = @model', 'model', filter.model);
    if (filter.since !== undefined) add('created_at >= @since', 'since', filter.since);
    if (filter.until !== undefined) add('created_at < @until', 'until', filter.until);
    if (filter.before !== undefined) add('id < @before', 'before', filter.before);
    const sql = `SELECT * FROM usage ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
    return (this.db.prepare(sql).all(params) as UsageRow[]).map(toRecord);
  }
}
