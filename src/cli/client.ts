/** HTTP client for the daemon's management API (and the public catalog). */
import type { IncomingMessage } from 'node:http';

export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly status?: number,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

export interface ClientOptions {
  url: string;
  key?: string;
}

export type Query = Record<string, string | number | undefined>;

export class ManagementClient {
  constructor(private readonly options: ClientOptions) {}

  get baseUrl(): string {
    return this.options.url;
  }

  get<T>(path: string, query?: Query): Promise<T> {
    return this.call<T>('GET', path, { query });
  }

  post<T>(path: string, body: unknown, headers: Record<string, string> = {}): Promise<T> {
    return this.call<T>('POST', path, { body, headers });
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PATCH', path, { body });
  }

  delete<T>(path: string): Promise<T> {
    return this.call<T>('DELETE', path, {});
  }

  /** Opens a long-lived GET (SSE) and returns the response body stream. */
  async stream(path: string, query: Query, signal: AbortSignal): Promise<AsyncIterable<Buffer>> {
    const response = await this.send('GET', path, { query, signal, headers: { accept: 'text/event-stream' } });
    if (response.statusCode >= 400) throw await errorFrom(response.statusCode, await response.text());
    return response.body;
  }

  private async call<T>(method: string, path: string, init: { query?: Query | undefined; body?: unknown; headers?: Record<string, string> }): Promise<T> {
    const response = await this.send(method, path, init);
    const text = await response.text();
    if (response.statusCode >= 400) throw await errorFrom(response.statusCode, text);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError(`the gateway answered ${response.statusCode} with a body that is not JSON`);
    }
  }

  private async send(method: string, path: string, init: { query?: Query | undefined; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal }): Promise<Reply> {
    const url = new URL(path, this.options.url.endsWith('/') ? this.options.url : `${this.options.url}/`);
    for (const [name, value] of Object.entries(init.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { ...init.headers };
    if (this.options.key) headers.authorization = `Bearer ${this.options.key}`;
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const response = await sendRequest(url, this.options.url, { method, headers, body, signal: init.signal });
    return { statusCode: response.statusCode ?? 0, body: response, text: () => readAll(response) };
  }
}

/**
 * One HTTP request to the daemon (`base` names it in the error when it cannot be reached).
 * node:http, not undici: undici's index takes ~0.1 s to load, most of a CLI call's budget.
 * An abort rejects with the AbortError itself.
 */
export async function sendRequest(url: URL, base: string, init: { method: string; headers: Record<string, string>; body?: string | undefined; signal?: AbortSignal | undefined }): Promise<IncomingMessage> {
  try {
    const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
    return await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(url, { method: init.method, headers: init.headers, ...(init.signal ? { signal: init.signal } : {}) }, resolve);
      req.once('error', reject);
      req.end(init.body);
    });
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    const code = (error as { code?: string }).code ?? (error as Error).message;
    throw new CliError(`cannot reach the gateway at ${base} (${code}): is \`gateway serve\` running? (set --url or GATEWAY_URL)`);
  }
}

interface Reply {
  statusCode: number;
  body: AsyncIterable<Buffer>;
  text(): Promise<string>;
}

export async function readAll(body: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function errorFrom(status: number, text: string): Promise<CliError> {
  const body = parseJson(text);
  return new CliError(errorMessageOf(body) ?? `the gateway answered ${status}`, status, body);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The daemon's message from its `{error: {message}}` body (a parsed body, or its text). */
export function errorMessageOf(body: unknown): string | undefined {
  const parsed = typeof body === 'string' ? parseJson(body) : body;
  const message = (parsed as { error?: { message?: unknown } } | undefined)?.error?.message;
  return typeof message === 'string' ? message : undefined;
}
