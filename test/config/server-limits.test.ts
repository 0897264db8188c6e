import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import { build, problemsOf } from '../support/config.js';
import { defaultMaxConnections, defaultMaxInFlight } from '../../src/config/server-limits.js';

/** `server.max_in_flight`, `max_connections`, `headers_timeout`, `request_timeout`, `body_idle_timeout`. */

t.test('defaults: sized for the machine, timeouts for slow clients', async (t) => {
  const { limits } = build({}).server;
  t.same(limits, {
    maxInFlight: defaultMaxInFlight(),
    maxConnections: defaultMaxConnections(),
    headersTimeoutMs: 20_000,
    requestTimeoutMs: 300_000,
    bodyIdleTimeoutMs: 20_000,
  });
  t.equal(defaultMaxInFlight(), Math.min(8192, Math.max(1024, 256 * availableParallelism())), '256 a core, from 1,024 to 8,192');
  t.equal(defaultMaxInFlight(1), 1024, 'at least 1,024: the benchmark\'s 1,000 slow streams on 2 vCPUs are never refused');
  t.equal(defaultMaxInFlight(8), 2048);
  t.equal(defaultMaxInFlight(128), 8192, 'at most 8,192: one event loop');
  t.equal(defaultMaxConnections(2), 4096, 'connections: 4 times the default calls in flight');
});

t.test('set in the file, or through the environment', async (t) => {
  const { limits } = build({
    server: { max_in_flight: '${MAX_IN_FLIGHT}', max_connections: 100, headers_timeout: '5s', request_timeout: 0, body_idle_timeout: '0s' },
  }, { MAX_IN_FLIGHT: '50' }).server;
  t.same(limits, { maxInFlight: 50, maxConnections: 100, headersTimeoutMs: 5000, requestTimeoutMs: 0, bodyIdleTimeoutMs: 0 }, 'request_timeout and body_idle_timeout 0: none');
});

t.test('bad values are reported with their path', async (t) => {
  t.same(
    problemsOf({ server: { max_in_flight: 0, max_connections: 'many', headers_timeout: '0s', request_timeout: 'soon', body_idle_timeout: '50ms' } }),
    [
      'server.max_in_flight: must be an integer from 1 to 1000000',
      'server.max_connections: must be an integer from 1 to 1000000',
      'server.headers_timeout: must be a duration such as 500ms, 30s, 15m, 12h or 7d (at least 100ms)',
      'server.request_timeout: must be a duration such as 500ms, 30s, 15m, 12h or 7d (at least 0ms)',
      'server.body_idle_timeout: must be 0 (none) or at least 100ms',
    ],
  );
  t.same(problemsOf({ server: { headers_timeout: '30s', request_timeout: '10s' } }), [
    'server.request_timeout: must be 0 (none) or at least server.headers_timeout (30000ms): the headers are part of the request',
  ]);
  t.same(problemsOf({ server: { request_timeout: '10ms' } }), ['server.request_timeout: must be 0 (none) or at least 100ms']);
  t.same(problemsOf({ server: { max_inflight: 10 } }).map((line) => line.split(' (')[0]), ['server.max_inflight: unknown key'], 'a typo is an error');
});

t.test('gateway.example.yaml documents every key with its default', async (t) => {
  const example = readFileSync(join(PACKAGE_ROOT, 'gateway.example.yaml'), 'utf8');
  for (const key of ['max_in_flight', 'max_connections', 'headers_timeout', 'request_timeout', 'body_idle_timeout']) t.match(example, new RegExp(`^\\s+#? ?${key}:`, 'm'), key);
  // The example file as written loads, and gives the defaults.
  const { limits } = build(parse(example), { OPENAI_API_KEY: 'x' }).server;
  t.same(limits, build({}).server.limits, 'the example file states the defaults');
});
