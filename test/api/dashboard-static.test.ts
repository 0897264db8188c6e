import { get as httpGet } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import pino from 'pino';
import t from 'tap';
import { request } from 'undici';
import type { App } from '../../src/app.js';
import { CSP, dashboardFallback, isDashboardPath, registerDashboardStatic } from '../../src/api/dashboard-static.js';
import { Router } from '../../src/http/router.js';
import { createHttpServer, type Route } from '../../src/http/server.js';
import { tempDir } from '../support/gateway.js';

/** Serving the built dashboard: the page on its routes, hashed assets cached for good, strict headers, 404s kept for API clients. */

async function serve(dir: string) {
  const router = new Router<Route>();
  const page = registerDashboardStatic(router, {} as App, dir);
  const server = createHttpServer({ router, logger: pino({ level: 'silent' }), maxBodyBytes: 1024, trustProxy: false, isShuttingDown: () => false, fallback: dashboardFallback(page) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

t.test('the dashboard page, its assets and its headers', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  mkdirSync(join(dir.path, 'assets'));
  const html = '<!doctype html><html><head><script type="module" src="/assets/app-abc123.js"></script></head><body><div id="root"></div></body></html>';
  writeFileSync(join(dir.path, 'index.html'), html);
  const js = `console.log(${JSON.stringify('x'.repeat(5000))});`;
  writeFileSync(join(dir.path, 'assets', 'app-abc123.js'), js);
  const server = await serve(dir.path);
  t.teardown(server.close);

  for (const path of ['/', '/keys', '/usage', '/admin/accounts/abc', '/login']) {
    const res = await request(`${server.url}${path}`);
    t.equal(res.statusCode, 200, `${path}: the page`);
    t.equal(await res.body.text(), html);
    t.equal(res.headers['content-security-policy'], CSP);
    t.equal(res.headers['x-content-type-options'], 'nosniff');
    t.equal(res.headers['referrer-policy'], 'no-referrer');
    t.equal(res.headers['cache-control'], 'no-cache', 'the page is revalidated');
  }
  t.match(CSP, /script-src 'self';/);
  t.notMatch(CSP, /unsafe-inline|unsafe-eval/, 'no inline script or style');

  const asset = await request(`${server.url}/assets/app-abc123.js`, { headers: { 'accept-encoding': 'gzip' } });
  t.equal(asset.statusCode, 200);
  t.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable', 'hashed names cached for a year');
  t.equal(asset.headers['content-encoding'], 'gzip');
  t.match(String(asset.headers['content-type']), /^text\/javascript/);
  t.equal(gunzipSync(Buffer.from(await asset.body.arrayBuffer())).toString(), js);

  const missing = await request(`${server.url}/assets/nope-1.js`);
  t.equal(missing.statusCode, 404);
  t.match(await missing.body.json(), { error: { code: 404 } });
  const traversal = await request(`${server.url}/assets/..%2Findex.html`);
  t.equal(traversal.statusCode, 404, 'no way out of the assets directory');
  await traversal.body.text();
  // `assets/..` and `assets/.` name directories (the fuzzer's find: they answered 500 EISDIR); sent as written.
  for (const name of ['..', '.', '...', 'x'.repeat(5000)]) {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpGet({ host: new URL(server.url).hostname, port: new URL(server.url).port, path: `/assets/${name}` }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
    });
    t.equal(status, 404, `/assets/${name.slice(0, 20)} is not a file: 404`);
  }

  const api = await request(`${server.url}/nope`);
  t.equal(api.statusCode, 404, 'an unknown path for an API client: the JSON 404');
  t.match(await api.body.json(), { error: { code: 404, type: 'not_found_error' } });
  const browser = await request(`${server.url}/nope`, { headers: { accept: 'text/html,application/xhtml+xml' } });
  t.equal(browser.statusCode, 404, 'for a browser: the app (its not-found page), still a 404');
  t.equal(await browser.body.text(), html);
  const apiPath = await request(`${server.url}/api/nope`, { headers: { accept: 'text/html' } });
  t.equal(apiPath.statusCode, 404);
  t.match(await apiPath.body.json(), { error: { code: 404 } }, 'never the page under /api');
});

t.test('not built: a page that says how to build it', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const server = await serve(join(dir.path, 'missing'));
  t.teardown(server.close);
  const res = await request(`${server.url}/`);
  t.equal(res.statusCode, 503);
  t.match(await res.body.text(), /npm run build/);
});

t.test('which paths are pages', async (t) => {
  for (const path of ['/', '/keys', '/usage/123', '/wallet', '/models', '/admin', '/management-keys']) t.ok(isDashboardPath(path), path);
  for (const path of ['/v1/models', '/api/models', '/health', '/assets/x.js', '/nope', '/keys.json']) t.notOk(isDashboardPath(path), path);
});
