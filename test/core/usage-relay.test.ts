import OpenAI from 'openai';
import pino from 'pino';
import t from 'tap';
import { fundedKey, simulatedProviders, startTestGateway, testConfig } from '../support/gateway.js';
import { openUsageStream } from '../support/management.js';
import { REDIS_URL, redisSkipReason } from '../support/redis.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { startGateway } from '../../src/main.js';

/** With Redis, the live usage feed of any daemon shows every daemon's calls. */

t.test('a call on one daemon appears on the live feed opened on another', { skip: redisSkipReason() }, async (t) => {
  const sim = await ProviderSimulator.start();
  t.teardown(() => sim.close());
  const raw = { providers: simulatedProviders(sim.url), redis: { url: REDIS_URL, key_prefix: `gw-feed-${Date.now()}:` } };
  const a = await startTestGateway(raw);
  t.teardown(() => a.stop());
  const b = await startGateway(testConfig(a.dir, raw), { logger: pino({ level: 'silent' }) });
  t.teardown(() => b.close());
  const funded = await fundedKey(a, { balance: 1 });
  const feedOnB = await openUsageStream({ ...a, url: b.url }, a.adminKey);
  t.teardown(() => feedOnB.close());
  t.equal(feedOnB.status, 200);
  const feedOnA = await openUsageStream(a, a.adminKey);
  t.teardown(() => feedOnA.close());

  const { response } = await new OpenAI({ apiKey: funded.key, baseURL: `${a.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  const requestId = response.headers.get('x-request-id');
  const seenOnB = await feedOnB.nextEvent();
  t.equal(seenOnB?.event, 'usage');
  t.match(JSON.parse(seenOnB?.data ?? '{}'), { request_id: requestId, account_id: funded.accountId, model: 'openai/gpt-4o-mini', status: 200 }, 'daemon b shows daemon a\'s call');
  const seenOnA = await feedOnA.nextEvent();
  t.match(JSON.parse(seenOnA?.data ?? '{}'), { request_id: requestId }, 'and daemon a its own, once');
});
