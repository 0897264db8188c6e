import type { EmbeddingDraft } from '../../core/gateway/media.js';
import type { EmbeddingInput } from '../../core/media.js';
import { errors } from '../../core/errors.js';
import { optionalEnum, optionalInteger, optionalString, requiredModel, requireObject } from '../../core/validate.js';

/** The fields POST /v1/embeddings reads; others are named in x-gateway-ignored-params. */
const KNOWN = ['model', 'input', 'encoding_format', 'dimensions', 'user'];
/** OpenAI's own limit on inputs per request (a model may take fewer: its max_inputs). */
const MAX_INPUTS = 2048;
const MAX_TOKEN_ID = 1_000_000_000;

/** OpenAI embeddings request ► the canonical draft. Every rule a 400 naming the field. */
export function decodeEmbeddings(raw: unknown): { draft: EmbeddingDraft; ignored: string[] } {
  const body = requireObject(raw);
  const draft: EmbeddingDraft = {
    model: requiredModel(body),
    input: decodeInput(body.input),
    encodingFormat: optionalEnum(body, 'encoding_format', ['float', 'base64'] as const) ?? 'float',
  };
  const dimensions = optionalInteger(body, 'dimensions', 1, 65_536);
  if (dimensions !== undefined) draft.dimensions = dimensions;
  const user = optionalString(body, 'user', { max: 256 });
  if (user !== undefined) draft.user = user;
  return { draft, ignored: Object.keys(body).filter((key) => !KNOWN.includes(key)) };
}

function decodeInput(input: unknown): EmbeddingInput {
  if (input === undefined || input === null) throw errors.missingField('input');
  if (typeof input === 'string') {
    if (input === '') throw errors.invalidField('input', 'must not be an empty string');
    return { kind: 'text', texts: [input] };
  }
  if (!Array.isArray(input)) throw errors.invalidField('input', 'must be a string, an array of strings, or token arrays');
  if (input.length === 0) throw errors.invalidField('input', 'must not be an empty array');
  if (input.length > MAX_INPUTS) throw errors.invalidField('input', `must have at most ${MAX_INPUTS} items (got ${input.length})`);
  if (input.every((item) => typeof item === 'string')) {
    const texts = input as string[];
    const empty = texts.indexOf('');
    if (empty !== -1) throw errors.invalidField(`input[${empty}]`, 'must not be an empty string');
    return { kind: 'text', texts };
  }
  if (input.every(isTokenId)) return { kind: 'tokens', tokens: [input as number[]] };
  if (input.every((item) => Array.isArray(item))) {
    const tokens = input as unknown[][];
    for (const [index, item] of tokens.entries()) {
      if (item.length === 0) throw errors.invalidField(`input[${index}]`, 'must not be an empty token array');
      if (!item.every(isTokenId)) throw errors.invalidField(`input[${index}]`, 'must be an array of token ids (non-negative integers)');
    }
    return { kind: 'tokens', tokens: tokens as number[][] };
  }
  throw errors.invalidField('input', 'must be a string, an array of strings, an array of token ids, or an array of token arrays (not a mix)');
}

function isTokenId(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKEN_ID;
}
