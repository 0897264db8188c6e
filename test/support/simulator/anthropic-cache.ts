import { createHash } from 'node:crypto';
import { isRecord } from './scenario.js';
import { prefixTokens } from './tokens.js';

/**
 * Anthropic prompt caching, as the Messages API does it (docs: "Prompt caching"):
 *
 * - A prompt is the blocks `tools`, then `system`, then `messages`, in that order. A
 *   `cache_control: {"type": "ephemeral", "ttl"?: "5m" | "1h"}` on a block is a breakpoint: the
 *   prefix up to and including that block can be cached. A top-level `cache_control` (automatic
 *   caching) puts one on the last block of the last message. At most 4 breakpoints
 *   ("A maximum of 4 blocks with cache_control may be provided. Found 5."); a 1h breakpoint may
 *   not follow a 5m one.
 * - A prefix shorter than the model's minimum is not cached (no error): 1024 tokens for Sonnet
 *   4.5, Opus 4.1, Opus 4, Sonnet 4 and 3.7; 2048 for Sonnet 4.6 and Haiku 3.5/3; 4096 for Opus
 *   4.5+ and Haiku 4.5.
 * - Reads: for every breakpoint the API looks for a cached prefix at that block and up to 20
 *   blocks before it, and reads the longest one found (`cache_read_input_tokens`); a read
 *   refreshes the entry's lifetime (5 minutes, or 1 hour with `ttl: "1h"`).
 * - Writes: what lies between the read and the last cacheable breakpoint is written
 *   (`cache_creation_input_tokens`, split by TTL in `cache_creation`), each segment at the TTL of
 *   the breakpoint that ends it. What follows the last breakpoint is `input_tokens`.
 * - The cache is exact-prefix: a changed byte in a block misses from there on. Message blocks
 *   also miss when `tool_choice`, `thinking` or the presence of images changes.
 */

export type CacheTtl = '5m' | '1h';

const TTL_MS: Record<CacheTtl, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };
export const MAX_BREAKPOINTS = 4;
export const LOOKBACK_BLOCKS = 20;
const MAX_ENTRIES = 10_000;

/** The shortest prefix (tokens) a model caches. */
export function minimumCacheableTokens(model: string): number {
  if (/opus-4-[5-9]|haiku-4-5/.test(model)) return 4096;
  if (/sonnet-4-6|3-5-haiku|3-haiku/.test(model)) return 2048;
  return 1024;
}

interface PromptBlock {
  /** What the block adds to the billed prompt text (as the simulator's prompt count reads it). */
  text: string;
  /** Messages begun up to and including this block (their framing is in the prefix). */
  messages: number;
  /** Hash of the prefix that ends with this block. */
  hash: string;
}

interface Breakpoint {
  /** Index of the block it ends the prefix at. */
  block: number;
  ttl: CacheTtl;
}

/** A request's blocks (with the hash of the prefix each ends) and its breakpoints, in block order. */
export interface CachePlan {
  model: string;
  blocks: PromptBlock[];
  breakpoints: Breakpoint[];
}

export interface CacheOutcome {
  read: number;
  write5m: number;
  write1h: number;
}

const NONE: CacheOutcome = { read: 0, write5m: 0, write1h: 0 };

function hash(previous: string, value: unknown): string {
  return createHash('sha256').update(previous).update('\u0000').update(JSON.stringify(value) ?? 'undefined').digest('hex');
}

function withoutCacheControl(block: Record<string, unknown>): Record<string, unknown> {
  const { cache_control: _ignored, ...rest } = block;
  if (Array.isArray(rest.content)) rest.content = rest.content.map((inner: unknown) => (isRecord(inner) ? withoutCacheControl(inner) : inner));
  return rest;
}

function nestedText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b: unknown) => (isRecord(b) && b.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('');
}

/** The text a content block adds to the billed prompt. */
function blockText(block: Record<string, unknown>): string {
  if (block.type === 'text' && typeof block.text === 'string') return block.text;
  if (block.type === 'tool_result') return nestedText(block.content);
  if (block.type === 'tool_use') return String(block.name) + JSON.stringify(block.input ?? {});
  return '';
}

/** The cache_control of a block (a tool_result's inner blocks count as the tool_result's). */
function controlOf(block: Record<string, unknown>): { value: unknown; at: string } | undefined {
  if (block.cache_control !== undefined && block.cache_control !== null) return { value: block.cache_control, at: '' };
  if (block.type === 'tool_result' && Array.isArray(block.content)) {
    for (const [k, inner] of block.content.entries()) {
      if (isRecord(inner) && inner.cache_control !== undefined && inner.cache_control !== null) return { value: inner.cache_control, at: `.content.${k}` };
    }
  }
  return undefined;
}

/** `field`: where the cache_control is, as the API names it in errors (`system.0.cache_control`). */
function ttlOf(value: unknown, field: string): { ttl: CacheTtl } | { error: string } {
  if (!isRecord(value)) return { error: `${field}: Input should be a valid dictionary or object to extract fields from` };
  if (value.type !== 'ephemeral') return { error: `${field}.type: Input should be 'ephemeral'` };
  if (value.ttl === undefined || value.ttl === null) return { ttl: '5m' };
  if (value.ttl !== '5m' && value.ttl !== '1h') return { error: `${field}.ttl: Input should be '5m' or '1h'` };
  return { ttl: value.ttl };
}

/**
 * Reads a (validated) Messages request's blocks and breakpoints; a string is the API's error
 * message (400 invalid_request_error). Undefined when the request has no breakpoint at all
 * (nothing to hash: the common case costs nothing).
 */
export function planPromptCache(body: Record<string, unknown>, model: string): CachePlan | string | undefined {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isRecord) : [];
  const system = Array.isArray(body.system) ? body.system.filter(isRecord) : [];
  const messages = (body.messages as unknown[]).filter(isRecord);
  const topLevel = body.cache_control !== undefined && body.cache_control !== null;
  const marked = (b: Record<string, unknown>): boolean => controlOf(b) !== undefined;
  const anyMarked =
    topLevel || tools.some(marked) || system.some(marked) || messages.some((m) => Array.isArray(m.content) && m.content.some((b: unknown) => isRecord(b) && marked(b)));
  if (!anyMarked) return undefined;

  const blocks: PromptBlock[] = [];
  /** `field`: the cache_control's own path (`messages.1.content.0.cache_control`). */
  const marks: Array<{ block: number; value: unknown; field: string }> = [];
  let chain = hash('anthropic-prompt-cache', model);
  const add = (text: string, messageCount: number, identity: unknown, control: { value: unknown; field: string } | undefined): void => {
    chain = hash(chain, identity);
    blocks.push({ text, messages: messageCount, hash: chain });
    if (control) marks.push({ block: blocks.length - 1, ...control });
  };

  tools.forEach((tool, i) => {
    const control = controlOf(tool);
    add(JSON.stringify(tool), 0, ['tool', withoutCacheControl(tool)], control && { value: control.value, field: `tools.${i}.cache_control` });
  });
  if (typeof body.system === 'string' && body.system !== '') add(body.system, 0, ['system', body.system], undefined);
  system.forEach((block, i) => {
    const control = controlOf(block);
    add(blockText(block), 0, ['system', withoutCacheControl(block)], control && { value: control.value, field: `system.${i}${control.at}.cache_control` });
  });
  // Message blocks are cached only under the same tool_choice, thinking and images/no images.
  const images = messages.some((m) => Array.isArray(m.content) && m.content.some((b: unknown) => isRecord(b) && b.type === 'image'));
  chain = hash(chain, ['messages', body.tool_choice ?? null, body.thinking ?? null, images]);
  messages.forEach((message, i) => {
    const content = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? message.content.filter(isRecord) : [];
    content.forEach((block, j) => {
      const control = controlOf(block);
      add(blockText(block), i + 1, [j === 0 ? `turn:${String(message.role)}` : 'block', withoutCacheControl(block)], control && { value: control.value, field: `messages.${i}.content.${j}${control.at}.cache_control` });
    });
  });
  // Automatic caching: a breakpoint on the last block of the last message.
  if (topLevel && blocks.length > 0) {
    const last = blocks.length - 1;
    if (!marks.some((m) => m.block === last)) marks.push({ block: last, value: body.cache_control, field: 'cache_control' });
  }

  const breakpoints: Array<Breakpoint & { field: string }> = [];
  for (const mark of marks) {
    const checked = ttlOf(mark.value, mark.field);
    if ('error' in checked) return checked.error;
    breakpoints.push({ block: mark.block, ttl: checked.ttl, field: mark.field });
  }
  if (breakpoints.length > MAX_BREAKPOINTS) return `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints.length}.`;
  breakpoints.sort((a, b) => a.block - b.block);
  let fiveMinute = false;
  for (const point of breakpoints) {
    if (point.ttl === '5m') fiveMinute = true;
    else if (fiveMinute) {
      return `${point.field}.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: \`tools\`, \`system\`, \`messages\`.`;
    }
  }
  return { model, blocks, breakpoints: breakpoints.map(({ block, ttl }) => ({ block, ttl })) };
}

/**
 * The prompt cache of one simulator (one organization): prefix hash → when it expires. Its
 * clock is the wall clock plus what a test advanced it by, so TTLs are testable.
 */
export class AnthropicPromptCache {
  readonly #entries = new Map<string, { expiresAt: number; ttlMs: number }>();
  #offsetMs = 0;

  now(): number {
    return Date.now() + this.#offsetMs;
  }

  /** Moves the cache's clock forward (entries expire as if `ms` had passed). */
  advance(ms: number): void {
    this.#offsetMs += ms;
  }

  /** Forgets every entry and the advanced time. */
  clear(): void {
    this.#entries.clear();
    this.#offsetMs = 0;
  }

  /** Live entries (for tests). */
  get size(): number {
    const now = this.now();
    let live = 0;
    for (const entry of this.#entries.values()) if (entry.expiresAt > now) live += 1;
    return live;
  }

  #live(key: string, now: number): { expiresAt: number; ttlMs: number } | undefined {
    const entry = this.#entries.get(key);
    if (entry && entry.expiresAt <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  #store(key: string, ttlMs: number, now: number): void {
    if (this.#entries.size >= MAX_ENTRIES) {
      for (const [k, e] of this.#entries) if (e.expiresAt <= now) this.#entries.delete(k);
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value as string);
    }
    const current = this.#entries.get(key);
    const ttl = Math.max(ttlMs, current?.ttlMs ?? 0);
    this.#entries.set(key, { expiresAt: now + ttl, ttlMs: ttl });
  }

  /**
   * Reads and writes the cache for one call whose whole prompt is `promptTokens`: what was
   * read, and what was written at each TTL (the rest of the prompt is uncached input).
   */
  apply(plan: CachePlan, promptTokens: number): CacheOutcome {
    if (plan.breakpoints.length === 0) return NONE;
    const now = this.now();
    const tokensAt = new Map<number, number>();
    const prefixAt = (index: number): number => {
      let tokens = tokensAt.get(index);
      if (tokens === undefined) {
        const block = plan.blocks[index] as PromptBlock;
        const text = plan.blocks.slice(0, index + 1).map((b) => b.text).join('');
        tokens = Math.min(promptTokens, prefixTokens('anthropic', plan.model, { text, messages: block.messages }));
        tokensAt.set(index, tokens);
      }
      return tokens;
    };

    // The longest cached prefix at a breakpoint or up to 20 blocks before one.
    let readAt = -1;
    for (const point of plan.breakpoints) {
      for (let j = point.block; j >= Math.max(0, point.block - LOOKBACK_BLOCKS) && j > readAt; j--) {
        if (this.#live((plan.blocks[j] as PromptBlock).hash, now)) {
          readAt = j;
          break;
        }
      }
    }
    const outcome: CacheOutcome = { read: 0, write5m: 0, write1h: 0 };
    if (readAt >= 0) {
      const key = (plan.blocks[readAt] as PromptBlock).hash;
      const entry = this.#live(key, now);
      if (entry) entry.expiresAt = now + entry.ttlMs; // a hit refreshes the entry
      outcome.read = prefixAt(readAt);
    }

    const minimum = minimumCacheableTokens(plan.model);
    let written = outcome.read;
    for (const point of plan.breakpoints) {
      if (point.block <= readAt) continue;
      const tokens = prefixAt(point.block);
      if (tokens < minimum || tokens <= written) continue;
      if (point.ttl === '1h') outcome.write1h += tokens - written;
      else outcome.write5m += tokens - written;
      written = tokens;
      this.#store((plan.blocks[point.block] as PromptBlock).hash, TTL_MS[point.ttl], now);
    }
    return outcome;
  }
}
