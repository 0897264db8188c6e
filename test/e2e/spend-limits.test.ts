import t from 'tap';
import { charges, header, postJson } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * Budgets that renew and account spend limits through the API (issue 30): the fields on the
 * key and account objects, their validation, and calls refused once an account's keys
 * together reach its limit (402 account_spend_limit) while the wallet still holds money. The
 * periods' arithmetic with an injected clock is test/core/budget-periods.test.ts.
 */

let sim: ProviderSimulator;
let gw: TestGateway;

t.before(async () => {
  sim = await ProviderSimulator.start();
  gw = await startTestGateway({ providers: simulatedProviders(sim.url), governance: { timezone: 'Asia/Kolkata' } });
});
t.teardown(async () => {
  await gw?.stop();
  await sim?.close();
});

const chat = (key: string) =>
  postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 });

t.test('a key with budget_period shows spent_this_period and when it renews', async (t) => {
  const { key, keyId } = await fundedKey(gw, { balance: 20, key: { budget: 5, budget_period: 'monthly' } });
  const before = await gw.http('GET', `/api/management/api-keys/${keyId}`, { token: gw.adminKey });
  t.match(before.body, { budget: 5, budget_period: 'monthly', spent_this_period: 0, max_parallel: null });
  // The 1st of next month, 00:00 IST (18:30 UTC the day before).
  const resets = new Date(before.body.period_resets_at as string);
  t.equal(resets.getUTCHours() * 60 + resets.getUTCMinutes(), 18 * 60 + 30, 'renews at midnight IST');
  t.equal(new Date(resets.getTime() + 5.5 * 3_600_000).getUTCDate(), 1, 'on the 1st');
  sim.setDefault({ text: 'hello there' });
  const res = await chat(key);
  t.equal(res.status, 200, res.text);
  gw.app.settlement.drain();
  const cost = -((await charges(gw, (before.body.account_id as string), header(res, 'x-request-id')))[0]?.amountMicros ?? 0);
  t.ok(cost > 0, 'the call was charged');
  const after = await gw.http('GET', `/api/management/api-keys/${keyId}`, { token: gw.adminKey });
  t.equal(after.body.spent_this_period, cost / 1e6, 'the call counts in this period');
  t.equal(after.body.spent, cost / 1e6);
  const normalized = await gw.http('PATCH', `/api/management/api-keys/${keyId}`, { token: gw.adminKey, body: { budget_period: '24h' } });
  t.equal(normalized.body.budget_period, '1d', 'a duration in its largest exact unit');
  t.equal(normalized.body.spent_this_period, 0, 'a changed period starts over');
  for (const bad of ['yearly', '0m', '366d', 5]) {
    const refused = await gw.http('PATCH', `/api/management/api-keys/${keyId}`, { token: gw.adminKey, body: { budget_period: bad } });
    t.equal(refused.status, 400, `budget_period ${JSON.stringify(bad)}`);
    t.match(refused.body.error, { param: 'budget_period', message: /^budget_period: must be daily, weekly, monthly or a duration/ });
  }
  const cleared = await gw.http('PATCH', `/api/management/api-keys/${keyId}`, { token: gw.adminKey, body: { budget_period: null } });
  t.match(cleared.body, { budget_period: null, period_resets_at: null, spent_this_period: cost / 1e6 }, 'null: the budget is for the key\'s life again');
});

t.test("an account's spend limit: set by an admin, shown with the account, shared by its keys", async (t) => {
  const first = await fundedKey(gw, { balance: 100 });
  const second = await gw.http('POST', `/api/management/accounts/${first.accountId}/api-keys`, { token: gw.adminKey, body: { name: 'second' } });
  const set = await gw.http('PATCH', `/api/management/accounts/${first.accountId}`, { token: gw.adminKey, body: { spend_limit: 0.003, spend_period: 'daily' } });
  t.equal(set.status, 200, set.text);
  t.match(set.body, { id: first.accountId, spend_limit: 0.003, spend_period: 'daily', spent_this_period: 0, balance: 100 });
  t.ok(typeof set.body.period_resets_at === 'string', 'the next reset is shown');

  sim.setDefault({ text: 'hello there' });
  let refused;
  const statuses: number[] = [];
  for (let i = 0; i < 40 && !refused; i++) {
    const res = await chat(i % 2 === 0 ? first.key : (second.body.api_key as string));
    statuses.push(res.status);
    if (res.status !== 200) refused = res;
    gw.app.settlement.drain();
  }
  t.ok(refused, `refused once the keys together reached the limit (${statuses.join(',')})`);
  t.ok(statuses.filter((status) => status === 200).length >= 4, 'both keys called under it first (alternating)');
  t.equal(refused?.status, 402);
  t.match(refused?.json.error, { code: 402, reason: 'account_spend_limit', message: /spend limit/ });
  const account = await gw.http('GET', `/api/management/accounts/${first.accountId}`, { token: gw.adminKey });
  t.ok(account.body.spent_this_period > 0 && account.body.spent_this_period <= 0.003, `never past the limit (${account.body.spent_this_period})`);
  t.ok(account.body.balance > 99, 'the wallet still holds money');

  const raised = await gw.http('PATCH', `/api/management/accounts/${first.accountId}`, { token: gw.adminKey, body: { spend_limit: 0.004, spend_period: 'daily' } });
  t.match(raised.body, { spend_limit: 0.004, spend_period: 'daily', spent_this_period: account.body.spent_this_period }, 'a raised limit keeps what the period spent (the same period sent again)');
  t.equal((await chat(first.key)).status, 200, 'and the raise is what may still be spent');
  const removed = await gw.http('PATCH', `/api/management/accounts/${first.accountId}`, { token: gw.adminKey, body: { spend_limit: 0 } });
  t.match(removed.body, { spend_limit: null, spend_period: null, spent_this_period: null });
  t.equal((await chat(first.key)).status, 200, 'calls go through once it is removed');

  for (const [body, param] of [
    [{ spend_limit: -1 }, 'spend_limit'],
    [{ spend_limit: 'lots' }, 'spend_limit'],
    [{ spend_period: 'fortnightly' }, 'spend_period'],
    [{ balance: 5 }, 'balance'],
    [{ spend_period: 'daily' }, 'spend_period'],
  ] as const) {
    const res = await gw.http('PATCH', `/api/management/accounts/${first.accountId}`, { token: gw.adminKey, body });
    t.equal(res.status, 400, JSON.stringify(body));
    t.equal(res.body.error.param, param);
  }
  const byUser = await gw.http('PATCH', `/api/management/accounts/${first.accountId}`, { token: (await userManagementKey(first.accountId)) as string, body: { spend_limit: 5 } });
  t.equal(byUser.status, 403, 'only an admin sets it');
  sim.reset();
});

async function userManagementKey(accountId: string): Promise<string | undefined> {
  const res = await gw.http('POST', `/api/management/accounts/${accountId}/management-keys`, { token: gw.adminKey, body: { name: 'user tool' } });
  return res.body.management_key as string | undefined;
}
