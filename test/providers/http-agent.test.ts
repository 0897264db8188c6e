import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Agent, requestVia } from '../../src/providers/shared/http-agent.js';

const ROOT = new URL('../../', import.meta.url).pathname;

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test("undici's Agent and request() from their own modules: a POST with headers and body, and an abort", async (t) => {
  const seen: Array<{ method?: string; url?: string; auth?: string; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body });
      if (req.url === '/slow') return; // never answers
      res.writeHead(201, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end('{"ok":true}');
    });
  });
  const origin = await listen(server);
  const agent = new Agent({ keepAliveTimeout: 1000 });
  t.teardown(async () => {
    await agent.destroy();
    server.closeAllConnections();
    server.close();
  });

  const response = await requestVia(agent, { origin, path: '/v1/x?a=1', method: 'POST', headers: { authorization: 'Bearer k' }, body: '{"q":1}' });
  t.equal(response.statusCode, 201);
  t.equal(response.headers['x-upstream'], 'yes');
  t.same(await response.body.json(), { ok: true });
  t.same(seen[0], { method: 'POST', url: '/v1/x?a=1', auth: 'Bearer k', body: '{"q":1}' });

  const controller = new AbortController();
  const pending = requestVia(agent, { origin, path: '/slow', method: 'POST', body: '{}', signal: controller.signal });
  setTimeout(() => controller.abort(), 50);
  await t.rejects(pending, { name: 'AbortError' }, 'the signal aborts the call');
});

t.test("the daemon's modules do not load undici's index (fetch, WebSocket and the rest)", async (t) => {
  const script = `
    const { createRequire } = await import('node:module');
    await import('./src/cli/main.ts');
    await import('./src/main.ts');
    const require = createRequire(import.meta.url);
    const loaded = Object.keys(require.cache).filter((path) => path.includes('/node_modules/undici/'));
    console.log(JSON.stringify({ index: loaded.some((path) => path.endsWith('/undici/index.js')), agent: loaded.some((path) => path.endsWith('/lib/dispatcher/agent.js')) }));
  `;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  t.same(JSON.parse(out.trim().split('\n').at(-1) as string), { index: false, agent: true });
});
