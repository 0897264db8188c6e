import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import pino from 'pino';
import { fundedKey, simulatedProviders, startTestGateway, testConfig, type FundedKey, type TestGateway } from '../support/gateway.js';
import { REDIS_URL, redisSkipReason } from '../support/redis.js';
import { runCli } from '../support/cli.js';
import { startGateway } from '../../src/main.js';
import { balanceMicros, charges, header, noHolds, postJson, until, usageRow } from '../support/e2e.js';
import { embedText, cosine } from '../support/simulator/embed.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { costMicros } from '../../src/core/pricing.js';
import { CacheStore } from '../../src/store/cache-entries.js';
import { sqlRun } from '../support/store.js';

/**
 * The response cache end to end: exact hits across the three formats, as JSON and as streams;
 * semantic hits within the threshold; the opt-outs; account isolation; TTL and eviction;
 * billing of hits and misses to the µINR; a broken cache is a miss, never an error.
 */

const THRESHOLD = 0.95;

let sim: ProviderSimulator;
let gw: TestGateway;

function cacheConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    enabled: true,
    ttl: '1h',
    exact: { models: ['*'] },
    semantic: { models: ['openai/gpt-4o-mini'], embedding_model: 'openai/text-embedding-3-small', dimensions: 256, threshold: THRESHOLD },
    ...extra,
  };
}

t.before(async () => {
  sim = await ProviderSimulator.start();
  gw = await startTestGateway({ providers: simulatedProviders(sim.url), cache: cacheConfig() });
});
t.teardown(async () => {
  await gw?.stop();
  await sim?.close();
});
t.beforeEach(() => sim.reset());

const chatCalls = (): number => sim.requests.filter((r) => !r.path.includes('embeddings')).length;
const embeddingCalls = (): number => sim.requests.filter((r) => r.path.includes('embeddings')).length;

function openai(funded: FundedKey, target: { url: string } = gw): OpenAI {
  return new OpenAI({ apiKey: funded.key, baseURL: `${target.url}/v1`, maxRetries: 0 });
}

function anthropic(funded: FundedKey, target: { url: string } = gw): Anthropic {
  return new Anthropic({ apiKey: funded.key, baseURL: target.url, maxRetries: 0 });
}

async function charged(target: TestGateway, funded: FundedKey, requestId: string | undefined): Promise<number> {
  target.app.settlement.drain();
  return -(await charges(target, funded.accountId, requestId)).reduce((sum, entry) => sum + entry.amountMicros, 0);
}

/** Waits until the cache has stored what a miss produced (stores happen after the response). */
async function stored(target: TestGateway, entries: number): Promise<void> {
  await target.app.cache?.flush();
  await until(`${entries} cache entries`, () => (target.app.cache?.internals.store?.size.entries ?? 0) >= entries);
}

let n = 0;
const unique = (text: string): string => `${text} [${++n}-${Math.random().toString(36).slice(2, 8)}]`;

t.test('exact tier: a repeat is a hit, free, across formats, as JSON and stream', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const question = unique('Name three primary colours');
  const model = gw.app.catalog.resolve('openai/gpt-4o-mini', 'chat');

  // 1. A miss through chat completions: the upstream answers, the call is billed, stored.
  const first = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(first.response.headers.get('x-gateway-cache'), 'miss');
  t.equal(chatCalls(), 1);
  const firstRow = await usageRow(gw, first.response.headers.get('x-request-id') ?? undefined);
  t.equal(firstRow?.cache, 'miss', 'usage row: miss');
  const missCost = await charged(gw, funded, first.response.headers.get('x-request-id') ?? undefined);
  t.ok(missCost > 0, 'the miss is charged');
  t.equal(missCost, costMicros(model.pricing, { inputTokens: first.data.usage?.prompt_tokens ?? 0, outputTokens: first.data.usage?.completion_tokens ?? 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), 'miss: list price');
  await stored(gw, 1);
  const text = first.data.choices[0]?.message.content;

  // 2. The same question, chat completions JSON: a hit, nothing upstream, nothing charged.
  const before = await balanceMicros(gw, funded.accountId);
  const second = await openai(funded).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(second.response.headers.get('x-gateway-cache'), 'exact', 'x-gateway-cache: exact (short model name, same model)');
  t.equal(second.data.choices[0]?.message.content, text, 'the same answer');
  t.same(second.data.usage, first.data.usage, 'usage of the answer reported');
  t.equal(chatCalls(), 1, 'nothing sent upstream');
  const hitId = second.response.headers.get('x-request-id') ?? undefined;
  t.equal(await charged(gw, funded, hitId), 0, 'the hit is free (hit_price 0)');
  t.equal(second.response.headers.get('x-gateway-cost-inr'), '0');
  t.equal(await balanceMicros(gw, funded.accountId), before, 'balance unchanged');
  const hitRow = await usageRow(gw, hitId);
  t.equal(hitRow?.cache, 'exact');
  t.equal(hitRow?.costMicros, 0);
  t.equal(hitRow?.cacheSavedMicros, missCost, 'saved the list price of the answer');

  // 3. As a chat completions stream: chunks, then usage.
  const stream = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }], stream: true, stream_options: { include_usage: true } }).withResponse();
  t.equal(stream.response.headers.get('x-gateway-cache'), 'exact');
  let streamed = '';
  let chunks = 0;
  let streamUsage: OpenAI.CompletionUsage | undefined | null;
  let finish: string | null | undefined;
  for await (const chunk of stream.data) {
    const delta = chunk.choices[0]?.delta.content;
    if (delta) {
      streamed += delta;
      chunks += 1;
    }
    if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
    if (chunk.usage) streamUsage = chunk.usage;
  }
  t.equal(streamed, text, 'the stream replays the answer');
  t.ok(chunks > 1 || (text ?? '').length <= 20, `in pieces (${chunks})`);
  t.equal(finish, 'stop');
  t.same(streamUsage, first.data.usage, 'usage in the stream');
  t.equal(chatCalls(), 1);

  // 4. Anthropic messages, JSON and stream.
  const message = await anthropic(funded).messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 4096, messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(message.response.headers.get('x-gateway-cache'), 'exact', 'messages: exact hit');
  t.equal(message.data.content[0]?.type === 'text' ? message.data.content[0].text : undefined, text);
  t.equal(message.data.usage.output_tokens, first.data.usage?.completion_tokens);
  const messageStream = anthropic(funded).messages.stream({ model: 'openai/gpt-4o-mini', max_tokens: 4096, messages: [{ role: 'user', content: question }] });
  const final = await messageStream.finalMessage();
  t.equal(final.content[0]?.type === 'text' ? final.content[0].text : undefined, text, 'messages stream replayed');
  t.equal(chatCalls(), 1, 'messages served from the cache');

  // 5. Responses, JSON and stream.
  const response = await openai(funded).responses.create({ model: 'openai/gpt-4o-mini', max_output_tokens: 4096, input: question }).withResponse();
  t.equal(response.response.headers.get('x-gateway-cache'), 'exact', 'responses: exact hit');
  t.equal(response.data.output_text, text);
  const responseStream = await openai(funded).responses.create({ model: 'openai/gpt-4o-mini', max_output_tokens: 4096, input: question, stream: true });
  let responseText = '';
  for await (const event of responseStream) if (event.type === 'response.output_text.delta') responseText += event.delta;
  t.equal(responseText, text, 'responses stream replayed');
  t.equal(chatCalls(), 1, 'responses served from the cache');
  // The first call's semantic lookup embedded the prompt (gpt-4o-mini is in the semantic tier): billed as its own row.
  const lookupId = `${first.response.headers.get('x-request-id')}-cache`;
  const lookupCost = await charged(gw, funded, lookupId);
  t.ok(lookupCost > 0, 'the semantic lookup embedding is billed');
  t.equal((await usageRow(gw, lookupId))?.endpoint, 'cache.embeddings');
  t.equal(await charged(gw, funded, undefined), missCost + lookupCost, 'only the miss (and its lookup) were ever charged');
  await noHolds(t, gw, funded);
});

const PHOTOSYNTHESIS = 'In two sentences, explain how photosynthesis turns sunlight water and carbon dioxide into sugar and oxygen in green plants';
const PARAPHRASE = 'In two sentences explain how photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen in green plants please';
const NEAR_MISS = 'In three sentences, explain how photosynthesis turns sunlight water and carbon dioxide into sugar and oxygen in green algae';

t.test('semantic tier: a paraphrase within the threshold is a hit, one below it a miss; the lookup is billed', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const similarity = cosine(embedText(PHOTOSYNTHESIS, 1536, 256), embedText(PARAPHRASE, 1536, 256));
  const below = cosine(embedText(PHOTOSYNTHESIS, 1536, 256), embedText(NEAR_MISS, 1536, 256));
  t.ok(similarity >= THRESHOLD && below < THRESHOLD, `fixtures: ${similarity.toFixed(4)} above, ${below.toFixed(4)} below ${THRESHOLD}`);
  const system = { role: 'system' as const, content: 'You are a biology tutor.' };

  sim.enqueue({}, { text: 'Plants capture light to make sugar. Oxygen is released.' });
  const first = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [system, { role: 'user', content: PHOTOSYNTHESIS }] }).withResponse();
  t.equal(first.response.headers.get('x-gateway-cache'), 'miss');
  t.equal(embeddingCalls(), 1, 'the prompt was embedded');
  t.equal((sim.requests.find((r) => r.path.includes('embeddings'))?.body as { dimensions?: number }).dimensions, 256, 'asked for 256 dimensions');
  await stored(gw, 1);

  // A paraphrase: answered from the cache, with its similarity.
  const hit = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [system, { role: 'user', content: PARAPHRASE }] }).withResponse();
  t.equal(hit.response.headers.get('x-gateway-cache'), 'semantic', 'a semantic hit');
  t.equal(hit.data.choices[0]?.message.content, 'Plants capture light to make sugar. Oxygen is released.', 'the earlier answer');
  const header = Number(hit.response.headers.get('x-gateway-cache-similarity'));
  t.ok(Math.abs(header - similarity) < 0.002, `x-gateway-cache-similarity ${header} ≈ ${similarity.toFixed(4)}`);
  t.equal(chatCalls(), 1, 'no chat call upstream');
  t.equal(embeddingCalls(), 2, 'one embedding per lookup');
  const hitId = hit.response.headers.get('x-request-id') ?? undefined;
  const row = await usageRow(gw, hitId);
  t.equal(row?.cache, 'semantic');
  t.ok(Math.abs((row?.cacheSimilarity ?? 0) - similarity) < 0.002, 'usage row: similarity');
  t.equal(await charged(gw, funded, hitId), 0, 'the answer is free');
  const lookupCost = await charged(gw, funded, `${hitId}-cache`);
  const embeddingModel = gw.app.catalog.resolve('openai/text-embedding-3-small', 'embedding');
  const tokens = (await usageRow(gw, `${hitId}-cache`))?.inputTokens ?? 0;
  t.ok(tokens > 0);
  t.equal(lookupCost, costMicros(embeddingModel.pricing, { inputTokens: tokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), 'the lookup billed at the embedding model\'s price');

  // Below the threshold: a miss, answered upstream.
  sim.enqueue({}, { text: 'Algae photosynthesise too.' });
  const miss = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [system, { role: 'user', content: NEAR_MISS }] }).withResponse();
  t.equal(miss.response.headers.get('x-gateway-cache'), 'miss', `similarity ${below.toFixed(3)}: a miss`);
  t.equal(miss.data.choices[0]?.message.content, 'Algae photosynthesise too.');
  t.equal(chatCalls(), 2);

  // The same question after another system prompt: another partition, a miss.
  const other = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'system', content: 'You are a poet.' }, { role: 'user', content: PHOTOSYNTHESIS }] }).withResponse();
  t.equal(other.response.headers.get('x-gateway-cache'), 'miss', 'another conversation context never matches');
  t.equal(chatCalls(), 3);

  // A model outside the semantic tier: exact only, no embedding call.
  const before = embeddingCalls();
  const exactOnly = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: PHOTOSYNTHESIS }] }).withResponse();
  t.equal(exactOnly.response.headers.get('x-gateway-cache'), 'miss');
  t.equal(embeddingCalls(), before, 'no embedding for a model without the semantic tier');
  await noHolds(t, gw, funded);
});

t.test('no_cache and x-gateway-cache: no-cache bypass both tiers (read and write); a key can opt out', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const question = unique('What is two plus two');
  await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] });
  await until('stored', async () => {
    const again = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}`, 'x-gateway-cache': 'no-cache' }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] });
    return again.status === 200 && header(again, 'x-gateway-cache') === 'bypass';
  });
  const calls = chatCalls();
  const embeds = embeddingCalls();

  // no_cache in the body: upstream, no lookup (no embedding), recorded as bypass.
  const bypass = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }], no_cache: true });
  t.equal(bypass.status, 200);
  t.equal(header(bypass, 'x-gateway-cache'), 'bypass');
  t.equal(chatCalls(), calls + 1, 'no_cache: the upstream answered');
  t.equal(embeddingCalls(), embeds, 'no semantic lookup either');
  t.equal((await usageRow(gw, header(bypass, 'x-request-id')))?.cache, 'bypass');
  const invalid = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }], no_cache: 'yes' });
  t.equal(invalid.status, 400);
  t.match(invalid.json.error.message, /no_cache/);

  // The header, for messages and responses.
  const message = await postJson(`${gw.url}/v1/messages`, { authorization: `Bearer ${funded.key}`, 'anthropic-version': '2023-06-01', 'x-gateway-cache': 'no-cache' }, { model: 'openai/gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: question }] });
  t.equal(message.status, 200);
  t.equal(header(message, 'x-gateway-cache'), 'bypass', 'messages: bypassed by the header');
  const response = await postJson(`${gw.url}/v1/responses`, { authorization: `Bearer ${funded.key}`, 'x-gateway-cache': 'no-cache' }, { model: 'openai/gpt-4o-mini', input: question });
  t.equal(header(response, 'x-gateway-cache'), 'bypass', 'responses: bypassed by the header');
  t.equal(chatCalls(), calls + 3);

  // A bypassed call stores nothing: a fresh question asked with no_cache, then without, is a miss.
  const fresh = unique('What is three plus three');
  await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o', messages: [{ role: 'user', content: fresh }], no_cache: true });
  await gw.app.cache?.flush();
  const after = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o', messages: [{ role: 'user', content: fresh }] });
  t.equal(header(after, 'x-gateway-cache'), 'miss', 'no_cache wrote nothing');

  // A key that opted out.
  const optedOut = await gw.http('POST', `/api/management/accounts/${funded.accountId}/api-keys`, { token: gw.adminKey, body: { name: 'no cache', cache: false } });
  t.equal(optedOut.status, 201);
  t.equal(optedOut.body.cache, false, 'the key shows cache: false');
  const viaKey = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${optedOut.body.api_key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] });
  t.equal(header(viaKey, 'x-gateway-cache'), 'bypass', 'the key opted out');
  const badKey = await gw.http('POST', `/api/management/accounts/${funded.accountId}/api-keys`, { token: gw.adminKey, body: { name: 'bad', cache: 'no' } });
  t.equal(badKey.status, 400);
  t.match(badKey.text, /cache/);
  const patched = await gw.http('PATCH', `/api/management/api-keys/${optedOut.body.id}`, { token: gw.adminKey, body: { cache: true } });
  t.equal(patched.body.cache, true, 'opted back in');
});

t.test('rules: a high temperature and a pending tool result are not cached', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const question = unique('Write a haiku');
  const hot = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }], temperature: 1.5 });
  t.equal(header(hot, 'x-gateway-cache'), 'bypass', 'temperature 1.5 > max_temperature 1');
  const tool = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, {
    model: 'openai/gpt-4o',
    messages: [
      { role: 'user', content: question },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ],
    tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } }],
  });
  t.equal(tool.status, 200);
  t.equal(header(tool, 'x-gateway-cache'), 'bypass', 'a tool result pending: not cached');
});

t.test('two accounts asking the same question never share an entry', async (t) => {
  const alice = await fundedKey(gw, { balance: 10 });
  const bob = await fundedKey(gw, { balance: 10 });
  const question = unique('What is my secret');
  sim.enqueue({ text: 'Alice private answer' });
  const a = await openai(alice).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] });
  t.equal(a.choices[0]?.message.content, 'Alice private answer');
  await gw.app.cache?.flush();
  const again = await openai(alice).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(again.response.headers.get('x-gateway-cache'), 'exact', 'alice hits her own entry');
  const b = await openai(bob).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(b.response.headers.get('x-gateway-cache'), 'miss', 'bob misses');
  t.not(b.data.choices[0]?.message.content, 'Alice private answer', 'bob never sees alice\'s answer');
  // Semantic tier too: bob's paraphrase of alice's question.
  sim.enqueue({}, { text: 'Alice photosynthesis answer' });
  await openai(alice).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PHOTOSYNTHESIS }] });
  await gw.app.cache?.flush();
  const bobSemantic = await openai(bob).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PARAPHRASE }] }).withResponse();
  t.equal(bobSemantic.response.headers.get('x-gateway-cache'), 'miss', 'no semantic match across accounts');
  t.not(bobSemantic.data.choices[0]?.message.content, 'Alice photosynthesis answer');
});

t.test('TTL, LRU eviction by entries, and hit_price billing', async (t) => {
  const small = await startTestGateway({ providers: simulatedProviders(sim.url), cache: cacheConfig({ ttl: '1s', max_entries: 2, hit_price: 0.5, semantic: { models: [] } }) });
  t.teardown(() => small.stop());
  const funded = await fundedKey(small, { balance: 10 });
  const ask = (content: string) => openai(funded, small).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content }] }).withResponse();
  const store = () => small.app.cache?.internals.store;

  // hit_price 0.5: a hit costs half the answer's list price; the row says what it saved.
  const first = await ask('question A');
  const listPrice = await charged(small, funded, first.response.headers.get('x-request-id') ?? undefined);
  await stored(small, 1);
  const hit = await ask('question A');
  t.equal(hit.response.headers.get('x-gateway-cache'), 'exact');
  const hitId = hit.response.headers.get('x-request-id') ?? undefined;
  t.equal(await charged(small, funded, hitId), Math.round(listPrice / 2), 'half the list price, to the µINR');
  t.equal((await usageRow(small, hitId))?.cacheSavedMicros, listPrice - Math.round(listPrice / 2), 'saved the other half');

  // LRU: A (just used), B, then C: B is the least recently used and goes.
  await ask('question B');
  await stored(small, 2);
  t.equal((await ask('question A')).response.headers.get('x-gateway-cache'), 'exact', 'A used again');
  await ask('question C');
  await until('C stored, B evicted', () => store()?.size.entries === 2);
  await small.app.cache?.flush();
  t.equal(store()?.size.entries, 2, 'at most max_entries');
  t.equal((await ask('question A')).response.headers.get('x-gateway-cache'), 'exact', 'A kept (recently used)');
  t.equal((await ask('question B')).response.headers.get('x-gateway-cache'), 'miss', 'B evicted (least recently used)');

  // TTL: after 1 s the entry is stale, a miss.
  const ttlQuestion = 'question D';
  await ask(ttlQuestion);
  await until('D stored', async () => (await ask(ttlQuestion)).response.headers.get('x-gateway-cache') === 'exact');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  t.equal((await ask(ttlQuestion)).response.headers.get('x-gateway-cache'), 'miss', 'expired after its TTL');
});

t.test('eviction by size: max_size bounds the bytes kept', async (t) => {
  const small = await startTestGateway({ providers: simulatedProviders(sim.url), cache: cacheConfig({ max_size: '64kb', semantic: { models: [] } }) });
  t.teardown(() => small.stop());
  const funded = await fundedKey(small, { balance: 50 });
  const long = 'x'.repeat(20_000);
  for (const name of ['one', 'two', 'three', 'four', 'five']) {
    sim.enqueue({ text: `${name} ${long}` });
    await openai(funded, small).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: `long ${name}` }] });
    await small.app.cache?.flush();
  }
  await until('stored', () => (small.app.cache?.internals.store?.size.bytes ?? 0) > 0);
  const size = small.app.cache?.internals.store?.size;
  t.ok(size && size.bytes <= 64 * 1024, `${size?.bytes} bytes kept, within 64 KB`);
  t.ok(size && size.entries >= 2 && size.entries <= 3, `${size?.entries} entries of ~20 KB`);
  const newest = await openai(funded, small).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'long five' }] }).withResponse();
  t.equal(newest.response.headers.get('x-gateway-cache'), 'exact', 'the newest is kept');
  const oldest = await openai(funded, small).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'long one' }] }).withResponse();
  t.equal(oldest.response.headers.get('x-gateway-cache'), 'miss', 'the oldest was evicted');
});

t.test('a broken cache is a miss, never an error: corrupted entry, full disk, embedding model down, unreadable file', async (t) => {
  const funded = await fundedKey(gw, { balance: 1000 });
  const store = gw.app.cache?.internals.store;
  if (!store) throw new Error('no cache store');
  // SQLite keeps the cache in a file of its own; PostgreSQL in the gateway's database.
  const onCache = async (query: string) => (store instanceof CacheStore ? void store.raw.prepare(query).run() : sqlRun(gw, query));
  const question = unique('Corrupt me');
  const first = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] });
  await until('stored', async () => {
    const r = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] });
    return header(r, 'x-gateway-cache') === 'exact';
  });
  // Corrupt every entry's answer: the next lookup drops it and asks upstream. (The misses
  // before the hit store their answers after them: those writes land first.)
  await gw.app.cache?.flush();
  await onCache("UPDATE cache_entries SET answer = '{\"v\":1,\"text\":' ");
  const calls = chatCalls();
  const after = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(after.response.headers.get('x-gateway-cache'), 'miss', 'a corrupted entry is a miss');
  t.equal(after.data.choices[0]?.message.content, first.choices[0]?.message.content, 'answered upstream');
  t.equal(chatCalls(), calls + 1);

  // Full disk (SQLite's file; PostgreSQL's own disk is the database's): the cache file may
  // not grow; calls still succeed (misses), nothing is stored.
  await gw.app.cache?.flush(); // the miss above stores its answer
  if (store instanceof CacheStore) {
    const pages = store.raw.pragma('page_count', { simple: true }) as number;
    store.raw.pragma(`max_page_count = ${pages}`);
    t.teardown(() => store.raw.pragma('max_page_count = 1073741823'));
    const big = 'y'.repeat(50_000);
    const entriesBefore = (store.raw.prepare('SELECT count(*) AS n FROM cache_entries').get() as { n: number }).n;
    for (let i = 0; i < 3; i++) {
      sim.enqueue({ text: `${big} ${i}` });
      const full = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o', messages: [{ role: 'user', content: unique('disk full') }] });
      t.equal(full.status, 200, 'answered while the cache cannot store');
    }
    await gw.app.cache?.flush();
    t.equal((store.raw.prepare('SELECT count(*) AS n FROM cache_entries').get() as { n: number }).n, entriesBefore, 'nothing stored: the disk was full');
    store.raw.pragma('max_page_count = 1073741823');
  }

  // The embedding model fails: the semantic lookup is skipped (a miss), the call answered.
  sim.enqueue({ error: { status: 500, message: 'embedding backend down' } });
  const noEmbedding = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: unique('embedding down') }] });
  t.equal(noEmbedding.status, 200, 'embedding failure: still answered');
  t.equal(header(noEmbedding, 'x-gateway-cache'), 'miss');
  await noHolds(t, gw, funded);
});

t.test('a cache file that is not a database is set aside at start', async (t) => {
  const { mkdtempSync, writeFileSync, existsSync, readdirSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const { CacheStore } = await import('../../src/store/cache-entries.js');
  const pino = (await import('pino')).default;
  const dir = mkdtempSync(join(tmpdir(), 'cache-corrupt-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'gateway-cache.db');
  writeFileSync(file, 'this is not an SQLite database, it is garbage '.repeat(200));
  const store = CacheStore.open(file, { maxEntries: 10, maxBytes: 1 << 20 }, pino({ level: 'silent' }));
  t.equal(store.size.entries, 0, 'a fresh, empty cache');
  store.put({ accountId: 'acc_test', exactKey: 'k', partition: undefined, vector: undefined, model: 'm', answer: '{}', now: Date.now(), ttlMs: 60_000 });
  t.ok(store.getExact('k', Date.now()), 'usable');
  store.close();
  t.ok(existsSync(file));
  t.ok(readdirSync(dir).some((name) => name.includes('.corrupt-')), 'the broken file kept aside');
});

t.test('tool calls are cached and replayed with fresh ids, as JSON and stream', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const body = {
    model: 'openai/gpt-4o',
    messages: [{ role: 'user' as const, content: unique('What is the weather in Paris') }],
    tools: [{ type: 'function' as const, function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
  };
  sim.enqueue({ toolCalls: [{ name: 'weather', arguments: '{"city":"Paris"}' }], finish: 'tool_calls' });
  const first = await openai(funded).chat.completions.create(body);
  const firstCall = first.choices[0]?.message.tool_calls?.[0];
  t.equal(firstCall?.type === 'function' ? firstCall.function.arguments : undefined, '{"city":"Paris"}');
  await gw.app.cache?.flush();
  const hit = await openai(funded).chat.completions.create(body).withResponse();
  t.equal(hit.response.headers.get('x-gateway-cache'), 'exact');
  const call = hit.data.choices[0]?.message.tool_calls?.[0];
  t.equal(call?.type === 'function' ? call.function.name : undefined, 'weather');
  t.equal(call?.type === 'function' ? call.function.arguments : undefined, '{"city":"Paris"}');
  t.equal(hit.data.choices[0]?.finish_reason, 'tool_calls');
  t.not(call?.id, firstCall?.id, 'a fresh tool call id');
  const stream = await openai(funded).chat.completions.create({ ...body, stream: true });
  let args = '';
  let name = '';
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta.tool_calls?.[0];
    if (delta?.function?.name) name = delta.function.name;
    if (delta?.function?.arguments) args += delta.function.arguments;
    if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
  }
  t.equal(name, 'weather');
  t.equal(args, '{"city":"Paris"}', 'arguments replayed in pieces');
  t.equal(finish, 'tool_calls');
});

t.test('an answer cut at its output limit is served only to the same limit; a stream miss is stored too', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const question = unique('Tell me a long story');
  sim.enqueue({ text: 'Once upon a time', finish: 'length' });
  const stream = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', max_tokens: 5, messages: [{ role: 'user', content: question }], stream: true });
  for await (const chunk of stream) void chunk;
  await gw.app.cache?.flush();
  const same = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', max_tokens: 5, messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(same.response.headers.get('x-gateway-cache'), 'exact', 'a streamed miss was stored; same limit: a hit');
  t.equal(same.data.choices[0]?.finish_reason, 'length');
  const longer = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', max_tokens: 500, messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(longer.response.headers.get('x-gateway-cache'), 'miss', 'a higher limit would have got more: a miss');
});

t.test('with Redis, the exact tier is shared by the daemons', { skip: redisSkipReason() }, async (t) => {
  const prefix = `gw-cache-${Date.now()}:`;
  const raw = { providers: simulatedProviders(sim.url), redis: { url: REDIS_URL, key_prefix: prefix }, cache: cacheConfig({ semantic: { models: [] } }) };
  const a = await startTestGateway(raw);
  t.teardown(() => a.stop());
  // A second daemon on the same database file and Redis.
  const b = await startGateway(testConfig(a.dir, raw), { logger: pino({ level: 'silent' }) });
  t.teardown(() => b.close());
  const funded = await fundedKey(a, { balance: 10 });
  const question = unique('Shared question');
  sim.enqueue({ text: 'answered once' });
  const first = await openai(funded, a).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(first.response.headers.get('x-gateway-cache'), 'miss');
  const redis = a.app.redis;
  if (!redis) throw new Error('no redis');
  await until('in Redis', async () => (await redis.keys(`${prefix}cache:e:*`)).length === 1);
  t.equal(a.app.cache?.internals.store?.size.entries, 0, 'not in SQLite: Redis holds the exact tier');
  const fromB = await new OpenAI({ apiKey: funded.key, baseURL: `${b.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(fromB.response.headers.get('x-gateway-cache'), 'exact', 'the other daemon hits the entry');
  t.equal(fromB.data.choices[0]?.message.content, 'answered once');
  t.equal(chatCalls(), 1);
  // Eviction bookkeeping: lru, expiry, sizes, bytes.
  t.equal(await redis.zcard(`${prefix}cache:lru`), 1);
  t.ok(Number(await redis.get(`${prefix}cache:bytes`)) > 0);
  // A corrupted Redis entry is a miss.
  const [entryKey] = await redis.keys(`${prefix}cache:e:*`);
  await redis.set(entryKey as string, 'garbage');
  const after = await openai(funded, b).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(after.response.headers.get('x-gateway-cache'), 'miss', 'a corrupted Redis entry is a miss');
  await b.app.cache?.flush();
  await until('stored again', async () => (await redis.keys(`${prefix}cache:e:*`)).length === 1);
  // A purge of the account through either daemon empties the Redis tier and its bookkeeping.
  const purge = await a.http('DELETE', `/api/management/cache?account=${funded.accountId}`, { token: a.adminKey });
  t.equal(purge.status, 200);
  t.equal(purge.body.removed, 1);
  t.same(await redis.keys(`${prefix}cache:e:*`), [], 'no entry left in Redis');
  t.equal(await redis.zcard(`${prefix}cache:lru`), 0);
  t.equal(Number(await redis.get(`${prefix}cache:bytes`)), 0, 'byte count back to 0');
  t.match((await a.http('GET', '/api/management/cache', { token: a.adminKey })).body, { redis: { entries: 0, bytes: 0 } });
  const leftovers = await redis.keys(`${prefix}cache:*`);
  if (leftovers.length > 0) await redis.del(...leftovers);
});

t.test('the semantic tier needs a catalog embedding model: otherwise the daemon does not start', async (t) => {
  await t.rejects(
    startTestGateway({ providers: simulatedProviders(sim.url), cache: cacheConfig({ semantic: { models: ['*'], embedding_model: 'openai/gpt-4o' } }) }),
    /cache\.semantic\.embedding_model: 'openai\/gpt-4o' is not an embedding model of the catalog/,
  );
});

t.test('scope: key keeps each key\'s entries to itself', async (t) => {
  const keyed = await startTestGateway({ providers: simulatedProviders(sim.url), cache: cacheConfig({ scope: 'key', semantic: { models: [] } }) });
  t.teardown(() => keyed.stop());
  const funded = await fundedKey(keyed, { balance: 10 });
  const second = await keyed.http('POST', `/api/management/accounts/${funded.accountId}/api-keys`, { token: keyed.adminKey, body: { name: 'second' } });
  const other: FundedKey = { ...funded, key: second.body.api_key, keyId: second.body.id };
  const ask = (who: FundedKey) => openai(who, keyed).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'scoped question' }] }).withResponse();
  await ask(funded);
  await until('stored', async () => (await ask(funded)).response.headers.get('x-gateway-cache') === 'exact');
  t.equal((await ask(other)).response.headers.get('x-gateway-cache'), 'miss', 'another key of the same account misses');
});

t.test('an empty wallet: the lookup and the call are refused (402), nothing charged', async (t) => {
  const funded = await fundedKey(gw, { balance: 0 });
  const res = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PHOTOSYNTHESIS }] });
  t.equal(res.status, 402);
  t.equal(res.json.error.type, 'insufficient_credits');
  t.equal(embeddingCalls(), 0, 'no embedding call upstream');
  t.equal(chatCalls(), 0);
  gw.app.settlement.drain();
  t.equal((await charges(gw, funded.accountId)).length, 0, 'no charge');
});

t.test('an answer cached through /v1/messages answers /v1/chat/completions (and its stream)', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  const question = unique('Which planet is largest');
  sim.enqueue({ text: 'Jupiter is the largest planet.' });
  const stream = anthropic(funded).messages.stream({ model: 'openai/gpt-4o', max_tokens: 300, messages: [{ role: 'user', content: question }] });
  const message = await stream.finalMessage();
  t.equal(message.content[0]?.type === 'text' ? message.content[0].text : undefined, 'Jupiter is the largest planet.');
  await gw.app.cache?.flush();
  const chat = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', max_tokens: 300, messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(chat.response.headers.get('x-gateway-cache'), 'exact', 'a streamed messages call answers chat completions');
  t.equal(chat.data.choices[0]?.message.content, 'Jupiter is the largest planet.');
  t.equal(chat.data.usage?.completion_tokens, message.usage.output_tokens, 'the same usage');
  const noLimit = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(noLimit.response.headers.get('x-gateway-cache'), 'exact', 'an answer that ended on its own fits a call without a limit');
});

t.test('entries outlive a restart; daemons sharing the file share the semantic tier', { skip: redisSkipReason() }, async (t) => {
  const prefix = `gw-cache-sem-${Date.now()}:`;
  const raw = { providers: simulatedProviders(sim.url), redis: { url: REDIS_URL, key_prefix: prefix }, cache: cacheConfig() };
  const a = await startTestGateway(raw);
  t.teardown(() => a.stop());
  const b = await startGateway(testConfig(a.dir, raw), { logger: pino({ level: 'silent' }) });
  let bClosed = false;
  t.teardown(() => (bClosed ? undefined : b.close()));
  const funded = await fundedKey(a, { balance: 10 });
  sim.enqueue({}, { text: 'Shared semantic answer' });
  await openai(funded, a).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PHOTOSYNTHESIS }] });
  await a.app.cache?.flush();
  // Daemon b learns of a's entry at its next look at the file (every 5 s; here at once).
  await b.app.cache?.syncVectors();
  const fromB = await openai(funded, b).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PARAPHRASE }] }).withResponse();
  t.equal(fromB.response.headers.get('x-gateway-cache'), 'semantic', 'the other daemon finds the paraphrase');
  t.equal(fromB.data.choices[0]?.message.content, 'Shared semantic answer');

  // A restart: the semantic index is rebuilt from the file, in the background.
  await b.close();
  bClosed = true;
  const c = await startGateway(testConfig(a.dir, raw), { logger: pino({ level: 'silent' }) });
  t.teardown(() => c.close());
  await c.app.cache?.ready();
  const fromC = await openai(funded, c).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PARAPHRASE }] }).withResponse();
  t.equal(fromC.response.headers.get('x-gateway-cache'), 'semantic', 'a restarted daemon serves the entries of the file');
  const redis = a.app.redis;
  if (redis) {
    const keys = await redis.keys(`${prefix}cache:*`);
    if (keys.length > 0) await redis.del(...keys);
  }
});

t.test('gateway usage list shows the cache outcome of each call (CACHE column, --json fields)', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  sim.enqueue({}, { text: 'Leaves make sugar.' });
  await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PHOTOSYNTHESIS }] });
  await gw.app.cache?.flush();
  await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PARAPHRASE }] });
  await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PHOTOSYNTHESIS }] });
  gw.app.settlement.drain();
  const json = await runCli(['usage', 'list', '--json', '--account', funded.accountId, '--url', gw.url, '--key', gw.adminKey]);
  t.equal(json.code, 0, json.stderr);
  const rows = (JSON.parse(json.stdout) as { data: Array<{ endpoint: string; cache: string | null; cache_similarity: number | null; cache_saved: number }> }).data.filter((r) => r.endpoint === 'chat.completions');
  t.same(rows.map((r) => r.cache), ['exact', 'semantic', 'miss'], 'newest first: exact, semantic, miss');
  t.ok((rows[1]?.cache_similarity ?? 0) >= THRESHOLD);
  t.ok((rows[0]?.cache_saved ?? 0) > 0, 'what the hit saved');
  const table = await runCli(['usage', 'list', '--account', funded.accountId, '--url', gw.url, '--key', gw.adminKey]);
  t.equal(table.code, 0, table.stderr);
  t.match(table.stdout, /COST\s+CACHE\s+LATENCY/, 'a CACHE column after COST');
  t.match(table.stdout, /semantic 0\.9\d/, 'a semantic hit with its similarity');
  t.match(table.stdout, /₹0\.00\s+exact/, "an exact hit at ₹0");
});

t.test('management API: what the cache holds, and purges of one account or all', async (t) => {
  const alice = await fundedKey(gw, { balance: 10 });
  const bob = await fundedKey(gw, { balance: 10 });
  for (const who of [alice, bob]) await openai(who).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'purge me' }] });
  await gw.app.cache?.flush();
  const stats = await gw.http('GET', '/api/management/cache', { token: gw.adminKey });
  t.equal(stats.status, 200);
  t.match(stats.body, { object: 'cache', enabled: true, scope: 'account', entries: Number, bytes: Number, semantic_entries: Number });
  t.ok(stats.body.entries >= 2);
  const ask = async (who: FundedKey) => (await openai(who).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'purge me' }] }).withResponse()).response.headers.get('x-gateway-cache');
  t.equal(await ask(alice), 'exact');

  // A user's own management key may purge its own account, not another's, not all.
  const userKey = await gw.http('POST', `/api/management/accounts/${alice.accountId}/management-keys`, { token: gw.adminKey, body: { name: 'alice admin tools' } });
  const own = await gw.http('DELETE', '/api/management/cache?account=me', { token: userKey.body.management_key });
  t.equal(own.status, 200);
  t.match(own.body, { object: 'cache.purge', account_id: alice.accountId });
  t.ok(own.body.removed >= 1, `${own.body.removed} removed`);
  t.equal((await gw.http('DELETE', `/api/management/cache?account=${bob.accountId}`, { token: userKey.body.management_key })).status, 404, 'another account: not found');
  t.equal((await gw.http('DELETE', '/api/management/cache', { token: userKey.body.management_key })).status, 403, 'all: admins only');
  t.equal((await gw.http('GET', '/api/management/cache', { token: userKey.body.management_key })).status, 403);
  t.equal(await ask(alice), 'miss', 'alice\'s entries are gone');
  t.equal(await ask(bob), 'exact', 'bob\'s are not');

  const empty = await gw.http('DELETE', '/api/management/cache?account=', { token: gw.adminKey });
  t.equal(empty.status, 400, 'an empty account is refused, not taken for all');
  t.match(empty.body, { error: { code: 400, param: 'account' } });
  t.equal(await ask(bob), 'exact', 'nothing purged');
  const all = await gw.http('DELETE', '/api/management/cache', { token: gw.adminKey });
  t.equal(all.status, 200);
  t.equal(all.body.account_id, null);
  t.equal((await gw.http('GET', '/api/management/cache', { token: gw.adminKey })).body.entries, 0, 'empty');
  t.equal(await ask(bob), 'miss');

  const off = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(() => off.stop());
  t.same((await off.http('GET', '/api/management/cache', { token: off.adminKey })).body, { object: 'cache', enabled: false });
  const refused = await off.http('DELETE', '/api/management/cache', { token: off.adminKey });
  t.equal(refused.status, 409);
  t.match(refused.body, { error: { code: 409, message: /not enabled/ } });
});

t.test('MCP: purge_cache, driven by the MCP SDK client', async (t) => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const funded = await fundedKey(gw, { balance: 10 });
  await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'mcp purge' }] });
  await gw.app.cache?.flush();
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${gw.adminKey}` } } }));
  t.teardown(() => client.close());
  const purged = await client.callTool({ name: 'purge_cache', arguments: { account_id: funded.accountId } });
  t.notOk(purged.isError, JSON.stringify(purged.content));
  t.same(purged.structuredContent, { removed: 1, account_id: funded.accountId });
  const again = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'mcp purge' }] }).withResponse();
  t.equal(again.response.headers.get('x-gateway-cache'), 'miss', 'purged');
  const both = await client.callTool({ name: 'purge_cache', arguments: { account_id: funded.accountId, all: true } });
  t.ok(both.isError, 'account_id and all together: a tool error');
});

t.test('gateway cache stats and purge (CLI)', async (t) => {
  const funded = await fundedKey(gw, { balance: 10 });
  await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'cli purge' }] });
  await gw.app.cache?.flush();
  const account = (await gw.http('GET', `/api/management/accounts/${funded.accountId}`, { token: gw.adminKey })).body as { email: string };
  const stats = await runCli(['cache', 'stats', '--json', '--url', gw.url, '--key', gw.adminKey]);
  t.equal(stats.code, 0, stats.stderr);
  t.match(JSON.parse(stats.stdout), { object: 'cache', enabled: true, entries: Number });
  const human = await runCli(['cache', 'stats', '--url', gw.url, '--key', gw.adminKey]);
  t.match(human.stdout, /entries\s+\d+ \(\d+ with a semantic vector\)/);
  const usage = await runCli(['cache', 'purge', '--url', gw.url, '--key', gw.adminKey]);
  t.equal(usage.code, 2, 'neither --email nor --all: a usage error');
  t.match(usage.stderr, /give --email <account> or --all/);
  const purge = await runCli(['cache', 'purge', '--email', account.email, '--url', gw.url, '--key', gw.adminKey]);
  t.equal(purge.code, 0, purge.stderr);
  t.match(purge.stdout, new RegExp(`removed 1 cached answer of ${account.email.replace(/[.]/g, '\\.')}`));
  const again = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'cli purge' }] }).withResponse();
  t.equal(again.response.headers.get('x-gateway-cache'), 'miss');
});

t.test('gateway keys create --no-cache and keys update --cache on|off', async (t) => {
  const funded = await fundedKey(gw, { balance: 1 });
  const account = (await gw.http('GET', `/api/management/accounts/${funded.accountId}`, { token: gw.adminKey })).body as { email: string };
  const created = await runCli(['keys', 'create', '--email', account.email, '--name', 'no cache', '--no-cache', '--json', '--url', gw.url, '--key', gw.adminKey]);
  t.equal(created.code, 0, created.stderr);
  const key = JSON.parse(created.stdout) as { id: string; cache: boolean };
  t.equal(key.cache, false, 'created opted out');
  const on = await runCli(['keys', 'update', key.id, '--cache', 'on', '--json', '--url', gw.url, '--key', gw.adminKey]);
  t.equal((JSON.parse(on.stdout) as { cache: boolean }).cache, true, 'opted back in');
  const human = await runCli(['keys', 'update', key.id, '--cache', 'off', '--url', gw.url, '--key', gw.adminKey]);
  t.equal(human.code, 0, human.stderr);
  const bad = await runCli(['keys', 'update', key.id, '--cache', 'maybe', '--url', gw.url, '--key', gw.adminKey]);
  t.equal(bad.code, 2, 'only on or off');
  const listed = await gw.http('GET', `/api/management/api-keys/${key.id}`, { token: gw.adminKey });
  t.equal(listed.body.cache, false);
});

t.test("a key kept to a chat model still gets the semantic lookup (the gateway's embedding call is not the key's)", async (t) => {
  const funded = await fundedKey(gw, { balance: 10, key: { models: ['openai/gpt-4o-mini'] } });
  const before = embeddingCalls();
  const res = await openai(funded).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'A question only this key asks, about tides and the moon.' }] }).withResponse();
  t.equal(res.response.headers.get('x-gateway-cache'), 'miss');
  t.equal(embeddingCalls(), before + 1, 'the prompt was embedded, with an embedding model outside the key\'s list');
});
