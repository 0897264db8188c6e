import { errors } from './errors.js';
import { parseInr } from './money.js';
import { parseIsoDate } from './time.js';

/**
 * Small, explicit validators for JSON request bodies. Each one names the field and the rule
 * in a 400 error; none of them coerces types ("100" is not an integer).
 */

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function requireObject(value: unknown): JsonObject {
  if (!isObject(value)) throw errors.bodyNotObject();
  return value;
}

/** Refuses fields the endpoint does not know, so a typo (`ratelimit`) is not silently ignored. */
export function rejectUnknownFields(body: JsonObject, allowed: readonly string[]): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw errors.unknownField(key, allowed);
  }
}

interface StringRule {
  min?: number;
  max?: number;
  pattern?: RegExp;
  patternRule?: string;
}

export function optionalString(body: JsonObject, field: string, rule: StringRule = {}): string | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw errors.invalidField(field, 'must be a string');
  const text = value.trim();
  const min = rule.min ?? 1;
  if (text.length < min) throw errors.invalidField(field, min === 1 ? 'must not be empty' : `must be at least ${min} characters`);
  if (rule.max !== undefined && text.length > rule.max) throw errors.invalidField(field, `must be at most ${rule.max} characters`);
  if (rule.pattern && !rule.pattern.test(text)) throw errors.invalidField(field, rule.patternRule ?? `must match ${rule.pattern}`);
  return text;
}

export function requiredString(body: JsonObject, field: string, rule: StringRule = {}): string {
  if (body[field] === undefined || body[field] === null) throw errors.missingField(field);
  return optionalString(body, field, rule) as string;
}

export function optionalInteger(body: JsonObject, field: string, min: number, max: number): number | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw errors.invalidField(field, `must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** An INR amount >= 0 as µINR. */
export function optionalInr(body: JsonObject, field: string): number | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number') throw errors.invalidField(field, 'must be a number (INR)');
  const parsed = parseInr(value);
  if (!parsed.ok) throw errors.invalidField(field, parsed.rule);
  return parsed.micros;
}

/** A future instant, as ms; `null` is passed through (callers use it to clear a value). */
export function optionalFutureDate(body: JsonObject, field: string, now: number): number | null | undefined {
  const value = body[field];
  if (value === undefined || value === null) return value as null | undefined;
  if (typeof value !== 'string') throw errors.invalidField(field, 'must be a string (ISO 8601 date-time or YYYY-MM-DD)');
  const parsed = parseIsoDate(value.trim());
  if (!parsed.ok) throw errors.invalidField(field, parsed.rule);
  if (parsed.ms <= now) throw errors.invalidField(field, 'must be in the future');
  return parsed.ms;
}

export function optionalEnum<T extends string>(body: JsonObject, field: string, values: readonly T[]): T | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !values.includes(value as T)) {
    throw errors.invalidField(field, `must be one of ${values.join(', ')}`);
  }
  return value as T;
}

// RFC 5322 is far looser; this is the practical rule: local@domain.tld, no spaces.
const EMAIL = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;

export function requiredEmail(body: JsonObject, field = 'email'): string {
  return requiredString(body, field, { max: 254, pattern: EMAIL, patternRule: 'must be an email address (name@example.com)' }).toLowerCase();
}

/** A number within [min, max] (null and absent are both "not given"). */
export function optionalNumberIn(body: JsonObject, field: string, min: number, max: number): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) throw errors.invalidField(field, `must be a number from ${min} to ${max}`);
  return value;
}

/** The `model` of an inference request: a non-empty string (resolved against the catalog later). */
export function requiredModel(body: JsonObject): string {
  const model = body.model;
  if (model === undefined || model === null) throw errors.missingField('model');
  if (typeof model !== 'string' || model.trim() === '') throw errors.invalidField('model', 'must be a non-empty string (<provider>/<model>; GET /v1/models lists them)');
  return model;
}

/** At most this many fallback models in a request's `models`. */
export const MAX_FALLBACK_MODELS = 10;

/**
 * `models`: catalog models to fall back to, in order, after `model` (OpenRouter's convention).
 * Checked for shape here; each is resolved against the catalog with the call (a 400 naming
 * `models[i]` when it is not a model of the endpoint's kind).
 */
export function optionalModelList(body: JsonObject, field = 'models'): string[] | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw errors.invalidField(field, 'must be an array of model ids, tried in order after model');
  if (value.length > MAX_FALLBACK_MODELS) throw errors.invalidField(field, `must hold at most ${MAX_FALLBACK_MODELS} models`);
  return value.map((item: unknown, index) => {
    if (typeof item !== 'string' || item.trim() === '') throw errors.invalidField(`${field}[${index}]`, 'must be a non-empty string (<provider>/<model>)');
    return item.trim();
  });
}

/** A boolean field; `name` is the field's name in messages when it is nested (`stream_options.include_usage`). */
export function optionalBoolean(body: JsonObject, field: string, name = field): boolean | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw errors.invalidField(name, 'must be true or false');
  return value;
}
