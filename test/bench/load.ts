import { statSync } from 'node:fs';
import { Pool } from 'undici';
import { cpuMicros } from './procs.js';

/**
 * Load generation: one call (with its checks), a closed loop (fixed concurrency, back to back:
 * the maximum rate) and an open loop (requests scheduled on a clock at a fixed rate; latency
 * counted from the scheduled send time, so queueing anywhere shows up in it).
 */

export type WorkloadId = 'chat' | 'stream' | 'messages' | 'embeddings' | 'speech' | 'cache-hit' | 'cache-miss' | 'embeddings-float';

export interface Workload {
  label: string;
  /** Answered as a stream: its time to first content (TTFT, or TTFB for audio) is measured. */
  stream: boolean;
  /** What that first-content time is called: a text delta (TTFT) or the first audio byte (TTFB). */
  first?: 'TTFT' | 'TTFB';
  /** The gateway's model id (direct to the simulator: without its provider prefix). */
  model: string;
  /** A media endpoint (embeddings, speech). */
  media?: boolean;
  /** Left out of a full run; runs when named in --only. */
  optIn?: boolean;
  /**
   * A response-cache workload: run against the cache-enabled gateway (`gateway-cache`), the
   * plain `gateway` and direct, not the floor. `hit`: the same request every time (every call
   * after the first is an exact hit); `miss`: a unique prompt per call (every call misses,
   * calls the upstream and stores its answer).
   */
  cache?: 'hit' | 'miss';
}

export const WORKLOADS: Record<WorkloadId, Workload> = {
  chat: { label: 'chat completions, JSON', stream: false, model: 'openai/gpt-4o-mini' },
  stream: { label: 'chat completions, stream', stream: true, first: 'TTFT', model: 'openai/gpt-4o-mini' },
  messages: { label: 'messages stream (translated)', stream: true, first: 'TTFT', model: 'openai/gpt-4o-mini' },
  embeddings: { label: 'embeddings, one sentence, base64', stream: false, model: 'openai/text-embedding-3-small', media: true },
  speech: { label: 'speech, mp3 streamed', stream: true, first: 'TTFB', model: 'openai/tts-1', media: true },
  'cache-hit': { label: 'response cache: exact hit (chat JSON, one request repeated)', stream: false, model: 'openai/gpt-4o-mini', cache: 'hit' },
  'cache-miss': { label: 'response cache: miss and store (chat JSON, unique prompt per call)', stream: false, model: 'openai/gpt-4o-mini', cache: 'miss' },
  // The float form: a JSON array of 1536 numbers each way (several times the bytes of the base64 string).
  'embeddings-float': { label: 'embeddings, one sentence, float', stream: false, model: 'openai/text-embedding-3-small', media: true, optIn: true },
};

/** `portkey`: Portkey's open-source gateway (--portkey), given the simulator as a custom OpenAI host. */
export type TargetKind = 'direct' | 'floor' | 'gateway' | 'portkey';
type Format = 'chat-json' | 'chat-sse' | 'messages-sse' | 'embeddings-json' | 'audio';

/** Whether a format's answer arrives in pieces whose first one is timed (TTFT / TTFB). */
const streamed = (format: Format): boolean => format !== 'chat-json' && format !== 'embeddings-json';

/** One request shape: path, serialized body and how to check the answer. */
export interface Spec {
  path: string;
  body: string;
  format: Format;
  anthropic: boolean;
  /** embeddings-json: one vector of this length, in this encoding. */
  embedding?: { dimensions: number; encoding: 'base64' | 'float' };
  /** audio: this content type and exactly this many bytes. */
  audio?: { contentType: string; bytes: number };
  /** A body per call (a unique prompt each time); `body` is then only the first one's shape. */
  nextBody?: () => string;
}

export interface Counts {
  /** 200 with a well-formed body or stream. */
  ok: number;
  failed: number;
  /** Aborted by the harness after content arrived (the gateway bills these as 499). */
  abortedReceiving: number;
  /** Aborted by the harness before any content arrived. */
  abortedEarly: number;
  /** The first error messages, by message. */
  errors: Record<string, number>;
}

export interface Target {
  id: string;
  kind: TargetKind;
  origin: string;
  /** The process that serves it (the simulator for direct). */
  pid: number;
  pool: Pool;
  counts: Counts;
  /** Request headers, one set per key, used round robin. */
  headerSets: Array<Record<string, string>>;
  anthropicHeaderSets: Array<Record<string, string>>;
  next: number;
  /** Completed calls by their `x-gateway-cache` answer header (exact, semantic, miss, bypass). */
  cacheOutcomes: Record<string, number>;
}

export function makeTarget(id: string, kind: TargetKind, origin: string, pid: number, keys: string[], connections = 64, extraHeaders: Record<string, string> = {}): Target {
  const base = (key: string): Record<string, string> => ({ 'content-type': 'application/json', authorization: `Bearer ${key}`, ...extraHeaders });
  return {
    id,
    kind,
    origin,
    pid,
    pool: new Pool(origin, { connections, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000, headersTimeout: 30_000, bodyTimeout: 30_000 }),
    counts: { ok: 0, failed: 0, abortedReceiving: 0, abortedEarly: 0, errors: {} },
    headerSets: keys.map(base),
    anthropicHeaderSets: keys.map((key) => ({ ...base(key), 'anthropic-version': '2023-06-01' })),
    next: 0,
    cacheOutcomes: {},
  };
}

export const PROMPT = 'Say hello to the benchmark.';
/** One sentence to embed (the simulator computes a vector per word: keep it short). */
export const EMBEDDING_INPUT = 'The benchmark measures what the gateway adds to one embedding call.';
export const EMBEDDING_DIMENSIONS = 1536;
/** The text to speak (billed per character: 64 of them). */
export const SPEECH_INPUT = 'Hello from the benchmark: a short sentence, spoken as mp3 audio.';
/** The simulator answers every mp3 speech request with this fixture (4436 bytes, two chunks of at most 4096). */
export const SPEECH_BYTES = statSync(new URL('../fixtures/audio/speech.mp3', import.meta.url)).size;

/**
 * The request a target gets for a workload; `directive` appends a `SIM: {...}` scenario (chat
 * workloads only: media requests carry no prompt, the simulator's default shape answers them).
 */
export function specFor(target: Target, workload: WorkloadId, directive?: object): Spec {
  const id = WORKLOADS[workload].model;
  const model = target.kind === 'direct' || target.kind === 'portkey' ? id.slice(id.indexOf('/') + 1) : id;
  if (workload === 'embeddings' || workload === 'embeddings-float') {
    const encoding = workload === 'embeddings' ? 'base64' : 'float';
    return {
      path: '/v1/embeddings',
      body: JSON.stringify({ model, input: EMBEDDING_INPUT, encoding_format: encoding }),
      format: 'embeddings-json',
      anthropic: false,
      embedding: { dimensions: EMBEDDING_DIMENSIONS, encoding },
    };
  }
  if (workload === 'speech') {
    return {
      path: '/v1/audio/speech',
      body: JSON.stringify({ model, input: SPEECH_INPUT, voice: 'alloy', response_format: 'mp3' }),
      format: 'audio',
      anthropic: false,
      audio: { contentType: 'audio/mpeg', bytes: SPEECH_BYTES },
    };
  }
  const content = directive ? `${PROMPT}\nSIM: ${JSON.stringify(directive)}` : PROMPT;
  const messages = [{ role: 'user', content }];
  if (WORKLOADS[workload].cache === 'miss') {
    // A prompt no call has sent before (per target: a counter and this run's random tag).
    const tag = Math.random().toString(36).slice(2, 8);
    let n = 0;
    const bodyOf = (i: number): string => JSON.stringify({ model, messages: [{ role: 'user', content: `${PROMPT} (call ${tag}-${i})` }] });
    return { path: '/v1/chat/completions', body: bodyOf(0), format: 'chat-json', anthropic: false, nextBody: () => bodyOf(n++) };
  }
  if (workload === 'messages' && target.kind === 'gateway') {
    return { path: '/v1/messages', body: JSON.stringify({ model, max_tokens: 1024, stream: true, messages }), format: 'messages-sse', anthropic: true };
  }
  const stream = WORKLOADS[workload].stream;
  return {
    path: '/v1/chat/completions',
    body: JSON.stringify(stream ? { model, messages, stream: true } : { model, messages }),
    format: stream ? 'chat-sse' : 'chat-json',
    anthropic: false,
  };
}

export interface Outcome {
  ok: boolean;
  /** performance.now() at the first content chunk (audio: its first byte; JSON: at the end). */
  first: number;
  end: number;
  /** Content chunks (text deltas) received; audio: network reads that carried bytes. */
  chunks: number;
  error?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Called at the first content chunk. */
  onFirst?: () => void;
  /** Called per network read of a stream with the number of content chunks it held. */
  onRead?: (contentChunks: number) => void;
}

function countError(target: Target, message: string): void {
  const key = message.slice(0, 160);
  if (Object.keys(target.counts.errors).length < 20 || key in target.counts.errors) target.counts.errors[key] = (target.counts.errors[key] ?? 0) + 1;
}

/** One call with its checks; every outcome is counted on the target. */
export async function call(target: Target, spec: Spec, options: CallOptions = {}): Promise<Outcome> {
  const sets = spec.anthropic ? target.anthropicHeaderSets : target.headerSets;
  const headers = sets[target.next++ % sets.length];
  let chunks = 0;
  let first = NaN;
  const failed = (error: string): Outcome => {
    target.counts.failed += 1;
    countError(target, error);
    return { ok: false, first, end: performance.now(), chunks, error };
  };
  try {
    const body = spec.nextBody ? spec.nextBody() : spec.body;
    const res = await target.pool.request({ method: 'POST', path: spec.path, headers, body, signal: options.signal ?? null });
    if (res.statusCode !== 200) return failed(`HTTP ${res.statusCode}: ${(await res.body.text()).slice(0, 120)}`);
    if (spec.format === 'chat-json') {
      const json = JSON.parse(await res.body.text());
      const end = performance.now();
      const content = json?.choices?.[0]?.message?.content;
      if (typeof content !== 'string' || content === '') return failed('malformed JSON answer (no choices[0].message.content)');
      target.counts.ok += 1;
      const cached = res.headers['x-gateway-cache'];
      if (typeof cached === 'string') target.cacheOutcomes[cached] = (target.cacheOutcomes[cached] ?? 0) + 1;
      return { ok: true, first: end, end, chunks: 1 };
    }
    if (spec.format === 'embeddings-json') {
      const json = JSON.parse(await res.body.text());
      const end = performance.now();
      const problem = embeddingProblem(json, spec.embedding ?? { dimensions: EMBEDDING_DIMENSIONS, encoding: 'base64' });
      if (problem) return failed(`malformed embeddings answer (${problem})`);
      target.counts.ok += 1;
      return { ok: true, first: end, end, chunks: 1 };
    }
    if (spec.format === 'audio') {
      const expected = spec.audio ?? { contentType: 'audio/mpeg', bytes: SPEECH_BYTES };
      const type = String(res.headers['content-type'] ?? '');
      if (type.split(';')[0]?.trim() !== expected.contentType) {
        await res.body.dump();
        return failed(`audio answer of content-type "${type}", expected ${expected.contentType}`);
      }
      let bytes = 0;
      for await (const piece of res.body as AsyncIterable<Buffer>) {
        if (piece.length === 0) continue;
        if (bytes === 0) {
          first = performance.now();
          options.onFirst?.();
        }
        bytes += piece.length;
        chunks += 1;
        options.onRead?.(1);
      }
      const end = performance.now();
      if (bytes !== expected.bytes) return failed(`audio of ${bytes} bytes, expected ${expected.bytes}`);
      target.counts.ok += 1;
      return { ok: true, first, end, chunks };
    }
    const decoder = new TextDecoder();
    let buffer = '';
    let done = false;
    let error: string | undefined;
    const onEvent = (data: string): void => {
      if (spec.format === 'chat-sse') {
        if (data === '[DONE]') {
          done = true;
          return;
        }
        const json = JSON.parse(data);
        if (json.error) error = `stream error: ${JSON.stringify(json.error).slice(0, 120)}`;
        const content = json.choices?.[0]?.delta?.content;
        if (typeof content === 'string' && content !== '') chunks += 1;
      } else {
        const json = JSON.parse(data);
        if (json.type === 'content_block_delta' && json.delta?.type === 'text_delta') chunks += 1;
        else if (json.type === 'message_stop') done = true;
        else if (json.type === 'error') error = `stream error: ${JSON.stringify(json.error).slice(0, 120)}`;
      }
    };
    for await (const piece of res.body as AsyncIterable<Buffer>) {
      const before = chunks;
      buffer += decoder.decode(piece, { stream: true });
      let at: number;
      while ((at = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        for (const line of block.split('\n')) if (line.startsWith('data:')) onEvent(line.slice(line[5] === ' ' ? 6 : 5));
      }
      if (chunks > before) {
        if (before === 0) {
          first = performance.now();
          options.onFirst?.();
        }
        options.onRead?.(chunks - before);
      }
    }
    const end = performance.now();
    if (error) return failed(error);
    if (!done) return failed('stream ended without its terminator');
    if (chunks === 0 || buffer.trim() !== '') return failed('malformed stream (no content, or a partial event)');
    target.counts.ok += 1;
    return { ok: true, first, end, chunks };
  } catch (error) {
    if (options.signal?.aborted) {
      if (chunks > 0) target.counts.abortedReceiving += 1;
      else target.counts.abortedEarly += 1;
      return { ok: false, first, end: performance.now(), chunks, error: 'aborted' };
    }
    return failed(`${(error as Error).name}: ${(error as Error).message}`);
  }
}

/** What is wrong with an embeddings answer (undefined: one vector of the right length and encoding, usage counted). */
function embeddingProblem(json: any, expected: { dimensions: number; encoding: 'base64' | 'float' }): string | undefined {
  if (json?.object !== 'list' || !Array.isArray(json.data)) return 'not a list';
  if (json.data.length !== 1) return `${json.data.length} data items, expected 1`;
  const item = json.data[0];
  if (item?.object !== 'embedding' || item.index !== 0) return 'data[0] is not embedding 0';
  const vector: unknown = item.embedding;
  if (expected.encoding === 'base64') {
    if (typeof vector !== 'string') return 'embedding is not a base64 string';
    // float32 little-endian: 4 bytes per dimension (the length, without decoding).
    const length = Buffer.byteLength(vector, 'base64') / 4;
    if (length !== expected.dimensions) return `${length} dimensions, expected ${expected.dimensions}`;
  } else {
    if (!Array.isArray(vector)) return 'embedding is not an array';
    if (vector.length !== expected.dimensions) return `${vector.length} dimensions, expected ${expected.dimensions}`;
    if (!vector.every((v) => typeof v === 'number' && Number.isFinite(v))) return 'embedding has a non-number';
  }
  const tokens: unknown = json.usage?.prompt_tokens;
  if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens <= 0) return 'no usage.prompt_tokens';
  return undefined;
}

export interface ClosedResult {
  rps: number;
  completed: number;
  errors: number;
  /** CPU µs per request of the target process over the measured window (at saturation). */
  cpuUsPerReq: number;
}

/** `concurrency` workers back to back; counts completions after `warmMs`, for `durMs`. */
export async function closedLoop(target: Target, spec: Spec, concurrency: number, warmMs: number, durMs: number): Promise<ClosedResult> {
  const start = performance.now();
  const from = start + warmMs;
  const until = from + durMs;
  let counted = 0;
  let errors = 0;
  let cpuFrom = NaN;
  let cpuUntil = NaN;
  const t1 = setTimeout(() => (cpuFrom = cpuMicros(target.pid)), warmMs);
  const t2 = setTimeout(() => (cpuUntil = cpuMicros(target.pid)), warmMs + durMs);
  const worker = async (): Promise<void> => {
    while (performance.now() < until) {
      const outcome = await call(target, spec);
      const now = performance.now();
      if (!outcome.ok) errors += 1;
      else if (now >= from && now <= until) counted += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  clearTimeout(t1);
  clearTimeout(t2);
  if (Number.isNaN(cpuUntil)) cpuUntil = cpuMicros(target.pid);
  // Its deferred work stays out of the next target's window (the window above is steady state).
  await settle([target.pid]);
  return { rps: counted / (durMs / 1000), completed: counted, errors, cpuUsPerReq: (cpuUntil - cpuFrom) / Math.max(1, counted) };
}

export interface OpenResult {
  rate: number;
  sent: number;
  errors: number;
  /** Milliseconds from the scheduled send time. */
  latency: number[];
  ttft: number[];
  chunkCounts: Record<number, number>;
  /** CPU µs per request, by pid (target, simulator), over the phase. */
  cpuUsPerReq: Record<number, number>;
  /** How late the harness sent, p99 (ms): its own lag, included in every target's latency alike. */
  sendLagP99: number;
}

/** `rate` requests per second on a clock for `durMs`; waits for all of them to finish. */
export async function openLoop(target: Target, spec: Spec, rate: number, durMs: number, cpuPids: number[]): Promise<OpenResult> {
  const n = Math.max(1, Math.round((rate * durMs) / 1000));
  const interval = 1000 / rate;
  const latency: number[] = [];
  const ttft: number[] = [];
  const lags: number[] = [];
  const chunkCounts: Record<number, number> = {};
  let errors = 0;
  const inflight: Array<Promise<void>> = [];
  const cpu0 = cpuPids.map(cpuMicros);
  const t0 = performance.now() + 2;
  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (next < n && t0 + next * interval <= now) {
        const scheduled = t0 + next * interval;
        next += 1;
        lags.push(now - scheduled);
        inflight.push(
          call(target, spec).then((outcome) => {
            if (!outcome.ok) {
              errors += 1;
              return;
            }
            latency.push(outcome.end - scheduled);
            if (streamed(spec.format)) ttft.push(outcome.first - scheduled);
            chunkCounts[outcome.chunks] = (chunkCounts[outcome.chunks] ?? 0) + 1;
          }),
        );
      }
      if (next >= n) resolve();
      else setTimeout(tick, Math.max(0, t0 + next * interval - performance.now()));
    };
    setTimeout(tick, 2);
  });
  await Promise.all(inflight);
  // The calls' deferred work (settlement batches, checkpoints, log flushes) is theirs.
  await settle(cpuPids);
  const cpuUsPerReq: Record<number, number> = {};
  cpuPids.forEach((pid, i) => (cpuUsPerReq[pid] = (cpuMicros(pid) - (cpu0[i] as number)) / n));
  const sorted = (values: number[]): number[] => values.sort((a, b) => a - b);
  return { rate, sent: n, errors, latency: sorted(latency), ttft: sorted(ttft), chunkCounts, cpuUsPerReq, sendLagP99: percentile(sorted(lags), 0.99) };
}

/**
 * Waits until the processes' CPU stops moving (two 100 ms samples alike, at most 1 s), so that
 * a target's deferred work (settlement batches, WAL checkpoints, log flushes) is counted as its
 * own and kept out of the next target's measured window (issue 32).
 */
export async function settle(pids: number[], maxMs = 1000): Promise<void> {
  let last = pids.map(cpuMicros).join();
  for (let waited = 0; waited < maxMs; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = pids.map(cpuMicros).join();
    if (now === last) return;
    last = now;
  }
}

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

export function median(values: number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (finite.length === 0) return NaN;
  const mid = finite.length >> 1;
  return finite.length % 2 ? (finite[mid] as number) : ((finite[mid - 1] as number) + (finite[mid] as number)) / 2;
}
