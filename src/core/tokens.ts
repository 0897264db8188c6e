import type { Tiktoken } from 'js-tiktoken/lite';
import type { ChatRequest, ContentPart, Message } from './canonical.js';

/**
 * Token counts for billing when the upstream does not report usage (an aborted stream, a
 * provider that omits it). js-tiktoken's cl100k_base is loaded on first use only: its rank
 * table costs ~70 MB of heap, which a daemon that always gets upstream usage never pays.
 * cl100k is within a few percent of other vendors' tokenizers for prose; it is an estimate
 * for non-OpenAI models, used only when the provider gave no count.
 */

let encoder: Tiktoken | undefined;
let loading: Promise<Tiktoken> | undefined;

async function loadEncoder(): Promise<Tiktoken> {
  if (encoder) return encoder;
  loading ??= (async () => {
    const [{ Tiktoken }, ranks] = await Promise.all([import('js-tiktoken/lite'), import('js-tiktoken/ranks/cl100k_base')]);
    encoder = new Tiktoken(ranks.default);
    return encoder;
  })();
  return loading;
}

/**
 * js-tiktoken's BPE merge is quadratic in the length of one pre-token, so a long run without
 * spaces (4,000 characters take ~0.9 s) could freeze the daemon. Text is counted in slices:
 * up to SLICE characters cut at a space, or WORD characters where a run has no space; beyond
 * MAX_COUNTED characters the rest is estimated at 4 characters per token. A cut moves a count
 * by at most a token, and this count is only used when the provider reported none.
 */
const SLICE = 256;
const WORD = 32;
const MAX_COUNTED = 64 * 1024;

export async function countTextTokens(text: string): Promise<number> {
  if (text === '') return 0;
  const encoder = await loadEncoder();
  const counted = text.length > MAX_COUNTED ? text.slice(0, MAX_COUNTED) : text;
  let tokens = Math.ceil((text.length - counted.length) / 4);
  for (let start = 0; start < counted.length; ) {
    let end = Math.min(start + SLICE, counted.length);
    if (end < counted.length) {
      const space = counted.lastIndexOf(' ', end);
      end = space > start ? space : start + WORD;
    }
    tokens += encoder.encode(counted.slice(start, end)).length;
    start = end;
  }
  return tokens;
}

/** Tokens an image costs at most across the catalog's vision models (gpt-4o-mini's 2833 + 5667 per tile is the dearest). */
export const IMAGE_TOKEN_ALLOWANCE = 40_000;
/** Per-message framing and provider-added system text (tool-use preambles run to a few hundred tokens). */
const MESSAGE_OVERHEAD = 8;
const CALL_OVERHEAD = 1_000;

function partBytes(part: ContentPart): number {
  return part.type === 'text' ? Buffer.byteLength(part.text) : IMAGE_TOKEN_ALLOWANCE;
}

function messageBytes(message: Message): number {
  let bytes = MESSAGE_OVERHEAD;
  for (const part of message.content) bytes += partBytes(part);
  if (message.role === 'assistant') for (const call of message.toolCalls) bytes += Buffer.byteLength(call.name) + Buffer.byteLength(call.arguments) + MESSAGE_OVERHEAD;
  if (message.role === 'tool') bytes += Buffer.byteLength(message.toolCallId);
  return bytes;
}

/**
 * An upper bound on the prompt's tokens without tokenizing: a BPE token is at least one
 * byte of UTF-8, so bytes bound tokens; images and framing get fixed allowances. Cheap
 * enough for every call; used for the wallet hold, never for the bill.
 */
export function promptTokenBound(request: Pick<ChatRequest, 'messages' | 'tools' | 'responseFormat'>): number {
  let bytes = CALL_OVERHEAD;
  for (const message of request.messages) bytes += messageBytes(message);
  if (request.tools) bytes += Buffer.byteLength(JSON.stringify(request.tools));
  if (request.responseFormat) bytes += Buffer.byteLength(JSON.stringify(request.responseFormat));
  return bytes;
}

/** Estimated prompt tokens with the tokenizer, for billing an aborted call that has no upstream count. */
export async function countPromptTokens(request: Pick<ChatRequest, 'messages' | 'tools'>): Promise<number> {
  let tokens = 3;
  for (const message of request.messages) {
    tokens += 4;
    for (const part of message.content) tokens += part.type === 'text' ? await countTextTokens(part.text) : 1_000;
    if (message.role === 'assistant') for (const call of message.toolCalls) tokens += (await countTextTokens(call.name)) + (await countTextTokens(call.arguments));
  }
  if (request.tools) tokens += await countTextTokens(JSON.stringify(request.tools));
  return tokens;
}
