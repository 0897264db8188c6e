import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { CallSignal } from '../core/abort.js';
import { CallAborted, errors, GatewayError, isGatewayError } from '../core/errors.js';
import { newRequestId } from '../core/ids.js';
import { readJson } from './body.js';
import { sendError, sendJson, setRequestId } from './respond.js';
import type { Router } from './router.js';
import { isTransient } from '../store/errors.js';

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
  /** The parsed JSON body (413 past the size limit, 400 when it is not JSON). */
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
  isShuttingDown: () => boolean;
  /** A GET or HEAD no route matches: the route that serves it (the dashboard's client-side pages), if any. */
  fallback?: (path: string, accept: string | undefined) => Route | undefined;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** node:http server: request ids, routing, JSON bodies, one error envelope, an access log line. */
export function createHttpServer(options: HttpServerOptions): Server {
  const { router, logger } = options;
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 60_000, requestTimeout: 0 }, (req, res) => {
    void handle(req, res);
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    // Always the gateway's own id: it keys the call's hold, charge and usage row, so a client
    // that reused an id could otherwise dodge billing. The client's id is logged beside it.
    const requestId = newRequestId();
    setRequestId(res, requestId);
    const incomingId = req.headers['x-request-id'];
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const queryStart = url.indexOf('?');
    const path = queryStart === -1 ? url : url.slice(0, queryStart);
    // The access-log line itself: handlers and guards add their fields, the close listener the outcome.
    const logFields: Record<string, string | number | boolean> = { req_id: requestId, method, path };
    if (typeof incomingId === 'string' && REQUEST_ID.test(incomingId)) logFields.client_request_id = incomingId;

    const signal = new CallSignal();
    // One listener per request: it aborts the call (upstream included) when the client went
    // away early, and writes the access-log line.
    res.once('close', () => {
      if (!res.writableFinished) {
        signal.abort();
        logFields.aborted = true;
      }
      logFields.status = res.statusCode;
      logFields.ms = Math.round((performance.now() - started) * 10) / 10;
      logger.info(logFields, 'request');
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
        if (page) match = { kind: 'found', handler: page, params: {} };
      }
      if (match.kind === 'not_found') throw errors.routeNotFound(method, path);
      if (match.kind === 'method_not_allowed') {
        // Answered in the path's own error format (a GET on /v1/messages gets Anthropic's).
        route = match.sibling;
        throw errors.methodNotAllowed(method, path, match.allowed);
      }
      route = match.handler;
      const ctx: RequestContext = {
        req,
        res,
        requestId,
        method,
        path,
        query: new URLSearchParams(queryStart === -1 ? '' : url.slice(queryStart + 1)),
        params: match.params,
        clientIp: clientAddress(req, options.trustProxy),
        signal,
        logFields,
        json: () => readJson(req, options.maxBodyBytes),
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

function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = req.headers['x-forwarded-for'];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? 'unknown';
}
