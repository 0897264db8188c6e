import { connect } from 'node:net';
import { Pool } from 'undici';

/**
 * The fuzzer's inputs and answers: a sender over a bounded undici pool and one over a raw
 * socket (bytes no HTTP client sends), and the check of every answer against the error envelope.
 */

export type ErrorShape = 'openai' | 'anthropic' | 'mcp';

export interface FuzzInput {
  /** The endpoint as registered (`POST /v1/chat/completions`), for the counts. */
  endpoint: string;
  /** What was done to the input (`wrong-type:messages.0.content`), for reports. */
  mutation: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Bytes written to a socket as they are (the request line and headers included). */
  raw?: Buffer;
  /** With `raw`: half-close the socket after writing (the client sends nothing more). */
  rawEnd?: boolean;
  /** The answer may be a cut connection (a body past the limit, a half-closed request). */
  mayBeCut?: boolean;
  /** Whether a 2xx of this endpoint may have charged the funded key. */
  billable: boolean;
  /** The error body of the route (messages: Anthropic's). */
  shape: ErrorShape;
  /** A body too large to keep in reports: how it was made. */
  bodyLabel?: string;
}

export interface Answer {
  status?: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The client's error when there was no answer (a cut connection). */
  error?: string;
  ms: number;
}

/** How every input is sent: 16 connections, bounded waits (a hung request is a finding too). */
export function fuzzPool(origin: string, connections = 16): Pool {
  return new Pool(origin, { connections, pipelining: 1, headersTimeout: 15_000, bodyTimeout: 15_000, keepAliveTimeout: 10_000 });
}

const STREAMING = /text\/event-stream/;

/** A path undici sends as it is: bytes it refuses (spaces, controls, non-ASCII) percent-encoded; junk such as a bare `%` stays. */
function sendablePath(path: string): string {
  return path.replace(/[^\x21-\x7e]/gu, (char) => {
    try {
      return encodeURIComponent(char);
    } catch {
      return '%EF%BF%BD'; // a lone surrogate: U+FFFD
    }
  });
}

export async function send(pool: Pool, origin: string, input: FuzzInput): Promise<Answer> {
  const started = performance.now();
  if (input.raw) return sendRaw(origin, input, started);
  try {
    const res = await pool.request({ method: input.method as 'GET', path: sendablePath(input.path), headers: input.headers, body: input.body ?? null });
    const type = String(res.headers['content-type'] ?? '');
    let body: Buffer;
    if (STREAMING.test(type) && res.statusCode < 300) {
      // A live feed (usage stream, an MCP session's GET) never ends: its status is what counts.
      res.body.on('error', () => undefined);
      res.body.destroy();
      body = Buffer.alloc(0);
    } else {
      body = Buffer.from(await res.body.arrayBuffer());
    }
    return { status: res.statusCode, headers: res.headers, body, ms: performance.now() - started };
  } catch (error) {
    return { headers: {}, body: Buffer.alloc(0), error: describeError(error), ms: performance.now() - started };
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: string }).code;
    return `${code ?? error.name}: ${error.message}`;
  }
  return String(error);
}

/** Writes the input's bytes to a fresh socket and reads one HTTP answer (or the close). */
function sendRaw(origin: string, input: FuzzInput, started: number): Promise<Answer> {
  const url = new URL(origin);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    const finish = (error?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const data = Buffer.concat(chunks);
      const parsed = parseHttpAnswer(data);
      if (!parsed) {
        resolve({ headers: {}, body: data, error: error ?? (data.length === 0 ? 'closed without an answer' : `unparseable answer: ${JSON.stringify(data.subarray(0, 120).toString('latin1'))}`), ms: performance.now() - started });
        return;
      }
      resolve({ ...parsed, ms: performance.now() - started });
    };
    const timer = setTimeout(() => finish('no answer within 10 s'), 10_000);
    socket.on('connect', () => {
      socket.write(input.raw as Buffer);
      if (input.rawEnd) socket.end();
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const parsed = parseHttpAnswer(Buffer.concat(chunks));
      if (parsed?.complete) finish();
    });
    socket.on('error', (error) => finish(describeError(error)));
    socket.on('close', () => finish());
  });
}

/** One HTTP/1.1 answer from raw bytes: status, headers, and the body by content-length or chunked (complete: all of it is here). */
function parseHttpAnswer(data: Buffer): { status: number; headers: Record<string, string>; body: Buffer; complete: boolean } | undefined {
  // Interim answers (100 Continue) come before the answer.
  while (/^HTTP\/1\.[01] 1\d\d /.test(data.subarray(0, 16).toString('latin1'))) {
    const interimEnd = data.indexOf('\r\n\r\n');
    if (interimEnd === -1) return undefined;
    data = data.subarray(interimEnd + 4);
  }
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const head = data.subarray(0, end).toString('latin1').split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '');
  if (!match) return undefined;
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = data.subarray(end + 4);
  let complete = false;
  const length = headers['content-length'];
  if (length !== undefined) {
    complete = body.length >= Number(length);
    body = body.subarray(0, Number(length));
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const decoded: Buffer[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = body.indexOf('\r\n', at);
      if (lineEnd === -1) break;
      const size = parseInt(body.subarray(at, lineEnd).toString('latin1'), 16);
      if (!Number.isFinite(size)) break;
      if (size === 0) {
        complete = true;
        break;
      }
      decoded.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    body = Buffer.concat(decoded);
  } else if (match[1] === '204' || match[1] === '304') complete = true;
  return { status: Number(match[1]), headers, body, complete };
}

/** A request as bytes: the request line, `Host`, the given header lines (as they are) and the body. */
export function rawRequest(method: string, path: string, headerLines: readonly (string | Buffer)[], body: Buffer = Buffer.alloc(0), host = 'localhost'): Buffer {
  const head: Buffer[] = [Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n`, 'latin1')];
  for (const line of headerLines) head.push(typeof line === 'string' ? Buffer.from(line, 'latin1') : line, Buffer.from('\r\n'));
  head.push(Buffer.from('\r\n'));
  return Buffer.concat([...head, body]);
}

// ---------------------------------------------------------------------------------------------
// The check

type Verdict = { ok: true } | { ok: false; problem: string };

/**
 * A refusal must carry the error envelope `{error: {message, type, code}}` with `code` the
 * integer HTTP status (Anthropic's routes: `{type: "error", error: {…}}`). The MCP transport's
 * own refusals (JSON-RPC 2.0 errors) are told apart: they are the protocol's, not the gateway's.
 */
export function checkEnvelope(input: FuzzInput, answer: Answer): Verdict & { jsonRpc?: boolean } {
  const status = answer.status as number;
  if (input.method === 'HEAD') return { ok: true };
  let body: unknown;
  try {
    body = JSON.parse(answer.body.toString('utf8'));
  } catch {
    return { ok: false, problem: `status ${status} with a body that is not JSON: ${JSON.stringify(answer.body.subarray(0, 200).toString('utf8'))} (content-type ${String(answer.headers['content-type'])})` };
  }
  if (!isRecord(body)) return { ok: false, problem: `status ${status} with a JSON body that is not an object` };
  if (input.shape === 'mcp' && body.jsonrpc === '2.0' && isRecord(body.error) && typeof body.error.code === 'number' && typeof body.error.message === 'string') {
    return { ok: true, jsonRpc: true };
  }
  if (input.shape === 'anthropic' && body.type !== 'error') return { ok: false, problem: `status ${status}: an Anthropic route's error without "type": "error": ${preview(body)}` };
  const error = body.error;
  if (!isRecord(error)) return { ok: false, problem: `status ${status} without an error object: ${preview(body)}` };
  if (typeof error.message !== 'string' || error.message === '') return { ok: false, problem: `status ${status}: error.message is not a non-empty string: ${preview(body)}` };
  if (typeof error.type !== 'string' || error.type === '') return { ok: false, problem: `status ${status}: error.type is not a non-empty string: ${preview(body)}` };
  if (error.code !== status || !Number.isInteger(error.code)) return { ok: false, problem: `status ${status}: error.code is ${JSON.stringify(error.code)}, not the integer status: ${preview(body)}` };
  return { ok: true };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function preview(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Text safe for a TAP comment: one line, control characters and invalid bytes escaped. */
function printable(text: string, max: number): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return JSON.stringify(cut).slice(1, -1);
}

/** An input as a report shows it: method, path, headers and the body (cut to `max` characters, escaped, with its length). */
export function describeInput(input: FuzzInput, max = 400): string {
  const lines = [`${input.method} ${printable(input.path, 200)}${input.path.length > 200 ? `(${input.path.length} chars)` : ''}   [${input.endpoint}; ${printable(input.mutation, 300)}]`];
  if (input.raw) {
    lines.push(`raw bytes (${input.raw.length}): ${printable(input.raw.toString('latin1'), max)}`);
    return lines.join('\n');
  }
  const headers = Object.entries(input.headers);
  if (headers.length > 12) lines.push(`(${headers.length} headers; the first 6 shown)`);
  for (const [name, value] of headers.slice(0, headers.length > 12 ? 6 : 12)) {
    const shown = /authorization|x-api-key|cookie/i.test(name) && value.length > 20 ? `${value.slice(0, 16)}…` : value;
    lines.push(`${name}: ${printable(shown, 200)}${shown.length > 200 ? `(${shown.length} chars)` : ''}`);
  }
  if (input.body) {
    lines.push(`body (${input.body.length} bytes${input.bodyLabel ? `; ${printable(input.bodyLabel, 200)}` : ''}): ${printable(input.body.toString('utf8'), max)}`);
  }
  return lines.join('\n');
}
