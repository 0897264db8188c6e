import { createHash } from 'node:crypto';
import type { ToolCall, ToolDefinition } from '../../core/canonical.js';
import { errors } from '../../core/errors.js';
import { isObject, type JsonObject } from '../../core/validate.js';

/**
 * The tools of the responses format, as every family can take them: function tools as they
 * are; a `namespace` tool's functions flattened to `<namespace>__<name>`; a `custom`
 * (free-form) tool as a function with one string argument, `input`; hosted tools (web_search,
 * file_search, code_interpreter, image_generation, local_shell, tool_search, mcp, computer
 * use) left out (an upstream that runs them gets the request natively instead) and named in
 * `x-gateway-dropped-tools`. The model's calls are mapped back to what the client offered.
 */

/** What a flattened tool name stands for, to map the model's calls back. */
export type ToolOrigin = { kind: 'function'; name: string; namespace?: string } | { kind: 'custom'; name: string };

export interface ResponsesTools {
  definitions: ToolDefinition[];
  /** Flattened name → what the client offered (only names that differ or are custom). */
  origins: Map<string, ToolOrigin>;
  /** Hosted tools left out, by type. */
  dropped: string[];
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const HOSTED = new Set([
  'web_search', 'web_search_preview', 'web_search_2025_08_26', 'web_search_preview_2025_03_11', 'file_search', 'code_interpreter', 'image_generation',
  'local_shell', 'shell', 'tool_search', 'mcp', 'computer_use_preview', 'computer_use', 'apply_patch',
]);
const SEPARATOR = '__';

/** `<namespace>__<name>`, within the 64 characters every family allows (a hash keeps long ones apart). */
export function flatName(namespace: string, name: string): string {
  const flat = `${namespace}${SEPARATOR}${name}`;
  if (flat.length <= 64) return flat;
  const hash = createHash('sha256').update(flat).digest('hex').slice(0, 8);
  return `${flat.slice(0, 55)}_${hash}`;
}

/** The parameters a custom tool is offered with: one string, its free-form input. */
function customParameters(format: unknown): JsonObject {
  let description = 'The tool\'s whole input, as free-form text.';
  if (isObject(format) && format.type === 'grammar' && typeof format.definition === 'string') {
    description += ` It must follow this ${typeof format.syntax === 'string' ? format.syntax : ''} grammar:\n${format.definition}`;
  }
  return { type: 'object', properties: { input: { type: 'string', description } }, required: ['input'], additionalProperties: false };
}

function functionTool(raw: JsonObject, at: string, name: string): ToolDefinition {
  if (raw.parameters !== undefined && raw.parameters !== null && !isObject(raw.parameters)) throw errors.invalidField(`${at}.parameters`, 'must be a JSON Schema object');
  const tool: ToolDefinition = { name, parameters: isObject(raw.parameters) ? raw.parameters : { type: 'object', properties: {} } };
  if (typeof raw.description === 'string') tool.description = raw.description;
  if (typeof raw.strict === 'boolean') tool.strict = raw.strict;
  return tool;
}

export function decodeResponsesTools(value: unknown): ResponsesTools | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw errors.invalidField('tools', 'must be an array of tools');
  const out: ResponsesTools = { definitions: [], origins: new Map(), dropped: [] };
  const add = (tool: ToolDefinition, at: string, origin?: ToolOrigin): void => {
    if (out.definitions.some((known) => known.name === tool.name)) throw errors.invalidField(`${at}.name`, `duplicate tool name '${tool.name}'`);
    out.definitions.push(tool);
    if (origin) out.origins.set(tool.name, origin);
  };
  value.forEach((raw, index) => {
    const at = `tools[${index}]`;
    if (!isObject(raw)) throw errors.invalidField(at, 'must be an object');
    if (typeof raw.type !== 'string') throw errors.invalidField(`${at}.type`, 'must be a string');
    if (HOSTED.has(raw.type)) {
      if (!out.dropped.includes(raw.type)) out.dropped.push(raw.type);
      return;
    }
    if (raw.type === 'function') {
      if (isObject(raw.function)) throw errors.invalidField(`${at}.name`, 'Responses tools are flat: {"type": "function", "name", "parameters"}, not the chat-completions nested function');
      if (typeof raw.name !== 'string' || !TOOL_NAME.test(raw.name)) throw errors.invalidField(`${at}.name`, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
      add(functionTool(raw, at, raw.name), at);
      return;
    }
    if (raw.type === 'custom') {
      if (typeof raw.name !== 'string' || !TOOL_NAME.test(raw.name)) throw errors.invalidField(`${at}.name`, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
      const tool: ToolDefinition = { name: raw.name, parameters: customParameters(raw.format) };
      if (typeof raw.description === 'string') tool.description = raw.description;
      add(tool, at, { kind: 'custom', name: raw.name });
      return;
    }
    if (raw.type === 'namespace') {
      if (typeof raw.name !== 'string' || !TOOL_NAME.test(raw.name)) throw errors.invalidField(`${at}.name`, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
      if (!Array.isArray(raw.tools)) throw errors.invalidField(`${at}.tools`, 'must be an array of function tools');
      const namespace = raw.name;
      raw.tools.forEach((inner, innerIndex) => {
        const innerAt = `${at}.tools[${innerIndex}]`;
        if (!isObject(inner) || inner.type !== 'function') throw errors.invalidField(`${innerAt}.type`, 'must be function');
        if (typeof inner.name !== 'string' || !TOOL_NAME.test(inner.name)) throw errors.invalidField(`${innerAt}.name`, 'must be 1-64 characters of a-z, A-Z, 0-9, _ and -');
        const tool = functionTool(inner, innerAt, flatName(namespace, inner.name));
        const prefix = typeof raw.description === 'string' && raw.description !== '' ? `[${namespace}: ${raw.description}] ` : '';
        if (prefix || tool.description) tool.description = `${prefix}${tool.description ?? ''}`;
        add(tool, innerAt, { kind: 'function', name: inner.name, namespace });
      });
      return;
    }
    throw errors.invalidField(`${at}.type`, `must be function, custom, namespace or a hosted tool (got ${raw.type})`);
  });
  return out;
}

/** The flattened name of a call the client sends back (a `function_call` item with its namespace). */
export function callName(name: string, namespace: unknown): string {
  return typeof namespace === 'string' && namespace !== '' ? flatName(namespace, name) : name;
}

/** A custom tool's input from the function arguments the model produced (`{"input": "..."}`). */
export function customInput(call: ToolCall): string {
  try {
    const parsed: unknown = JSON.parse(call.arguments);
    if (isObject(parsed) && typeof parsed.input === 'string') return parsed.input;
  } catch {
    // Not JSON: the model wrote the input itself.
  }
  return call.arguments;
}
