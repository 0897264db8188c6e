import { randomBytes } from 'node:crypto';
import { completionTokens, promptTokens } from './tokens.js';

/**
 * Scenario types, directive parsing and the small helpers shared by the wire families of the
 * provider simulator. Nothing here touches the network.
 */

export type Family = 'openai' | 'anthropic' | 'gemini' | 'deepgram' | 'bedrock';
export type CanonicalFinish = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface SimToolCall {
  id?: string;
  name: string;
  arguments: Record<string, unknown> | string;
}

/**
 * Canonical usage. `input` is the whole prompt, cached tokens included (OpenAI/Gemini convention);
 * `output` is the whole completion, reasoning tokens included (OpenAI convention).
 */
export interface SimUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  reasoning?: number;
}

/**
 * What the next answer looks like. Everything is optional; `{}` gives the default reply.
 * Event counts (`...AfterEvents`) count the family's own data events (Anthropic: every `event:`
 * block incl. ping; OpenAI: chunks, not `[DONE]`; Gemini: chunks / array elements); N larger than the
 * number of events means "after the last event, before any terminator".
 */
export interface Scenario {
  /**
   * Assistant text. Default: `Hello from the <family> simulator (model <model>).`, or no text when toolCalls are given.
   * Media: the transcript (OpenAI/Groq transcriptions, Deepgram listen; default `Transcribed <s> seconds of audio.`),
   * dall-e-3's revised_prompt, the text part of a Gemini image answer ('' leaves it out).
   */
  text?: string;
  /** Tool calls after the text (parallel when >1). Gemini never gets ids; string arguments that are not a JSON object become {} outside OpenAI. */
  toolCalls?: SimToolCall[];
  /** Canonical finish: OpenAI same name; Anthropic end_turn/max_tokens/tool_use/refusal; Gemini STOP/MAX_TOKENS/STOP/SAFETY. */
  finish?: CanonicalFinish;
  /**
   * Default: the prompt's and the answer's tokens as the upstream's own tokenizer would count
   * them, modelled on cl100k (tokens.ts); for Anthropic with `cache_control` breakpoints, the
   * prompt cache's reads and writes too (anthropic-cache.ts). A scripted usage is reported as given.
   * 'omit': OpenAI has no usage (and no usage chunk), Gemini no usageMetadata; Anthropic always
   * reports usage, so it gets zeros. Media answers drop their usage field too (embeddings,
   * transcriptions, gpt-image-1, speech SSE, Gemini images).
   */
  usage?: SimUsage | 'omit';
  /** Characters per text delta and per tool-argument piece (default 4). Gemini sends function calls whole. */
  chunkSize?: number;
  /** Wait before the response headers (errors included). */
  delayMs?: number;
  /** Wait between stream events. */
  chunkDelayMs?: number;
  /** Answer with this status and the family's error body; `retry-after` header when retryAfterSeconds is set. */
  error?: { status: number; message?: string; retryAfterSeconds?: number; code?: string };
  /** Stream: destroy the socket after N events. Non-streaming: destroy it without any response. */
  disconnectAfterEvents?: number;
  /** Stream: after N events send one event whose data is not valid JSON, then continue normally. */
  malformedAfterEvents?: number;
  /** Stream: after N events send nothing more. Non-streaming: never send headers. Ends when the client leaves or on close(). */
  hangAfterEvents?: number;
  /** Stream: after N events send the family's mid-stream error event, then end the response. */
  errorAfterEvents?: { events: number; message?: string };
  /**
   * Media (speech): bytes per audio chunk written (default 4096). For speech answers
   * `disconnectAfterEvents` / `hangAfterEvents` count these chunks and `chunkDelayMs` separates them.
   */
  audioChunkBytes?: number;
  /** Non-streamed JSON answers: send a truncated body that is not valid JSON (status 200, same headers). */
  malformedBody?: boolean;
}

export interface RecordedRequest {
  family: Family;
  method: string;
  path: string;
  query: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  model: string;
  stream: boolean;
  /** The usage object the answer reported, in the family's wire shape (Anthropic: `usage` of the message; set once answered). */
  usage?: unknown;
  /** Came in through Azure's paths (azure.ts): which API, deployment and api-version. */
  azure?: { api: 'deployments' | 'v1'; deployment?: string; apiVersion?: string };
  /** Came in through Vertex's paths (vertex.ts): the publisher, method, project and region of the path. */
  vertex?: { publisher: string; method: string; project: string; region: string };
  /** A Bedrock Runtime call (bedrock.ts): the action (`converse`, `converse-stream`, `invoke`) and how it was authenticated. */
  bedrock?: { action: string; auth: 'sigv4' | 'bearer' };
}

/** One event of a streamed answer: `event` becomes an `event:` line (Anthropic only). */
export interface SimEvent {
  event?: string;
  data: string;
}

/**
 * Everything the stream driver needs to play a streamed answer, faults included. `Frame`: what a
 * frame is on the wire, text (SSE, JSON arrays) or bytes (Bedrock's binary event stream).
 */
export interface StreamPlan<Frame extends string | Buffer = string> {
  contentType: string;
  events: SimEvent[];
  /** Serializes one event; `position` counts frames already written (first frame = 0). */
  frame(event: SimEvent, position: number): Frame;
  /** Written after the last event ('' when the family has no terminator). */
  terminator: Frame | '';
  /** The event whose data is not valid JSON (malformedAfterEvents). */
  malformed: SimEvent;
  /** The family's mid-stream error event (errorAfterEvents). */
  errorEvent(message: string | undefined): SimEvent;
  /** Written after the error event before the stream ends ('' for SSE). */
  errorTerminator: Frame | '';
}

/** A resolved tool call: ids are left to the family (each has its own id format). */
export interface ReplyToolCall {
  id?: string;
  name: string;
  /** The arguments as sent on the wire by OpenAI (a JSON string, passed through when given as a string). */
  argumentsJson: string;
  /** The arguments as an object (Anthropic `input`, Gemini `args`); {} when the string was not a JSON object. */
  argumentsObject: Record<string, unknown>;
}

export interface ResolvedUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

export interface Reply {
  text: string;
  toolCalls: ReplyToolCall[];
  finish: CanonicalFinish;
  /** null when the scenario said 'omit'. */
  usage: ResolvedUsage | null;
  chunkSize: number;
}

export class ScenarioError extends Error {}

// ---------------------------------------------------------------------------------------------
// Small value helpers shared by the families

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random string over `alphabet` (default: base62), as used in vendor ids. */
export function randomId(length: number, alphabet = ALNUM): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += alphabet[byte % alphabet.length];
  return out;
}

/** Splits text into deltas of `size` characters (code points, so surrogate pairs stay whole). */
export function chunkText(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

/** A rough token count (ceil(chars / 4)), for the running counts of a stream's partial chunks. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** The prompt as an upstream bills it: all its text (tool definitions and calls included) and its message count. */
export interface PromptText {
  text: string;
  messages: number;
}

// ---------------------------------------------------------------------------------------------
// Scenario parsing (directives and programmatic scenarios share the same checks)

const FINISHES: readonly CanonicalFinish[] = ['stop', 'length', 'tool_calls', 'content_filter'];
const COUNT_FIELDS = ['chunkSize', 'delayMs', 'chunkDelayMs', 'disconnectAfterEvents', 'malformedAfterEvents', 'hangAfterEvents', 'audioChunkBytes'] as const;

function nonNegativeInt(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw new ScenarioError(`${name} must be a non-negative integer`);
  return value;
}

/** Checks an untrusted value (a directive) and returns it as a Scenario, or throws ScenarioError. */
export function parseScenario(value: unknown): Scenario {
  if (!isRecord(value)) throw new ScenarioError('a scenario must be a JSON object');
  const known = new Set<string>(['text', 'toolCalls', 'finish', 'usage', 'error', 'errorAfterEvents', 'malformedBody', ...COUNT_FIELDS]);
  for (const key of Object.keys(value)) if (!known.has(key)) throw new ScenarioError(`unknown scenario field "${key}"`);
  const scenario: Scenario = {};
  if (value.text !== undefined) {
    if (typeof value.text !== 'string') throw new ScenarioError('text must be a string');
    scenario.text = value.text;
  }
  if (value.toolCalls !== undefined) {
    if (!Array.isArray(value.toolCalls)) throw new ScenarioError('toolCalls must be an array');
    scenario.toolCalls = value.toolCalls.map((call: unknown, i) => {
      if (!isRecord(call) || typeof call.name !== 'string' || !call.name) throw new ScenarioError(`toolCalls[${i}].name must be a non-empty string`);
      const args = call.arguments ?? {};
      if (typeof args !== 'string' && !isRecord(args)) throw new ScenarioError(`toolCalls[${i}].arguments must be an object or a string`);
      if (call.id !== undefined && typeof call.id !== 'string') throw new ScenarioError(`toolCalls[${i}].id must be a string`);
      const parsed: SimToolCall = { name: call.name, arguments: args };
      if (typeof call.id === 'string') parsed.id = call.id;
      return parsed;
    });
  }
  if (value.finish !== undefined) {
    if (!FINISHES.includes(value.finish as CanonicalFinish)) throw new ScenarioError(`finish must be one of ${FINISHES.join(', ')}`);
    scenario.finish = value.finish as CanonicalFinish;
  }
  if (value.usage !== undefined) {
    if (value.usage === 'omit') scenario.usage = 'omit';
    else if (isRecord(value.usage)) {
      const u = value.usage;
      const usage: SimUsage = { input: nonNegativeInt(u.input, 'usage.input'), output: nonNegativeInt(u.output, 'usage.output') };
      for (const key of ['cacheRead', 'cacheWrite', 'reasoning'] as const) {
        if (u[key] !== undefined) usage[key] = nonNegativeInt(u[key], `usage.${key}`);
      }
      scenario.usage = usage;
    } else throw new ScenarioError('usage must be an object or "omit"');
  }
  for (const key of COUNT_FIELDS) {
    if (value[key] !== undefined) scenario[key] = nonNegativeInt(value[key], key);
  }
  if (scenario.chunkSize === 0) throw new ScenarioError('chunkSize must be at least 1');
  if (scenario.audioChunkBytes === 0) throw new ScenarioError('audioChunkBytes must be at least 1');
  if (value.malformedBody !== undefined) {
    if (typeof value.malformedBody !== 'boolean') throw new ScenarioError('malformedBody must be a boolean');
    scenario.malformedBody = value.malformedBody;
  }
  if (value.error !== undefined) {
    const e = value.error;
    if (!isRecord(e) || typeof e.status !== 'number' || !Number.isInteger(e.status) || e.status < 400 || e.status > 599) {
      throw new ScenarioError('error.status must be an HTTP error status (400-599)');
    }
    scenario.error = { status: e.status };
    if (e.message !== undefined) {
      if (typeof e.message !== 'string') throw new ScenarioError('error.message must be a string');
      scenario.error.message = e.message;
    }
    if (e.retryAfterSeconds !== undefined) scenario.error.retryAfterSeconds = nonNegativeInt(e.retryAfterSeconds, 'error.retryAfterSeconds');
    if (e.code !== undefined) {
      if (typeof e.code !== 'string') throw new ScenarioError('error.code must be a string');
      scenario.error.code = e.code;
    }
  }
  if (value.errorAfterEvents !== undefined) {
    const e = value.errorAfterEvents;
    if (!isRecord(e)) throw new ScenarioError('errorAfterEvents must be an object');
    scenario.errorAfterEvents = { events: nonNegativeInt(e.events, 'errorAfterEvents.events') };
    if (e.message !== undefined) {
      if (typeof e.message !== 'string') throw new ScenarioError('errorAfterEvents.message must be a string');
      scenario.errorAfterEvents.message = e.message;
    }
  }
  return scenario;
}

export const DIRECTIVE_MARKER = 'SIM:';

/**
 * Looks for a `SIM:` directive in a user message text. Returns undefined when there is none;
 * throws ScenarioError when the rest of the text after `SIM:` is not a valid scenario object.
 */
export function parseDirective(text: string): Scenario | undefined {
  const at = text.indexOf(DIRECTIVE_MARKER);
  if (at < 0) return undefined;
  const rest = text.slice(at + DIRECTIVE_MARKER.length).trim();
  let value: unknown;
  try {
    value = JSON.parse(rest);
  } catch (error) {
    throw new ScenarioError(`SIM directive is not valid JSON: ${(error as Error).message}`);
  }
  return parseScenario(value);
}

// ---------------------------------------------------------------------------------------------
// Resolving a scenario into the reply a family renders

export function defaultText(family: Family, model: string): string {
  return `Hello from the ${family} simulator (model ${model}).`;
}

function toolArguments(args: Record<string, unknown> | string): { json: string; object: Record<string, unknown> } {
  if (typeof args !== 'string') return { json: JSON.stringify(args), object: args };
  let object: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(args);
    if (isRecord(parsed)) object = parsed;
  } catch {
    // a deliberately broken arguments string: OpenAI passes it through, the others get {}
  }
  return { json: args, object };
}

/**
 * Turns a scenario into concrete reply data. Text defaults to the deterministic greeting, except
 * when the scenario has tool calls (then there is no text unless `text` is given).
 */
export function resolveReply(scenario: Scenario, family: Family, model: string, prompt: PromptText): Reply {
  const toolCalls: ReplyToolCall[] = (scenario.toolCalls ?? []).map((call) => {
    const { json, object } = toolArguments(call.arguments);
    const resolved: ReplyToolCall = { name: call.name, argumentsJson: json, argumentsObject: object };
    if (call.id !== undefined) resolved.id = call.id;
    return resolved;
  });
  const text = scenario.text ?? (toolCalls.length > 0 ? '' : defaultText(family, model));
  const finish = scenario.finish ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
  let usage: ResolvedUsage | null;
  if (scenario.usage === 'omit') usage = null;
  else if (scenario.usage) {
    const u = scenario.usage;
    usage = { input: u.input, output: u.output, cacheRead: u.cacheRead ?? 0, cacheWrite: u.cacheWrite ?? 0, reasoning: u.reasoning ?? 0 };
  } else {
    const toolText = toolCalls.map((call) => call.name + call.argumentsJson).join('');
    usage = {
      input: promptTokens(family, model, prompt),
      output: completionTokens(family, model, text + toolText),
      cacheRead: 0,
      cacheWrite: 0,
      reasoning: 0,
    };
  }
  return { text, toolCalls, finish, usage, chunkSize: scenario.chunkSize ?? 4 };
}
