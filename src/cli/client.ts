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
    try {
      // node:http, not undici: undici's index takes ~0.1 s to load, most of a CLI call's budget.
      const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
      const response = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = request(url, { method, headers, ...(init.signal ? { signal: init.signal } : {}) }, resolve);
        req.once('error', reject);
        req.end(body);
      });
      return { statusCode: response.statusCode ?? 0, body: response, text: () => readAll(response) };
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error;
      const code = (error as { code?: string }).code ?? (error as Error).message;
      throw new CliError(`cannot reach the gateway at ${this.options.url} (${code}): is \`gateway serve\` running? (set --url or GATEWAY_URL)`);
    }
  }
}

interface Reply {
  statusCode: number;
  body: AsyncIterable<Buffer>;
  text(): Promise<string>;
}

async function readAll(body: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function errorFrom(status: number, text: string): Promise<CliError> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return new CliError(`the gateway answered ${status}`, status);
  }
  const message = (body as { error?: { message?: unknown } }).error?.message;
  return new CliError(typeof message === 'string' ? message : `the gateway answered ${status}`, status, body);
}
