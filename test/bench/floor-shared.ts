import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import type { Dispatcher } from 'undici';

/**
 * What the benchmark's two floors (floor-minimal.ts, floor-abort.ts) share: their arguments,
 * the request read and re-serialized once, the answer relayed, the server. They differ only in
 * how the call goes upstream. Bundled into each floor by esbuild (procs.ts).
 *
 *   --upstream http://127.0.0.1:PORT --key sim-key [--port 0]
 * Prints `floor listening on http://127.0.0.1:PORT` when ready.
 */

export function floorArgs(): { upstream: string; key: string; port: number } {
  const { values } = parseArgs({
    options: {
      upstream: { type: 'string' },
      key: { type: 'string', default: 'sim-key' },
      port: { type: 'string', default: '0' },
    },
  });
  if (!values.upstream) {
    process.stderr.write('--upstream is required\n');
    process.exit(2);
  }
  return { upstream: values.upstream, key: values.key, port: Number(values.port) };
}

export function fail(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ error: { message, type: 'floor_error' } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The paths passed through, to the same path upstream. */
const PATHS = new Set(['/v1/chat/completions', '/v1/embeddings', '/v1/audio/speech']);

/**
 * The request's path and its JSON body re-serialized once (the model's provider prefix
 * dropped); undefined when it was answered here (404, 400).
 */
export async function readCall(req: IncomingMessage, res: ServerResponse): Promise<{ path: string; body: string } | undefined> {
  const path = req.url ?? '';
  if (req.method !== 'POST' || !PATHS.has(path)) {
    fail(res, 404, 'not found');
    return undefined;
  }
  let body: { model?: unknown };
  try {
    body = JSON.parse((await readBody(req)).toString('utf8'));
  } catch {
    fail(res, 400, 'body is not JSON');
    return undefined;
  }
  if (typeof body.model === 'string') body.model = body.model.slice(body.model.indexOf('/') + 1);
  return { path, body: JSON.stringify(body) };
}

/** The upstream's answer to the client: SSE and audio piped chunk for chunk (drain backpressure), JSON parsed and re-serialized once. */
export async function relay(res: ServerResponse, response: Dispatcher.ResponseData): Promise<void> {
  const type = String(response.headers['content-type'] ?? '');
  const sse = type.startsWith('text/event-stream');
  if (sse || type.startsWith('audio/')) {
    res.writeHead(response.statusCode, { 'content-type': type, 'cache-control': sse ? 'no-cache' : 'no-store' });
    res.flushHeaders();
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
    return;
  }
  const text = JSON.stringify(JSON.parse(await response.body.text()));
  res.writeHead(response.statusCode, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Listens on 127.0.0.1 and says where; stops on SIGINT and SIGTERM. */
export function serveFloor(port: number, handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>): void {
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 60_000, requestTimeout: 0 }, (req, res) => {
    void handle(req, res);
  });
  server.listen(port, '127.0.0.1', () => {
    const { port: bound } = server.address() as AddressInfo;
    process.stdout.write(`floor listening on http://127.0.0.1:${bound}\n`);
  });
  const stop = (): void => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 3000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
