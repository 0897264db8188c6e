import { awsCredentials, handleBedrock, type AwsCredentials } from './bedrock.js';
import type { AzureCall } from './azure.js';
import { throughClouds } from './clouds.js';
import { VertexAccount } from './vertex.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { agentScenario } from './agent.js';
import { handleAnthropic } from './anthropic.js';
import { handleAnthropicCount } from './anthropic-count.js';
import { AnthropicPromptCache } from './anthropic-cache.js';
import { handleDeepgram } from './deepgram.js';
import { handleGemini } from './gemini.js';
import { isMultipart, multipartRecord, parseMultipart, type Multipart } from './multipart.js';
import { handleOpenAI } from './openai.js';
import { handleOpenAIResponses } from './openai-responses.js';
import type { Family, RecordedRequest, Scenario, StreamPlan } from './scenario.js';

export type { Family, RecordedRequest, Scenario, SimToolCall, SimUsage } from './scenario.js';

/**
 * A real HTTP server that speaks the OpenAI Chat Completions and Responses (openai-responses.ts), Anthropic Messages and Gemini
 * generateContent wire formats, driven by scripted scenarios (see scenario.ts), Anthropic's
 * prompt caching included (anthropic-cache.ts; `promptCache.advance(ms)` to expire entries); and the media
 * endpoints of OpenAI (also under Groq's /openai/v1), Gemini and Deepgram (openai-media.ts,
 * gemini-media.ts, deepgram.ts).
 */

export interface SimulatorOptions {
  apiKey?: string;
  port?: number;
  host?: string;
  /** Bedrock's AWS credentials and region (SigV4, bedrock.ts); defaults: AKIDSIMULATOR00000000, sim-aws-secret-access-key, us-east-1, no session token. */
  aws?: { accessKeyId?: string; secretAccessKey?: string; sessionToken?: string; region?: string };
}

/** A serialized response body. */
export interface Body {
  contentType: string;
  text: string;
}

/** An audio answer: `bytes` are written chunked, `audioChunkBytes` at a time. */
export interface AudioBody {
  contentType: string;
  bytes: Buffer;
}

/** What a family hands back once a request is valid: the scenario-driven part is common. */
export interface Outcome {
  scenario: Scenario;
  stream: boolean;
  headers: Record<string, string>;
  /** The non-streamed answer (status 200). */
  json(): Body;
  /** The streamed answer (when `stream`). */
  plan?(): StreamPlan<string | Buffer>;
  /** An audio answer, written in chunks (takes precedence over `stream`/`json`). */
  audio?(): AudioBody;
  /** `code`: the family's error code, where it has one (OpenAI's `insufficient_quota`). */
  error(status: number, message: string | undefined, code?: string): Body;
}

/** Images handed out as URLs (`/files/images/<id>.png`), served by the simulator; the oldest are forgotten. */
export class ImageStore {
  static readonly MAX_ENTRIES = 1024;
  readonly #images = new Map<string, { width: number; height: number; seed: string }>();

  /** Registers an image of the given size (its pixels derived from `seed`); returns its id. */
  add(width: number, height: number, seed: string): string {
    const id = `img-${randomBytes(12).toString('hex')}`;
    if (this.#images.size >= ImageStore.MAX_ENTRIES) {
      const oldest = this.#images.keys().next().value;
      if (oldest !== undefined) this.#images.delete(oldest);
    }
    this.#images.set(id, { width, height, seed });
    return id;
  }

  get(id: string): { width: number; height: number; seed: string } | undefined {
    return this.#images.get(id);
  }

  clear(): void {
    this.#images.clear();
  }
}

interface SimState {
  apiKey: string;
  url: string;
  images: ImageStore;
  promptCache: AnthropicPromptCache;
  takeScenario(): Scenario;
  /** Keeps the usage the answer reported on the request's record. */
  noteUsage(usage: unknown): void;
}

/** Content types whose bodies are bytes, never JSON: multipart uploads and raw audio. */
export function isBinaryContentType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type.startsWith('multipart/') || type.startsWith('audio/') || type.startsWith('video/') || type === 'application/octet-stream';
}

/** A JSON body cut short, so that it is not valid JSON (scenario.malformedBody). */
export function malformedBody(body: Body): Body {
  if (!/json/i.test(body.contentType)) return body;
  const text = body.text.trimEnd();
  return { contentType: body.contentType, text: text.slice(0, Math.max(1, Math.floor(text.length / 2))) };
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** One request/response pair, with the helpers the family handlers use. */
export class Exchange {
  readonly url: URL;
  /**
   * The parsed JSON body; the raw text when it was not JSON; undefined when empty, and for
   * multipart and binary (audio/*, application/octet-stream) bodies, which are never parsed as JSON.
   */
  readonly body: unknown;
  /** True when a body was sent but was not valid JSON. */
  readonly bodyInvalid: boolean;
  /** The request body's bytes, as received. */
  readonly raw: Buffer;
  /** The parsed multipart/form-data body; undefined when the request is not multipart or not well-formed. */
  readonly multipart: Multipart | undefined;
  readonly signal: AbortSignal;
  readonly apiKey: string;
  /** The simulator's own base URL (for URLs it hands out, e.g. image files). */
  readonly simUrl: string;
  readonly images: ImageStore;
  /** Anthropic's prompt cache (anthropic-cache.ts), shared by every request to this simulator. */
  readonly promptCache: AnthropicPromptCache;
  /** Set when the request came in through Azure's paths (azure.ts): its answers carry Azure's additions. */
  azure: AzureCall | undefined;
  readonly #state: SimState;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    url: URL,
    raw: Buffer,
    signal: AbortSignal,
    state: SimState,
    multipart?: Multipart,
  ) {
    this.url = url;
    this.signal = signal;
    this.#state = state;
    this.apiKey = state.apiKey;
    this.simUrl = state.url;
    this.images = state.images;
    this.promptCache = state.promptCache;
    this.raw = raw;
    this.multipart = multipart;
    let body: unknown;
    let invalid = false;
    if (raw.length > 0 && !isBinaryContentType(req.headers['content-type'])) {
      const text = raw.toString('utf8');
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
        invalid = true;
      }
    }
    this.body = body;
    this.bodyInvalid = invalid;
  }

  /** A single header value (first one when repeated), or undefined. */
  header(name: string): string | undefined {
    const value = this.req.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  }

  /** True once the client went away or the simulator is closing. */
  get gone(): boolean {
    return this.signal.aborted || this.res.destroyed;
  }

  /** Records the usage the answer reports (RecordedRequest.usage), as the family's wire has it. */
  noteUsage(usage: unknown): void {
    this.#state.noteUsage(usage);
  }

  /** The directive scenario when given, otherwise the next queued one, otherwise the default. */
  scenarioFor(directive: Scenario | undefined): Scenario {
    return directive ?? this.#state.takeScenario();
  }

  send(status: number, body: Body, headers: Record<string, string> = {}): void {
    if (this.gone || this.res.headersSent) return;
    this.res.writeHead(status, { ...headers, 'content-type': body.contentType, 'content-length': String(Buffer.byteLength(body.text)) });
    this.res.end(body.text);
  }

  /** Waits `ms`; resolves false when the exchange was aborted meanwhile. */
  sleep(ms: number | undefined): Promise<boolean> {
    if (!ms || ms <= 0) return Promise.resolve(!this.gone);
    return new Promise((resolve) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        this.signal.removeEventListener('abort', onAbort);
        resolve(!this.gone);
      }, ms);
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Sends nothing more until the client goes away or the simulator closes. */
  hang(): Promise<void> {
    if (this.gone) return Promise.resolve();
    return new Promise((resolve) => this.signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  /** Destroys the socket abruptly (no terminator, no clean chunked-encoding end). */
  disconnect(): void {
    this.res.socket?.destroy();
    this.res.destroy();
  }

  /** Plays the scenario-driven part of a valid request: delay, scripted error, JSON or stream, faults. */
  async respond(outcome: Outcome): Promise<void> {
    const { scenario } = outcome;
    if (!(await this.sleep(scenario.delayMs))) return;
    if (scenario.error) {
      const headers = { ...outcome.headers };
      if (scenario.error.retryAfterSeconds !== undefined) headers['retry-after'] = String(scenario.error.retryAfterSeconds);
      // Azure says it to the millisecond as well.
      if (this.azure && scenario.error.retryAfterSeconds !== undefined) headers['retry-after-ms'] = String(scenario.error.retryAfterSeconds * 1000);
      this.send(scenario.error.status, outcome.error(scenario.error.status, scenario.error.message, scenario.error.code), headers);
      return;
    }
    if (outcome.audio) {
      await this.streamAudio(outcome.audio(), scenario, outcome.headers);
      return;
    }
    if (!outcome.stream || !outcome.plan) {
      // Non-streaming answers have no events: a hang sends no headers; a disconnect drops the socket.
      if (scenario.hangAfterEvents !== undefined) return this.hang();
      if (scenario.disconnectAfterEvents !== undefined) return this.disconnect();
      const body = outcome.json();
      this.send(200, scenario.malformedBody ? malformedBody(body) : body, outcome.headers);
      return;
    }
    await this.stream(outcome.plan(), scenario, outcome.headers);
  }

  /**
   * Writes one frame (after `chunkDelayMs` unless it is the first) and waits until it is handed to
   * the socket, so a later disconnect cannot swallow it. False once the exchange is gone.
   */
  async #write(data: string | Buffer, first: boolean, delayMs: number | undefined): Promise<boolean> {
    if (!first && !(await this.sleep(delayMs))) return false;
    if (this.gone) return false;
    await new Promise<void>((resolve) => {
      const onAbort = (): void => resolve();
      this.signal.addEventListener('abort', onAbort, { once: true });
      this.res.write(data, () => {
        this.signal.removeEventListener('abort', onAbort);
        resolve();
      });
    });
    return !this.gone;
  }

  /**
   * Plays an audio answer: 200 with chunked transfer-encoding (no content-length), the bytes in
   * `audioChunkBytes` pieces (default 4096) with `chunkDelayMs` between them. `disconnectAfterEvents`
   * and `hangAfterEvents` count the chunks written (N beyond the last: after the last chunk, before the end).
   */
  async streamAudio(audio: AudioBody, scenario: Scenario, headers: Record<string, string>): Promise<void> {
    if (this.gone) return;
    this.res.writeHead(200, { ...headers, 'content-type': audio.contentType });
    this.res.flushHeaders();
    const size = scenario.audioChunkBytes && scenario.audioChunkBytes > 0 ? scenario.audioChunkBytes : 4096;
    const chunks: Buffer[] = [];
    for (let at = 0; at < audio.bytes.length; at += size) chunks.push(audio.bytes.subarray(at, at + size));
    const total = chunks.length;
    const at = (n: number | undefined): number | undefined => (n === undefined ? undefined : Math.min(n, total));
    const disconnectAt = at(scenario.disconnectAfterEvents);
    const hangAt = at(scenario.hangAfterEvents);
    for (let sent = 0; sent <= total; sent++) {
      if (sent === disconnectAt) return this.disconnect();
      if (sent === hangAt) return this.hang();
      const piece = chunks[sent];
      if (piece && !(await this.#write(piece, sent === 0, scenario.chunkDelayMs))) return;
    }
    this.res.end();
  }

  async stream(plan: StreamPlan<string | Buffer>, scenario: Scenario, headers: Record<string, string>): Promise<void> {
    if (this.gone) return;
    this.res.writeHead(200, { ...headers, 'content-type': plan.contentType, 'cache-control': 'no-cache' });
    this.res.flushHeaders();
    const total = plan.events.length;
    const at = (n: number | undefined): number | undefined => (n === undefined ? undefined : Math.min(n, total));
    const malformedAt = at(scenario.malformedAfterEvents);
    const errorAt = at(scenario.errorAfterEvents?.events);
    const disconnectAt = at(scenario.disconnectAfterEvents);
    const hangAt = at(scenario.hangAfterEvents);
    let frames = 0;
    const write = async (data: string | Buffer): Promise<boolean> => {
      const ok = await this.#write(data, frames === 0, scenario.chunkDelayMs);
      if (ok) frames += 1;
      return ok;
    };
    for (let sent = 0; sent <= total; sent++) {
      if (sent === malformedAt && !(await write(plan.frame(plan.malformed, frames)))) return;
      if (sent === errorAt) {
        if (!(await write(plan.frame(plan.errorEvent(scenario.errorAfterEvents?.message), frames)))) return;
        if (plan.errorTerminator.length > 0) this.res.write(plan.errorTerminator);
        this.res.end();
        return;
      }
      if (sent === disconnectAt) return this.disconnect();
      if (sent === hangAt) return this.hang();
      const event = plan.events[sent];
      if (event && !(await write(plan.frame(event, frames)))) return;
    }
    if (plan.terminator.length > 0 && !(await write(plan.terminator))) return;
    this.res.end();
  }
}

/**
 * Which family a path belongs to (also for 404s), plus the Gemini model/action when present.
 * Deepgram: /v1/speak and /v1/listen. Groq's OpenAI-compatible /openai/v1/... and the image files
 * the simulator serves (/files/images/...) belong to the OpenAI family.
 */
export function routeOf(path: string): { family: Family; gemini?: { model: string; action: string } } {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return { family: 'anthropic' };
  if (path === '/v1/speak' || path === '/v1/listen') return { family: 'deepgram' };
  const gemini = /^\/(?:v1beta|v1|v1alpha)\/models\/([^/:]+):([A-Za-z]+)$/.exec(path);
  if (gemini) return { family: 'gemini', gemini: { model: decodeURIComponent(gemini[1] ?? ''), action: gemini[2] ?? '' } };
  if (/^\/(?:v1beta|v1alpha)(?:\/|$)/.test(path) || /^\/v1\/models\/[^/]*:/.test(path)) return { family: 'gemini' };
  return { family: 'openai' };
}

export class ProviderSimulator {
  readonly url: string;
  readonly openaiBaseUrl: string;
  readonly anthropicBaseUrl: string;
  readonly geminiBaseUrl: string;
  /** Deepgram's base URL (the API's paths are /v1/speak and /v1/listen). */
  readonly deepgramBaseUrl: string;
  /** Groq's OpenAI-compatible base URL, as Groq's own `https://api.groq.com/openai/v1`. */
  readonly groqBaseUrl: string;
  /** Vertex AI's endpoint (vertex.ts): a provider's `base_url`. */
  readonly vertexBaseUrl: string;
  /** Vertex's service account: its key file (`keyFile()`), token exchanges and refusals. */
  readonly vertex: VertexAccount;
  /** Bedrock Runtime's endpoint (`/model/{modelId}/converse` etc. under it; bedrock.ts). */
  readonly bedrockBaseUrl: string;
  /** The AWS credentials and region Bedrock's SigV4 signatures are checked against. */
  readonly aws: AwsCredentials;
  readonly requests: RecordedRequest[] = [];
  /** Images handed out as URLs by the image endpoints. */
  readonly images = new ImageStore();
  /** Anthropic's prompt cache: `promptCache.advance(ms)` moves its clock to expire entries. */
  readonly promptCache = new AnthropicPromptCache();
  readonly apiKey: string;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #active = new Set<AbortController>();
  #queue: Scenario[] = [];
  #default: Scenario | undefined;
  #closing: Promise<void> | undefined;

  private constructor(server: Server, url: string, apiKey: string, aws: SimulatorOptions['aws']) {
    this.#server = server;
    this.url = url;
    this.openaiBaseUrl = `${url}/v1`;
    this.anthropicBaseUrl = url;
    this.geminiBaseUrl = url;
    this.deepgramBaseUrl = url;
    this.groqBaseUrl = `${url}/openai/v1`;
    this.bedrockBaseUrl = `${url}/bedrock`;
    this.vertexBaseUrl = `${url}/vertex`;
    this.vertex = new VertexAccount(`${url}/vertex/token`);
    this.apiKey = apiKey;
    this.aws = awsCredentials(aws);
  }

  static async start(options: SimulatorOptions = {}): Promise<ProviderSimulator> {
    const host = options.host ?? '127.0.0.1';
    const server = createServer({ noDelay: true, keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const sim = new ProviderSimulator(server, `http://${urlHost}:${address.port}`, options.apiKey ?? 'sim-key', options.aws);
    server.on('connection', (socket: Socket) => {
      sim.#sockets.add(socket);
      socket.on('close', () => sim.#sockets.delete(socket));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      sim.#handle(req, res).catch((error: unknown) => {
        // A bug in the simulator itself: answer 500 if still possible, never crash the test process.
        if (!res.headersSent && !res.destroyed) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`simulator failure: ${(error as Error).stack ?? String(error)}`);
        } else res.destroy();
      });
    });
    return sim;
  }

  /** Queues scenarios, FIFO: each valid request takes the next one. */
  enqueue(...scenarios: Scenario[]): void {
    this.#queue.push(...scenarios);
  }

  /** The scenario used when the queue is empty (and no directive is given). */
  setDefault(scenario: Scenario): void {
    this.#default = scenario;
  }

  /** Clears the queue, the default scenario, the recorded requests, the image URLs handed out and the prompt cache. */
  reset(): void {
    this.#queue = [];
    this.#default = undefined;
    this.requests.length = 0;
    this.images.clear();
    this.promptCache.clear();
  }

  /** Sockets currently open (keep-alive sockets included). */
  openConnections(): number {
    return this.#sockets.size;
  }

  /** Requests whose response has not finished yet (hung and delayed ones included). */
  activeRequests(): number {
    return this.#active.size;
  }

  /** Closes the listener and every socket, hung streams included. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      for (const controller of this.#active) controller.abort();
      for (const socket of this.#sockets) socket.destroy();
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const controller = new AbortController();
    this.#active.add(controller);
    res.on('close', () => {
      this.#active.delete(controller);
      controller.abort();
    });
    res.on('error', () => controller.abort());
    req.on('error', () => controller.abort());

    const received = await readBody(req);
    if (received === undefined) {
      res.destroy();
      return;
    }
    const cloud = throughClouds(req, res, new URL(req.url ?? '/', 'http://simulator.invalid'), received, this);
    if (!cloud) return;
    const { url, raw, azure, vertex, bedrock } = cloud;
    const route: ReturnType<typeof routeOf> = bedrock ? { family: 'bedrock' } : routeOf(url.pathname);
    const contentType = req.headers['content-type'];
    const multipart = isMultipart(contentType) ? await parseMultipart(raw, contentType ?? '') : undefined;
    let recorded: RecordedRequest | undefined;
    const exchange = new Exchange(
      req,
      res,
      url,
      raw,
      controller.signal,
      {
        apiKey: this.apiKey,
        url: this.url,
        images: this.images,
        promptCache: this.promptCache,
        // Queued or default scenarios first; then a coding agent's shell-tool turn (agent.ts); then the default reply.
        takeScenario: (): Scenario => this.#queue.shift() ?? this.#default ?? agentScenario(route.family, exchange.body) ?? {},
        noteUsage: (usage) => {
          if (recorded) recorded.usage = usage;
        },
      },
      multipart,
    );
    exchange.azure = azure;
    let body = exchange.body;
    let model: string | undefined;
    if (multipart) {
      body = multipartRecord(multipart);
      const field = multipart.fields.model;
      model = Array.isArray(field) ? field[0] : field;
    } else if (route.family === 'deepgram' && url.pathname === '/v1/listen') {
      body = { bytes: raw.length, contentType: contentType ?? '' };
    } else if (isBinaryContentType(contentType) && raw.length > 0) {
      body = { bytes: raw.length, contentType: contentType ?? '' };
    }
    if (route.family === 'deepgram') model = url.searchParams.get('model') ?? '';
    const record = isObject(body) ? body : undefined;
    recorded = {
      family: route.family,
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      headers: { ...req.headers },
      body,
      model: bedrock?.modelId ?? route.gemini?.model ?? model ?? (typeof record?.model === 'string' ? record.model : ''),
      stream: bedrock ? bedrock.action === 'converse-stream' : route.gemini ? route.gemini.action === 'streamGenerateContent' : record?.stream === true,
      ...(azure ? { azure } : {}),
      ...(vertex ? { vertex } : {}),
      ...(bedrock ? { bedrock: { action: bedrock.action, auth: bedrock.auth } } : {}),
    };
    this.requests.push(recorded);
    if (this.#closing) {
      res.destroy();
      return;
    }
    if (bedrock) return handleBedrock(exchange, bedrock);
    if (url.pathname === '/v1/messages/count_tokens') return handleAnthropicCount(exchange);
    switch (route.family) {
      case 'openai':
        return url.pathname === '/v1/responses' ? handleOpenAIResponses(exchange) : handleOpenAI(exchange);
      case 'anthropic':
        return handleAnthropic(exchange);
      case 'gemini':
        return handleGemini(exchange, route.gemini);
      case 'deepgram':
        return handleDeepgram(exchange);
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads the whole request body; undefined when the client went away or it is too large. */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => resolve(undefined));
    req.on('close', () => resolve(req.complete ? Buffer.concat(chunks) : undefined));
  });
}
