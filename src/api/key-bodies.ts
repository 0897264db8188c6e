import { errors } from '../core/errors.js';
import type { KeyKind } from '../core/keys.js';
import type { NewKeyInput } from '../core/management/keys.js';
import {
  optionalBoolean,
  optionalFutureDate,
  optionalInr,
  optionalInteger,
  optionalString,
  rejectUnknownFields,
  requireObject,
  requiredString,
  type JsonObject,
} from '../core/validate.js';
import type { Catalog } from '../core/catalog.js';
import { addressEntryProblem, catalogIdOf } from '../core/key-policy.js';
import type { KeyChanges } from '../store/keys.js';
import { formatPeriod, parsePeriod, periodProblem, type PeriodSpec } from '../core/periods.js';

/** Request bodies for creating and updating keys, shared by the session and management APIs. */

const FIELDS: Record<KeyKind, readonly string[]> = {
  api: ['name', 'rate_limit', 'budget', 'budget_period', 'expires_at', 'cache', 'models', 'allowed_ips', 'max_parallel', 'tpm_limit'],
  management: ['name', 'expires_at'],
};

const NAME_RULE = { max: 100 };
export const MAX_RATE_LIMIT = 10_000;

/** `budget` in INR: 0 means unlimited (stored as null). */
function budgetOf(body: JsonObject): number | null | undefined {
  const micros = optionalInr(body, 'budget');
  return micros === undefined ? undefined : micros === 0 ? null : micros;
}

/** The most entries a key's models or allowed_ips list may hold. */
const MAX_LIST = 100;

/** A list field: null or [] clears it; each entry a non-empty string that `check` accepts (else the reason). */
function stringList(body: JsonObject, field: string, what: string, check: (entry: string) => string | undefined): string[] | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (value === null) return [];
  if (!Array.isArray(value)) throw errors.invalidField(field, `must be an array of ${what} (or null for no restriction)`);
  if (value.length > MAX_LIST) throw errors.invalidField(field, `at most ${MAX_LIST} entries`);
  const out: string[] = [];
  value.forEach((entry: unknown, index) => {
    const at = `${field}[${index}]`;
    if (typeof entry !== 'string' || entry.trim() === '' || entry.length > 200) throw errors.invalidField(at, `must be a non-empty string of at most 200 characters`);
    const problem = check(entry.trim());
    if (problem) throw errors.invalidField(at, problem);
    if (!out.includes(entry.trim())) out.push(entry.trim());
  });
  return out;
}

/** `models`: catalog ids, aliases, short names, or patterns with `*`. */
function modelsOf(body: JsonObject, catalog: Catalog): string[] | undefined {
  return stringList(body, 'models', 'model ids, aliases or patterns', (entry) => {
    if (entry.includes('*')) return /^[A-Za-z0-9._:/@+*-]+$/.test(entry) ? undefined : `'${entry}' is not a pattern of model ids (letters, digits, . _ : / @ + - and *)`;
    return catalogIdOf(entry, catalog) === undefined ? `'${entry}' is not a catalog model id, alias or short name (GET /api/models lists them)` : undefined;
  });
}

/** `allowed_ips`: IPv4 or IPv6 addresses and CIDRs. */
function allowedIpsOf(body: JsonObject): string[] | undefined {
  return stringList(body, 'allowed_ips', 'IP addresses and CIDRs', (entry) => {
    const problem = addressEntryProblem(entry);
    return problem ? `'${entry}' ${problem.replace(/^must be a CIDR/, 'must be an IP address or a CIDR')}` : undefined;
  });
}

export const MAX_PARALLEL = 10_000;
/** Tokens per minute: a billion is beyond any upstream's limit. */
export const MAX_TPM = 1_000_000_000;

/** An optional positive integer limit: null (or 0) clears it. */
function optionalLimit(body: JsonObject, field: string, max: number): number | null | undefined {
  if (body[field] === null || body[field] === 0) return null;
  return optionalInteger(body, field, 1, max);
}

/** A period field (`budget_period`, `spend_period`): daily, weekly, monthly or a duration (core/periods.ts); null clears. */
export function optionalPeriod(body: JsonObject, field: string): string | null | undefined {
  const value = body[field];
  if (value === undefined || value === null) return value;
  if (typeof value !== 'string') throw errors.invalidField(field, 'must be daily, weekly, monthly or a duration from 1m to 365d (30m, 12h, 7d), or null');
  const problem = periodProblem(value);
  if (problem) throw errors.invalidField(field, problem);
  return formatPeriod(parsePeriod(value) as PeriodSpec);
}

/** The governance limits of an API key, on create and update alike. */
function limitsOf(body: JsonObject): Pick<KeyChanges, 'maxParallel' | 'tpmLimit' | 'budgetPeriod'> {
  const out: Pick<KeyChanges, 'maxParallel' | 'tpmLimit' | 'budgetPeriod'> = {};
  const maxParallel = optionalLimit(body, 'max_parallel', MAX_PARALLEL);
  if (maxParallel !== undefined) out.maxParallel = maxParallel;
  const tpm = optionalLimit(body, 'tpm_limit', MAX_TPM);
  if (tpm !== undefined) out.tpmLimit = tpm;
  const period = optionalPeriod(body, 'budget_period');
  if (period !== undefined) out.budgetPeriod = period;
  return out;
}

export function parseKeyCreate(kind: KeyKind, raw: unknown, now: number, catalog: Catalog): NewKeyInput {
  const body = requireObject(raw ?? {});
  rejectUnknownFields(body, FIELDS[kind]);
  const input: NewKeyInput = { name: requiredString(body, 'name', NAME_RULE) };
  const expiresAt = optionalFutureDate(body, 'expires_at', now);
  if (expiresAt !== undefined) input.expiresAt = expiresAt;
  if (kind === 'api') {
    input.rateLimit = optionalInteger(body, 'rate_limit', 1, MAX_RATE_LIMIT) ?? MAX_RATE_LIMIT;
    input.budgetMicros = budgetOf(body) ?? null;
    const cache = optionalBoolean(body, 'cache');
    if (cache !== undefined) input.cache = cache;
    const models = modelsOf(body, catalog);
    if (models !== undefined) input.models = models;
    const allowedIps = allowedIpsOf(body);
    if (allowedIps !== undefined) input.allowedIps = allowedIps;
    Object.assign(input, limitsOf(body));
  }
  return input;
}

export function parseKeyUpdate(kind: KeyKind, raw: unknown, now: number, catalog: Catalog): KeyChanges {
  const body = requireObject(raw ?? {});
  rejectUnknownFields(body, FIELDS[kind]);
  if (Object.keys(body).length === 0) throw errors.invalidField('body', `must set at least one of: ${FIELDS[kind].join(', ')}`);
  const changes: KeyChanges = {};
  const name = optionalString(body, 'name', NAME_RULE);
  if (name !== undefined) changes.name = name;
  const expiresAt = optionalFutureDate(body, 'expires_at', now);
  if (expiresAt !== undefined) changes.expiresAt = expiresAt;
  if (kind === 'api') {
    const rateLimit = optionalInteger(body, 'rate_limit', 1, MAX_RATE_LIMIT);
    if (rateLimit !== undefined) changes.rateLimit = rateLimit;
    const budget = budgetOf(body);
    if (budget !== undefined) changes.budgetMicros = budget;
    const cache = optionalBoolean(body, 'cache');
    if (cache !== undefined) changes.cache = cache;
    const models = modelsOf(body, catalog);
    if (models !== undefined) changes.models = models;
    const allowedIps = allowedIpsOf(body);
    if (allowedIps !== undefined) changes.allowedIps = allowedIps;
    Object.assign(changes, limitsOf(body));
  }
  return changes;
}

