import type { ModelConfig } from '../config/types.js';
import type { Catalog } from '../core/catalog.js';
import { microsToInr } from '../core/money.js';
import { toIso } from '../core/time.js';
import { DEFAULT_PERIOD_TIME_ZONE } from '../core/periods.js';
import { periodSpend } from '../core/spend.js';
import type { Account } from '../store/accounts.js';
import { keyStatus, type KeyRecord } from '../store/keys.js';
import type { LedgerEntry } from '../store/ledger.js';
import type { AlertRecord } from '../store/alerts.js';
import type { UsageRecord } from '../store/usage.js';

/** JSON views of stored rows: INR numbers, ISO times, never a secret or a hash. */

/** `periods.timeZone`: governance.timezone, for the spend limit's calendar periods. */
export function presentAccount(account: Account, periods: { now?: number; timeZone?: string } = {}) {
  const limit = account.spendLimitMicros;
  const spend = limit === null ? undefined : periodSpend(account, account.spendPeriod, periods.now ?? Date.now(), periods.timeZone ?? DEFAULT_PERIOD_TIME_ZONE);
  return {
    id: account.id,
    email: account.email,
    name: account.name,
    role: account.role,
    balance: microsToInr(account.balanceMicros),
    // What all of the account's keys together may spend per period (null: no limit).
    spend_limit: limit === null ? null : microsToInr(limit),
    spend_period: account.spendPeriod,
    spent_this_period: spend === undefined ? null : microsToInr(spend.spentMicros),
    period_resets_at: toIso(spend?.window?.resetsAt),
    created_at: toIso(account.createdAt),
  };
}

export function presentKey(key: KeyRecord, now: number, timeZone = DEFAULT_PERIOD_TIME_ZONE) {
  const spend = key.kind === 'api' ? periodSpend(key, key.budgetPeriod, now, timeZone) : undefined;
  const common = {
    id: key.id,
    object: key.kind === 'api' ? 'api_key' : 'management_key',
    account_id: key.accountId,
    name: key.name,
    masked_key: key.maskedKey,
  };
  const limits =
    key.kind === 'api'
      ? {
          rate_limit: key.rateLimit,
          cache: key.cache,
          // The spec: 0 means unlimited (stored as null).
          budget: key.budgetMicros === null ? 0 : microsToInr(key.budgetMicros),
          spent: microsToInr(key.spentMicros),
          // Empty: every model, from anywhere.
          models: key.models,
          allowed_ips: key.allowedIps,
          max_parallel: key.maxParallel,
          tpm_limit: key.tpmLimit,
          // null: the budget is for the key's life (spent_this_period is then its whole spend).
          budget_period: key.budgetPeriod,
          spent_this_period: microsToInr(spend?.spentMicros ?? key.spentMicros),
          period_resets_at: toIso(spend?.window?.resetsAt),
        }
      : {};
  return {
    ...common,
    ...limits,
    status: keyStatus(key, now, spend?.spentMicros),
    expires_at: toIso(key.expiresAt),
    created_at: toIso(key.createdAt),
    last_used_at: toIso(key.lastUsedAt),
    revoked_at: toIso(key.revokedAt),
  };
}

/** An alert as recorded: what was sent (its JSON body) and how the delivery went. */
export function presentAlert(alert: AlertRecord) {
  let payload: Record<string, unknown> = {};
  try {
    payload = JSON.parse(alert.payload) as Record<string, unknown>;
  } catch {
    // A row written by hand: shown without its body.
  }
  return {
    id: alert.id,
    event: alert.event,
    subject: alert.subject,
    account_id: alert.accountId,
    text: typeof payload.text === 'string' ? payload.text : '',
    payload,
    delivery: alert.delivery,
    attempts: alert.attempts,
    last_error: alert.lastError,
    created_at: toIso(alert.createdAt),
  };
}

export function presentLedgerEntry(entry: LedgerEntry) {
  return {
    id: entry.id,
    account_id: entry.accountId,
    kind: entry.kind,
    amount: microsToInr(entry.amountMicros),
    balance_after: microsToInr(entry.balanceAfterMicros),
    reference: entry.reference,
    request_id: entry.requestId,
    api_key_id: entry.apiKeyId,
    note: entry.note,
    created_by: entry.createdBy,
    created_at: toIso(entry.createdAt),
  };
}

/** Names shown next to usage ids (the tail view shows people names, not ids). */
export interface UsageNames {
  accountEmail: string | null;
  apiKeyName: string | null;
}

export function presentUsage(record: UsageRecord, names: UsageNames = { accountEmail: null, apiKeyName: null }) {
  return {
    id: record.id,
    request_id: record.requestId,
    account_id: record.accountId,
    account_email: names.accountEmail,
    api_key_id: record.apiKeyId,
    api_key_name: names.apiKeyName,
    model: record.model,
    provider: record.provider,
    endpoint: record.endpoint,
    stream: record.stream,
    input_tokens: record.inputTokens,
    output_tokens: record.outputTokens,
    cache_read_tokens: record.cacheReadTokens,
    cache_write_tokens: record.cacheWriteTokens,
    // The billed quantity in its unit: tokens (chat, embeddings), characters (speech),
    // seconds (transcription), images.
    unit: record.unit,
    units: record.units,
    cost: microsToInr(record.costMicros),
    // What the provider billed beyond the call's hold, not charged (0 for almost every call).
    uncharged: microsToInr(record.unchargedMicros),
    // The response cache: exact or semantic (a hit), miss, bypass; null where it did not apply.
    cache: record.cache,
    cache_similarity: record.cacheSimilarity,
    // What a hit saved at list price (INR).
    cache_saved: microsToInr(record.cacheSavedMicros),
    // Routing: the deployment that served (provider entry and upstream model) and the upstream attempts made.
    deployment: record.deployment,
    attempts: record.attempts,
    // The alias the client named the model by (`aliases:`); `model` is the catalog model billed. Null: named directly.
    requested_model: record.requestedModel,
    status: record.status,
    error_type: record.errorType,
    latency_ms: record.latencyMs,
    created_at: toIso(record.createdAt),
  };
}

/** The OpenAI `Model` object: exactly id, object, created, owned_by. */
export function presentOpenAiModel(model: ModelConfig) {
  return { id: model.id, object: 'model' as const, created: model.created, owned_by: model.provider };
}

/** The aliases of a catalog with their target models, in file order. */
function aliasEntries(catalog: Catalog): Array<{ name: string; pattern: boolean; model: ModelConfig }> {
  return catalog.aliases.flatMap((alias) => {
    const model = catalog.get(alias.target);
    return model ? [{ name: alias.name, pattern: alias.pattern, model }] : [];
  });
}

/**
 * GET /v1/models: every model, then the exact aliases (a glob is not a model id a client of
 * this list would pick); with `allows`, only the models (and aliases of models) it allows.
 */
export function presentOpenAiList(catalog: Catalog, allows: (model: ModelConfig) => boolean = () => true) {
  const aliases = aliasEntries(catalog).filter((alias) => !alias.pattern && allows(alias.model));
  return { object: 'list' as const, data: [...catalog.models.filter(allows).map(presentOpenAiModel), ...aliases.map((alias) => presentOpenAiAlias(alias.name, alias.model))] };
}

/** GET /api/models (and the MCP catalog resource): every model, then every alias, patterns included. */
export function presentCatalogList(catalog: Catalog) {
  return { object: 'list' as const, data: [...catalog.models.map(presentCatalogModel), ...aliasEntries(catalog).map((alias) => presentCatalogAlias(alias.name, alias.model, alias.pattern))] };
}

/** An alias (`aliases:`) in the OpenAI list: its target's fields under the alias's name, and `alias_of` naming the target. */
export function presentOpenAiAlias(name: string, target: ModelConfig) {
  return { ...presentOpenAiModel(target), id: name, alias_of: target.id };
}

/**
 * An alias in the public catalog: its target's entry (prices, limits: a call is billed at the
 * target's) under the alias's name, with `alias_of` and, for a glob, `alias_pattern: true`
 * (`*` is any run of characters; the name is then not itself a model a client picks).
 */
export function presentCatalogAlias(name: string, target: ModelConfig, pattern: boolean) {
  return { ...presentCatalogModel(target), id: name, alias_of: target.id, alias_pattern: pattern };
}

/** The unit a model's `context_window` counts: a speech or image model limits characters of input. */
const INPUT_UNIT: Record<ModelConfig['type'], 'tokens' | 'characters'> = {
  chat: 'tokens',
  embedding: 'tokens',
  speech: 'characters',
  transcription: 'tokens',
  image: 'characters',
};

/**
 * The public catalog entry (the spec's fields: id, name, provider, context_window,
 * input_cost_per_1m, output_cost_per_1m, INR numbers) and, beside them, every price of the
 * model in `pricing` (media models are priced per character, minute or image, and show 0 in
 * the per-1M-token fields when they have no token price).
 */
export function presentCatalogModel(model: ModelConfig) {
  const p = model.pricing;
  const price = (micros: number | undefined): number | null => (micros === undefined ? null : microsToInr(micros));
  return {
    id: model.id,
    name: model.name,
    provider: model.provider,
    type: model.type,
    // An integer for every model, in the unit of its input limit; 0 where none applies.
    context_window: model.contextWindow ?? 0,
    context_window_unit: model.contextWindow === undefined ? null : INPUT_UNIT[model.type],
    input_cost_per_1m: microsToInr(p.inputPer1M),
    output_cost_per_1m: microsToInr(p.outputPer1M),
    max_output_tokens: model.maxOutputTokens ?? null,
    pricing: {
      currency: 'INR',
      input_per_1m: price(p.inputPer1M),
      output_per_1m: price(p.outputPer1M),
      cache_read_per_1m: price(p.cacheReadPer1M),
      cache_write_per_1m: price(p.cacheWritePer1M),
      cache_write_1h_per_1m: price(p.cacheWrite1hPer1M),
      input_per_1m_chars: price(p.inputPer1MChars),
      per_minute: price(p.perMinute),
      per_image: price(p.perImage),
      image_prices: p.imagePrices ? Object.fromEntries(Object.entries(p.imagePrices).map(([key, micros]) => [key, microsToInr(micros)])) : null,
      // What a call of this model is billed in (speech per character, transcription per second).
      billed_in: BILLED_IN[model.type],
    },
    ...(model.embedding ? { embedding: { dimensions: model.embedding.dimensions, min_dimensions: model.embedding.minDimensions ?? null, max_inputs: model.embedding.maxInputs } } : {}),
    ...(model.speech ? { speech: { formats: model.speech.formats, speed_min: model.speech.speedMin, speed_max: model.speech.speedMax, instructions: model.speech.instructions } } : {}),
    ...(model.transcription ? { transcription: { response_formats: model.transcription.responseFormats, timestamps: model.transcription.timestamps, min_billed_seconds: model.transcription.minBilledSeconds } } : {}),
    ...(model.image ? { image: { sizes: model.image.sizes, qualities: model.image.qualities, max_images: model.image.maxImages } } : {}),
  };
}

const BILLED_IN: Record<ModelConfig['type'], 'tokens' | 'characters' | 'seconds' | 'images'> = {
  chat: 'tokens',
  embedding: 'tokens',
  speech: 'characters',
  transcription: 'seconds',
  image: 'images',
};
