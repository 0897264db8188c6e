import type { ReasoningBlock } from '../../core/canonical.js';
import { isObject } from '../../core/validate.js';

/**
 * Reasoning items of the responses format across turns, for families other than OpenAI's own
 * responses API: Claude's thinking blocks (text, signature, redacted data) travel in the
 * item's `encrypted_content` as `gateway.v1.<base64url JSON>`, so that a stateless client
 * (Codex sends `store: false` with `include: ["reasoning.encrypted_content"]`) sends them
 * back and Claude gets its own signed blocks again. The content is not secret (the client
 * sees the thinking anyway) and Claude checks its own signatures, so a tampered block is
 * refused by Claude, not trusted by the gateway.
 */

const PREFIX = 'gateway.v1.';

interface PackedBlock {
  f: ReasoningBlock['family'];
  t: string;
  s?: string;
  r?: string;
}

export function packReasoning(blocks: readonly ReasoningBlock[]): string {
  const packed: PackedBlock[] = blocks.map((block) => ({ f: block.family, t: block.text, ...(block.signature !== undefined ? { s: block.signature } : {}), ...(block.redacted !== undefined ? { r: block.redacted } : {}) }));
  return PREFIX + Buffer.from(JSON.stringify(packed)).toString('base64url');
}

/** The blocks packed by the gateway, or undefined for someone else's encrypted content (OpenAI's: meaningful only to OpenAI). */
export function unpackReasoning(encrypted: string): ReasoningBlock[] | undefined {
  if (!encrypted.startsWith(PREFIX)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(encrypted.slice(PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const blocks: ReasoningBlock[] = [];
  for (const raw of parsed) {
    if (!isObject(raw) || typeof raw.t !== 'string' || (raw.f !== 'anthropic' && raw.f !== 'openai' && raw.f !== 'gemini')) return undefined;
    const block: ReasoningBlock = { family: raw.f, text: raw.t };
    if (typeof raw.s === 'string') block.signature = raw.s;
    if (typeof raw.r === 'string') block.redacted = raw.r;
    blocks.push(block);
  }
  return blocks;
}
