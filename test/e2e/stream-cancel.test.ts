import t from 'tap';
import { decodeChatCompletion } from '../../src/api/chat/decode.js';
import { CallSignal } from '../../src/core/abort.js';
import { errors } from '../../src/core/errors.js';
import type { CallContext } from '../../src/core/gateway/call.js';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { balanceMicros, charges, noHolds, until, usageRow } from '../support/e2e.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * A stream the ingress never reads (its encoder or its first write failed): cancel() closes the
 * upstream, releases the hold and records the call, uncharged. Without it the call's generator
 * never ran, so its own cleanup never did either: the hold stayed and the upstream hung open.
 */

t.test('cancel() on an unread stream: upstream closed, no hold, recorded with the failure, not charged', async (t) => {
  const sim = await ProviderSimulator.start();
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), cache: { enabled: true, exact: { models: ['openai/gpt-4o-mini'] }, hit_price: 0.5 } });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const funded = await fundedKey(gw, { balance: 10 });
  const before = await balanceMicros(gw, funded.accountId);
  const context = (requestId: string): CallContext => ({ requestId, endpoint: 'chat.completions', accountId: funded.accountId, apiKeyId: funded.keyId, rateLimit: 1000, signal: new CallSignal(), startedAt: Date.now(), cache: true });
  const draft = (content: string) => decodeChatCompletion({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 50, stream: true }).draft;

  // An upstream stream, opened and never read.
  sim.enqueue({ text: 'a long answer that is never read by anyone at all', chunkDelayMs: 50 });
  const outcome = await gw.app.chat.stream(draft('never read'), context('req_cancel_upstream'));
  t.ok((await gw.app.holds.held(funded.accountId, funded.keyId)).accountHeldMicros > 0, 'the call holds funds while its stream is open');
  await outcome.cancel(errors.internal());
  await until('the upstream to see its connection closed', () => sim.activeRequests() === 0, 5000);
  await noHolds(t, gw, funded);
  t.match(await usageRow(gw, 'req_cancel_upstream'), { status: 500, errorType: 'internal_error', costMicros: 0 }, 'recorded with the failure');
  t.same(await charges(gw, funded.accountId, 'req_cancel_upstream'), [], 'not charged');

  // A cache hit's replay, likewise: fill the cache, then a hit that is never read.
  const fill = await gw.app.chat.complete({ ...draft('cached question'), stream: false }, context('req_fill'));
  t.ok(fill.costMicros > 0, 'the first call fills the cache');
  await gw.app.cache?.flush();
  await until('the answer stored', () => (gw.app.cache?.internals.store?.size.entries ?? 0) >= 1);
  const hit = await gw.app.chat.stream(draft('cached question'), context('req_cancel_hit'));
  t.equal(hit.headers['x-gateway-cache'], 'exact', 'a hit');
  await hit.cancel(errors.internal());
  await noHolds(t, gw, funded);
  t.match(await usageRow(gw, 'req_cancel_hit'), { status: 500, costMicros: 0 }, 'the unread hit is recorded');
  t.same(await charges(gw, funded.accountId, 'req_cancel_hit'), [], 'and not charged');
  gw.app.settlement.drain();
  t.equal(await balanceMicros(gw, funded.accountId), before - fill.costMicros, 'the wallet paid for the one call that was answered');

  // A stream being read when cancelled ends as the client's abort does (settled once, 499).
  sim.enqueue({ text: 'one two three four five six seven eight', chunkDelayMs: 20 });
  const read = await gw.app.chat.stream(draft('read a little'), context('req_cancel_read'));
  await read.events.next();
  await read.cancel(errors.internal());
  await noHolds(t, gw, funded);
  t.match(await usageRow(gw, 'req_cancel_read'), { status: 499 }, 'a started stream ends as an abort');
});
