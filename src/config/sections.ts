import { parseCidr } from '../core/outbound/address-policy.js';
import { listItems, Problems, readBool, readDuration, readEnum, readInt, readSection, readSize, readString, type Raw } from './fields.js';
import type { CacheConfig, OutboundConfig } from './types.js';

/** The `cache`, `outbound` and `database.billing_batch_window` settings (load.ts reads the rest). */

export function readCache(raw: unknown, problems: Problems): CacheConfig {
  const cache = readSection(raw, 'cache', ['enabled', 'scope', 'ttl', 'max_entries', 'max_size', 'max_temperature', 'tool_results', 'hit_price', 'exact', 'semantic'], problems);
  const exact = readSection(cache.exact, 'cache.exact', ['models'], problems);
  const semantic = readSection(cache.semantic, 'cache.semantic', ['models', 'embedding_model', 'dimensions', 'threshold'], problems);
  const dimensions = semantic.dimensions === null || semantic.dimensions === undefined || semantic.dimensions === '' ? undefined : readInt(semantic, 'dimensions', 'cache.semantic', problems, 8, 8192, 256);
  return {
    enabled: readBool(cache, 'enabled', 'cache', problems, false),
    scope: readEnum(cache, 'scope', 'cache', problems, ['account', 'key'], 'account'),
    ttlMs: readDuration(cache, 'ttl', 'cache', problems, 3_600_000, 1000),
    maxEntries: readInt(cache, 'max_entries', 'cache', problems, 1, 10_000_000, 100_000),
    maxBytes: readSize(cache, 'max_size', 'cache', problems, 256 * 1024 * 1024, 64 * 1024, 64 * 1024 * 1024 * 1024),
    maxTemperature: readNumber(cache, 'max_temperature', 'cache', problems, 0, 2, 1),
    toolResults: readBool(cache, 'tool_results', 'cache', problems, false),
    hitPrice: readNumber(cache, 'hit_price', 'cache', problems, 0, 1, 0),
    exact: { models: readPatterns(exact, 'cache.exact', problems, ['*']) },
    semantic: {
      models: readPatterns(semantic, 'cache.semantic', problems, []),
      embeddingModel: readString(semantic, 'embedding_model', 'cache.semantic', problems) ?? 'openai/text-embedding-3-small',
      dimensions,
      threshold: readNumber(semantic, 'threshold', 'cache.semantic', problems, 0.5, 1, 0.95),
    },
  };
}

/** A number (YAML number, or the string interpolation gave) within [min, max]. */
function readNumber(obj: Raw, key: string, path: string, problems: Problems, min: number, max: number, fallback: number): number {
  let value = obj[key];
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value.trim()))) value = Number(value.trim());
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    problems.add(`${path}.${key}`, `must be a number from ${min} to ${max}`);
    return fallback;
  }
  return value;
}

/** `models:` of a cache tier: catalog ids or globs (`openai/*`, `*mini*`, `*`), a list or one comma-separated string. */
function readPatterns(obj: Raw, path: string, problems: Problems, fallback: readonly string[]): string[] {
  const value = obj.models;
  if (value === undefined || value === null) return [...fallback];
  const items = typeof value === 'string' ? value.split(',').map((item) => item.trim()).filter((item) => item !== '') : value;
  if (!Array.isArray(items) || items.some((item) => typeof item !== 'string' || !/^[\w.*/:@-]+$/.test(item))) {
    problems.add(`${path}.models`, 'must be a list of model ids or patterns with * (e.g. "openai/*")');
    return [...fallback];
  }
  return items as string[];
}

/**
 * 100 ms: at 200 calls a second a batch of 20 calls shares one commit and its WAL pages; at
 * 20 ms (the default before issue 17) a batch held 4, and each call cost 11% more CPU
 * (probe.ts, 625 against 558 µs per call; 7% at 825 calls a second).
 */
const DEFAULT_BILLING_BATCH_MS = 100;

export function readBillingBatch(database: Raw, problems: Problems): number {
  const ms = readDuration(database, 'billing_batch_window', 'database', problems, DEFAULT_BILLING_BATCH_MS, 1);
  if (ms > 5000) {
    problems.add('database.billing_batch_window', 'must be at most 5s (calls stay held against their wallets until their batch is written)');
    return DEFAULT_BILLING_BATCH_MS;
  }
  return ms;
}

/**
 * `outbound.allow_private` (CIDRs) and `outbound.allow_ports`: YAML lists, or one string of
 * comma-separated items (what `${VAR}` gives).
 */
export function readOutbound(outbound: Raw, problems: Problems): OutboundConfig {
  const list = (key: string, what: string): Array<{ value: unknown; at: string }> => listItems(outbound[key], `outbound.${key}`, what, problems);
  const allowPrivate: string[] = [];
  for (const { value, at } of list('allow_private', 'CIDRs like 10.0.0.0/8')) {
    const cidr = typeof value === 'string' ? parseCidr(value.trim()) : 'must be a CIDR like 10.0.0.0/8';
    if (typeof cidr === 'string') problems.add(at, cidr);
    else allowPrivate.push((value as string).trim());
  }
  const allowPorts: number[] = [];
  for (const { value, at } of list('allow_ports', 'port numbers')) {
    const port = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value.trim()) : value;
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) problems.add(at, 'must be a port number from 1 to 65535');
    else if (!allowPorts.includes(port)) allowPorts.push(port);
  }
  return { allowPrivate, allowPorts };
}

