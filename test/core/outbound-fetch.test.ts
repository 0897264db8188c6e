import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { OutboundPolicyConfig } from '../../src/core/outbound/address-policy.js';
import { OutboundFetcher, systemResolver, type OutboundFetcherOptions, type Resolver } from '../../src/core/outbound/fetch-url.js';
import { OutboundFetchError, type OutboundFailureKind } from '../../src/core/outbound/outbound-error.js';

/**
 * The guarded fetcher against real local HTTP servers. "No connection" is proven three ways:
 * the servers count the TCP connections they accept, the fetcher's onConnectAttempt spy
 * records every address a socket was opened to, and node:net's `net.client.socket` channel
 * counts every client socket the process creates.
 */

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** A 1x1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

interface TestServer {
  port: number;
  url: string;
  /** TCP connections accepted. */
  connections: number;
  paths: string[];
}

const servers: Server[] = [];
t.teardown(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

async function serve(host: string, handler: (req: IncomingMessage, res: ServerResponse) => void, port = 0): Promise<TestServer> {
  const state: TestServer = { port: 0, url: '', connections: 0, paths: [] };
  const server = createServer((req, res) => {
    state.paths.push(req.url ?? '');
    handler(req, res);
  });
  server.on('connection', () => (state.connections += 1));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  servers.push(server);
  state.port = (server.address() as AddressInfo).port;
  state.url = `http://${host.includes(':') ? `[${host}]` : host}:${state.port}`;
  return state;
}

/** The image server every allowed fetch uses, on 127.0.0.1. */
function images(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '';
  const hop = /^\/hop\/(\d+)$/.exec(url);
  if (url === '/pixel.png' || (hop && hop[1] === '0')) {
    res.writeHead(200, { 'content-type': 'image/png; x=1', 'content-length': String(PNG.length) });
    res.end(PNG);
  } else if (url === '/pixel-close.png') {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(PNG.length), connection: 'close' });
    res.end(PNG);
  } else if (hop) {
    res.writeHead(302, { location: `/hop/${Number(hop[1]) - 1}` });
    res.end();
  } else if (url.startsWith('/redirect?to=')) {
    res.writeHead(307, { location: decodeURIComponent(url.slice('/redirect?to='.length)) });
    res.end();
  } else if (url === '/page.html') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html></html>');
  } else if (url === '/big.png') {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': '5000' });
    res.end(Buffer.alloc(5000));
  } else if (url === '/big-chunked.png') {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.write(Buffer.alloc(3000));
    setTimeout(() => res.end(Buffer.alloc(3000)), 10);
  } else if (url === '/silent.png') {
    // never answers
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  }
}

/** A port nothing listens on (it did a moment ago). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Counts client sockets created by node:net while `fn` runs. */
async function socketsOpenedBy(fn: () => Promise<unknown>): Promise<number> {
  let count = 0;
  const onSocket = (): void => {
    count += 1;
  };
  subscribe('net.client.socket', onSocket);
  try {
    await fn();
  } finally {
    unsubscribe('net.client.socket', onSocket);
  }
  return count;
}

interface Spies {
  fetcher: OutboundFetcher;
  lookups: string[];
  attempts: string[];
}

/** A fetcher with a name table for a resolver (names not in it go to the OS), and spies. */
function fetcher(t: Test, policy: OutboundPolicyConfig, names: Record<string, string[] | (() => string[])> = {}, options: Partial<OutboundFetcherOptions> = {}): Spies {
  const lookups: string[] = [];
  const attempts: string[] = [];
  const resolve: Resolver = async (hostname) => {
    lookups.push(hostname);
    const entry = names[hostname];
    if (entry === undefined) return systemResolver(hostname);
    const addresses = typeof entry === 'function' ? entry() : entry;
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  const instance = new OutboundFetcher({ policy, resolve, onConnectAttempt: (address) => attempts.push(address), ...options });
  t.teardown(() => instance.close());
  return { fetcher: instance, lookups, attempts };
}

async function refusal(t: Test, spies: Spies, url: string, kind: OutboundFailureKind, detail?: RegExp): Promise<void> {
  const error = await spies.fetcher.fetchBytes(url).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(error instanceof OutboundFetchError, `${url}: refused with an OutboundFetchError`);
  t.equal((error as OutboundFetchError).kind, kind, `${url}: ${(error as Error).message}`);
  if (detail) t.match((error as Error).message, detail);
}

const local = await serve('127.0.0.1', images);
// A second loopback address on the same port: a forbidden twin of the allowed server.
const twin = await serve('127.0.0.2', images, local.port).catch(() => undefined);
const v6 = await serve('::1', images).catch(() => undefined);
const noTwin = twin ? false : 'cannot listen on 127.0.0.2 here';
const noV6 = v6 ? false : 'no IPv6 loopback here';
/** 127.0.0.1 and the test servers' ports allowed: what a deployment with an internal image host writes. */
const ALLOW_LOCAL: OutboundPolicyConfig = { allowPrivate: ['127.0.0.1/32'], allowPorts: [local.port, ...(v6 ? [v6.port] : [])] };
/** Only the ports: every local address stays forbidden. */
const PORTS_ONLY: OutboundPolicyConfig = { allowPrivate: [], allowPorts: ALLOW_LOCAL.allowPorts };

t.test('an allowed host: bytes and media type intact, by address and by name, through redirects', async (t) => {
  const spies = fetcher(t, ALLOW_LOCAL, { 'images.test': ['127.0.0.1'] });
  const byIp = await spies.fetcher.fetchBytes(`${local.url}/pixel.png`, { acceptMediaType: (type) => type.startsWith('image/') });
  t.equal(byIp.mediaType, 'image/png', 'media type without its parameters');
  t.ok(byIp.bytes.equals(PNG), 'the bytes as served');
  t.equal(byIp.url, `${local.url}/pixel.png`);
  const byName = await spies.fetcher.fetchBytes(`http://images.test:${local.port}/pixel.png`);
  t.ok(byName.bytes.equals(PNG));
  t.same(spies.lookups, ['images.test'], 'the name went through the injected resolver');
  t.ok(spies.attempts.includes('127.0.0.1'), 'connections went to the checked address');
  const moved = await spies.fetcher.fetchBytes(`${local.url}/hop/3`);
  t.ok(moved.bytes.equals(PNG), 'three redirects are followed');
  t.equal(moved.url, `${local.url}/hop/0`, 'the final URL is reported');
});

t.test('loopback, private and link-local addresses are refused before any connection', async (t) => {
  const spies = fetcher(t, PORTS_ONLY);
  const before = { local: local.connections, v6: v6?.connections ?? 0 };
  const sockets = await socketsOpenedBy(async () => {
    await refusal(t, spies, `${local.url}/pixel.png`, 'forbidden_address', /^127\.0\.0\.1 is loopback/);
    await refusal(t, spies, `http://[::1]:${v6?.port ?? local.port}/pixel.png`, 'forbidden_address', /^\[::1\] is loopback/);
    await refusal(t, spies, `http://[::ffff:127.0.0.1]:${local.port}/pixel.png`, 'forbidden_address', /IPv4-mapped form/);
    await refusal(t, spies, `http://2130706433:${local.port}/pixel.png`, 'forbidden_address', /^127\.0\.0\.1 is loopback/);
    await refusal(t, spies, `http://0x7f.1:${local.port}/pixel.png`, 'forbidden_address');
    await refusal(t, spies, `http://127.1:${local.port}/pixel.png`, 'forbidden_address');
    await refusal(t, spies, 'http://10.255.255.1/', 'forbidden_address', /private \(RFC 1918\)/);
    await refusal(t, spies, 'http://169.254.169.254/latest/meta-data/', 'forbidden_address', /link-local/);
    await refusal(t, spies, 'http://[fd00::1]/', 'forbidden_address', /unique-local/);
  });
  t.equal(sockets, 0, 'no client socket was created: literals are refused before undici is asked');
  t.same(spies.lookups, [], 'and without a lookup');
  // By name, through the OS resolver: refused in the lookup net.connect calls (its socket
  // object exists by then, unconnected).
  await refusal(t, spies, `http://localhost:${local.port}/pixel.png`, 'forbidden_address', /^localhost resolves to .* is loopback/);
  t.same(spies.attempts, [], 'no connection attempt');
  t.same(spies.lookups, ['localhost'], 'only the name was resolved (literals need no lookup)');
  t.equal(local.connections, before.local, 'the loopback server saw no connection');
  t.equal(v6?.connections ?? 0, before.v6, 'the [::1] server saw no connection');
});

t.test('a name that resolves to a forbidden address gets no connection', async (t) => {
  const spies = fetcher(t, PORTS_ONLY, {
    'evil.test': ['127.0.0.1'],
    'metadata.evil.test': ['169.254.169.254'],
    'mixed.test': ['93.184.215.14', '10.0.0.1'],
    'mapped.evil.test': ['::ffff:127.0.0.1'],
    'nat64.evil.test': ['64:ff9b::a9fe:a9fe'],
  });
  const before = local.connections;
  const sockets = await socketsOpenedBy(async () => {
    await refusal(t, spies, `http://evil.test:${local.port}/pixel.png`, 'forbidden_address', /^evil\.test resolves to 127\.0\.0\.1 is loopback/);
    await refusal(t, spies, 'http://metadata.evil.test/latest/meta-data/', 'forbidden_address', /link-local/);
    await refusal(t, spies, 'http://mixed.test/a.png', 'forbidden_address', /^mixed\.test resolves to 10\.0\.0\.1/);
    await refusal(t, spies, `http://mapped.evil.test:${local.port}/pixel.png`, 'forbidden_address', /IPv4-mapped form/);
    await refusal(t, spies, 'http://nat64.evil.test/', 'forbidden_address', /NAT64 form .* of 169\.254\.169\.254/);
  });
  // net.connect creates its socket before it calls `lookup`: the sockets exist, unconnected.
  t.ok(sockets <= 5, 'at most one (unconnected) socket per name');
  t.same(spies.attempts, [], 'no connection attempt: every name was refused in lookup');
  t.same(spies.lookups, ['evil.test', 'metadata.evil.test', 'mixed.test', 'mapped.evil.test', 'nat64.evil.test']);
  t.equal(local.connections, before, 'the loopback server saw no connection');
});

t.test('DNS rebinding: each new connection resolves and checks the name again', { skip: noTwin }, async (t) => {
  const answers = ['127.0.0.1', '127.0.0.2'];
  const spies = fetcher(t, ALLOW_LOCAL, { 'rebind.test': () => [(answers.length > 1 ? answers.shift() : answers[0]) as string] });
  const twinBefore = twin?.connections ?? 0;
  // The server closes the connection after its answer, so the next fetch must connect again.
  const first = await spies.fetcher.fetchBytes(`http://rebind.test:${local.port}/pixel-close.png`);
  t.ok(first.bytes.equals(PNG), 'first answer 127.0.0.1: allowed, fetched');
  await refusal(t, spies, `http://rebind.test:${local.port}/pixel-close.png`, 'forbidden_address', /rebind\.test resolves to 127\.0\.0\.2 is loopback/);
  t.same(spies.lookups, ['rebind.test', 'rebind.test'], 'resolved once per connection, never cached');
  t.same(spies.attempts, ['127.0.0.1'], 'the only connection went to the allowed address');
  t.equal(twin?.connections, twinBefore, 'the forbidden twin on 127.0.0.2 saw no connection');
});

t.test('every redirect hop is checked again; the forbidden target gets no connection', async (t) => {
  const spies = fetcher(t, ALLOW_LOCAL, { 'localhost.evil.test': ['127.0.0.2'] });
  const redirect = (to: string) => `${local.url}/redirect?to=${encodeURIComponent(to)}`;
  const before = { twin: twin?.connections ?? 0, v6: v6?.connections ?? 0 };
  const targets: Array<[string, OutboundFailureKind, RegExp]> = [
    [`http://localhost.evil.test:${local.port}/pixel.png`, 'forbidden_address', /^redirect 1: localhost\.evil\.test resolves to 127\.0\.0\.2 is loopback/],
    [`http://127.0.0.2:${local.port}/pixel.png`, 'forbidden_address', /^redirect 1: 127\.0\.0\.2 is loopback/],
    [`http://[::1]:${v6?.port ?? local.port}/pixel.png`, 'forbidden_address', /^redirect 1: \[::1\] is loopback/],
    ['http://169.254.169.254/latest/meta-data/', 'forbidden_address', /link-local/],
    ['http://2130706434/', 'forbidden_address', /^redirect 1: 127\.0\.0\.2 is loopback/],
    [`http://user:pass@127.0.0.1:${local.port}/pixel.png`, 'credentials', /credentials/],
    ['http://127.0.0.1:1/pixel.png', 'forbidden_port', /port 1 is not allowed/],
    ['file:///etc/passwd', 'forbidden_scheme', /file:/],
    ['gopher://127.0.0.1:70/', 'forbidden_scheme', /gopher:/],
  ];
  for (const [target, kind, detail] of targets) await refusal(t, spies, redirect(target), kind, detail);
  t.ok(local.paths.includes(`/redirect?to=${encodeURIComponent(targets[0]![0])}`), 'the allowed first hop was fetched');
  t.equal(twin?.connections ?? 0, before.twin, 'the server on 127.0.0.2 saw no connection');
  t.equal(v6?.connections ?? 0, before.v6, 'the server on [::1] saw no connection');
  t.notOk(spies.attempts.some((address) => address !== '127.0.0.1'), 'connections went to 127.0.0.1 only');
  await refusal(t, spies, `${local.url}/hop/4`, 'too_many_redirects', /more than 3 redirects/);
});

t.test('credentials in the URL and ports other than 80/443 are refused, even on an allowed host', async (t) => {
  const other = await serve('127.0.0.1', images);
  const spies = fetcher(t, ALLOW_LOCAL);
  const before = { local: local.connections, other: other.connections };
  await refusal(t, spies, `http://user:secret@127.0.0.1:${local.port}/pixel.png`, 'credentials');
  await refusal(t, spies, `http://user@127.0.0.1:${local.port}/pixel.png`, 'credentials');
  await refusal(t, spies, `${other.url}/pixel.png`, 'forbidden_port', new RegExp(`port ${other.port} is not allowed`));
  await refusal(t, spies, 'http://93.184.215.14:8080/', 'forbidden_port');
  t.same(spies.attempts, []);
  t.same(before, { local: local.connections, other: other.connections }, 'neither server saw a connection');
});

t.test('failures of the far end: status, media type, size, refused connection, DNS, timeout', async (t) => {
  const closedPort = await freePort();
  const spies = fetcher(
    t,
    { allowPrivate: ['127.0.0.1/32'], allowPorts: [local.port, closedPort] },
    { 'nowhere.test': [] },
    { maxBytes: 4096, timeoutMs: 300 },
  );
  const image = { acceptMediaType: (type: string) => type.startsWith('image/') };
  const fail = async (url: string, kind: OutboundFailureKind, detail: RegExp, request = image) => {
    const error = await spies.fetcher.fetchBytes(url, request).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.equal((error as OutboundFetchError).kind, kind, `${url}: ${(error as Error).message}`);
    t.match((error as Error).message, detail);
  };
  await fail(`${local.url}/missing.png`, 'http_status', /HTTP 404/);
  await fail(`${local.url}/page.html`, 'content_type', /content-type text\/html is not accepted/);
  await fail(`${local.url}/big.png`, 'too_large', /Content-Length 5000 is over the limit of 4096 bytes/);
  await fail(`${local.url}/big-chunked.png`, 'too_large', /body is over the limit of 4096 bytes/);
  await fail(`http://127.0.0.1:${closedPort}/pixel.png`, 'request_failed', /ECONNREFUSED/);
  await fail(`http://nowhere.test:${local.port}/`, 'dns_failed', /nowhere\.test has no address/);
  await fail(`${local.url}/silent.png`, 'timeout', /no complete answer within 300 ms/);
  await fail('not a url', 'bad_url', /not a valid URL/);
  const caller = new AbortController();
  const pending = spies.fetcher.fetchBytes(`${local.url}/silent.png`, { signal: caller.signal });
  setTimeout(() => caller.abort(), 20);
  const aborted = await pending.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.equal((aborted as OutboundFetchError).kind, 'aborted', "the caller's signal ends the fetch");
});

t.test('open(): the body streams under the cap, and can be dropped', async (t) => {
  const spies = fetcher(t, ALLOW_LOCAL);
  const opened = await spies.fetcher.open(`${local.url}/pixel.png`);
  t.equal(opened.contentLength, PNG.length);
  const chunks: Buffer[] = [];
  for await (const chunk of opened.body) chunks.push(chunk);
  t.ok(Buffer.concat(chunks).equals(PNG));
  const dropped = await spies.fetcher.open(`${local.url}/big.png`);
  dropped.discard();
  t.pass('discard() closes the body without reading it');
});
