import { randomBytes } from 'node:crypto';
import { authFailure, errorBody, OpenAIFailure, scriptedFailure } from './openai.js';
import {
  encryptReasoning,
  finalStatus,
  itemId,
  itemStatuses,
  responseObject,
  responsesStreamPlan,
  shownToken,
  usageWire,
  verifyReasoning,
  wireItem,
  type ResponseMeta,
  type SimItem,
} from './openai-responses-wire.js';
import { isRecord, parseDirective, randomId, resolveReply, ScenarioError, type PromptText, type Reply, type ReplyToolCall, type ResolvedUsage } from './scenario.js';
import type { Exchange } from './server.js';
import { completionTokens } from './tokens.js';

/**
 * OpenAI Responses: POST /v1/responses (JSON and SSE), stateless as a `store: false` client
 * sees it. The answer follows the same scenarios (directives, the queue, faults) as chat
 * completions (scenario.ts), rendered as Response items (openai-responses-wire.ts):
 *
 * - a `reasoning` item first when the request has `reasoning` (its summary when
 *   `reasoning.summary` asks for one; `encrypted_content` when `include` has
 *   `reasoning.encrypted_content`), its tokens counted as reasoning (and output) tokens;
 * - a `web_search_call` item before the message when a `web_search` tool is offered;
 * - the message, then the calls: `function_call` (with its `namespace` when the function sits in
 *   one), `custom_tool_call` for a `custom` tool, `local_shell_call` for `local_shell`.
 *
 * Input is checked as OpenAI checks it, in its wording: a `reasoning` item must carry
 * `encrypted_content` this simulator issued (anything else is OpenAI's 400
 * `invalid_encrypted_content`; none at all is its 404 for items not persisted), and every
 * `function_call_output` must answer an earlier call.
 */

const JSON_TYPE = 'application/json';

/** The summary (and, hidden, the reasoning) a reasoning item carries. */
export const REASONING_SUMMARY = '**Planning the answer**\n\nThe simulator reads the request and decides what to say.';

const TOOL_TYPES = [
  'function', 'file_search', 'computer', 'computer_use_preview', 'web_search', 'web_search_2025_08_26', 'mcp', 'code_interpreter', 'programmatic_tool_calling',
  'image_generation', 'local_shell', 'shell', 'custom', 'namespace', 'tool_search', 'web_search_preview', 'web_search_preview_2025_03_11', 'apply_patch',
];
const ITEM_TYPES = new Set([
  'message', 'function_call', 'function_call_output', 'reasoning', 'web_search_call', 'file_search_call', 'computer_call', 'computer_call_output', 'image_generation_call',
  'code_interpreter_call', 'local_shell_call', 'local_shell_call_output', 'shell_call', 'shell_call_output', 'apply_patch_call', 'apply_patch_call_output', 'mcp_list_tools',
  'mcp_approval_request', 'mcp_approval_response', 'mcp_call', 'custom_tool_call', 'custom_tool_call_output', 'item_reference', 'compaction', 'tool_search_call', 'tool_search_output',
]);
const ROLES = ['user', 'assistant', 'system', 'developer'];
const CALLS = new Set(['function_call', 'custom_tool_call', 'local_shell_call']);
const OUTPUTS: Record<string, string> = { function_call_output: 'function call output', custom_tool_call_output: 'custom tool call output' };

function supported(values: readonly string[]): string {
  return `${values.slice(0, -1).map((v) => `'${v}'`).join(', ')}, and '${values.at(-1) ?? ''}'`;
}

function kindOf(value: unknown): string {
  return Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
}

/** Request checks, in the order and wording of the real API (first failure wins). */
function validate(body: Record<string, unknown>): OpenAIFailure | undefined {
  const bad = (message: string, param: string | null = null, code: string | null = null, status = 400): OpenAIFailure => new OpenAIFailure(status, message, 'invalid_request_error', param, code);
  if (body.model === undefined || body.model === null) return bad("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  if (typeof body.model !== 'string' || body.model === '') return bad(`Invalid type for 'model': expected a string, but got ${kindOf(body.model)} instead.`, 'model', 'invalid_type');
  if (typeof body.previous_response_id === 'string') return bad(`Previous response with id '${body.previous_response_id}' not found.`, 'previous_response_id', 'previous_response_not_found', 404);
  const max = body.max_output_tokens;
  if (typeof max === 'number' && max < 16) return bad(`Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${max} instead.`, 'max_output_tokens', 'integer_below_min_value');
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) return bad(`Invalid type for 'tools': expected an array of objects, but got ${kindOf(body.tools)} instead.`, 'tools', 'invalid_type');
    for (const [i, tool] of body.tools.entries()) {
      const failure = validateTool(tool, `tools[${i}]`, bad);
      if (failure) return failure;
    }
  }
  const input = body.input;
  if (input === undefined || input === null) return bad("Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  if (typeof input === 'string') return undefined;
  if (!Array.isArray(input)) return bad(`Invalid type for 'input': expected one of a string or array of input items, but got ${kindOf(input)} instead.`, 'input', 'invalid_type');
  const calls = new Set<string>();
  for (const [i, item] of input.entries()) {
    if (!isRecord(item)) return bad(`Invalid type for 'input[${i}]': expected an object, but got ${kindOf(item)} instead.`, `input[${i}]`, 'invalid_type');
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    if (typeof type !== 'string' || !ITEM_TYPES.has(type)) return bad(`Invalid value: '${String(type)}'. Supported values are: ${supported([...ITEM_TYPES])}.`, `input[${i}].type`, 'invalid_value');
    if (type === 'message' && !ROLES.includes(String(item.role))) return bad(`Invalid value: '${String(item.role)}'. Supported values are: ${supported(ROLES)}.`, `input[${i}].role`, 'invalid_value');
    if (CALLS.has(type) && typeof item.call_id === 'string') calls.add(item.call_id);
    const output = OUTPUTS[type];
    if (output && !calls.has(String(item.call_id))) return bad(`No tool call found for ${output} with call_id ${String(item.call_id)}.`, 'input');
    if (type === 'reasoning' || type === 'item_reference') {
      const encrypted = item.encrypted_content;
      if (typeof encrypted === 'string' && type === 'reasoning') {
        if (!verifyReasoning(encrypted)) return bad(`The encrypted content ${shownToken(encrypted)} could not be verified.`, null, 'invalid_encrypted_content');
        continue;
      }
      // Nothing is ever stored here: an item sent by reference alone is not found.
      const id = String(item.id);
      const note = body.store === false ? ' Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.' : '';
      return bad(`Item with id '${id}' not found.${note}`, 'input', null, 404);
    }
  }
  return undefined;
}

function validateTool(tool: unknown, at: string, bad: (message: string, param?: string | null, code?: string | null) => OpenAIFailure): OpenAIFailure | undefined {
  if (!isRecord(tool)) return bad(`Invalid type for '${at}': expected an object, but got ${kindOf(tool)} instead.`, at, 'invalid_type');
  if (tool.type === undefined) return bad(`Missing required parameter: '${at}.type'.`, `${at}.type`, 'missing_required_parameter');
  if (typeof tool.type !== 'string' || !TOOL_TYPES.includes(tool.type)) return bad(`Invalid value: '${String(tool.type)}'. Supported values are: ${supported(TOOL_TYPES)}.`, `${at}.type`, 'invalid_value');
  if ((tool.type === 'function' || tool.type === 'custom' || tool.type === 'namespace') && (typeof tool.name !== 'string' || tool.name === '')) {
    return bad(`Missing required parameter: '${at}.name'.`, `${at}.name`, 'missing_required_parameter');
  }
  if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
    for (const [i, inner] of tool.tools.entries()) {
      const failure = validateTool(inner, `${at}.tools[${i}]`, bad);
      if (failure) return failure;
    }
  }
  return undefined;
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(textOf).join('');
  if (!isRecord(value)) return '';
  if (typeof value.text === 'string') return value.text;
  return textOf(value.content ?? value.output ?? value.summary);
}

/** The last user message's text (where a `SIM:` directive is read). */
function lastUserText(input: unknown): string {
  if (typeof input === 'string') return input;
  const items = Array.isArray(input) ? input.filter(isRecord) : [];
  const user = [...items].reverse().find((item) => (item.type === undefined || item.type === 'message') && item.role === 'user');
  return user ? textOf(user.content) : '';
}

/** The billed prompt: instructions, every input item's text (calls and their outputs included) and the tools. */
function promptOf(body: Record<string, unknown>): PromptText {
  let text = (typeof body.instructions === 'string' ? body.instructions : '') + (body.tools === undefined ? '' : JSON.stringify(body.tools));
  if (typeof body.input === 'string') return { text: text + body.input, messages: 1 + (body.instructions ? 1 : 0) };
  const items = Array.isArray(body.input) ? body.input.filter(isRecord) : [];
  for (const item of items) {
    if (item.type === 'function_call') text += `${String(item.name)}${String(item.arguments)}`;
    else if (item.type === 'custom_tool_call') text += `${String(item.name)}${String(item.input)}`;
    else text += textOf(item);
  }
  return { text, messages: items.length + (body.instructions ? 1 : 0) };
}

/** The offered tool a call names: its type, and the namespace it sits in. */
function offered(tools: Record<string, unknown>[], name: string): { type: string; namespace?: string } | undefined {
  for (const tool of tools) {
    if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
      const inner = offered(tool.tools.filter(isRecord), name);
      if (inner) return { ...inner, namespace: String(tool.name) };
    } else if (tool.name === name || (tool.type === 'local_shell' && name === 'local_shell')) return { type: String(tool.type) };
  }
  return undefined;
}

function callItem(call: ReplyToolCall, tools: Record<string, unknown>[]): SimItem {
  const callId = call.id ?? `call_${randomId(24)}`;
  const tool = offered(tools, call.name);
  const namespace = tool?.namespace ? { namespace: tool.namespace } : {};
  if (tool?.type === 'custom') return { kind: 'custom', id: itemId('ctc'), callId, name: call.name, ...namespace, input: call.argumentsJson };
  if (tool?.type === 'local_shell') {
    const command = call.argumentsObject.command;
    const argv = Array.isArray(command) ? command.map(String) : ['bash', '-lc', String(command ?? '')];
    return { kind: 'local_shell', id: itemId('lsh'), callId, command: argv };
  }
  return { kind: 'function', id: itemId('fc'), callId, name: call.name, ...namespace, arguments: call.argumentsJson };
}

/** The answer's items, in OpenAI's order: reasoning, a web search, the message, the calls. */
function answerItems(body: Record<string, unknown>, reply: Reply): SimItem[] {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isRecord) : [];
  const items: SimItem[] = [];
  if (isRecord(body.reasoning)) {
    const id = itemId('rs');
    const summary = typeof body.reasoning.summary === 'string' && body.reasoning.summary !== 'none' ? REASONING_SUMMARY : undefined;
    const encrypted = Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content') ? encryptReasoning(id, REASONING_SUMMARY) : null;
    items.push({ kind: 'reasoning', id, summary, encrypted });
  }
  const searches = tools.some((tool) => typeof tool.type === 'string' && tool.type.startsWith('web_search'));
  if (reply.text !== '' && searches && body.tool_choice !== 'none') items.push({ kind: 'web_search', id: itemId('ws'), query: lastUserText(body.input).slice(0, 100) || 'search' });
  if (reply.text !== '') items.push({ kind: 'message', id: itemId('msg'), text: reply.text });
  for (const call of reply.toolCalls) items.push(callItem(call, tools));
  return items;
}

/** The usage reported: a scripted one as given; the default counts the reasoning as output too. */
function answerUsage(reply: Reply, scripted: boolean, items: SimItem[], model: string): ResolvedUsage | null {
  if (!reply.usage || scripted || !items.some((item) => item.kind === 'reasoning')) return reply.usage;
  const reasoning = completionTokens('openai', model, REASONING_SUMMARY);
  return { ...reply.usage, output: reply.usage.output + reasoning, reasoning };
}

export async function handleOpenAIResponses(ex: Exchange): Promise<void> {
  const headers = { 'x-request-id': `req_${randomBytes(16).toString('hex')}`, 'openai-version': '2020-10-01', 'openai-processing-ms': '1' };
  const fail = (failure: OpenAIFailure): void => ex.send(failure.status, errorBody(failure), headers);
  if (ex.req.method !== 'POST') return fail(new OpenAIFailure(404, `Invalid URL (${ex.req.method ?? 'GET'} ${ex.url.pathname})`, 'invalid_request_error'));
  const auth = authFailure(ex);
  if (auth) return fail(auth);
  if (ex.bodyInvalid || !isRecord(ex.body)) {
    return fail(
      new OpenAIFailure(
        400,
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
        'invalid_request_error',
      ),
    );
  }
  const body = ex.body;
  const invalid = validate(body);
  if (invalid) return fail(invalid);
  let directive;
  try {
    directive = parseDirective(lastUserText(body.input));
  } catch (error) {
    if (error instanceof ScenarioError) return fail(new OpenAIFailure(400, error.message, 'invalid_request_error', 'input'));
    throw error;
  }
  const scenario = ex.scenarioFor(directive);
  const model = body.model as string;
  const reply = resolveReply(scenario, 'openai', model, promptOf(body));
  const items = answerItems(body, reply);
  const usage = answerUsage(reply, typeof scenario.usage === 'object', items, model);
  const meta: ResponseMeta = { id: itemId('resp'), createdAt: Math.floor(Date.now() / 1000), model, body };
  if (scenario.error === undefined && usage) ex.noteUsage(usageWire(usage));
  await ex.respond({
    scenario,
    stream: body.stream === true,
    headers,
    json: () => {
      const statuses = itemStatuses(items, reply.finish);
      const output = items.map((item, index) => wireItem(item, statuses[index] ?? 'completed'));
      return { contentType: JSON_TYPE, text: JSON.stringify(responseObject(meta, finalStatus(reply.finish), output, usage, reply.finish)) };
    },
    plan: () => responsesStreamPlan(meta, items, reply.finish, usage, reply.chunkSize),
    error: (status, message, code) => errorBody(scriptedFailure(status, message, code)),
  });
}
