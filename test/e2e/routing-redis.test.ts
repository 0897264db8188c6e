import t from 'tap';
import { fundedKey, simulatedProviders } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { header, postJson, twoDaemonsOnRedis, until } from '../support/e2e.js';
import { redisSkipReason } from '../support/redis.js';

/**
 * Routing state shared through Redis (issue 26): a deployment rested by one daemon is rested
 * for every daemon (failures counted together), and least-busy routing counts every daemon's
 * calls in flight.
 */

const skip = redisSkipReason();
const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
const price = { input_cost_per_1m: 10, output_cost_per_1m: 20 };

t.test('two daemons share a cooldown: failures counted together, the rest seen by both', { skip }, async (t) => {
  const [simA, simB] = await Promise.all([ProviderSimulator.start(), ProviderSimulator.start()]);
  t.teardown(async () => Promise.all([simA.close(), simB.close()]).then(() => undefined));
  const { a, b } = await twoDaemonsOnRedis(t, {
    providers: {
      ...simulatedProviders(simA.url),
      openai: { type: 'openai', base_url: `${simA.url}/v1`, api_key: 'sim-key', timeouts: fast },
      'openai-eu': { type: 'openai', base_url: `${simB.url}/v1`, api_key: 'sim-key', timeouts: fast },
    },
    routing: { cooldown: { failures: 3, window: '60s', duration: '60s' } },
    models: [{ id: 'openai/shared', name: 'shared', ...price, deployments: [{ provider: 'openai', upstream_model: 'shared' }, { provider: 'openai-eu', upstream_model: 'shared', priority: 2 }] }],
  });
  const funded = await fundedKey(a, { balance: 100 });
  const call = (url: string) => postJson(`${url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/shared', messages: [{ role: 'user', content: 'hi' }] });

  simA.setDefault({ error: { status: 500 } });
  for (const url of [a.url, b.url, a.url]) {
    const res = await call(url);
    t.equal(res.status, 200);
    t.equal(header(res, 'x-gateway-attempts'), '2', 'the failing deployment, then the next');
  }
  t.equal(simA.requests.length, 3, 'three failures, on two daemons');
  for (const gw of [a, b]) {
    await until('the rest to reach the daemon', () => gw.app.routes.deploymentRest('openai:shared', Date.now()) !== undefined, 1000);
  }
  t.match(b.app.routes.deploymentRest('openai:shared', Date.now()), { reason: 'failures' }, 'the other daemon rests it too, within a second');
  for (const url of [a.url, b.url]) {
    const res = await call(url);
    t.equal(header(res, 'x-gateway-attempts'), '1', 'neither daemon tries it while it rests');
    t.equal(header(res, 'x-gateway-provider'), 'openai-eu');
  }
  t.equal(simA.requests.length, 3);

  // A rest one daemon takes on an upstream's word (a long Retry-After) reaches the other as well.
  a.app.routes.restDeployment('openai-eu:shared', 120_000, 'retry-after', Date.now());
  await until('the other daemon to hear of it', () => b.app.routes.deploymentRest('openai-eu:shared', Date.now())?.reason === 'retry-after', 1000);
  t.pass('a rest announced by one daemon is applied by the other');
});

t.test('least-busy routing counts the other daemons\' calls in flight', { skip }, async (t) => {
  const sim = await ProviderSimulator.start();
  t.teardown(() => sim.close());
  const { a, b } = await twoDaemonsOnRedis(t, {
    providers: {
      ...simulatedProviders(sim.url),
      one: { type: 'openai', base_url: `${sim.url}/v1`, api_key: 'sim-key', timeouts: fast },
      two: { type: 'openai', base_url: `${sim.url}/v1`, api_key: 'sim-key', timeouts: fast },
    },
    routing: { strategy: 'least-busy' },
    models: [{ id: 'openai/busy', name: 'busy', ...price, deployments: [{ provider: 'one', upstream_model: 'busy' }, { provider: 'two', upstream_model: 'busy' }] }],
  });
  const funded = await fundedKey(a, { balance: 100 });
  // Daemon A holds five calls open on deployment one (as five long streams would).
  for (let i = 0; i < 5; i++) a.app.routes.begin('one:busy', Date.now());
  t.teardown(() => {
    for (let i = 0; i < 5; i++) a.app.routes.end('one:busy');
  });
  await until('daemon B to see them', () => b.app.routes.busy('one:busy') === 5, 3000);
  const served = [];
  for (let i = 0; i < 6; i++) {
    const res = await postJson(`${b.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/busy', messages: [{ role: 'user', content: 'hi' }] });
    served.push(header(res, 'x-gateway-provider'));
  }
  t.same(served, ['two', 'two', 'two', 'two', 'two', 'two'], 'daemon B sends its calls to the deployment daemon A is not busy on');
});
