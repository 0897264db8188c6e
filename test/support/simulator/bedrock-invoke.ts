import { randomUUID } from 'node:crypto';
import { scriptedBedrockError, type BedrockReply } from './bedrock.js';
import { embedText } from './embed.js';
import type { Exchange } from './server.js';
import { completionTokens } from './tokens.js';

/**
 * Bedrock InvokeModel (`POST /model/{modelId}/invoke`) for the embedding models, each with its own
 * native body: Amazon Titan Text Embeddings v2 (`amazon.titan-embed-text-v2:0`: 1024, 512 or 256
 * dimensions, normalized unless `normalize: false`, float and/or binary) and v1
 * (`amazon.titan-embed-text-v1`: 1536), Cohere Embed v3 (`cohere.embed-english-v3`,
 * `cohere.embed-multilingual-v3`: 1024, `input_type` required, up to 96 texts). Vectors come from
 * embed.ts (similar texts land close). The input token count is in the
 * `x-amzn-bedrock-input-token-count` header (Titan also has it in the body). Any other model is not
 * served here: 400 ValidationException. Body errors use the models' JSON-schema wording
 * (`Malformed input request: #: required key [inputText] not found, ...`).
 */

type Json = Record<string, unknown>;

const malformed = (detail: string): string => `Malformed input request: ${detail}, please reformat your input and try again.`;

function typeName(value: unknown): string {
  if (value === null) return 'Null';
  if (Array.isArray(value)) return 'JSONArray';
  if (typeof value === 'number') return Number.isInteger(value) ? 'Integer' : 'BigDecimal';
  if (typeof value === 'object') return 'JSONObject';
  return typeof value === 'string' ? 'String' : typeof value === 'boolean' ? 'Boolean' : typeof value;
}

/** The JSON-schema checks the models' bodies get: required and extraneous keys. */
function checkKeys(body: Json, allowed: string[], required: string[]): string | undefined {
  const missing = required.find((key) => body[key] === undefined);
  if (missing !== undefined) return malformed(`#: required key [${missing}] not found`);
  const extra = Object.keys(body).find((key) => !allowed.includes(key));
  if (extra !== undefined) return malformed(`#: extraneous key [${extra}] is not permitted`);
  return undefined;
}

function expectType(value: unknown, path: string, type: 'String' | 'Boolean' | 'Integer' | 'JSONArray'): string | undefined {
  const actual = typeName(value);
  return actual === type ? undefined : malformed(`#/${path}: expected type: ${type}, found: ${actual}`);
}

/** A valid request's answer: the body and the input tokens; a string is the ValidationException's message. */
interface Answer {
  body: unknown;
  tokens: number;
}

/** A vector at a magnitude other than 1: what `normalize: false` gives. */
function scaled(vector: number[], text: string): number[] {
  const magnitude = 1 + (text.length % 17) / 4;
  return vector.map((v) => Math.fround(v * magnitude));
}

function titanV2(model: string, body: Json): Answer | string {
  const bad =
    checkKeys(body, ['inputText', 'dimensions', 'normalize', 'embeddingTypes'], ['inputText']) ??
    expectType(body.inputText, 'inputText', 'String') ??
    (body.dimensions !== undefined ? expectType(body.dimensions, 'dimensions', 'Integer') : undefined) ??
    (body.normalize !== undefined ? expectType(body.normalize, 'normalize', 'Boolean') : undefined) ??
    (body.embeddingTypes !== undefined ? expectType(body.embeddingTypes, 'embeddingTypes', 'JSONArray') : undefined);
  if (bad) return bad;
  const text = body.inputText as string;
  if (text === '') return malformed('#/inputText: expected minLength: 1, actual: 0');
  const dimensions = (body.dimensions as number | undefined) ?? 1024;
  if (![256, 512, 1024].includes(dimensions)) return malformed(`#/dimensions: ${dimensions} is not a valid enum value`);
  const types = (body.embeddingTypes as unknown[] | undefined) ?? ['float'];
  if (types.length === 0) return malformed('#/embeddingTypes: expected minimum item count: 1, found: 0');
  const badType = types.findIndex((t) => t !== 'float' && t !== 'binary');
  if (badType >= 0) return malformed(`#/embeddingTypes/${badType}: ${String(types[badType])} is not a valid enum value`);
  const unit = embedText(text, 1024, dimensions);
  const vector = body.normalize === false ? scaled(unit, text) : unit;
  const tokens = completionTokens('bedrock', model, text);
  const byType: Json = {};
  if (types.includes('float')) byType.float = vector;
  if (types.includes('binary')) byType.binary = vector.map((v) => (v > 0 ? 1 : 0));
  return { body: { ...(types.includes('float') ? { embedding: vector } : {}), embeddingsByType: byType, inputTextTokenCount: tokens }, tokens };
}

function titanV1(model: string, body: Json): Answer | string {
  const bad = checkKeys(body, ['inputText'], ['inputText']) ?? expectType(body.inputText, 'inputText', 'String');
  if (bad) return bad;
  const text = body.inputText as string;
  if (text === '') return malformed('#/inputText: expected minLength: 1, actual: 0');
  const tokens = completionTokens('bedrock', model, text);
  return { body: { embedding: embedText(text, 1536), inputTextTokenCount: tokens }, tokens };
}

const INPUT_TYPES = ['search_document', 'search_query', 'classification', 'clustering'];
const COHERE_TYPES = ['float', 'int8', 'uint8', 'binary', 'ubinary'];

/** Cohere's quantized forms of a float vector. */
function quantized(vector: number[], type: string): number[] {
  const max = Math.max(1e-9, ...vector.map(Math.abs));
  switch (type) {
    case 'int8':
      return vector.map((v) => Math.round((v / max) * 127));
    case 'uint8':
      return vector.map((v) => Math.round(((v / max) + 1) * 127.5));
    case 'binary':
    case 'ubinary': {
      const bytes: number[] = [];
      for (let i = 0; i < vector.length; i += 8) {
        let byte = 0;
        for (let b = 0; b < 8; b++) byte = (byte << 1) | ((vector[i + b] ?? 0) > 0 ? 1 : 0);
        bytes.push(type === 'binary' ? byte - 128 : byte);
      }
      return bytes;
    }
    default:
      return vector;
  }
}

function cohereV3(model: string, body: Json): Answer | string {
  const bad =
    checkKeys(body, ['texts', 'input_type', 'truncate', 'embedding_types'], ['texts', 'input_type']) ??
    expectType(body.texts, 'texts', 'JSONArray') ??
    expectType(body.input_type, 'input_type', 'String');
  if (bad) return bad;
  const texts = body.texts as unknown[];
  if (texts.length === 0) return malformed('#/texts: expected minimum item count: 1, found: 0');
  if (texts.length > 96) return malformed(`#/texts: expected maximum item count: 96, found: ${texts.length}`);
  const notString = texts.findIndex((t) => typeof t !== 'string');
  if (notString >= 0) return malformed(`#/texts/${notString}: expected type: String, found: ${typeName(texts[notString])}`);
  const tooLong = texts.findIndex((t) => (t as string).length > 2048);
  if (tooLong >= 0) return malformed(`#/texts/${tooLong}: expected maxLength: 2048, actual: ${(texts[tooLong] as string).length}`);
  if (!INPUT_TYPES.includes(body.input_type as string)) return malformed(`#/input_type: ${String(body.input_type)} is not a valid enum value`);
  if (body.truncate !== undefined && !['NONE', 'START', 'END'].includes(String(body.truncate))) return malformed(`#/truncate: ${String(body.truncate)} is not a valid enum value`);
  const types = body.embedding_types;
  if (types !== undefined) {
    const wrong = expectType(types, 'embedding_types', 'JSONArray');
    if (wrong) return wrong;
    const at = (types as unknown[]).findIndex((t) => !COHERE_TYPES.includes(String(t)));
    if (at >= 0) return malformed(`#/embedding_types/${at}: ${String((types as unknown[])[at])} is not a valid enum value`);
  }
  const strings = texts as string[];
  const vectors = strings.map((text) => embedText(text, 1024));
  const tokens = strings.reduce((sum, text) => sum + completionTokens('bedrock', model, text), 0);
  const id = randomUUID();
  if (types === undefined) return { body: { embeddings: vectors, id, response_type: 'embeddings_floats', texts: strings }, tokens };
  const byType: Json = {};
  for (const type of new Set(types as string[])) byType[type] = vectors.map((v) => quantized(v, type));
  return { body: { embeddings: byType, id, response_type: 'embeddings_by_type', texts: strings }, tokens };
}

export const BEDROCK_EMBEDDING_MODELS = ['amazon.titan-embed-text-v2:0', 'amazon.titan-embed-text-v1', 'cohere.embed-english-v3', 'cohere.embed-multilingual-v3'];

function answerFor(model: string, body: Json): Answer | string {
  if (model.startsWith('amazon.titan-embed-text-v2')) return titanV2(model, body);
  if (model.startsWith('amazon.titan-embed-text-v1') || model.startsWith('amazon.titan-embed-g1-text')) return titanV1(model, body);
  if (model.startsWith('cohere.embed-english-v3') || model.startsWith('cohere.embed-multilingual-v3')) return cohereV3(model, body);
  return `The simulator serves InvokeModel for embedding models only (${BEDROCK_EMBEDDING_MODELS.join(', ')}); use Converse for ${model}.`;
}

/** InvokeModel: checks the body, then plays the next scenario (delay, scripted error, hang/disconnect, malformedBody). */
export async function handleBedrockEmbeddings(ex: Exchange, reply: BedrockReply, model: string, body: Json): Promise<void> {
  const answer = answerFor(model, body);
  if (typeof answer === 'string') return reply.invalid(answer);
  const scenario = ex.scenarioFor(undefined);
  if (await reply.scriptedError(scenario)) return;
  await ex.respond({
    scenario,
    stream: false,
    headers: { ...reply.headers, 'x-amzn-bedrock-input-token-count': String(answer.tokens), 'x-amzn-bedrock-invocation-latency': String(reply.latencyMs()) },
    json: () => ({ contentType: 'application/json', text: JSON.stringify(answer.body) }),
    error: (status, message, code) => ({ contentType: 'application/json', text: JSON.stringify({ message: scriptedBedrockError(status, message, code).message }) }),
  });
}
