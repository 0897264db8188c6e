import type { Body, Exchange } from './server.js';
import { isRecord, parseDirective, randomId, ScenarioError, type PromptText } from './scenario.js';
import { promptTokens } from './tokens.js';

/**
 * Anthropic's token counting: POST /v1/messages/count_tokens, answering `{"input_tokens": N}`
 * with the count the simulator's messages answers report as their input for the same prompt
 * (tokens.ts; system, messages' text and tool_use inputs, tool definitions). As the real API,
 * it takes a messages request without max_tokens, stream and the sampling fields, and refuses
 * them by name (`max_tokens: Extra inputs are not permitted`). It never takes a queued or
 * default scenario (those are for the messages calls); a `SIM:` directive's `error` in the last
 * user message makes it fail that way.
 */

/** The fields count_tokens takes (the messages request's, less max_tokens, stream, sampling and metadata). */
const ALLOWED = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'cache_control', 'output_config', 'output_format', 'context_management', 'mcp_servers', 'speed']);

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function errorBody(status: number, message: string, requestId: string): Body {
  const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return { contentType: 'application/json', text: JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId }) };
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

const blocksOf = (content: unknown): Record<string, unknown>[] => (Array.isArray(content) ? content.filter(isRecord) : []);

/** The prompt as the messages handler (anthropic.ts) bills it. */
function promptOf(system: unknown, messages: Array<Record<string, unknown>>, tools: unknown): PromptText {
  let text = (tools === undefined ? '' : JSON.stringify(tools)) + blockText(system);
  for (const m of messages) {
    text += blockText(m.content);
    for (const block of blocksOf(m.content)) if (block.type === 'tool_use') text += String(block.name) + JSON.stringify(block.input ?? {});
  }
  return { text, messages: messages.length };
}

/** The real API's checks, in its wording (first failure wins). */
function validate(body: Record<string, unknown>): string | undefined {
  for (const key of Object.keys(body)) if (!ALLOWED.has(key)) return `${key}: Extra inputs are not permitted`;
  if (body.model === undefined) return 'model: Field required';
  if (typeof body.model !== 'string') return 'model: Input should be a valid string';
  if (body.messages === undefined) return 'messages: Field required';
  if (!Array.isArray(body.messages)) return 'messages: Input should be a valid list';
  for (const [i, message] of (body.messages as unknown[]).entries()) {
    if (!isRecord(message)) return `messages.${i}: Input should be a valid dictionary or object to extract fields from`;
    if (message.role !== 'user' && message.role !== 'assistant' && message.role !== 'system') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (typeof message.content !== 'string' && !Array.isArray(message.content)) return `messages.${i}.content: Field required`;
  }
  return undefined;
}

export async function handleAnthropicCount(ex: Exchange): Promise<void> {
  const requestId = `req_011C${randomId(20)}`;
  const headers = { 'request-id': requestId };
  const fail = (status: number, message: string): void => ex.send(status, errorBody(status, message, requestId), headers);
  if (ex.req.method !== 'POST') return fail(405, 'Method Not Allowed');
  const apiKey = ex.header('x-api-key');
  const bearer = /^Bearer\s+(.*)$/i.exec(ex.header('authorization') ?? '')?.[1]?.trim();
  if (apiKey === undefined && bearer === undefined) return fail(401, 'x-api-key header is required');
  if (apiKey !== ex.apiKey && bearer !== ex.apiKey) return fail(401, apiKey !== undefined ? 'invalid x-api-key' : 'Invalid bearer token');
  if (!ex.header('anthropic-version')) return fail(400, 'anthropic-version: header is required');
  if (ex.bodyInvalid || !isRecord(ex.body)) return fail(400, 'There was an error parsing the body of your request: the body must be a JSON object');
  const body = ex.body;
  const invalid = validate(body);
  if (invalid) return fail(400, invalid);
  const messages = body.messages as Array<Record<string, unknown>>;
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  try {
    const text = typeof lastUser?.content === 'string' ? lastUser.content : blockText(blocksOf(lastUser?.content).filter((b) => b.type === 'text'));
    const error = parseDirective(text)?.error;
    if (error) return fail(error.status, error.message ?? 'Overloaded');
  } catch (error) {
    if (error instanceof ScenarioError) return fail(400, `messages: ${error.message}`);
    throw error;
  }
  const inputTokens = promptTokens('anthropic', body.model as string, promptOf(body.system, messages, body.tools));
  ex.send(200, { contentType: 'application/json', text: JSON.stringify({ input_tokens: inputTokens }) }, headers);
}
