import type { CacheControl, ContentPart, ImageSource, Message, ReasoningBlock, ReasoningRequest, TextPart, ToolChoice, ToolDefinition } from '../../core/canonical.js';
import { errors } from '../../core/errors.js';
import type { ChatDraft } from '../../core/gateway/chat.js';
import { isObject, optionalModelList, optionalNumberIn, requiredModel, type JsonObject } from '../../core/validate.js';
import { refuseDeepJson } from '../chat/decode.js';
import { FOREIGN_SIGNATURE } from './encode.js';

/**
 * Anthropic Messages request → canonical draft. Pure. Tool results in a user turn become
 * tool messages (before the turn's other content); `cache_control` is kept on every block
 * (Claude honours it, other families ignore it). Fields it does not model pass through to an
 * Anthropic upstream and are named as ignored elsewhere.
 */

const MAPPED = new Set(['model', 'max_tokens', 'messages', 'system', 'stop_sequences', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'metadata', 'stream', 'models', 'thinking']);

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/** The first anthropic-version whose messages may hold `role: "system"` turns (SDK 1.x's SystemMessageParam). */
const SYSTEM_TURNS_VERSION = '2026-10-21';

/**
 * `beta`: the request's `anthropic-beta` header, passed on to a Claude upstream (ignored by the
 * others). `version`: its `anthropic-version`: before 2026-10-21 a system turn among the
 * messages is what Claude refuses, and a Claude upstream gets it where the client put it, to
 * answer with its own words (Claude Code acts on them); from that version on it is part of the
 * system prompt, folded there for every upstream.
 */
export function decodeMessagesRequest(raw: unknown, beta?: string | string[], version?: string | string[]): ChatDraft {
  if (!isObject(raw)) throw errors.bodyNotObject();
  refuseDeepJson(raw);
  const body = raw;
  const model = requiredModel(body);
  if (body.max_tokens === undefined || body.max_tokens === null) throw errors.missingField('max_tokens');
  if (typeof body.max_tokens !== 'number' || !Number.isSafeInteger(body.max_tokens) || body.max_tokens < 1) throw errors.invalidField('max_tokens', 'must be a positive integer');
  if (body.stream !== undefined && typeof body.stream !== 'boolean') throw errors.invalidField('stream', 'must be true or false');

  const asWritten = typeof version !== 'string' || version < SYSTEM_TURNS_VERSION;
  const messages: Message[] = [...decodeSystem(body.system), ...decodeTurns(body.messages, asWritten)];
  const draft: ChatDraft = { model, maxTokens: body.max_tokens, messages, stream: body.stream === true };

  const temperature = optionalNumberIn(body, 'temperature', 0, 1);
  if (temperature !== undefined) draft.temperature = temperature;
  const topP = optionalNumberIn(body, 'top_p', 0, 1);
  if (topP !== undefined) draft.topP = topP;
  if (body.top_k !== undefined && body.top_k !== null) {
    if (typeof body.top_k !== 'number' || !Number.isSafeInteger(body.top_k) || body.top_k < 1) throw errors.invalidField('top_k', 'must be a positive integer');
    draft.topK = body.top_k;
  }
  if (body.stop_sequences !== undefined && body.stop_sequences !== null) {
    if (!Array.isArray(body.stop_sequences) || body.stop_sequences.some((s) => typeof s !== 'string' || s === '')) {
      throw errors.invalidField('stop_sequences', 'must be an array of non-empty strings');
    }
    if (body.stop_sequences.length > 0) draft.stop = body.stop_sequences as string[];
  }
  if (body.metadata !== undefined && body.metadata !== null) {
    if (!isObject(body.metadata)) throw errors.invalidField('metadata', 'must be an object');
    if (body.metadata.user_id !== undefined && body.metadata.user_id !== null) {
      if (typeof body.metadata.user_id !== 'string') throw errors.invalidField('metadata.user_id', 'must be a string');
      draft.user = body.metadata.user_id;
    }
  }
  const tools = decodeTools(body.tools);
  if (tools) draft.tools = tools;
  decodeToolChoice(body.tool_choice, tools, draft);
  const reasoning = decodeThinking(body.thinking);
  if (reasoning) {
    // Claude's `output_config.effort` (Claude Code sends "high" with adaptive thinking): the effort other families take.
    const effort = isObject(body.output_config) ? body.output_config.effort : undefined;
    if (effort === 'low' || effort === 'medium' || effort === 'high') reasoning.effort = effort;
    draft.reasoning = reasoning;
  }
  const fallbacks = optionalModelList(body);
  if (fallbacks) draft.fallbacks = fallbacks;

  const passthrough: JsonObject = {};
  for (const [key, value] of Object.entries(body)) if (!MAPPED.has(key) && value !== undefined && value !== null) passthrough[key] = value;
  const betas = (Array.isArray(beta) ? beta.join(',') : (beta ?? '')).split(',').map((value) => value.trim()).filter((value) => value !== '');
  if (Object.keys(passthrough).length > 0 || betas.length > 0) {
    draft.passthrough = { family: 'anthropic', fields: passthrough };
    if (betas.length > 0) draft.passthrough.headers = { 'anthropic-beta': betas.join(',') };
  }
  return draft;
}


function cacheControl(block: JsonObject, at: string): CacheControl | undefined {
  const control = block.cache_control;
  if (control === undefined || control === null) return undefined;
  if (!isObject(control) || control.type !== 'ephemeral') throw errors.invalidField(`${at}.cache_control`, 'must be {"type": "ephemeral"} (optionally with ttl "5m" or "1h")');
  if (control.ttl !== undefined && control.ttl !== '5m' && control.ttl !== '1h') throw errors.invalidField(`${at}.cache_control.ttl`, 'must be 5m or 1h');
  return control.ttl === undefined ? { type: 'ephemeral' } : { type: 'ephemeral', ttl: control.ttl };
}

function textBlock(block: JsonObject, at: string): TextPart {
  if (typeof block.text !== 'string') throw errors.invalidField(`${at}.text`, 'must be a string');
  const part: TextPart = { type: 'text', text: block.text };
  const control = cacheControl(block, at);
  if (control) part.cacheControl = control;
  return part;
}

function decodeSystem(value: unknown): Message[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return value === '' ? [] : [{ role: 'system', content: [{ type: 'text', text: value }] }];
  if (!Array.isArray(value)) throw errors.invalidField('system', 'must be a string or an array of text blocks');
  const parts = value.map((raw, index) => {
    const at = `system[${index}]`;
    if (!isObject(raw) || raw.type !== 'text') throw errors.invalidField(at, 'must be a text block {"type": "text", "text": "..."}');
    return textBlock(raw, at);
  });
  return parts.length === 0 ? [] : [{ role: 'system', content: parts }];
}

function imageBlock(block: JsonObject, at: string): ContentPart {
  const source = block.source;
  if (!isObject(source)) throw errors.invalidField(`${at}.source`, 'must be an object');
  let image: ImageSource;
  if (source.type === 'base64') {
    if (typeof source.media_type !== 'string' || !MEDIA_TYPES.includes(source.media_type)) throw errors.invalidField(`${at}.source.media_type`, `must be one of ${MEDIA_TYPES.join(', ')}`);
    if (typeof source.data !== 'string' || source.data === '') throw errors.invalidField(`${at}.source.data`, 'must be base64 image data');
    image = { kind: 'base64', mediaType: source.media_type, data: source.data };
  } else if (source.type === 'url') {
    if (typeof source.url !== 'string' || !/^https?:\/\/\S+$/i.test(source.url)) throw errors.invalidField(`${at}.source.url`, 'must be an http(s) URL');
    image = { kind: 'url', url: source.url };
  } else throw errors.invalidField(`${at}.source.type`, 'must be base64 or url');
  const part: ContentPart = { type: 'image', source: image };
  const control = cacheControl(block, at);
  if (control) part.cacheControl = control;
  return part;
}

/** Content of a tool_result: a string, or text and image blocks. */
function toolResultContent(value: unknown, at: string): ContentPart[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  if (!Array.isArray(value)) throw errors.invalidField(at, 'must be a string or an array of text and image blocks');
  return value.map((raw, index) => {
    const blockAt = `${at}[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(blockAt, 'must be an object');
    if (raw.type === 'text') return textBlock(raw, blockAt);
    if (raw.type === 'image') return imageBlock(raw, blockAt);
    throw errors.invalidField(`${blockAt}.type`, 'must be text or image');
  });
}

function decodeTurns(value: unknown, inlineSystem: boolean): Message[] {
  if (value === undefined || value === null) throw errors.missingField('messages');
  if (!Array.isArray(value) || value.length === 0) throw errors.invalidField('messages', 'must be a non-empty array');
  const out: Message[] = [];
  const calls = new Set<string>();
  value.forEach((raw, index) => {
    const at = `messages[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(at, 'must be an object');
    if (raw.role === 'system') {
      // Allowed in messages since anthropic-version 2026-10-21 (the 1.x SDK's types have it).
      const parts = typeof raw.content === 'string' ? [{ type: 'text', text: raw.content }] : raw.content;
      if (!Array.isArray(parts)) throw errors.invalidField(`${at}.content`, 'must be a string or an array of text blocks');
      const system: Message = {
        role: 'system',
        content: parts.map((block, i) => {
          if (!isObject(block) || block.type !== 'text') throw errors.invalidField(`${at}.content[${i}]`, 'must be a text block');
          return textBlock(block, `${at}.content[${i}]`);
        }),
      };
      if (inlineSystem) system.inline = true;
      out.push(system);
      return;
    }
    if (raw.role !== 'user' && raw.role !== 'assistant') throw errors.invalidField(`${at}.role`, 'must be user, assistant or system');
    const blocks: unknown[] = typeof raw.content === 'string' ? [{ type: 'text', text: raw.content }] : Array.isArray(raw.content) ? raw.content : [];
    if (typeof raw.content !== 'string' && !Array.isArray(raw.content)) throw errors.invalidField(`${at}.content`, 'must be a string or an array of content blocks');
    if (raw.role === 'assistant') {
      const content: TextPart[] = [];
      const reasoning: ReasoningBlock[] = [];
      const toolCalls: { id: string; name: string; arguments: string }[] = [];
      blocks.forEach((block, i) => {
        const blockAt = `${at}.content[${i}]`;
        if (!isObject(block)) throw errors.invalidField(blockAt, 'must be an object');
        if (block.type === 'text') content.push(textBlock(block, blockAt));
        else if (block.type === 'tool_use') {
          if (typeof block.id !== 'string' || block.id === '') throw errors.invalidField(`${blockAt}.id`, 'must be a non-empty string');
          if (typeof block.name !== 'string' || block.name === '') throw errors.invalidField(`${blockAt}.name`, 'must be a non-empty string');
          if (!isObject(block.input)) throw errors.invalidField(`${blockAt}.input`, 'must be an object');
          toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
          calls.add(block.id);
        } else if (block.type === 'thinking') {
          // Earlier reasoning, replayed: Claude's own (signed) goes back to Claude; the gateway's
          // blocks of another family's reasoning are marked so and dropped for Claude.
          if (typeof block.thinking !== 'string') throw errors.invalidField(`${blockAt}.thinking`, 'must be a string');
          if (typeof block.signature !== 'string') throw errors.invalidField(`${blockAt}.signature`, 'must be a string');
          // A block the gateway signed (FOREIGN_SIGNATURE) carries no signature of Claude's: never replayed to Claude.
          if (block.signature.startsWith(FOREIGN_SIGNATURE)) {
            const family = block.signature.slice(FOREIGN_SIGNATURE.length);
            reasoning.push({ family: family === 'gemini' || family === 'anthropic' ? family : 'openai', text: block.thinking });
          } else reasoning.push({ family: 'anthropic', text: block.thinking, signature: block.signature });
        } else if (block.type === 'redacted_thinking') {
          if (typeof block.data !== 'string') throw errors.invalidField(`${blockAt}.data`, 'must be a string');
          reasoning.push({ family: 'anthropic', text: '', redacted: block.data });
        } else throw errors.invalidField(`${blockAt}.type`, 'must be text, tool_use, thinking or redacted_thinking');
      });
      const turn: Message = { role: 'assistant', content, toolCalls };
      if (reasoning.length > 0) turn.reasoning = reasoning;
      out.push(turn);
      return;
    }
    const content: ContentPart[] = [];
    blocks.forEach((block, i) => {
      const blockAt = `${at}.content[${i}]`;
      if (!isObject(block)) throw errors.invalidField(blockAt, 'must be an object');
      if (block.type === 'text') content.push(textBlock(block, blockAt));
      else if (block.type === 'image') content.push(imageBlock(block, blockAt));
      else if (block.type === 'tool_result') {
        if (typeof block.tool_use_id !== 'string' || !calls.has(block.tool_use_id)) {
          throw errors.invalidField(`${blockAt}.tool_use_id`, 'must be the id of a tool_use block of an earlier assistant message');
        }
        const result: Message = { role: 'tool', toolCallId: block.tool_use_id, content: toolResultContent(block.content, `${blockAt}.content`) };
        if (block.is_error === true) result.isError = true;
        const control = cacheControl(block, blockAt);
        const last = result.content.at(-1);
        if (control && last) last.cacheControl = control;
        out.push(result);
      } else throw errors.invalidField(`${blockAt}.type`, 'must be text, image or tool_result (document blocks are not supported)');
    });
    if (content.length > 0) out.push({ role: 'user', content });
  });
  return out;
}

function decodeTools(value: unknown): ToolDefinition[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw errors.invalidField('tools', 'must be an array of tools');
  const names = new Set<string>();
  return value.map((raw, index) => {
    const at = `tools[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(at, 'must be an object');
    if (raw.type !== undefined && raw.type !== 'custom') throw errors.invalidField(`${at}.type`, `server tools (${String(raw.type)}) are not supported: use custom tools with input_schema`);
    if (typeof raw.name !== 'string' || !TOOL_NAME.test(raw.name)) throw errors.invalidField(`${at}.name`, 'must be 1-128 characters of a-z, A-Z, 0-9, _ and -');
    if (names.has(raw.name)) throw errors.invalidField(`${at}.name`, `duplicate tool name '${raw.name}'`);
    names.add(raw.name);
    if (!isObject(raw.input_schema)) throw errors.invalidField(`${at}.input_schema`, 'must be a JSON Schema object');
    const tool: ToolDefinition = { name: raw.name, parameters: raw.input_schema };
    if (typeof raw.description === 'string') tool.description = raw.description;
    const control = cacheControl(raw, at);
    if (control) tool.cacheControl = control;
    const extra = Object.entries(raw).filter(([field]) => !TOOL_FIELDS.has(field));
    if (extra.length > 0) tool.anthropic = Object.fromEntries(extra);
    return tool;
  });
}

const TOOL_FIELDS = new Set(['type', 'name', 'description', 'input_schema', 'cache_control']);

function decodeToolChoice(value: unknown, tools: ToolDefinition[] | undefined, draft: ChatDraft): void {
  if (value === undefined || value === null) return;
  if (!isObject(value)) throw errors.invalidField('tool_choice', 'must be an object such as {"type": "auto"}');
  let choice: ToolChoice;
  switch (value.type) {
    case 'auto':
      choice = { type: 'auto' };
      break;
    case 'any':
      choice = { type: 'required' };
      break;
    case 'none':
      choice = { type: 'none' };
      break;
    case 'tool':
      if (typeof value.name !== 'string' || !tools?.some((tool) => tool.name === value.name)) throw errors.invalidField('tool_choice.name', 'must name a tool in tools');
      choice = { type: 'tool', name: value.name };
      break;
    default:
      throw errors.invalidField('tool_choice.type', 'must be auto, any, tool or none');
  }
  draft.toolChoice = choice;
  if (value.disable_parallel_tool_use === true) draft.parallelToolCalls = false;
}

/**
 * `thinking`: {type: "enabled", budget_tokens} (at least 1024, as Claude requires; a budget
 * not below max_tokens is lowered under it per target), {type: "adaptive"} or {type: "disabled"}; `display` and other fields pass on to
 * Claude as written. Each family maps it to its own control (providers/), lowering the budget
 * to the target's cap.
 */
function decodeThinking(value: unknown): ReasoningRequest | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw errors.invalidField('thinking', 'must be an object such as {"type": "enabled", "budget_tokens": 2048}');
  switch (value.type) {
    case 'disabled':
      return undefined;
    case 'adaptive':
      return { adaptive: true, summary: value.display !== 'omitted', anthropic: value };
    case 'enabled': {
      const budget = value.budget_tokens;
      if (typeof budget !== 'number' || !Number.isSafeInteger(budget) || budget < 1024) throw errors.invalidField('thinking.budget_tokens', 'must be an integer of at least 1024');
      return { budgetTokens: budget, summary: value.display !== 'omitted', anthropic: value };
    }
    default:
      throw errors.invalidField('thinking.type', 'must be enabled, adaptive or disabled');
  }
}
