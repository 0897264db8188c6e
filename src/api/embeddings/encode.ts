import type { EmbeddingOutcome } from '../../core/gateway/media.js';
import type { Vector } from '../../core/media.js';
import { decodeBase64Floats, encodeBase64Floats } from '../../providers/shared/vectors.js';

/** OpenAI's embeddings answer: `{object: "list", data: [{object, index, embedding}], model, usage}`. */
export function encodeEmbeddings(outcome: EmbeddingOutcome, format: 'float' | 'base64') {
  return {
    object: 'list' as const,
    data: outcome.result.vectors.map((vector, index) => ({ object: 'embedding' as const, index, embedding: format === 'base64' ? toBase64(vector) : toNumbers(vector) })),
    model: outcome.model.id,
    usage: { prompt_tokens: outcome.inputTokens, total_tokens: outcome.inputTokens },
  };
}

function toNumbers(vector: Vector): number[] {
  if (typeof vector === 'string') return Array.from(decodeBase64Floats('the upstream', vector));
  return Array.isArray(vector) ? vector : Array.from(vector);
}

/** The upstream's base64 passes untouched; floats are encoded. */
function toBase64(vector: Vector): string {
  return typeof vector === 'string' ? vector : encodeBase64Floats(vector);
}
