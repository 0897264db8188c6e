import { checkGeminiThinking, thoughtFor } from './thinking.js';
import { randomBytes } from 'node:crypto';
import { handleGeminiEmbeddings, handleGeminiImage, isImageRequest } from './gemini-media.js';
import type { Body, Exchange } from './server.js';
import {
  chunkText,
  estimateTokens,
  isRecord,
  parseDirective,
  randomId,
  resolveReply,
  ScenarioError,
  type PromptText,
  type CanonicalFinish,
  type Reply,
  type ResolvedUsage,
  type SimEvent,
  type StreamPlan,
} from './scenario.js';

/**
 * Google Gemini: POST /v1beta/models/{model}:generateContent and :streamGenerateContent
 * (`?alt=sse` for SSE with CRLF separators; without it a JSON array streamed element by element).
 * :embedContent, :batchEmbedContents and image output (generateContent) are in gemini-media.ts.
 */

type FinishReason = 'STOP' | 'MAX_TOKENS' | 'SAFETY';

interface ErrorWire {
  error: { code: number; message: string; status: string; details?: unknown[] };
}

interface PartWire {
  text?: string;
  /** A thought summary (includeThoughts). */
  thought?: boolean;
  functionCall?: { name: string; args: Record<string, unknown> };
  thoughtSignature?: string;
}

interface CandidateWire {
  content: { parts: PartWire[]; role: 'model' };
  finishReason?: FinishReason;
  index: number;
}

interface ModalityCount {
  modality: 'TEXT';
  tokenCount: number;
}

interface UsageMetadataWire {
  promptTokenCount: number;
  candidatesTokenCount?: number;
  totalTokenCount: number;
  cachedContentTokenCount?: number;
  promptTokensDetails: ModalityCount[];
  cacheTokensDetails?: ModalityCount[];
  thoughtsTokenCount?: number;
}

interface ResponseWire {
  candidates: CandidateWire[];
  usageMetadata?: UsageMetadataWire;
  modelVersion: string;
  responseId: string;
}

const FINISH: Record<CanonicalFinish, FinishReason> = { stop: 'STOP', length: 'MAX_TOKENS', tool_calls: 'STOP', content_filter: 'SAFETY' };

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'NOT_IMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const DEFAULT_MESSAGES: Record<string, string> = {
  RESOURCE_EXHAUSTED: 'Resource has been exhausted (e.g. check quota).',
  INTERNAL: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  UNAVAILABLE: 'The model is overloaded. Please try again later.',
  DEADLINE_EXCEEDED: 'Deadline expired before operation could complete.',
};

export function geminiStatus(code: number): string {
  return STATUS_NAMES[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
}

export const JSON_TYPE = 'application/json; charset=UTF-8';

export function errorBody(code: number, message: string | undefined, details?: unknown[]): Body {
  const status = geminiStatus(code);
  const wire: ErrorWire = { error: { code, message: message ?? DEFAULT_MESSAGES[status] ?? 'Request failed.', status } };
  if (details) wire.error.details = details;
  return { contentType: JSON_TYPE, text: JSON.stringify(wire, null, 2) + '\n' };
}

export class GeminiFailure {
  constructor(
    readonly code: number,
    readonly message: string,
    readonly details?: unknown[],
  ) {}
}

/** Fields of Gemini's OpenAPI-subset `Schema` (lowerCamel and proto snake_case spellings). */
const SCHEMA_FIELDS = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required', 'minProperties',
  'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering', 'default', 'items', 'minimum', 'maximum',
  'max_items', 'min_items', 'min_properties', 'max_properties', 'min_length', 'max_length', 'any_of', 'property_ordering',
]);

/** Unknown keys in a `Schema` (e.g. additionalProperties, $schema, const) are rejected like the real proto parser does. */
function schemaViolations(schema: unknown, path: string, out: Array<{ field: string; description: string }>): void {
  if (!isRecord(schema)) return;
  for (const [key, value] of Object.entries(schema)) {
    if (!SCHEMA_FIELDS.has(key)) {
      out.push({ field: path, description: `Invalid JSON payload received. Unknown name "${key}" at '${path}': Cannot find field.` });
      continue;
    }
    if (key === 'type' && Array.isArray(value)) {
      out.push({ field: `${path}.type`, description: `Invalid JSON payload received. Unknown name "type" at '${path}': Proto field is not repeating, cannot start list.` });
    }
    if (key === 'properties' && isRecord(value)) Object.values(value).forEach((v, i) => schemaViolations(v, `${path}.properties[${i}].value`, out));
    if (key === 'items') schemaViolations(value, `${path}.items`, out);
    if ((key === 'anyOf' || key === 'any_of') && Array.isArray(value)) value.forEach((v, i) => schemaViolations(v, `${path}.any_of[${i}]`, out));
  }
}

export function field(record: Record<string, unknown>, camel: string, snake: string): unknown {
  return record[camel] ?? record[snake];
}

function partsOf(content: unknown): Record<string, unknown>[] {
  return isRecord(content) && Array.isArray(content.parts) ? content.parts.filter(isRecord) : [];
}

/** The billed prompt: the system instruction, every content's text and function calls, and the tool declarations. */
export function promptOf(body: Record<string, unknown>, contents: unknown[]): PromptText {
  const tools = body.tools;
  let text = (tools === undefined ? '' : JSON.stringify(tools)) + textOf(field(body, 'systemInstruction', 'system_instruction'));
  for (const content of contents) {
    text += textOf(content);
    for (const part of partsOf(content)) {
      const call = part.functionCall ?? part.function_call;
      if (call !== undefined) text += JSON.stringify(call);
    }
  }
  return { text, messages: contents.length };
}

export function textOf(content: unknown): string {
  return partsOf(content)
    .map((p) => (typeof p.text === 'string' && p.thought !== true ? p.text : ''))
    .join('');
}

/** Gemini 3 models sign function calls and insist the signature comes back. */
function needsSignatures(model: string): boolean {
  return /^gemini-3/.test(model);
}

export function validate(body: Record<string, unknown>, model: string): GeminiFailure | undefined {
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) return new GeminiFailure(400, '* GenerateContentRequest.contents: contents is not specified\n');
  for (const [i, content] of contents.entries()) {
    if (!isRecord(content)) return new GeminiFailure(400, `Invalid value at 'contents[${i}]' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content)`);
    if (content.role !== undefined && content.role !== 'user' && content.role !== 'model') return new GeminiFailure(400, 'Please use a valid role: user, model.');
    const parts = partsOf(content);
    if (parts.length === 0) return new GeminiFailure(400, `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    for (const [j, part] of parts.entries()) {
      const response = field(part, 'functionResponse', 'function_response');
      if (!isRecord(response)) continue;
      const value = response.response;
      if (Array.isArray(value)) {
        return new GeminiFailure(
          400,
          `Invalid JSON payload received. Unknown name "response" at 'contents[${i}].parts[${j}].function_response': Proto field is not repeating, cannot start list.`,
        );
      }
      if (value !== undefined && !isRecord(value)) {
        return new GeminiFailure(400, `Invalid value at 'contents[${i}].parts[${j}].function_response.response' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(value)}`);
      }
    }
  }
  const violations: Array<{ field: string; description: string }> = [];
  const tools = Array.isArray(body.tools) ? body.tools : [];
  tools.forEach((tool: unknown, i) => {
    if (!isRecord(tool)) return;
    const declarations = field(tool, 'functionDeclarations', 'function_declarations');
    if (!Array.isArray(declarations)) return;
    declarations.forEach((declaration: unknown, j) => {
      if (isRecord(declaration)) schemaViolations(declaration.parameters, `tools[${i}].function_declarations[${j}].parameters`, violations);
    });
  });
  const config = field(body, 'generationConfig', 'generation_config');
  if (isRecord(config)) schemaViolations(field(config, 'responseSchema', 'response_schema'), 'generation_config.response_schema', violations);
  if (violations.length > 0) {
    return new GeminiFailure(400, violations.map((v) => v.description).join('\n'), [
      { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: violations },
    ]);
  }
  if (needsSignatures(model)) {
    // Only the current turn (after the last user text) is checked, as the real API does.
    let turnStart = 0;
    contents.forEach((c: unknown, i) => {
      if (isRecord(c) && c.role !== 'model' && partsOf(c).some((p) => typeof p.text === 'string')) turnStart = i;
    });
    for (let i = turnStart; i < contents.length; i++) {
      const content: unknown = contents[i];
      if (!isRecord(content) || content.role !== 'model') continue;
      const first = partsOf(content).find((p) => field(p, 'functionCall', 'function_call') !== undefined);
      if (first && field(first, 'thoughtSignature', 'thought_signature') === undefined) {
        const call = field(first, 'functionCall', 'function_call');
        const name = isRecord(call) && typeof call.name === 'string' ? call.name : '';
        return new GeminiFailure(
          400,
          `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`,
        );
      }
    }
  }
  return undefined;
}

/**
 * usageMetadata. Canonical `output` includes reasoning, so candidatesTokenCount = output - reasoning
 * and totalTokenCount = input + output. Zero counts are left out, as proto3 JSON does.
 */
function usageMetadata(usage: ResolvedUsage, candidates = Math.max(0, usage.output - usage.reasoning)): UsageMetadataWire {
  return {
    promptTokenCount: usage.input,
    ...(candidates > 0 ? { candidatesTokenCount: candidates } : {}),
    totalTokenCount: usage.input + candidates + usage.reasoning,
    ...(usage.cacheRead > 0 ? { cachedContentTokenCount: usage.cacheRead } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: usage.input }],
    ...(usage.cacheRead > 0 ? { cacheTokensDetails: [{ modality: 'TEXT', tokenCount: usage.cacheRead }] } : {}),
    ...(usage.reasoning > 0 ? { thoughtsTokenCount: usage.reasoning } : {}),
  };
}

function functionCallParts(reply: Reply, signed: boolean): PartWire[] {
  return reply.toolCalls.map((call, i) => {
    const part: PartWire = { functionCall: { name: call.name, args: call.argumentsObject } };
    if (signed && i === 0) part.thoughtSignature = randomBytes(48).toString('base64');
    return part;
  });
}

function response(parts: PartWire[], reply: Reply, ids: { model: string; responseId: string }, finish: boolean, usage: UsageMetadataWire | undefined): ResponseWire {
  const content: CandidateWire['content'] = { parts, role: 'model' };
  const candidate: CandidateWire = finish ? { content, finishReason: FINISH[reply.finish], index: 0 } : { content, index: 0 };
  return { candidates: [candidate], ...(usage ? { usageMetadata: usage } : {}), modelVersion: ids.model, responseId: ids.responseId };
}

function streamPlan(reply: Reply, ids: { model: string; responseId: string }, sse: boolean, signed: boolean, thought?: string): StreamPlan {
  const pieces: PartWire[][] = chunkText(reply.text, reply.chunkSize).map((text) => [{ text }]);
  if (thought !== undefined) pieces.unshift([{ text: thought, thought: true }]);
  if (reply.toolCalls.length > 0) pieces.push(functionCallParts(reply, signed)); // function calls arrive whole, in one chunk
  if (pieces.length === 0) pieces.push([{ text: '' }]);
  const usage = reply.usage;
  let chars = 0;
  const events = pieces.map((parts, i) => {
    const last = i === pieces.length - 1;
    for (const part of parts) chars += part.text?.length ?? 0;
    let meta: UsageMetadataWire | undefined;
    if (usage) {
      // Every chunk carries usageMetadata; counts grow and the last chunk holds the final numbers.
      const final = Math.max(0, usage.output - usage.reasoning);
      meta = last ? usageMetadata(usage) : usageMetadata(usage, Math.min(final, estimateTokens(chars)));
    }
    const wire = response(parts, reply, ids, last, meta);
    return { data: sse ? JSON.stringify(wire) : JSON.stringify(wire, null, 2) };
  });
  const errorData = (message: string | undefined): string => {
    const wire: ErrorWire = { error: { code: 503, message: message ?? 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } };
    return sse ? JSON.stringify(wire) : JSON.stringify(wire, null, 2);
  };
  if (sse) {
    return {
      contentType: 'text/event-stream',
      events,
      frame: (e: SimEvent) => `data: ${e.data}\r\n\r\n`,
      terminator: '',
      malformed: { data: '{"candidates": [{"content": {"parts": [{"text": ' },
      errorEvent: (message) => ({ data: errorData(message) }),
      errorTerminator: '',
    };
  }
  return {
    contentType: JSON_TYPE,
    events,
    frame: (e: SimEvent, position: number) => `${position === 0 ? '[' : '\n,\r\n'}${e.data}`,
    terminator: '\n]',
    malformed: { data: '{\n  "candidates": [\n    {\n      "content": ' },
    errorEvent: (message) => ({ data: errorData(message) }),
    errorTerminator: '\n]',
  };
}

/** The `x-goog-api-key` (or `?key=`) check: 403 without a key, 400 API_KEY_INVALID for a wrong one. */
export function authFailure(ex: Exchange): GeminiFailure | undefined {
  const key = ex.header('x-goog-api-key') ?? ex.url.searchParams.get('key') ?? undefined;
  if (key === undefined || key === '') {
    return new GeminiFailure(
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  }
  if (key !== ex.apiKey) {
    return new GeminiFailure(400, 'API key not valid. Please pass a valid API key.', [
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } },
    ]);
  }
  return undefined;
}

const EMBED_ACTIONS = ['embedContent', 'batchEmbedContents'];

export async function handleGemini(ex: Exchange, route: { model: string; action: string } | undefined): Promise<void> {
  const headers = { vary: 'Origin, X-Origin, Referer', 'x-content-type-options': 'nosniff' };
  const fail = (failure: GeminiFailure): void => ex.send(failure.code, errorBody(failure.code, failure.message, failure.details), headers);
  const embed = route !== undefined && EMBED_ACTIONS.includes(route.action);
  if (!route || ex.req.method !== 'POST' || (!embed && route.action !== 'generateContent' && route.action !== 'streamGenerateContent')) {
    return fail(new GeminiFailure(404, `The requested URL ${ex.url.pathname} was not found on this server.`));
  }
  const auth = authFailure(ex);
  if (auth) return fail(auth);
  if (ex.bodyInvalid || !isRecord(ex.body)) return fail(new GeminiFailure(400, 'Invalid JSON payload received. Unexpected token.'));
  const body = ex.body;
  if (embed) {
    const failure = await handleGeminiEmbeddings(ex, route, body, headers);
    if (failure) fail(failure);
    return;
  }
  const invalid = validate(body, route.model);
  if (invalid) return fail(invalid);
  const thinking = checkGeminiThinking(field(body, 'generationConfig', 'generation_config'), route.model);
  if ('error' in thinking) return fail(new GeminiFailure(400, thinking.error));
  if (route.action === 'generateContent' && isImageRequest(route.model, body)) {
    const failure = await handleGeminiImage(ex, route.model, body, headers);
    if (failure) fail(failure);
    return;
  }

  const contents = body.contents as unknown[];
  const lastUser = [...contents].reverse().find((c) => isRecord(c) && c.role !== 'model');
  let directive;
  try {
    directive = parseDirective(textOf(lastUser));
  } catch (error) {
    if (error instanceof ScenarioError) return fail(new GeminiFailure(400, error.message));
    throw error;
  }
  const scenario = ex.scenarioFor(directive);
  const reply = resolveReply(scenario, 'gemini', route.model, promptOf(body, contents));
  const ids = { model: route.model, responseId: randomId(22, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_') };
  // Thought summaries when asked (includeThoughts): a part marked `thought` first, its tokens counted as thoughts.
  const thought = thinking.thoughts && scenario.error === undefined ? thoughtFor(route.model) : undefined;
  if (thought !== undefined && reply.usage && scenario.usage === undefined) {
    const tokens = estimateTokens(thought.length);
    reply.usage.output += tokens;
    reply.usage.reasoning += tokens;
  }
  const signed = needsSignatures(route.model);
  const sse = ex.url.searchParams.get('alt') === 'sse';
  await ex.respond({
    scenario,
    stream: route.action === 'streamGenerateContent',
    headers,
    json: () => {
      const parts: PartWire[] = reply.text !== '' || reply.toolCalls.length === 0 ? [{ text: reply.text }] : [];
      if (thought !== undefined) parts.unshift({ text: thought, thought: true });
      parts.push(...functionCallParts(reply, signed));
      const wire = response(parts, reply, ids, true, reply.usage ? usageMetadata(reply.usage) : undefined);
      return { contentType: JSON_TYPE, text: JSON.stringify(wire, null, 2) + '\n' };
    },
    plan: () => streamPlan(reply, ids, sse, signed, thought),
    error: (status, message) => errorBody(status, message),
  });
}
