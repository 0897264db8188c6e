import { errors } from '../errors.js';
import { generateKey, hashKey, maskKey, newId, type KeyKind } from '../keys.js';
import type { KeyAuthenticator } from '../auth/key-auth.js';
import type { KeyChanges, KeyRecord } from '../../store/keys.js';
import type { KeyStore, Store } from '../../store/types.js';

export interface NewKeyInput {
  name: string;
  rateLimit?: number;
  /** µINR; null or undefined = unlimited. */
  budgetMicros?: number | null;
  expiresAt?: number | null;
  /** false: the response cache neither serves nor stores this key's calls. */
  cache?: boolean;
  /** The models the key may call (ids, aliases, patterns); absent or empty: all. */
  models?: readonly string[];
  /** The addresses and CIDRs the key may be used from; absent or empty: anywhere. */
  allowedIps?: readonly string[];
  /** Calls in flight at once, tokens per minute; null or absent: no limit. */
  maxParallel?: number | null;
  tpmLimit?: number | null;
  /** The period the budget renews over (canonical text, core/periods.ts); null or absent: the key's life. */
  budgetPeriod?: string | null;
}

/** Issues, lists, updates and revokes `sk-` and `akm-` keys. */
export class KeyService {
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly authenticators: Record<KeyKind, KeyAuthenticator>,
    now?: () => number,
  ) {
    this.now = now ?? Date.now;
  }

  /** Returns the record and the secret, which is never available again. */
  async create(kind: KeyKind, accountId: string, input: NewKeyInput): Promise<{ record: KeyRecord; secret: string }> {
    const secret = generateKey(kind);
    const record = await this.repo(kind).insert({
      id: newId(kind === 'api' ? 'key' : 'mk'),
      accountId,
      name: input.name,
      keyHash: hashKey(secret),
      maskedKey: maskKey(secret),
      rateLimit: input.rateLimit,
      budgetMicros: input.budgetMicros ?? null,
      expiresAt: input.expiresAt ?? null,
      now: this.now(),
      cache: input.cache ?? true,
      ...(input.models ? { models: input.models } : {}),
      ...(input.allowedIps ? { allowedIps: input.allowedIps } : {}),
      maxParallel: input.maxParallel ?? null,
      tpmLimit: input.tpmLimit ?? null,
      budgetPeriod: input.budgetPeriod ?? null,
    });
    return { record, secret };
  }

  async list(kind: KeyKind, accountId: string): Promise<KeyRecord[]> {
    return this.repo(kind).listByAccount(accountId);
  }

  /** A key by id; 404 when it does not exist or `visible` says the caller may not see it. */
  async get(kind: KeyKind, id: string, visible: (record: KeyRecord) => boolean = () => true): Promise<KeyRecord> {
    const record = await this.repo(kind).byId(id);
    if (!record || !visible(record)) throw errors.notFound(kind === 'api' ? 'api_key' : 'management_key', id);
    return record;
  }

  async update(record: KeyRecord, changes: KeyChanges): Promise<KeyRecord> {
    if (record.revokedAt !== null) throw errors.keyRevoked(record.id);
    const updated = (await this.repo(record.kind).update(record.id, changes)) as KeyRecord;
    this.authenticators[record.kind].invalidate(record);
    return updated;
  }

  async revoke(record: KeyRecord): Promise<KeyRecord> {
    const revoked = (await this.repo(record.kind).revoke(record.id, this.now())) as KeyRecord;
    this.authenticators[record.kind].invalidate(record);
    return revoked;
  }

  private repo(kind: KeyKind): KeyStore {
    return kind === 'api' ? this.store.apiKeys : this.store.managementKeys;
  }
}
