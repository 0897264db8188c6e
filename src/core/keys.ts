import { hash, randomBytes } from 'node:crypto';

/**
 * Secrets: `sk-` API keys for apps, `akm-` management keys for admins and tools.
 * Both are the prefix + 64 lowercase hex characters (32 bytes from the CSPRNG). Only the
 * SHA-256 of a key and a masked form for display are stored; the key itself is shown once.
 */

export type KeyKind = 'api' | 'management';

export const KEY_PREFIX: Record<KeyKind, string> = { api: 'sk-', management: 'akm-' };

/** The length of every well-formed key of a kind: its prefix and 64 hex characters. */
export const KEY_LENGTH: Record<KeyKind, number> = { api: KEY_PREFIX.api.length + 64, management: KEY_PREFIX.management.length + 64 };

const KEY_FORMAT: Record<KeyKind, RegExp> = {
  api: /^sk-[0-9a-f]{64}$/,
  management: /^akm-[0-9a-f]{64}$/,
};

export function generateKey(kind: KeyKind): string {
  return KEY_PREFIX[kind] + randomBytes(32).toString('hex');
}

/** SHA-256 (hex) of the whole key string. A fast hash is right here: keys carry 256 bits of entropy. */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** `sk-1a2b…9f0e`: enough to recognise a key in a list, far too little to use it. */
export function maskKey(key: string): string {
  const kind = keyKindOf(key);
  const prefix = kind ? KEY_PREFIX[kind] : '';
  const body = key.slice(prefix.length);
  return `${prefix}${body.slice(0, 4)}…${body.slice(-4)}`;
}

/** Which kind of key a string claims to be by its prefix (format not yet checked). */
export function keyKindOf(key: string): KeyKind | null {
  if (key.startsWith(KEY_PREFIX.api)) return 'api';
  if (key.startsWith(KEY_PREFIX.management)) return 'management';
  return null;
}

export function isWellFormedKey(kind: KeyKind, key: string): boolean {
  return KEY_FORMAT[kind].test(key);
}

/** Short random ids for rows: `acc_…`, `key_…`, `mk_…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(9).toString('base64url')}`;
}
