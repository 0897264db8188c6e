import { parseInr } from '../core/money.js';
import { isRecord, Problems, readInt, readEnum, readString, type Raw } from './fields.js';
import { MODEL_TYPES, type ModelConfig, type ModelPricing, type ModelType } from './types.js';

/**
 * The model catalog: `config/models.yaml` entries, with the config file's `models` list
 * merged over them by id (field by field, so an override can change only a price).
 */

const MODEL_KEYS = [
  'id',
  'name',
  'type',
  'upstream_model',
  'context_window',
  'max_output_tokens',
  'input_cost_per_1m',
  'output_cost_per_1m',
  'cache_read_cost_per_1m',
  'cache_write_cost_per_1m',
  'input_cost_per_1m_chars',
  'cost_per_minute',
  'cost_per_image',
  'created',
] as const;

export const MODEL_ID = /^([a-z0-9][a-z0-9_-]{0,62})\/([A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199})$/;

interface SourcedEntry {
  raw: Raw;
  path: string;
}

/** Merges override entries over base entries by id; entries without a usable id are reported. */
export function mergeModelEntries(base: SourcedEntry[], overrides: SourcedEntry[], problems: Problems): SourcedEntry[] {
  const byId = new Map<string, SourcedEntry>();
  for (const list of [base, overrides]) {
    const seen = new Set<string>();
    for (const entry of list) {
      const id = entry.raw.id;
      if (typeof id !== 'string' || id === '') {
        problems.add(`${entry.path}.id`, 'is required');
        continue;
      }
      if (seen.has(id)) {
        problems.add(`${entry.path}.id`, `duplicate model id '${id}'`);
        continue;
      }
      seen.add(id);
      const previous = byId.get(id);
      byId.set(id, previous ? { raw: { ...previous.raw, ...entry.raw }, path: entry.path } : entry);
    }
  }
  return [...byId.values()];
}

export function toSourcedEntries(list: unknown, path: string, problems: Problems): SourcedEntry[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) {
    problems.add(path, 'must be a list of models');
    return [];
  }
  const out: SourcedEntry[] = [];
  list.forEach((raw, index) => {
    if (!isRecord(raw)) problems.add(`${path}[${index}]`, 'must be a mapping');
    else out.push({ raw, path: `${path}[${index}]` });
  });
  return out;
}

export function parseModel(entry: SourcedEntry, providerNames: ReadonlySet<string>, defaultCreated: number, problems: Problems): ModelConfig | undefined {
  const { raw, path } = entry;
  for (const key of Object.keys(raw)) {
    if (!(MODEL_KEYS as readonly string[]).includes(key)) problems.add(`${path}.${key}`, `unknown key (expected one of: ${MODEL_KEYS.join(', ')})`);
  }
  const before = problems.lines.length;
  const id = readString(raw, 'id', path, problems, {
    required: true,
    pattern: MODEL_ID,
    rule: 'must be <provider>/<model-name> (provider: lowercase letters, digits, - and _)',
  });
  const provider = id ? (MODEL_ID.exec(id)?.[1] as string) : undefined;
  if (provider && !providerNames.has(provider)) {
    problems.add(`${path}.id`, `provider '${provider}' is not configured under providers`);
  }
  const type: ModelType = readEnum(raw, 'type', path, problems, MODEL_TYPES, 'chat');
  const name = readString(raw, 'name', path, problems) ?? id;
  const upstreamModel = readString(raw, 'upstream_model', path, problems) ?? (id ? id.slice(id.indexOf('/') + 1) : undefined);
  const contextWindow = optionalInt(raw, 'context_window', path, problems);
  const maxOutputTokens = optionalInt(raw, 'max_output_tokens', path, problems);
  const created = readInt(raw, 'created', path, problems, 0, 4_102_444_800, defaultCreated);

  const price = (key: string): number | undefined => {
    const value = raw[key];
    if (value === undefined || value === null) return undefined;
    const parsed = parseInr(value);
    if (!parsed.ok) {
      problems.add(`${path}.${key}`, `${parsed.rule.replace('must be a number (INR)', 'must be a number')} (INR)`);
      return undefined;
    }
    return parsed.micros;
  };
  const pricing: ModelPricing = { inputPer1M: price('input_cost_per_1m') ?? 0, outputPer1M: price('output_cost_per_1m') ?? 0 };
  const optionalPrices: [keyof ModelPricing, string][] = [
    ['cacheReadPer1M', 'cache_read_cost_per_1m'],
    ['cacheWritePer1M', 'cache_write_cost_per_1m'],
    ['inputPer1MChars', 'input_cost_per_1m_chars'],
    ['perMinute', 'cost_per_minute'],
    ['perImage', 'cost_per_image'],
  ];
  for (const [field, key] of optionalPrices) {
    const value = price(key);
    if (value !== undefined) pricing[field] = value;
  }
  requirePrices(raw, type, path, problems);

  if (problems.lines.length > before || !id || !provider || !upstreamModel || !name) return undefined;
  const model: ModelConfig = { id, name, provider, upstreamModel, type, pricing, created };
  if (contextWindow !== undefined) model.contextWindow = contextWindow;
  if (maxOutputTokens !== undefined) model.maxOutputTokens = maxOutputTokens;
  return model;
}

/** Which prices each kind of model must state, so no call is ever priced by accident at 0. */
function requirePrices(raw: Raw, type: ModelType, path: string, problems: Problems): void {
  const has = (key: string): boolean => raw[key] !== undefined && raw[key] !== null;
  const needAll = (keys: string[]): void => {
    for (const key of keys) if (!has(key)) problems.add(`${path}.${key}`, `is required for ${type} models (use 0 for a free model)`);
  };
  const needOne = (keys: string[]): void => {
    if (!keys.some(has)) problems.add(path, `a ${type} model needs one of: ${keys.join(', ')}`);
  };
  switch (type) {
    case 'chat':
      needAll(['input_cost_per_1m', 'output_cost_per_1m']);
      break;
    case 'embedding':
      needAll(['input_cost_per_1m']);
      break;
    case 'speech':
      needOne(['input_cost_per_1m_chars', 'input_cost_per_1m']);
      break;
    case 'transcription':
      needOne(['cost_per_minute', 'input_cost_per_1m']);
      break;
    case 'image':
      needOne(['cost_per_image', 'output_cost_per_1m']);
      break;
  }
}

function optionalInt(raw: Raw, key: string, path: string, problems: Problems): number | undefined {
  if (raw[key] === undefined || raw[key] === null) return undefined;
  const value = readInt(raw, key, path, problems, 1, 100_000_000, -1);
  return value === -1 ? undefined : value;
}
