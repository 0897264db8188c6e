import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import pino from 'pino';
import { request } from 'undici';
import t from 'tap';
import { header, postJson, until, usageRow } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type TestGateway } from '../support/gateway.js';
import { SPAN_KIND_CLIENT, SPAN_KIND_SERVER, STATUS_ERROR, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { ProviderSimulator, type RecordedRequest } from '../support/simulator/server.js';

/**
 * OpenTelemetry traces (issue 31), end to end: the gateway exports to a real OTLP/HTTP receiver
 * (test/support/otlp-receiver.ts decodes both encodings), in binary protobuf and in JSON. Each
 * request is a SERVER span with a CLIENT span per upstream attempt under it, carrying the
 * GenAI attributes, the usage row's tokens and cost; a client's `traceparent` is continued and
 * the attempt's context goes upstream; a failed attempt is an error span; prompts stay off
 * spans unless capture_content; a dead collector slows no call; traces are off by default.
 */

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];
type Protocol = 'http/protobuf' | 'http/json';

const MODEL = 'openai/gpt-4o-mini';
const UPSTREAM_MODEL = 'gpt-4o-mini';
const ROUTE = '/v1/chat/completions';

let sim: ProviderSimulator;
t.before(async () => {
  sim = await ProviderSimulator.start();
});
t.teardown(async () => {
  await sim?.close();
});

async function receiver(t: Tap): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  t.teardown(() => r.close());
  return r;
}

async function tracedGateway(t: Tap, endpoint: string, protocol: Protocol, extra: Record<string, unknown> = {}, options: Parameters<typeof startTestGateway>[2] = {}): Promise<TestGateway> {
  const gw = await startTestGateway(
    {
      providers: simulatedProviders(sim.url),
      telemetry: { enabled: true, endpoint, protocol, service_name: `traces-test-${protocol.replace('/', '-')}`, sample_ratio: 1, capture_content: false, ...extra },
    },
    {},
    options,
  );
  t.teardown(() => gw.stop());
  return gw;
}

/** A fresh 16-byte trace id and 8-byte span id, as a client's W3C traceparent. */
function clientTraceparent(): { traceId: string; spanId: string; header: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

/** The request's SERVER span and its CLIENT spans (by gateway.request_id), once `clients` of them have arrived. */
async function spansOf(gw: TestGateway, r: OtlpReceiver, requestId: string, clients = 1): Promise<{ server: ReceivedSpan; clients: ReceivedSpan[] }> {
  const find = () => {
    const mine = r.spans.filter((s) => s.attributes['gateway.request_id'] === requestId);
    return { server: mine.filter((s) => s.kind === SPAN_KIND_SERVER), clients: mine.filter((s) => s.kind === SPAN_KIND_CLIENT) };
  };
  await until(`the spans of ${requestId}`, async () => {
    await gw.app.telemetry.tracer?.flush();
    const found = find();
    return found.server.length >= 1 && found.clients.length >= clients;
  });
  // Anything still queued for this request is exported too (a duplicate or an extra span would show).
  await gw.app.telemetry.tracer?.flush();
  const found = find();
  if (found.server.length !== 1) throw new Error(`${found.server.length} SERVER spans for ${requestId}`);
  found.clients.sort((a, b) => Number(a.attributes['gateway.attempt']) - Number(b.attributes['gateway.attempt']));
  return { server: found.server[0]!, clients: found.clients };
}

function upstreamTraceparent(request: RecordedRequest | undefined): string | undefined {
  const value = request?.headers.traceparent;
  return Array.isArray(value) ? value[0] : value;
}

/** Every attribute value of every span (resource attributes included), as text, to search for a prompt. */
function allAttributeText(spans: ReceivedSpan[]): string {
  return spans.map((s) => JSON.stringify([s.name, s.attributes, s.resource, s.status])).join('\n');
}

function checkServerSpan(t: Tap, server: ReceivedSpan, requestId: string, serviceName: string): void {
  t.equal(server.name, `POST ${ROUTE}`, 'SERVER span named <METHOD> <route>');
  t.match(
    server.attributes,
    {
      'http.request.method': 'POST',
      'http.route': ROUTE,
      'url.path': ROUTE,
      'client.address': '127.0.0.1',
      'gateway.request_id': requestId,
      'http.response.status_code': 200,
      'gateway.model': MODEL,
      'gateway.provider': 'openai',
    },
    'SERVER span attributes',
  );
  t.not(server.status.code, STATUS_ERROR, 'SERVER span not an error');
  t.equal(server.resource['service.name'], serviceName, 'resource service.name is the configured one');
}

async function checkClientSpan(t: Tap, gw: TestGateway, client: ReceivedSpan, server: ReceivedSpan, requestId: string, upstream: RecordedRequest | undefined, expect: { maxTokens: number; temperature?: number; clientId?: string }): Promise<void> {
  t.equal(client.traceId, server.traceId, 'CLIENT span in the SERVER span\'s trace');
  t.equal(client.parentSpanId, server.spanId, 'CLIENT span\'s parent is the SERVER span');
  t.equal(client.name, `chat ${UPSTREAM_MODEL}`, 'CLIENT span named chat <upstream model>');
  const row = await usageRow(gw, requestId);
  t.ok(row, 'a usage row for the request');
  t.ok(row && row.inputTokens > 0 && row.outputTokens > 0 && row.costMicros > 0, 'the row has tokens and a cost');
  t.equal(upstream?.model, UPSTREAM_MODEL, 'the upstream got the deployment\'s model');
  t.match(
    client.attributes,
    {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': upstream?.model ?? UPSTREAM_MODEL,
      'gen_ai.response.model': UPSTREAM_MODEL,
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': row?.inputTokens,
      'gen_ai.usage.output_tokens': row?.outputTokens,
      'gen_ai.request.max_tokens': expect.maxTokens,
      'server.address': '127.0.0.1',
      'gateway.model': MODEL,
      'gateway.provider': 'openai',
      'gateway.deployment': row?.deployment ?? 'openai:gpt-4o-mini',
      'gateway.attempt': 1,
      'gateway.request_id': requestId,
      'gateway.cost_micro_inr': row?.costMicros,
    },
    'CLIENT span attributes',
  );
  // t.match is loose on numbers given as undefined: the exact values, each on its own.
  t.equal(client.attributes['gen_ai.usage.input_tokens'], row?.inputTokens, 'input tokens = the usage row\'s');
  t.equal(client.attributes['gen_ai.usage.output_tokens'], row?.outputTokens, 'output tokens = the usage row\'s');
  t.equal(client.attributes['gateway.cost_micro_inr'], row?.costMicros, 'cost = the usage row\'s');
  t.equal(client.attributes['gateway.deployment'], 'openai:gpt-4o-mini');
  if (expect.temperature !== undefined) t.equal(client.attributes['gen_ai.request.temperature'], expect.temperature, 'temperature');
  else t.notOk('gen_ai.request.temperature' in client.attributes, 'no temperature when the request had none');
  if (expect.clientId !== undefined) {
    // The upstream's own completion id (the simulator's: chatcmpl- and 29 random characters), not the id the gateway gives its client.
    t.match(client.attributes['gen_ai.response.id'], /^chatcmpl-[A-Za-z0-9]{29}$/, 'gen_ai.response.id is the upstream answer\'s id');
    t.not(client.attributes['gen_ai.response.id'], expect.clientId, 'not the gateway\'s own response id');
  }
  t.notOk('error.type' in client.attributes, 'no error.type on a served attempt');
  t.not(client.status.code, STATUS_ERROR, 'CLIENT span not an error');
  t.equal(upstreamTraceparent(upstream), `00-${client.traceId}-${client.spanId}-01`, 'the upstream got the CLIENT span\'s context as traceparent');
}

for (const protocol of ['http/protobuf', 'http/json'] as const) {
  t.test(`${protocol}: a JSON and a streamed chat call, each a SERVER span with its CLIENT span`, async (t) => {
    const r = await receiver(t);
    const gw = await tracedGateway(t, r.url, protocol);
    const serviceName = `traces-test-${protocol.replace('/', '-')}`;
    t.ok(gw.app.telemetry.tracer, 'traces on');
    const { key } = await fundedKey(gw, { balance: 50 });
    sim.reset();
    sim.setDefault({ text: 'hello from the traced simulator' });
    const prompt = `PROMPT-${randomBytes(8).toString('hex')}-do-not-trace`;
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });

    // JSON, through the official SDK.
    const json = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: 40, temperature: 0.25 }).withResponse();
    const jsonId = json.response.headers.get('x-request-id') ?? '';
    t.ok(jsonId, 'x-request-id');
    t.equal(json.data.choices[0]?.message.content, 'hello from the traced simulator');
    const jsonUpstream = sim.requests.at(-1);
    t.equal(jsonUpstream?.stream, false);

    // Streamed, through the SDK too.
    const streamed = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `${prompt} again` }], max_tokens: 30, stream: true, stream_options: { include_usage: true } }).withResponse();
    const streamId = streamed.response.headers.get('x-request-id') ?? '';
    let text = '';
    let streamClientId = '';
    for await (const chunk of streamed.data) {
      streamClientId ||= chunk.id;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    t.equal(text, 'hello from the traced simulator', 'the stream read whole');
    const streamUpstream = sim.requests.at(-1);
    t.equal(streamUpstream?.stream, true);
    t.equal(sim.requests.length, 2, 'one upstream request per call');

    const a = await spansOf(gw, r, jsonId);
    t.equal(a.clients.length, 1, 'JSON call: one CLIENT span');
    t.equal(a.server.parentSpanId, '', 'JSON call: SERVER span is a root (no client traceparent)');
    checkServerSpan(t, a.server, jsonId, serviceName);
    await checkClientSpan(t, gw, a.clients[0]!, a.server, jsonId, jsonUpstream, { maxTokens: 40, temperature: 0.25, clientId: json.data.id });

    const b = await spansOf(gw, r, streamId);
    t.equal(b.clients.length, 1, 'streamed call: one CLIENT span');
    checkServerSpan(t, b.server, streamId, serviceName);
    await checkClientSpan(t, gw, b.clients[0]!, b.server, streamId, streamUpstream, { maxTokens: 30, clientId: streamClientId });
    t.not(b.server.traceId, a.server.traceId, 'each request its own trace');

    t.ok(r.spans.length > 0 && r.spans.every((s) => s.protocol === protocol), `every span arrived as ${protocol}`);
    t.ok(r.exports.every((type) => type.startsWith(protocol === 'http/json' ? 'application/json' : 'application/x-protobuf')), `content types: ${[...new Set(r.exports)].join(', ')}`);
    // 4. No prompt text on any span by default.
    t.notMatch(allAttributeText(r.spans), prompt, 'the prompt is on no span');
    t.notOk(r.spans.some((s) => 'gen_ai.input.messages' in s.attributes || 'gen_ai.output.messages' in s.attributes), 'no content attributes');
    t.notMatch(allAttributeText(r.spans), 'hello from the traced simulator', 'nor the answer');
  });
}

t.test("a client's traceparent is continued, and the attempt's context goes upstream", async (t) => {
  const r = await receiver(t);
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const gw = await tracedGateway(t, r.url, 'http/protobuf', {}, { logger });
  const { key } = await fundedKey(gw, { balance: 50 });
  sim.reset();
  sim.setDefault({ text: 'continued' });
  const parent = clientTraceparent();
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: { traceparent: parent.header } });
  const res = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }).withResponse();
  const requestId = res.response.headers.get('x-request-id') ?? '';
  t.equal(res.data.choices[0]?.message.content, 'continued');
  const { server, clients } = await spansOf(gw, r, requestId);
  t.equal(server.traceId, parent.traceId, "the SERVER span is in the client's trace");
  t.equal(server.parentSpanId, parent.spanId, "the SERVER span's parent is the client's span");
  t.equal(clients.length, 1);
  t.equal(clients[0]?.traceId, parent.traceId, "the CLIENT span too is in the client's trace");
  t.equal(clients[0]?.parentSpanId, server.spanId);
  t.equal(sim.requests.length, 1);
  const sent = upstreamTraceparent(sim.requests[0]);
  const [version, traceId, parentId, flags] = (sent ?? '').split('-');
  t.equal(version, '00');
  t.equal(traceId, parent.traceId, "the upstream's traceparent carries the client's trace id");
  t.equal(parentId, clients[0]?.spanId, "and the CLIENT span's id as its parent");
  t.equal(flags, '01', 'sampled');
  t.not(parentId, parent.spanId, "not the client's own span id passed through");
  await until('the access log line', () => lines.some((l) => l.msg === 'request' && l.req_id === requestId));
  t.equal(lines.find((l) => l.msg === 'request' && l.req_id === requestId)?.trace_id, parent.traceId, 'the access log line has the trace id');
});

t.test('count_tokens counted by Anthropic: a CLIENT span for the count; a count Anthropic cannot make, an error span', async (t) => {
  const r = await receiver(t);
  const gw = await tracedGateway(t, r.url, 'http/protobuf');
  const { key } = await fundedKey(gw, { balance: 5 });
  sim.reset();
  const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
  const counted = await postJson(`${gw.url}/v1/messages/count_tokens`, headers, { model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'How many tokens is this?' }] });
  t.equal(counted.status, 200);
  t.equal(header(counted, 'x-gateway-token-count'), 'upstream');
  const { server, clients } = await spansOf(gw, r, header(counted, 'x-request-id') ?? '');
  t.equal(server.name, 'POST /v1/messages/count_tokens');
  t.equal(clients.length, 1);
  const count = clients[0];
  t.equal(count?.name, 'count_tokens claude-sonnet-4-5');
  t.equal(count?.parentSpanId, server.spanId);
  t.match(count?.attributes, { 'gen_ai.operation.name': 'count_tokens', 'gen_ai.provider.name': 'anthropic', 'gen_ai.request.model': 'claude-sonnet-4-5', 'gateway.deployment': 'anthropic:claude-sonnet-4-5' });
  t.equal(count?.attributes['gen_ai.usage.input_tokens'], counted.json.input_tokens, 'the count on the span');
  t.not(count?.status.code, STATUS_ERROR);
  t.equal(upstreamTraceparent(sim.requests[0]), `00-${count?.traceId}-${count?.spanId}-01`, 'the count request carries its span upstream');

  const overloaded = await postJson(`${gw.url}/v1/messages/count_tokens`, headers, { model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'SIM: {"error": {"status": 529}}' }] });
  t.equal(header(overloaded, 'x-gateway-token-count'), 'estimate');
  const failed = await spansOf(gw, r, header(overloaded, 'x-request-id') ?? '');
  t.equal(failed.clients[0]?.status.code, STATUS_ERROR, 'the failed count is an error span');
  t.ok(failed.clients[0]?.attributes['error.type'], 'with its error.type');
  t.equal(failed.clients[0]?.attributes['http.response.status_code'], 529);
  t.notOk('gen_ai.usage.input_tokens' in (failed.clients[0]?.attributes ?? {}), 'no count from a count that failed');
});

t.test('an upstream 500 then an answer: two CLIENT spans, the first an error', async (t) => {
  const r = await receiver(t);
  const gw = await tracedGateway(t, r.url, 'http/json');
  const { key } = await fundedKey(gw, { balance: 50 });
  sim.reset();
  sim.setDefault({ text: 'second time lucky' });
  sim.enqueue({ error: { status: 500, message: 'upstream broke' } });
  const res = await postJson(`${gw.url}${ROUTE}`, { authorization: `Bearer ${key}` }, { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
  t.equal(res.status, 200, 'retried, then answered');
  t.equal(header(res, 'x-gateway-attempts'), '2', 'two attempts (routing.retries defaults to 2)');
  const requestId = header(res, 'x-request-id') ?? '';
  const { server, clients } = await spansOf(gw, r, requestId, 2);
  t.equal(clients.length, 2, 'a CLIENT span per attempt');
  const [first, second] = clients;
  t.same(clients.map((c) => c.attributes['gateway.attempt']), [1, 2], 'gateway.attempt 1 and 2');
  for (const c of clients) {
    t.equal(c.parentSpanId, server.spanId, 'each attempt under the SERVER span');
    t.equal(c.traceId, server.traceId);
    t.equal(c.attributes['gateway.deployment'], 'openai:gpt-4o-mini');
  }
  t.ok(typeof first?.attributes['error.type'] === 'string' && first.attributes['error.type'] !== '', `the failed attempt has error.type (${String(first?.attributes['error.type'])})`);
  t.equal(first?.status.code, STATUS_ERROR, 'the failed attempt: status ERROR');
  t.equal(first?.attributes['http.response.status_code'], 500, "the failed attempt: the upstream's status");
  t.notOk('gen_ai.usage.input_tokens' in (first?.attributes ?? {}), 'no usage on the failed attempt');
  t.notOk('error.type' in (second?.attributes ?? {}), 'the answering attempt: no error.type');
  t.not(second?.status.code, STATUS_ERROR, 'the answering attempt: not an error');
  const row = await usageRow(gw, requestId);
  t.equal(second?.attributes['gen_ai.usage.output_tokens'], row?.outputTokens, 'usage on the answering attempt');
  t.equal(second?.attributes['gateway.cost_micro_inr'], row?.costMicros);
  t.equal(server.attributes['http.response.status_code'], 200);
  t.not(server.status.code, STATUS_ERROR, 'the request succeeded');
  t.equal(sim.requests.length, 2);
  t.same(
    sim.requests.map((q) => upstreamTraceparent(q)),
    clients.map((c) => `00-${c.traceId}-${c.spanId}-01`),
    "each attempt sent upstream with its own span's context",
  );
});

t.test('a client that leaves mid-stream: the CLIENT span still carries what was delivered, with error.type', async (t) => {
  const r = await receiver(t);
  const gw = await tracedGateway(t, r.url, 'http/protobuf');
  const { key } = await fundedKey(gw, { balance: 50 });
  sim.reset();
  sim.setDefault({ text: 'a reply long enough to be left in the middle of it, word after word', chunkSize: 4, chunkDelayMs: 40 });
  const res = await request(`${gw.url}${ROUTE}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50, stream: true }),
  });
  t.equal(res.statusCode, 200);
  const requestId = String(res.headers['x-request-id'] ?? '');
  for await (const chunk of res.body) {
    if (String(chunk).includes('content')) break; // the first content: then the client goes
  }
  res.body.destroy();
  await until('the left call settles', async () => {
    gw.app.settlement.drain();
    return (await usageRow(gw, requestId)) !== undefined;
  });
  const row = await usageRow(gw, requestId);
  const { server, clients } = await spansOf(gw, r, requestId);
  const client = clients[0];
  t.ok((row?.outputTokens ?? 0) > 0, `billed for what was delivered (${row?.outputTokens} output tokens)`);
  t.equal(client?.attributes['gen_ai.usage.output_tokens'], row?.outputTokens, "the span's output tokens are the usage row's (set after the client left)");
  t.equal(client?.attributes['gateway.cost_micro_inr'], row?.costMicros, "and its cost");
  t.ok(typeof client?.attributes['error.type'] === 'string', `the attempt span has error.type (${String(client?.attributes['error.type'])})`);
  t.equal(client?.status.code, STATUS_ERROR);
  t.equal(server.attributes['error.type'], 'client_disconnected', 'the SERVER span: client_disconnected');
});

t.test('capture_content: true puts the prompt on the attempt span (what the default leaves off)', async (t) => {
  const r = await receiver(t);
  const gw = await tracedGateway(t, r.url, 'http/protobuf', { capture_content: true });
  const { key } = await fundedKey(gw, { balance: 50 });
  sim.reset();
  sim.setDefault({ text: 'captured answer' });
  const prompt = `PROMPT-${randomBytes(8).toString('hex')}`;
  const res = await postJson(`${gw.url}${ROUTE}`, { authorization: `Bearer ${key}` }, { model: MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: 5 });
  t.equal(res.status, 200);
  const { clients } = await spansOf(gw, r, header(res, 'x-request-id') ?? '');
  t.match(String(clients[0]?.attributes['gen_ai.input.messages']), prompt, 'the prompt, with capture_content');
  t.match(String(clients[0]?.attributes['gen_ai.output.messages']), 'captured answer', 'and the answer');
  t.match(allAttributeText(r.spans), prompt, 'the search used for the default finds it here');
});

t.test('a dead collector slows no call', async (t) => {
  // A port that was bound and closed: nothing listens there.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const gw = await tracedGateway(t, `http://127.0.0.1:${port}/v1/traces`, 'http/protobuf');
  t.ok(gw.app.telemetry.tracer, 'traces on, to nowhere');
  const { key } = await fundedKey(gw, { balance: 50 });
  sim.reset();
  sim.setDefault({ text: 'still answering' });
  const results: Array<{ status: number; ms: number }> = [];
  for (let i = 0; i < 20; i++) {
    const began = Date.now();
    const res = await postJson(`${gw.url}${ROUTE}`, { authorization: `Bearer ${key}` }, { model: MODEL, messages: [{ role: 'user', content: `call ${i}` }], max_tokens: 5, ...(i % 2 === 1 ? { stream: true } : {}) });
    results.push({ status: res.status, ms: Date.now() - began });
  }
  t.same(results.map((x) => x.status), Array(20).fill(200), 'all 20 calls answered 200');
  t.ok(results.every((x) => x.ms < 5000), `each under 5 s (slowest ${Math.max(...results.map((x) => x.ms))} ms)`);
  t.equal(sim.requests.length, 20);
});

t.test('traces are off by default; on from the OTLP environment unless the SDK is disabled', async (t) => {
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(() => gw.stop());
  t.equal(gw.app.telemetry.tracer, undefined, 'no telemetry section: no tracer');
  const { key } = await fundedKey(gw, { balance: 50 });
  sim.reset();
  sim.setDefault({ text: 'untraced' });
  const res = await postJson(`${gw.url}${ROUTE}`, { authorization: `Bearer ${key}` }, { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
  t.equal(res.status, 200, 'calls work');
  t.equal(res.json?.choices?.[0]?.message?.content, 'untraced');
  t.ok(header(res, 'x-request-id'), 'x-request-id still set');
  t.equal(upstreamTraceparent(sim.requests[0]), undefined, 'no traceparent sent upstream');

  const fromEnv = await startTestGateway({ providers: simulatedProviders(sim.url) }, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:1/v1/traces' });
  t.teardown(() => fromEnv.stop());
  t.ok(fromEnv.app.telemetry.tracer, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turns traces on');
  const disabled = await startTestGateway({ providers: simulatedProviders(sim.url) }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' });
  t.teardown(() => disabled.stop());
  t.equal(disabled.app.telemetry.tracer, undefined, 'OTEL_SDK_DISABLED=true keeps them off');
});
