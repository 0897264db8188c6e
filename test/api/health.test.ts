import { Readable } from 'node:stream';
import t from 'tap';
import { request } from 'undici';
import Database from 'better-sqlite3';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

import { REDIS_URL, redisSkipReason } from '../support/redis.js';
import { breakStore, storeIsOpen, TEST_BACKEND } from '../support/store.js';

t.test('health, readiness and the HTTP basics (no Redis)', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());

  const health = await gw.http('GET', '/health');
  t.equal(health.status, 200);
  t.same(health.body, { status: 'ok' });
  t.match(health.headers['x-request-id'], /^req_[0-9a-f]{32}$/);

  const ready = await gw.http('GET', '/health/ready');
  t.equal(ready.status, 200);
  t.same(ready.body, { status: 'ready', db: 'ok', redis: 'disabled' });

  const clientId = await gw.http('GET', '/health', { headers: { 'x-request-id': 'client-id-42' } });
  t.match(clientId.headers['x-request-id'], /^req_[0-9a-f]{32}$/, 'a client\'s x-request-id is not reused: it could collide with another call\'s billing');

  for (const path of ['/nope', '/v1/v1/messages', '/v1/v1/chat/completions', '/api']) {
    const res = await gw.http('GET', path);
    t.equal(res.status, 404, `${path} is 404`);
    t.equal(res.body.error.type, 'not_found_error');
    t.equal(typeof res.body.error.message, 'string');
    t.equal(res.body.error.reason, 'route_not_found');
    t.equal(res.body.error.code, 404, 'code is the integer status');
    t.same(Object.keys(res.body.error).sort(), ['code', 'message', 'param', 'reason', 'type'], 'the spec envelope');
    t.ok(res.headers['x-request-id'], 'errors carry x-request-id too');
  }

  const wrong = await gw.http('POST', '/health');
  t.equal(wrong.status, 405);
  t.equal(wrong.headers.allow, 'GET');
  t.equal(wrong.body.error.type, 'method_not_allowed');
  t.equal(wrong.body.error.reason, 'method_not_allowed');
  t.equal(wrong.body.error.code, 405);

  // A wrong method on the messages endpoint answers in Anthropic's error format, as its routes do.
  const messages = await gw.http('GET', '/v1/messages');
  t.equal(messages.status, 405);
  t.equal(messages.headers.allow, 'POST');
  t.equal(messages.body.type, 'error', 'the top-level "type": "error" Anthropic clients read');
  t.equal(messages.body.error.type, 'invalid_request_error');
  t.equal(messages.body.error.code, 405);
  t.equal(messages.body.error.reason, 'method_not_allowed');
});

t.test('body limits and malformed JSON', async (t) => {
  const gw = await startTestGateway({ server: { max_body_size: '2kb' } });
  t.teardown(() => gw.stop());

  const big = await gw.http('POST', '/api/auth/signup', { raw: JSON.stringify({ email: 'a@b.co', name: 'x'.repeat(4000), password: 'password1' }), headers: { 'content-type': 'application/json' } });
  t.equal(big.status, 413);
  t.equal(big.body.error.type, 'request_too_large');
  t.match(big.body.error.message, /2048 bytes/);
  t.equal(big.body.error.reason, 'body_too_large');
  t.equal(big.body.error.code, 413);

  // Chunked upload without content-length: the limit applies to the bytes received.
  const chunked = await request(`${gw.url}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: Readable.from(
      (function* () {
        for (let i = 0; i < 10; i++) yield Buffer.alloc(512, 'a');
      })(),
    ),
  });
  t.equal(chunked.statusCode, 413, 'chunked body past the limit is 413');
  await chunked.body.text();

  const broken = await gw.http('POST', '/api/auth/signup', { raw: '{"email": ', headers: { 'content-type': 'application/json' } });
  t.equal(broken.status, 400);
  t.equal(broken.body.error.reason, 'invalid_json');
  t.equal(broken.body.error.code, 400);

  const notObject = await gw.http('POST', '/api/auth/signup', { body: [1, 2] });
  t.equal(notObject.status, 400);
  t.match(notObject.body.error.message, /JSON object/);

  const empty = await gw.http('POST', '/api/auth/login');
  t.equal(empty.status, 400, 'an empty body is a 400, not a 500');
});

t.test('readiness with the real Redis', { skip: redisSkipReason() }, async (t) => {
  const gw = await startTestGateway({ redis: { url: REDIS_URL } });
  t.teardown(() => gw.stop());
  const ready = await gw.http('GET', '/health/ready');
  t.equal(ready.status, 200);
  t.same(ready.body, { status: 'ready', db: 'ok', redis: 'ok' });
});

t.test('readiness names Redis when it is down', async (t) => {
  // Nothing listens on port 1: the connection is refused at once.
  const gw = await startTestGateway({ redis: { url: 'redis://127.0.0.1:1' } });
  t.teardown(() => gw.stop());
  const ready = await gw.http('GET', '/health/ready');
  t.equal(ready.status, 503);
  t.same(ready.body, {
    status: 'not_ready',
    db: 'ok',
    redis: 'error',
    error: { message: 'Redis does not answer', type: 'service_unavailable', code: 503, reason: 'redis_unavailable', param: null },
  });
  const health = await gw.http('GET', '/health');
  t.equal(health.status, 200, 'liveness does not depend on Redis');
});

t.test('readiness names the database when it fails', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  await breakStore(gw);
  const ready = await gw.http('GET', '/health/ready');
  t.equal(ready.status, 503);
  t.same(ready.body, {
    status: 'not_ready',
    db: 'error',
    redis: 'disabled',
    error: { message: 'the database does not answer', type: 'service_unavailable', code: 503, reason: 'database_unavailable', param: null },
  });
});

t.test('graceful shutdown lets an in-flight request finish, then refuses', async (t) => {
  const gw = await startTestGateway();
  // A long-lived request in flight: the usage stream. Shutdown ends it cleanly.
  const stream = await request(`${gw.url}/api/management/usage/stream`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
  t.equal(stream.statusCode, 200);
  const text = stream.body.text();
  const closing = gw.stop();
  t.match(await text, /usage stream open/, 'the stream ended cleanly on shutdown');
  await closing;
  await t.rejects(request(`${gw.url}/health`), 'the port no longer accepts connections');
  t.equal(storeIsOpen(gw), false, 'the store is closed');
});

t.test('readiness: not ready while the ledger does not take the settled calls', { skip: TEST_BACKEND === 'postgres' ? 'SQLite\'s billing journal and write lock (PostgreSQL: test/e2e/postgres-daemons.test.ts)' : false }, async (t) => {
  const sim = await ProviderSimulator.start();
  t.teardown(() => sim.close());
  const gw = await startTestGateway({ database: { busy_timeout: '50ms', billing_batch_window: '10ms' }, providers: simulatedProviders(sim.url) });
  t.teardown(() => gw.stop());
  const funded = await fundedKey(gw);
  // Another process holds the write lock: the batch fails after busy_timeout and is retried.
  const writer = new Database(gw.app.config.database.path);
  writer.exec('BEGIN IMMEDIATE');
  const call = await gw.http('POST', '/v1/chat/completions', { token: funded.key, body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 } });
  t.equal(call.status, 200, 'the call is answered (settled in the journal)');
  await new Promise((resolve) => setTimeout(resolve, 150));
  const stuck = await gw.http('GET', '/health/ready');
  t.equal(stuck.status, 503);
  t.same(stuck.body, {
    status: 'not_ready',
    db: 'error',
    redis: 'disabled',
    reason: 'ledger_writes_failing',
    unapplied_calls: 1,
    error: { message: stuck.body.error?.message, type: 'service_unavailable', code: 503, reason: 'ledger_writes_failing', param: null },
  });
  t.match(stuck.body.error?.message, /ledger/);
  writer.exec('ROLLBACK');
  writer.close();
  await new Promise((resolve) => setTimeout(resolve, 600));
  const ready = await gw.http('GET', '/health/ready');
  t.equal(ready.status, 200, 'ready again once the batch went in');
  t.same(ready.body, { status: 'ready', db: 'ok', redis: 'disabled' });
  t.equal((await gw.app.store.ledger.list(funded.accountId, 10)).filter((e) => e.kind === 'charge').length, 1, 'charged once');
});
