import type { Body, Exchange } from './server.js';
import { planPromptCache, type CacheOutcome } from './anthropic-cache.js';
import { checkClaudeThinking, signThinking, thoughtFor } from './thinking.js';
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

/** Anthropic Messages: POST /v1/messages (JSON and SSE with `event:` lines). */

type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'refusal';

interface ErrorWire {
  type: 'error';
  error: { type: string; message: string };
  request_id?: string;
}

interface TextBlockWire {
  type: 'text';
  text: string;
  citations: null;
}

interface ToolUseBlockWire {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

interface UsageWire {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
  service_tier: 'standard';
}

interface ThinkingBlockWire {
  type: 'thinking';
  thinking: string;
  signature: string;
}

interface MessageWire {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Array<ThinkingBlockWire | TextBlockWire | ToolUseBlockWire>;
  stop_reason: StopReason | null;
  stop_sequence: null;
  usage: UsageWire;
}

type StreamEventWire =
  | { type: 'message_start'; message: MessageWire }
  | { type: 'content_block_start'; index: number; content_block: { type: 'text'; text: '' } | { type: 'thinking'; thinking: ''; signature: '' } | { type: 'tool_use'; id: string; name: string; input: Record<string, never> } }
  | { type: 'ping' }
  | {
      type: 'content_block_delta';
      index: number;
      delta: { type: 'text_delta'; text: string } | { type: 'thinking_delta'; thinking: string } | { type: 'signature_delta'; signature: string } | { type: 'input_json_delta'; partial_json: string };
    }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; delta: { stop_reason: StopReason; stop_sequence: null }; usage: { output_tokens: number } }
  | { type: 'message_stop' };

const STOP_REASONS: Record<CanonicalFinish, StopReason> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'refusal' };

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const DEFAULT_MESSAGES: Record<string, string> = {
  invalid_request_error: 'Invalid request',
  authentication_error: 'invalid x-api-key',
  billing_error: 'Your credit balance is too low to access the Anthropic API.',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'Not found',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit',
  api_error: 'Internal server error',
  timeout_error: 'Request timed out',
  overloaded_error: 'Overloaded',
};

export function anthropicErrorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

function errorBody(status: number, message: string | undefined, requestId: string): Body {
  const type = anthropicErrorType(status);
  const wire: ErrorWire = { type: 'error', error: { type, message: message ?? DEFAULT_MESSAGES[type] ?? 'Error' }, request_id: requestId };
  return { contentType: 'application/json', text: JSON.stringify(wire) };
}

/** A version-2026 client may put `system` turns inside `messages` (SDK 1.x `SystemMessageParam`). */
function allowsSystemRole(version: string): boolean {
  return version >= '2026-10-21';
}

/** The billed prompt: system, every message's text and tool_use inputs, and the tool definitions. */
function promptOf(system: unknown, messages: Array<Record<string, unknown>>, tools: unknown): PromptText {
  let text = (tools === undefined ? '' : JSON.stringify(tools)) + blockText(system);
  for (const m of messages) {
    text += blockText(m.content);
    for (const block of blocksOf(m.content)) if (block.type === 'tool_use') text += String(block.name) + JSON.stringify(block.input ?? {});
  }
  return { text, messages: messages.length };
}

function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: unknown) => {
      if (!isRecord(block)) return '';
      if (block.type === 'text' && typeof block.text === 'string') return block.text;
      if (block.type === 'tool_result') return blockText(block.content);
      return '';
    })
    .join('');
}

function blocksOf(content: unknown): Record<string, unknown>[] {
  return Array.isArray(content) ? content.filter(isRecord) : [];
}

/** Request checks with the real API's wording (first failure wins). */
function validate(body: Record<string, unknown>, version: string): string | undefined {
  if (body.model === undefined) return 'model: Field required';
  if (typeof body.model !== 'string') return 'model: Input should be a valid string';
  if (body.max_tokens === undefined) return 'max_tokens: Field required';
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens)) return 'max_tokens: Input should be a valid integer';
  if (body.max_tokens < 1) return 'max_tokens: Input should be greater than or equal to 1';
  if (body.messages === undefined) return 'messages: Field required';
  if (!Array.isArray(body.messages)) return 'messages: Input should be a valid list';
  if (body.temperature !== undefined && body.temperature !== null) {
    if (typeof body.temperature !== 'number') return 'temperature: Input should be a valid number';
    if (body.temperature < 0) return 'temperature: Input should be greater than or equal to 0';
    if (body.temperature > 1) return 'temperature: Input should be less than or equal to 1';
  }
  const messages: unknown[] = body.messages;
  const roles = allowsSystemRole(version) ? ['user', 'assistant', 'system'] : ['user', 'assistant'];
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message)) return `messages.${i}: Input should be a valid dictionary or object to extract fields from`;
    if (message.role === undefined) return `messages.${i}.role: Field required`;
    // The real API's own wording for a system turn among the messages (clients such as Claude Code act on it).
    if (message.role === 'system' && !roles.includes('system')) return 'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.';
    if (typeof message.role !== 'string' || !roles.includes(message.role)) {
      return `messages.${i}.role: Input should be ${roles.map((r) => `'${r}'`).join(' or ')}`;
    }
    const content = message.content;
    if (content === undefined) return `messages.${i}.content: Field required`;
    if (typeof content !== 'string' && !Array.isArray(content)) return `messages.${i}.content: Input should be a valid string`;
    const isFinalAssistant = i === messages.length - 1 && message.role === 'assistant';
    if ((content === '' || (Array.isArray(content) && content.length === 0)) && !isFinalAssistant) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    for (const block of blocksOf(content)) {
      if (block.type === 'text' && typeof block.text === 'string') {
        if (block.text === '') return 'messages: text content blocks must be non-empty';
        if (block.text.trim() === '') return 'messages: text content blocks must contain non-whitespace text';
      }
    }
  }
  const turns = messages.filter(isRecord).filter((m) => m.role !== 'system');
  if (turns.length > 0 && turns[0]?.role !== 'user') return 'messages: first message must use the "user" role';
  for (const [i, raw] of messages.entries()) {
    const message = raw as Record<string, unknown>;
    const next = messages[i + 1];
    const results = new Set(
      isRecord(next) && next.role === 'user' ? blocksOf(next.content).filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id)) : [],
    );
    if (message.role === 'assistant') {
      const uses = blocksOf(message.content).filter((b) => b.type === 'tool_use').map((b) => String(b.id));
      const missing = uses.filter((id) => !results.has(id));
      if (missing.length > 0) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
    }
    if (message.role === 'user') {
      const prev = messages[i - 1];
      const uses = new Set(isRecord(prev) && prev.role === 'assistant' ? blocksOf(prev.content).filter((b) => b.type === 'tool_use').map((b) => String(b.id)) : []);
      for (const [j, block] of blocksOf(message.content).entries()) {
        if (block.type === 'tool_result' && !uses.has(String(block.tool_use_id))) {
          return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
        }
      }
    }
  }
  return undefined;
}

/**
 * Wire usage. `input_tokens` excludes cache reads and writes; 'omit' is not realistic here and
 * becomes zeros. `written1h`: the part of the cache writes at the 1-hour TTL (the rest is 5m).
 */
function usageWire(usage: ResolvedUsage | null, written1h: number, outputTokens?: number): UsageWire {
  const u = usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
  return {
    input_tokens: Math.max(0, u.input - u.cacheRead - u.cacheWrite),
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite - written1h, ephemeral_1h_input_tokens: written1h },
    output_tokens: outputTokens ?? u.output,
    service_tier: 'standard',
  };
}

function message(reply: Reply, model: string, id: string, toolIds: string[], written1h: number, thought?: string): MessageWire {
  const content: MessageWire['content'] = [];
  if (thought !== undefined) content.push({ type: 'thinking', thinking: thought, signature: signThinking(thought) });
  if (reply.text !== '') content.push({ type: 'text', text: reply.text, citations: null });
  reply.toolCalls.forEach((call, i) => content.push({ type: 'tool_use', id: toolIds[i] ?? '', name: call.name, input: call.argumentsObject }));
  return { id, type: 'message', role: 'assistant', model, content, stop_reason: STOP_REASONS[reply.finish], stop_sequence: null, usage: usageWire(reply.usage, written1h) };
}

/** message_start carries the input usage (cache reads and writes included); message_delta the output. */
function streamPlan(reply: Reply, model: string, id: string, toolIds: string[], written1h: number, thought?: string): StreamPlan {
  const events: StreamEventWire[] = [];
  const start = message(reply, model, id, toolIds, written1h);
  start.content = [];
  start.stop_reason = null;
  start.usage = usageWire(reply.usage, written1h, Math.min(1, reply.usage?.output ?? 0));
  events.push({ type: 'message_start', message: start });
  let index = 0;
  const ping = (): void => {
    if (index === 0) events.push({ type: 'ping' });
  };
  if (thought !== undefined) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    ping();
    for (const piece of chunkText(thought, reply.chunkSize * 4)) events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } });
    events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: signThinking(thought) } });
    events.push({ type: 'content_block_stop', index });
    index += 1;
  }
  if (reply.text !== '') {
    events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    ping();
    for (const piece of chunkText(reply.text, reply.chunkSize)) events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
    events.push({ type: 'content_block_stop', index });
    index += 1;
  }
  reply.toolCalls.forEach((call, i) => {
    events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: toolIds[i] ?? '', name: call.name, input: {} } });
    ping();
    // The real API opens every tool input with an empty partial_json.
    const pieces = ['', ...chunkText(JSON.stringify(call.argumentsObject), reply.chunkSize)];
    for (const piece of pieces) events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
    events.push({ type: 'content_block_stop', index });
    index += 1;
  });
  ping();
  events.push({ type: 'message_delta', delta: { stop_reason: STOP_REASONS[reply.finish], stop_sequence: null }, usage: { output_tokens: reply.usage?.output ?? 0 } });
  events.push({ type: 'message_stop' });
  return {
    contentType: 'text/event-stream; charset=utf-8',
    events: events.map((e) => ({ event: e.type, data: JSON.stringify(e) })),
    frame: (e: SimEvent) => `event: ${e.event ?? 'message'}\ndata: ${e.data}\n\n`,
    terminator: '',
    malformed: { event: 'content_block_delta', data: '{"type":"content_block_delta","index":0,"delta":{"type":"text_del' },
    errorEvent: (msg) => ({ event: 'error', data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: msg ?? 'Overloaded' } }) }),
    errorTerminator: '',
  };
}

export async function handleAnthropic(ex: Exchange): Promise<void> {
  const requestId = `req_011C${randomId(20)}`;
  const headers = { 'request-id': requestId };
  const fail = (status: number, message: string): void => ex.send(status, errorBody(status, message, requestId), headers);
  if (ex.url.pathname !== '/v1/messages' || ex.req.method !== 'POST') return fail(404, 'Not Found');

  const apiKey = ex.header('x-api-key');
  const bearer = /^Bearer\s+(.*)$/i.exec(ex.header('authorization') ?? '')?.[1]?.trim();
  if (apiKey === undefined && bearer === undefined) return fail(401, 'x-api-key header is required');
  if (apiKey !== ex.apiKey && bearer !== ex.apiKey) return fail(401, apiKey !== undefined ? 'invalid x-api-key' : 'Invalid bearer token');
  const version = ex.header('anthropic-version');
  if (!version) return fail(400, 'anthropic-version: header is required');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(version)) return fail(400, `anthropic-version: "${version}" is not a valid version`);

  if (ex.bodyInvalid || !isRecord(ex.body)) return fail(400, 'There was an error parsing the body of your request: the body must be a JSON object');
  const body = ex.body;
  const invalid = validate(body, version);
  if (invalid) return fail(400, invalid);
  const messages = body.messages as Array<Record<string, unknown>>;
  const model = body.model as string;
  const cachePlan = planPromptCache(body, model);
  if (typeof cachePlan === 'string') return fail(400, cachePlan);
  const thinking = checkClaudeThinking(body, model);
  if ('error' in thinking) return fail(400, thinking.error);

  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  let directive;
  try {
    // Only the user's own text counts (tool_result content is not a directive).
    const text = typeof lastUser?.content === 'string' ? lastUser.content : blockText(blocksOf(lastUser?.content).filter((b) => b.type === 'text'));
    directive = parseDirective(text);
  } catch (error) {
    if (error instanceof ScenarioError) return fail(400, `messages: ${error.message}`);
    throw error;
  }
  const scenario = ex.scenarioFor(directive);
  const reply = resolveReply(scenario, 'anthropic', model, promptOf(body.system, messages, body.tools));
  // Prompt caching (anthropic-cache.ts) when the scenario leaves the usage to the simulator; a
  // scripted usage is reported as it is (its cache writes at the 5-minute TTL).
  let cached: CacheOutcome = { read: 0, write5m: 0, write1h: 0 };
  if (cachePlan && scenario.usage === undefined && scenario.error === undefined && reply.usage) {
    cached = ex.promptCache.apply(cachePlan, reply.usage.input);
    reply.usage.cacheRead = cached.read;
    reply.usage.cacheWrite = cached.write5m + cached.write1h;
  }
  const id = `msg_01${randomId(22)}`;
  const toolIds = reply.toolCalls.map((call) => call.id ?? `toolu_01${randomId(22)}`);
  // Extended thinking: a thinking block first, its tokens billed as output.
  const thought = thinking.thinking && scenario.error === undefined ? thoughtFor(model) : undefined;
  if (thought !== undefined && reply.usage && scenario.usage === undefined) reply.usage.output += estimateTokens(thought.length);
  if (scenario.error === undefined) ex.noteUsage(usageWire(reply.usage, cached.write1h));
  await ex.respond({
    scenario,
    stream: body.stream === true,
    headers,
    json: () => ({ contentType: 'application/json', text: JSON.stringify(message(reply, model, id, toolIds, cached.write1h, thought)) }),
    plan: () => streamPlan(reply, model, id, toolIds, cached.write1h, thought),
    error: (status, msg) => errorBody(status, msg, requestId),
  });
}
