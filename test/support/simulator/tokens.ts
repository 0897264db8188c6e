import { countTokens, setMergeCacheSize } from 'gpt-tokenizer/encoding/cl100k_base';
import type { Family } from './scenario.js';

/**
 * The token counts the simulator reports, modelled on what each upstream's own tokenizer
 * counts. Only OpenAI's tokenizers are published in full, so every count starts from cl100k
 * and applies the median ratio measured for the vendor's tokenizer on prose and code (issue 11:
 * 97 samples of natural text and code, the vendors' tokenizers from npm):
 *
 * | upstream | tokens per cl100k token | digits | framing |
 * |---|---|---|---|
 * | OpenAI (o200k, cl100k), Groq's Llama 3 and gpt-oss, DeepSeek | 1.00 (o200k 0.99, Llama 3 1.00, DeepSeek 1.03) | grouped by 3 | 3 per message + 3 (OpenAI's cookbook formula) |
 * | Mistral (Tekken) | 1.05 | one token each | 3 per message + 3 |
 * | Anthropic (Claude 3 and later) | 1.16: published comparison with GPT-4o on English text (the legacy Claude tokenizer measures 1.06) | grouped | 3 per message + 7 (its framing is not published; of OpenAI's order) |
 * | Gemini (Gemma 3 vocabulary) | 1.07 | one token each | none |
 *
 * So a gateway's prompt bound is tested against counts like a real upstream's, not against
 * the gateway's own tokenizer. A cl100k count of text with n digits already has at least n/3
 * tokens for them; a tokenizer that splits digits counts 2n/3 more.
 */
interface TokenModel {
  ratio: number;
  splitDigits: boolean;
  perMessage: number;
  perCall: number;
}

const OPENAI: TokenModel = { ratio: 1, splitDigits: false, perMessage: 3, perCall: 3 };
const MISTRAL: TokenModel = { ratio: 1.05, splitDigits: true, perMessage: 3, perCall: 3 };
const ANTHROPIC: TokenModel = { ratio: 1.16, splitDigits: false, perMessage: 3, perCall: 7 };
const GEMINI: TokenModel = { ratio: 1.07, splitDigits: true, perMessage: 0, perCall: 0 };

function modelFor(family: Family, model: string): TokenModel {
  // Bedrock serves many vendors' models: Claude counts as Anthropic's, the others by their id.
  if (family === 'anthropic' || (family === 'bedrock' && /anthropic\.|claude/i.test(model))) return ANTHROPIC;
  if (family === 'gemini') return GEMINI;
  return /mistral|codestral|magistral|ministral|pixtral/i.test(model) ? MISTRAL : OPENAI;
}

/**
 * cl100k over slices (256 characters cut at a space, 32 where a run has none): BPE is
 * quadratic in the length of one pre-token, and tests send long unbroken runs.
 */
function cl100k(text: string): number {
  let tokens = 0;
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + 256, text.length);
    if (end < text.length) {
      const space = text.lastIndexOf(' ', end);
      end = space > start ? space : start + 32;
      const unit = text.charCodeAt(end - 1);
      if (unit >= 0xd800 && unit <= 0xdbff) end += 1;
    }
    tokens += countTokens(text.slice(start, end), { disallowedSpecial: new Set() });
    start = end;
  }
  return tokens;
}

// The benchmark sends the same few prompts thousands of times a second: a simulator that
// tokenized each would take CPU from the processes it measures. Short texts' cl100k counts are
// remembered (a bounded map, cleared when full), and the tokenizer's own cache kept small.
setMergeCacheSize(10_000);
const remembered = new Map<string, number>();
const REMEMBER_UP_TO = 4096;
const REMEMBER_ENTRIES = 2048;

function cl100kRemembered(text: string): number {
  if (text.length > REMEMBER_UP_TO) return cl100k(text);
  let tokens = remembered.get(text);
  if (tokens === undefined) {
    if (remembered.size >= REMEMBER_ENTRIES) remembered.clear();
    tokens = cl100k(text);
    remembered.set(text, tokens);
  }
  return tokens;
}

function textTokens(model: TokenModel, text: string): number {
  if (text === '') return 0;
  let tokens = Math.ceil(cl100kRemembered(text) * model.ratio);
  if (model.splitDigits) {
    let digits = 0;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code >= 48 && code <= 57) digits += 1;
    }
    tokens += Math.ceil((digits * 2) / 3);
  }
  return tokens;
}

/** What a prompt costs in the upstream's tokens: its text (tool definitions and calls included) and framing. */
export function promptTokens(family: Family, model: string, prompt: { text: string; messages: number }): number {
  const m = modelFor(family, model);
  return Math.max(1, textTokens(m, prompt.text) + m.perMessage * prompt.messages + m.perCall);
}

/** What an answer's text (tool names and arguments included) costs in the upstream's tokens. */
export function completionTokens(family: Family, model: string, text: string): number {
  return textTokens(modelFor(family, model), text);
}

/**
 * What a prompt prefix (tools, system, messages up to a block) costs as a prompt cache counts
 * it: its text and its messages' framing. The call's own framing (`perCall`: the turn that asks
 * for the answer, after the last block) is never part of a cached prefix, so a prompt cached up
 * to its last block still bills that much uncached input, as Anthropic's does.
 */
export function prefixTokens(family: Family, model: string, prefix: { text: string; messages: number }): number {
  const m = modelFor(family, model);
  return textTokens(m, prefix.text) + m.perMessage * prefix.messages;
}
