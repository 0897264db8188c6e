import OpenAI from 'openai';
import type { ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import t from 'tap';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator, type RecordedRequest } from '../support/simulator/server.js';
import { REASONING_SUMMARY } from '../support/simulator/openai-responses.js';
import { requestIdBody } from '../../src/core/ids.js';
import { ceilMillion, charges, header, noHolds, postJson, usageRow } from '../support/e2e.js';

/**
 * The responses format forwarded natively (issue 27): the OpenAI provider is marked
 * `responses: true`, so the official SDK's `responses.create` and `.stream` reach the
 * simulator's `/v1/responses` as the client sent them (hosted tools, reasoning items with
 * their encrypted content, function calls), and the client gets the upstream's own answer and
 * events with the gateway's id, the catalog model and its own sequence numbers; every call is
 * billed from the upstream's usage, to the µINR. Retries before the first byte, fallbacks and
 * the response cache behave as for every call; a provider without the flag still gets chat
 * completions.
 */

let sim: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

const GPT5 = 'openai/gpt-5-mini';
const DEEPSEEK = 'deepseek/deepseek-chat';
const CLAUDE = 'anthropic/claude-sonnet-4-5';
const WEATHER = { type: 'function' as const, name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true };

t.before(async () => {
  sim = await ProviderSimulator.start();
  const providers = simulatedProviders(sim.url);
  gw = await startTestGateway({
    providers: { ...providers, openai: { ...(providers.openai as object), responses: true } },
    routing: { retries: 1, cooldown: { failures: 1000 } },
    cache: { enabled: true, ttl: '1h', exact: { models: ['*'] } },
  });
  funded = await fundedKey(gw, { balance: 1000 });
});

t.beforeEach(() => sim.reset());

t.teardown(async () => {
  await gw?.stop();
  await sim?.close();
});

const client = (): OpenAI => new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const paths = (): string[] => sim.requests.map((r) => r.path);
const body = (r: RecordedRequest | undefined): Record<string, any> => (r?.body ?? {}) as Record<string, any>;

/** The cost of a call as the model's prices × the simulator's reported usage (Responses wire), rounded up once. */
function expectedCost(model: string, wire: any): number {
  const pricing = gw.app.catalog.get(model)!.pricing;
  const cached = BigInt(wire.input_tokens_details.cached_tokens);
  return ceilMillion(
    (BigInt(wire.input_tokens) - cached) * BigInt(pricing.inputPer1M) + cached * BigInt(pricing.cacheReadPer1M ?? pricing.inputPer1M) + BigInt(wire.output_tokens) * BigInt(pricing.outputPer1M),
  );
}

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

async function billed(t: Tap, requestId: string | null | undefined, model: string, wire: unknown): Promise<void> {
  gw.app.settlement.drain();
  const row = await usageRow(gw, requestId ?? undefined);
  const cost = expectedCost(model, wire);
  t.ok(cost > 0);
  t.equal(row?.costMicros, cost, `billed ${cost} µINR: the model's prices × the upstream's usage`);
  t.equal((await charges(gw, funded.accountId, requestId ?? undefined))[0]?.amountMicros, -cost, 'charged so');
}

t.test('JSON: a hosted web_search is kept and its item relayed; the call is billed from the upstream usage', async (t) => {
  sim.enqueue({ text: 'Paris is sunny today.', usage: { input: 1234, output: 56, cacheRead: 200, reasoning: 10 } });
  const res = await client()
    .responses.create({ model: GPT5, input: 'What is the weather in Paris?', tools: [{ type: 'web_search' }], store: false, prompt_cache_key: 'k1', metadata: { a: 'b' } })
    .withResponse();
  const answer = res.data;
  t.same(paths(), ['/v1/responses'], 'the upstream\'s own responses endpoint');
  const sent = body(sim.requests[0]);
  t.match(sent, { model: 'gpt-5-mini', input: 'What is the weather in Paris?', tools: [{ type: 'web_search' }], store: false, prompt_cache_key: 'k1', metadata: { a: 'b' }, stream: false });
  t.type(sent.max_output_tokens, 'number', 'the output limit the hold covers');
  t.notOk('models' in sent);
  t.equal(answer.id, `resp_${requestIdBody(res.response.headers.get('x-request-id') ?? '')}`, "the gateway's id, not the upstream's");
  t.equal(answer.model, GPT5, 'the catalog id');
  t.same(answer.output.map((item) => item.type), ['web_search_call', 'message'], "the upstream's items, the hosted call included");
  t.equal(answer.output_text, 'Paris is sunny today.');
  t.match(answer.usage, { input_tokens: 1234, output_tokens: 56, input_tokens_details: { cached_tokens: 200 }, output_tokens_details: { reasoning_tokens: 10 } });
  t.notOk(res.response.headers.get('x-gateway-dropped-tools'), 'nothing dropped');
  await billed(t, res.response.headers.get('x-request-id'), GPT5, sim.requests[0]?.usage);
  await noHolds(t, gw, funded);
});

t.test('a reasoning item with encrypted_content round-trips across two turns (JSON, then a stream)', async (t) => {
  const reasoning = { effort: 'low' as const, summary: 'auto' as const };
  const include = ['reasoning.encrypted_content' as const];
  const first = await client().responses.create({ model: GPT5, input: 'Think, then greet me.', reasoning, include, store: false });
  const item = first.output[0];
  t.equal(item?.type, 'reasoning');
  if (item?.type !== 'reasoning') return;
  t.match(item.encrypted_content, /^gAAAA/, 'the opaque reasoning, as the upstream issued it');
  t.equal(item.summary[0]?.text, REASONING_SUMMARY);
  t.ok((first.usage?.output_tokens_details.reasoning_tokens ?? 0) > 0, 'reasoning tokens reported');

  const input: ResponseInputItem[] = [{ role: 'user', content: 'Think, then greet me.' }, ...(first.output as ResponseInputItem[]), { role: 'user', content: 'And again.' }];
  const stream = client().responses.stream({ model: GPT5, input, reasoning, include, store: false });
  const second = await stream.finalResponse();
  t.equal(second.status, 'completed', 'the upstream verified the encrypted content it issued');
  const replayed = (body(sim.requests[1]).input as any[]).find((i) => i.type === 'reasoning');
  t.equal(replayed?.encrypted_content, item.encrypted_content, 'sent back exactly');
  const next = second.output.find((i) => i.type === 'reasoning');
  t.match(next?.type === 'reasoning' ? next.encrypted_content : undefined, /^gAAAA/, "the stream's reasoning item carries its own (from output_item.done)");

  const forged = input.map((i) => (i.type === 'reasoning' ? { ...i, encrypted_content: `${item.encrypted_content}x` } : i));
  const refused = await client()
    .responses.create({ model: GPT5, input: forged, reasoning, include, store: false })
    .then(() => undefined, (error: unknown) => error);
  t.match(refused, { status: 400 }, "content the upstream did not issue is refused, in OpenAI's words");
  t.match((refused as Error).message, /The encrypted content gAAA\.\.\..{4} could not be verified/);
});

t.test('function tools: a function_call, then its function_call_output', async (t) => {
  const first = await client().responses.create({ model: GPT5, input: 'Weather? SIM:{"toolCalls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}', tools: [WEATHER] });
  const call = first.output.find((i) => i.type === 'function_call');
  t.match(call, { type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}' });
  if (call?.type !== 'function_call') return;
  const second = await client().responses.create({
    model: GPT5,
    tools: [WEATHER],
    input: [{ role: 'user', content: 'Weather?' }, call, { type: 'function_call_output', call_id: call.call_id, output: '{"sky":"clear"}' }],
  });
  t.equal(second.status, 'completed');
  t.match(body(sim.requests[1]).input[2], { type: 'function_call_output', call_id: call.call_id });
  t.same(paths(), ['/v1/responses', '/v1/responses']);
});

t.test('a stream: the upstream events, accepted by the SDK, renumbered, billed before the end', async (t) => {
  sim.enqueue({ text: 'Streaming along.', usage: { input: 321, output: 45, cacheRead: 20, reasoning: 7 } });
  const stream = client().responses.stream({ model: GPT5, input: 'stream please', tools: [{ type: 'web_search' }], reasoning: { summary: 'auto' } });
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalResponse();
  t.equal(final.output_text, 'Streaming along.');
  t.same(final.output.map((i) => i.type), ['reasoning', 'web_search_call', 'message']);
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), 'sequence numbers from 0, one per event');
  t.equal(events[0]?.type, 'response.created');
  t.equal(events.at(-1)?.type, 'response.completed');
  for (const type of ['response.reasoning_summary_text.delta', 'response.web_search_call.searching', 'response.output_text.delta', 'response.content_part.done']) {
    t.ok(events.some((e) => e.type === type), `${type} relayed`);
  }
  const created = events[0]?.type === 'response.created' ? events[0].response : undefined;
  t.match(created, { model: GPT5, id: final.id });
  t.equal(final.model, GPT5);
  t.match(final.usage, { input_tokens: 321, output_tokens: 45 });
  await billed(t, `req_${final.id.slice('resp_'.length)}`, GPT5, sim.requests[0]?.usage);
});

t.test('a stream the upstream fails after its first content ends with response.failed, billed for what was delivered', async (t) => {
  // created, in_progress, item added, part added, 2 deltas: then response.failed.
  sim.enqueue({ text: 'abcdefgh', chunkSize: 4, chunkDelayMs: 20, errorAfterEvents: { events: 6, message: 'the model broke' } });
  const stream = client().responses.stream({ model: GPT5, input: 'fail midway' });
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalResponse();
  t.equal(final.status, 'failed');
  t.match(final.error, { code: 'server_error', message: /the model broke/ });
  t.equal(events.at(-1)?.type, 'response.failed');
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i));
  t.match(final.output[0], { type: 'message', status: 'incomplete' }, 'the item relayed so far, marked incomplete');
  t.same(paths(), ['/v1/responses'], 'no retry once the client had bytes');
  gw.app.settlement.drain();
  const rows = await gw.app.store.usage.list({ limit: 1000 });
  const row = rows.find((r) => r.errorType === 'upstream_stream_error' && r.model === GPT5);
  t.match(row, { status: 502, stream: true });
  t.ok((row?.costMicros ?? 0) > 0, 'what was delivered is billed');
  await noHolds(t, gw, funded);
});

t.test('before the first byte: a 500, or a stream failing before its content, is retried invisibly; then a fallback', async (t) => {
  sim.enqueue({ error: { status: 500 } }, { text: 'second time lucky' });
  const res = await client().responses.create({ model: GPT5, input: 'retry me' }).withResponse();
  t.equal(res.data.output_text, 'second time lucky');
  t.equal(res.response.headers.get('x-gateway-attempts'), '2');
  t.same(paths(), ['/v1/responses', '/v1/responses']);

  sim.reset();
  sim.enqueue({ errorAfterEvents: { events: 2 } }, { text: 'clean stream' });
  const stream = client().responses.stream({ model: GPT5, input: 'retry my stream' });
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  t.equal((await stream.finalResponse()).output_text, 'clean stream');
  t.equal(events.filter((e) => e.type === 'response.created').length, 1, "the failed attempt's opening events never reached the client");
  t.same(paths(), ['/v1/responses', '/v1/responses']);

  // GPT-5 mini fails with a fallback named: Claude serves, through the canonical encoder.
  sim.reset();
  sim.enqueue({ error: { status: 500 } }, { text: 'Claude here' });
  const fallback = await postJson(`${gw.url}/v1/responses`, { authorization: `Bearer ${funded.key}` }, { model: GPT5, models: [CLAUDE], input: 'fall back' });
  t.equal(fallback.status, 200, fallback.text);
  t.equal(fallback.json.model, CLAUDE);
  t.equal(fallback.json.output[0].content[0].text, 'Claude here');
  t.same(paths(), ['/v1/responses', '/v1/messages']);
  await noHolds(t, gw, funded);
});

t.test('a provider without responses: true still gets chat completions', async (t) => {
  const answer = await client().responses.create({ model: DEEPSEEK, input: 'hello', tools: [WEATHER] });
  t.same(paths(), ['/v1/chat/completions']);
  t.equal(answer.model, DEEPSEEK);
  t.equal(answer.output_text, 'Hello from the openai simulator (model deepseek-chat).');
  const stream = client().responses.stream({ model: DEEPSEEK, input: 'hello again' });
  t.match((await stream.finalResponse()).output_text, /Hello from the openai simulator/);
  t.same(paths(), ['/v1/chat/completions', '/v1/chat/completions']);
});

t.test('a native answer is not kept in the response cache', async (t) => {
  const ask = () => postJson(`${gw.url}/v1/responses`, { authorization: `Bearer ${funded.key}` }, { model: GPT5, input: 'cache me if you can' });
  const one = await ask();
  const two = await ask();
  t.equal(one.status, 200);
  t.equal(two.status, 200);
  t.equal(header(two, 'x-gateway-cache'), 'miss', 'asked again: still a miss');
  t.same(paths(), ['/v1/responses', '/v1/responses'], 'both went upstream');
  const streamed = async () => {
    const stream = client().responses.stream({ model: GPT5, input: 'stream me twice' });
    return (await stream.finalResponse()).output_text;
  };
  t.equal(await streamed(), await streamed());
  t.equal(sim.requests.length, 4, 'streams too');
});
