import { connect, type Socket } from 'node:net';
import pino from 'pino';
import t from 'tap';
import { request } from 'undici';
import { serverInFlight } from '../../src/http/server.js';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { header, postJson, sleep, until, type RawResponse } from '../support/e2e.js';

/**
 * Overload shedding and slow clients (issue 28): past `server.max_in_flight` a call gets 503
 * `overloaded` with `retry-after` before any work, the health endpoints still answer, and the
 * count comes back to zero however calls end; slowloris headers, stalled bodies and sockets past
 * `max_connections` are closed by the limits. Small limits and timeouts keep it to seconds.
 */

const sim = await ProviderSimulator.start();
t.teardown(() => sim.close());

const MODEL = 'openai/gpt-4o-mini';
const MAX_IN_FLIGHT = 3;
/** How long a slow answer takes: long enough to fire the refused calls while the slow ones wait. */
const SLOW_MS = 1500;

/** The daemon's access-log lines: the gateway's own time for each request (`ms`). */
const lines: Array<{ msg?: string; status?: number; ms?: number; error?: string; path?: string }> = [];
const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
const gw = await startTestGateway({ providers: simulatedProviders(sim.url), server: { max_in_flight: MAX_IN_FLIGHT } }, {}, { logger });
t.teardown(() => gw.stop());
const funded = await fundedKey(gw);

const chatBody = (text: string, extra: Record<string, unknown> = {}) => ({ model: MODEL, messages: [{ role: 'user', content: text }], ...extra });
const chat = (text: string, extra: Record<string, unknown> = {}): Promise<RawResponse> =>
  postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, chatBody(text, extra));
const slow = (ms = SLOW_MS) => `SIM: ${JSON.stringify({ delayMs: ms })}`;

/** Starts `n` calls the simulator holds `ms` each, and waits until the gateway counts them all in flight. */
async function saturate(n: number, ms = SLOW_MS): Promise<Promise<RawResponse>[]> {
  const calls = Array.from({ length: n }, () => chat(slow(ms)));
  await until('the slow calls to be in flight', () => serverInFlight(gw.server) >= n);
  return calls;
}

function checkOverloaded(t: Tap, res: RawResponse, what: string): void {
  t.equal(res.status, 503, `${what}: 503`);
  t.equal(header(res, 'retry-after'), '1', `${what}: retry-after 1`);
  t.match(res.json, { error: { type: 'overloaded', code: 503, reason: 'overloaded', message: /in flight/ } }, `${what}: the error envelope`);
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('past max_in_flight a call is refused at once with 503 overloaded; health still answers; the slow ones finish', async (t) => {
  const slowCalls = await saturate(MAX_IN_FLIGHT);
  t.equal(serverInFlight(gw.server), MAX_IN_FLIGHT, 'three calls in flight');

  const started = performance.now();
  const refused = await chat('one too many');
  const refusedMs = performance.now() - started;
  checkOverloaded(t, refused, 'a chat call');
  t.ok(refusedMs < SLOW_MS / 3, `answered without waiting for a place (${refusedMs.toFixed(1)} ms round trip)`);
  checkOverloaded(t, await chat('streamed', { stream: true }), 'a streamed call');
  // The messages format in its own words: Anthropic's type for this, which its clients know.
  const messages = await postJson(`${gw.url}/v1/messages`, { 'x-api-key': funded.key, 'anthropic-version': '2023-06-01' }, { model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(messages.status, 503, 'a messages call: 503');
  t.equal(header(messages, 'retry-after'), '1', 'a messages call: retry-after 1');
  t.match(messages.json, { type: 'error', error: { type: 'overloaded_error', code: 503, reason: 'overloaded' } }, 'a messages call: Anthropic\'s overloaded_error');
  const models = await gw.http('GET', '/v1/models');
  t.equal(models.status, 503, 'a catalog read too');
  // Refused before the key is looked at: even a bad key gets 503, not 401.
  const badKey = await postJson(`${gw.url}/v1/chat/completions`, { authorization: 'Bearer sk-not-a-key' }, chatBody('x'));
  t.equal(badKey.status, 503, 'refused before authentication');
  // ...and before the body is read: a body that is not JSON is never parsed.
  const notJson = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, '{not json');
  t.equal(notJson.status, 503, 'refused before the body is parsed');

  for (const path of ['/health', '/health/ready']) {
    const health = await gw.http('GET', path);
    t.equal(health.status, 200, `${path} answers 200 while the gateway sheds`);
  }
  t.equal(serverInFlight(gw.server), MAX_IN_FLIGHT, 'refused calls and health checks take no place');

  // The gateway's own time per refusal (its access line's `ms`, from the request's start to
  // the response's close): well under a millisecond.
  const shedLines = lines.filter((line) => line.msg === 'request' && line.error === 'overloaded');
  for (let i = 0; i < 40; i++) await chat('more');
  const times = lines.filter((line) => line.msg === 'request' && line.error === 'overloaded').slice(shedLines.length).map((line) => line.ms ?? Infinity).sort((a, b) => a - b);
  t.equal(times.length, 40, 'every refusal has its access line');
  const median = times[Math.floor(times.length / 2)] as number;
  t.ok(median < 1, `gateway time per refusal: median ${median} ms, max ${times.at(-1)} ms`);
  t.ok(lines.some((line) => line.msg?.startsWith('at server.max_in_flight')), 'a warning says the gateway sheds');

  for (const res of await Promise.all(slowCalls)) t.equal(res.status, 200, 'the calls in flight finish normally');
  await until('the places to be given back', () => serverInFlight(gw.server) === 0);
  const after = await Promise.all(Array.from({ length: MAX_IN_FLIGHT }, () => chat('after')));
  t.same(after.map((res) => res.status), [200, 200, 200], 'then new calls are served again');
  t.equal(serverInFlight(gw.server), 0);
});

t.test('calls the client aborts give their place back', async (t) => {
  const controllers = Array.from({ length: MAX_IN_FLIGHT }, () => new AbortController());
  const before = sim.activeRequests();
  const pending = controllers.map((controller) =>
    request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${funded.key}` },
      body: JSON.stringify(chatBody(slow(5000))),
      signal: controller.signal,
    }).catch((error: unknown) => error),
  );
  await until('the calls upstream', () => sim.activeRequests() >= before + MAX_IN_FLIGHT);
  checkOverloaded(t, await chat('full'), 'while they wait');
  for (const controller of controllers) controller.abort();
  for (const result of await Promise.all(pending)) t.ok(result instanceof Error, 'aborted by the client');
  await until('the places to be given back', () => serverInFlight(gw.server) === 0);
  await until('the upstream calls to be aborted', () => sim.activeRequests() === before);
  // Three slow calls at once would find a place taken if an abort had kept one.
  const again = await Promise.all(await saturate(MAX_IN_FLIGHT, 300));
  t.same(again.map((res) => res.status), [200, 200, 200], 'max_in_flight calls at once are all served after the aborts');
});

t.test('a stream holds its place until it ends, or until its client leaves', async (t) => {
  // About 40 chunks 25 ms apart: a stream of a second.
  const streamed = `SIM: ${JSON.stringify({ text: 'word '.repeat(40), chunkSize: 5, chunkDelayMs: 25 })}`;
  const open = () =>
    request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${funded.key}` },
      body: JSON.stringify(chatBody(streamed, { stream: true })),
    });
  const streams = await Promise.all(Array.from({ length: MAX_IN_FLIGHT }, open));
  t.same(streams.map((res) => res.statusCode), [200, 200, 200], 'three streams started');
  t.equal(serverInFlight(gw.server), MAX_IN_FLIGHT, 'each stream is in flight while it runs');
  checkOverloaded(t, await chat('full'), 'a call while they stream');
  // One client leaves mid-stream; the other two read to the end.
  const [first, ...rest] = streams;
  first?.body.destroy();
  const texts = await Promise.all(rest.map((res) => res.body.text()));
  for (const text of texts) t.match(text, /data: \[DONE\]/, 'a stream runs to its end');
  await until('the places to be given back', () => serverInFlight(gw.server) === 0);
  t.equal(serverInFlight(gw.server), 0, 'ended and abandoned streams leave nothing in flight');
  t.equal((await chat('after the streams')).status, 200);
});

// ---------------------------------------------------------------------------------------------
// Slow clients

t.test('slow clients', async (t) => {
  const slowLines: Array<{ level?: number; msg?: string }> = [];
  const slowLogger = pino({ level: 'info' }, { write: (line: string) => void slowLines.push(JSON.parse(line)) });
  const slowGw = await startTestGateway(
    { providers: simulatedProviders(sim.url), server: { headers_timeout: '400ms', request_timeout: '1500ms', body_idle_timeout: '400ms' } },
    {},
    { logger: slowLogger },
  );
  t.teardown(() => slowGw.stop());
  const key = (await fundedKey(slowGw)).key;
  const { port } = new URL(slowGw.url);

  await t.test('headers sent a byte at a time are cut by headers_timeout', async (t) => {
    const socket = await open(Number(port));
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nX-Padding: ${'a'.repeat(200)}\r\n`;
    const started = performance.now();
    let sent = 0;
    const drip = setInterval(() => {
      if (!socket.destroyed && sent < head.length) socket.write(head[sent++] as string);
    }, 20);
    const { data, closedAfterMs } = await closed(socket, started);
    clearInterval(drip);
    t.ok(sent < head.length, `closed before the headers were done (${sent} of ${head.length} bytes)`);
    t.match(data, /^HTTP\/1\.1 408 /, 'answered 408');
    t.ok(closedAfterMs >= 350 && closedAfterMs < 1500, `closed after ${closedAfterMs.toFixed(0)} ms (headers_timeout 400ms)`);
  });

  await t.test('a connection that sends nothing is closed too', async (t) => {
    const socket = await open(Number(port));
    const { closedAfterMs } = await closed(socket, performance.now());
    t.ok(closedAfterMs < 1500, `closed after ${closedAfterMs.toFixed(0)} ms`);
  });

  await t.test('a body that stalls gets 408 and the connection closed', async (t) => {
    const socket = await open(Number(port));
    const body = JSON.stringify(chatBody('hello'));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body.slice(0, 10));
    const started = performance.now();
    const { data, closedAfterMs } = await closed(socket, started);
    t.match(data, /^HTTP\/1\.1 408 /, '408');
    t.match(data, /connection: close/i, 'connection: close');
    const json = JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4));
    t.match(json, { error: { code: 408, type: 'timeout_error', reason: 'body_timeout' } }, 'in the error envelope');
    t.ok(closedAfterMs >= 350 && closedAfterMs < 1500, `closed after ${closedAfterMs.toFixed(0)} ms (body_idle_timeout 400ms)`);
  });

  await t.test('an upload (multipart) that stalls gets 408 too', async (t) => {
    const socket = await open(Number(port));
    const boundary = 'x-boundary';
    const part = `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nopenai/whisper-1\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`;
    socket.write(`POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${part.length + 100_000}\r\n\r\n${part}`);
    socket.write(Buffer.alloc(1000));
    const { data, closedAfterMs } = await closed(socket, performance.now());
    t.match(data, /^HTTP\/1\.1 408 /, '408');
    t.match(data, /"reason":"body_timeout"/, 'body_timeout');
    t.ok(closedAfterMs < 1500, `closed after ${closedAfterMs.toFixed(0)} ms`);
  });

  await t.test('a body that trickles under the idle timeout is cut by request_timeout', async (t) => {
    const socket = await open(Number(port));
    const body = JSON.stringify(chatBody('x'.repeat(200)));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    const started = performance.now();
    let sent = 0;
    const drip = setInterval(() => {
      if (!socket.destroyed && sent < body.length) socket.write(body[sent++] as string);
    }, 100);
    const { data, closedAfterMs } = await closed(socket, started);
    clearInterval(drip);
    t.match(data, /^HTTP\/1\.1 408 /, '408');
    t.ok(closedAfterMs >= 1200 && closedAfterMs < 3500, `closed after ${closedAfterMs.toFixed(0)} ms (request_timeout 1500ms)`);
  });

  await t.test('request_timeout never cuts a response: a stream and a slow answer run past it', async (t) => {
    const streamed = `SIM: ${JSON.stringify({ text: 'word '.repeat(40), chunkSize: 5, chunkDelayMs: 60 })}`;
    const started = performance.now();
    const [stream, json] = await Promise.all([
      postJson(`${slowGw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, chatBody(streamed, { stream: true })),
      postJson(`${slowGw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, chatBody(slow(2200))),
    ]);
    const elapsed = performance.now() - started;
    t.ok(elapsed > 2000, `both outlived request_timeout (${elapsed.toFixed(0)} ms against 1500)`);
    t.equal(stream.status, 200);
    t.match(stream.text, /data: \[DONE\]/, 'the stream ran to its end');
    t.equal(json.status, 200, 'the slow answer arrived');
  });

  await t.test('a request sent in one go is not affected', async (t) => {
    const res = await postJson(`${slowGw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, chatBody('quick'));
    t.equal(res.status, 200);
  });

  t.same(slowLines.filter((line) => (line.level ?? 0) >= 50), [], 'a client cut off by a timeout is no server error in the log');
});

t.test('max_connections: sockets past it are closed as they are accepted', async (t) => {
  const limitedGw = await startTestGateway({ server: { max_connections: 4 } });
  t.teardown(() => limitedGw.stop());
  const { port } = new URL(limitedGw.url);
  // Four keep-alive connections, each after one request (idle: no timeout applies to them yet).
  const held: Socket[] = [];
  for (let i = 0; i < 4; i++) {
    const socket = await open(Number(port));
    const answer = await exchange(socket, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    t.match(answer, /^HTTP\/1\.1 200 /, `connection ${i + 1} served`);
    held.push(socket);
  }
  const extra = await open(Number(port));
  extra.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  const { data } = await closed(extra, performance.now());
  t.equal(data, '', 'the fifth is closed without an answer');
  // One of the four goes: a new connection is served again.
  const leaving = held.pop();
  leaving?.destroy();
  await sleep(100);
  const next = await open(Number(port));
  t.match(await exchange(next, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 200 /, 'served once a connection closed');
  for (const socket of [...held, next]) socket.destroy();
});

/** A connected raw socket. */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the socket, and when it did (5 s at most). */
function closed(socket: Socket, since: number): Promise<{ data: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    let data = '';
    const limit = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the socket open for 5 s (received: ${data.slice(0, 200)})`));
    }, 5000);
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(limit);
      resolve({ data, closedAfterMs: performance.now() - since });
    });
  });
}

/** Sends one request on a raw socket and returns its whole response (a small JSON body). */
function exchange(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const onData = (chunk: Buffer): void => {
      data += chunk.toString('utf8');
      const end = data.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(data)?.[1];
      if (end !== -1 && length !== undefined && data.length >= end + 4 + Number(length)) {
        socket.off('data', onData);
        resolve(data);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(text);
  });
}
