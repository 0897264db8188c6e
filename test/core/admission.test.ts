import t from 'tap';
import type { ModelConfig } from '../../src/config/types.js';
import { Admitter } from '../../src/core/gateway/admission.js';
import { isGatewayError } from '../../src/core/errors.js';
import { MemoryHoldStore } from '../../src/core/limits/holds.js';
import { MemoryRateLimiter } from '../../src/core/limits/rate-limit.js';
import type { Store } from '../../src/store/types.js';

/**
 * Admission when the store cannot answer the wallet read (a PostgreSQL connection cut past its
 * retries): the call gets 503 database_unavailable, not the "Redis is unreachable" error of a
 * limits failure, and the hold it took is released (a leaked hold would shrink what the wallet
 * can spend until a restart).
 */

const model = { id: 'openai/x', pricing: { inputPer1M: 1_000_000, outputPer1M: 1_000_000 } } as unknown as ModelConfig;

function storeFailing(error: unknown): Store {
  return {
    funds: async () => {
      throw error;
    },
    barrier: { pass: () => false },
  } as unknown as Store;
}

const cut = Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });

for (const [name, admit] of [
  ['a metered (chat) call', (a: Admitter, id: string) => a.admit({ requestId: id, accountId: 'acc_1', apiKeyId: 'key_1', rateLimit: 100, model, promptTokens: 10, cacheWrites: false, requestedMaxTokens: 10, maxTokensField: 'max_tokens' })],
  ['a fixed-cost (media) call', (a: Admitter, id: string) => a.admitAmount({ requestId: id, accountId: 'acc_1', apiKeyId: 'key_1', rateLimit: 100, model, amountMicros: 500, what: 'an image' })],
] as const) {
  t.test(`${name}: a store that cannot answer is 503 database_unavailable, and its hold is released`, async (t) => {
    const holds = new MemoryHoldStore();
    const admitter = new Admitter(storeFailing(cut), new MemoryRateLimiter(), holds);
    const error = await admit(admitter, `req_${name}`).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(isGatewayError(error), 'a gateway error');
    t.match(error, { status: 503, reason: 'database_unavailable' });
    t.same(await holds.held('acc_1', 'key_1'), { accountHeldMicros: 0, keyHeldMicros: 0 }, 'no hold left behind');
  });

  t.test(`${name}: any other store error is released too, and passes through`, async (t) => {
    const holds = new MemoryHoldStore();
    const admitter = new Admitter(storeFailing(new TypeError('a bug')), new MemoryRateLimiter(), holds);
    const error = await admit(admitter, `req2_${name}`).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.match(error, { status: 503, reason: 'limits_unavailable' }, 'reported as before (not a database outage)');
    t.same(await holds.held('acc_1', 'key_1'), { accountHeldMicros: 0, keyHeldMicros: 0 }, 'no hold left behind');
  });
}
