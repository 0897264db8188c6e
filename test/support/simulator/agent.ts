import { isRecord, type Family, type Scenario } from './scenario.js';

/**
 * The simulator's "coding agent" behaviour: a pure function of a request body that answers the
 * way a model answers a coding agent (Claude Code, Codex) asked to run a shell command.
 *
 * - The conversation's last item is a tool result holding an agent marker → a text quoting it:
 *   `The command printed: AGENT-MARKER-…`.
 * - Otherwise, the request offers a shell-like tool and the last user text holds a marker →
 *   one call of that tool running `echo AGENT-MARKER-"<id>"` (the quotes keep the marker out of
 *   the command's own text, so the marker reaches the answer only when the command really ran),
 *   with the arguments that tool takes (Bash: {command}; Codex's exec_command: {cmd}; shell:
 *   {command: [argv]}).
 * - Anything else (titles, summaries, quota probes, plain chat) → undefined: the normal reply.
 *
 * It reads every request shape that reaches a provider (OpenAI chat completions, OpenAI
 * Responses, Anthropic Messages, Gemini generateContent) and, for the recorder
 * (test/support/agents/record.ts), the clients' own requests (Responses with namespace,
 * custom and local_shell tools).
 */

/** A marker: `AGENT-MARKER-` and a lower-case id. */
export const AGENT_MARKER = /AGENT-MARKER-[a-z0-9]+/;

/** How a shell-like tool is offered, and so how it is called. */
export interface ShellTool {
  /** The tool's name as offered (inside its namespace when it has one). */
  name: string;
  /** Responses `namespace` tools: the namespace the function sits in. */
  namespace?: string;
  /** function: JSON arguments; custom: free-form `input` text; local_shell: an exec action. */
  kind: 'function' | 'custom' | 'local_shell';
  /** The arguments' JSON schema (functions). */
  parameters?: Record<string, unknown>;
}

export type AgentTurn =
  | { type: 'text'; text: string }
  | { type: 'tool'; tool: ShellTool; command: string; arguments: Record<string, unknown> | string };

/** The command the agent runs for a marker: prints the marker, whose text the command itself lacks. */
export function markerCommand(marker: string): string {
  const id = marker.slice('AGENT-MARKER-'.length);
  return `echo AGENT-MARKER-"${id}"`;
}

/** What a tool result's text says back: the first marker in it. */
export function resultText(marker: string): string {
  return `The command printed: ${marker}`;
}

/** The simulator's hook: the agent's turn as a scenario (undefined: the normal reply). */
export function agentScenario(family: Family, body: unknown): Scenario | undefined {
  if (family === 'deepgram' || !isRecord(body)) return undefined;
  const shape: Shape = family === 'anthropic' ? 'messages' : family === 'gemini' ? 'gemini' : Array.isArray(body.messages) ? 'chat' : 'responses';
  const turn = agentTurn(shape, body);
  if (!turn) return undefined;
  if (turn.type === 'text') return { text: turn.text };
  return { toolCalls: [{ name: turn.tool.name, arguments: turn.arguments }] };
}

/** The four request shapes: OpenAI chat completions and Responses, Anthropic Messages, Gemini generateContent. */
export type Shape = 'chat' | 'responses' | 'messages' | 'gemini';

/** Decides the agent's turn for a request of `shape`; undefined when it has nothing to say. */
export function agentTurn(shape: Shape, body: unknown): AgentTurn | undefined {
  if (!isRecord(body)) return undefined;
  const view = conversationOf(shape, body);
  if (!view) return undefined;
  if (view.lastIsToolResult) {
    const marker = AGENT_MARKER.exec(view.lastText)?.[0];
    return marker ? { type: 'text', text: resultText(marker) } : undefined;
  }
  const marker = AGENT_MARKER.exec(view.lastText)?.[0];
  if (!marker) return undefined;
  const tool = view.tools.map(classify).find((t): t is ShellTool => t !== undefined);
  if (!tool) return undefined;
  const command = markerCommand(marker);
  return { type: 'tool', tool, command, arguments: argumentsFor(tool, command) };
}

// ---------------------------------------------------------------------------------------------
// Reading the conversation

interface Conversation {
  /** The text of the last item: a tool result's output, or the last user message's text. */
  lastText: string;
  lastIsToolResult: boolean;
  /** The offered tools, as they are on the wire. */
  tools: unknown[];
}

function conversationOf(shape: Shape, body: Record<string, unknown>): Conversation | undefined {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  switch (shape) {
    case 'gemini':
      return Array.isArray(body.contents) ? gemini(body.contents, tools) : undefined;
    case 'messages':
      return Array.isArray(body.messages) ? anthropic(body.messages, tools) : undefined;
    case 'chat':
      return Array.isArray(body.messages) ? chat(body.messages, tools) : undefined;
    case 'responses':
      return body.input !== undefined ? responses(body.input, tools) : undefined;
  }
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(text).join('\n');
  if (!isRecord(value)) return value === undefined || value === null ? '' : String(value);
  if (typeof value.text === 'string') return value.text;
  if (value.content !== undefined) return text(value.content);
  if (value.output !== undefined) return text(value.output);
  return JSON.stringify(value);
}

/** The last item of a conversation, trailing system/developer turns left out (Claude Code puts its reminders in a last `system` message). */
function lastTurn(items: unknown[]): unknown {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (isRecord(item) && (item.role === 'system' || item.role === 'developer')) continue;
    return item;
  }
  return undefined;
}

function chat(messages: unknown[], tools: unknown[]): Conversation | undefined {
  const last = lastTurn(messages);
  if (!isRecord(last)) return undefined;
  if (last.role === 'tool' || last.role === 'function') return { lastText: text(last.content), lastIsToolResult: true, tools };
  if (last.role !== 'user') return { lastText: '', lastIsToolResult: false, tools };
  return { lastText: text(last.content), lastIsToolResult: false, tools };
}

function anthropic(messages: unknown[], tools: unknown[]): Conversation | undefined {
  const last = lastTurn(messages);
  if (!isRecord(last) || last.role !== 'user') return { lastText: '', lastIsToolResult: false, tools };
  const blocks = Array.isArray(last.content) ? last.content.filter(isRecord) : [];
  const results = blocks.filter((b) => b.type === 'tool_result');
  if (results.length > 0) return { lastText: results.map((b) => text(b.content)).join('\n'), lastIsToolResult: true, tools };
  return { lastText: typeof last.content === 'string' ? last.content : blocks.filter((b) => b.type === 'text').map(text).join('\n'), lastIsToolResult: false, tools };
}

const RESULT_ITEMS = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output', 'tool_search_output', 'mcp_call_output']);

function responses(input: unknown, tools: unknown[]): Conversation | undefined {
  if (typeof input === 'string') return { lastText: input, lastIsToolResult: false, tools };
  if (!Array.isArray(input)) return undefined;
  const last = lastTurn(input);
  if (!isRecord(last)) return undefined;
  if (typeof last.type === 'string' && RESULT_ITEMS.has(last.type)) return { lastText: text(last.output), lastIsToolResult: true, tools };
  if ((last.type === undefined || last.type === 'message') && last.role === 'user') return { lastText: text(last.content), lastIsToolResult: false, tools };
  return { lastText: '', lastIsToolResult: false, tools };
}

function gemini(contents: unknown[], tools: unknown[]): Conversation | undefined {
  const last = contents[contents.length - 1];
  if (!isRecord(last) || last.role === 'model') return { lastText: '', lastIsToolResult: false, tools };
  const parts = Array.isArray(last.parts) ? last.parts.filter(isRecord) : [];
  const responsesOf = parts.map((p) => p.functionResponse ?? p.function_response).filter(isRecord);
  if (responsesOf.length > 0) return { lastText: responsesOf.map((r) => JSON.stringify(r.response ?? {})).join('\n'), lastIsToolResult: true, tools };
  const flat = tools.flatMap((t) => (isRecord(t) ? ((t.functionDeclarations ?? t.function_declarations ?? []) as unknown[]) : []));
  return { lastText: parts.map((p) => (typeof p.text === 'string' ? p.text : '')).join('\n'), lastIsToolResult: false, tools: flat };
}

// ---------------------------------------------------------------------------------------------
// Finding the shell tool

/** Shell-like tool names: Claude Code's Bash, Codex's exec_command / shell / shell_command / local_shell, also when flattened with a namespace prefix. */
const SHELL_NAME = /(?:^|[^a-z0-9])(?:bash|shell|shell_command|exec_command|local_shell|container\.exec)$/i;

function classify(tool: unknown): ShellTool | undefined {
  if (!isRecord(tool)) return undefined;
  if (tool.type === 'local_shell') return { name: 'local_shell', kind: 'local_shell' };
  if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
    for (const inner of tool.tools) {
      const found = classify(inner);
      if (found) return { ...found, namespace: String(tool.name ?? '') };
    }
    return undefined;
  }
  // chat completions: {type: function, function: {name, parameters}}
  const fn = isRecord(tool.function) ? tool.function : tool;
  const name = typeof fn.name === 'string' ? fn.name : undefined;
  if (!name || !SHELL_NAME.test(name)) return undefined;
  if (tool.type === 'custom') return { name, kind: 'custom' };
  const parameters = fn.parameters ?? fn.input_schema ?? fn.parametersJsonSchema ?? fn.parameters_json_schema;
  return { name, kind: 'function', ...(isRecord(parameters) ? { parameters } : {}) };
}

/** The arguments the tool takes for `command`, read off its schema. */
function argumentsFor(tool: ShellTool, command: string): Record<string, unknown> | string {
  if (tool.kind === 'custom') return command;
  if (tool.kind === 'local_shell') return { command: ['bash', '-lc', command] };
  const properties = isRecord(tool.parameters?.properties) ? tool.parameters.properties : {};
  if (isRecord(properties.cmd)) return { cmd: command };
  const spec = properties.command;
  if (isRecord(spec) && (spec.type === 'array' || (typeof spec.type === 'string' && spec.type.toLowerCase() === 'array'))) return { command: ['bash', '-lc', command] };
  return { command };
}
