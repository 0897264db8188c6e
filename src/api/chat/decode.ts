import type { ContentPart, ImageSource, Message, ResponseFormat, TextPart, ToolCall, ToolChoice, ToolDefinition } from '../../core/canonical.js';
import { errors } from '../../core/errors.js';
import type { ChatDraft } from '../../core/gateway/chat.js';
import { isObject, optionalBoolean, optionalModelList, optionalNumberIn, requiredModel, type JsonObject } from '../../core/validate.js';

/**
 * OpenAI chat completions request → canonical draft. Pure: validates every field it maps
 * and names the field in a 400; fields it does not model are kept as same-family passthrough
 * (an OpenAI-compatible upstream takes them as they are; other families list them as ignored).
 */

export interface DecodedChatCompletion {
  draft: ChatDraft;
  /** stream_options.include_usage: the client wants the usage chunk. */
  includeUsage: boolean;
}

/** Fields this decoder maps itself; everything else is passthrough. */
const MAPPED = new Set([
  'model', 'messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'stop', 'seed', 'user', 'tools', 'tool_choice',
  'parallel_tool_calls', 'response_format', 'stream', 'stream_options', 'n', 'cache', 'no_cache', 'models',
]);

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Accepted but not acted on for any provider: the canonical result has no place for log
 * probabilities, so forwarding them would answer `logprobs: null` as if the model had none.
 */
const UNSUPPORTED = ['logprobs', 'top_logprobs'];

/**
 * The deepest nesting of arrays and objects a chat request may have (the body itself is level
 * 1). Tool schemas, tool inputs and passthrough fields are taken as they are and serialized
 * later (token bounds, the upstream body, echoes): JSON nested thousands of levels overflows
 * the stack there, after the call was admitted or even billed. Real requests stay far below.
 */
export const MAX_JSON_DEPTH = 100;

/**
 * Refuses a body nested deeper than `limit` with a 400 naming where. Iterative (a body too
 * deep to serialize is not walked by recursion either), allocation-free for a body within the
 * limit but for its two stacks. The chat, responses and messages decoders call it first.
 */
export function refuseDeepJson(body: unknown, limit = MAX_JSON_DEPTH): void {
  const values: unknown[] = [body];
  const depths: number[] = [1];
  while (values.length > 0) {
    const value = values.pop() as object;
    const depth = depths.pop() as number;
    if (depth > limit) throw errors.invalidField(deepestPath(body, limit), `is nested more than ${limit} levels of arrays and objects deep`);
    if (Array.isArray(value)) {
      for (const item of value) {
        if (typeof item === 'object' && item !== null) {
          values.push(item);
          depths.push(depth + 1);
        }
      }
    } else {
      for (const key in value) {
        const member = (value as JsonObject)[key];
        if (typeof member === 'object' && member !== null) {
          values.push(member);
          depths.push(depth + 1);
        }
      }
    }
  }
}

/** Where a body passes `limit` (`tools[0].function.parameters.a.a…`, its first 100 characters): walked again only for the error. */
function deepestPath(body: unknown, limit: number): string {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: body, path: '', depth: 1 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop() as (typeof stack)[number];
    if (typeof value !== 'object' || value === null) continue;
    if (depth > limit) return path.length > 100 ? `${path.slice(0, 100)}…` : path;
    // Paths past 100 characters are cut: the error shows where the nesting starts, not all of it.
    const child = (key: string): string => (path.length > 101 ? path : `${path}${key}`);
    if (Array.isArray(value)) value.forEach((item, i) => stack.push({ value: item, path: child(`[${i}]`), depth: depth + 1 }));
    else for (const key in value) stack.push({ value: (value as JsonObject)[key], path: child(path === '' ? key : `.${key}`), depth: depth + 1 });
  }
  return 'body';
}

export function decodeChatCompletion(raw: unknown): DecodedChatCompletion {
  if (!isObject(raw)) throw errors.bodyNotObject();
  refuseDeepJson(raw);
  const body = raw;
  const model = requiredModel(body);

  const stream = optionalBoolean(body, 'stream') ?? false;
  let includeUsage = false;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (!stream) throw errors.invalidField('stream_options', 'is only allowed when stream is true');
    if (!isObject(body.stream_options)) throw errors.invalidField('stream_options', 'must be an object');
    includeUsage = optionalBoolean(body.stream_options, 'include_usage', 'stream_options.include_usage') ?? false;
  }

  const draft: ChatDraft = { model, messages: decodeMessages(body.messages), stream };
  const fallbacks = optionalModelList(body);
  if (fallbacks) draft.fallbacks = fallbacks;
  const maxTokens = positiveInt(body, 'max_completion_tokens') ?? positiveInt(body, 'max_tokens');
  if (body.max_tokens != null && body.max_completion_tokens != null && body.max_tokens !== body.max_completion_tokens) {
    throw errors.invalidField('max_tokens', 'set max_tokens or max_completion_tokens, not both');
  }
  if (maxTokens !== undefined) draft.maxTokens = maxTokens;
  draft.maxTokensField = body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
  const temperature = optionalNumberIn(body, 'temperature', 0, 2);
  if (temperature !== undefined) draft.temperature = temperature;
  const topP = optionalNumberIn(body, 'top_p', 0, 1);
  if (topP !== undefined) draft.topP = topP;
  const stop = decodeStop(body.stop);
  if (stop !== undefined) draft.stop = stop;
  if (body.seed !== undefined && body.seed !== null) {
    if (typeof body.seed !== 'number' || !Number.isSafeInteger(body.seed)) throw errors.invalidField('seed', 'must be an integer');
    draft.seed = body.seed;
  }
  if (body.user !== undefined && body.user !== null) {
    if (typeof body.user !== 'string') throw errors.invalidField('user', 'must be a string');
    draft.user = body.user;
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1) throw errors.invalidField('n', 'only 1 is supported (one choice per call)');

  const tools = decodeTools(body.tools);
  if (tools !== undefined) draft.tools = tools;
  const toolChoice = decodeToolChoice(body.tool_choice, tools);
  if (toolChoice !== undefined) draft.toolChoice = toolChoice;
  const parallel = optionalBoolean(body, 'parallel_tool_calls');
  if (parallel !== undefined) draft.parallelToolCalls = parallel;
  const format = decodeResponseFormat(body.response_format);
  if (format !== undefined) draft.responseFormat = format;

  const cache = optionalBoolean(body, 'cache');
  if (optionalBoolean(body, 'no_cache') === true) draft.noCache = true;
  if (cache === true) markCacheBreakpoints(draft.messages);

  let passthrough: JsonObject | undefined;
  const ignored: string[] = [];
  // for...in over a parsed JSON object (own keys only): no array of entries per request.
  for (const key in body) {
    const value = body[key];
    if (MAPPED.has(key) || value === undefined || value === null) continue;
    if (UNSUPPORTED.includes(key)) ignored.push(key);
    else (passthrough ??= {})[key] = value;
  }
  if (passthrough) draft.passthrough = { family: 'openai', fields: passthrough };
  if (ignored.length > 0) draft.ignoredParams = ignored;
  return { draft, includeUsage };
}


function positiveInt(body: JsonObject, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw errors.invalidField(field, 'must be a positive integer');
  return value;
}


function decodeStop(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length > 4 || list.some((s) => typeof s !== 'string' || s === '')) {
    throw errors.invalidField('stop', 'must be a non-empty string or an array of up to 4 non-empty strings');
  }
  return list as string[];
}

function decodeMessages(value: unknown): Message[] {
  if (value === undefined || value === null) throw errors.missingField('messages');
  if (!Array.isArray(value) || value.length === 0) throw errors.invalidField('messages', 'must be a non-empty array');
  const seenCalls = new Set<string>();
  return value.map((raw, index) => {
    const at = `messages[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(at, 'must be an object');
    const message = decodeMessage(raw, at);
    if (message.role === 'assistant') for (const call of message.toolCalls) seenCalls.add(call.id);
    if (message.role === 'tool' && !seenCalls.has(message.toolCallId)) {
      throw errors.invalidField(`${at}.tool_call_id`, `'${message.toolCallId}' does not answer a tool call of an earlier assistant message`);
    }
    return message;
  });
}

function decodeMessage(raw: JsonObject, at: string): Message {
  switch (raw.role) {
    case 'system':
    case 'developer':
      return withName({ role: 'system', content: textParts(raw.content, `${at}.content`, false) }, raw, at);
    case 'user':
      return withName({ role: 'user', content: contentParts(raw.content, `${at}.content`) }, raw, at);
    case 'assistant': {
      const toolCalls = decodeToolCalls(raw.tool_calls, `${at}.tool_calls`);
      const content = raw.content === undefined || raw.content === null ? [] : textParts(raw.content, `${at}.content`, true);
      if (content.length === 0 && toolCalls.length === 0 && raw.content !== '') throw errors.invalidField(`${at}.content`, 'is required unless tool_calls is set');
      return withName({ role: 'assistant', content, toolCalls }, raw, at);
    }
    case 'tool': {
      if (typeof raw.tool_call_id !== 'string' || raw.tool_call_id === '') throw errors.invalidField(`${at}.tool_call_id`, 'must be the id of the tool call this message answers');
      return { role: 'tool', toolCallId: raw.tool_call_id, content: textParts(raw.content, `${at}.content`, false) };
    }
    case undefined:
      throw errors.missingField(`${at}.role`);
    default:
      throw errors.invalidField(`${at}.role`, 'must be one of system, developer, user, assistant, tool');
  }
}

function withName<M extends Exclude<Message, { role: 'tool' }>>(message: M, raw: JsonObject, at: string): M {
  if (raw.name === undefined || raw.name === null) return message;
  if (typeof raw.name !== 'string' || raw.name === '') throw errors.invalidField(`${at}.name`, 'must be a non-empty string');
  message.name = raw.name;
  return message;
}

/** String content, or an array of text parts (assistant turns may also hold refusal parts). */
function textParts(value: unknown, at: string, assistant: boolean): TextPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  if (!Array.isArray(value)) throw errors.invalidField(at, 'must be a string or an array of text parts');
  const parts: TextPart[] = [];
  value.forEach((raw, index) => {
    if (!isObject(raw)) throw errors.invalidField(`${at}[${index}]`, 'must be an object');
    if (raw.type === 'text' && typeof raw.text === 'string') parts.push({ type: 'text', text: raw.text });
    else if (assistant && raw.type === 'refusal') return;
    else throw errors.invalidField(`${at}[${index}]`, 'must be a text part {"type": "text", "text": "..."}');
  });
  return parts;
}

const DATA_URL = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]+)$/i;

function contentParts(value: unknown, at: string): ContentPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  if (!Array.isArray(value) || value.length === 0) throw errors.invalidField(at, 'must be a string or a non-empty array of content parts');
  return value.map((raw, index): ContentPart => {
    const partAt = `${at}[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(partAt, 'must be an object');
    if (raw.type === 'text') {
      if (typeof raw.text !== 'string') throw errors.invalidField(`${partAt}.text`, 'must be a string');
      return { type: 'text', text: raw.text };
    }
    if (raw.type === 'image_url') {
      const image = raw.image_url;
      const url = isObject(image) ? image.url : undefined;
      if (typeof url !== 'string') throw errors.invalidField(`${partAt}.image_url.url`, 'must be a string (an http(s) URL or a data:image/...;base64 URL)');
      const detail = isObject(image) ? image.detail : undefined;
      if (detail !== undefined && detail !== 'auto' && detail !== 'low' && detail !== 'high') throw errors.invalidField(`${partAt}.image_url.detail`, 'must be auto, low or high');
      const part: ContentPart = { type: 'image', source: imageSource(url, `${partAt}.image_url.url`) };
      if (detail !== undefined) part.detail = detail;
      return part;
    }
    throw errors.invalidField(`${partAt}.type`, 'must be text or image_url (audio and file parts are not supported)');
  });
}

export function imageSource(url: string, at: string): ImageSource {
  const data = DATA_URL.exec(url);
  if (data) return { kind: 'base64', mediaType: (data[1] as string).toLowerCase(), data: (data[2] as string).replace(/\s/g, '') };
  if (/^https?:\/\/\S+$/i.test(url)) return { kind: 'url', url };
  throw errors.invalidField(at, 'must be an http(s) URL or a data:image/<type>;base64,<data> URL');
}

function decodeToolCalls(value: unknown, at: string): ToolCall[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw errors.invalidField(at, 'must be an array');
  return value.map((raw, index) => {
    const callAt = `${at}[${index}]`;
    const fn = isObject(raw) ? raw.function : undefined;
    if (!isObject(raw) || !isObject(fn)) throw errors.invalidField(callAt, 'must be {"id", "type": "function", "function": {"name", "arguments"}}');
    if (typeof raw.id !== 'string' || raw.id === '') throw errors.invalidField(`${callAt}.id`, 'must be a non-empty string');
    if (typeof fn.name !== 'string' || fn.name === '') throw errors.invalidField(`${callAt}.function.name`, 'must be a non-empty string');
    if (typeof fn.arguments !== 'string') throw errors.invalidField(`${callAt}.function.arguments`, 'must be a string of JSON');
    return { id: raw.id, name: fn.name, arguments: fn.arguments };
  });
}

function decodeTools(value: unknown): ToolDefinition[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw errors.invalidField('tools', 'must be an array of function tools');
  const names = new Set<string>();
  return value.map((raw, index) => {
    const at = `tools[${index}]`;
    if (!isObject(raw) || raw.type !== 'function' || !isObject(raw.function)) throw errors.invalidField(at, 'must be {"type": "function", "function": {"name", "description", "parameters"}}');
    const fn = raw.function;
    if (typeof fn.name !== 'string' || !TOOL_NAME.test(fn.name)) throw errors.invalidField(`${at}.function.name`, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
    if (names.has(fn.name)) throw errors.invalidField(`${at}.function.name`, `duplicate tool name '${fn.name}'`);
    names.add(fn.name);
    if (fn.parameters !== undefined && !isObject(fn.parameters)) throw errors.invalidField(`${at}.function.parameters`, 'must be a JSON Schema object');
    if (fn.description !== undefined && typeof fn.description !== 'string') throw errors.invalidField(`${at}.function.description`, 'must be a string');
    const tool: ToolDefinition = { name: fn.name, parameters: (fn.parameters as JsonObject | undefined) ?? { type: 'object', properties: {} } };
    if (typeof fn.description === 'string') tool.description = fn.description;
    if (typeof fn.strict === 'boolean') tool.strict = fn.strict;
    return tool;
  });
}

function decodeToolChoice(value: unknown, tools: ToolDefinition[] | undefined): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') {
    if (value === 'required' && !tools?.length) throw errors.invalidField('tool_choice', 'required needs tools');
    return { type: value };
  }
  if (isObject(value) && value.type === 'function' && isObject(value.function) && typeof value.function.name === 'string') {
    const name = value.function.name;
    if (!tools?.some((tool) => tool.name === name)) throw errors.invalidField('tool_choice', `names the function '${name}', which is not in tools`);
    return { type: 'tool', name };
  }
  throw errors.invalidField('tool_choice', 'must be "auto", "none", "required" or {"type": "function", "function": {"name"}}');
}

function decodeResponseFormat(value: unknown): ResponseFormat | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw errors.invalidField('response_format', 'must be an object');
  if (value.type === 'text' || value.type === 'json_object') return { type: value.type };
  if (value.type === 'json_schema') {
    const spec = value.json_schema;
    if (!isObject(spec)) throw errors.invalidField('response_format.json_schema', 'is required for type json_schema');
    if (typeof spec.name !== 'string' || !TOOL_NAME.test(spec.name)) throw errors.invalidField('response_format.json_schema.name', 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
    if (spec.schema !== undefined && !isObject(spec.schema)) throw errors.invalidField('response_format.json_schema.schema', 'must be a JSON Schema object');
    const format: ResponseFormat = { type: 'json_schema', name: spec.name, schema: (spec.schema as JsonObject | undefined) ?? { type: 'object' } };
    if (typeof spec.strict === 'boolean') format.strict = spec.strict;
    if (typeof spec.description === 'string') format.description = spec.description;
    return format;
  }
  throw errors.invalidField('response_format.type', 'must be text, json_object or json_schema');
}

/**
 * `cache: true`: prompt-caching breakpoints on the system prompt and on the last user turn,
 * which in a tool loop is the last tool result (Claude's user turn carries the results).
 */
function markCacheBreakpoints(messages: Message[]): void {
  const lastSystem = messages.filter((m) => m.role === 'system').at(-1);
  const lastUser = messages.filter((m) => m.role === 'user' || m.role === 'tool').at(-1);
  for (const message of [lastSystem, lastUser]) {
    const part = message?.content.at(-1);
    if (part) part.cacheControl = { type: 'ephemeral' };
  }
}
