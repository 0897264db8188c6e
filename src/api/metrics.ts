import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { App } from '../app.js';
import { GatewayError } from '../core/errors.js';
import type { RequestContext, Route } from '../http/server.js';
import type { Router } from '../http/router.js';

/**
 * `GET /metrics` (metrics.path): Prometheus text. With `metrics.token`, only a request that
 * carries it as a bearer token (401 otherwise, loopback included); without one, only a
 * loopback connection whose client is loopback too (403 otherwise), so that a default install
 * shows nothing to the network. Behind a proxy (`server.trust_proxy`) the client is the
 * forwarded address, read from the right (core/client-address.ts), never the client-written
 * leftmost hop.
 */
export function registerMetricsRoute(router: Router<Route>, app: App): void {
  const metrics = app.telemetry.metrics;
  const { config } = app;
  if (!metrics || !config.metrics.enabled) return;
  const token = config.metrics.token;
  const expected = token === undefined ? undefined : digest(token);
  router.add('GET', config.metrics.path, {
    handle: async (ctx) => {
      if (expected) checkToken(ctx, expected);
      // Without a token: the connection itself from this host, and the client behind it too (a
      // same-host proxy forwarding a remote client is refused; a forwarded "127.0.0.1" from a
      // remote peer, which trust_proxy without trusted_proxies would believe, is too).
      else if (!isLoopback(ctx.req.socket.remoteAddress ?? '') || !isLoopback(ctx.clientIp)) throw forbidden();
      const body = await metrics.render();
      ctx.res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
      ctx.res.end(ctx.method === 'HEAD' ? undefined : body);
    },
  });
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function checkToken(ctx: RequestContext, expected: Buffer): void {
  const header = ctx.req.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match) {
    throw new GatewayError({ status: 401, type: 'authentication_error', reason: 'missing_credentials', message: 'missing credentials: send Authorization: Bearer <metrics.token>', headers: { 'www-authenticate': 'Bearer' } });
  }
  // Compared as digests: equal lengths, and no timing on the token's own length.
  if (!timingSafeEqual(digest(match[1] as string), expected)) {
    throw new GatewayError({ status: 401, type: 'authentication_error', reason: 'invalid_metrics_token', message: 'invalid metrics token', headers: { 'www-authenticate': 'Bearer' } });
  }
}

function forbidden(): GatewayError {
  return new GatewayError({
    status: 403,
    type: 'permission_error',
    reason: 'metrics_loopback_only',
    message: 'metrics are served to loopback clients only: set metrics.token to scrape from another host',
  });
}

/** 127.0.0.0/8, ::1, and IPv4-mapped loopback. */
export function isLoopback(address: string): boolean {
  const mapped = address.toLowerCase().startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(mapped) === 4) return mapped.startsWith('127.');
  return mapped === '::1' || mapped === '0:0:0:0:0:0:0:1';
}
