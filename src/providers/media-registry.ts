import { bedrockEmbeddings } from './bedrock/media.js';
import { deepgramMedia } from './deepgram/index.js';
import { geminiEmbeddings, geminiImages } from './gemini/media.js';
import type { MediaFamilies } from './media.js';
import { openAiEmbeddings, openAiImages, openAiSpeech, openAiTranscription } from './openai/media.js';
import { nestedErrorMessage } from './shared/json.js';
import { vertexEmbeddings } from './vertex/media.js';

/** The media converters of each provider type (config/catalog.ts FAMILY_KINDS lists the same). */
export const MEDIA_FAMILIES: MediaFamilies = {
  openai: { embeddings: openAiEmbeddings, speech: openAiSpeech, transcription: openAiTranscription, images: openAiImages, errorMessage: nestedErrorMessage },
  anthropic: { errorMessage: nestedErrorMessage },
  gemini: { embeddings: geminiEmbeddings, images: geminiImages, errorMessage: nestedErrorMessage },
  deepgram: deepgramMedia,
  // Azure OpenAI is OpenAI's wire at Azure's paths (openai/endpoint.ts).
  azure: { embeddings: openAiEmbeddings, speech: openAiSpeech, transcription: openAiTranscription, images: openAiImages, errorMessage: nestedErrorMessage },
  // Titan and Cohere embeddings through InvokeModel; errors are `{"message"}` with x-amzn-errortype.
  bedrock: { embeddings: bedrockEmbeddings, errorMessage: nestedErrorMessage },
  vertex: { embeddings: vertexEmbeddings, errorMessage: nestedErrorMessage },
};
