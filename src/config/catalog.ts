import { parseInr } from '../core/money.js';
import { isRecord, Problems, readBool, readInt, readEnum, readString, type Raw } from './fields.js';
import { readDeployments } from './routing.js';
import {
  MODEL_TYPES,
  SPEECH_FORMATS,
  TRANSCRIPTION_FORMATS,
  type EmbeddingSpec,
  type ImageSpec,
  type ModelConfig,
  type ModelPricing,
  type ModelType,
  type ProviderType,
  type SpeechSpec,
} from './types.js';

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
  'cache_write_1h_cost_per_1m',
  'input_cost_per_1m_chars',
  'cost_per_minute',
  'cost_per_image',
  'image_prices',
  'created',
  // Per kind (config/models.yaml's header says which applies to which):
  'dimensions',
  'min_dimensions',
  'max_inputs',
  'token_arrays',
  'formats',
  'speed_min',
  'speed_max',
  'instructions',
  'response_formats',
  'timestamps',
  'min_billed_seconds',
  'sizes',
  'qualities',
  'default_quality',
  'max_images',
  'styles',
  'url_output',
  // Where it is served (config/routing.ts); absent: the provider its id names.
  'deployments',
] as const;

/** The kinds of call each wire family serves (src/providers/<family>/). */
export const FAMILY_KINDS: Record<ProviderType, readonly ModelType[]> = {
  openai: ['chat', 'embedding', 'speech', 'transcription', 'image'],
  anthropic: ['chat'],
  gemini: ['chat', 'embedding', 'image'],
  deepgram: ['speech', 'transcription'],
  azure: ['chat', 'embedding', 'speech', 'transcription', 'image'],
  bedrock: ['chat', 'embedding'],
  vertex: ['chat', 'embedding'],
};

/** The keys that describe one kind of model; on a model of another kind they are a mistake. */
const KIND_KEYS: Record<Exclude<ModelType, 'chat'>, readonly string[]> = {
  embedding: ['dimensions', 'min_dimensions', 'max_inputs', 'token_arrays'],
  speech: ['formats', 'speed_min', 'speed_max', 'instructions', 'input_cost_per_1m_chars'],
  transcription: ['response_formats', 'timestamps', 'min_billed_seconds', 'cost_per_minute'],
  image: ['sizes', 'qualities', 'default_quality', 'max_images', 'styles', 'url_output', 'image_prices', 'cost_per_image'],
};

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

export function parseModel(entry: SourcedEntry, providerTypes: ReadonlyMap<string, ProviderType>, defaultCreated: number, problems: Problems): ModelConfig | undefined {
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
  const providerType = provider ? providerTypes.get(provider) : undefined;
  // With deployments, the id's prefix is only a name (each deployment names its provider).
  const deployed = raw.deployments !== undefined && raw.deployments !== null;
  if (provider && !providerType && !deployed) {
    problems.add(`${path}.id`, `provider '${provider}' is not configured under providers`);
  }
  const type: ModelType = readEnum(raw, 'type', path, problems, MODEL_TYPES, 'chat');
  if (providerType && !deployed && !FAMILY_KINDS[providerType].includes(type)) {
    problems.add(`${path}.type`, `a provider of type ${providerType} serves ${FAMILY_KINDS[providerType].join(', ')} models, not ${type}`);
  }
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
  const optionalPrices: [Exclude<keyof ModelPricing, 'imagePrices'>, string][] = [
    ['cacheReadPer1M', 'cache_read_cost_per_1m'],
    ['cacheWritePer1M', 'cache_write_cost_per_1m'],
    ['cacheWrite1hPer1M', 'cache_write_1h_cost_per_1m'],
    ['inputPer1MChars', 'input_cost_per_1m_chars'],
    ['perMinute', 'cost_per_minute'],
    ['perImage', 'cost_per_image'],
  ];
  for (const [field, key] of optionalPrices) {
    const value = price(key);
    if (value !== undefined) pricing[field] = value;
  }
  requirePrices(raw, type, path, problems);
  for (const [kind, keys] of Object.entries(KIND_KEYS)) {
    if (kind === type) continue;
    for (const key of keys) if (raw[key] !== undefined) problems.add(`${path}.${key}`, `only applies to ${kind} models (this one is ${type})`);
  }
  const specs = parseKindSpec(raw, type, path, problems, contextWindow);
  if (type === 'image') {
    const table = raw.image_prices;
    if (table !== undefined) {
      if (!isRecord(table)) problems.add(`${path}.image_prices`, 'must be a mapping of "<size>/<quality>" or "<size>" to an INR price per image');
      else {
        const prices: Record<string, number> = {};
        for (const [key, value] of Object.entries(table)) {
          const parsed = parseInr(value);
          if (!parsed.ok) problems.add(`${path}.image_prices.${key}`, `${parsed.rule} (INR per image)`);
          else prices[key] = parsed.micros;
        }
        pricing.imagePrices = prices;
      }
    }
  }

  const deployments = provider && upstreamModel ? readDeployments(raw.deployments, `${path}.deployments`, { provider, upstreamModel, type }, providerTypes, FAMILY_KINDS, problems) : [];
  if (problems.lines.length > before || !id || !provider || !upstreamModel || !name) return undefined;
  const model: ModelConfig = { id, name, provider, upstreamModel, type, pricing, created, deployments, ...specs };
  if (contextWindow !== undefined) model.contextWindow = contextWindow;
  if (maxOutputTokens !== undefined) model.maxOutputTokens = maxOutputTokens;
  return model;
}

/** What a media model takes; absent keys default to what OpenAI's model of the kind takes. */
function parseKindSpec(raw: Raw, type: ModelType, path: string, problems: Problems, contextWindow: number | undefined): Partial<ModelConfig> {
  const list = <T extends string>(key: string, allowed: readonly T[], fallback: readonly T[]): readonly T[] => {
    const value = raw[key];
    if (value === undefined) return fallback;
    if (!Array.isArray(value) || value.length === 0 || value.some((item) => typeof item !== 'string' || !allowed.includes(item as T))) {
      problems.add(`${path}.${key}`, `must be a non-empty list of: ${allowed.join(', ')}`);
      return fallback;
    }
    return value as T[];
  };
  const number = (key: string, min: number, max: number, fallback: number): number => {
    const value = raw[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
      problems.add(`${path}.${key}`, `must be a number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  };
  switch (type) {
    case 'chat':
      return {};
    case 'embedding': {
      const dimensions = readInt(raw, 'dimensions', path, problems, 1, 65_536, 1536);
      const spec: EmbeddingSpec = {
        dimensions,
        maxInputs: readInt(raw, 'max_inputs', path, problems, 1, 100_000, 2048),
        tokenArrays: readBool(raw, 'token_arrays', path, problems, false),
      };
      if (raw.min_dimensions !== undefined) spec.minDimensions = readInt(raw, 'min_dimensions', path, problems, 1, dimensions, 1);
      return { embedding: spec };
    }
    case 'speech': {
      const spec: SpeechSpec = {
        formats: list('formats', SPEECH_FORMATS, SPEECH_FORMATS),
        speedMin: number('speed_min', 0.25, 4, 0.25),
        speedMax: number('speed_max', 0.25, 4, 4),
        instructions: readBool(raw, 'instructions', path, problems, false),
      };
      if (spec.speedMin > spec.speedMax) problems.add(`${path}.speed_min`, 'must not be above speed_max');
      return { speech: spec };
    }
    case 'transcription':
      return {
        transcription: {
          responseFormats: list('response_formats', TRANSCRIPTION_FORMATS, TRANSCRIPTION_FORMATS),
          timestamps: readBool(raw, 'timestamps', path, problems, false),
          minBilledSeconds: readInt(raw, 'min_billed_seconds', path, problems, 0, 3600, 0),
        },
      };
    case 'image': {
      const sizes = list('sizes', [...IMAGE_SIZE_WORDS, ...sizeStrings(raw.sizes)], ['1024x1024']);
      const qualities = raw.qualities === undefined ? [] : list('qualities', stringList(raw.qualities), []);
      const spec: ImageSpec = {
        sizes,
        defaultSize: sizes.includes('1024x1024') ? '1024x1024' : (sizes[0] as string),
        qualities,
        maxImages: readInt(raw, 'max_images', path, problems, 1, 10, 1),
        styles: readBool(raw, 'styles', path, problems, false),
        urlOutput: readBool(raw, 'url_output', path, problems, false),
        maxPromptChars: contextWindow ?? 4000,
      };
      const defaultQuality = readString(raw, 'default_quality', path, problems);
      if (defaultQuality !== undefined) {
        if (!qualities.includes(defaultQuality)) problems.add(`${path}.default_quality`, `must be one of the model's qualities (${qualities.join(', ') || 'none'})`);
        spec.defaultQuality = defaultQuality;
      } else if (qualities.length > 0) spec.defaultQuality = qualities[0] as string;
      return { image: spec };
    }
  }
}

const IMAGE_SIZE_WORDS = ['auto'] as const;
const SIZE = /^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$/;

/** The `WxH` strings of a sizes list (anything else is reported by the list check). */
function sizeStrings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string' && SIZE.test(item)) : [];
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string' && /^[a-z0-9_-]{1,32}$/.test(item)) : [];
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
      needAll(['input_cost_per_1m_chars']);
      break;
    case 'transcription':
      needAll(['cost_per_minute']);
      break;
    case 'image':
      needOne(['cost_per_image', 'image_prices']);
      break;
  }
}

function optionalInt(raw: Raw, key: string, path: string, problems: Problems): number | undefined {
  if (raw[key] === undefined || raw[key] === null) return undefined;
  const value = readInt(raw, key, path, problems, 1, 100_000_000, -1);
  return value === -1 ? undefined : value;
}
