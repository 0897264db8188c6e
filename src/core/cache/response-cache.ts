import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { CacheConfig, ModelConfig } from '../../config/types.js';
import type { ChatResult, Usage } from '../canonical.js';
import { CallAborted, isGatewayError } from '../errors.js';
import type { CallContext, ChatDraft } from '../call-context.js';
import { decodeAnswer, encodeAnswer, fitsLimit, type CachedAnswer } from './answer.js';
import { cacheKeys, type CacheKeys } from './keys.js';
import { RedisExactTier } from './redis-exact.js';
import type { NewEntry } from '../../store/cache-entries.js';
import type { CacheEntryStore } from '../../store/types.js';
import { VectorFeed } from './vector-feed.js';
import { VectorIndex } from './vector-index.js';

/**
 * The response cache in front of the provider call, for the three chat formats: an exact tier
 * (the hash of everything that can change the answer) and a semantic tier (the last user
 * message's embedding against earlier ones after the same conversation, same model and
 * parameters). Entries belong to one account (or one key: `cache.scope`) and are never found
 * from another.
 *
 * Every failure of the cache (a full disk, a corrupted entry, Redis or the embedding model
 * down, the vector worker gone) is a miss, logged, never an error for the caller.
 */

/** What the cache decided for a call before looking anything up. */
export interface CachePlan {
  /** `bypass`: opted out or not cacheable by the rules (reason logged); `lookup`: try the tiers. */
  outcome: 'bypass' | 'lookup';
  reason?: string;
  /** Whose answers these are (every key and partition also includes the scope). */
  accountId: string;
  keys: CacheKeys;
  exact: boolean;
  semantic: boolean;
  /** The prompt's embedding, once a semantic lookup computed it (stored with the answer on a miss). */
  vector?: Float32Array;
  /** The caller's output limit (not in the keys: checked against each answer, answer.ts fitsLimit). */
  maxTokens: number | undefined;
}

export interface CacheHit {
  tier: 'exact' | 'semantic';
  similarity?: number;
  answer: CachedAnswer;
}

/** Embeds a prompt through the gateway's own provider layer, billed to the caller; undefined when it could not. */
export type PromptEmbedder = (text: string, ctx: CallContext) => Promise<Float32Array | undefined>;

export interface ResponseCacheDeps {
  /** The store's entries for the cache (Store.openCache: SQLite's own file, or PostgreSQL's table). */
  openEntries: (limits: { maxEntries: number; maxBytes: number }) => CacheEntryStore;
  redis: Redis | undefined;
  redisPrefix: string;
  embed: PromptEmbedder;
  logger: Logger;
}

/** Answers to store wait this long to be written together (one SQLite commit). */
const WRITE_BATCH_MS = 10;
const SWEEP_MS = 60_000;
const TOUCH_MS = 1000;
const POLL_MS = 5000;

export class ResponseCache {
  private readonly store: CacheEntryStore | undefined;
  private readonly redisTier: RedisExactTier | undefined;
  private readonly vectors: VectorIndex | undefined;
  /** Feeds the index the entries other daemons add. */
  private readonly feed: VectorFeed | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  /** The first look at the store's entries (PostgreSQL: the whole start-up load). */
  private readonly started: Promise<void>;
  /** Per catalog model: which tiers apply (the patterns matched once). */
  private readonly tiers = new Map<string, { exact: boolean; semantic: boolean }>();
  /** Answers waiting for their batch (WRITE_BATCH_MS). */
  private queued: Array<{ entry: NewEntry; semantic: { partition: string; vector: Float32Array } | undefined }> = [];
  private writeTimer: NodeJS.Timeout | undefined;
  /** Stores under way (a Redis round trip before the SQLite queue). */
  private readonly writing = new Set<Promise<void>>();
  private closed = false;

  constructor(
    readonly config: CacheConfig,
    private readonly deps: ResponseCacheDeps,
  ) {
    const logger = deps.logger;
    try {
      this.store = deps.openEntries({ maxEntries: config.maxEntries, maxBytes: config.maxBytes });
    } catch (error) {
      logger.error({ err: error }, 'the response cache could not open its file: every call is a miss');
    }
    this.redisTier = deps.redis ? new RedisExactTier(deps.redis, deps.redisPrefix) : undefined;
    const store = this.store;
    if (store && config.semantic.models.length > 0) {
      const file = store.file;
      // A file: the worker loads it itself, and this process indexes only what comes after.
      // PostgreSQL: every entry comes through syncVectors, from the first id.
      const vectors = VectorIndex.open({ ...(file ? { databasePath: file } : {}), logger });
      const feed = new VectorFeed(store, vectors, logger);
      this.vectors = vectors;
      this.feed = feed;
      this.started = (async () => {
        try {
          if (file) await feed.skipExisting();
          await feed.sync();
        } catch (error) {
          logger.warn({ err: error }, 'could not read the response cache entries at start');
        }
      })();
      this.every(POLL_MS, () => void feed.sync());
    } else this.started = Promise.resolve();
    this.every(TOUCH_MS, () => void this.background('could not record cache entries\' last use', () => this.store?.flushTouched()));
    this.every(SWEEP_MS, () => void this.sweep());
  }

  /** The tiers enabled for a model; undefined when neither is (the cache does not apply). */
  plan(draft: ChatDraft, model: ModelConfig, ctx: CallContext, noCache: boolean): CachePlan | undefined {
    let tiers = this.tiers.get(model.id);
    if (!tiers) {
      tiers = { exact: matches(this.config.exact.models, model.id), semantic: this.vectors !== undefined && matches(this.config.semantic.models, model.id) };
      this.tiers.set(model.id, tiers);
    }
    const { exact, semantic } = tiers;
    if (!exact && !semantic) return undefined;
    // A bypassed call is neither looked up nor stored: no keys to hash.
    const bypass = (reason: string): CachePlan => ({ outcome: 'bypass', reason, accountId: ctx.accountId, keys: { exact: '' }, exact: false, semantic: false, maxTokens: draft.maxTokens });
    if (noCache) return bypass('the request opted out');
    if (ctx.cache === false) return bypass('the key opted out');
    if (draft.temperature !== undefined && draft.temperature > this.config.maxTemperature) return bypass(`temperature above ${this.config.maxTemperature}`);
    if (!this.config.toolResults && draft.messages.at(-1)?.role === 'tool') return bypass('a tool result is pending');
    const scope = this.config.scope === 'key' ? `key:${ctx.apiKeyId}` : `account:${ctx.accountId}`;
    const keys = cacheKeys(draft, model.id, scope);
    return { outcome: 'lookup', accountId: ctx.accountId, keys, exact, semantic: semantic && keys.semantic !== undefined, maxTokens: draft.maxTokens };
  }

  /** Exact tier, then semantic tier (an embedding call, billed); undefined on a miss. */
  async lookup(plan: CachePlan, ctx: CallContext): Promise<CacheHit | undefined> {
    if (plan.outcome !== 'lookup') return undefined;
    const now = Date.now();
    if (plan.exact) {
      const answer = await this.exactGet(plan.accountId, plan.keys.exact, now, ctx);
      if (answer && fitsLimit(answer, plan.maxTokens)) return { tier: 'exact', answer };
    }
    const semantic = plan.keys.semantic;
    if (!plan.semantic || !semantic || !this.vectors || !this.store) return undefined;
    const vector = await this.embed(semantic.prompt, ctx);
    if (!vector) return undefined;
    plan.vector = vector;
    try {
      const match = await this.vectors.search(semantic.partition, vector, this.config.semantic.threshold);
      if (!match) return undefined;
      const entry = await this.store.get(match.id, now);
      if (!entry) return undefined;
      const answer = decodeAnswer(entry.answer);
      if (!answer) {
        this.corrupted(ctx, 'semantic', async () => {
          this.vectors?.remove([entry.id]);
          await this.store?.delete(entry.id);
        });
        return undefined;
      }
      if (!fitsLimit(answer, plan.maxTokens)) return undefined;
      this.store.touch(entry.id, now);
      return { tier: 'semantic', similarity: Math.min(1, match.similarity), answer };
    } catch (error) {
      this.deps.logger.warn({ err: error, req_id: ctx.requestId }, 'semantic cache lookup failed: a miss');
      return undefined;
    }
  }

  /**
   * Keeps a completed answer (after the call is settled; off the response path). Answers cut
   * by a content filter, and answers with nothing in them, are not kept.
   */
  save(plan: CachePlan, result: Pick<ChatResult, 'text' | 'toolCalls' | 'finishReason' | 'stopSequence'>, usage: Usage, model: ModelConfig, requestId: string): void {
    if (plan.outcome !== 'lookup' || this.closed) return;
    if (result.finishReason === 'content_filter' || (result.text === '' && result.toolCalls.length === 0)) return;
    const answer: CachedAnswer = {
      text: result.text,
      toolCalls: result.toolCalls.map((call) => ({ name: call.name, arguments: call.arguments })),
      finishReason: result.finishReason,
      usage,
      createdAt: Date.now(),
    };
    if (result.stopSequence !== undefined) answer.stopSequence = result.stopSequence;
    if (plan.maxTokens !== undefined) answer.maxTokens = plan.maxTokens;
    const encoded = encodeAnswer(answer);
    setImmediate(() => this.track(this.write(plan, encoded, model, requestId)));
  }

  /** Work that flush() (so purge() and close()) waits for. */
  private track(writing: Promise<void>): void {
    this.writing.add(writing);
    void writing.finally(() => this.writing.delete(writing));
  }

  async close(): Promise<void> {
    await this.started;
    await Promise.all([...this.writing]);
    await this.writeQueued();
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    await this.vectors?.close();
    try {
      await this.store?.close();
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'could not close the response cache file');
    }
  }

  /**
   * Removes every entry, or one account's, from every tier (management API: after a model
   * changed, or answers that should not be served again). Returns how many went.
   */
  async purge(accountId: string | undefined): Promise<number> {
    await this.flush();
    let removed = 0;
    if (this.store) {
      const ids = await this.store.purge(accountId);
      if (ids.length > 0) this.vectors?.remove(ids);
      removed += ids.length;
    }
    if (this.redisTier) removed += await this.redisTier.purge(accountId);
    return removed;
  }

  /** What the cache holds now (management API). */
  async stats(): Promise<{ entries: number; bytes: number; semanticEntries: number; redis?: { entries: number; bytes: number } }> {
    const local = (await this.store?.stats()) ?? { entries: 0, bytes: 0, semanticEntries: 0 };
    return this.redisTier ? { ...local, redis: await this.redisTier.stats() } : local;
  }

  /** Writes what is queued now (tests: after a response, its answer is stored once this resolves). */
  async flush(): Promise<void> {
    // save() defers to setImmediate, write() may await Redis: let both run first.
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all([...this.writing]);
    await this.writeQueued();
  }

  /** Resolves once the semantic index holds what the store had at start (tests, the benchmark). */
  async ready(): Promise<void> {
    await this.started;
    await this.vectors?.loaded();
  }

  /** For tests and the benchmark. */
  get internals(): { store: CacheEntryStore | undefined; vectors: VectorIndex | undefined } {
    return { store: this.store, vectors: this.vectors };
  }

  private async exactGet(accountId: string, key: string, now: number, ctx: CallContext): Promise<CachedAnswer | undefined> {
    try {
      if (this.redisTier) {
        const text = await this.redisTier.get(accountId, key, now);
        if (text === undefined) return undefined;
        const answer = decodeAnswer(text);
        if (!answer) this.corrupted(ctx, 'exact', () => void this.redisTier?.delete(accountId, key).catch(() => undefined));
        return answer;
      }
      const entry = await this.store?.getExact(key, now);
      if (!entry) return undefined;
      const answer = decodeAnswer(entry.answer);
      if (!answer) {
        this.corrupted(ctx, 'exact', async () => {
          this.vectors?.remove([entry.id]);
          await this.store?.delete(entry.id);
        });
        return undefined;
      }
      this.store?.touch(entry.id, now);
      return answer;
    } catch (error) {
      this.deps.logger.warn({ err: error, req_id: ctx.requestId }, 'exact cache lookup failed: a miss');
      return undefined;
    }
  }

  private async embed(text: string, ctx: CallContext): Promise<Float32Array | undefined> {
    try {
      return await this.deps.embed(text, ctx);
    } catch (error) {
      if (error instanceof CallAborted) throw error;
      // A wallet or budget that cannot pay for the lookup cannot pay for the call either: the
      // call's own admission says so; only provider failures are worth a warning.
      const level = isGatewayError(error) && error.status < 500 ? 'debug' : 'warn';
      this.deps.logger[level]({ err: error, req_id: ctx.requestId }, 'could not embed the prompt for the semantic cache: a miss');
      return undefined;
    }
  }

  private async write(plan: CachePlan, encoded: string, model: ModelConfig, requestId: string): Promise<void> {
    if (this.closed) return;
    const now = Date.now();
    const semantic = plan.semantic && plan.vector && plan.keys.semantic ? { partition: plan.keys.semantic.partition, vector: plan.vector } : undefined;
    try {
      if (plan.exact && this.redisTier) {
        await this.redisTier.put(plan.accountId, plan.keys.exact, encoded, now, this.config.ttlMs, this.config.maxEntries, this.config.maxBytes);
      }
    } catch (error) {
      this.deps.logger.warn({ err: error, req_id: requestId }, 'could not store the answer in the response cache (Redis)');
    }
    const local = plan.exact && !this.redisTier;
    if (!this.store || (!local && !semantic)) return;
    const entry: NewEntry = {
      accountId: plan.accountId,
      exactKey: local ? plan.keys.exact : undefined,
      partition: semantic?.partition,
      vector: semantic?.vector,
      model: model.id,
      answer: encoded,
      now,
      ttlMs: this.config.ttlMs,
    };
    this.queued.push({ entry, semantic });
    if (!this.writeTimer) {
      // Tracked: a purge that runs while this batch is in flight must wait for it, or the
      // batch would land after the purge (seen on PostgreSQL: an entry left by purge-all).
      this.writeTimer = setTimeout(() => this.track(this.writeQueued()), WRITE_BATCH_MS);
      this.writeTimer.unref();
    }
  }

  /** The queued answers into the store, in one transaction. */
  private async writeQueued(): Promise<void> {
    if (this.writeTimer) clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    const batch = this.queued;
    this.queued = [];
    if (batch.length === 0 || !this.store || this.closed) return;
    try {
      const { ids, removed } = await this.store.putMany(batch.map((queued) => queued.entry));
      if (removed.length > 0) this.vectors?.remove(removed);
      batch.forEach(({ semantic }, index) => {
        const id = ids[index];
        if (!semantic || id === undefined || id < 0) return;
        this.feed?.own(id);
        this.vectors?.add(semantic.partition, id, semantic.vector);
      });
    } catch (error) {
      this.deps.logger.warn({ err: error, answers: batch.length }, 'could not store answers in the response cache');
    }
  }

  private corrupted(ctx: CallContext, tier: string, drop: () => unknown): void {
    this.deps.logger.warn({ req_id: ctx.requestId, tier }, 'a response cache entry could not be read: dropped, a miss');
    void this.background('could not drop a corrupted cache entry', drop);
  }

  /** Runs `work` (sync or async), logging its failure instead of throwing. */
  private async background(what: string, work: () => unknown): Promise<void> {
    try {
      await work();
    } catch (error) {
      this.deps.logger.warn({ err: error }, what);
    }
  }

  private async sweep(): Promise<void> {
    try {
      const removed = (await this.store?.sweep(Date.now())) ?? [];
      if (removed.length > 0) this.vectors?.remove(removed);
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'could not sweep the response cache');
    }
  }

  /** Indexes the semantic entries other daemons sharing the store added since the last look (every 5 s). */
  async syncVectors(): Promise<void> {
    await this.feed?.sync();
  }

  private every(ms: number, run: () => void): void {
    const timer = setInterval(run, ms);
    timer.unref();
    this.timers.push(timer);
  }
}

/** Catalog ids against the tier's patterns (`*` any run of characters). */
export function matches(patterns: readonly string[], id: string): boolean {
  for (const pattern of patterns) {
    if (pattern === '*' || pattern === id) return true;
    if (!pattern.includes('*')) continue;
    const regex = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&')).join('.*')}$`);
    if (regex.test(id)) return true;
  }
  return false;
}
