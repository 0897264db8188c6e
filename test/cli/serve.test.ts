import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import { httpClient, tempDir, TEST_JWT_SECRET } from '../support/gateway.js';

const BIN = join(PACKAGE_ROOT, 'bin/gateway.js');

interface Running {
  url: Promise<string>;
  exit: Promise<{ code: number | null; stdout: string; stderr: string }>;
  kill(signal: NodeJS.Signals): void;
}

function serve(args: string[], env: NodeJS.ProcessEnv = {}): Running {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd: PACKAGE_ROOT, env: { ...process.env, CI: 'true', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let resolveUrl: (url: string) => void = () => {};
  const url = new Promise<string>((resolve) => (resolveUrl = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    const match = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"gateway listening"/.exec(stdout);
    if (match) resolveUrl(match[1] as string);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  return { url, exit, kill: (signal) => child.kill(signal) };
}

t.test('serve: starts ready, stops gracefully on SIGTERM', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const file = join(dir.path, 'gateway.yaml');
  writeFileSync(file, `database: { path: ./gw.db }\nauth: { jwt_secret: ${TEST_JWT_SECRET} }\nserver: { port: 0 }\n`);
  const running = serve(['--config', file]);
  const url = await Promise.race([running.url, running.exit.then((r) => Promise.reject(new Error(`exited early: ${r.stderr}${r.stdout}`)))]);
  const http = httpClient(url);
  const ready = await http('GET', '/health/ready');
  t.same(ready.body, { status: 'ready', db: 'ok', redis: 'disabled' });
  running.kill('SIGTERM');
  const { code, stdout } = await running.exit;
  t.equal(code, 0, 'exit code 0 after SIGTERM');
  t.match(stdout, /"msg":"gateway stopped"/, 'logged the stop');
  t.notMatch(stdout, new RegExp(TEST_JWT_SECRET), 'no secret in the logs');
});

t.test('serve: an invalid config refuses to start, one line per problem', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const file = join(dir.path, 'bad.yaml');
  writeFileSync(file, 'server: { port: -1 }\nproviders:\n  openai: { base_url: "not a url" }\nlogging: { level: chatty }\n');
  const { code, stderr, stdout } = await serve(['--config', file]).exit;
  t.equal(code, 1);
  const lines = stderr.trim().split('\n');
  t.match(lines[0], /^error: invalid configuration \(.*bad\.yaml\):$/);
  t.same(
    lines.slice(1).map((line) => line.trim()).sort(),
    ['logging.level: must be one of: fatal, error, warn, info, debug, trace, silent', 'providers.openai.base_url: must be an http(s) URL', 'server.port: must be an integer from 0 to 65535'],
  );
  t.equal(stdout, '', 'nothing on stdout');

  const missing = await serve(['--config', join(dir.path, 'nope.yaml')]).exit;
  t.equal(missing.code, 1);
  t.match(missing.stderr, /config file not found/);
});
