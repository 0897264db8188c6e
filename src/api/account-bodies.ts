import { errors } from '../core/errors.js';
import { optionalInr, rejectUnknownFields, requireObject } from '../core/validate.js';
import { optionalPeriod } from './key-bodies.js';

/**
 * `PATCH` of an account (management API, admin session, CLI, MCP): its spend limit, what all
 * of its keys together may spend per `spend_period` (issue 30). `spend_limit` 0 or null
 * removes it; a limit without a period is for the account's life.
 */
export interface AccountChange {
  limitMicros?: number | null;
  period?: string | null;
}

const FIELDS = ['spend_limit', 'spend_period'];

export function parseAccountUpdate(raw: unknown): AccountChange {
  const body = requireObject(raw ?? {});
  rejectUnknownFields(body, FIELDS);
  if (Object.keys(body).length === 0) throw errors.invalidField('body', `must set at least one of: ${FIELDS.join(', ')}`);
  const change: AccountChange = {};
  if (body.spend_limit === null) change.limitMicros = null;
  else {
    const micros = optionalInr(body, 'spend_limit');
    if (micros !== undefined) change.limitMicros = micros === 0 ? null : micros;
  }
  const period = optionalPeriod(body, 'spend_period');
  if (period !== undefined) change.period = period;
  return change;
}
