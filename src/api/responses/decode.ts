import type { AssistantMessage, ContentPart, Message, ReasoningBlock, ReasoningRequest, ResponseFormat, TextPart, ToolCall, ToolChoice, ToolDefinition } from '../../core/canonical.js';
import { errors } from '../../core/errors.js';
import type { ChatDraft } from '../../core/gateway/chat.js';
import { isObject, optionalModelList, optionalNumberIn, requiredModel, type JsonObject } from '../../core/validate.js';
import { imageSource, refuseDeepJson } from '../chat/decode.js';
import { unpackReasoning } from './reasoning.js';
import { callName, decodeResponsesTools, type ToolOrigin } from './tools.js';

/**
 * OpenAI Responses request (stateless) → canonical draft. Pure. `instructions` become the
 * first system message (Codex sends none: its instructions are `developer` messages);
 * consecutive `function_call` items join one assistant turn; reasoning items go with the turn
 * they precede; a `previous_response_id` or a conversation is refused (the gateway keeps no
 * state). The client's body rides along as `native`, for an upstream that takes the format
 * itself.
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
  text: Record<string, unknown>;
  metadata: Record<string, string>;
  reasoning: { effort: string | null; summary: string | null };
  store: boolean;
  /** Flattened tool names → what the client offered (namespace functions, custom tools). */
  toolOrigins: Map<string, ToolOrigin>;
  /** `include` asked for `reasoning.encrypted_content`. */
  encryptedReasoning: boolean;
}

/**
 * Accepted and acted on, or accepted as meaningless to a stateless gateway that passes no
 * cache keys on (store, include, prompt_cache_key, client_metadata, service_tier, truncation
 * ...: an upstream that takes the format natively gets them as they are).
 */
const MAPPED = new Set([
  'model', 'input', 'instructions', 'max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'text', 'parallel_tool_calls', 'metadata', 'stream', 'store', 'user',
  'previous_response_id', 'conversation', 'background', 'models', 'reasoning', 'include', 'prompt_cache_key', 'prompt_cache_retention', 'client_metadata', 'service_tier',
  'safety_identifier', 'truncation', 'stream_options',
]);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const EFFORTS = ['minimal', 'low', 'medium', 'high'] as const;
/** Prompt tokens a hosted tool may add upstream (a web search's results run to a few thousand), held for in advance. */
const HOSTED_TOOL_ALLOWANCE = 16_000;

export function decodeResponsesRequest(raw: unknown): DecodedResponsesRequest {
  if (!isObject(raw)) throw errors.bodyNotObject();
  refuseDeepJson(raw);
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
  const include = decodeInclude(body.include);
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
    reasoning: { effort: null, summary: null },
    store: body.store === true,
    toolOrigins: new Map(),
    encryptedReasoning: include.includes('reasoning.encrypted_content'),
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
  const decoded = decodeResponsesTools(body.tools);
  const tools = decoded?.definitions;
  if (decoded) {
    if (decoded.definitions.length > 0) draft.tools = decoded.definitions;
    if (decoded.dropped.length > 0) draft.droppedTools = decoded.dropped;
    echo.tools = body.tools as unknown[];
    echo.toolOrigins = decoded.origins;
  }
  const choice = decodeToolChoice(body.tool_choice, tools);
  if (choice) {
    draft.toolChoice = choice;
    echo.toolChoice = body.tool_choice;
  }
  const format = decodeTextFormat(body.text);
  if (format) draft.responseFormat = format;
  if (isObject(body.text)) echo.text = { ...body.text, format: isObject(body.text.format) ? body.text.format : { type: 'text' } };
  const reasoning = decodeReasoning(body.reasoning);
  if (reasoning) {
    if (reasoning.request) draft.reasoning = reasoning.request;
    echo.reasoning = reasoning.echo;
  }
  echo.metadata = decodeMetadata(body.metadata);
  const fallbacks = optionalModelList(body);
  if (fallbacks) draft.fallbacks = fallbacks;

  // Fields of the Responses wire that no upstream family takes: named as ignored.
  const ignored = Object.keys(body).filter((key) => !MAPPED.has(key) && body[key] !== undefined && body[key] !== null);
  if (ignored.length > 0) draft.ignoredParams = ignored;
  draft.native = nativeBody(body);
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
  /** Reasoning items wait for the model turn they belong to (the next assistant message or call). */
  let reasoning: ReasoningBlock[] = [];
  const assistantTurn = (): AssistantMessage => {
    const last = out.at(-1);
    // A model turn with several calls arrives as consecutive items: one assistant turn.
    if (last?.role === 'assistant' && reasoning.length === 0) return last;
    const turn: AssistantMessage = { role: 'assistant', content: [], toolCalls: [] };
    if (reasoning.length > 0) turn.reasoning = reasoning;
    reasoning = [];
    out.push(turn);
    return turn;
  };
  const addCall = (call: ToolCall): void => {
    calls.add(call.id);
    assistantTurn().toolCalls.push(call);
  };
  value.forEach((raw, index) => {
    const at = `input[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(at, 'must be an object');
    const type = raw.type ?? (raw.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const message = decodeMessageItem(raw, at);
        if (message.role === 'assistant') {
          const turn = assistantTurn();
          if (turn.toolCalls.length > 0) out.push(message);
          else turn.content.push(...message.content);
        } else out.push(message);
        break;
      }
      case 'function_call': {
        if (typeof raw.call_id !== 'string' || raw.call_id === '') throw errors.invalidField(`${at}.call_id`, 'must be a non-empty string');
        if (typeof raw.name !== 'string' || raw.name === '') throw errors.invalidField(`${at}.name`, 'must be a non-empty string');
        if (typeof raw.arguments !== 'string') throw errors.invalidField(`${at}.arguments`, 'must be a string of JSON');
        addCall({ id: raw.call_id, name: callName(raw.name, raw.namespace), arguments: raw.arguments });
        break;
      }
      case 'custom_tool_call': {
        if (typeof raw.call_id !== 'string' || raw.call_id === '') throw errors.invalidField(`${at}.call_id`, 'must be a non-empty string');
        if (typeof raw.name !== 'string' || raw.name === '') throw errors.invalidField(`${at}.name`, 'must be a non-empty string');
        if (typeof raw.input !== 'string') throw errors.invalidField(`${at}.input`, 'must be a string');
        addCall({ id: raw.call_id, name: raw.name, arguments: JSON.stringify({ input: raw.input }) });
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output': {
        if (typeof raw.call_id !== 'string' || !calls.has(raw.call_id)) throw errors.invalidField(`${at}.call_id`, `must be the call_id of an earlier ${type === 'function_call_output' ? 'function_call' : 'custom_tool_call'} item`);
        out.push({ role: 'tool', toolCallId: raw.call_id, content: outputContent(raw.output, `${at}.output`) });
        break;
      }
      case 'reasoning':
        reasoning.push(...reasoningBlocks(raw, at));
        break;
      case 'item_reference':
        throw errors.invalidField(`${at}.type`, 'item references are not supported: this gateway keeps no items, send them inline');
      case 'web_search_call':
      case 'file_search_call':
      case 'code_interpreter_call':
      case 'image_generation_call':
      case 'local_shell_call':
      case 'local_shell_call_output':
      case 'tool_search_call':
      case 'tool_search_output':
      case 'mcp_call':
      case 'mcp_list_tools':
      case 'mcp_approval_request':
      case 'mcp_approval_response':
      case 'computer_call':
      case 'computer_call_output':
      case 'shell_call':
      case 'shell_call_output':
      case 'apply_patch_call':
      case 'apply_patch_call_output':
      case 'compaction':
        // A hosted tool's record: meaningful to an upstream that runs it (sent natively), not to another family.
        break;
      default:
        throw errors.invalidField(`${at}.type`, 'must be message, function_call, function_call_output, custom_tool_call, custom_tool_call_output or reasoning');
    }
  });
  return out;
}

/**
 * A reasoning item replayed: the gateway's packed blocks (Claude's thinking, see reasoning.ts)
 * become the turn's reasoning; OpenAI's own encrypted content and bare summaries are for
 * OpenAI only (an upstream taking the format natively gets them in the body).
 */
function reasoningBlocks(raw: JsonObject, at: string): ReasoningBlock[] {
  if (raw.encrypted_content !== undefined && raw.encrypted_content !== null && typeof raw.encrypted_content !== 'string') throw errors.invalidField(`${at}.encrypted_content`, 'must be a string');
  if (raw.summary !== undefined && !Array.isArray(raw.summary)) throw errors.invalidField(`${at}.summary`, 'must be an array of summary_text parts');
  return typeof raw.encrypted_content === 'string' ? (unpackReasoning(raw.encrypted_content) ?? []) : [];
}

function decodeInclude(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw errors.invalidField('include', 'must be an array of strings');
  return value as string[];
}

/** `reasoning: {effort, summary}`: an effort, and whether a summary comes back ("auto", "concise", "detailed"; "none" or absent: no). */
function decodeReasoning(value: unknown): { request?: ReasoningRequest; echo: ResponsesEcho['reasoning'] } | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw errors.invalidField('reasoning', 'must be an object such as {"effort": "medium", "summary": "auto"}');
  const effort = value.effort ?? null;
  if (effort !== null && effort !== 'none' && effort !== 'xhigh' && !(EFFORTS as readonly unknown[]).includes(effort)) throw errors.invalidField('reasoning.effort', 'must be none, minimal, low, medium, high or xhigh');
  const summary = value.summary ?? value.generate_summary ?? null;
  if (summary !== null && typeof summary !== 'string') throw errors.invalidField('reasoning.summary', 'must be auto, concise, detailed or none');
  const echo = { effort: typeof effort === 'string' ? effort : null, summary: typeof summary === 'string' ? summary : null };
  // No effort ("none") asks for no reasoning: the families that think only when asked do not.
  if (effort === 'none') return { echo };
  const request: ReasoningRequest = {};
  if (typeof effort === 'string') request.effort = effort === 'xhigh' ? 'high' : (effort as (typeof EFFORTS)[number]);
  if (typeof summary === 'string' && summary !== 'none') request.summary = true;
  return request.effort || request.summary ? { request, echo } : { echo };
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

function decodeToolChoice(value: unknown, tools: ToolDefinition[] | undefined): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') return { type: value };
  if (isObject(value) && (value.type === 'function' || value.type === 'custom') && typeof value.name === 'string') {
    if (!tools?.some((tool) => tool.name === value.name)) throw errors.invalidField('tool_choice.name', `names the tool '${value.name}', which is not in tools`);
    return { type: 'tool', name: value.name };
  }
  // Hosted tools and allowed-tools lists: the model may call any tool it was given.
  if (isObject(value) && typeof value.type === 'string' && value.type !== 'function' && value.type !== 'custom') return { type: value.type === 'allowed_tools' && value.mode === 'required' ? 'required' : 'auto' };
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

/**
 * The body as an upstream taking the format natively gets it: without the gateway's `models`,
 * and without the reasoning items the gateway packed for another family (OpenAI would refuse
 * their encrypted content). What would reach into the operator's upstream account or change
 * its price is left out: `store` is always false (nothing kept upstream for a tenant), a
 * stored `prompt` and a `service_tier` other than auto/default are dropped, and a
 * code_interpreter runs in a new container, not one named by id. What the canonical form
 * leaves out is measured for the hold.
 */
function nativeBody(body: JsonObject): NonNullable<ChatDraft['native']> {
  const { models: _fallbacks, prompt: _storedPrompt, ...native } = body;
  native.store = false;
  if (native.service_tier !== undefined && native.service_tier !== 'auto' && native.service_tier !== 'default') delete native.service_tier;
  if (Array.isArray(native.tools)) {
    native.tools = native.tools.map((tool) => (isObject(tool) && tool.type === 'code_interpreter' && typeof tool.container === 'string' ? { ...tool, container: { type: 'auto' } } : tool));
  }
  let extraBytes = 0;
  // A hosted tool's results (search results, files, program output) are prompt the upstream adds: an allowance each.
  if (Array.isArray(native.tools)) for (const tool of native.tools) if (isObject(tool) && typeof tool.type === 'string' && !['function', 'custom', 'namespace'].includes(tool.type)) extraBytes += JSON.stringify(tool).length + HOSTED_TOOL_ALLOWANCE;
  if (Array.isArray(native.input)) {
    const input = native.input.filter((item) => !(isObject(item) && item.type === 'reasoning' && typeof item.encrypted_content === 'string' && unpackReasoning(item.encrypted_content) !== undefined));
    for (const item of input) if (isObject(item) && typeof item.encrypted_content === 'string') extraBytes += item.encrypted_content.length;
    if (input.length !== native.input.length) native.input = input;
  }
  return { format: 'responses', body: native, extraBytes };
}
