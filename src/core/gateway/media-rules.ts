import type { EmbeddingSpec, ImageSpec, ModelConfig, ProviderType, SpeechSpec, TranscriptionSpec } from '../../config/types.js';
import { errors } from '../errors.js';
import type { EmbeddingInput, SpeechFormat, TranscriptionFormat } from '../media.js';

/**
 * What each media model takes, checked before admission: a combination a model cannot do is
 * a 400 naming the field and what the model accepts (never a silent change), and nothing is
 * sent upstream or held.
 */

/** The voices of the spec (every speech model takes them; each family maps them to its own). */
export const SPEECH_VOICES = ['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer'] as const;
/** OpenAI's newer voices, passed to OpenAI-family speech models only. */
export const OPENAI_EXTRA_VOICES = ['ash', 'ballad', 'coral', 'sage', 'verse', 'marin', 'cedar'] as const;

export function checkEmbedding(model: ModelConfig, spec: EmbeddingSpec, input: EmbeddingInput, dimensions: number | undefined): void {
  const count = input.kind === 'text' ? input.texts.length : input.tokens.length;
  if (input.kind === 'tokens' && !spec.tokenArrays) throw errors.invalidField('input', `${model.id} takes text, not token arrays`);
  if (count > spec.maxInputs) throw errors.invalidField('input', `${model.id} takes at most ${spec.maxInputs} inputs per request (got ${count})`);
  if (dimensions !== undefined) {
    if (spec.minDimensions === undefined) throw errors.invalidField('dimensions', `${model.id} does not take dimensions (its vectors have ${spec.dimensions})`);
    if (dimensions < spec.minDimensions || dimensions > spec.dimensions) throw errors.invalidField('dimensions', `must be an integer from ${spec.minDimensions} to ${spec.dimensions} for ${model.id}`);
  }
}

export function checkSpeech(model: ModelConfig, providerType: ProviderType, spec: SpeechSpec, draft: { input: string; voice: string; format: SpeechFormat; speed?: number; instructions?: string }): number {
  const characters = countCharacters(draft.input);
  const limit = model.contextWindow ?? 4096;
  if (characters > limit) throw errors.invalidField('input', `must be at most ${limit} characters for ${model.id} (got ${characters})`);
  const voices: readonly string[] = providerType === 'openai' ? [...SPEECH_VOICES, ...OPENAI_EXTRA_VOICES] : SPEECH_VOICES;
  if (!voices.includes(draft.voice)) throw errors.invalidField('voice', `must be one of ${voices.join(', ')} for ${model.id}`);
  if (!spec.formats.includes(draft.format)) throw errors.invalidField('response_format', `${model.id} produces ${spec.formats.join(', ')}`);
  if (draft.speed !== undefined && (draft.speed < spec.speedMin || draft.speed > spec.speedMax)) {
    throw errors.invalidField('speed', `must be from ${spec.speedMin} to ${spec.speedMax} for ${model.id}`);
  }
  if (draft.instructions !== undefined && !spec.instructions) throw errors.invalidField('instructions', `${model.id} takes no instructions (gpt-4o-mini-tts does)`);
  return characters;
}

export function checkTranscription(model: ModelConfig, spec: TranscriptionSpec, format: TranscriptionFormat, granularities: readonly string[]): void {
  if (!spec.responseFormats.includes(format)) throw errors.invalidField('response_format', `${model.id} answers in ${spec.responseFormats.join(', ')}`);
  if (granularities.length > 0) {
    if (!spec.timestamps) throw errors.invalidField('timestamp_granularities[]', `${model.id} gives no timestamps`);
    if (format !== 'verbose_json') throw errors.invalidField('timestamp_granularities[]', 'needs response_format verbose_json');
  }
}

export interface ImageChoice {
  size: string;
  quality?: string;
  style?: string;
  n: number;
}

export function checkImage(model: ModelConfig, spec: ImageSpec, draft: { prompt: string; n?: number; size?: string; quality?: string; style?: string }): ImageChoice {
  const characters = countCharacters(draft.prompt);
  if (characters > spec.maxPromptChars) throw errors.invalidField('prompt', `must be at most ${spec.maxPromptChars} characters for ${model.id} (got ${characters})`);
  const n = draft.n ?? 1;
  if (n > spec.maxImages) throw errors.invalidField('n', `must be at most ${spec.maxImages} for ${model.id}`);
  const size = draft.size ?? spec.defaultSize;
  if (!spec.sizes.includes(size)) throw errors.invalidField('size', `must be one of ${spec.sizes.join(', ')} for ${model.id}`);
  const choice: ImageChoice = { size, n };
  if (draft.quality !== undefined) {
    if (!spec.qualities.includes(draft.quality)) {
      throw errors.invalidField('quality', spec.qualities.length > 0 ? `must be one of ${spec.qualities.join(', ')} for ${model.id}` : `${model.id} takes no quality`);
    }
    choice.quality = draft.quality;
  } else if (spec.defaultQuality !== undefined) choice.quality = spec.defaultQuality;
  if (draft.style !== undefined) {
    if (!spec.styles) throw errors.invalidField('style', `${model.id} takes no style (dall-e-3 does)`);
    choice.style = draft.style;
  }
  return choice;
}

/** Characters as people count them: Unicode code points (an emoji is one, not two UTF-16 units). */
export function countCharacters(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}
