import { maxHeaderSize } from 'node:http';
import { connect } from 'node:net';
import t from 'tap';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

/**
 * What node's HTTP parser refuses before any route runs (http/client-error.ts) gets the error
 * envelope, a request id and a closed connection, as every other refusal does; an HTTP/1.1
 * request without Host is refused by the server itself with the envelope naming `host`.
 *
 * Every request is written over a raw socket: no HTTP client writes these bytes.
 */

let gw: TestGateway;
t.before(async () => {
  gw = await startTestGateway();
});
t.teardown(() => gw.stop());

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (FIN or reset) after its answer. */
  closed: boolean;
}

/** How long the server gets, once its answer is in, to close the connection. */
const CLOSE_WAIT_MS = 1000;

/** The status line and headers at the start of `data`, and where the body starts; undefined until they are all in. */
function head(data: Buffer): { status: number; headers: Record<string, string>; bodyStart: number } | undefined {
  const split = data.indexOf('\r\n\r\n');
  if (split < 0) return undefined;
  const [statusLine = '', ...lines] = data.subarray(0, split).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).trim().toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  return { status: Number(statusLine.split(' ')[1]), headers, bodyStart: split + 4 };
}

/**
 * Writes `bytes` (then, with `end`, half-closes) and reads one answer (its body by
 * content-length, or up to the close without one), then waits up to CLOSE_WAIT_MS for the
 * server to close the connection.
 */
function exchange(bytes: string | Buffer, end = false): Promise<RawAnswer> {
  const { port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let data = Buffer.alloc(0);
    let answer: Omit<RawAnswer, 'closed'> | undefined;
    let settled = false;
    const settle = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(noAnswer);
      clearTimeout(closeWait);
      socket.destroy();
      // Without a content-length, the body ends with the connection.
      const top = closed && !answer ? head(data) : undefined;
      if (top) answer = { status: top.status, headers: top.headers, body: data.subarray(top.bodyStart).toString('utf8') };
      if (answer) resolve({ ...answer, closed });
      else reject(new Error(`no answer${closed ? ' before the connection closed' : ''}: ${JSON.stringify(data.toString('latin1').slice(0, 300))}`));
    };
    const noAnswer = setTimeout(() => settle(false), 5000);
    let closeWait: NodeJS.Timeout | undefined;
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const top = answer ? undefined : head(data);
      if (!top) return;
      const length = Number(top.headers['content-length']);
      if (!Number.isInteger(length) || data.length < top.bodyStart + length) return;
      answer = { status: top.status, headers: top.headers, body: data.subarray(top.bodyStart, top.bodyStart + length).toString('utf8') };
      closeWait = setTimeout(() => settle(false), CLOSE_WAIT_MS);
    });
    socket.on('end', () => settle(true));
    socket.on('close', () => settle(true));
    // A reset once the answer is in is the server closing too (it destroyed a socket with bytes unread).
    socket.on('error', () => settle(true));
    socket.write(bytes);
    if (end) socket.end();
  });
}

interface Envelope {
  type?: unknown;
  error?: { message?: unknown; type?: unknown; code?: unknown; reason?: unknown; param?: unknown };
}

function parse(t: Tap, body: string): Envelope {
  try {
    return JSON.parse(body) as Envelope;
  } catch {
    t.fail(`the body is not JSON: ${JSON.stringify(body.slice(0, 200))}`);
    return {};
  }
}

/** The error envelope, in both wire formats (`type: "error"` on top for Anthropic's), on a closed connection. */
function envelope(t: Tap, answer: RawAnswer, status: number, reason: string): Envelope {
  t.equal(answer.status, status, `status ${status}`);
  t.match(answer.headers['content-type'], /^application\/json(;|$)/, 'content-type: application/json');
  t.match(answer.headers['x-request-id'], /^req_[0-9a-f]+$/, 'an x-request-id');
  const body = parse(t, answer.body);
  t.equal(body.type, 'error', 'top-level type: "error" (Anthropic\'s)');
  t.ok(typeof body.error?.message === 'string' && body.error.message.length > 0, `error.message: ${JSON.stringify(body.error?.message)}`);
  t.ok(typeof body.error?.type === 'string' && body.error.type.length > 0, `error.type: ${JSON.stringify(body.error?.type)}`);
  t.ok(Number.isInteger(body.error?.code), 'error.code is an integer');
  t.equal(body.error?.code, status, 'error.code is the status');
  t.equal(body.error?.reason, reason, `error.reason ${reason}`);
  t.equal(answer.closed, true, 'the connection is closed after the answer');
  return body;
}

t.test('a request line that is not HTTP: 400', async (t) => {
  envelope(t, await exchange('GARBAGE\r\n\r\n'), 400, 'malformed_request');
});

t.test("a header section past node's http.maxHeaderSize: 431", async (t) => {
  // 400 header lines of 100 bytes each (CRLF included).
  const lines = Array.from({ length: 400 }, (_, i) => `x-h${String(i).padStart(3, '0')}: ${'v'.repeat(100 - 10)}\r\n`);
  const section = lines.join('');
  t.equal(Buffer.byteLength(section), 40_000, '400 headers of 100 bytes');
  t.ok(Buffer.byteLength(section) > maxHeaderSize, `more than http.maxHeaderSize (${maxHeaderSize} bytes)`);
  envelope(t, await exchange(`GET /v1/models HTTP/1.1\r\nHost: localhost\r\n${section}\r\n`), 431, 'headers_too_large');
});

t.test('an Expect other than 100-continue on a POST: 417', async (t) => {
  const body = envelope(t, await exchange('POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nExpect: something-else\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'), 417, 'expectation_failed');
  t.equal(body.error?.param, 'expect', 'error.param names the header');
});

t.test('HTTP/1.1 without Host: 400 naming host, from the normal handler, in the route\'s format', async (t) => {
  const answer = await exchange('POST /v1/messages HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
  const body = envelope(t, answer, 400, 'missing_host');
  t.equal(body.error?.param, 'host', 'error.param is host');
  // The headers every route's answer has, which the parser-level refusals (written raw) do not.
  t.equal(answer.headers['cache-control'], 'no-store', 'cache-control: no-store');
  t.match(answer.headers.date, /GMT$/, "node's Date header: the answer went through the server's handler");
});

t.test('an absolute-form request target is routed by its path (RFC 9112 §3.2.2)', async (t) => {
  const answer = await exchange('GET http://localhost/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  t.equal(answer.status, 200, 'GET http://localhost/health answers as GET /health');
  t.same(parse(t, answer.body), { status: 'ok' });
});

t.test('HTTP/1.0 needs no Host: /health answers 200', async (t) => {
  const answer = await exchange('GET /health HTTP/1.0\r\n\r\n');
  t.equal(answer.status, 200, 'status 200');
  t.match(answer.headers['content-type'], /^application\/json(;|$)/, 'content-type: application/json');
  t.match(answer.headers['x-request-id'], /^req_[0-9a-f]+$/, 'an x-request-id');
  t.same(parse(t, answer.body), { status: 'ok' }, 'the health body');
  t.equal(answer.closed, true, 'HTTP/1.0 without keep-alive: the connection is closed after the answer');
});

t.test('a JSON body cut short, then half-closed: 400 in the envelope', async (t) => {
  const json = '{"email":"';
  t.equal(Buffer.byteLength(json), 10, '10 bytes of the 100 announced');
  const answer = await exchange(`POST /api/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n${json}`, true);
  // Node's parser reports the early end ("invalid eof state") before the route's body read does.
  const body = envelope(t, answer, 400, 'malformed_request');
  t.match(body.error?.message, /invalid eof state/, 'the message names the cut');
});
