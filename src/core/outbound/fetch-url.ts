import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import type { buildConnector as BuildConnector, Dispatcher } from 'undici';
import buildConnector from 'undici/lib/core/connect.js';
import { Agent, requestVia } from '../../providers/shared/http-agent.js';
import { OutboundPolicy, type OutboundPolicyConfig } from './address-policy.js';
import { OutboundFetchError } from './outbound-error.js';

/**
 * GET of a URL a caller gave us (an image to inline, later media), guarded so that a caller
 * cannot use the gateway to reach the operator's own network:
 *
 * - before anything else, the URL: http(s) only, no credentials, port 80/443 (plus
 *   `outbound.allow_ports`), and an IP-literal host must be a public address;
 * - names are resolved by the gateway itself, in the `lookup` undici's connector hands to
 *   net.connect/tls.connect, and every address is checked before the socket is opened: a name
 *   that resolves (or re-resolves, DNS rebinding) to a forbidden address gets no connection;
 * - the connector also checks IP literals (net.connect does not call `lookup` for them) and,
 *   once connected, the socket's actual remote address;
 * - redirects are followed by hand (at most 3) and each hop goes through all of the above;
 * - one deadline (15 s) covers every hop and the body; the body is read with a size cap
 *   (20 MB, and refused up front when Content-Length says more).
 *
 * Every failure is an OutboundFetchError whose message is the detailed reason, for the log;
 * callers show the client one uniform answer.
 */

/** Name → addresses. The default asks the OS (getaddrinfo: /etc/hosts, then DNS). */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<{ address: string; family: number }>>;

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export const FETCH_DEFAULTS = { timeoutMs: 15_000, maxBytes: 20 * 1024 * 1024, maxRedirects: 3 } as const;

export interface OutboundFetcherOptions {
  policy: OutboundPolicyConfig | OutboundPolicy;
  /** Injectable for tests (`evil.test` → 127.0.0.1). */
  resolve?: Resolver;
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  /**
   * Told of each address a socket may now be opened to (it passed the checks): the IP literal
   * being connected to, or the resolved addresses handed to net.connect. For logs and tests.
   */
  onConnectAttempt?: (address: string) => void;
}

export interface FetchRequest {
  signal?: AbortSignal;
  /** The Accept header. */
  accept?: string;
  /** Whether the answer's media type (lowercase, no parameters) is wanted; asked before the body is read. */
  acceptMediaType?: (mediaType: string) => boolean;
  /** Lower than the fetcher's own cap, for this request. */
  maxBytes?: number;
}

export interface OpenedUrl {
  /** The URL that answered, after redirects. */
  url: string;
  mediaType: string;
  contentLength: number | undefined;
  /** The body, chunk by chunk; throws an OutboundFetchError past the size cap or the deadline. */
  body: AsyncIterable<Buffer>;
  /** Drops the rest of the body (closes the connection). */
  discard(): void;
}

export interface FetchedBytes {
  url: string;
  mediaType: string;
  bytes: Buffer;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

export class OutboundFetcher {
  readonly policy: OutboundPolicy;
  private readonly agent: InstanceType<typeof Agent>;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly maxRedirects: number;

  constructor(options: OutboundFetcherOptions) {
    this.policy = options.policy instanceof OutboundPolicy ? options.policy : new OutboundPolicy(options.policy);
    this.timeoutMs = options.timeoutMs ?? FETCH_DEFAULTS.timeoutMs;
    this.maxBytes = options.maxBytes ?? FETCH_DEFAULTS.maxBytes;
    this.maxRedirects = options.maxRedirects ?? FETCH_DEFAULTS.maxRedirects;
    this.agent = new Agent({
      connect: guardedConnector(this.policy, options.resolve ?? systemResolver, this.timeoutMs, options.onConnectAttempt),
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      // Callers' hosts are many and rarely asked twice: do not keep their sockets long.
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 10_000,
    });
  }

  /** The whole body, at most the size cap. */
  async fetchBytes(url: string, request: FetchRequest = {}): Promise<FetchedBytes> {
    const opened = await this.open(url, request);
    const chunks: Buffer[] = [];
    for await (const chunk of opened.body) chunks.push(chunk);
    return { url: opened.url, mediaType: opened.mediaType, bytes: Buffer.concat(chunks) };
  }

  /** Follows redirects to a 200 answer of an accepted media type; the caller reads the body. */
  async open(input: string, request: FetchRequest = {}): Promise<OpenedUrl> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
    const maxBytes = Math.min(request.maxBytes ?? this.maxBytes, this.maxBytes);
    const fail = (error: unknown): OutboundFetchError => this.classify(error, request.signal, deadline);
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      throw new OutboundFetchError('bad_url', 'not a valid URL');
    }
    for (let redirects = 0; ; redirects++) {
      const refused = this.policy.checkUrl(url);
      if (refused) throw new OutboundFetchError(refused.kind, `${redirects > 0 ? `redirect ${redirects}: ` : ''}${refused.detail}`);
      let response: Dispatcher.ResponseData;
      try {
        response = await requestVia(this.agent, {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          headers: { accept: request.accept ?? '*/*', 'user-agent': 'llm-gateway' },
          signal,
        });
      } catch (error) {
        const failure = fail(error);
        throw redirects === 0 ? failure : new OutboundFetchError(failure.kind, `redirect ${redirects}: ${failure.message}`, { cause: failure.cause });
      }
      const status = response.statusCode;
      if (REDIRECT_STATUSES.has(status)) {
        drop(response.body);
        const location = firstHeader(response.headers.location);
        if (location === undefined) throw new OutboundFetchError('http_status', `HTTP ${status} without a Location header`);
        if (redirects === this.maxRedirects) throw new OutboundFetchError('too_many_redirects', `more than ${this.maxRedirects} redirects`);
        try {
          url = new URL(location, url);
        } catch {
          throw new OutboundFetchError('bad_url', `redirect ${redirects + 1}: Location is not a valid URL`);
        }
        continue;
      }
      if (status !== 200) {
        drop(response.body);
        throw new OutboundFetchError('http_status', `answered HTTP ${status}`);
      }
      const mediaType = (firstHeader(response.headers['content-type']) ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
      if (request.acceptMediaType && !request.acceptMediaType(mediaType)) {
        drop(response.body);
        throw new OutboundFetchError('content_type', `content-type ${mediaType || 'missing'} is not accepted`);
      }
      const lengthHeader = firstHeader(response.headers['content-length']);
      const contentLength = lengthHeader !== undefined && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined;
      if (contentLength !== undefined && contentLength > maxBytes) {
        drop(response.body);
        throw new OutboundFetchError('too_large', `Content-Length ${contentLength} is over the limit of ${maxBytes} bytes`);
      }
      const body = response.body;
      return {
        url: url.href,
        mediaType,
        contentLength,
        body: cappedBody(body, maxBytes, fail),
        discard: () => drop(body),
      };
    }
  }

  /** Closes the kept-alive sockets (tests, shutdown). */
  async close(): Promise<void> {
    await this.agent.close();
  }

  private classify(error: unknown, callerSignal: AbortSignal | undefined, deadline: AbortSignal): OutboundFetchError {
    if (error instanceof OutboundFetchError) return error;
    if (callerSignal?.aborted) return new OutboundFetchError('aborted', 'the caller went away', { cause: error });
    const code = (error as { code?: unknown } | null)?.code;
    if (deadline.aborted || (typeof code === 'string' && TIMEOUT_CODES.has(code))) {
      return new OutboundFetchError('timeout', `no complete answer within ${this.timeoutMs} ms`, { cause: error });
    }
    const what = typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
    return new OutboundFetchError('request_failed', `request failed (${what})`, { cause: error });
  }
}

async function* cappedBody(body: Readable, maxBytes: number, fail: (error: unknown) => OutboundFetchError): AsyncGenerator<Buffer> {
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new OutboundFetchError('too_large', `body is over the limit of ${maxBytes} bytes`);
      yield chunk;
    }
  } catch (error) {
    throw fail(error);
  } finally {
    // Reached on a throw, and when the reader stops early (break/return): nothing left open.
    if (!body.readableEnded) drop(body);
  }
}

/**
 * Closes a body without reading it. undici's body errors itself when destroyed before its
 * end (RequestAbortedError): that error means nothing here and must not go unhandled.
 */
function drop(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * undici's own connector, with the gateway's `lookup` (net.connect's hook for name
 * resolution) and two checks of its own around it. Built once per fetcher: undici calls it
 * for every new socket, so a name is resolved and checked again on each connection.
 */
function guardedConnector(
  policy: OutboundPolicy,
  resolve: Resolver,
  timeoutMs: number,
  onConnectAttempt: ((address: string) => void) | undefined,
): BuildConnector.connector {
  const check = async (hostname: string, family: number): Promise<LookupAddress[]> => {
    let found: Awaited<ReturnType<Resolver>>;
    try {
      found = await resolve(hostname);
    } catch (error) {
      throw new OutboundFetchError('dns_failed', `${hostname} could not be resolved (${(error as { code?: string }).code ?? String(error)})`, { cause: error });
    }
    if (found.length === 0) throw new OutboundFetchError('dns_failed', `${hostname} has no address`);
    // Refuse the name when ANY of its addresses is forbidden, rather than connecting to the
    // allowed ones only: a name that mixes public and private answers is a rebinding trick,
    // and refusing it outright leaves nothing to get wrong.
    for (const { address } of found) {
      const why = policy.checkAddress(address);
      if (why) throw new OutboundFetchError('forbidden_address', `${hostname} resolves to ${why}`);
    }
    const usable = found.filter((a) => family === 0 || a.family === family).map((a) => ({ address: a.address, family: a.family }));
    if (usable.length === 0) throw new OutboundFetchError('dns_failed', `${hostname} has no IPv${family} address`);
    return usable;
  };
  const lookup: LookupFunction = (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    check(hostname, family).then(
      (usable) => {
        const first = usable[0] as LookupAddress;
        if (onConnectAttempt) for (const a of options.all ? usable : [first]) onConnectAttempt(a.address);
        // net asks for every address (happy eyeballs, `all: true`) or for one.
        if (options.all) callback(null, usable);
        else callback(null, first.address, first.family);
      },
      (error: OutboundFetchError) => callback(error, ''),
    );
  };
  const connect = buildConnector({ timeout: timeoutMs, lookup });

  return (options, callback) => {
    const refuse = (error: OutboundFetchError): void => process.nextTick(() => callback(error, null));
    const port = options.port ? Number(options.port) : options.protocol === 'https:' ? 443 : 80;
    const badPort = policy.checkPort(port);
    if (badPort) return refuse(new OutboundFetchError('forbidden_port', badPort));
    // undici gives IPv6 literals without their brackets. net.connect never calls `lookup` for
    // a literal, so this is where a literal is checked.
    if (isIP(options.hostname) !== 0) {
      const why = policy.checkAddress(options.hostname);
      if (why) return refuse(new OutboundFetchError('forbidden_address', why));
      onConnectAttempt?.(options.hostname);
    }
    connect(options, (...args: Parameters<BuildConnector.Callback>) => {
      const [error, socket] = args;
      if (error || !socket) return callback(...args);
      // The address actually connected to. Unreachable with the checks above; here so that a
      // change in how net.connect resolves can never quietly reopen the hole.
      const remote = socket.remoteAddress;
      const why = remote === undefined ? 'a socket without a remote address' : policy.checkAddress(remote);
      if (why) {
        socket.destroy();
        return callback(new OutboundFetchError('forbidden_address', `connected to ${why}`), null);
      }
      callback(null, socket);
    });
  };
}
