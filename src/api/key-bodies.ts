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
import type { KeyChanges } from '../store/keys.js';

/** Request bodies for creating and updating keys, shared by the session and management APIs. */

const FIELDS: Record<KeyKind, readonly string[]> = {
  api: ['name', 'rate_limit', 'budget', 'expires_at', 'cache'],
  management: ['name', 'expires_at'],
};

const NAME_RULE = { max: 100 };
export const MAX_RATE_LIMIT = 10_000;

/** `budget` in INR: 0 means unlimited (stored as null). */
function budgetOf(body: JsonObject): number | null | undefined {
  const micros = optionalInr(body, 'budget');
  return micros === undefined ? undefined : micros === 0 ? null : micros;
}

export function parseKeyCreate(kind: KeyKind, raw: unknown, now: number): NewKeyInput {
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
  }
  return input;
}

export function parseKeyUpdate(kind: KeyKind, raw: unknown, now: number): KeyChanges {
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
  }
  return changes;
}

