import t from 'tap';
import type { ModelConfig } from '../../src/config/types.js';
import { Admitter } from '../../src/core/gateway/admission.js';
import { isGatewayError } from '../../src/core/errors.js';
import { MemoryHoldStore } from '../../src/core/limits/holds.js';
import { MemoryRateLimiter } from '../../src/core/limits/rate-limit.js';
import { worstCaseMicros } from '../../src/core/pricing.js';
import type { Funds, Store } from '../../src/store/types.js';

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

  // Another call settles while this one is admitted: its charge reaches the balance read after
  // this call's hold totals were taken, and its hold is released only then. Counted twice (its
  // hold and its charge), the wallet would look ₹(other) poorer than it is: the refusal is
  // tried once more, now that the release is issued, and the call is admitted (issue 31's CI).
  for (const [wallet, admitted] of [[4, true], [2.5, false]] as const) {
    t.test(`${name}: a call settled between the hold and the balance read is not counted twice (wallet ${wallet}x the hold: ${admitted ? 'admitted' : 'still refused'})`, async (t) => {
      const holds = new MemoryHoldStore();
      const ours = name.includes('media') ? 500 : worstCaseMicros(model.pricing, 10, 10, false);
      const other = { id: 'req_other', accountId: 'acc_1', keyId: 'key_2', amountMicros: 2 * ours };
      await holds.acquire(other);
      let balance = wallet * ours;
      let reads = 0;
      const funds = (): Funds => ({ balanceMicros: balance, account: { spentMicros: 0, spendLimitMicros: null, spendPeriod: null, periodStart: 0, periodBaseMicros: 0, createdAt: 0 }, key: undefined });
      const store = {
        funds: async () => {
          reads += 1;
          if (reads === 1) {
            balance -= other.amountMicros; // the other call's charge commits...
            await holds.release(other); // ...and its hold goes after it
          }
          return funds();
        },
        barrier: { pass: () => false },
      } as unknown as Store;
      const result = await admit(new Admitter(store, new MemoryRateLimiter(), holds), `req3_${name}`).then(
        (admission) => admission,
        (e: unknown) => e,
      );
      t.equal(reads, 2, 'the balance is read again once the release was issued');
      if (admitted) t.match(result, { hold: { amountMicros: ours } }, 'admitted: the wallet covers it once counted once');
      else t.match(result, { status: 402 }, 'a wallet that does not cover it is still refused');
      t.same(await holds.held('acc_1', 'key_1'), { accountHeldMicros: admitted ? ours : 0, keyHeldMicros: admitted ? ours : 0 });
    });
  }

  // The same on PostgreSQL, when this process has not yet had the other call's commit answered:
  // the read shows the charge, the hold is released only once the commit's answer is in. A
  // refusal waits for the commits in flight (AdmitterOptions.committing), then tries again.
  t.test(`${name}: a commit still in flight when the read shows its charge is waited for, then counted once`, async (t) => {
    const holds = new MemoryHoldStore();
    const ours = name.includes('media') ? 500 : worstCaseMicros(model.pricing, 10, 10, false);
    const other = { id: 'req_other', accountId: 'acc_1', keyId: 'key_2', amountMicros: 2 * ours };
    await holds.acquire(other);
    let balance = 4 * ours;
    let reads = 0;
    let inFlight: Promise<void> | undefined;
    const store = {
      funds: async (): Promise<Funds> => {
        reads += 1;
        if (reads === 1) {
          balance -= other.amountMicros; // committed in the database; its answer not yet here
          inFlight = new Promise<void>((resolve) => setTimeout(resolve, 20)).then(() => holds.release(other));
        }
        return { balanceMicros: balance, account: { spentMicros: 0, spendLimitMicros: null, spendPeriod: null, periodStart: 0, periodBaseMicros: 0, createdAt: 0 }, key: undefined };
      },
      barrier: { pass: () => false },
    } as unknown as Store;
    const admitter = new Admitter(store, new MemoryRateLimiter(), holds, undefined, { committing: () => inFlight });
    const result = await admit(admitter, `req4_${name}`).then(
      (admission) => admission,
      (e: unknown) => e,
    );
    t.equal(reads, 2, 'read again once the commit in flight released its hold');
    t.match(result, { hold: { amountMicros: ours } }, 'admitted');
  });

  t.test(`${name}: a refusal with no release since the hold is not tried again`, async (t) => {
    const holds = new MemoryHoldStore();
    let reads = 0;
    const store = {
      funds: async (): Promise<Funds> => {
        reads += 1;
        return { balanceMicros: 1, account: { spentMicros: 0, spendLimitMicros: null, spendPeriod: null, periodStart: 0, periodBaseMicros: 0, createdAt: 0 }, key: undefined };
      },
      barrier: { pass: () => false },
    } as unknown as Store;
    const error = await admit(new Admitter(store, new MemoryRateLimiter(), holds), `req4_${name}`).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.match(error, { status: 402 });
    t.equal(reads, 1, 'one read');
  });
}
