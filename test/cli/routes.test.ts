import t from 'tap';
import { lines, runCli, type CliResult } from '../support/cli.js';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { createAccountWithKey } from '../support/management.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * `gateway routes` end to end: the real binary against a daemon whose gpt-4o-mini has two
 * deployments (openai weight 3; groq at priority 2) and a fallback, after real calls through
 * it and a rest set on the router.
 */

const ANSI = /\u001b\[/;
const MODEL = 'openai/gpt-4o-mini';

function doc<T = any>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code}):\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  }
}

t.test('gateway routes: deployments, their state, --json, --model, --all, admins only', async (t) => {
  const sim = await ProviderSimulator.start();
  const gw = await startTestGateway({
    providers: simulatedProviders(sim.url),
    routing: { fallbacks: { [MODEL]: ['openai/gpt-4o'] } },
    models: [{ id: MODEL, deployments: [{ provider: 'openai', weight: 3 }, { provider: 'groq', upstream_model: 'gpt-4o-mini', priority: 2 }] }],
  });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const base = ['--url', gw.url, '--key', gw.adminKey];

  // Three calls answered by the first deployment; a fourth whose first attempt fails there (a
  // 500, retried) and is answered by groq.
  const funded = await fundedKey(gw, { balance: 100 });
  const chat = () => gw.http('POST', '/v1/chat/completions', { token: funded.key, body: { model: MODEL, messages: [{ role: 'user', content: 'hi' }] } });
  for (let i = 0; i < 3; i++) t.equal((await chat()).status, 200, `call ${i + 1} answered`);
  sim.enqueue({ error: { status: 500 } });
  t.equal((await chat()).status, 200, 'a failed attempt, retried on the other deployment');
  gw.app.routes.restDeployment('openai:gpt-4o-mini', 30_000, 'failures', Date.now());

  const [json, human, one, idle, all, allHuman, unknown] = await Promise.all([
    runCli(['routes', ...base, '--json']),
    runCli(['routes', ...base]),
    runCli(['routes', ...base, '--model', 'gpt-4o-mini', '--json']),
    runCli(['routes', ...base, '--model', 'openai/gpt-4o', '--json']),
    runCli(['routes', ...base, '--all', '--json']),
    runCli(['routes', ...base, '--all']),
    runCli(['routes', ...base, '--model', 'no-such-model']),
  ]);

  // --json: the API's document, unchanged.
  t.equal(json.code, 0, '--json exits 0');
  t.equal(json.stderr, '');
  const view = doc(json);
  const api = await gw.http('GET', '/api/management/routes?active=true', { token: gw.adminKey });
  t.same(view, api.body, '--json prints GET /api/management/routes?active=true as it is');
  t.match(view, { object: 'routes', strategy: 'weighted', retries: 2, cooldown: { failures: 3, window_seconds: 60, duration_seconds: 30 } });
  t.same(
    view.data.map((m: { model: string }) => m.model),
    [MODEL],
    'by default only the active model (two deployments): not the other catalog models',
  );
  const [first, second] = view.data[0].deployments;
  t.match(first, { id: 'openai:gpt-4o-mini', provider: 'openai', upstream_model: 'gpt-4o-mini', weight: 3, priority: 1, state: 'resting', reason: 'failures', calls: 4, failures: 1, in_flight: 0 });
  t.ok(Math.abs(Date.parse(first.resting_until) - Date.now() - 30_000) < 10_000, 'resting about 30 s from now');
  t.match(first.latency_ms, Number, 'a latency once it answered');
  t.match(second, { id: 'groq:gpt-4o-mini', provider: 'groq', upstream_model: 'gpt-4o-mini', weight: 1, priority: 2, state: 'ok', resting_until: null, reason: null, calls: 1, failures: 0 });
  t.same(view.data[0].fallbacks, ['openai/gpt-4o']);
  t.match(first.keys, [{ index: 0, fingerprint: /^[0-9a-f]{12}$/, state: 'ok' }], 'keys by index and fingerprint');
  t.notMatch(json.stdout, /sim-key/, 'never a provider key');

  // The human table: one row per deployment, the state with its time left and reason.
  t.equal(human.code, 0, 'human output exits 0');
  t.equal(human.stderr, '');
  t.notMatch(human.stdout, ANSI, 'no colour codes when stdout is not a TTY');
  const out = lines(human.stdout);
  t.equal(out[0], 'strategy weighted · 2 retries · cooldown 30s after 3 failures in 60s · counts over the last 60s', 'the routing settings first');
  t.match(out[1], /^MODEL\s+PROVIDER\s+UPSTREAM\s+PRIORITY\s+WEIGHT\s+STATE\s+IN FLIGHT\s+CALLS\s+FAILURES\s+LATENCY$/, 'the headers');
  t.match(out[2], /^openai\/gpt-4o-mini\s+openai\s+gpt-4o-mini\s+1\s+3\s+resting \d+s \(failures\)\s+0\s+4\s+1\s+\d+ ms$/, 'the resting deployment, its time left and why');
  // Time left: at most the 30 s cooldown, and more than what a slow machine could have spent since.
  const left = Number(/resting (\d+)s/.exec(out[2] ?? '')?.[1]);
  t.ok(left <= 30 && left >= 10, `the rest's time left (${left} s) within the cooldown`);
  t.match(out[3], /^openai\/gpt-4o-mini\s+groq\s+gpt-4o-mini\s+2\s+1\s+ok\s+0\s+1\s+0\s+\d+ ms$/, 'the other deployment, ok');
  t.match(human.stdout, /^fallbacks of openai\/gpt-4o-mini: openai\/gpt-4o$/m, 'the fallbacks');
  t.equal(out.filter((line) => line.startsWith('openai/')).length, 2, 'only the active model\'s two rows');

  // --model: that model, whether or not it is active; --all: every model.
  t.equal(one.code, 0);
  t.same(doc(one).data.map((m: { model: string }) => m.model), [MODEL], '--model by short name');
  t.equal(idle.code, 0);
  t.match(doc(idle).data, [{ model: 'openai/gpt-4o', deployments: [{ id: 'openai:gpt-4o', state: 'ok', calls: 0, failures: 0, latency_ms: null }] }], '--model shows an idle model too');
  t.equal(doc(idle).data.length, 1);
  t.equal(all.code, 0);
  const everyModel = doc(all).data.map((m: { model: string }) => m.model);
  t.equal(everyModel.length, gw.app.catalog.models.length, '--all: every model of the catalog');
  t.ok(everyModel.includes('openai/gpt-4o') && everyModel.includes(MODEL));
  const deployments = doc(all).data.flatMap((m: { deployments: unknown[] }) => m.deployments).length;
  const allLines = lines(allHuman.stdout);
  t.equal(allHuman.code, 0);
  t.ok(allLines.some((line) => line.length > 120), 'the --all table is wider than the 120 columns of a pipe');
  t.equal(allLines.length, 2 + deployments + 1, 'yet one line per deployment (after the settings and the headers, before the fallbacks): no row wraps');
  t.ok(allLines.slice(2, 2 + deployments).every((line) => /(—|\d+ ms)$/.test(line)), 'each row ends with its latency');
  t.equal(unknown.code, 1, 'an unknown model fails');
  t.match(unknown.stderr, /^error: .*no-such-model/);

  // Admins only: a user's management key is refused with the daemon's reason.
  const user = await createAccountWithKey(gw, 'operator@example.com');
  const [refused, refusedJson] = await Promise.all([runCli(['routes', '--url', gw.url, '--key', user.key]), runCli(['routes', '--url', gw.url, '--key', user.key, '--json'])]);
  t.equal(refused.code, 1, 'a non-admin key exits 1');
  t.match(refused.stderr, /^error: this operation needs an admin account\n$/);
  t.equal(refused.stdout, '', 'nothing on stdout');
  t.match(doc(refusedJson), { error: { status: 403, code: 403, reason: 'admin_only' } });
});
