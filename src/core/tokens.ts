import type { ChatRequest, ContentPart, Message } from './canonical.js';

/**
 * Token counts with OpenAI's cl100k_base, for two uses:
 * - billing, when the upstream reports no usage (an aborted stream, a provider that omits it);
 * - the tight prompt bound of admission (promptTokenEstimate), when the cheap byte bound would
 *   refuse a call the wallet can in fact pay (core/gateway/admission.ts).
 *
 * The encoder is gpt-tokenizer's: the same ranks and counts as js-tiktoken, 3 to 5 times faster
 * (400 KB of prose in ~60 ms against ~210 ms, measured on this project's CI machine) and half the
 * memory once loaded (~40 MB RSS against ~87 MB). It is loaded on first use only: a daemon that
 * always gets upstream usage and never nears a wallet's limit never pays for it.
 */

type CountTokens = (text: string) => number;

let counter: CountTokens | undefined;
let loading: Promise<CountTokens> | undefined;

/** Special-token text in a prompt (`<|endoftext|>`) is counted as the plain text it is, not refused. */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

async function loadCounter(): Promise<CountTokens> {
  if (counter) return counter;
  loading ??= (async () => {
    const cl100k = await import('gpt-tokenizer/encoding/cl100k_base');
    // Its merge cache keeps 100k pre-tokens by default; a tenth keeps most of the speed for a
    // fraction of the memory in a long-running daemon.
    cl100k.setMergeCacheSize(10_000);
    counter = (text) => cl100k.countTokens(text, PLAIN_TEXT);
    return counter;
  })();
  return loading;
}

/**
 * BPE merging is quadratic in the length of one pre-token, so a long run without spaces (100k
 * characters take seconds) could freeze the daemon. Text is counted in slices: up to SLICE
 * characters cut at a space, or WORD characters where a run has no space. A cut at a space is
 * a pre-token boundary of cl100k (it splits before " word"), so ordinary text counts as whole;
 * a cut inside a run moves the count by at most a token. Every YIELD_CHARS characters the count
 * gives the event loop back, so a long prompt never holds up other calls for more than a few
 * milliseconds.
 */
const SLICE = 256;
const WORD = 32;
const YIELD_CHARS = 32 * 1024;

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Counts `text` in slices; `budget` carries the characters counted since the last yield across calls. */
async function countSliced(count: CountTokens, text: string, budget: { chars: number }): Promise<number> {
  let tokens = 0;
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + SLICE, text.length);
    if (end < text.length) {
      const space = text.lastIndexOf(' ', end);
      end = space > start ? space : start + WORD;
      // Never between the two halves of a surrogate pair (an emoji would count as two bad halves).
      const unit = text.charCodeAt(end - 1);
      if (unit >= 0xd800 && unit <= 0xdbff) end += 1;
    }
    tokens += count(text.slice(start, end));
    budget.chars += end - start;
    if (budget.chars >= YIELD_CHARS) {
      budget.chars = 0;
      await yieldToLoop();
    }
    start = end;
  }
  return tokens;
}

export async function countTextTokens(text: string): Promise<number> {
  if (text === '') return 0;
  return countSliced(await loadCounter(), text, { chars: 0 });
}

/** Tokens an image costs at most across the catalog's vision models (gpt-4o-mini's 2833 + 5667 per tile is the dearest). */
export const IMAGE_TOKEN_ALLOWANCE = 40_000;
/**
 * What an image typically costs, for a count that estimates rather than bounds (count_tokens):
 * a large image on Claude (about 1,600 tokens for 1.15 megapixels); OpenAI's 1024x1024 at
 * high detail is 765 on GPT-4o, Gemini's a few hundred per tile.
 */
export const IMAGE_TOKEN_TYPICAL = 1_600;
/** Per-message framing and provider-added system text (tool-use preambles run to a few hundred tokens). */
const MESSAGE_OVERHEAD = 8;
const CALL_OVERHEAD = 1_000;

function partBytes(part: ContentPart): number {
  return part.type === 'text' ? Buffer.byteLength(part.text) : IMAGE_TOKEN_ALLOWANCE;
}

function messageBytes(message: Message): number {
  let bytes = MESSAGE_OVERHEAD;
  for (const part of message.content) bytes += partBytes(part);
  if (message.role === 'assistant') {
    for (const call of message.toolCalls) bytes += Buffer.byteLength(call.name) + Buffer.byteLength(call.arguments) + MESSAGE_OVERHEAD;
    // Replayed reasoning is prompt too (Claude bills the thinking of the tool loop it continues).
    if (message.reasoning) for (const block of message.reasoning) bytes += Buffer.byteLength(block.text) + (block.redacted?.length ?? 0) + MESSAGE_OVERHEAD;
  }
  if (message.role === 'tool') bytes += Buffer.byteLength(message.toolCallId);
  return bytes;
}

type PromptParts = Pick<ChatRequest, 'messages' | 'tools' | 'responseFormat'>;

/**
 * The fast prompt bound, without tokenizing: a byte-level BPE token is at least one byte of
 * UTF-8, so bytes bound tokens (measured: cl100k, o200k, Llama 3, DeepSeek, Mistral's Tekken,
 * Gemma); images and framing get fixed allowances. A tokenizer that normalizes text first
 * (NFKC in the legacy Claude one, NFC in Qwen's) can count more than bytes for rare
 * compatibility characters (a 3-byte ligature as 15 tokens); the charge is capped at the hold
 * whatever happens (settlement.ts). Cheap enough for every call; used for the wallet hold,
 * never for the bill. For prose it is about 4 times the real count, which is why admission
 * tries promptTokenEstimate before it refuses a call.
 */
export function promptTokenBound(request: PromptParts): number {
  let bytes = CALL_OVERHEAD;
  for (const message of request.messages) bytes += messageBytes(message);
  if (request.tools) bytes += Buffer.byteLength(JSON.stringify(request.tools));
  if (request.responseFormat) bytes += Buffer.byteLength(JSON.stringify(request.responseFormat));
  return bytes;
}

/**
 * How a provider's prompt tokens relate to cl100k's, for the tight bound: its tokenizer counts
 * at most `ratio` times cl100k's tokens for the same text, plus one token per digit when it
 * splits numbers into single digits (`splitDigits`: Gemini, Mistral, Qwen; cl100k groups up to
 * three, so on numeric text they count up to 3 times cl100k and no flat ratio fits both prose
 * and numbers); and its upstream adds at most `toolsOverhead` tokens of its own system text
 * when the call has tools. Each family states its own, with the measurements behind it
 * (src/providers/<family>/index.ts); a provider can override ratio and splitDigits in the
 * config (`providers.<name>.tokenizer`), for an OpenAI-compatible vendor with its own tokenizer.
 */
export interface PromptTokenMargin {
  ratio: number;
  splitDigits: boolean;
  toolsOverhead: number;
}

/**
 * Long runs of one character (40,000 spaces, newlines, `=`): cl100k packs them into few
 * tokens, other vocabularies do not (measured: o200k 2 times cl100k on newlines, Gemma 8 on
 * spaces, Mistral's SentencePiece 32 on newlines, a token each). Such runs are rare in real
 * prompts and counted at a token per character, which every measured tokenizer stays under.
 */
const LONG_RUN = 32;

/** The digits of `text`, and the characters in runs of LONG_RUN or more of one character. */
function scanText(text: string): { digits: number; runChars: number } {
  let digits = 0;
  let runChars = 0;
  let run = 1;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) digits += 1;
    if (i > 0 && code === text.charCodeAt(i - 1)) {
      run += 1;
      if (run === LONG_RUN) runChars += LONG_RUN;
      else if (run > LONG_RUN) runChars += 1;
    } else run = 1;
  }
  return { digits, runChars };
}

/**
 * Framing, in tokens: per message (role and separators: OpenAI counts 3 per message and 3 to
 * prime the reply; Anthropic's framing of a one-message prompt is of the same order, which the
 * 12 of a one-message call and the margin on its text cover; Gemini counts none).
 */
const ESTIMATE_MESSAGE_OVERHEAD = 4;
const ESTIMATE_CALL_OVERHEAD = 8;

/**
 * The tight prompt bound: every text of the prompt counted with cl100k, times the family's
 * margin, plus framing, the family's tool preamble and the same image allowance as the fast
 * bound. Tokenizing costs about 0.15 ms per KB of prompt, so admission computes it only when
 * the fast bound does not fit in what the wallet and the key have free. Never above the fast
 * bound (which is a true bound), so it can only admit more. `imageTokens`: what each image
 * counts (the allowance of a bound by default; POST /v1/messages/count_tokens, which estimates,
 * gives IMAGE_TOKEN_TYPICAL).
 */
export async function promptTokenEstimate(request: PromptParts, margin: PromptTokenMargin, imageTokens = IMAGE_TOKEN_ALLOWANCE): Promise<number> {
  const count = await loadCounter();
  const budget = { chars: 0 };
  let tokens = 0;
  let extra = 0;
  const add = async (text: string): Promise<void> => {
    tokens += await countSliced(count, text, budget);
    const scan = scanText(text);
    extra += scan.runChars + (margin.splitDigits ? scan.digits : 0);
  };
  let fixed = ESTIMATE_CALL_OVERHEAD;
  for (const message of request.messages) {
    fixed += ESTIMATE_MESSAGE_OVERHEAD;
    for (const part of message.content) {
      if (part.type === 'text') await add(part.text);
      else fixed += imageTokens;
    }
    if (message.role === 'assistant') {
      for (const call of message.toolCalls) {
        fixed += ESTIMATE_MESSAGE_OVERHEAD;
        await add(call.name);
        await add(call.arguments);
      }
      // Redacted thinking is opaque: its length bounds it, as bytes bound tokens.
      for (const block of message.reasoning ?? []) {
        fixed += ESTIMATE_MESSAGE_OVERHEAD + (block.redacted?.length ?? 0);
        await add(block.text);
      }
    }
    if (message.role === 'tool') await add(message.toolCallId);
  }
  if (request.tools) {
    fixed += margin.toolsOverhead;
    await add(JSON.stringify(request.tools));
  }
  if (request.responseFormat) await add(JSON.stringify(request.responseFormat));
  const estimate = Math.ceil(tokens * margin.ratio) + extra + fixed;
  return Math.min(estimate, promptTokenBound(request));
}

/** Estimated prompt tokens with the tokenizer, for billing an aborted call that has no upstream count. */
export async function countPromptTokens(request: Pick<ChatRequest, 'messages' | 'tools'>): Promise<number> {
  const count = await loadCounter();
  const budget = { chars: 0 };
  let tokens = 3;
  for (const message of request.messages) {
    tokens += 4;
    for (const part of message.content) tokens += part.type === 'text' ? await countSliced(count, part.text, budget) : 1_000;
    if (message.role === 'assistant') {
      for (const call of message.toolCalls) tokens += (await countSliced(count, call.name, budget)) + (await countSliced(count, call.arguments, budget));
      for (const block of message.reasoning ?? []) tokens += await countSliced(count, block.text, budget);
    }
  }
  if (request.tools) tokens += await countSliced(count, JSON.stringify(request.tools), budget);
  return tokens;
}
