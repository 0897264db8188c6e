import { upstreamMalformed } from './errors.js';

/** Small helpers for reading untyped upstream JSON without `any`. */

export type JsonRecord = Record<string, unknown>;

export function asRecord(value: unknown): JsonRecord | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonRecord) : undefined;
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function asNumber(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/** Parses tool-call arguments into an object; "" is {}, and anything else that is not an object is wrapped. */
export function parseArguments(text: string): JsonRecord {
  if (text.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return asRecord(parsed) ?? { value: parsed };
  } catch {
    return { _raw: text };
  }
}

/** Text of the error message in the usual `{error: {message}}` envelopes. */
export function nestedErrorMessage(body: unknown): string | undefined {
  const error = asRecord(asRecord(body)?.error);
  return asString(error?.message) ?? asString(asRecord(body)?.message);
}

/** The JSON of one upstream stream event; a 502 naming the provider when it is not JSON. */
export function parseEventData(provider: string, data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    throw upstreamMalformed(provider, 'a stream event that is not JSON');
  }
}
