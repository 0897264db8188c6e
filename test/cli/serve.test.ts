import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import Database from 'better-sqlite3';
import { httpClient, simulatedProviders, tempDir, TEST_JWT_SECRET } from '../support/gateway.js';
import { runCli, serve, type Running } from '../support/cli.js';
import { ProviderSimulator } from '../support/simulator/server.js';

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

t.test('serve: killed (SIGKILL) with calls answered but not yet in the ledger, the next start bills each once', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const sim = await ProviderSimulator.start();
  t.teardown(() => sim.close());
  const file = join(dir.path, 'gateway.yaml');
  const db = join(dir.path, 'gw.db');
  // A 5 s batch window: every call below is answered (journaled) long before it reaches the ledger.
  const config = {
    server: { port: 0 },
    database: { path: './gw.db', billing_batch_window: '5s' },
    auth: { jwt_secret: TEST_JWT_SECRET, bcrypt_rounds: 4 },
    providers: simulatedProviders(sim.url),
  };
  writeFileSync(file, JSON.stringify(config));
  const init = await runCli(['init', '--email', 'root@example.com', '--name', 'Root', '--password', 'password1', '--config', file, '--json']);
  t.equal(init.code, 0, init.stderr);
  const admin = JSON.parse(init.stdout).management_key as string;

  const start = async (): Promise<{ running: Running; http: ReturnType<typeof httpClient> }> => {
    const running = serve(['--config', file]);
    const url = await Promise.race([running.url, running.exit.then((r) => Promise.reject(new Error(`exited early: ${r.stderr}${r.stdout}`)))]);
    return { running, http: httpClient(url) };
  };
  const first = await start();
  const account = (await first.http('POST', '/api/management/accounts', { token: admin, body: { email: 'app@example.com', name: 'App' } })).body;
  t.equal((await first.http('POST', `/api/management/accounts/${account.id}/topups`, { token: admin, body: { amount: 100, reference: 'kill-test' } })).status, 201);
  const key = (await first.http('POST', `/api/management/accounts/${account.id}/api-keys`, { token: admin, body: { name: 'app' } })).body;

  const calls = 12;
  const answers = await Promise.all(
    Array.from({ length: calls }, () =>
      first.http('POST', '/v1/chat/completions', { token: key.api_key, body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 } }),
    ),
  );
  t.same(answers.map((a) => a.status), Array(calls).fill(200), 'every call answered');
  const billed = answers.reduce((sum, a) => sum + Math.round(Number(a.headers['x-gateway-cost-inr']) * 1e6), 0);
  t.ok(billed > 0, `the answers state their cost (${billed} µINR)`);
  first.running.kill('SIGKILL');
  const killed = await first.running.exit;
  t.equal(killed.code, null, 'killed, no clean stop');

  // What the dead daemon left: no charge in SQLite, every call in its journal.
  const journals = readdirSync(`${db}-billing`).filter((name) => name.endsWith('.log'));
  t.equal(journals.length, 1, 'one journal left');
  const lines = readFileSync(join(`${db}-billing`, journals[0] as string), 'utf8').trim().split('\n');
  t.equal(lines.length, calls, 'one line per answered call');
  const peek = new Database(db, { readonly: true });
  t.equal((peek.prepare("SELECT count(*) AS n FROM ledger WHERE kind = 'charge'").get() as { n: number }).n, 0, 'no charge reached the ledger before the kill');
  peek.close();

  const second = await start();
  t.teardown(() => second.running.kill('SIGKILL'));
  const ledger = (await second.http('GET', `/api/management/accounts/${account.id}/ledger?limit=100`, { token: admin })).body;
  const charges = ledger.data.filter((e: { kind: string }) => e.kind === 'charge');
  t.equal(charges.length, calls, 'the restart applied one charge per answered call');
  const requestIds = new Set(charges.map((e: { request_id: string }) => e.request_id));
  t.equal(requestIds.size, calls, 'each call charged once');
  const balance = (await second.http('GET', `/api/management/accounts/${account.id}/balance`, { token: admin })).body;
  t.equal(Math.round(Number(balance.balance) * 1e6), 100_000_000 - billed, 'balance = top-up − what the answers stated');
  t.notOk(existsSync(join(`${db}-billing`, journals[0] as string)), 'the dead daemon\'s journal is gone');
  const usage = (await second.http('GET', `/api/management/usage?account=${account.id}&limit=100`, { token: admin })).body;
  t.equal(usage.data.length, calls, 'and one usage row per call');
  second.running.kill('SIGTERM');
  t.equal((await second.running.exit).code, 0);
});
