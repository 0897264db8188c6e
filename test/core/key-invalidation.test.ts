import t from 'tap';
import pino from 'pino';
import { fundedKey, startTestGateway, testConfig } from '../support/gateway.js';
import { postJson, until } from '../support/e2e.js';
import { REDIS_URL, redisSkipReason } from '../support/redis.js';
import { startGateway } from '../../src/main.js';

/** Key changes on one daemon seen by the others through Redis pub/sub, not after the 5 s key cache. */

t.test('a key revoked on one daemon is refused by the other at once', { skip: redisSkipReason() }, async (t) => {
  const raw = { redis: { url: REDIS_URL, key_prefix: `gw-keys-${Date.now()}:` } };
  const a = await startTestGateway(raw);
  t.teardown(() => a.stop());
  const b = await startGateway(testConfig(a.dir, raw), { logger: pino({ level: 'silent' }) });
  t.teardown(() => b.close());
  const funded = await fundedKey(a, { balance: 1 });
  const models = async () => (await postJson(`${b.url}/v1/embeddings`, { authorization: `Bearer ${funded.key}` }, { model: 'nope', input: 'x' })).status;
  // Daemon b has the key cached (a 404 for the unknown model means the key was accepted).
  t.equal(await models(), 404, 'b accepts the key (and caches it)');
  const revokedAt = Date.now();
  const revoked = await a.http('DELETE', `/api/management/api-keys/${funded.keyId}`, { token: a.adminKey });
  t.equal(revoked.status, 200);
  await until('b refuses the revoked key', async () => (await models()) === 401, 2000);
  const took = Date.now() - revokedAt;
  t.ok(took < 2000, `refused by the other daemon ${took} ms after the revocation (its key cache keeps records 5 s)`);
  const body = await postJson(`${b.url}/v1/embeddings`, { authorization: `Bearer ${funded.key}` }, { model: 'nope', input: 'x' });
  t.match(body.json, { error: { code: 401 } });
});
