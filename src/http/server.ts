import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { CallSignal } from '../core/abort.js';
import { CallAborted, errors, GatewayError, isGatewayError } from '../core/errors.js';
import { newRequestId } from '../core/ids.js';
import { readJson } from './body.js';
import { answerProtocolErrors } from './client-error.js';
import { proxyTrust, resolveClientAddress, type ProxyTrust } from '../core/client-address.js';
import { sendError, sendJson, setRequestId } from './respond.js';
import type { Router } from './router.js';
import type { ServerLimits } from '../config/types.js';
import { isTransient } from '../store/errors.js';
import type { Observation } from '../core/telemetry/observation.js';
import type { Telemetry } from '../core/telemetry/telemetry.js';

export interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly params: Record<string, string>;
  readonly clientIp: string;
  /** Aborted when the client goes away before the response is complete. */
  readonly signal: CallSignal;
  /** Extra fields for this request's access-log line (account id, key id); never secrets. */
  readonly logFields: Record<string, string | number | boolean>;
  /** The longest pause while the body is read (server.body_idle_timeout; 0: none): readers other than json() apply it too. */
  readonly bodyIdleTimeoutMs: number;
  /** Metrics and traces of this request (absent with both off): the call path fills in what served it. */
  readonly observation: Observation | undefined;
  /** The parsed JSON body (413 past the size limit, 400 when it is not JSON, 408 when it stalls). */
  json(): Promise<unknown>;
  send(status: number, body: unknown, headers?: Record<string, string | string[]>): void;
}

export type Handler = (ctx: RequestContext) => Promise<void> | void;

export interface Route {
  handle: Handler;
  /** The error body in this route's wire format (default: the `{error: {...}}` envelope). */
  renderError?: (error: GatewayError) => unknown;
}

export interface HttpServerOptions {
  router: Router<Route>;
  logger: Logger;
  maxBodyBytes: number;
  trustProxy: boolean;
  /** With trustProxy: the proxies' addresses and CIDRs (`server.trusted_proxies`); empty or absent: the socket's peer only. */
  trustedProxies?: readonly string[];
  isShuttingDown: () => boolean;
  /** Overload shedding and slow-client limits (`server.*` in the config); absent fields: none (node's timeouts). */
  limits?: Partial<ServerLimits>;
  /** A GET or HEAD no route matches: the route that serves it (the dashboard's client-side pages), if any. */
  fallback?: (path: string, accept: string | undefined) => Route | undefined;
  /** Paths served even while shedding, besides the health checks (the metrics scrape). */
  neverShed?: readonly string[];
  /** Metrics and traces: each request observed from its route to its response's close. */
  telemetry?: Telemetry | undefined;
}

/** A server built without limits: the daemon's behaviour before them (node's timeouts, nothing shed). */
const NO_LIMITS: ServerLimits = { maxInFlight: Infinity, maxConnections: Infinity, headersTimeoutMs: 60_000, requestTimeoutMs: 0, bodyIdleTimeoutMs: 0 };

/** Paths never shed nor counted in flight: a load balancer must see the daemon alive while it sheds. */
const HEALTH_PATHS: ReadonlySet<string> = new Set(['/health', '/health/ready']);

/** At most one "shedding" or "dropping connections" warning per this long (each shed call has its access line). */
const OVERLOAD_WARN_MS = 10_000;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Each server's count of calls in flight, for tests and reports (serverInFlight). */
const inFlightOf = new WeakMap<Server, () => number>();

/** The calls in flight on a server createHttpServer built (health checks aside). */
export function serverInFlight(server: Server): number {
  return inFlightOf.get(server)?.() ?? 0;
}

/** node:http server: request ids, routing, JSON bodies, one error envelope, an access log line. */
export function createHttpServer(options: HttpServerOptions): Server {
  const { router, logger } = options;
  const telemetry = options.telemetry?.metrics || options.telemetry?.tracer ? options.telemetry : undefined;
  const unshed: ReadonlySet<string> = options.neverShed?.length ? new Set([...HEALTH_PATHS, ...options.neverShed]) : HEALTH_PATHS;
  const limits: ServerLimits = { ...NO_LIMITS, ...options.limits };
  const { maxInFlight, bodyIdleTimeoutMs } = limits;
  // One error for every refusal: nothing is allocated (no stack captured) to shed a call.
  const overloaded = errors.overloaded();
  const server = createServer(
    {
      keepAliveTimeout: 65_000,
      // Checked in handle() instead, so that the 400 carries the error envelope (node's is empty).
      requireHostHeader: false,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks both timeouts on this interval (30 s by default, which would let a 20 s
      // headers timeout run to 50 s): a quarter of the shorter one, so each is kept within 25%.
      connectionsCheckingInterval: checkingInterval(limits),
    },
    (req, res) => {
      void handle(req, res);
    },
  );
  server.maxConnections = limits.maxConnections;
  const responses = answerProtocolErrors(server, logger);

  /** Requests between their start and their response's close, health checks aside: one integer, no timer. */
  let inFlight = 0;
  let shed = 0;
  let shedWarnedAt = 0;
  let dropped = 0;
  let dropWarnedAt = 0;
  inFlightOf.set(server, () => inFlight);
  server.on('drop', () => {
    dropped++;
    const now = Date.now();
    if (now - dropWarnedAt >= OVERLOAD_WARN_MS) {
      dropWarnedAt = now;
      logger.warn({ dropped, max_connections: limits.maxConnections }, 'at server.max_connections: closing new connections');
      dropped = 0;
    }
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    // Always the gateway's own id: it keys the call's hold, charge and usage row, so a client
    // that reused an id could otherwise dodge billing. The client's id is logged beside it.
    const requestId = newRequestId();
    setRequestId(res, requestId);
    const incomingId = req.headers['x-request-id'];
    const method = req.method ?? 'GET';
    // Absolute-form targets (`POST http://host/v1/messages`, RFC 9112 §3.2.2) are routed by their path.
    const url = absoluteFormPath(req.url ?? '/');
    const queryStart = url.indexOf('?');
    const path = queryStart === -1 ? url : url.slice(0, queryStart);
    // The access-log line itself: handlers and guards add their fields, the close listener the outcome.
    const logFields: Record<string, string | number | boolean> = { req_id: requestId, method, path };
    if (typeof incomingId === 'string' && REQUEST_ID.test(incomingId)) logFields.client_request_id = incomingId;

    const signal = new CallSignal();
    let observation: Observation | undefined;
    /** Resolved once, when first asked for (by the handler or a trace). */
    let clientIp: string | undefined;
    const client = (): string => (clientIp ??= clientAddress(req, options));
    /** Whether this request holds one of max_in_flight's places (until its response closes). */
    let counted = false;
    const socket = req.socket;
    responses.started(socket, res);
    // One listener per request: it gives back the request's place in flight, aborts the call
    // (upstream included) when the client went away early, and writes the access-log line.
    res.once('close', () => {
      responses.closed(socket, res);
      if (counted) inFlight--;
      if (!res.writableFinished) {
        signal.abort();
        logFields.aborted = true;
      }
      logFields.status = res.statusCode;
      const now = performance.now();
      logFields.ms = Math.round((now - started) * 10) / 10;
      logger.info(logFields, 'request');
      if (telemetry) {
        // A request refused before routing (unknown path, shutting down) is observed here, as "unmatched".
        observation ??= telemetry.requestStarted(started, 'unmatched', requestId, method, req.headers, path, client);
        // A client that left before the answer started got no status: 499, as its usage row says.
        telemetry.requestEnded(observation, logFields.aborted === true && !res.headersSent ? 499 : res.statusCode, now, logFields.aborted === true);
      }
    });

    let route: Route | undefined;
    try {
      if (options.isShuttingDown()) {
        res.setHeader('connection', 'close');
        throw errors.shuttingDown();
      }
      let match = router.match(method, path);
      if (match.kind === 'not_found' && (method === 'GET' || method === 'HEAD')) {
        const page = options.fallback?.(path, req.headers.accept);
        if (page) match = { kind: 'found', handler: page, params: {}, pattern: 'dashboard' };
      }
      if (match.kind === 'not_found') throw errors.routeNotFound(method, path);
      if (telemetry) {
        observation = telemetry.requestStarted(started, match.pattern ?? 'unmatched', requestId, method, req.headers, path, client);
        if (observation.span) logFields.trace_id = observation.span.spanContext().traceId;
      }
      if (match.kind === 'method_not_allowed') {
        // Answered in the path's own error format (a GET on /v1/messages gets Anthropic's).
        route = match.sibling;
        throw errors.methodNotAllowed(method, path, match.allowed);
      }
      route = match.handler;
      // RFC 9112 §3.2: an HTTP/1.1 request without Host is refused (in the route's error format).
      if (req.headers.host === undefined && req.httpVersionMinor === 1 && req.httpVersionMajor === 1) {
        res.setHeader('connection', 'close');
        throw errors.missingHost();
      }
      // Shedding: decided here, before any body is read, any key checked or the database
      // touched; the refusal costs about what a 404 does. Health checks are never refused.
      if (!unshed.has(path)) {
        if (inFlight >= maxInFlight) {
          shed++;
          const now = Date.now();
          if (now - shedWarnedAt >= OVERLOAD_WARN_MS) {
            shedWarnedAt = now;
            logger.warn({ in_flight: inFlight, max_in_flight: maxInFlight, shed }, 'at server.max_in_flight: refusing new calls with 503 overloaded');
            shed = 0;
          }
          throw overloaded;
        }
        inFlight++;
        counted = true;
      }
      const ctx: RequestContext = {
        req,
        res,
        requestId,
        method,
        path,
        query: new URLSearchParams(queryStart === -1 ? '' : url.slice(queryStart + 1)),
        params: match.params,
        clientIp: client(),
        signal,
        logFields,
        bodyIdleTimeoutMs,
        observation,
        json: () => readJson(req, options.maxBodyBytes, bodyIdleTimeoutMs),
        send: (status, body, headers) => sendJson(res, status, body, headers),
      };
      await route.handle(ctx);
    } catch (error) {
      if (error instanceof CallAborted) {
        logFields.aborted = true;
        if (!res.writableEnded) res.destroy();
        return;
      }
      const gatewayError = toGatewayError(error);
      if (!isGatewayError(error)) logger.error({ req_id: requestId, err: error }, 'unhandled error');
      logFields.error = gatewayError.reason;
      if (res.headersSent) {
        if (!res.writableEnded) res.end();
        return;
      }
      // An unread request body would otherwise hold up the next request on this connection.
      if (!req.complete && hasBody(req)) res.setHeader('connection', 'close');
      sendError(res, gatewayError, route?.renderError);
    }
  }

  return server;
}

/** The path and query of an absolute-form request target; any other target as it is. */
function absoluteFormPath(target: string): string {
  if (target.charCodeAt(0) === 47 /* / */ || !/^https?:\/\//i.test(target)) return target;
  const slash = target.indexOf('/', target.indexOf('//') + 2);
  const query = target.indexOf('?', target.indexOf('//') + 2);
  if (slash === -1 || (query !== -1 && query < slash)) return query === -1 ? '/' : `/${target.slice(query)}`;
  return target.slice(slash);
}

/** Node's interval for checking the headers and request timeouts: a quarter of the shorter, from 50 ms to its own default of 30 s. */
function checkingInterval(limits: ServerLimits): number {
  const shortest = Math.min(limits.headersTimeoutMs || Infinity, limits.requestTimeoutMs || Infinity);
  return Number.isFinite(shortest) ? Math.min(30_000, Math.max(50, Math.floor(shortest / 4))) : 30_000;
}

export function toGatewayError(error: unknown): GatewayError {
  if (isGatewayError(error)) return error;
  // The database could not answer now (a cut connection, a failover, locked past its
  // timeout): the client may retry, unlike after a bug.
  return isTransient(error) ? errors.databaseUnavailable() : errors.internal();
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** Each server's trusted proxies, compiled on its first request. */
const proxyTrusts = new WeakMap<object, ProxyTrust>();

/**
 * The socket's peer; with `trustProxy`, the rightmost X-Forwarded-For entry that is not a
 * trusted proxy (client-address.ts), never the client-written leftmost one.
 */
export function clientAddress(req: IncomingMessage, options: Pick<HttpServerOptions, 'trustProxy' | 'trustedProxies'>): string {
  let trust: ProxyTrust | undefined;
  if (options.trustProxy) {
    trust = proxyTrusts.get(options);
    if (!trust) {
      trust = proxyTrust(options.trustedProxies ?? []);
      proxyTrusts.set(options, trust);
    }
  }
  return resolveClientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], trust);
}
