import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { ceilMillion, charges, exactlyBilled as exactlyBilledAt, header, noHolds, postJson, usageRow } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * AWS Bedrock (issue 29): a provider of type bedrock speaks the Converse API, each request
 * signed with SigV4 (checked by the simulator's own verifier) or carrying a Bedrock API key;
 * every chat format, JSON and streamed (AWS's binary event stream), with tools and an image;
 * a tool-result turn without tools still sends toolConfig; AWS's errors (a wrong secret,
 * throttling, a mid-stream exception) each with its clear error; Titan and Cohere embeddings;
 * exact µINR per call.
 */

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const PRICE = { input_cost_per_1m: 252, output_cost_per_1m: 1260, context_window: 200000, max_output_tokens: 64000 };
const IMAGE = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WEATHER = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

let sim: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

t.before(async () => {
  sim = await ProviderSimulator.start();
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  const iam = { type: 'bedrock', region: sim.aws.region, base_url: sim.bedrockBaseUrl, timeouts: fast };
  gw = await startTestGateway({
    providers: {
      ...simulatedProviders(sim.url),
      bedrock: { ...iam, access_key_id: sim.aws.accessKeyId, secret_access_key: sim.aws.secretAccessKey },
      'bedrock-key': { ...iam, api_key: sim.apiKey },
      'bedrock-wrong': { ...iam, access_key_id: sim.aws.accessKeyId, secret_access_key: 'not-the-secret' },
    },
    routing: { retries: 1, max_retry_after: '1s' },
    models: [
      { id: `bedrock/${CLAUDE}`, name: 'Claude on Bedrock', ...PRICE },
      { id: 'bedrock/us.amazon.nova-micro-v1:0', name: 'Nova Micro', ...PRICE },
      { id: 'bedrock-key/us.amazon.nova-micro-v1:0', name: 'Nova Micro (API key)', ...PRICE },
      { id: 'bedrock-wrong/us.amazon.nova-micro-v1:0', name: 'wrong secret', ...PRICE },
      { id: 'bedrock/amazon.titan-embed-text-v2:0', name: 'Titan v2', type: 'embedding', input_cost_per_1m: 1.68, context_window: 8192, dimensions: 1024, min_dimensions: 256 },
      { id: 'bedrock/cohere.embed-english-v3', name: 'Cohere Embed', type: 'embedding', input_cost_per_1m: 8.4, context_window: 512, dimensions: 1024, max_inputs: 96 },
    ],
  });
  funded = await fundedKey(gw, { balance: 500 });
});
t.teardown(async () => {
  await gw?.stop();
  await sim?.close();
});

const openai = (): OpenAI => new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const anthropic = (): Anthropic => new Anthropic({ apiKey: funded.key, baseURL: gw.url, maxRetries: 0 });
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

function exactlyBilled(t: Tap, requestId: string | undefined | null): Promise<void> {
  return exactlyBilledAt(t, gw, funded.accountId, requestId, { input: 252_000_000n, output: 1_260_000_000n }, "Bedrock's usage");
}

async function lastRequestId(): Promise<string | undefined> {
  gw.app.settlement.drain();
  return (await gw.app.store.usage.list({ accountId: funded.accountId, limit: 1 }))[0]?.requestId;
}

t.test('chat completions: Converse signed with SigV4, the model id one path segment, tools and an image', async (t) => {
  sim.reset();
  sim.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Pune' } }] });
  const response = await openai()
    .chat.completions.create({
      model: `bedrock/${CLAUDE}`,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture, and the weather in Pune?' }, { type: 'image_url', image_url: { url: IMAGE } }] }],
      tools: [WEATHER],
      max_tokens: 100,
    })
    .withResponse();
  t.equal(response.data.choices[0]?.finish_reason, 'tool_calls');
  const call = response.data.choices[0]?.message.tool_calls?.[0];
  t.same(JSON.parse(call?.type === 'function' ? call.function.arguments : '{}'), { city: 'Pune' });
  t.match(call?.id, /^tooluse_/, "Bedrock's tool-use id");
  const upstream = sim.requests[0];
  t.equal(upstream?.family, 'bedrock');
  t.equal(upstream?.model, CLAUDE, 'the model id, decoded from one path segment');
  t.match(upstream?.bedrock, { action: 'converse', auth: 'sigv4' });
  t.match(upstream?.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIDSIMULATOR00000000\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
  t.match(upstream?.body, { messages: [{ role: 'user', content: [{ text: /picture/ }, { image: { format: 'png', source: { bytes: /^iVBOR/ } } }] }], toolConfig: { tools: [{ toolSpec: { name: 'get_weather' } }] } });
  t.equal(response.response.headers.get('x-gateway-provider'), 'bedrock');
  await exactlyBilled(t, response.response.headers.get('x-request-id'));

  // The tool's result, in a turn that sends no tools: the history's tool blocks need toolConfig all the same.
  sim.reset();
  const next = await openai().chat.completions.create({
    model: `bedrock/${CLAUDE}`,
    messages: [
      { role: 'user', content: 'Weather in Pune?' },
      { role: 'assistant', content: null, tool_calls: [{ id: call?.id ?? 'x', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Pune"}' } }] },
      { role: 'tool', tool_call_id: call?.id ?? 'x', content: '31C and humid' },
    ],
  });
  t.match(next.choices[0]?.message.content, /simulator/);
  t.match(sim.requests[0]?.body, { toolConfig: { tools: [{ toolSpec: { name: 'get_weather' } }] }, messages: [{ role: 'user' }, { role: 'assistant' }, { role: 'user', content: [{ toolResult: { toolUseId: call?.id, content: [{ text: '31C and humid' }] } }] }] });
});

t.test('streams: ConverseStream event frames in all three formats', async (t) => {
  sim.reset();
  sim.enqueue({ text: 'Streaming from Bedrock, frame by frame.' });
  const stream = await openai().chat.completions.create({ model: 'bedrock/us.amazon.nova-micro-v1:0', messages: [{ role: 'user', content: 'stream please' }], stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  t.equal(text, 'Streaming from Bedrock, frame by frame.');
  t.ok(usage && usage.prompt_tokens > 0 && usage.completion_tokens > 0, 'the usage from the metadata event, after messageStop');
  t.match(sim.requests[0]?.bedrock, { action: 'converse-stream' });
  await exactlyBilled(t, await lastRequestId());

  sim.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Goa' } }] });
  const events: string[] = [];
  const messages = anthropic().messages.stream({
    model: `bedrock/${CLAUDE}`,
    max_tokens: 200,
    tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
    messages: [{ role: 'user', content: 'Weather in Goa?' }],
  });
  for await (const event of messages) events.push(event.type);
  const final = await messages.finalMessage();
  t.equal(events.at(-1), 'message_stop');
  t.equal(final.stop_reason, 'tool_use');
  t.match(final.content.find((block) => block.type === 'tool_use'), { name: 'get_weather', input: { city: 'Goa' } });
  await exactlyBilled(t, await lastRequestId());

  const responses = await openai().responses.create({ model: `bedrock/${CLAUDE}`, input: 'stream the responses format', stream: true });
  let completed = false;
  for await (const event of responses) if (event.type === 'response.completed') completed = true;
  t.ok(completed, 'response.completed');
  const json = await anthropic().messages.create({ model: `bedrock/${CLAUDE}`, max_tokens: 64, messages: [{ role: 'user', content: 'JSON, messages format' }] });
  t.match(json.content[0], { type: 'text', text: /simulator/ });
  const plain = await openai().responses.create({ model: 'bedrock/us.amazon.nova-micro-v1:0', input: 'JSON, responses format' });
  t.equal(plain.status, 'completed');
  await noHolds(t, gw, funded);
});

t.test('a Bedrock API key as a bearer token', async (t) => {
  sim.reset();
  const response = await openai().chat.completions.create({ model: 'bedrock-key/us.amazon.nova-micro-v1:0', messages: [{ role: 'user', content: 'with an API key' }] }).withResponse();
  t.match(response.data.choices[0]?.message.content, /simulator/);
  t.match(sim.requests[0]?.bedrock, { auth: 'bearer' });
  t.equal(sim.requests[0]?.headers.authorization, `Bearer ${sim.apiKey}`);
  await exactlyBilled(t, response.response.headers.get('x-request-id'));
});

t.test("AWS's refusals, each with its clear error", async (t) => {
  sim.reset();
  const wrong = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'bedrock-wrong/us.amazon.nova-micro-v1:0', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(wrong.status, 502);
  t.match(wrong.json.error, { code: 502, reason: 'upstream_auth_failed', message: /bedrock-wrong refused the gateway's AWS credentials \(InvalidSignatureException\): an administrator must check the provider's access_key_id and secret_access_key/ });
  t.notMatch(JSON.stringify(wrong.json), /not-the-secret/, 'the secret never in an answer');

  const throttled = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: 'bedrock/us.amazon.nova-micro-v1:0', messages: [{ role: 'user', content: 'SIM: {"error":{"status":429,"retryAfterSeconds":2}}' }] });
  t.equal(throttled.status, 429);
  t.match(throttled.json.error, { code: 429, reason: 'upstream_rate_limited', message: /Too many requests/ });

  const invalid = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: `bedrock/${CLAUDE}`, messages: [{ role: 'user', content: 'SIM: {"error":{"status":400,"message":"The model returned the following errors: input is too long"}}' }] });
  t.equal(invalid.status, 400);
  t.match(invalid.json.error, { code: 400, type: 'invalid_request_error', message: 'The model returned the following errors: input is too long' });

  const midStream = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: `bedrock/${CLAUDE}`, stream: true, messages: [{ role: 'user', content: 'SIM: {"text":"a long answer that breaks","chunkDelayMs":30,"errorAfterEvents":{"events":3,"message":"model stream failed"}}' }] });
  t.equal(midStream.status, 200, 'the stream had begun');
  t.match(midStream.text, /"code":502/, 'it ends with the error event');
  t.match(midStream.text, /model stream failed/, "Bedrock's words");
  gw.app.settlement.drain();
  for (const res of [wrong, throttled, invalid]) t.same(await charges(gw, funded.accountId, header(res, 'x-request-id')), [], `${res.status}: nothing charged`);
  await noHolds(t, gw, funded);
});

t.test('embeddings through InvokeModel: Titan v2 (one text a call) and Cohere Embed (input_type)', async (t) => {
  sim.reset();
  const titan = await openai().embeddings.create({ model: 'bedrock/amazon.titan-embed-text-v2:0', input: ['one fish', 'two fish'], dimensions: 256 }).withResponse();
  t.equal(titan.data.data.length, 2);
  t.equal(titan.data.data[0]?.embedding.length, 256);
  t.equal(sim.requests.length, 2, 'one call per text');
  t.match(sim.requests[0]?.body, { inputText: 'one fish', dimensions: 256, normalize: true });
  t.match(sim.requests[0]?.bedrock, { action: 'invoke' });
  gw.app.settlement.drain();
  const titanRow = await usageRow(gw, titan.response.headers.get('x-request-id') ?? undefined);
  t.ok((titanRow?.inputTokens ?? 0) > 0, "Titan's inputTextTokenCount");
  t.equal(titanRow?.costMicros, ceilMillion(BigInt(titanRow?.inputTokens ?? 0) * 1_680_000n));

  sim.reset();
  const cohere = await openai().embeddings.create({ model: 'bedrock/cohere.embed-english-v3', input: ['red', 'green', 'blue'] }).withResponse();
  t.equal(cohere.data.data.length, 3);
  t.equal(sim.requests.length, 1, 'one call for up to 96 texts');
  t.match(sim.requests[0]?.body, { texts: ['red', 'green', 'blue'], input_type: 'search_document' });
  gw.app.settlement.drain();
  const cohereRow = await usageRow(gw, cohere.response.headers.get('x-request-id') ?? undefined);
  t.ok((cohereRow?.inputTokens ?? 0) > 0, 'counted by the gateway');
  t.equal(cohereRow?.costMicros, ceilMillion(BigInt(cohereRow?.inputTokens ?? 0) * 8_400_000n));

  const refused = await postJson(`${gw.url}/v1/embeddings`, { authorization: `Bearer ${funded.key}` }, { model: 'bedrock/amazon.titan-embed-text-v2:0', input: 'x', dimensions: 300 });
  t.equal(refused.status, 400);
  t.match(refused.json.error, { param: 'dimensions', message: /256, 512 or 1024/ });
});

t.test("Claude's thinking on Bedrock: asked through additionalModelRequestFields, answered and replayed with its signature", async (t) => {
  sim.reset();
  const first = await anthropic().messages.create({
    model: `bedrock/${CLAUDE}`,
    max_tokens: 4000,
    thinking: { type: 'enabled', budget_tokens: 2000 },
    messages: [{ role: 'user', content: 'Think first: what is 17 × 23?' }],
  });
  t.match(sim.requests[0]?.body, { additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 2000 } } });
  const thinking = first.content.find((block) => block.type === 'thinking');
  t.ok(thinking && thinking.type === 'thinking' && thinking.signature.length > 0 && thinking.thinking.length > 0, "a thinking block with Bedrock's signature");

  const streamed: string[] = [];
  const stream = anthropic().messages.stream({ model: `bedrock/${CLAUDE}`, max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, messages: [{ role: 'user', content: 'Think, streamed' }] });
  for await (const event of stream) if (event.type === 'content_block_delta') streamed.push(event.delta.type);
  t.ok(streamed.includes('thinking_delta') && streamed.includes('signature_delta'), 'thinking and its signature streamed');

  sim.reset();
  const next = await anthropic().messages.create({
    model: `bedrock/${CLAUDE}`,
    max_tokens: 4000,
    thinking: { type: 'enabled', budget_tokens: 2000 },
    messages: [
      { role: 'user', content: 'Think first: what is 17 × 23?' },
      { role: 'assistant', content: first.content.filter((block) => block.type === 'thinking' || block.type === 'text') },
      { role: 'user', content: 'And doubled?' },
    ],
  });
  t.equal(next.type, 'message', 'the simulator took the replayed signature');
  const replayed = (sim.requests[0]?.body as { messages: Array<{ content: Array<Record<string, unknown>> }> }).messages[1]?.content[0];
  t.match(replayed, { reasoningContent: { reasoningText: { signature: thinking?.type === 'thinking' ? thinking.signature : 'x' } } }, 'the thinking went back as reasoningContent');
});

t.test('exceptions inside a ConverseStream are what AWS would have answered', async (t) => {
  sim.reset();
  const validation = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: `bedrock/${CLAUDE}`, stream: true, messages: [{ role: 'user', content: 'SIM: {"errorAfterEvents":{"events":1,"message":"validationException: Input is too long for requested model."}}' }] });
  t.equal(validation.status, 400, "before any content: the client's 400, not a 502");
  t.match(validation.json.error, { code: 400, type: 'invalid_request_error', message: 'Input is too long for requested model.' });
  t.equal(sim.requests.length, 1, 'not retried');
  sim.reset();
  const throttled = await postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model: `bedrock/${CLAUDE}`, stream: true, messages: [{ role: 'user', content: 'SIM: {"errorAfterEvents":{"events":1,"message":"throttlingException: Too many tokens, please wait before trying again."}}' }] });
  t.equal(throttled.status, 429);
  t.match(throttled.json.error, { reason: 'upstream_rate_limited', message: /Too many tokens/ });
});
