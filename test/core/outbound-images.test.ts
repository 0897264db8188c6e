import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { OutboundConfig } from '../../src/config/types.js';
import type { Message } from '../../src/core/canonical.js';
import { CallAborted, GatewayError } from '../../src/core/errors.js';
import { inlineRemoteImages, type ImageFetchContext } from '../../src/core/gateway/images.js';

/**
 * Image inlining over the guarded fetcher: one answer for every refused or failed download,
 * and the real reason in the log.
 */

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

let connections = 0;
const server: Server = createServer((req, res) => {
  if (req.url === '/pixel.png') {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(PNG);
  } else if (req.url === '/page.html') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html></html>');
  } else if (req.url !== '/silent.png') {
    res.writeHead(404);
    res.end();
  }
});
server.on('connection', () => (connections += 1));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as AddressInfo).port;
const base = `http://127.0.0.1:${port}`;
t.teardown(() => {
  server.closeAllConnections();
  server.close();
});

interface LogLine {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

function context(outbound: OutboundConfig): ImageFetchContext & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    outbound,
    requestId: 'req_test',
    lines,
    logger: {
      info: (fields, message) => lines.push({ level: 'info', fields: fields as Record<string, unknown>, message }),
      warn: (fields, message) => lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message }),
    },
  };
}

const withImage = (url: string): Message[] => [
  { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
  { role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image', source: { kind: 'url', url } }] },
];

const ALLOWED: OutboundConfig = { allowPrivate: ['127.0.0.1/32'], allowPorts: [port] };
const NOTHING: OutboundConfig = { allowPrivate: [], allowPorts: [] };

t.test('an allowed image is inlined', async (t) => {
  const out = await inlineRemoteImages(withImage(`${base}/pixel.png`), new AbortController().signal, context(ALLOWED));
  t.same(out[1]?.content[1], { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: PNG.toString('base64') } });
  t.same(out[0], { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] }, 'other messages are kept');
});

t.test('every refusal and failure gets the same 400; the log says which', async (t) => {
  const cases: Array<[string, OutboundConfig, string, 'info' | 'warn']> = [
    [`${base}/pixel.png`, NOTHING, 'forbidden_port', 'warn'],
    [`${base}/pixel.png`, { allowPrivate: [], allowPorts: [port] }, 'forbidden_address', 'warn'],
    ['http://169.254.169.254/latest/meta-data/iam/', NOTHING, 'forbidden_address', 'warn'],
    [`http://user:pw@127.0.0.1:${port}/pixel.png`, ALLOWED, 'credentials', 'warn'],
    [`${base}/missing.png`, ALLOWED, 'http_status', 'info'],
    [`${base}/page.html`, ALLOWED, 'content_type', 'info'],
    ['http://nonexistent.invalid/a.png', ALLOWED, 'dns_failed', 'info'],
  ];
  const bodies = new Set<string>();
  for (const [url, outbound, reason, level] of cases) {
    const ctx = context(outbound);
    const error = await inlineRemoteImages(withImage(url), new AbortController().signal, ctx).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(error instanceof GatewayError, `${url}: a GatewayError`);
    const gatewayError = error as GatewayError;
    t.equal(gatewayError.status, 400);
    t.equal(gatewayError.reason, 'image_url_unfetchable');
    t.equal(gatewayError.type, 'invalid_request_error');
    t.equal(gatewayError.param, 'messages');
    t.equal(gatewayError.message, 'messages: image URL could not be fetched');
    bodies.add(JSON.stringify(gatewayError.toBody()));
    t.equal(ctx.lines.length, 1, 'one log line');
    t.equal(ctx.lines[0]?.level, level);
    t.equal(ctx.lines[0]?.fields.reason, reason, `logged reason: ${String(ctx.lines[0]?.fields.detail)}`);
    t.equal(ctx.lines[0]?.fields.req_id, 'req_test');
    t.notMatch(String(ctx.lines[0]?.fields.image_url), /pw/, 'no credentials in the log');
  }
  t.equal(bodies.size, 1, 'the client sees one body, whatever the cause');
  t.same([...bodies].map((b) => JSON.parse(b)), [
    { error: { message: 'messages: image URL could not be fetched', type: 'invalid_request_error', code: 400, reason: 'image_url_unfetchable', param: 'messages' } },
  ]);
});

t.test('the client going away is an abort, not a 400', async (t) => {
  const controller = new AbortController();
  const ctx = context(ALLOWED);
  const pending = inlineRemoteImages(withImage(`${base}/silent.png`), controller.signal, ctx);
  setTimeout(() => controller.abort(), 30);
  await t.rejects(pending, CallAborted);
  t.same(ctx.lines, [], 'nothing logged');
  t.ok(connections > 0);
});
