import { readFileSync, statSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { App } from '../app.js';
import { PACKAGE_ROOT } from '../config/load.js';
import { errors } from '../core/errors.js';
import type { RequestContext, Route } from '../http/server.js';
import type { Router } from '../http/router.js';

/**
 * The web dashboard: the single-page app built into `dist/dashboard/` at install (`npm run
 * build`), served by the daemon. `index.html` for `/` and every client-side route (the
 * server's fallback for GETs outside /api, /v1 and /health), hashed assets under `/assets/`
 * cached for a year. A strict Content-Security-Policy: no inline script or style, nothing
 * from another origin.
 */

export const DASHBOARD_DIR = join(PACKAGE_ROOT, 'dist', 'dashboard');

export const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | undefined;
  type: string;
}

/** Files read once (assets are immutable: their names carry their hash); index.html re-read when it changes on disk. */
class AssetCache {
  private readonly assets = new Map<string, Asset>();

  constructor(private readonly dir: string) {}

  get(name: string, fresh = false): Asset | undefined {
    const cached = fresh ? undefined : this.assets.get(name);
    if (cached) return cached;
    const path = normalize(join(this.dir, name));
    // Files only: `assets/..` is the dashboard's directory itself (reading it threw EISDIR: a 500).
    if (!path.startsWith(this.dir) || !isFile(path)) return undefined;
    const body = readFileSync(path);
    const ext = name.slice(name.lastIndexOf('.'));
    const type = TYPES[ext] ?? 'application/octet-stream';
    const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.length > 1024;
    const asset: Asset = { body, gzip: compressible ? gzipSync(body, { level: 9 }) : undefined, type };
    if (this.assets.size < 500) this.assets.set(name, asset);
    return asset;
  }
}

function send(ctx: RequestContext, asset: Asset, cache: string, status = 200): void {
  const gzip = asset.gzip !== undefined && /\bgzip\b/.test(String(ctx.req.headers['accept-encoding'] ?? ''));
  const body = gzip ? (asset.gzip as Buffer) : asset.body;
  const headers: Record<string, string> = { ...SECURITY_HEADERS, 'content-type': asset.type, 'content-length': String(body.length), 'cache-control': cache, vary: 'accept-encoding', 'x-request-id': ctx.requestId };
  if (gzip) headers['content-encoding'] = 'gzip';
  ctx.res.writeHead(status, headers);
  ctx.res.end(ctx.method === 'HEAD' ? undefined : body);
}

const NOT_BUILT = Buffer.from(
  '<!doctype html><meta charset="utf-8"><title>LLM gateway</title><p>The dashboard is not built. Run <code>npm run build</code> (npm install runs it) and restart the gateway. The API is served as usual.</p>',
);

/** The route that serves the dashboard's page for `/` and the client's routes. */
export function dashboardPage(dir = DASHBOARD_DIR): Route {
  const cache = new AssetCache(dir);
  return {
    handle: (ctx) => {
      const index = cache.get('index.html', true);
      if (!index) {
        ctx.res.writeHead(503, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'content-length': String(NOT_BUILT.length), 'cache-control': 'no-store' });
        ctx.res.end(NOT_BUILT);
        return;
      }
      send(ctx, index, 'no-cache', isDashboardPath(ctx.path) ? 200 : 404);
    },
  };
}

export function registerDashboardStatic(router: Router<Route>, _app: App, dir = DASHBOARD_DIR): Route {
  const cache = new AssetCache(dir);
  const page = dashboardPage(dir);
  router.add('GET', '/', page);
  router.add('GET', '/assets/*file', {
    handle: (ctx) => {
      const name = ctx.params.file ?? '';
      if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/.test(name)) throw errors.routeNotFound('GET', ctx.path);
      const asset = cache.get(`assets/${name}`);
      if (!asset) throw errors.routeNotFound('GET', ctx.path);
      send(ctx, asset, 'public, max-age=31536000, immutable');
    },
  });
  router.add('GET', '/favicon.ico', {
    handle: (ctx) => {
      const asset = cache.get('favicon.ico') ?? cache.get('favicon.svg');
      if (!asset) throw errors.routeNotFound('GET', ctx.path);
      send(ctx, asset, 'public, max-age=86400');
    },
  });
  return page;
}

/** The dashboard's client-side routes (each page has its URL; these load the app on reload). */
const PAGES = /^\/(?:login|signup|overview|keys|api-keys|management-keys|usage|wallet|models|admin)(?:\/[A-Za-z0-9._~%-]*)*\/?$/;

/** Whether a GET path is a page of the dashboard. */
export function isDashboardPath(path: string): boolean {
  return path === '/' || PAGES.test(path);
}

/**
 * A GET no route matches: a dashboard page, or, for a browser (it accepts text/html) on any
 * path outside the API, the app with status 404 (it shows its own not-found page). API
 * clients get the JSON 404 envelope.
 */
export function dashboardFallback(page: Route): (path: string, accept: string | undefined) => Route | undefined {
  return (path, accept) => {
    if (isDashboardPath(path)) return page;
    if (/^\/(api|v1|health|assets)(\/|$)/.test(path)) return undefined;
    return accept !== undefined && accept.includes('text/html') ? page : undefined;
  };
}

/** Whether `path` is a regular file (false for a directory, a name too long, anything unreadable). */
function isFile(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}
