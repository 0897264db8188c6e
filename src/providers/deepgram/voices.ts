/**
 * The six OpenAI voice names as Deepgram Aura-2 English voices (developers.deepgram.com/docs/
 * tts-models), chosen by likeness: register and character as OpenAI describes its voices.
 * The upstream model is `<model>-<voice>-en` (`aura-2-thalia-en`).
 */
export const DEEPGRAM_VOICES: Readonly<Record<string, string>> = {
  alloy: 'thalia', // neutral, clear (feminine)
  echo: 'orion', // warm, even (masculine)
  fable: 'draco', // British, storytelling (masculine)
  onyx: 'zeus', // deep, authoritative (masculine)
  nova: 'luna', // bright, youthful (feminine)
  shimmer: 'asteria', // soft, expressive (feminine)
};
