import t from 'tap';
import { at, str } from './check.js';
import { CHAT, conforms, expectError, funded, MODEL, PASSWORD, sim, signup, startDaemon, uniqueEmail } from './harness.js';
import { API_KEY, CHAT_COMPLETION, DECISIONS, LIMIT_VALUES, LIMITS } from './spec.js';

/**
 * Contract: the spec's Limits table. Its two API-key rate-limit statements conflict; the
 * gateway picked the authentication reference's (1..10000, default 10000 through the API,
 * above 10000 rejected) and only that one is asserted here.
 */

const daemon = await startDaemon(t);
const session = await signup(daemon);
const { rateLimit, temperature, passwordMin } = LIMIT_VALUES;

async function createKey(body: Record<string, unknown>) {
  return daemon.call('POST', '/api/api-keys', { token: session.token, body });
}

t.test(`${LIMITS[0]?.limit}: ${LIMITS[0]?.value}`, async (t) => {
  const byDefault = await createKey({ name: 'default rate' });
  t.equal(byDefault.status, DECISIONS.keyCreateStatus);
  t.equal(at(byDefault.body, 'rate_limit'), rateLimit.default, `the default through the API is ${rateLimit.default}`);

  const viaManagement = await daemon.call('POST', `/api/management/accounts/${session.userId}/api-keys`, { token: daemon.gw.adminKey, body: { name: 'default rate (management API)' } });
  t.equal(at(viaManagement.body, 'rate_limit'), rateLimit.default, `the management API's default is ${rateLimit.default} too`);

  for (const value of [rateLimit.min, 60, rateLimit.max]) {
    const res = await createKey({ name: `rate ${value}`, rate_limit: value });
    t.equal(res.status, DECISIONS.keyCreateStatus, `rate_limit ${value} is accepted`);
    conforms(t, res.body, API_KEY, `key with rate_limit ${value}`);
    t.equal(at(res.body, 'rate_limit'), value, `rate_limit ${value} is kept`);
  }
  for (const value of [rateLimit.max + 1, 1_000_000, rateLimit.min - 1, -5, 1.5, '100']) {
    expectError(t, await createKey({ name: 'bad rate', rate_limit: value }), 400, `create with rate_limit ${JSON.stringify(value)}`, { param: 'rate_limit' });
  }

  // Errors 3: "rejected when a key is created or updated".
  const id = str(byDefault.body, 'id') ?? '';
  expectError(t, await daemon.call('PATCH', `/api/api-keys/${id}`, { token: session.token, body: { rate_limit: rateLimit.max + 1 } }), 400, 'update to rate_limit 10001', { param: 'rate_limit' });
  const lowered = await daemon.call('PATCH', `/api/api-keys/${id}`, { token: session.token, body: { rate_limit: rateLimit.max } });
  t.equal(at(lowered.body, 'rate_limit'), rateLimit.max, `update to rate_limit ${rateLimit.max} is accepted`);

  // The limit is requests per minute for the key: N calls pass, the next is refused.
  const limited = await funded(daemon, 100, { rate_limit: 3 });
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await daemon.call('POST', CHAT.path, { token: limited.key, body: CHAT.body(MODEL, 'hi') })).status);
  t.same(statuses, [200, 200, 200, 429], 'rate_limit 3: three calls in the minute, the fourth is 429');
});

t.test(`${LIMITS[1]?.limit}: ${LIMITS[1]?.value}`, async (t) => {
  const byDefault = await createKey({ name: 'default budget' });
  t.equal(at(byDefault.body, 'budget'), LIMIT_VALUES.budgetUnlimited, 'unlimited (0) is the default');
  const zero = await createKey({ name: 'zero budget', budget: 0 });
  t.equal(at(zero.body, 'budget'), 0, 'budget 0 is unlimited');
  const fractional = await createKey({ name: 'fractional budget', budget: 12.345678 });
  t.equal(at(fractional.body, 'budget'), 12.345678, 'a budget in INR, with its fraction');

  // An unlimited key spends as long as the wallet lasts.
  const unlimited = await funded(daemon, 100, { budget: 0 });
  for (let i = 0; i < 3; i++) {
    const res = await daemon.call('POST', CHAT.path, { token: unlimited.key, body: CHAT.body(MODEL, 'hi') });
    t.equal(res.status, 200, `budget 0: call ${i + 1} passes`);
  }

  // "When the budget is exceeded, the key stops working." The gateway caps each call's charge at
  // what it held for it; without max_tokens it holds (and, with a large usage, charges) about
  // all the budget has left, so a ₹0.001 budget is spent to below any call's price in a call or two.
  const capped = await funded(daemon, 100, { budget: 0.001 });
  const statuses: number[] = [];
  let refusal: Awaited<ReturnType<typeof daemon.call>> | undefined;
  for (let i = 0; i < 20 && refusal === undefined; i++) {
    const res = await daemon.call('POST', CHAT.path, { token: capped.key, body: CHAT.body(MODEL, sim({ usage: { input: 100_000, output: 100_000 } })) });
    statuses.push(res.status);
    if (res.status !== 200) refusal = res;
  }
  t.ok(statuses.filter((s) => s === 200).length >= 1, `calls within the budget pass (${statuses.join(', ')})`);
  t.ok(refusal, 'then the key is refused');
  if (refusal) expectError(t, refusal, 402, 'a call once the budget is spent', { type: DECISIONS.budgetExceededType });
  const after = await daemon.call('POST', CHAT.path, { token: capped.key, body: CHAT.body(MODEL, 'hi', { max_tokens: 1 }) });
  expectError(t, after, 402, 'the key stays stopped, even for a 1-token call', { type: DECISIONS.budgetExceededType });
  const otherKey = await daemon.call('POST', `/api/management/accounts/${capped.accountId}/api-keys`, { token: daemon.gw.adminKey, body: { name: 'second key' } });
  const sameWallet = await daemon.call('POST', CHAT.path, { token: str(otherKey.body, 'api_key') ?? '', body: CHAT.body(MODEL, 'hi', { max_tokens: 5 }) });
  t.equal(sameWallet.status, 200, 'only that key stops: another key of the same wallet still works');

  // "When a key is updated, omitting budget keeps the current budget; 0 sets it to unlimited."
  const id = str(fractional.body, 'id') ?? '';
  const renamed = await daemon.call('PATCH', `/api/api-keys/${id}`, { token: session.token, body: { name: 'renamed' } });
  t.equal(renamed.status, 200, 'update without budget');
  t.equal(at(renamed.body, 'budget'), 12.345678, 'omitting budget keeps the current budget');
  const cleared = await daemon.call('PATCH', `/api/api-keys/${id}`, { token: session.token, body: { budget: 0 } });
  t.equal(at(cleared.body, 'budget'), 0, 'budget 0 sets it to unlimited');
  expectError(t, await createKey({ name: 'negative', budget: -1 }), 400, 'a negative budget', { param: 'budget' });
});

t.test(`${LIMITS[6]?.limit}: ${LIMITS[6]?.value} (${LIMITS[6]?.appliesTo})`, async (t) => {
  const key = await funded(daemon, 100);
  for (const value of [temperature.min, 0.7, 1, temperature.max]) {
    const res = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body(MODEL, 'hi', { temperature: value }) });
    t.equal(res.status, 200, `temperature ${value} is accepted`);
  }
  for (const value of [temperature.min - 0.01, temperature.max + 0.01, 3, -1]) {
    expectError(t, await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body(MODEL, 'hi', { temperature: value }) }), 400, `temperature ${value}`, {
      param: 'temperature',
      type: 'invalid_request_error',
    });
  }
});

t.test(`${LIMITS[7]?.limit}: ${LIMITS[7]?.value} (${LIMITS[7]?.appliesTo}); email format; name required`, async (t) => {
  const short = 'x'.repeat(passwordMin - 1);
  expectError(t, await daemon.call('POST', '/api/auth/signup', { body: { email: uniqueEmail(), password: short, name: 'N' } }), 400, `a password of ${passwordMin - 1} characters`, {
    param: 'password',
  });
  const exact = await daemon.call('POST', '/api/auth/signup', { body: { email: uniqueEmail(), password: 'y'.repeat(passwordMin), name: 'N' } });
  t.equal(exact.status, DECISIONS.signupStatus, `a password of ${passwordMin} characters is accepted`);
  expectError(t, await daemon.call('POST', '/api/auth/signup', { body: { email: 'no-at-sign', password: PASSWORD, name: 'N' } }), 400, 'an email without @', { param: 'email' });
  expectError(t, await daemon.call('POST', '/api/auth/signup', { body: { email: uniqueEmail(), password: PASSWORD } }), 400, 'no name', { param: 'name' });
});

// Media limits.
const key = await funded(daemon, 100);
t.test(`${LIMITS[2]?.limit}: ${LIMITS[2]?.value}`, async (t) => {
  const ok = await daemon.call('POST', '/v1/audio/speech', { token: key.key, body: { model: 'openai/tts-1', voice: 'alloy', input: 'x'.repeat(LIMIT_VALUES.speechInputMax) } });
  t.equal(ok.status, 200, `${LIMIT_VALUES.speechInputMax} characters are accepted`);
  expectError(t, await daemon.call('POST', '/v1/audio/speech', { token: key.key, body: { model: 'openai/tts-1', voice: 'alloy', input: 'x'.repeat(LIMIT_VALUES.speechInputMax + 1) } }), 400, 'one character more', {
    param: 'input',
  });
});

t.test(`${LIMITS[3]?.limit}: ${LIMITS[3]?.value}`, async (t) => {
  for (const speed of [LIMIT_VALUES.speed.min, 1, LIMIT_VALUES.speed.max]) {
    t.equal((await daemon.call('POST', '/v1/audio/speech', { token: key.key, body: { model: 'openai/tts-1', voice: 'alloy', input: 'hi', speed } })).status, 200, `speed ${speed}`);
  }
  for (const speed of [LIMIT_VALUES.speed.min - 0.01, LIMIT_VALUES.speed.max + 0.01]) {
    expectError(t, await daemon.call('POST', '/v1/audio/speech', { token: key.key, body: { model: 'openai/tts-1', voice: 'alloy', input: 'hi', speed } }), 400, `speed ${speed}`, { param: 'speed' });
  }
});

t.test(`${LIMITS[4]?.limit}: ${LIMITS[4]?.value}`, async (t) => {
  expectError(t, await daemon.call('POST', '/v1/images/generations', { token: key.key, body: { prompt: 'x'.repeat(LIMIT_VALUES.imagePromptMaxV3 + 1) } }), 400, 'a v3 prompt over the limit', { param: 'prompt' });
});

t.test(`${LIMITS[5]?.limit}: ${LIMITS[5]?.value}`, async (t) => {
  expectError(t, await daemon.call('POST', '/v1/images/generations', { token: key.key, body: { prompt: 'a cat', n: LIMIT_VALUES.imagesPerRequestV3 + 1 } }), 400, 'n over the v3 limit', { param: 'n' });
});
