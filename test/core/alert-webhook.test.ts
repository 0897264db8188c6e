import t from 'tap';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { signature, WebhookSender, type AlertPayload, type DeliveryResult, type WebhookOptions } from '../../src/core/alerts/webhook.js';

/**
 * Alert delivery against a real HTTP receiver on 127.0.0.1: signed bodies, retries with
 * backoff (and a receiver's retry-after), permanent failures, dead and silent receivers (the
 * caller never waits), the bounded queue, and no URL or secret in any result.
 */

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

const SECRET = 'whsec_do_not_leak_4f2a';
/** Shaped like a Slack incoming-webhook path: the URL itself is a credential. */
const TOKEN_PATH = '/services/T0000/B0000/XoXoTokenDoNotLeak';

interface Received {
  at: number;
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;

/** A receiver that records each request, then lets `handler` answer it (or not). */
async function receiver(t: Tap, handler: Handler): Promise<{ url: string; origin: string; requests: Received[] }> {
  const requests: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ at: performance.now(), method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      handler(req, res, requests.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: origin + TOKEN_PATH, origin, requests };
}

/** A port nothing listens on: bound, then closed. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}${TOKEN_PATH}`;
}

function alert(n: number): AlertPayload {
  return {
    id: `alt_${n}`,
    event: 'balance_low',
    subject: 'acc_1',
    created_at: new Date(0).toISOString(),
    text: `Balance of acc_1 is below ₹100 (alert ${n})`,
    threshold: 100,
    balance_inr: 42.5,
  };
}

function sender(t: Tap, options: WebhookOptions): { sender: WebhookSender; results: DeliveryResult[] } {
  const results: DeliveryResult[] = [];
  const s = new WebhookSender({ ...options, onResult: (r) => results.push(r) });
  t.teardown(() => s.close());
  return { sender: s, results };
}

const answer =
  (status: number, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, headers).end('{}');
  };

t.test('delivered once, with the exact body, the headers and a valid signature', async (t) => {
  const r = await receiver(t, answer(200));
  const { sender: s, results } = sender(t, { url: r.url, secret: SECRET });
  const a = alert(1);
  s.enqueue(a);
  t.equal(s.pending, 1);
  await s.drain(5000);
  t.same(results, [{ id: 'alt_1', ok: true, attempts: 1, status: 200 }]);
  t.equal(r.requests.length, 1, 'one request');
  const req = r.requests[0]!;
  t.equal(req.method, 'POST');
  t.equal(req.url, TOKEN_PATH);
  t.equal(req.body.toString('utf8'), JSON.stringify(a), 'body is JSON.stringify(alert)');
  t.same(JSON.parse(req.body.toString('utf8')), a);
  t.equal(req.headers['content-type'], 'application/json');
  t.equal(req.headers['user-agent'], 'llm-gateway-alerts');
  t.equal(req.headers['x-gateway-alert-id'], 'alt_1');
  t.equal(req.headers['x-gateway-event'], 'balance_low');
  // Recomputed over the raw bytes received (the text holds a non-ASCII ₹).
  const expected = Buffer.from('sha256=' + createHmac('sha256', SECRET).update(req.body).digest('hex'));
  const got = Buffer.from(String(req.headers['x-gateway-signature']));
  t.ok(got.length === expected.length && timingSafeEqual(got, expected), 'signature verifies');
  t.equal(signature(SECRET, JSON.stringify(a)), expected.toString(), 'signature() agrees');
  t.equal(s.pending, 0);
});

t.test('no signature header without a secret (nor with an empty one)', async (t) => {
  const r = await receiver(t, answer(204));
  for (const secret of [undefined, '']) {
    const { sender: s, results } = sender(t, { url: r.url, ...(secret !== undefined && { secret }) });
    s.enqueue(alert(2));
    await s.drain(5000);
    t.match(results, [{ ok: true, status: 204 }]);
  }
  t.equal(r.requests.length, 2);
  for (const req of r.requests) t.notOk('x-gateway-signature' in req.headers);
});

t.test('a 500 then a 200: retried, delivered once, in 2 attempts', async (t) => {
  const r = await receiver(t, (req, res, n) => answer(n === 1 ? 500 : 200)(req, res, n));
  const { sender: s, results } = sender(t, { url: r.url, secret: SECRET, retryDelaysMs: [20, 40] });
  s.enqueue(alert(3));
  await s.drain(5000);
  t.same(results, [{ id: 'alt_3', ok: true, attempts: 2, status: 200 }]);
  t.equal(r.requests.length, 2);
  t.ok(r.requests[1]!.at - r.requests[0]!.at >= 15, 'after the backoff delay');
  t.same(r.requests[1]!.body, r.requests[0]!.body, 'the same bytes');
  t.equal(r.requests[1]!.headers['x-gateway-signature'], r.requests[0]!.headers['x-gateway-signature']);
});

t.test('a 400 is permanent: not retried', async (t) => {
  const r = await receiver(t, answer(400));
  const { sender: s, results } = sender(t, { url: r.url, retryDelaysMs: [10, 10] });
  s.enqueue(alert(4));
  await s.drain(5000);
  await new Promise((resolve) => setTimeout(resolve, 60));
  t.same(results, [{ id: 'alt_4', ok: false, attempts: 1, status: 400, error: 'HTTP 400' }]);
  t.equal(r.requests.length, 1, 'one request only');
});

t.test('a dead receiver: enqueue returns at once, and each alert gives up after its retries', async (t) => {
  const { sender: s, results } = sender(t, { url: await deadUrl(), secret: SECRET, retryDelaysMs: [10, 20] });
  const started = performance.now();
  for (let i = 0; i < 100; i++) s.enqueue(alert(i));
  const elapsed = performance.now() - started;
  t.ok(elapsed < 200, `100 enqueues took ${elapsed.toFixed(1)} ms`);
  t.equal(s.pending, 100);
  t.equal(results.length, 0, 'nothing attempted yet');
  await s.drain(20_000);
  t.equal(results.length, 100);
  for (const result of results) t.match(result, { ok: false, attempts: 3, error: /^network error/ });
  t.equal(results.filter((r) => r.status !== undefined).length, 0, 'no status without an answer');
});

t.test('a receiver that never answers: enqueue is synchronous, at most 4 in flight, timeouts give up', async (t) => {
  const r = await receiver(t, () => {});
  let active = 0;
  let maxActive = 0;
  const counting: typeof fetch = async (input, init) => {
    maxActive = Math.max(maxActive, ++active);
    try {
      return await fetch(input, init);
    } finally {
      active -= 1;
    }
  };
  const { sender: s, results } = sender(t, { url: r.url, retryDelaysMs: [10], timeoutMs: 100, fetch: counting });
  const started = performance.now();
  for (let i = 0; i < 20; i++) s.enqueue(alert(i));
  const elapsed = performance.now() - started;
  t.equal(r.requests.length, 0, 'enqueue returned before any request reached the receiver');
  t.ok(elapsed < 100, `20 enqueues took ${elapsed.toFixed(1)} ms`);
  await s.drain(100);
  t.ok(s.pending > 0, 'drain(ms) gives up waiting after ms');
  await s.drain(20_000);
  t.equal(results.length, 20);
  for (const result of results) t.match(result, { ok: false, attempts: 2, error: 'timed out after 100 ms' });
  t.equal(maxActive, 4, 'at most 4 POSTs at once');
  t.equal(r.requests.length, 40, 'two attempts each');
});

t.test('the timeout holds after a garbage collection (AbortSignal.timeout inside AbortSignal.any does not, on Node 20)', async (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const r = await receiver(t, () => {});
  const { sender: s, results } = sender(t, { url: r.url, retryDelaysMs: [], timeoutMs: 200 });
  s.enqueue(alert(9));
  await new Promise((resolve) => setTimeout(resolve, 50));
  gc();
  gc();
  await s.drain(3000);
  t.same(results, [{ id: 'alt_9', ok: false, attempts: 1, error: 'timed out after 200 ms' }]);
});

t.test('retry-after on a 429 is honoured when larger than the delay', async (t) => {
  const r = await receiver(t, (req, res, n) => (n === 1 ? answer(429, { 'retry-after': '1' }) : answer(200))(req, res, n));
  const { sender: s, results } = sender(t, { url: r.url, retryDelaysMs: [10] });
  s.enqueue(alert(5));
  await s.drain(5000);
  t.same(results, [{ id: 'alt_5', ok: true, attempts: 2, status: 200 }]);
  const gap = r.requests[1]!.at - r.requests[0]!.at;
  t.ok(gap >= 950, `second attempt ${gap.toFixed(0)} ms after the first`);
});

t.test('maxQueued drops the oldest pending alert, reported as failed', async (t) => {
  const r = await receiver(t, answer(200));
  const { sender: s, results } = sender(t, { url: r.url, maxQueued: 2 });
  for (let i = 1; i <= 5; i++) s.enqueue(alert(i));
  t.equal(s.pending, 2);
  t.same(
    results,
    [1, 2, 3].map((i) => ({ id: `alt_${i}`, ok: false, attempts: 0, error: 'dropped: queue full' })),
  );
  await s.drain(5000);
  t.same(results.slice(3).map((x) => x.id).sort(), ['alt_4', 'alt_5']);
  t.same(r.requests.map((x) => x.headers['x-gateway-alert-id']).sort(), ['alt_4', 'alt_5']);
});

t.test('close abandons pending retries, and reports them', async (t) => {
  const r = await receiver(t, answer(503));
  const { sender: s, results } = sender(t, { url: r.url, retryDelaysMs: [60_000] });
  s.enqueue(alert(6));
  await s.drain(200);
  t.equal(s.pending, 1, 'waiting for its retry');
  s.close();
  t.equal(s.pending, 0);
  t.same(results, [{ id: 'alt_6', ok: false, attempts: 1, error: 'sender closed' }]);
  s.enqueue(alert(7));
  t.match(results[1], { id: 'alt_7', ok: false, error: 'sender closed' });
});

t.test('no result or inspection ever holds the URL or the secret', async (t) => {
  const all: DeliveryResult[] = [];
  const urls: string[] = [];
  const cases: Array<[Handler | 'dead', Partial<WebhookOptions>]> = [
    ['dead', {}],
    [answer(500), {}],
    [answer(400), {}],
    [answer(429, { 'retry-after': 'soon' }), {}],
    [answer(302, { location: 'http://127.0.0.1:1/elsewhere' }), {}],
    [() => {}, { timeoutMs: 50 }],
  ];
  for (const [handler, extra] of cases) {
    const url = handler === 'dead' ? await deadUrl() : (await receiver(t, handler)).url;
    urls.push(url);
    const { sender: s, results } = sender(t, { url, secret: SECRET, retryDelaysMs: [5], ...extra });
    s.enqueue(alert(8));
    t.notMatch(inspect(s, { depth: 10, showHidden: true }), SECRET);
    await s.drain(5000);
    t.equal(results.length, 1);
    t.match(results[0], { ok: false });
    all.push(...results);
  }
  t.match(all.map((x) => x.error), [/network error/, 'HTTP 500', 'HTTP 400', 'HTTP 429', 'HTTP 302', /timed out/]);
  const text = JSON.stringify(all);
  t.notOk(text.includes(SECRET), 'no secret');
  t.notOk(text.includes('XoXoTokenDoNotLeak'), 'no URL path');
  t.notOk(text.includes('127.0.0.1'), 'no host');
  for (const url of urls) t.notOk(text.includes(new URL(url).port), 'no port');
});
