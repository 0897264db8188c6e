import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { handleAnthropic } from './anthropic.js';
import { handleGemini } from './gemini.js';
import { handleOpenAI } from './openai.js';
import type { Family, RecordedRequest, Scenario, StreamPlan } from './scenario.js';

export type { Family, RecordedRequest, Scenario, SimToolCall, SimUsage } from './scenario.js';

/**
 * A real HTTP server that speaks the OpenAI Chat Completions, Anthropic Messages and Gemini
 * generateContent wire formats, driven by scripted scenarios (see scenario.ts).
 */

export interface SimulatorOptions {
  apiKey?: string;
  port?: number;
  host?: string;
}

/** A serialized response body. */
export interface Body {
  contentType: string;
  text: string;
}

/** What a family hands back once a request is valid: the scenario-driven part is common. */
export interface Outcome {
  scenario: Scenario;
  stream: boolean;
  headers: Record<string, string>;
  json(): Body;
  plan(): StreamPlan;
  error(status: number, message: string | undefined): Body;
}

interface SimState {
  apiKey: string;
  takeScenario(): Scenario;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** One request/response pair, with the helpers the family handlers use. */
export class Exchange {
  readonly url: URL;
  /** The parsed JSON body; the raw text when it was not JSON; undefined when empty. */
  readonly body: unknown;
  /** True when a body was sent but was not valid JSON. */
  readonly bodyInvalid: boolean;
  readonly signal: AbortSignal;
  readonly apiKey: string;
  readonly #state: SimState;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    url: URL,
    rawBody: string,
    signal: AbortSignal,
    state: SimState,
  ) {
    this.url = url;
    this.signal = signal;
    this.#state = state;
    this.apiKey = state.apiKey;
    let body: unknown;
    let invalid = false;
    if (rawBody.length > 0) {
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = rawBody;
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
      this.send(scenario.error.status, outcome.error(scenario.error.status, scenario.error.message), headers);
      return;
    }
    if (!outcome.stream) {
      // Non-streaming answers have no events: a hang sends no headers; a disconnect drops the socket.
      if (scenario.hangAfterEvents !== undefined) return this.hang();
      if (scenario.disconnectAfterEvents !== undefined) return this.disconnect();
      this.send(200, outcome.json(), outcome.headers);
      return;
    }
    await this.stream(outcome.plan(), scenario, outcome.headers);
  }

  async stream(plan: StreamPlan, scenario: Scenario, headers: Record<string, string>): Promise<void> {
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
    const write = async (text: string): Promise<boolean> => {
      if (frames > 0 && !(await this.sleep(scenario.chunkDelayMs))) return false;
      if (this.gone) return false;
      // Wait until the frame is handed to the socket, so a later disconnect cannot swallow it.
      await new Promise<void>((resolve) => {
        const onAbort = (): void => resolve();
        this.signal.addEventListener('abort', onAbort, { once: true });
        this.res.write(text, () => {
          this.signal.removeEventListener('abort', onAbort);
          resolve();
        });
      });
      frames += 1;
      return !this.gone;
    };
    for (let sent = 0; sent <= total; sent++) {
      if (sent === malformedAt && !(await write(plan.frame(plan.malformed, frames)))) return;
      if (sent === errorAt) {
        if (!(await write(plan.frame(plan.errorEvent(scenario.errorAfterEvents?.message), frames)))) return;
        if (plan.errorTerminator) this.res.write(plan.errorTerminator);
        this.res.end();
        return;
      }
      if (sent === disconnectAt) return this.disconnect();
      if (sent === hangAt) return this.hang();
      const event = plan.events[sent];
      if (event && !(await write(plan.frame(event, frames)))) return;
    }
    if (plan.terminator && !(await write(plan.terminator))) return;
    this.res.end();
  }
}

/** Which family a path belongs to (also for 404s), plus the Gemini model/action when present. */
export function routeOf(path: string): { family: Family; gemini?: { model: string; action: string } } {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return { family: 'anthropic' };
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
  readonly requests: RecordedRequest[] = [];
  readonly apiKey: string;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #active = new Set<AbortController>();
  #queue: Scenario[] = [];
  #default: Scenario | undefined;
  #closing: Promise<void> | undefined;

  private constructor(server: Server, url: string, apiKey: string) {
    this.#server = server;
    this.url = url;
    this.openaiBaseUrl = `${url}/v1`;
    this.anthropicBaseUrl = url;
    this.geminiBaseUrl = url;
    this.apiKey = apiKey;
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
    const sim = new ProviderSimulator(server, `http://${urlHost}:${address.port}`, options.apiKey ?? 'sim-key');
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

  /** Clears the queue, the default scenario and the recorded requests. */
  reset(): void {
    this.#queue = [];
    this.#default = undefined;
    this.requests.length = 0;
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

    const rawBody = await readBody(req);
    if (rawBody === undefined) {
      res.destroy();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://simulator.invalid');
    const route = routeOf(url.pathname);
    const exchange = new Exchange(req, res, url, rawBody, controller.signal, {
      apiKey: this.apiKey,
      takeScenario: () => this.#queue.shift() ?? this.#default ?? {},
    });
    const body = exchange.body;
    const record = isObject(body) ? body : undefined;
    this.requests.push({
      family: route.family,
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      headers: { ...req.headers },
      body,
      model: route.gemini?.model ?? (typeof record?.model === 'string' ? record.model : ''),
      stream: route.gemini ? route.gemini.action === 'streamGenerateContent' : record?.stream === true,
    });
    if (this.#closing) {
      res.destroy();
      return;
    }
    switch (route.family) {
      case 'openai':
        return handleOpenAI(exchange);
      case 'anthropic':
        return handleAnthropic(exchange);
      case 'gemini':
        return handleGemini(exchange, route.gemini);
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads the whole request body as UTF-8; undefined when the client went away or it is too large. */
function readBody(req: IncomingMessage): Promise<string | undefined> {
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
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(undefined));
    req.on('close', () => resolve(req.complete ? Buffer.concat(chunks).toString('utf8') : undefined));
  });
}
