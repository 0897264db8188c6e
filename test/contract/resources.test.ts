import t from 'tap';
import { at, list, str } from './check.js';
import { CHAT, conforms, funded, header, MESSAGES, MODEL, RESPONSES, sim, signup, startDaemon, topUp } from './harness.js';
import {
  API_KEY,
  API_KEY_CREATED,
  CATALOG_MODEL_LIST,
  CHAT_COMPLETION,
  COMPAT_MODEL_LIST,
  DECIDED_COMPAT_MODEL_EXTRAS,
  DECIDED_KEY_LIST,
  DECIDED_MESSAGE_OBJECT,
  DECIDED_RESPONSE_OBJECT,
  DECIDED_SIGNUP,
  DECIDED_WALLET_EXTRAS,
  DECISIONS,
  LOGIN,
  SK_KEY,
  USER_PROFILE,
  WALLET_BALANCE,
} from './spec.js';

/**
 * Contract: every resource table of the spec ("Resources and their fields") checked against the
 * live answers of one daemon.
 */

const daemon = await startDaemon(t);

t.test('API key (spec: Resources › API key; POST /api/api-keys)', async (t) => {
  const session = await signup(daemon);
  const created = await daemon.call('POST', '/api/api-keys', { token: session.token, body: { name: 'contract app' } });
  t.equal(created.status, DECISIONS.keyCreateStatus, 'create answers 200');
  conforms(t, created.body, API_KEY_CREATED, 'create answer {api_key}');
  conforms(t, created.body, API_KEY, 'create answer: the API key table');
  t.equal(at(created.body, 'name'), 'contract app', 'name is the label given');
  t.equal(at(created.body, 'budget'), 0, 'budget: unlimited (0) is the default');
  t.equal(at(created.body, 'expires_at'), null, 'expires_at: never expires by default');

  const withAll = await daemon.call('POST', '/api/api-keys', { token: session.token, body: { name: 'all fields', rate_limit: 120, budget: 12.5, expires_at: '2031-06-30' } });
  t.equal(withAll.status, DECISIONS.keyCreateStatus);
  conforms(t, withAll.body, API_KEY, 'create answer with every field set');
  t.equal(at(withAll.body, 'rate_limit'), 120, 'rate_limit as given');
  t.equal(at(withAll.body, 'budget'), 12.5, 'budget as given (INR)');
  t.type(at(withAll.body, 'expires_at'), 'string', 'expires_at a string when set (YYYY-MM-DD accepted)');

  const dateTime = await daemon.call('POST', '/api/api-keys', { token: session.token, body: { name: 'date-time', expires_at: '2031-06-30T18:30:00+05:30' } });
  t.equal(dateTime.status, DECISIONS.keyCreateStatus, 'expires_at as an ISO 8601 date-time is accepted');
  conforms(t, dateTime.body, API_KEY, 'create answer with a date-time expiry');

  const secrets = [created, withAll, dateTime].map((r) => str(r.body, 'api_key') ?? '');
  t.equal(new Set(secrets).size, 3, 'every key is new');
  for (const secret of secrets) t.match(secret, SK_KEY, 'sk- followed by 64 hex characters');

  const listed = await daemon.call('GET', '/api/api-keys', { token: session.token });
  t.equal(listed.status, 200);
  conforms(t, listed.body, DECIDED_KEY_LIST, 'key list');
  t.equal(list(listed.body, 'data').length, 3, 'the list holds the three keys');
  for (const secret of secrets) t.notOk(listed.text.includes(secret.slice(3)), 'the list never shows a secret (shown once only)');
  t.notOk(list(listed.body, 'data').some((item) => at(item, 'api_key') !== undefined), 'no item has an api_key field');

  const works = await daemon.call('GET', '/v1/credits', { token: secrets[0] });
  t.equal(works.status, 200, 'the created key authenticates /v1/*');
});

t.test('User profile (spec: Resources › User profile, GET /api/auth/me)', async (t) => {
  const session = await signup(daemon);
  const me = await daemon.call('GET', '/api/auth/me', { token: session.token });
  t.equal(me.status, 200);
  conforms(t, me.body, USER_PROFILE, 'me');
  t.equal(at(me.body, 'user.email'), session.email);
  t.equal(at(me.body, 'user.name'), 'Contract');
  t.equal(at(me.body, 'user.balance'), 0, 'a new account has balance 0');

  await topUp(daemon, session.userId, 12.75);
  const after = await daemon.call('GET', '/api/auth/me', { token: session.token });
  conforms(t, after.body, USER_PROFILE, 'me after a top-up');
  t.equal(at(after.body, 'user.balance'), 12.75, 'balance in INR, a number with its fraction');

  const login = await daemon.call('POST', '/api/auth/login', { body: { email: session.email, password: 'contract-password-1' } });
  t.equal(login.status, 200);
  conforms(t, login.body, LOGIN, 'login answer {token}');
  const byLogin = await daemon.call('GET', '/api/auth/me', { token: str(login.body, 'token') ?? '' });
  conforms(t, byLogin.body, USER_PROFILE, 'me with the login token');

  const fresh = await daemon.call('POST', '/api/auth/signup', { body: { email: `x-${session.email}`, password: 'contract-password-1', name: 'Fresh' } });
  t.equal(fresh.status, DECISIONS.signupStatus, 'signup answers 200');
  conforms(t, fresh.body, DECIDED_SIGNUP, 'signup answer {user, token}');
  t.match(String(header(fresh, 'set-cookie') ?? ''), /^token=[^;]+/, 'the session token is set as a cookie named token');
});

t.test('Wallet balance (spec: Resources › Wallet balance, GET /v1/credits)', async (t) => {
  const key = await funded(daemon, 250.75);
  const credits = await daemon.call('GET', '/v1/credits', { token: key.key });
  t.equal(credits.status, 200);
  conforms(t, credits.body, WALLET_BALANCE, 'credits');
  conforms(t, credits.body, DECIDED_WALLET_EXTRAS, 'credits currency');
  t.equal(at(credits.body, 'balance'), 250.75, 'the balance of the key owner, in INR');

  const empty = await funded(daemon, 0);
  const zero = await daemon.call('GET', '/v1/credits', { token: empty.key });
  conforms(t, zero.body, WALLET_BALANCE, 'credits of an empty wallet');
  t.equal(at(zero.body, 'balance'), 0);

  // The same wallet seen by the session profile and the API key.
  const session = await signup(daemon);
  await topUp(daemon, session.userId, 3.5);
  const key2 = await daemon.call('POST', '/api/api-keys', { token: session.token, body: { name: 'wallet' } });
  const viaKey = await daemon.call('GET', '/v1/credits', { token: str(key2.body, 'api_key') ?? '' });
  const viaSession = await daemon.call('GET', '/api/auth/me', { token: session.token });
  t.equal(at(viaKey.body, 'balance'), at(viaSession.body, 'user.balance'), '/v1/credits and /api/auth/me show one balance');
});

t.test('Model, public catalog (spec: Resources › Model, GET /api/models)', async (t) => {
  const res = await daemon.call('GET', '/api/models');
  t.equal(res.status, 200);
  conforms(t, res.body, CATALOG_MODEL_LIST, 'GET /api/models');
  const data = list(res.body, 'data');
  t.ok(data.length > 0, 'the catalog is not empty');
  const wrongPrefix = data.filter((m) => str(m, 'id')?.split('/')[0] !== str(m, 'provider')).map((m) => str(m, 'id'));
  t.same(wrongPrefix, [], 'every id is <provider>/<model-name> with its own provider as the prefix');
  t.equal(new Set(data.map((m) => str(m, 'id'))).size, data.length, 'ids are unique');
});

t.test('Model, compatible list (spec: Resources › Model, GET /v1/models)', async (t) => {
  const res = await daemon.call('GET', '/v1/models');
  t.equal(res.status, 200);
  conforms(t, res.body, COMPAT_MODEL_LIST, 'GET /v1/models');
  conforms(t, res.body, DECIDED_COMPAT_MODEL_EXTRAS, 'GET /v1/models created');
  const data = list(res.body, 'data');
  t.ok(data.length > 0, 'the list is not empty');
  const wrongOwner = data.filter((m) => str(m, 'id')?.split('/')[0] !== str(m, 'owned_by')).map((m) => str(m, 'id'));
  t.same(wrongOwner, [], 'owned_by is the provider, the prefix of the id');

  const catalog = await daemon.call('GET', '/api/models');
  const ids = (body: unknown) => list(body, 'data').map((m) => str(m, 'id')).sort();
  t.same(ids(res.body), ids(catalog.body), 'both lists name the same catalog');
});

t.test('Chat completion response (spec: Resources › Chat completion response)', async (t) => {
  const key = await funded(daemon, 50);
  const before = Math.floor(Date.now() / 1000);
  // One model of each provider wire family: the reply is in the request's format whatever the provider.
  for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5', 'gemini/gemini-2.5-flash', 'groq/llama-3.1-8b-instant']) {
    const res = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body(model, sim({ text: 'contract reply', usage: { input: 7, output: 5 } })) });
    t.equal(res.status, 200, `${model}: 200`);
    conforms(t, res.body, CHAT_COMPLETION, `${model}: chat completion`);
    t.equal(at(res.body, 'choices.0.finish_reason'), 'stop', `${model}: a normal end gives stop`);
    t.equal(at(res.body, 'choices.0.message.content'), 'contract reply', `${model}: the content`);
    t.equal(at(res.body, 'choices.0.message.role'), 'assistant', `${model}: role`);
    t.match(at(res.body, 'usage'), { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 }, `${model}: usage integers 7 + 5 = 12`);
    const created = at(res.body, 'created');
    t.ok(typeof created === 'number' && created >= before - 5 && created <= Math.ceil(Date.now() / 1000) + 5, `${model}: created is Unix seconds (now)`);
  }

  const short = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body('gpt-4o-mini', 'hi') });
  t.equal(short.status, 200, 'a short model name works on the chat endpoint');
  conforms(t, short.body, CHAT_COMPLETION, 'chat completion for a short model name');

  const zeroUsage = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body(MODEL, sim({ text: '', usage: { input: 1, output: 0 } })) });
  conforms(t, zeroUsage.body, CHAT_COMPLETION, 'chat completion with empty content and 0 completion tokens');
});

t.test('Responses and messages replies follow their formats (spec: Other records)', async (t) => {
  const key = await funded(daemon, 50);
  for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5', 'gemini/gemini-2.5-flash']) {
    const responses = await daemon.call('POST', RESPONSES.path, { token: key.key, body: RESPONSES.body(model, sim({ usage: { input: 4, output: 3 } })) });
    t.equal(responses.status, 200, `responses ${model}: 200`);
    conforms(t, responses.body, DECIDED_RESPONSE_OBJECT, `responses ${model}`);
    const messages = await daemon.call('POST', MESSAGES.path, { token: key.key, body: MESSAGES.body(model, sim({ usage: { input: 4, output: 3 } })) });
    t.equal(messages.status, 200, `messages ${model}: 200`);
    conforms(t, messages.body, DECIDED_MESSAGE_OBJECT, `messages ${model}`);
  }
});
