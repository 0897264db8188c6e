import { embedText } from './embed.js';
import { errorBody, field, GeminiFailure, JSON_TYPE, promptOf, textOf } from './gemini.js';
import { png } from './png.js';
import { isRecord, randomId } from './scenario.js';
import type { Body, Exchange } from './server.js';
import { promptTokens } from './tokens.js';

/**
 * Gemini's media: POST /v1beta/models/{model}:embedContent and :batchEmbedContents, and image
 * output from :generateContent (image models such as gemini-2.5-flash-image, or
 * `generationConfig.responseModalities` with "IMAGE").
 */

type Headers = Record<string, string>;

const pretty = (value: unknown): Body => ({ contentType: JSON_TYPE, text: JSON.stringify(value, null, 2) + '\n' });

// ---------------------------------------------------------------------------------------------
// Embeddings

interface EmbeddingModel {
  native: number;
  minDimensions: number;
}

/** A Gemini embedding model's native length and smallest outputDimensionality; undefined when unknown. */
export function geminiEmbeddingModel(model: string): EmbeddingModel | undefined {
  if (model.startsWith('gemini-embedding')) return { native: 3072, minDimensions: 128 };
  if (model === 'text-embedding-004' || model === 'embedding-001') return { native: 768, minDimensions: 1 };
  return undefined;
}

const TASK_TYPES = [
  'TASK_TYPE_UNSPECIFIED', 'RETRIEVAL_QUERY', 'RETRIEVAL_DOCUMENT', 'SEMANTIC_SIMILARITY', 'CLASSIFICATION', 'CLUSTERING',
  'QUESTION_ANSWERING', 'FACT_VERIFICATION', 'CODE_RETRIEVAL_QUERY',
];
const MAX_BATCH = 100;

/** Checks one EmbedContentRequest; returns the text and the length to cut to, or the failure. */
function embedRequest(
  request: Record<string, unknown>,
  at: string,
  where: string,
  spec: EmbeddingModel,
): GeminiFailure | { text: string; dimensions: number | undefined } {
  const content = request.content;
  if (!isRecord(content)) return new GeminiFailure(400, `* ${where}.content: content is required\n`);
  const parts = Array.isArray(content.parts) ? content.parts : [];
  if (parts.length === 0) return new GeminiFailure(400, `* ${where}.content.parts: contents.parts must not be empty.\n`);
  const text = textOf(content);
  if (text.trim() === '') return new GeminiFailure(400, `* ${where}.content.parts[0].text: text must not be empty.\n`);
  const taskType = field(request, 'taskType', 'task_type');
  if (taskType !== undefined && (typeof taskType !== 'string' || !TASK_TYPES.includes(taskType))) {
    return new GeminiFailure(400, `Invalid value at '${at}task_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), ${JSON.stringify(taskType)}`);
  }
  const raw = field(request, 'outputDimensionality', 'output_dimensionality');
  let dimensions: number | undefined;
  if (raw !== undefined && raw !== null) {
    if (typeof raw !== 'number' || !Number.isInteger(raw)) return new GeminiFailure(400, `Invalid value at '${at}output_dimensionality' (TYPE_INT32), ${JSON.stringify(raw)}`);
    if (raw < spec.minDimensions || raw > spec.native) {
      return new GeminiFailure(400, `* ${where}.output_dimensionality: Output dimensionality must be between ${spec.minDimensions} and ${spec.native}, got ${raw}.\n`);
    }
    dimensions = raw;
  }
  return { text, dimensions };
}

/** Gemini returns truncated vectors as they are (only the full-length vector is unit length). */
const values = (text: string, spec: EmbeddingModel, dimensions: number | undefined): number[] => embedText(text, spec.native, dimensions, false);

export async function handleGeminiEmbeddings(
  ex: Exchange,
  route: { model: string; action: string },
  body: Record<string, unknown>,
  headers: Headers,
): Promise<GeminiFailure | undefined> {
  const spec = geminiEmbeddingModel(route.model);
  if (!spec) {
    const version = ex.url.pathname.split('/')[1] ?? 'v1beta';
    return new GeminiFailure(
      404,
      `models/${route.model} is not found for API version ${version}, or is not supported for ${route.action}. Call ListModels to see the list of available models and their supported methods.`,
    );
  }
  let answer: () => Body;
  if (route.action === 'embedContent') {
    const request = embedRequest(body, '', 'EmbedContentRequest', spec);
    if (request instanceof GeminiFailure) return request;
    answer = () => pretty({ embedding: { values: values(request.text, spec, request.dimensions) } });
  } else {
    const requests = body.requests;
    if (!Array.isArray(requests) || requests.length === 0) return new GeminiFailure(400, '* BatchEmbedContentsRequest.requests: requests is required\n');
    if (requests.length > MAX_BATCH) return new GeminiFailure(400, `* BatchEmbedContentsRequest.requests: at most ${MAX_BATCH} requests can be in one batch\n`);
    const checked: Array<{ text: string; dimensions: number | undefined }> = [];
    for (const [i, request] of requests.entries()) {
      const where = `BatchEmbedContentsRequest.requests[${i}]`;
      if (!isRecord(request)) return new GeminiFailure(400, `Invalid value at 'requests[${i}]' (type.googleapis.com/google.ai.generativelanguage.v1beta.EmbedContentRequest)`);
      const model = request.model;
      if (typeof model !== 'string' || !/^models\/[^/]+$/.test(model)) return new GeminiFailure(400, `* ${where}.model: unexpected model name format\n`);
      if (model !== `models/${route.model}`) {
        return new GeminiFailure(400, `* ${where}.model: the model in the request (${model}) does not match the model in the URL (models/${route.model})\n`);
      }
      const one = embedRequest(request, `requests[${i}].`, where, spec);
      if (one instanceof GeminiFailure) return one;
      checked.push(one);
    }
    answer = () => pretty({ embeddings: checked.map((r) => ({ values: values(r.text, spec, r.dimensions) })) });
  }
  const scenario = ex.scenarioFor(undefined);
  await ex.respond({ scenario, stream: false, headers, json: answer, error: (status, message) => errorBody(status, message) });
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Image output

/** Gemini 2.5 Flash Image's aspect ratios and the pixel sizes it returns for them. */
export const GEMINI_ASPECT_RATIOS: Record<string, { width: number; height: number }> = {
  '1:1': { width: 1024, height: 1024 },
  '2:3': { width: 832, height: 1248 },
  '3:2': { width: 1248, height: 832 },
  '3:4': { width: 864, height: 1184 },
  '4:3': { width: 1184, height: 864 },
  '4:5': { width: 896, height: 1152 },
  '5:4': { width: 1152, height: 896 },
  '9:16': { width: 768, height: 1344 },
  '16:9': { width: 1344, height: 768 },
  '21:9': { width: 1536, height: 672 },
};
/** Output tokens of one generated image. */
export const GEMINI_IMAGE_TOKENS = 1290;

function config(body: Record<string, unknown>): Record<string, unknown> {
  const value = field(body, 'generationConfig', 'generation_config');
  return isRecord(value) ? value : {};
}

/** True for image models (the name contains "image") or when the request asks for IMAGE output. */
export function isImageRequest(model: string, body: Record<string, unknown>): boolean {
  if (model.includes('image')) return true;
  const modalities = field(config(body), 'responseModalities', 'response_modalities');
  return Array.isArray(modalities) && modalities.some((m) => typeof m === 'string' && m.toUpperCase() === 'IMAGE');
}

export async function handleGeminiImage(ex: Exchange, model: string, body: Record<string, unknown>, headers: Headers): Promise<GeminiFailure | undefined> {
  const imageConfig = field(config(body), 'imageConfig', 'image_config');
  const ratio = isRecord(imageConfig) ? field(imageConfig, 'aspectRatio', 'aspect_ratio') : undefined;
  const key = ratio === undefined || ratio === null ? '1:1' : ratio;
  const size = typeof key === 'string' ? GEMINI_ASPECT_RATIOS[key] : undefined;
  if (!size) {
    return new GeminiFailure(
      400,
      `* GenerateContentRequest.generation_config.image_config.aspect_ratio: Unsupported aspect ratio ${JSON.stringify(key)}. Supported values are ${Object.keys(GEMINI_ASPECT_RATIOS).join(', ')}.\n`,
    );
  }
  const contents = body.contents as unknown[];
  const scenario = ex.scenarioFor(undefined);
  const prompt = promptOf(body, contents);
  await ex.respond({
    scenario,
    stream: false,
    headers,
    json: () => {
      const text = scenario.text ?? 'Here is your image.';
      const data = png(size.width, size.height, `${model}:${prompt.text}`).toString('base64');
      const parts = [...(text !== '' ? [{ text }] : []), { inlineData: { mimeType: 'image/png', data } }];
      const custom = typeof scenario.usage === 'object' ? scenario.usage : undefined;
      const input = custom?.input ?? promptTokens('gemini', model, prompt);
      const output = custom?.output ?? GEMINI_IMAGE_TOKENS;
      const usage =
        scenario.usage === 'omit'
          ? {}
          : {
              usageMetadata: {
                promptTokenCount: input,
                candidatesTokenCount: output,
                totalTokenCount: input + output,
                promptTokensDetails: [{ modality: 'TEXT', tokenCount: input }],
                candidatesTokensDetails: [{ modality: 'IMAGE', tokenCount: output }],
              },
            };
      return pretty({
        candidates: [{ content: { parts, role: 'model' }, finishReason: 'STOP', index: 0 }],
        ...usage,
        modelVersion: model,
        responseId: randomId(22, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'),
      });
    },
    error: (status, message) => errorBody(status, message),
  });
  return undefined;
}
