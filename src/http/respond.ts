import type { ServerResponse } from 'node:http';
import type { GatewayError } from '../core/errors.js';

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': String(Buffer.byteLength(text)), ...headers });
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
