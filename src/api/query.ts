import { errors } from '../core/errors.js';
import { parseIsoDate } from '../core/time.js';

/** Query-string readers for list endpoints. */

export function queryInt(query: URLSearchParams, name: string, min: number, max: number, fallback: number): number {
  const text = query.get(name);
  if (text === null || text === '') return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) throw errors.invalidQuery(name, `must be an integer from ${min} to ${max}`);
  return value;
}

export function queryOptionalInt(query: URLSearchParams, name: string): number | undefined {
  const text = query.get(name);
  return text === null || text === '' ? undefined : queryInt(query, name, 1, Number.MAX_SAFE_INTEGER, 0);
}

/** An instant as ISO 8601 (or YYYY-MM-DD) or unix seconds. */
export function queryTime(query: URLSearchParams, name: string): number | undefined {
  const text = query.get(name);
  if (text === null || text === '') return undefined;
  if (/^\d{9,11}$/.test(text)) return Number(text) * 1000;
  const parsed = parseIsoDate(text);
  if (!parsed.ok) throw errors.invalidQuery(name, `${parsed.rule}, or unix seconds`);
  return parsed.ms;
}

export function queryString(query: URLSearchParams, name: string): string | undefined {
  const text = query.get(name);
  return text === null || text === '' ? undefined : text;
}
