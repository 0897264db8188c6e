import type { ContentPart, Message, ResponseFormat, TextPart, ToolCall, ToolChoice, ToolDefinition } from '../../core/canonical.js';
import { errors } from '../../core/errors.js';
import type { ChatDraft } from '../../core/gateway/chat.js';
import { isObject, optionalModelList, optionalNumberIn, requiredModel, type JsonObject } from '../../core/validate.js';
import { imageSource } from '../chat/decode.js';

/**
 * OpenAI Responses request (stateless) → canonical draft. Pure. `instructions` become the
 * first system message; consecutive `function_call` items join one assistant turn; a
 * `previous_response_id` or a conversation is refused (the gateway keeps no state).
 */

export interface DecodedResponsesRequest {
  draft: ChatDraft;
  /** Request fields echoed in the response object. */
  echo: ResponsesEcho;
}

export interface ResponsesEcho {
  instructions: string | null;
  maxOutputTokens: number | null;
  temperature: number | null;
  topP: number | null;
  parallelToolCalls: boolean;
  toolChoice: unknown;
  tools: unknown[];
  text: { format: Record<string, unknown> };
  metadata: Record<string, string>;
}

/** Accepted and acted on, or accepted as meaningless to a stateless gateway. */
const MAPPED = new Set([
  'model', 'input', 'instructions', 'max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'text', 'parallel_tool_calls', 'metadata', 'stream', 'store', 'user',
  'previous_response_id', 'conversation', 'background', 'models',
]);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function decodeResponsesRequest(raw: unknown): DecodedResponsesRequest {
  if (!isObject(raw)) throw errors.bodyNotObject();
  const body = raw;
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    throw errors.invalidField('previous_response_id', 'stateful responses are not supported: this gateway keeps no responses, send the whole conversation in input');
  }
  if (body.conversation !== undefined && body.conversation !== null) throw errors.invalidField('conversation', 'conversations are not supported: send the whole conversation in input');
  if (body.background === true) throw errors.invalidField('background', 'background responses are not supported');
  const model = requiredModel(body);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') throw errors.invalidField('stream', 'must be true or false');
  if (body.store !== undefined && body.store !== null && typeof body.store !== 'boolean') throw errors.invalidField('store', 'must be true or false');

  const instructions = body.instructions === undefined || body.instructions === null ? null : body.instructions;
  if (instructions !== null && typeof instructions !== 'string') throw errors.invalidField('instructions', 'must be a string');
  const messages: Message[] = instructions ? [{ role: 'system', content: [{ type: 'text', text: instructions }] }] : [];
  messages.push(...decodeInput(body.input));

  const draft: ChatDraft = { model, messages, stream: body.stream === true, maxTokensField: 'max_output_tokens' };
  const echo: ResponsesEcho = {
    instructions,
    maxOutputTokens: null,
    temperature: null,
    topP: null,
    parallelToolCalls: true,
    toolChoice: 'auto',
    tools: [],
    text: { format: { type: 'text' } },
    metadata: {},
  };
  if (body.max_output_tokens !== undefined && body.max_output_tokens !== null) {
    if (typeof body.max_output_tokens !== 'number' || !Number.isSafeInteger(body.max_output_tokens) || body.max_output_tokens < 1) {
      throw errors.invalidField('max_output_tokens', 'must be a positive integer');
    }
    draft.maxTokens = echo.maxOutputTokens = body.max_output_tokens;
  }
  const temperature = optionalNumberIn(body, 'temperature', 0, 2);
  if (temperature !== undefined) draft.temperature = echo.temperature = temperature;
  const topP = optionalNumberIn(body, 'top_p', 0, 1);
  if (topP !== undefined) draft.topP = echo.topP = topP;
  if (body.user !== undefined && body.user !== null) {
    if (typeof body.user !== 'string') throw errors.invalidField('user', 'must be a string');
    draft.user = body.user;
  }
  if (body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null) {
    if (typeof body.parallel_tool_calls !== 'boolean') throw errors.invalidField('parallel_tool_calls', 'must be true or false');
    draft.parallelToolCalls = echo.parallelToolCalls = body.parallel_tool_calls;
  }
  const tools = decodeTools(body.tools);
  if (tools) {
    draft.tools = tools;
    echo.tools = body.tools as unknown[];
  }
  const choice = decodeToolChoice(body.tool_choice, tools);
  if (choice) {
    draft.toolChoice = choice;
    echo.toolChoice = body.tool_choice;
  }
  const format = decodeTextFormat(body.text);
  if (format) {
    draft.responseFormat = format;
    echo.text = { format: body.text && isObject(body.text) && isObject(body.text.format) ? body.text.format : { type: 'text' } };
  }
  echo.metadata = decodeMetadata(body.metadata);
  const fallbacks = optionalModelList(body);
  if (fallbacks) draft.fallbacks = fallbacks;

  // Fields of the Responses wire that no upstream family takes: named as ignored.
  const ignored = Object.keys(body).filter((key) => !MAPPED.has(key) && body[key] !== undefined && body[key] !== null);
  if (ignored.length > 0) draft.ignoredParams = ignored;
  return { draft, echo };
}


function decodeMetadata(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw errors.invalidField('metadata', 'must be an object of string values');
  const entries = Object.entries(value);
  if (entries.length > 16) throw errors.invalidField('metadata', 'must have at most 16 keys');
  for (const [key, item] of entries) {
    if (typeof item !== 'string' || item.length > 512 || key.length > 64) throw errors.invalidField(`metadata.${key}`, 'must be a string of at most 512 characters (keys at most 64)');
  }
  return value as Record<string, string>;
}

function decodeInput(value: unknown): Message[] {
  if (value === undefined || value === null) throw errors.missingField('input');
  if (typeof value === 'string') return [{ role: 'user', content: [{ type: 'text', text: value }] }];
  if (!Array.isArray(value) || value.length === 0) throw errors.invalidField('input', 'must be a string or a non-empty array of input items');
  const out: Message[] = [];
  const calls = new Set<string>();
  value.forEach((raw, index) => {
    const at = `input[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(at, 'must be an object');
    const type = raw.type ?? (raw.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message':
        out.push(decodeMessageItem(raw, at));
        break;
      case 'function_call': {
        if (typeof raw.call_id !== 'string' || raw.call_id === '') throw errors.invalidField(`${at}.call_id`, 'must be a non-empty string');
        if (typeof raw.name !== 'string' || raw.name === '') throw errors.invalidField(`${at}.name`, 'must be a non-empty string');
        if (typeof raw.arguments !== 'string') throw errors.invalidField(`${at}.arguments`, 'must be a string of JSON');
        const call: ToolCall = { id: raw.call_id, name: raw.name, arguments: raw.arguments };
        calls.add(call.id);
        const last = out.at(-1);
        // A model turn with several calls arrives as consecutive items: one assistant turn.
        if (last?.role === 'assistant') last.toolCalls.push(call);
        else out.push({ role: 'assistant', content: [], toolCalls: [call] });
        break;
      }
      case 'function_call_output': {
        if (typeof raw.call_id !== 'string' || !calls.has(raw.call_id)) throw errors.invalidField(`${at}.call_id`, 'must be the call_id of an earlier function_call item');
        out.push({ role: 'tool', toolCallId: raw.call_id, content: outputContent(raw.output, `${at}.output`) });
        break;
      }
      case 'reasoning':
        // Earlier reasoning replayed by the client: not part of the canonical history.
        break;
      case 'item_reference':
        throw errors.invalidField(`${at}.type`, 'item references are not supported: this gateway keeps no items, send them inline');
      default:
        throw errors.invalidField(`${at}.type`, 'must be message, function_call or function_call_output');
    }
  });
  return out;
}

function decodeMessageItem(raw: JsonObject, at: string): Message {
  const role = raw.role;
  if (role === 'system' || role === 'developer') return { role: 'system', content: textOnly(raw.content, `${at}.content`, ['input_text']) };
  if (role === 'assistant') return { role: 'assistant', content: textOnly(raw.content, `${at}.content`, ['output_text', 'input_text', 'refusal']), toolCalls: [] };
  if (role === 'user') return { role: 'user', content: userContent(raw.content, `${at}.content`) };
  throw errors.invalidField(`${at}.role`, 'must be user, assistant, system or developer');
}

function textOnly(value: unknown, at: string, types: string[]): TextPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  if (!Array.isArray(value)) throw errors.invalidField(at, 'must be a string or an array of content parts');
  const parts: TextPart[] = [];
  value.forEach((raw, index) => {
    if (!isObject(raw) || typeof raw.type !== 'string' || !types.includes(raw.type)) throw errors.invalidField(`${at}[${index}]`, `must be a part of type ${types.join(' or ')}`);
    if (raw.type === 'refusal') return;
    if (typeof raw.text !== 'string') throw errors.invalidField(`${at}[${index}].text`, 'must be a string');
    parts.push({ type: 'text', text: raw.text });
  });
  return parts;
}

function userContent(value: unknown, at: string): ContentPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  if (!Array.isArray(value) || value.length === 0) throw errors.invalidField(at, 'must be a string or a non-empty array of input parts');
  return value.map((raw, index): ContentPart => {
    const partAt = `${at}[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(partAt, 'must be an object');
    if (raw.type === 'input_text') {
      if (typeof raw.text !== 'string') throw errors.invalidField(`${partAt}.text`, 'must be a string');
      return { type: 'text', text: raw.text };
    }
    if (raw.type === 'input_image') {
      if (typeof raw.image_url !== 'string') throw errors.invalidField(`${partAt}.image_url`, 'must be an http(s) URL or a data:image/...;base64 URL (file_id is not supported)');
      const part: ContentPart = { type: 'image', source: imageSource(raw.image_url, `${partAt}.image_url`) };
      if (raw.detail === 'low' || raw.detail === 'high' || raw.detail === 'auto') part.detail = raw.detail;
      return part;
    }
    throw errors.invalidField(`${partAt}.type`, 'must be input_text or input_image (input_file is not supported)');
  });
}

function outputContent(value: unknown, at: string): ContentPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  if (Array.isArray(value)) return userContent(value, at);
  throw errors.invalidField(at, 'must be a string or an array of input_text / input_image parts');
}

function decodeTools(value: unknown): ToolDefinition[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw errors.invalidField('tools', 'must be an array of function tools');
  const names = new Set<string>();
  return value.map((raw, index) => {
    const at = `tools[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(at, 'must be an object');
    if (raw.type !== 'function') throw errors.invalidField(`${at}.type`, `only function tools are supported (got ${String(raw.type)})`);
    if (isObject(raw.function)) throw errors.invalidField(`${at}.name`, 'Responses tools are flat: {"type": "function", "name", "parameters"}, not the chat-completions nested function');
    if (typeof raw.name !== 'string' || !TOOL_NAME.test(raw.name)) throw errors.invalidField(`${at}.name`, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
    if (names.has(raw.name)) throw errors.invalidField(`${at}.name`, `duplicate tool name '${raw.name}'`);
    names.add(raw.name);
    if (raw.parameters !== undefined && raw.parameters !== null && !isObject(raw.parameters)) throw errors.invalidField(`${at}.parameters`, 'must be a JSON Schema object');
    const tool: ToolDefinition = { name: raw.name, parameters: isObject(raw.parameters) ? raw.parameters : { type: 'object', properties: {} } };
    if (typeof raw.description === 'string') tool.description = raw.description;
    if (typeof raw.strict === 'boolean') tool.strict = raw.strict;
    return tool;
  });
}

function decodeToolChoice(value: unknown, tools: ToolDefinition[] | undefined): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') return { type: value };
  if (isObject(value) && value.type === 'function' && typeof value.name === 'string') {
    if (!tools?.some((tool) => tool.name === value.name)) throw errors.invalidField('tool_choice.name', `names the function '${value.name}', which is not in tools`);
    return { type: 'tool', name: value.name };
  }
  throw errors.invalidField('tool_choice', 'must be "auto", "none", "required" or {"type": "function", "name"}');
}

function decodeTextFormat(value: unknown): ResponseFormat | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw errors.invalidField('text', 'must be an object');
  const format = value.format;
  if (format === undefined || format === null) return undefined;
  if (!isObject(format)) throw errors.invalidField('text.format', 'must be an object');
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    if (typeof format.name !== 'string' || !TOOL_NAME.test(format.name)) throw errors.invalidField('text.format.name', 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
    if (!isObject(format.schema)) throw errors.invalidField('text.format.schema', 'must be a JSON Schema object');
    const out: ResponseFormat = { type: 'json_schema', name: format.name, schema: format.schema };
    if (typeof format.strict === 'boolean') out.strict = format.strict;
    if (typeof format.description === 'string') out.description = format.description;
    return out;
  }
  throw errors.invalidField('text.format.type', 'must be text, json_object or json_schema');
}
