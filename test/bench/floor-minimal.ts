import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

/**
 * The minimal floor (issue 32): the cheapest Node proxy for one chat, embeddings or speech
 * call, the one the gateway's CPU per call is judged against. node:http in, one `undici.Pool`
 * for the upstream origin out (no per-call URL parsing, no Agent lookup, no AbortController:
 * a client that leaves is not propagated upstream); the JSON request parsed and re-serialized
 * once (the model's provider prefix dropped, the upstream key put in); JSON answers parsed and
 * re-serialized once; SSE and audio answers piped chunk for chunk (with drain backpressure). No
 * auth, no limits, no billing, no logging. floor-abort.ts is the same with the client's close
 * propagated upstream, as a gateway must.
 *
 *   node --import tsx test/bench/floor-minimal.ts --upstream http://127.0.0.1:PORT --key sim-key [--port 0]
 * Prints `floor listening on http://127.0.0.1:PORT` when ready.
 */

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
const upstream = new URL(values.upstream);
/** The upstream's path prefix (the simulator's is empty). */
const base = upstream.pathname.replace(/\/$/, '');
const headers = { authorization: `Bearer ${values.key}`, 'content-type': 'application/json' };
const pool = new Pool(upstream.origin, { keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

function fail(res: ServerResponse, status: number, message: string): void {
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

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = req.url ?? '';
  if (req.method !== 'POST' || !PATHS.has(path)) return fail(res, 404, 'not found');
  let body: { model?: unknown };
  try {
    body = JSON.parse((await readBody(req)).toString('utf8'));
  } catch {
    return fail(res, 400, 'body is not JSON');
  }
  if (typeof body.model === 'string') body.model = body.model.slice(body.model.indexOf('/') + 1);
  try {
    const response = await pool.request({ path: `${base}${path}`, method: 'POST', headers, body: JSON.stringify(body) });
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
  } catch (error) {
    fail(res, 502, `upstream: ${(error as Error).message}`);
  }
}

const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 60_000, requestTimeout: 0 }, (req, res) => {
  void handle(req, res);
});
server.listen(Number(values.port), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`floor listening on http://127.0.0.1:${port}\n`);
});

const stop = (): void => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 3000).unref();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
