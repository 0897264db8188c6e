import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import type { UsageView } from '../../src/cli/commands/types.js';
import { USAGE_COLUMNS } from '../../src/cli/ui/usage.js';
import { fundedKey, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { ceilMillion, charges, header, noHolds, postJson, usageRow } from '../support/e2e.js';

/**
 * Model aliases (issue 27): Claude Code's default model names (and patterns of them) mapped to
 * catalog models, through the official SDKs on every format and embeddings: the target serves
 * and is billed at its own prices to the µINR, the usage row keeps both names, fallback lists
 * take aliases, and the model lists show them marked as aliases.
 */

let ant: ProviderSimulator;
let oai: ProviderSimulator;
let gem: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

const SONNET = 'anthropic/claude-sonnet-4-5';
const MINI = 'openai/gpt-4o-mini';
const FLASH = 'gemini/gemini-2.5-flash';

/** INR per 1M tokens as µINR per 1M tokens, written out from config/models.yaml. */
const PRICE = {
  sonnet: { input: 252_000_000n, output: 1_260_000_000n },
  mini: { input: 12_600_000n, output: 50_400_000n },
  flash: { input: 25_200_000n, output: 210_000_000n },
  embedSmall: { input: 1_680_000n },
};

t.before(async () => {
  [ant, oai, gem] = await Promise.all([ProviderSimulator.start(), ProviderSimulator.start(), ProviderSimulator.start()]);
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  gw = await startTestGateway({
    providers: {
      anthropic: { type: 'anthropic', base_url: ant.url, api_key: 'sim-key', timeouts: fast },
      openai: { type: 'openai', base_url: `${oai.url}/v1`, api_key: 'sim-key', timeouts: fast },
      gemini: { type: 'gemini', base_url: gem.url, api_key: 'sim-key', timeouts: fast },
    },
    routing: { retries: 2, cooldown: { failures: 1000 } },
    aliases: {
      'claude-opus-5-5': SONNET,
      'claude-haiku-5-5': MINI,
      'claude-*-haiku-*': MINI,
      'gem-fast': FLASH,
      'embed-small': 'openai/text-embedding-3-small',
    },
  });
  funded = await fundedKey(gw, { balance: 1000 });
});

t.beforeEach(() => {
  for (const sim of [ant, oai, gem]) sim.reset();
});

t.teardown(async () => {
  await gw?.stop();
  await Promise.all([ant?.close(), oai?.close(), gem?.close()]);
});

const openai = (): OpenAI => new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const anthropic = (): Anthropic => new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 });

async function charged(requestId: string | null): Promise<number | undefined> {
  gw.app.settlement.drain();
  const ledger = await charges(gw, funded.accountId, requestId ?? undefined);
  return ledger.length === 1 ? -(ledger[0]?.amountMicros ?? 0) : undefined;
}

t.test('chat completions: an alias is served, billed and recorded as its target; the row keeps both names', async (t) => {
  oai.enqueue({ usage: { input: 1234, output: 567 } });
  const res = await openai().chat.completions.create({ model: 'claude-haiku-5-5', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  t.equal(res.data.model, MINI, 'the answer names the model that served');
  t.equal(res.response.headers.get('x-gateway-model'), MINI);
  t.equal(oai.requests[0]?.model, 'gpt-4o-mini', 'the upstream got the target\'s own name');
  const id = res.response.headers.get('x-request-id');
  const expected = ceilMillion(1234n * PRICE.mini.input + 567n * PRICE.mini.output);
  t.equal(await charged(id), expected, `charged ${expected} µINR: GPT-4o mini's prices`);
  t.match(await usageRow(gw, id ?? undefined), { model: MINI, requestedModel: 'claude-haiku-5-5', provider: 'openai', endpoint: 'chat.completions', inputTokens: 1234, outputTokens: 567, costMicros: expected });

  // A model named directly records no alias.
  const direct = await openai().chat.completions.create({ model: MINI, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  t.match(await usageRow(gw, direct.response.headers.get('x-request-id') ?? undefined), { model: MINI, requestedModel: null });
  await noHolds(t, gw, funded);
});

t.test('messages (JSON and stream) and responses through the official SDKs', async (t) => {
  ant.enqueue({ usage: { input: 2000, output: 300 } });
  const message = await anthropic().messages.create({ model: 'claude-opus-5-5', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  t.equal(message.data.model, SONNET);
  t.equal(ant.requests[0]?.model, 'claude-sonnet-4-5');
  const id = message.response.headers.get('x-request-id');
  const expected = ceilMillion(2000n * PRICE.sonnet.input + 300n * PRICE.sonnet.output);
  t.equal(await charged(id), expected, `charged ${expected} µINR: Claude Sonnet 4.5's prices`);
  t.match(await usageRow(gw, id ?? undefined), { model: SONNET, requestedModel: 'claude-opus-5-5', endpoint: 'messages', costMicros: expected });

  const stream = anthropic().messages.stream({ model: 'claude-opus-5-5', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] });
  const final = await stream.finalMessage();
  t.equal(final.model, SONNET, 'message_start names the target');
  t.equal(ant.requests.at(-1)?.stream, true);
  const streamId = (await stream.withResponse()).response.headers.get('x-request-id');
  t.match(await usageRow(gw, streamId ?? undefined), { model: SONNET, requestedModel: 'claude-opus-5-5', stream: true, status: 200 });

  gem.enqueue({ usage: { input: 100, output: 50 } });
  const response = await openai().responses.create({ model: 'gem-fast', input: 'hi' }).withResponse();
  t.equal(response.data.model, FLASH);
  t.equal(gem.requests[0]?.model, 'gemini-2.5-flash');
  const responseId = response.response.headers.get('x-request-id');
  t.equal(await charged(responseId), ceilMillion(100n * PRICE.flash.input + 50n * PRICE.flash.output));
  t.match(await usageRow(gw, responseId ?? undefined), { model: FLASH, requestedModel: 'gem-fast', endpoint: 'responses' });
  await noHolds(t, gw, funded);
});

t.test('embeddings: an alias of an embedding model; an alias of a chat model there is a 400 naming both', async (t) => {
  const res = await openai().embeddings.create({ model: 'embed-small', input: 'alias me' }).withResponse();
  t.equal(res.data.model, 'openai/text-embedding-3-small');
  t.equal(oai.requests[0]?.model, 'text-embedding-3-small');
  const id = res.response.headers.get('x-request-id');
  const row = await usageRow(gw, id ?? undefined);
  t.match(row, { model: 'openai/text-embedding-3-small', requestedModel: 'embed-small', endpoint: 'embeddings', unit: 'tokens' });
  t.equal(await charged(id), ceilMillion(BigInt(row?.inputTokens ?? 0) * PRICE.embedSmall.input), 'billed at text-embedding-3-small\'s price');

  const wrong = await postJson(`${gw.url}/v1/embeddings`, { authorization: `Bearer ${funded.key}` }, { model: 'claude-haiku-5-5', input: 'x' });
  t.equal(wrong.status, 400);
  t.match(wrong.json.error, { type: 'invalid_request_error', code: 400, param: 'model', message: "model: 'claude-haiku-5-5' is an alias of openai/gpt-4o-mini, a chat model, which cannot serve this endpoint (it serves embedding models)" });
});

t.test('patterns: a name no catalog model and no exact alias has; the catalog\'s own names are never taken', async (t) => {
  const matched = await openai().chat.completions.create({ model: 'claude-3-7-haiku-20250219', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  t.equal(matched.data.model, MINI, 'claude-*-haiku-* → gpt-4o-mini');
  t.match(await usageRow(gw, matched.response.headers.get('x-request-id') ?? undefined), { model: MINI, requestedModel: 'claude-3-7-haiku-20250219' });

  const own = await anthropic().messages.create({ model: 'claude-3-5-haiku-latest', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(own.model, 'anthropic/claude-3-5-haiku-latest', 'a catalog short name the pattern matches stays the catalog model');

  const unknown = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'claude-opus-9', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(unknown.status, 404, 'a name nothing matches is still unknown');
});

t.test('fallback lists take aliases: the body\'s models and the x-gateway-fallbacks header', async (t) => {
  oai.setDefault({ error: { status: 500 } });
  const viaHeader = await openai().chat.completions.create({ model: 'claude-haiku-5-5', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-gateway-fallbacks': 'gem-fast' } }).withResponse();
  t.equal(viaHeader.data.model, FLASH, 'served by the fallback the header named by its alias');
  t.match(await usageRow(gw, viaHeader.response.headers.get('x-request-id') ?? undefined), { model: FLASH, requestedModel: 'claude-haiku-5-5', attempts: 2 });

  const viaBody = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: MINI, models: ['claude-opus-5-5'], messages: [{ role: 'user', content: 'hi' }] });
  t.equal(viaBody.status, 200);
  t.equal(viaBody.json.model, SONNET, 'served by the fallback the body named by its alias');
  t.match(await usageRow(gw, header(viaBody, 'x-request-id')), { model: SONNET, requestedModel: null });
  await noHolds(t, gw, funded);
});

t.test('the usage API shows both names and filters by either', async (t) => {
  const res = await openai().chat.completions.create({ model: 'claude-haiku-5-5', messages: [{ role: 'user', content: 'usage view' }] }).withResponse();
  const id = res.response.headers.get('x-request-id');
  gw.app.settlement.drain();
  const byAlias = await gw.http('GET', `/api/management/usage?model=claude-haiku-5-5&limit=1000`, { token: gw.adminKey });
  t.equal(byAlias.status, 200);
  const row = byAlias.body.data.find((r: { request_id: string }) => r.request_id === id);
  t.match(row, { model: MINI, requested_model: 'claude-haiku-5-5' }, 'the row, with both names');
  t.ok(byAlias.body.data.every((r: { requested_model: string | null }) => r.requested_model === 'claude-haiku-5-5'), 'filtered by the alias');
  const byModel = await gw.http('GET', `/api/management/usage?model=${encodeURIComponent(MINI)}&limit=1000`, { token: gw.adminKey });
  t.ok(byModel.body.data.some((r: { request_id: string }) => r.request_id === id), 'and by the model that served');
  const model = USAGE_COLUMNS.find((column) => column.title === 'MODEL');
  t.equal(model?.value(row as UsageView), `claude-haiku-5-5 → ${MINI}`, 'the CLI usage view shows both names');
  t.equal(model?.value({ ...row, requested_model: null } as UsageView), MINI, 'and the model alone when no alias was used');
});

t.test('/v1/models lists exact aliases marked as such; /api/models lists patterns too', async (t) => {
  const list = await gw.http('GET', '/v1/models');
  const alias = list.body.data.find((m: { id: string }) => m.id === 'claude-opus-5-5');
  t.same(alias, { id: 'claude-opus-5-5', object: 'model', created: 1763683200, owned_by: 'anthropic', alias_of: SONNET });
  t.notOk(list.body.data.some((m: { id: string }) => m.id.includes('*')), 'no pattern in the OpenAI list');
  t.same(list.body.data.find((m: { id: string }) => m.id === MINI), { id: MINI, object: 'model', created: 1763683200, owned_by: 'openai' }, 'models keep exactly their fields');

  const ids: string[] = [];
  for await (const model of openai().models.list()) ids.push(model.id);
  t.ok(ids.includes('claude-haiku-5-5'), 'the official SDK lists the alias');
  const one = await openai().models.retrieve('claude-haiku-5-5');
  t.match(one, { id: 'claude-haiku-5-5', owned_by: 'openai', alias_of: MINI }, 'and retrieves it');
  const byPattern = await gw.http('GET', '/v1/models/claude-3-7-haiku-20250219');
  t.match(byPattern.body, { id: 'claude-3-7-haiku-20250219', alias_of: MINI }, 'a name a pattern matches retrieves as an alias');

  const catalog = await gw.http('GET', '/api/models');
  const entry = catalog.body.data.find((m: { id: string }) => m.id === 'claude-opus-5-5');
  const target = catalog.body.data.find((m: { id: string }) => m.id === SONNET);
  t.same(entry, { ...target, id: 'claude-opus-5-5', alias_of: SONNET, alias_pattern: false }, 'the target\'s entry (its prices) under the alias');
  t.match(catalog.body.data.find((m: { id: string }) => m.id === 'claude-*-haiku-*'), { alias_of: MINI, alias_pattern: true, input_cost_per_1m: 12.6 });
  t.notOk('alias_of' in target, 'models have no alias fields');
});
