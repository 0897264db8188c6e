import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { balanceMicros, charges, header, noHolds, postJson, until, usageRow } from '../support/e2e.js';
import { embedText, cosine } from '../support/simulator/embed.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { costMicros } from '../../src/core/pricing.js';

/**
 * The response cache end to end: exact hits across the three formats, as JSON and as streams;
 * semantic hits within the threshold; the opt-outs; account isolation; TTL and eviction;
 * billing of hits and misses to the µINR; a broken cache is a miss, never an error.
 */

const THRESHOLD = 0.9;

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

function openai(funded: FundedKey, target: TestGateway = gw): OpenAI {
  return new OpenAI({ apiKey: funded.key, baseURL: `${target.url}/v1`, maxRetries: 0 });
}

function anthropic(funded: FundedKey, target: TestGateway = gw): Anthropic {
  return new Anthropic({ apiKey: funded.key, baseURL: target.url, maxRetries: 0 });
}

function charged(target: TestGateway, funded: FundedKey, requestId: string | undefined): number {
  target.app.settlement.drain();
  return -charges(target, funded.accountId, requestId).reduce((sum, entry) => sum + entry.amountMicros, 0);
}

/** Waits until the cache has stored what a miss produced (stores happen after the response). */
async function stored(target: TestGateway, entries: number): Promise<void> {
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
  const firstRow = usageRow(gw, first.response.headers.get('x-request-id') ?? undefined);
  t.equal(firstRow?.cache, 'miss', 'usage row: miss');
  const missCost = charged(gw, funded, first.response.headers.get('x-request-id') ?? undefined);
  t.ok(missCost > 0, 'the miss is charged');
  t.equal(missCost, costMicros(model.pricing, { inputTokens: first.data.usage?.prompt_tokens ?? 0, outputTokens: first.data.usage?.completion_tokens ?? 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), 'miss: list price');
  await stored(gw, 1);
  const text = first.data.choices[0]?.message.content;

  // 2. The same question, chat completions JSON: a hit, nothing upstream, nothing charged.
  const before = balanceMicros(gw, funded.accountId);
  const second = await openai(funded).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: question }] }).withResponse();
  t.equal(second.response.headers.get('x-gateway-cache'), 'exact', 'x-gateway-cache: exact (short model name, same model)');
  t.equal(second.data.choices[0]?.message.content, text, 'the same answer');
  t.same(second.data.usage, first.data.usage, 'usage of the answer reported');
  t.equal(chatCalls(), 1, 'nothing sent upstream');
  const hitId = second.response.headers.get('x-request-id') ?? undefined;
  t.equal(charged(gw, funded, hitId), 0, 'the hit is free (hit_price 0)');
  t.equal(second.response.headers.get('x-gateway-cost-inr'), '0');
  t.equal(balanceMicros(gw, funded.accountId), before, 'balance unchanged');
  const hitRow = usageRow(gw, hitId);
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
  const lookupCost = charged(gw, funded, lookupId);
  t.ok(lookupCost > 0, 'the semantic lookup embedding is billed');
  t.equal(usageRow(gw, lookupId)?.endpoint, 'cache.embeddings');
  t.equal(charged(gw, funded, undefined), missCost + lookupCost, 'only the miss (and its lookup) were ever charged');
  await noHolds(t, gw, funded);
});
