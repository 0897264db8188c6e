import { FormData, request, type Dispatcher } from 'undici';
import { sampleAudio } from '../support/simulator/audio.js';

/**
 * The soak's calls: every kind of call a client makes (chat in three formats, JSON and
 * streamed, cache hits, media, reads), some on "faulty" models whose upstream fails as the
 * simulator is told (a `SIM:` directive in the prompt), some abandoned by their client. Each
 * call ends as an Outcome: what the client saw, which the books are checked against.
 */

/** The families whose chat models take traffic; each has a clean model and a faulty one. */
export const FAMILIES = ['openai', 'anthropic', 'gemini'] as const;
export type Family = (typeof FAMILIES)[number];
export const CLEAN_MODEL: Record<Family, string> = { openai: 'openai/gpt-4o-mini', anthropic: 'anthropic/claude-haiku-4-5', gemini: 'gemini/gemini-2.5-flash' };
/** Models served by the soak's faulty providers (same simulator, short timeouts): their rests touch no clean call. */
export const FAULTY_MODEL: Record<Family, string> = { openai: 'faulty-openai/gpt-4o-mini', anthropic: 'faulty-anthropic/claude-haiku-4-5', gemini: 'faulty-gemini/gemini-2.5-flash' };

/** Upstream faults, as simulator scenarios: each is an upstream's failure, never the client's. */
export const FAULTS: Record<string, { stream: Record<string, unknown>; json: Record<string, unknown> }> = {
  'status 500': { stream: { error: { status: 500 } }, json: { error: { status: 500 } } },
  'status 429 + retry-after': { stream: { error: { status: 429, retryAfterSeconds: 1 } }, json: { error: { status: 429, retryAfterSeconds: 1 } } },
  'connection cut': { stream: { disconnectAfterEvents: 3 }, json: { disconnectAfterEvents: 0 } },
  'stall past the idle timeout': { stream: { hangAfterEvents: 2 }, json: { hangAfterEvents: 0 } },
  'malformed chunk': { stream: { malformedAfterEvents: 2 }, json: { malformedBody: true } },
  'error event mid-stream': { stream: { errorAfterEvents: { events: 3 } }, json: { error: { status: 502 } } },
  'slow first byte': { stream: { delayMs: 300 }, json: { delayMs: 300 } },
};
export const FAULT_NAMES = Object.keys(FAULTS);

export type Kind =
  | 'chat.completions'
  | 'chat.completions stream'
  | 'responses'
  | 'responses stream'
  | 'messages'
  | 'messages stream'
  | 'cache hit'
  | 'cache hit stream'
  | 'embeddings'
  | 'audio.speech'
  | 'audio.transcriptions'
  | 'images'
  | 'count_tokens'
  | 'models';

/** Each kind's share of the calls. */
export const MIX: readonly [Kind, number][] = [
  ['chat.completions', 14],
  ['chat.completions stream', 14],
  ['responses', 8],
  ['responses stream', 8],
  ['messages', 8],
  ['messages stream', 8],
  ['cache hit', 6],
  ['cache hit stream', 4],
  ['embeddings', 8],
  ['audio.speech', 4],
  ['audio.transcriptions', 4],
  ['images', 3],
  ['count_tokens', 3],
  ['models', 2],
];

/** What one call is: chosen before it is sent. */
export interface Plan {
  kind: Kind;
  daemon: number;
  key: { key: string; keyId: string; accountId: string };
  model: string;
  fault?: string;
  /** The client leaves: before the answer's headers, or after its first body bytes. */
  abort?: 'early' | 'mid-body';
}

/** What the client saw. */
export interface Outcome {
  plan: Plan;
  requestId?: string;
  /** undefined: no answer (the client left before it). */
  status?: number;
  /** The answer arrived whole: a JSON body, or a stream up to its end event. */
  completed: boolean;
  /** From the error envelope. */
  errorReason?: string;
  errorType?: string;
  /** A transport error the client did not cause. */
  transportError?: string;
  ms: number;
}

/** Fixed prompts repeated for cache hits (the first call of each misses and fills the cache). */
const CACHED_PROMPTS = Array.from({ length: 12 }, (_, i) => `Soak cache prompt number ${i}: what is ${i} plus ${i}?`);

const MAX_TOKENS = 48;

function prompt(seq: number, fault: Record<string, unknown> | undefined): string {
  const text = `Soak call ${seq}: say something short about the number ${seq % 97}.`;
  return fault ? `${text} SIM: ${JSON.stringify(fault)}` : text;
}

/** The request for a plan: path, headers and body. */
export function requestFor(plan: Plan, seq: number): { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string | FormData; stream: boolean; terminal?: string } {
  const headers: Record<string, string> = { authorization: `Bearer ${plan.key.key}` };
  const json = (body: unknown): string => {
    headers['content-type'] = 'application/json';
    return JSON.stringify(body);
  };
  const stream = plan.kind.endsWith('stream');
  const scenario = plan.fault ? FAULTS[plan.fault]?.[stream ? 'stream' : 'json'] : undefined;
  const text = plan.kind.startsWith('cache hit') ? (CACHED_PROMPTS[seq % CACHED_PROMPTS.length] as string) : prompt(seq, scenario);
  switch (plan.kind) {
    case 'chat.completions':
    case 'chat.completions stream':
    case 'cache hit':
    case 'cache hit stream':
      return { method: 'POST', path: '/v1/chat/completions', headers, stream, terminal: 'data: [DONE]', body: json({ model: plan.model, messages: [{ role: 'user', content: text }], max_tokens: MAX_TOKENS, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }) };
    case 'responses':
    case 'responses stream':
      return { method: 'POST', path: '/v1/responses', headers, stream, terminal: 'event: response.completed', body: json({ model: plan.model, input: text, max_output_tokens: MAX_TOKENS, stream }) };
    case 'messages':
    case 'messages stream':
      headers['anthropic-version'] = '2023-06-01';
      return { method: 'POST', path: '/v1/messages', headers, stream, terminal: 'event: message_stop', body: json({ model: plan.model, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: text }], stream }) };
    case 'embeddings':
      return { method: 'POST', path: '/v1/embeddings', headers, stream: false, body: json({ model: plan.model, input: [text, `second input ${seq}`] }) };
    case 'audio.speech':
      return { method: 'POST', path: '/v1/audio/speech', headers, stream: false, body: json({ model: plan.model, input: text, voice: 'alloy', response_format: 'mp3' }) };
    case 'audio.transcriptions': {
      const form = new FormData();
      form.set('model', plan.model);
      form.set('file', new Blob([sampleAudio('wav')], { type: 'audio/wav' }), 'soak.wav');
      return { method: 'POST', path: '/v1/audio/transcriptions', headers, stream: false, body: form };
    }
    case 'images':
      return { method: 'POST', path: '/v1/images/generations', headers, stream: false, body: json({ model: plan.model, prompt: text, n: 1, size: '1024x1024', response_format: 'b64_json' }) };
    case 'count_tokens':
      headers['anthropic-version'] = '2023-06-01';
      return { method: 'POST', path: '/v1/messages/count_tokens', headers, stream: false, body: json({ model: plan.model, messages: [{ role: 'user', content: text }] }) };
    case 'models':
      return { method: 'GET', path: '/v1/models', headers, stream: false };
  }
}

/** The model a kind of call uses (chat kinds: the family's clean or faulty one). */
export function modelFor(kind: Kind, family: Family, faulty: boolean): string {
  switch (kind) {
    case 'embeddings':
      return family === 'gemini' ? 'gemini/gemini-embedding-001' : 'openai/text-embedding-3-small';
    case 'audio.speech':
      return 'openai/tts-1';
    case 'audio.transcriptions':
      return 'openai/whisper-1';
    case 'images':
      return 'openai/gpt-image-1';
    case 'count_tokens':
      return CLEAN_MODEL[family];
    case 'cache hit':
    case 'cache hit stream':
      return family === 'anthropic' ? CLEAN_MODEL.anthropic : CLEAN_MODEL.openai;
    default:
      return faulty ? FAULTY_MODEL[family] : CLEAN_MODEL[family];
  }
}

/** Whether a kind can carry an upstream fault (chat kinds other than cache hits). */
export function faultable(kind: Kind): boolean {
  return !kind.startsWith('cache hit') && ['chat.completions', 'responses', 'messages'].includes(kind.replace(' stream', ''));
}

/** Sends one call and reads its answer as its client would (or leaves, as the plan says). */
export async function send(baseUrl: string, dispatcher: Dispatcher, plan: Plan, seq: number): Promise<Outcome> {
  const started = performance.now();
  const spec = requestFor(plan, seq);
  const controller = new AbortController();
  const outcome: Outcome = { plan, completed: false, ms: 0 };
  let earlyTimer: NodeJS.Timeout | undefined;
  if (plan.abort === 'early') earlyTimer = setTimeout(() => controller.abort(), 1 + (seq % 20));
  try {
    const res = await request(`${baseUrl}${spec.path}`, { method: spec.method, headers: spec.headers, body: spec.body, dispatcher, signal: controller.signal });
    clearTimeout(earlyTimer);
    outcome.status = res.statusCode;
    const id = res.headers['x-request-id'];
    outcome.requestId = typeof id === 'string' ? id : undefined;
    if (plan.abort === 'mid-body' && res.statusCode === 200) {
      // Leave after the first bytes of the body.
      for await (const _chunk of res.body) break;
      controller.abort();
      return outcome;
    }
    const body = await res.body.text();
    if (res.statusCode >= 400) {
      try {
        const parsed = JSON.parse(body) as { error?: { reason?: string; type?: string } };
        outcome.errorReason = parsed.error?.reason;
        outcome.errorType = parsed.error?.type;
      } catch {
        outcome.errorReason = 'no JSON error body';
      }
      return outcome;
    }
    if (spec.stream) outcome.completed = body.includes(spec.terminal as string) && !/^event: error$|"type":"error"|"error":\{/m.test(body);
    else outcome.completed = res.statusCode === 200 && body.length > 0;
  } catch (error) {
    clearTimeout(earlyTimer);
    if (!controller.signal.aborted) outcome.transportError = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  } finally {
    outcome.ms = performance.now() - started;
  }
  return outcome;
}
