import type { FinishReason, Usage } from '../canonical.js';

/**
 * A cached answer, in canonical form (no wire format): any ingress can render it as JSON or
 * replay it as a stream. Tool call ids are not kept; a replay gives its calls fresh ones.
 */
export interface CachedAnswer {
  text: string;
  toolCalls: Array<{ name: string; arguments: string }>;
  finishReason: FinishReason;
  stopSequence?: string;
  /** What the original call used (and what a hit reports and saves at list price). */
  usage: Usage;
  /** When the upstream produced it (ms). */
  createdAt: number;
  /** The output limit the caller set; undefined: the model's. */
  maxTokens?: number;
}

/**
 * Whether a cached answer is what a call with this output limit would have got: one that
 * ended on its own fits any limit at least its length; one cut at its limit only that limit.
 */
export function fitsLimit(answer: CachedAnswer, maxTokens: number | undefined): boolean {
  if (answer.finishReason === 'length') return maxTokens === answer.maxTokens;
  return maxTokens === undefined || answer.usage.outputTokens <= maxTokens;
}

const FORMAT = 1;
const FINISH: readonly FinishReason[] = ['stop', 'length', 'tool_calls', 'content_filter'];

export function encodeAnswer(answer: CachedAnswer): string {
  return JSON.stringify({ v: FORMAT, ...answer });
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0;

/** The answer, or undefined for an entry that is not one (corrupted, or from another format version). */
export function decodeAnswer(text: string): CachedAnswer | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const entry = raw as Record<string, unknown>;
  if (entry.v !== FORMAT || typeof entry.text !== 'string' || !isCount(entry.createdAt)) return undefined;
  if (!FINISH.includes(entry.finishReason as FinishReason)) return undefined;
  if (entry.stopSequence !== undefined && typeof entry.stopSequence !== 'string') return undefined;
  if (!Array.isArray(entry.toolCalls)) return undefined;
  const toolCalls: CachedAnswer['toolCalls'] = [];
  for (const call of entry.toolCalls as unknown[]) {
    const c = call as Record<string, unknown> | null;
    if (typeof c !== 'object' || c === null || typeof c.name !== 'string' || typeof c.arguments !== 'string') return undefined;
    toolCalls.push({ name: c.name, arguments: c.arguments });
  }
  const u = entry.usage as Record<string, unknown> | null;
  if (typeof u !== 'object' || u === null) return undefined;
  const { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, reasoningTokens } = u;
  if (!isCount(inputTokens) || !isCount(outputTokens) || !isCount(cacheReadTokens) || !isCount(cacheWriteTokens) || !isCount(reasoningTokens)) return undefined;
  const usage: Usage = { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, reasoningTokens };
  if (isCount(u.cacheWrite1hTokens)) usage.cacheWrite1hTokens = u.cacheWrite1hTokens;
  const answer: CachedAnswer = {
    text: entry.text,
    toolCalls,
    finishReason: entry.finishReason as FinishReason,
    usage,
    createdAt: entry.createdAt,
  };
  if (typeof entry.stopSequence === 'string') answer.stopSequence = entry.stopSequence;
  if (isCount(entry.maxTokens)) answer.maxTokens = entry.maxTokens;
  else if (entry.maxTokens !== undefined) return undefined;
  return answer;
}
