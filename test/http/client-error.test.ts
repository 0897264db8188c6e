import { connect } from 'node:net';
import t from 'tap';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

/**
 * What node's HTTP parser refuses before any route runs (http/client-error.ts) gets the error
 * envelope, a request id and a closed connection, as every other refusal does; an HTTP/1.1
 * request without Host is refused by the server itself with the envelope naming `host`.
 */

let gw: TestGateway;
t.before(async () => {
  gw = await startTestGateway();
});
t.teardown(() => gw.stop());

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection after its answer. */
  closed: boolean;
}

/** Writes `bytes` (then, with `end`, half-closes) and reads until the server closes the socket or 3 s pass. */
function exchange(bytes: string | Buffer, end = false): Promise<RawAnswer> {
  const { port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    let closed = false;
    const timer = setTimeout(() => finish(), 3000);
    const finish = (): void => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no answer: ${JSON.stringify(text.slice(0, 200))}`));
      const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: text.slice(split + 4), closed });
    };
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => {
      closed = true;
      finish();
    });
    socket.on('error', () => finish());
    socket.write(bytes);
    if (end) socket.end();
  });
}

function envelope(t: Tap, answer: RawAnswer, status: number, reason: string): void {
  t.equal(answer.status, status, `status ${status}`);
  t.match(answer.headers['content-type'], /^application\/json/, 'a JSON body');
  t.match(answer.headers['x-request-id'], /^\S+$/, 'with a request id');
  const body = JSON.parse(answer.body) as { type?: string; error?: { message?: string; type?: string; code?: number; reason?: string } };
  t.equal(body.type, 'error', 'Anthropic\'s top-level type');
  t.equal(body.error?.code, status, 'error.code is the integer status');
  t.equal(body.error?.reason, reason);
  t.ok(typeof body.error?.message === 'string' && body.error.message.length > 0, `a message: ${body.error?.message}`);
  t.ok(typeof body.error?.type === 'string' && body.error.type.length > 0, 'a type');
  t.ok(answer.closed, 'the connection closed');
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('a request line that is not HTTP: 400', async (t) => {
  envelope(t, await exchange('GARBAGE\r\n\r\n'), 400, 'malformed_request');
});

t.test('headers past the limit: 431', async (t) => {
  const headers = Array.from({ length: 400 }, (_, i) => `x-h${i}: ${'v'.repeat(90)}\r\n`).join('');
  envelope(t, await exchange(`GET /v1/models HTTP/1.1\r\nhost: localhost\r\n${headers}\r\n`), 431, 'headers_too_large');
});

t.test('an Expect other than 100-continue: 417', async (t) => {
  envelope(t, await exchange('POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\nexpect: something-else\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}'), 417, 'expectation_failed');
});

t.test('HTTP/1.1 without Host: 400 naming host; HTTP/1.0 needs none', async (t) => {
  const answer = await exchange('GET /v1/models HTTP/1.1\r\nconnection: close\r\n\r\n');
  t.equal(answer.status, 400);
  const body = JSON.parse(answer.body) as { error: { code: number; param: string; reason: string } };
  t.match(body.error, { code: 400, param: 'host', reason: 'missing_host' });
  const old = await exchange('GET /health HTTP/1.0\r\n\r\n');
  t.equal(old.status, 200, 'an HTTP/1.0 request without Host is served');
});

t.test('a body cut short and half-closed: refused in the envelope', async (t) => {
  const answer = await exchange('POST /api/auth/login HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"email":"', true);
  t.equal(answer.status, 400, 'the parser\'s refusal, not a 500');
  const body = JSON.parse(answer.body) as { error: { code: number; message: string } };
  t.equal(body.error.code, 400);
  t.type(body.error.message, 'string');
});
