import { azureCompletion, azureStream } from './azure.js';
import { checkOpenAiEffort } from './thinking.js';
import { randomBytes } from 'node:crypto';
import { handleOpenAIMedia } from './openai-media.js';
import type { Body, Exchange } from './server.js';
import {
  chunkText,
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

/**
 * OpenAI Chat Completions: POST /v1/chat/completions (JSON and SSE); the same under Groq's
 * /openai/v1. The media endpoints are in openai-media.ts.
 */

interface OpenAIErrorWire {
  error: { message: string; type: string; param?: string | null; code: string | null };
}

interface ToolCallWire {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

interface UsageWire {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; audio_tokens: number };
  completion_tokens_details: { reasoning_tokens: number; audio_tokens: number; accepted_prediction_tokens: number; rejected_prediction_tokens: number };
}

interface CompletionWire {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null; tool_calls?: ToolCallWire[]; refusal: null; annotations: never[] };
    logprobs: null;
    finish_reason: CanonicalFinish;
  }>;
  usage?: UsageWire;
  service_tier: 'default';
  system_fingerprint: string;
}

interface ToolCallDeltaWire {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

interface DeltaWire {
  role?: 'assistant';
  content?: string | null;
  tool_calls?: ToolCallDeltaWire[];
  refusal?: null;
}

interface ChunkWire {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  service_tier: 'default';
  system_fingerprint: string;
  choices: Array<{ index: number; delta: DeltaWire; logprobs: null; finish_reason: CanonicalFinish | null }>;
  usage?: UsageWire | null;
  obfuscation?: string;
}

export class OpenAIFailure {
  constructor(
    readonly status: number,
    readonly message: string,
    readonly type: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {}
}

const JSON_TYPE = 'application/json';

/** OpenAI's error body; Groq's (`groq`) has no `param` unless one is named. */
export function errorBody(failure: OpenAIFailure, groq = false): Body {
  const wire: OpenAIErrorWire = groq
    ? { error: { message: failure.message, type: failure.type, ...(failure.param !== null ? { param: failure.param } : {}), code: failure.code } }
    : { error: { message: failure.message, type: failure.type, param: failure.param, code: failure.code } };
  return { contentType: JSON_TYPE, text: JSON.stringify(wire, null, 4) + '\n' };
}

/** The error an upstream would send for a scripted status. */
export function scriptedFailure(status: number, message: string | undefined, code?: string): OpenAIFailure {
  // OpenAI's answer when the organization is out of credit (type and code both say it).
  if (code === 'insufficient_quota') {
    return new OpenAIFailure(status, message ?? 'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.', 'insufficient_quota', null, 'insufficient_quota');
  }
  if (status === 401) return new OpenAIFailure(status, message ?? 'Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key');
  // Azure OpenAI's content filter refusing a prompt.
  if (status === 400 && code === 'content_filter') {
    return new OpenAIFailure(status, message ?? "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.", 'invalid_request_error', 'prompt', 'content_filter');
  }
  if (status === 403) return new OpenAIFailure(status, message ?? 'Country, region, or territory not supported', 'request_forbidden', null, 'unsupported_country_region_territory');
  if (status === 404) return new OpenAIFailure(status, message ?? 'The model does not exist or you do not have access to it.', 'invalid_request_error', null, 'model_not_found');
  if (status === 429) return new OpenAIFailure(status, message ?? 'Rate limit reached for requests. Please try again later.', 'requests', null, 'rate_limit_exceeded');
  if (status >= 500) return new OpenAIFailure(status, message ?? 'The server had an error while processing your request. Sorry about that!', 'server_error');
  return new OpenAIFailure(status, message ?? 'Invalid request.', 'invalid_request_error');
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: unknown) => (isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

/** The billed prompt: every message's text, the assistant's tool calls, and the tool definitions. */
function promptOf(messages: Record<string, unknown>[], tools: unknown): PromptText {
  let text = tools === undefined ? '' : JSON.stringify(tools);
  for (const m of messages) {
    text += contentText(m.content);
    if (Array.isArray(m.tool_calls)) text += JSON.stringify(m.tool_calls);
  }
  return { text, messages: messages.length };
}

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

/** Request checks, in the order and wording of the real API (first failure wins). */
function validate(body: Record<string, unknown>): OpenAIFailure | undefined {
  const bad = (message: string, param: string | null = null, code: string | null = null): OpenAIFailure =>
    new OpenAIFailure(400, message, 'invalid_request_error', param, code);
  if (typeof body.model !== 'string' || body.model === '') return bad('you must provide a model parameter');
  const messages = body.messages;
  if (messages === undefined || messages === null) return bad("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
  if (!Array.isArray(messages)) return bad(`Invalid type for 'messages': expected an array of objects, but got ${typeof messages} instead.`, 'messages', 'invalid_type');
  if (messages.length === 0) {
    return bad("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'messages', 'empty_array');
  }
  let pending: { all: Set<string>; ids: Set<string> } | undefined;
  const unanswered = (at: number): OpenAIFailure | undefined => {
    if (!pending || pending.ids.size === 0) return undefined;
    return bad(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending.ids].join(', ')}`,
      `messages.[${at}].role`,
    );
  };
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message)) return bad(`Invalid type for 'messages[${i}]': expected an object, but got ${typeof message} instead.`, `messages[${i}]`, 'invalid_type');
    const role = message.role;
    if (role === undefined) return bad(`Missing required parameter: 'messages[${i}].role'.`, `messages[${i}].role`, 'missing_required_parameter');
    if (typeof role !== 'string' || !ROLES.includes(role)) {
      return bad(
        `Invalid value: '${String(role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${i}].role`,
        'invalid_value',
      );
    }
    if (role === 'tool') {
      if (typeof message.tool_call_id !== 'string') {
        return bad(`Missing required parameter: 'messages[${i}].tool_call_id'.`, `messages[${i}].tool_call_id`, 'missing_required_parameter');
      }
      if (!pending) {
        return bad("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`);
      }
      if (!pending.all.has(message.tool_call_id)) {
        return bad(`Invalid parameter: 'tool_call_id' of '${message.tool_call_id}' not found in 'tool_calls' of previous message.`, `messages.[${i}].tool_call_id`);
      }
      pending.ids.delete(message.tool_call_id);
      continue;
    }
    const open = unanswered(i);
    if (open) return open;
    pending = undefined;
    if ((role === 'user' || role === 'system' || role === 'developer') && (message.content === undefined || message.content === null)) {
      return bad(`Missing required parameter: 'messages[${i}].content'.`, `messages[${i}].content`, 'missing_required_parameter');
    }
    if (role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      const ids = new Set<string>();
      for (const [j, call] of message.tool_calls.entries()) {
        if (!isRecord(call) || typeof call.id !== 'string') {
          return bad(`Missing required parameter: 'messages[${i}].tool_calls[${j}].id'.`, `messages[${i}].tool_calls[${j}].id`, 'missing_required_parameter');
        }
        ids.add(call.id);
      }
      pending = { all: new Set(ids), ids };
    }
  }
  const open = unanswered(messages.length);
  if (open) return open;
  if (body.stream_options !== undefined && body.stream_options !== null && body.stream !== true) {
    return bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
  }
  return undefined;
}

function usageWire(usage: ResolvedUsage): UsageWire {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: { cached_tokens: usage.cacheRead, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: usage.reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

interface Ids {
  id: string;
  created: number;
  fingerprint: string;
  callIds: string[];
}

function completion(reply: Reply, model: string, ids: Ids): CompletionWire {
  const toolCalls: ToolCallWire[] = reply.toolCalls.map((call, i) => ({
    id: ids.callIds[i] ?? '',
    type: 'function',
    function: { name: call.name, arguments: call.argumentsJson },
  }));
  const message: CompletionWire['choices'][number]['message'] = {
    role: 'assistant',
    content: reply.text === '' && toolCalls.length > 0 ? null : reply.text,
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    refusal: null,
    annotations: [],
  };
  return {
    id: ids.id,
    object: 'chat.completion',
    created: ids.created,
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: reply.finish }],
    ...(reply.usage ? { usage: usageWire(reply.usage) } : {}),
    service_tier: 'default',
    system_fingerprint: ids.fingerprint,
  };
}

function streamPlan(reply: Reply, model: string, ids: Ids, includeUsage: boolean, obfuscate: boolean): StreamPlan {
  const chunk = (delta: DeltaWire, finish: CanonicalFinish | null = null): ChunkWire => {
    const wire: ChunkWire = {
      id: ids.id,
      object: 'chat.completion.chunk',
      created: ids.created,
      model,
      service_tier: 'default',
      system_fingerprint: ids.fingerprint,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
    if (includeUsage) wire.usage = null;
    // Real chunks carry random padding by default (stream_options.include_obfuscation: false turns it off).
    if (obfuscate) wire.obfuscation = randomId(1 + (randomBytes(1)[0] ?? 0) % 15);
    return wire;
  };
  const chunks: ChunkWire[] = [];
  const toolDeltas: ToolCallDeltaWire[][] = [];
  reply.toolCalls.forEach((call, index) => {
    toolDeltas.push([{ index, id: ids.callIds[index] ?? '', type: 'function', function: { name: call.name, arguments: '' } }]);
    for (const piece of chunkText(call.argumentsJson, reply.chunkSize)) toolDeltas.push([{ index, function: { arguments: piece } }]);
  });
  const first = toolDeltas.shift();
  if (reply.text === '' && first) {
    // Tool-call-only answers start with the role, a null content and the first call fragment.
    chunks.push(chunk({ role: 'assistant', content: null, tool_calls: first, refusal: null }));
  } else {
    chunks.push(chunk({ role: 'assistant', content: '', refusal: null }));
    for (const piece of chunkText(reply.text, reply.chunkSize)) chunks.push(chunk({ content: piece }));
    if (first) toolDeltas.unshift(first);
  }
  for (const toolCalls of toolDeltas) chunks.push(chunk({ tool_calls: toolCalls }));
  chunks.push(chunk({}, reply.finish));
  if (includeUsage && reply.usage) {
    const last: ChunkWire = { ...chunk({}), choices: [], usage: usageWire(reply.usage) };
    chunks.push(last);
  }
  const sse = (event: SimEvent): string => `data: ${event.data}\n\n`;
  return {
    contentType: 'text/event-stream; charset=utf-8',
    events: chunks.map((c) => ({ data: JSON.stringify(c) })),
    frame: sse,
    terminator: 'data: [DONE]\n\n',
    malformed: { data: `{"id":"${ids.id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` },
    errorEvent: (message) => ({
      data: JSON.stringify({ error: { message: message ?? 'The server had an error while processing your request. Sorry about that!', type: 'server_error', param: null, code: null } }),
    }),
    errorTerminator: '',
  };
}

/** The 401 for a missing or wrong `Authorization: Bearer` key; Groq (`groq`) answers "Invalid API Key" either way. */
export function authFailure(ex: Exchange, groq = false): OpenAIFailure | undefined {
  const auth = ex.header('authorization');
  const match = auth ? /^Bearer\s+(.*)$/i.exec(auth) : null;
  if (groq) {
    if (match && (match[1] ?? '').trim() === ex.apiKey) return undefined;
    return new OpenAIFailure(401, 'Invalid API Key', 'invalid_request_error', null, 'invalid_api_key');
  }
  if (!match) {
    return new OpenAIFailure(
      401,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
      'invalid_request_error',
    );
  }
  const key = (match[1] ?? '').trim();
  if (key !== ex.apiKey) {
    const shown = key.length > 8 ? `${key.slice(0, 3)}*****${key.slice(-4)}` : key;
    return new OpenAIFailure(401, `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_request_error', null, 'invalid_api_key');
  }
  return undefined;
}

export async function handleOpenAI(ex: Exchange): Promise<void> {
  const requestId = `req_${randomBytes(16).toString('hex')}`;
  const headers = { 'x-request-id': requestId, 'openai-version': '2020-10-01', 'openai-processing-ms': '1' };
  // Groq serves the same API under /openai/v1.
  const groq = ex.url.pathname.startsWith('/openai/v1/');
  const path = groq ? ex.url.pathname.slice('/openai'.length) : ex.url.pathname;
  const fail = (failure: OpenAIFailure): void => ex.send(failure.status, errorBody(failure, groq), headers);
  if (path !== '/v1/chat/completions') {
    const handled = await handleOpenAIMedia(ex, path, groq, headers);
    if (handled) return;
  }
  if (path !== '/v1/chat/completions' || ex.req.method !== 'POST') {
    return fail(new OpenAIFailure(404, `Invalid URL (${ex.req.method ?? 'GET'} ${ex.url.pathname})`, 'invalid_request_error'));
  }
  const auth = authFailure(ex, groq);
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
  const messages = body.messages as Array<Record<string, unknown>>;
  const model = body.model as string;
  const effort = checkOpenAiEffort(body, model);
  if (effort) return fail(new OpenAIFailure(400, effort, 'invalid_request_error', 'reasoning_effort'));

  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  let directive;
  try {
    directive = lastUser ? parseDirective(contentText(lastUser.content)) : undefined;
  } catch (error) {
    if (error instanceof ScenarioError) return fail(new OpenAIFailure(400, error.message, 'invalid_request_error', 'messages'));
    throw error;
  }
  const scenario = ex.scenarioFor(directive);
  const reply = resolveReply(scenario, 'openai', model, promptOf(messages, body.tools));
  const ids: Ids = {
    id: `chatcmpl-${randomId(29)}`,
    created: Math.floor(Date.now() / 1000),
    fingerprint: `fp_${randomBytes(5).toString('hex')}`,
    callIds: reply.toolCalls.map((call) => call.id ?? `call_${randomId(24)}`),
  };
  const options = isRecord(body.stream_options) ? body.stream_options : {};
  await ex.respond({
    scenario,
    stream: body.stream === true,
    headers,
    json: () => ({ contentType: JSON_TYPE, text: JSON.stringify(ex.azure ? azureCompletion(completion(reply, model, ids)) : completion(reply, model, ids)) }),
    plan: () => {
      const plan = streamPlan(reply, model, ids, options.include_usage === true, options.include_obfuscation !== false);
      return ex.azure ? azureStream(plan) : plan;
    },
    error: (status, message, code) => errorBody(scriptedFailure(status, message, code)),
  });
}
