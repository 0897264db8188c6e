import t from 'tap';
import type { ModelConfig } from '../../src/config/types.js';
import { Admitter } from '../../src/core/gateway/admission.js';
import { MemoryHoldStore } from '../../src/core/limits/holds.js';
import { MemoryRateLimiter } from '../../src/core/limits/rate-limit.js';
import { SqliteStore } from '../../src/store/store.js';

/**
 * Budgets that renew (issue 30), with an injected clock: a key's daily budget renews at
 * midnight in governance.timezone (IST: 18:30 UTC), not at midnight UTC; a monthly one on the
 * 1st; a duration counted from the key's creation. An account's spend limit covers all of its
 * keys together. The period's spend is the lifetime spend minus its base, the first call of a
 * new period begins it (once), and nothing is ever overspent within a period.
 */

const model = { id: 'openai/x', pricing: { inputPer1M: 1_000_000, outputPer1M: 1_000_000 } } as unknown as ModelConfig;
const INR = 1_000_000;

function setup(t: Tap, start: string, key: { budgetPeriod?: string; budgetMicros?: number | null; createdAt?: number } = {}) {
  const store = SqliteStore.open(':memory:');
  t.teardown(() => store.close());
  let now = Date.parse(start);
  const clock = {
    set: (iso: string) => {
      now = Date.parse(iso);
    },
  };
  store.accounts.insert({ id: 'acc_1', email: 'a@example.com', name: 'A', passwordHash: null, role: 'user', now: key.createdAt ?? now });
  store.ledger.credit('topup', { accountId: 'acc_1', amountMicros: 1000 * INR, now });
  for (const id of ['key_1', 'key_2']) {
    store.apiKeys.insert({
      id,
      accountId: 'acc_1',
      name: id,
      keyHash: `hash_${id}`,
      maskedKey: 'sk-...',
      budgetMicros: key.budgetMicros === undefined ? 2 * INR : key.budgetMicros,
      budgetPeriod: key.budgetPeriod ?? null,
      expiresAt: null,
      now: key.createdAt ?? now,
    });
  }
  const holds = new MemoryHoldStore();
  const admitter = new Admitter(store, new MemoryRateLimiter(), holds, undefined, { timeZone: 'Asia/Kolkata', now: () => now });
  let n = 0;
  /** Admits a call of `amount` µINR on `keyId` and, when admitted, charges it (settled at once). */
  const call = async (amountMicros: number, keyId = 'key_1'): Promise<string> => {
    const requestId = `req_${++n}`;
    try {
      const admission = await admitter.admitAmount({ requestId, accountId: 'acc_1', apiKeyId: keyId, rateLimit: 10_000, model, amountMicros, what: 'a call' });
      store.ledger.charge({ accountId: 'acc_1', amountMicros, requestId, apiKeyId: keyId, now });
      await holds.release(admission.hold);
      return 'ok';
    } catch (error) {
      return (error as { reason?: string }).reason ?? String(error);
    }
  };
  return { store, clock, call, admitter, holds };
}

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('a daily budget renews at midnight IST, not midnight UTC', async (t) => {
  const { store, clock, call } = setup(t, '2026-11-28T10:00:00Z', { budgetPeriod: 'daily' });
  t.equal(await call(1.5 * INR), 'ok');
  t.equal(await call(0.6 * INR), 'budget_exceeded', 'the day has 0.5 left: 0.6 is refused');
  t.equal(await call(0.5 * INR), 'ok', 'exactly what is left');
  t.equal(await call(1), 'budget_exceeded', 'the budget is used up');
  clock.set('2026-11-28T18:29:59Z');
  t.equal(await call(1), 'budget_exceeded', 'one second before midnight IST: still the same day');
  clock.set('2026-11-28T18:30:00Z');
  t.equal(await call(2 * INR), 'ok', 'midnight IST: a new day, the whole budget again');
  const key = store.apiKeys.byId('key_1');
  t.equal(key?.periodStart, Date.parse('2026-11-28T18:30:00Z'), 'the period began at midnight IST');
  t.equal(key?.spentMicros, 4 * INR, 'the lifetime spend counts every call');
  t.equal(key?.periodBaseMicros, 2 * INR, "the new period's base: what was spent before it");
  clock.set('2026-11-29T00:00:00Z');
  t.equal(await call(1), 'budget_exceeded', 'midnight UTC is not a new day');
});

t.test('a monthly budget renews on the 1st (IST), and the error says when', async (t) => {
  const { clock, call, admitter } = setup(t, '2026-11-15T06:00:00Z', { budgetPeriod: 'monthly' });
  t.equal(await call(2 * INR), 'ok');
  const error = await admitter.admitAmount({ requestId: 'probe', accountId: 'acc_1', apiKeyId: 'key_1', rateLimit: 10_000, model, amountMicros: 1, what: 'a call' }).catch((e: unknown) => e);
  t.match(error, { status: 402, reason: 'budget_exceeded', message: /for this period: it renews at 2026-11-30T18:30:00\.000Z/ });
  clock.set('2026-11-30T18:29:00Z');
  t.equal(await call(1), 'budget_exceeded', 'the 30th, 23:59 IST');
  clock.set('2026-11-30T18:30:00Z');
  t.equal(await call(1 * INR), 'ok', 'the 1st, 00:00 IST');
  t.equal(await call(1.5 * INR), 'budget_exceeded', 'and the new month holds only its budget');
});

t.test('a duration counts from the key\'s creation', async (t) => {
  const created = Date.parse('2026-11-28T10:07:00Z');
  const { clock, call } = setup(t, '2026-11-28T10:07:00Z', { budgetPeriod: '12h', createdAt: created });
  t.equal(await call(2 * INR), 'ok');
  clock.set('2026-11-28T22:06:59Z');
  t.equal(await call(1), 'budget_exceeded');
  clock.set('2026-11-28T22:07:00Z');
  t.equal(await call(2 * INR), 'ok', '12 h after creation');
});

t.test('no period: the budget is for the key\'s life', async (t) => {
  const { clock, call } = setup(t, '2026-11-28T10:00:00Z');
  t.equal(await call(2 * INR), 'ok');
  clock.set('2027-06-01T00:00:00Z');
  t.equal(await call(1), 'budget_exceeded', 'months later, still spent');
});

t.test("an account's spend limit covers its keys together, renews with its period, and is never overspent", async (t) => {
  const { store, clock, call } = setup(t, '2026-11-28T10:00:00Z', { budgetMicros: null });
  store.accounts.setSpendLimit('acc_1', 3 * INR, 'daily', Date.parse('2026-11-28T10:00:00Z'));
  t.equal(await call(2 * INR, 'key_1'), 'ok');
  t.equal(await call(1.5 * INR, 'key_2'), 'account_spend_limit', 'the other key: 1.0 left of the account\'s 3.0');
  t.equal(await call(1 * INR, 'key_2'), 'ok');
  t.equal(await call(1, 'key_1'), 'account_spend_limit', 'reached, whatever the wallet holds');
  t.ok((store.accounts.byId('acc_1')?.balanceMicros ?? 0) > 900 * INR, 'the wallet still holds money');
  clock.set('2026-11-28T18:30:00Z');
  t.equal(await call(3 * INR, 'key_2'), 'ok', 'a new day in IST');
  const account = store.accounts.byId('acc_1');
  t.equal(account?.spentMicros, 6 * INR, "the account's lifetime spend");
  t.equal(account?.periodBaseMicros, 3 * INR);
  store.accounts.setSpendLimit('acc_1', null, null, Date.parse('2026-11-28T18:31:00Z'));
  t.equal(await call(5 * INR, 'key_1'), 'ok', 'no limit once removed');
});

t.test('concurrent calls never overspend a period: holds count against it', async (t) => {
  const { store, admitter, holds } = setup(t, '2026-11-28T10:00:00Z', { budgetPeriod: 'daily' });
  store.accounts.setSpendLimit('acc_1', 5 * INR, 'weekly', Date.parse('2026-11-28T10:00:00Z'));
  const attempts = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      admitter.admitAmount({ requestId: `c_${i}`, accountId: 'acc_1', apiKeyId: 'key_1', rateLimit: 10_000, model, amountMicros: 0.5 * INR, what: 'a call' }).then(
        () => 'ok',
        (e: { reason?: string }) => e.reason,
      ),
    ),
  );
  t.equal(attempts.filter((r) => r === 'ok').length, 4, 'the key\'s 2.0 covers four holds of 0.5');
  t.equal((await holds.held('acc_1', 'key_1')).keyHeldMicros, 2 * INR);
});
