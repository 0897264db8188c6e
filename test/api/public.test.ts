import OpenAI from 'openai';
import t from 'tap';
import { startTestGateway } from '../support/gateway.js';

t.test('the model catalog: OpenAI shape on /v1/models, prices on /api/models', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());

  const raw = await gw.http('GET', '/v1/models');
  t.equal(raw.status, 200);
  t.equal(raw.body.object, 'list');
  t.ok(raw.body.data.length >= 15);
  for (const model of raw.body.data) t.same(Object.keys(model).sort(), ['created', 'id', 'object', 'owned_by'], `${model.id}: exactly the OpenAI Model fields`);
  t.same(raw.body.data.find((m: { id: string }) => m.id === 'openai/gpt-4o-mini'), { id: 'openai/gpt-4o-mini', object: 'model', created: 1763683200, owned_by: 'openai' });

  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused-for-models', maxRetries: 0 });
  const ids: string[] = [];
  for await (const model of client.models.list()) ids.push(model.id);
  t.ok(ids.includes('anthropic/claude-sonnet-4-5'), 'the official SDK lists the catalog');
  const one = await client.models.retrieve('groq/openai/gpt-oss-120b');
  t.equal(one.owned_by, 'groq', 'retrieve works for ids with slashes');
  const missing = await client.models.retrieve('openai/nope').then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(missing instanceof OpenAI.NotFoundError, 'unknown model is a NotFoundError (404) through the SDK');
  const missingRaw = await gw.http('GET', '/v1/models/openai/nope');
  t.equal(missingRaw.status, 404);
  t.same(missingRaw.body.error, { message: missingRaw.body.error.message, type: 'not_found_error', code: 404, reason: 'model_not_found', param: 'model' }, 'the spec envelope: integer code, the reason beside it');

  const catalog = await gw.http('GET', '/api/models');
  t.equal(catalog.status, 200);
  const mini = catalog.body.data.find((m: { id: string }) => m.id === 'openai/gpt-4o-mini');
  t.same(mini, {
    id: 'openai/gpt-4o-mini',
    name: 'GPT-4o mini',
    provider: 'openai',
    type: 'chat',
    context_window: 128000,
    context_window_unit: 'tokens',
    input_cost_per_1m: 12.6,
    output_cost_per_1m: 50.4,
    max_output_tokens: 16384,
    pricing: {
      currency: 'INR',
      input_per_1m: 12.6,
      output_per_1m: 50.4,
      cache_read_per_1m: 6.3,
      cache_write_per_1m: null,
      cache_write_1h_per_1m: null,
      input_per_1m_chars: null,
      per_minute: null,
      per_image: null,
      image_prices: null,
      billed_in: 'tokens',
    },
  });
  const byId = (id: string) => catalog.body.data.find((m: { id: string }) => m.id === id);
  t.equal(byId('openai/dall-e-3').pricing.per_image, 3.36);
  for (const model of catalog.body.data) {
    t.ok(Number.isInteger(model.context_window) && model.context_window >= 0, `${model.id}: context_window is an integer`);
    t.ok(model.context_window_unit === null || model.context_window_unit === 'tokens' || model.context_window_unit === 'characters', `${model.id}: context_window_unit`);
    t.equal(model.context_window_unit === null, model.context_window === 0, `${model.id}: a unit exactly when a context window is known`);
    t.ok(typeof model.input_cost_per_1m === 'number' && Number.isFinite(model.input_cost_per_1m) && model.input_cost_per_1m >= 0, `${model.id}: input_cost_per_1m is a number`);
    t.ok(typeof model.output_cost_per_1m === 'number' && Number.isFinite(model.output_cost_per_1m) && model.output_cost_per_1m >= 0, `${model.id}: output_cost_per_1m is a number`);
    t.equal(typeof model.pricing, 'object', `${model.id}: pricing stays`);
  }
  t.match(byId('openai/dall-e-3'), { context_window: 4000, context_window_unit: 'characters', input_cost_per_1m: 0, output_cost_per_1m: 0 });
  t.match(byId('openai/dall-e-2'), { context_window: 1000, context_window_unit: 'characters' });
  t.match(byId('openai/gpt-image-1'), { context_window: 32000, context_window_unit: 'characters', pricing: { billed_in: 'images', image_prices: { '1024x1024/high': 14.028 } }, image: { max_images: 10 } });
  t.match(byId('openai/tts-1'), { context_window: 4096, context_window_unit: 'characters' });
  t.match(byId('openai/gpt-4o-transcribe'), { context_window: 0, pricing: { per_minute: 0.504, billed_in: 'seconds' }, transcription: { response_formats: ['json', 'text'] } });
  t.match(byId('deepgram/aura-2'), { type: 'speech', context_window: 2000, pricing: { input_per_1m_chars: 2520, billed_in: 'characters' }, speech: { speed_min: 0.7, speed_max: 1.5 } });
  t.match(byId('openai/text-embedding-3-small'), { type: 'embedding', embedding: { dimensions: 1536, min_dimensions: 1 } });
  t.match(byId('openai/whisper-1'), { context_window: 0, context_window_unit: null }, 'whisper-1 has no context window: 0, not null');
});

t.test('/v1/credits: sk- keys by bearer or x-api-key, role separation', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const account = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email: 'app@example.com', name: 'App' } });
  const key = await gw.http('POST', `/api/management/accounts/${account.body.id}/api-keys`, { token: gw.adminKey, body: { name: 'app' } });
  const sk: string = key.body.api_key;
  await gw.http('POST', `/api/management/accounts/${account.body.id}/topups`, { token: gw.adminKey, body: { amount: 250.75 } });

  const bearer = await gw.http('GET', '/v1/credits', { token: sk });
  t.same(bearer.body, { balance: 250.75, currency: 'INR' });
  const xApiKey = await gw.http('GET', '/v1/credits', { headers: { 'x-api-key': sk } });
  t.same(xApiKey.body, { balance: 250.75, currency: 'INR' }, 'x-api-key (the Anthropic SDK header) works');
  const lower = await gw.http('GET', '/v1/credits', { headers: { authorization: `bearer ${sk}` } });
  t.equal(lower.status, 200, 'the Bearer scheme is case-insensitive');

  await gw.app.store.ledger.charge({ accountId: account.body.id, amountMicros: 750_000, requestId: 'req_settled', now: Date.now() });
  t.same((await gw.http('GET', '/v1/credits', { token: sk })).body.balance, 250, 'settled charges show at once');

  const cases: [string, Record<string, string>, number, string][] = [
    ['no key', {}, 401, 'missing_credentials'],
    ['unknown sk- key', { authorization: `Bearer sk-${'0'.repeat(64)}` }, 401, 'invalid_api_key'],
    ['malformed key', { authorization: 'Bearer sk-123' }, 401, 'invalid_api_key'],
    ['a session token', { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.x' }, 401, 'invalid_api_key'],
    ['an akm- key', { authorization: `Bearer ${gw.adminKey}` }, 403, 'management_key_not_allowed'],
    ['an akm- key as x-api-key', { 'x-api-key': gw.adminKey }, 403, 'management_key_not_allowed'],
    ['an unknown akm- key', { authorization: `Bearer akm-${'0'.repeat(64)}` }, 401, 'invalid_management_key'],
  ];
  for (const [label, headers, status, code] of cases) {
    const res = await gw.http('GET', '/v1/credits', { headers });
    t.equal(res.status, status, `${label} → ${status}`);
    t.equal(res.body.error.reason, code, `${label}: ${code}`);
    t.equal(res.body.error.code, status, `${label}: code is the integer status`);
    t.notOk(res.text.includes(gw.adminKey), 'the key is never echoed');
  }

  const skOnManagement = await gw.http('GET', '/api/management/me', { token: sk });
  t.equal(skOnManagement.status, 403, 'an sk- key on the management API is 403');
  t.equal(skOnManagement.body.error.reason, 'api_key_not_allowed');
  t.equal(skOnManagement.body.error.code, 403);
});

t.test('last use of a key is recorded without a write per request', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const key = await gw.http('POST', '/api/management/accounts/me/api-keys', { token: gw.adminKey, body: { name: 'app' } });
  t.equal(key.body.last_used_at, null);
  const before = Date.now();
  await gw.http('GET', '/v1/credits', { token: key.body.api_key });
  t.equal((await gw.app.store.apiKeys.byId(key.body.id))?.lastUsedAt, null, 'not written on the request path');
  await gw.app.keyAuth.api.flushLastUsed();
  t.ok(((await gw.app.store.apiKeys.byId(key.body.id))?.lastUsedAt ?? 0) >= before, 'written by the periodic flush');

  const tool = await gw.http('POST', '/api/management/accounts/me/management-keys', { token: gw.adminKey, body: { name: 'tool' } });
  t.equal((await gw.http('GET', '/v1/credits', { token: tool.body.management_key })).status, 403);
  await gw.app.keyAuth.management.flushLastUsed();
  t.equal((await gw.app.store.managementKeys.byId(tool.body.id))?.lastUsedAt, null, 'a key refused for the surface is not recorded as used');
});
