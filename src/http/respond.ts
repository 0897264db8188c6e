import type { ServerResponse } from 'node:http';
import type { GatewayError } from '../core/errors.js';

const REQUEST_ID = Symbol('x-request-id');
type Tagged = ServerResponse & { [REQUEST_ID]?: string };

/**
 * The response's x-request-id, sent with its headers. Kept on the response rather than set
 * with setHeader: writeHead takes one plain object much faster than it merges the two.
 */
export function setRequestId(res: ServerResponse, requestId: string): void {
  (res as Tagged)[REQUEST_ID] = requestId;
}

/** The request id setRequestId gave a response, if any. */
export function requestIdOf(res: ServerResponse): string | undefined {
  return (res as Tagged)[REQUEST_ID];
}

/** All of a response's headers in one object: x-request-id, `base`, then `extra` (which wins). */
export function responseHeaders(res: ServerResponse, base: Record<string, string>, extra?: Record<string, string | string[]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const requestId = (res as Tagged)[REQUEST_ID];
  if (requestId !== undefined) out['x-request-id'] = requestId;
  for (const name in base) out[name] = base[name] as string;
  if (extra) for (const name in extra) out[name] = extra[name] as string | string[];
  return out;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string | string[]>): void {
  const text = JSON.stringify(body);
  const all = responseHeaders(res, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(text)) }, headers);
  res.writeHead(status, all);
  res.end(text);
}

/** The error envelope `{error: {message, type, code, param}}` (or a route's own form), plus the error's headers. */
export function sendError(res: ServerResponse, error: GatewayError, render: (error: GatewayError) => unknown = (e) => e.toBody()): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, error.status, render(error), error.headers);
}
