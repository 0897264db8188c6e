import { isRecord, type PromptText } from './scenario.js';
import { signThinking } from './thinking.js';

/**
 * Bedrock Converse request checks (first failure wins), in the service's wording: its
 * `1 validation error detected: Value ... at '<path>' failed to satisfy constraint: ...` for
 * shapes (paths 1-based with `.member`, as AWS writes them), and its own sentences for the
 * conversation rules (first message from the user, alternating roles, tool results answering the
 * previous turn's tool uses, `toolConfig` present whenever toolUse/toolResult blocks are).
 */

type Json = Record<string, unknown>;

const TOP_LEVEL = [
  'messages',
  'system',
  'inferenceConfig',
  'toolConfig',
  'additionalModelRequestFields',
  'additionalModelResponseFieldPaths',
  'guardrailConfig',
  'promptVariables',
  'requestMetadata',
  'performanceConfig',
];
const IMAGE_FORMATS = ['gif', 'jpeg', 'png', 'webp'];
const DOCUMENT_FORMATS = ['pdf', 'csv', 'doc', 'docx', 'xls', 'xlsx', 'html', 'txt', 'md'];
const BLOCKS = ['text', 'image', 'document', 'toolUse', 'toolResult', 'reasoningContent', 'cachePoint', 'guardContent'];
const RESULT_BLOCKS = ['text', 'json', 'image', 'document'];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const TOOL_USE_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export const TOOL_CONFIG_REQUIRED = 'The toolConfig field must be defined when using toolUse and toolResult content blocks.';
export const FIRST_USER = 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
export const ALTERNATE = 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.';

function shown(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return `'${value}'`;
  return `'${JSON.stringify(value)}'`;
}

/** AWS's shape-violation sentence. */
export function violation(value: unknown, path: string, constraint: string): string {
  return `1 validation error detected: Value ${value === null || value === undefined ? 'null' : shown(value)} at '${path}' failed to satisfy constraint: ${constraint}`;
}

const notNull = (path: string): string => violation(null, path, 'Member must not be null');
const enumOf = (value: unknown, path: string, values: string[]): string => violation(value, path, `Member must satisfy enum value set: [${values.join(', ')}]`);
const unknownMember = (path: string, key: string): string => `1 validation error detected: Value at '${path}' failed to satisfy constraint: Unknown member '${key}'`;

/** The one member a union (content block, tool, tool choice) sets; a message when it is not exactly one known member. */
function unionMember(value: unknown, path: string, members: string[]): { key: string } | { error: string } {
  if (!isRecord(value)) return { error: violation(value, path, 'Member must be a structure') };
  const keys = Object.keys(value);
  const unknown = keys.find((k) => !members.includes(k));
  if (unknown !== undefined) return { error: unknownMember(path, unknown) };
  if (keys.length !== 1) return { error: violation(value, path, `Member must have exactly one of [${members.join(', ')}] set`) };
  return { key: keys[0] ?? '' };
}

function checkBytes(source: unknown, path: string): string | undefined {
  if (!isRecord(source)) return notNull(`${path}.source`);
  if (typeof source.bytes !== 'string') return notNull(`${path}.source.bytes`);
  if (source.bytes === '' || !BASE64.test(source.bytes)) return `Invalid base64 data at ${path}.source.bytes. Make sure the bytes are base64-encoded and try again.`;
  return undefined;
}

function checkImage(image: unknown, path: string): string | undefined {
  if (!isRecord(image)) return notNull(path);
  if (!IMAGE_FORMATS.includes(String(image.format))) return enumOf(image.format, `${path}.format`, IMAGE_FORMATS);
  return checkBytes(image.source, path);
}

function checkDocument(document: unknown, path: string): string | undefined {
  if (!isRecord(document)) return notNull(path);
  if (!DOCUMENT_FORMATS.includes(String(document.format))) return enumOf(document.format, `${path}.format`, DOCUMENT_FORMATS);
  if (typeof document.name !== 'string' || document.name === '') return notNull(`${path}.name`);
  return checkBytes(document.source, path);
}

function checkBlock(block: unknown, path: string): string | undefined {
  const member = unionMember(block, path, BLOCKS);
  if ('error' in member) return member.error;
  const value = (block as Json)[member.key];
  const at = `${path}.${member.key}`;
  switch (member.key) {
    case 'text':
      return typeof value === 'string' ? undefined : violation(value, at, 'Member must be a string');
    case 'image':
      return checkImage(value, at);
    case 'document':
      return checkDocument(value, at);
    case 'cachePoint':
      return isRecord(value) && value.type === 'default' ? undefined : enumOf(isRecord(value) ? value.type : value, `${at}.type`, ['default']);
    case 'guardContent':
      return isRecord(value) ? undefined : notNull(at);
    case 'reasoningContent': {
      const r = unionMember(value, at, ['reasoningText', 'redactedContent']);
      if ('error' in r) return r.error;
      const inner = (value as Json)[r.key];
      if (r.key === 'redactedContent') return typeof inner === 'string' && BASE64.test(inner) ? undefined : violation(inner, `${at}.redactedContent`, 'Member must be a blob');
      if (!isRecord(inner) || typeof inner.text !== 'string') return notNull(`${at}.reasoningText.text`);
      if (inner.signature !== undefined && typeof inner.signature !== 'string') return violation(inner.signature, `${at}.reasoningText.signature`, 'Member must be a string');
      return undefined;
    }
    case 'toolUse': {
      if (!isRecord(value)) return notNull(at);
      if (typeof value.toolUseId !== 'string') return notNull(`${at}.toolUseId`);
      if (!TOOL_USE_ID.test(value.toolUseId)) return violation(value.toolUseId, `${at}.toolUseId`, 'Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+');
      if (typeof value.name !== 'string') return notNull(`${at}.name`);
      if (!TOOL_NAME.test(value.name)) return violation(value.name, `${at}.name`, 'Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+');
      if (value.input === undefined || value.input === null) return notNull(`${at}.input`);
      return undefined;
    }
    case 'toolResult': {
      if (!isRecord(value)) return notNull(at);
      if (typeof value.toolUseId !== 'string') return notNull(`${at}.toolUseId`);
      if (value.status !== undefined && value.status !== 'success' && value.status !== 'error') return enumOf(value.status, `${at}.status`, ['success', 'error']);
      if (!Array.isArray(value.content)) return notNull(`${at}.content`);
      for (const [k, part] of value.content.entries()) {
        const partPath = `${at}.content.${k + 1}.member`;
        const p = unionMember(part, partPath, RESULT_BLOCKS);
        if ('error' in p) return p.error;
        const inner = (part as Json)[p.key];
        if (p.key === 'text' && typeof inner !== 'string') return violation(inner, `${partPath}.text`, 'Member must be a string');
        if (p.key === 'json' && (inner === undefined || inner === null)) return notNull(`${partPath}.json`);
        if (p.key === 'image') {
          const bad = checkImage(inner, `${partPath}.image`);
          if (bad) return bad;
        }
        if (p.key === 'document') {
          const bad = checkDocument(inner, `${partPath}.document`);
          if (bad) return bad;
        }
      }
      return undefined;
    }
  }
  return undefined;
}

function blocksOf(message: unknown): Json[] {
  return isRecord(message) && Array.isArray(message.content) ? message.content.filter(isRecord) : [];
}

function toolUseIds(message: unknown): string[] {
  return blocksOf(message).flatMap((b) => (isRecord(b.toolUse) && typeof b.toolUse.toolUseId === 'string' ? [b.toolUse.toolUseId] : []));
}

function toolResultIds(message: unknown): string[] {
  return blocksOf(message).flatMap((b) => (isRecord(b.toolResult) && typeof b.toolResult.toolUseId === 'string' ? [b.toolResult.toolUseId] : []));
}

function checkMessages(messages: unknown): string | undefined {
  if (messages === undefined || messages === null) return notNull('messages');
  if (!Array.isArray(messages)) return violation(messages, 'messages', 'Member must be a list');
  if (messages.length === 0) return FIRST_USER;
  for (const [i, message] of messages.entries()) {
    const path = `messages.${i + 1}.member`;
    if (!isRecord(message)) return violation(message, path, 'Member must be a structure');
    const unknown = Object.keys(message).find((k) => k !== 'role' && k !== 'content');
    if (unknown !== undefined) return unknownMember(path, unknown);
    if (message.role === undefined || message.role === null) return notNull(`${path}.role`);
    if (message.role !== 'user' && message.role !== 'assistant') return enumOf(message.role, `${path}.role`, ['user', 'assistant']);
    if (message.content === undefined || message.content === null) return notNull(`${path}.content`);
    if (!Array.isArray(message.content)) return violation(message.content, `${path}.content`, 'Member must be a list');
    if (message.content.length === 0) return `The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`;
    for (const [j, block] of message.content.entries()) {
      const bad = checkBlock(block, `${path}.content.${j + 1}.member`);
      if (bad) return bad;
    }
  }
  const roles = messages.map((m) => (m as Json).role);
  if (roles[0] !== 'user') return FIRST_USER;
  for (let i = 1; i < roles.length; i++) if (roles[i] === roles[i - 1]) return ALTERNATE;
  // Tool results answer the previous turn's tool uses, all of them.
  for (let i = 0; i < messages.length; i++) {
    const results = toolResultIds(messages[i]);
    const uses = i > 0 ? toolUseIds(messages[i - 1]) : [];
    if (results.length > uses.length) return `The number of toolResult blocks at messages.${i}.content exceeds the number of toolUse blocks of previous turn.`;
    const missing = uses.filter((id) => !results.includes(id));
    if (missing.length > 0) return `Expected toolResult blocks at messages.${i}.content for the following Ids: ${missing.join(', ')}`;
  }
  return undefined;
}

function checkSystem(system: unknown): string | undefined {
  if (system === undefined) return undefined;
  if (!Array.isArray(system)) return violation(system, 'system', 'Member must be a list');
  for (const [i, block] of system.entries()) {
    const path = `system.${i + 1}.member`;
    const member = unionMember(block, path, ['text', 'cachePoint', 'guardContent']);
    if ('error' in member) return member.error;
    const value = (block as Json)[member.key];
    if (member.key === 'text' && typeof value !== 'string') return violation(value, `${path}.text`, 'Member must be a string');
    if (member.key === 'cachePoint' && !(isRecord(value) && value.type === 'default')) return enumOf(isRecord(value) ? value.type : value, `${path}.cachePoint.type`, ['default']);
  }
  return undefined;
}

function checkRange(value: unknown, path: string, min: number, max: number, integer: boolean): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || (integer && !Number.isInteger(value))) return violation(value, path, integer ? 'Member must be an integer' : 'Member must be a number');
  if (value < min) return violation(value, path, `Member must have value greater than or equal to ${min}`);
  if (value > max) return violation(value, path, `Member must have value less than or equal to ${max}`);
  return undefined;
}

function checkInference(config: unknown): string | undefined {
  if (config === undefined) return undefined;
  if (!isRecord(config)) return violation(config, 'inferenceConfig', 'Member must be a structure');
  const unknown = Object.keys(config).find((k) => !['maxTokens', 'temperature', 'topP', 'stopSequences'].includes(k));
  if (unknown !== undefined) return unknownMember('inferenceConfig', unknown);
  const bad =
    checkRange(config.maxTokens, 'inferenceConfig.maxTokens', 1, Number.MAX_SAFE_INTEGER, true) ??
    checkRange(config.temperature, 'inferenceConfig.temperature', 0, 1, false) ??
    checkRange(config.topP, 'inferenceConfig.topP', 0, 1, false);
  if (bad) return bad;
  const stops = config.stopSequences;
  if (stops === undefined) return undefined;
  if (!Array.isArray(stops)) return violation(stops, 'inferenceConfig.stopSequences', 'Member must be a list');
  if (stops.length > 2500) return violation(stops, 'inferenceConfig.stopSequences', 'Member must have length less than or equal to 2500');
  const at = stops.findIndex((s) => typeof s !== 'string' || s === '');
  return at < 0 ? undefined : violation(stops[at], `inferenceConfig.stopSequences.${at + 1}.member`, 'Member must have length greater than or equal to 1');
}

function checkTools(config: unknown): string | undefined {
  if (config === undefined) return undefined;
  if (!isRecord(config)) return violation(config, 'toolConfig', 'Member must be a structure');
  const unknown = Object.keys(config).find((k) => k !== 'tools' && k !== 'toolChoice');
  if (unknown !== undefined) return unknownMember('toolConfig', unknown);
  if (config.tools === undefined || config.tools === null) return notNull('toolConfig.tools');
  if (!Array.isArray(config.tools)) return violation(config.tools, 'toolConfig.tools', 'Member must be a list');
  if (config.tools.length === 0) return violation([], 'toolConfig.tools', 'Member must have length greater than or equal to 1');
  const names: string[] = [];
  for (const [i, tool] of config.tools.entries()) {
    const path = `toolConfig.tools.${i + 1}.member`;
    const member = unionMember(tool, path, ['toolSpec', 'cachePoint', 'systemTool']);
    if ('error' in member) return member.error;
    if (member.key !== 'toolSpec') continue;
    const spec = (tool as Json).toolSpec;
    if (!isRecord(spec)) return notNull(`${path}.toolSpec`);
    if (typeof spec.name !== 'string') return notNull(`${path}.toolSpec.name`);
    if (!TOOL_NAME.test(spec.name)) return violation(spec.name, `${path}.toolSpec.name`, 'Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+');
    if (spec.description !== undefined && (typeof spec.description !== 'string' || spec.description === '')) {
      return violation(spec.description, `${path}.toolSpec.description`, 'Member must have length greater than or equal to 1');
    }
    if (!isRecord(spec.inputSchema)) return notNull(`${path}.toolSpec.inputSchema`);
    if (!isRecord(spec.inputSchema.json)) return notNull(`${path}.toolSpec.inputSchema.json`);
    if (names.includes(spec.name)) return `The toolConfig field contains duplicate tool names: ${spec.name}. Tool names must be unique.`;
    names.push(spec.name);
  }
  if (config.toolChoice === undefined) return undefined;
  const choice = unionMember(config.toolChoice, 'toolConfig.toolChoice', ['auto', 'any', 'tool']);
  if ('error' in choice) return choice.error;
  const value = (config.toolChoice as Json)[choice.key];
  if (!isRecord(value)) return violation(value, `toolConfig.toolChoice.${choice.key}`, 'Member must be a structure');
  if (choice.key === 'tool' && typeof value.name !== 'string') return notNull('toolConfig.toolChoice.tool.name');
  return undefined;
}

/** The first thing wrong with a Converse body, in Bedrock's words; undefined when it is valid. */
export function validateConverse(body: Json): string | undefined {
  const unknown = Object.keys(body).find((k) => !TOP_LEVEL.includes(k));
  if (unknown !== undefined) return `Unknown parameter in input: "${unknown}", must be one of: ${TOP_LEVEL.join(', ')}`;
  const bad = checkMessages(body.messages) ?? checkSystem(body.system) ?? checkInference(body.inferenceConfig) ?? checkTools(body.toolConfig);
  if (bad) return bad;
  for (const key of ['additionalModelRequestFields', 'guardrailConfig', 'promptVariables', 'requestMetadata', 'performanceConfig'] as const) {
    if (body[key] !== undefined && !isRecord(body[key])) return violation(body[key], key, 'Member must be a structure');
  }
  const paths = body.additionalModelResponseFieldPaths;
  if (paths !== undefined && (!Array.isArray(paths) || paths.some((p) => typeof p !== 'string'))) return violation(paths, 'additionalModelResponseFieldPaths', 'Member must be a list of strings');
  if (isRecord(body.performanceConfig) && body.performanceConfig.latency !== undefined && !['standard', 'optimized'].includes(String(body.performanceConfig.latency))) {
    return enumOf(body.performanceConfig.latency, 'performanceConfig.latency', ['standard', 'optimized']);
  }
  const messages = body.messages as Json[];
  if (body.toolConfig === undefined && messages.some((m) => blocksOf(m).some((b) => b.toolUse !== undefined || b.toolResult !== undefined))) return TOOL_CONFIG_REQUIRED;
  return undefined;
}

/**
 * Claude's extended thinking through `additionalModelRequestFields.thinking` (`{type: 'enabled',
 * budget_tokens}` or `{type: 'adaptive'}`); replayed reasoning blocks must carry the signature the
 * simulator gave them. Other models ignore the field.
 */
export function checkReasoning(body: Json, claude: boolean): { error: string } | { thinking: boolean } {
  if (!claude) return { thinking: false };
  const messages = (body.messages as Json[]).entries();
  for (const [i, message] of messages) {
    if (message.role !== 'assistant') continue;
    for (const [j, block] of blocksOf(message).entries()) {
      const text = isRecord(block.reasoningContent) && isRecord(block.reasoningContent.reasoningText) ? block.reasoningContent.reasoningText : undefined;
      if (text && (typeof text.signature !== 'string' || text.signature !== signThinking(String(text.text)))) {
        return { error: `The model returned the following errors: messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block` };
      }
    }
  }
  const fields = isRecord(body.additionalModelRequestFields) ? body.additionalModelRequestFields : {};
  const thinking = fields.thinking;
  if (!isRecord(thinking) || (thinking.type !== 'enabled' && thinking.type !== 'adaptive')) return { thinking: false };
  if (thinking.type === 'enabled') {
    const budget = thinking.budget_tokens;
    if (typeof budget !== 'number' || !Number.isInteger(budget)) return { error: 'The model returned the following errors: thinking.enabled.budget_tokens: Field required' };
    if (budget < 1024) return { error: 'The model returned the following errors: thinking.enabled.budget_tokens: Input should be greater than or equal to 1024' };
  }
  return { thinking: true };
}

function blockText(block: Json): string {
  if (typeof block.text === 'string') return block.text;
  if (isRecord(block.toolUse)) return String(block.toolUse.name ?? '') + JSON.stringify(block.toolUse.input ?? {});
  if (isRecord(block.toolResult) && Array.isArray(block.toolResult.content)) {
    return block.toolResult.content.map((part: unknown) => (isRecord(part) ? (typeof part.text === 'string' ? part.text : part.json !== undefined ? JSON.stringify(part.json) : '') : '')).join('');
  }
  if (isRecord(block.reasoningContent) && isRecord(block.reasoningContent.reasoningText)) return String(block.reasoningContent.reasoningText.text ?? '');
  return '';
}

/** The billed prompt: the tool specs, the system texts and every message's text, tool uses and results. */
export function conversePrompt(body: Json): PromptText {
  const messages = body.messages as Json[];
  let text = isRecord(body.toolConfig) ? JSON.stringify(body.toolConfig.tools ?? []) : '';
  if (Array.isArray(body.system)) for (const block of body.system) if (isRecord(block) && typeof block.text === 'string') text += block.text;
  for (const message of messages) for (const block of blocksOf(message)) text += blockText(block);
  return { text, messages: messages.length };
}

/** The text of the last user message (where a `SIM:` directive goes); undefined when there is none. */
export function lastUserText(body: Json): string | undefined {
  const messages = body.messages as Json[];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (!last) return undefined;
  return blocksOf(last)
    .map((b) => (typeof b.text === 'string' ? b.text : ''))
    .join('');
}
