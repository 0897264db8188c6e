import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import t from 'tap';
import { request } from 'undici';
import { cosine } from '../support/simulator/embed.js';
import { decodeMessages, encodeMessage } from '../support/simulator/eventstream.js';
import { ProviderSimulator, type Scenario } from '../support/simulator/server.js';

/**
 * The simulator's AWS Bedrock Runtime (Converse, ConverseStream, InvokeModel for embeddings),
 * driven with raw HTTP requests signed by AWS's own SigV4 signer (@smithy/signature-v4) and
 * streams decoded with AWS's event-stream codec: the proof that the hand-written verifier and
 * encoder in the simulator speak the real protocol.
 */

const KEY = 'sim-key';
const AKID = 'AKIDSIMULATOR00000000';
const SECRET = 'sim-aws-secret-access-key';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NOVA = 'amazon.nova-lite-v1:0';

const sim = await ProviderSimulator.start({ apiKey: KEY });
t.teardown(() => sim.close());
const tokenSim = await ProviderSimulator.start({ apiKey: KEY, aws: { accessKeyId: 'ASIATEMPORARY0000000', secretAccessKey: 'temp-secret', sessionToken: 'session-token-1', region: 'eu-west-1' } });
t.teardown(() => tokenSim.close());

const codec = new EventStreamCodec(toUtf8, fromUtf8);

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
  text: string;
  json: () => Json;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface SignOptions {
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  region?: string;
  service?: string;
  signingDate?: Date;
  target?: ProviderSimulator;
}

/** POSTs `body` to `path` (under the simulator's URL, sent exactly as given) signed with SigV4. */
async function signed(path: string, body: unknown, options: SignOptions = {}): Promise<Raw> {
  const target = options.target ?? sim;
  const url = new URL(target.url);
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const signer = new SignatureV4({
    service: options.service ?? 'bedrock',
    region: options.region ?? target.aws.region,
    sha256: Sha256,
    credentials: {
      accessKeyId: options.accessKeyId ?? target.aws.accessKeyId,
      secretAccessKey: options.secretAccessKey ?? target.aws.secretAccessKey,
      ...(options.sessionToken !== undefined ? { sessionToken: options.sessionToken } : {}),
    },
  });
  const request_ = await signer.sign(
    {
      method: 'POST',
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path,
      query: {},
      headers: { host: url.host, 'content-type': 'application/json', accept: 'application/json' },
      body: text,
    },
    options.signingDate ? { signingDate: options.signingDate } : {},
  );
  return send(`${target.url}${path}`, text, request_.headers);
}

async function send(url: string, body: string, headers: Record<string, string>): Promise<Raw> {
  const res = await request(url, { method: 'POST', headers, body });
  const bytes = Buffer.from(await res.body.arrayBuffer());
  const text = bytes.toString('utf8');
  return { status: res.statusCode, headers: res.headers, bytes, text, json: () => JSON.parse(text) as Json };
}

function bearer(path: string, body: unknown, key = KEY): Promise<Raw> {
  return send(`${sim.url}${path}`, JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${key}` });
}

const converse = (model: string, action = 'converse'): string => `/bedrock/model/${encodeURIComponent(model)}/${action}`;
const user = (text: string): Json => ({ role: 'user', content: [{ text }] });
const directive = (scenario: Scenario): string => `SIM: ${JSON.stringify(scenario)}`;

interface Frame {
  headers: Record<string, string>;
  payload: Json;
  raw: string;
}

/** Splits an event stream into messages by their prelude and decodes each with smithy's codec (CRCs checked). */
function frames(bytes: Buffer): Frame[] {
  const out: Frame[] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt32BE(at);
    const message = codec.decode(bytes.subarray(at, at + length));
    const headers: Record<string, string> = {};
    for (const [name, header] of Object.entries(message.headers)) headers[name] = String(header.value);
    const raw = toUtf8(message.body);
    let payload: Json;
    try {
      payload = JSON.parse(raw);
    } catch {
      payload = undefined;
    }
    out.push({ headers, payload, raw });
    at += length;
  }
  return out;
}

function errorType(res: Raw): string {
  return String(res.headers['x-amzn-errortype'] ?? '').split(':')[0] ?? '';
}

t.beforeEach(() => {
  sim.reset();
  tokenSim.reset();
});

t.test('event-stream encoder: smithy decodes it, and its own decoder reads smithy-encoded frames', async (t) => {
  const mine = encodeMessage({ ':event-type': 'messageStart', ':message-type': 'event' }, '{"role":"assistant"}');
  const decoded = codec.decode(mine);
  t.equal(decoded.headers[':event-type']?.value, 'messageStart');
  t.equal(toUtf8(decoded.body), '{"role":"assistant"}');
  const theirs = codec.encode({ headers: { ':event-type': { type: 'string', value: 'metadata' } }, body: fromUtf8('{}') });
  t.same(decodeMessages(Buffer.from(theirs)).map((m) => ({ headers: m.headers, payload: m.payload.toString() })), [{ headers: { ':event-type': 'metadata' }, payload: '{}' }]);
});

t.test('Converse: a SigV4-signed call, its answer and its record', async (t) => {
  const res = await signed(converse(NOVA), { messages: [user('Hello there')], system: [{ text: 'Be brief.' }], inferenceConfig: { maxTokens: 100, temperature: 0.5 } });
  t.equal(res.status, 200, res.text);
  t.match(res.headers['content-type'], /^application\/json/);
  t.match(res.headers['x-amzn-requestid'], /^[0-9a-f-]{36}$/);
  const body = res.json();
  t.same(body.output, { message: { role: 'assistant', content: [{ text: `Hello from the bedrock simulator (model ${NOVA}).` }] } });
  t.equal(body.stopReason, 'end_turn');
  t.ok(body.usage.inputTokens > 0 && body.usage.outputTokens > 0);
  t.equal(body.usage.totalTokens, body.usage.inputTokens + body.usage.outputTokens);
  t.notOk('cacheReadInputTokens' in body.usage);
  t.type(body.metrics.latencyMs, 'number');
  const [recorded] = sim.requests;
  t.equal(recorded?.family, 'bedrock');
  t.equal(recorded?.model, NOVA);
  t.equal(recorded?.stream, false);
  t.same(recorded?.bedrock, { action: 'converse', auth: 'sigv4' });
  t.same(recorded?.usage, body.usage);
});

t.test('model ids: ":" as %3A or raw, an ARN with its "/" as %2F', async (t) => {
  const encoded = await signed(`/bedrock/model/${CLAUDE.replace(':', '%3A')}/converse`, { messages: [user('hi')] });
  t.equal(encoded.status, 200, encoded.text);
  const rawColon = await signed(`/bedrock/model/${CLAUDE}/converse`, { messages: [user('hi')] });
  t.equal(rawColon.status, 200, rawColon.text);
  const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0';
  const viaArn = await signed(converse(arn), { messages: [user('hi')] });
  t.equal(viaArn.status, 200, viaArn.text);
  t.same(
    sim.requests.map((r) => r.model),
    [CLAUDE, CLAUDE, arn],
  );
  const slash = await signed(`/bedrock/model/arn:aws:bedrock:us-east-1:1:inference-profile/x/converse`, { messages: [user('hi')] });
  t.equal(slash.status, 404, 'a raw "/" in the id is another path');
  t.equal(errorType(slash), 'UnknownOperationException');
  const missing = await signed(converse('missing-model'), { messages: [user('hi')] });
  t.equal(missing.status, 400);
  t.equal(errorType(missing), 'ValidationException');
  t.same(missing.json(), { message: 'The provided model identifier is invalid.' });
});

t.test('SigV4 refusals: wrong secret, unknown key, expired, wrong region or service, no auth', async (t) => {
  const body = { messages: [user('hi')] };
  const wrong = await signed(converse(NOVA), body, { secretAccessKey: 'not-the-secret' });
  t.equal(wrong.status, 403);
  t.match(wrong.headers['x-amzn-errortype'], /^InvalidSignatureException:http:\/\/internal\.amazon\.com\/coral\//);
  t.match(wrong.headers['x-amzn-requestid'], /.+/);
  t.match(wrong.headers['content-type'], /application\/json/);
  t.same(wrong.json(), {
    message:
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
  });
  const unknown = await signed(converse(NOVA), body, { accessKeyId: 'AKIDSOMEONEELSE00000' });
  t.equal(unknown.status, 403);
  t.equal(errorType(unknown), 'UnrecognizedClientException');
  t.same(unknown.json(), { message: 'The security token included in the request is invalid.' });
  const expired = await signed(converse(NOVA), body, { signingDate: new Date(Date.now() - 10 * 60 * 1000) });
  t.equal(expired.status, 403);
  t.equal(errorType(expired), 'InvalidSignatureException');
  t.match(expired.json().message, /^Signature expired: \d{8}T\d{6}Z is now earlier than \d{8}T\d{6}Z \(\d{8}T\d{6}Z - 5 min\.\)$/);
  const region = await signed(converse(NOVA), body, { region: 'us-west-2' });
  t.equal(region.status, 403);
  t.match(region.json().message, /scoped to a valid region/);
  const service = await signed(converse(NOVA), body, { service: 'bedrock-runtime' });
  t.equal(service.status, 403);
  t.match(service.json().message, /correct service: 'bedrock'/);
  const none = await send(`${sim.url}${converse(NOVA)}`, JSON.stringify(body), { 'content-type': 'application/json' });
  t.equal(none.status, 403);
  t.equal(errorType(none), 'MissingAuthenticationTokenException');
  // A body changed after signing.
  const url = new URL(sim.url);
  const signer = new SignatureV4({ service: 'bedrock', region: 'us-east-1', sha256: Sha256, credentials: { accessKeyId: AKID, secretAccessKey: SECRET } });
  const req = await signer.sign({ method: 'POST', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: converse(NOVA), query: {}, headers: { host: url.host, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const tampered = await send(`${sim.url}${converse(NOVA)}`, JSON.stringify({ messages: [user('hello')] }), req.headers);
  t.equal(tampered.status, 403);
  t.equal(errorType(tampered), 'InvalidSignatureException');
  t.equal(sim.requests.length, 0, 'refused requests are not recorded');
});

t.test('session token: required when the simulator has one, region from the options', async (t) => {
  const body = { messages: [user('hi')] };
  const good = await signed(converse(NOVA), body, { target: tokenSim, sessionToken: 'session-token-1' });
  t.equal(good.status, 200, good.text);
  const without = await signed(converse(NOVA), body, { target: tokenSim });
  t.equal(without.status, 403);
  t.equal(errorType(without), 'UnrecognizedClientException');
  const other = await signed(converse(NOVA), body, { target: tokenSim, sessionToken: 'session-token-2' });
  t.equal(other.status, 403);
  t.equal(errorType(other), 'UnrecognizedClientException');
  t.equal(tokenSim.aws.region, 'eu-west-1');
});

t.test('Bedrock API key: Bearer accepted, a wrong one refused', async (t) => {
  const ok = await bearer(converse(NOVA), { messages: [user('hi')] });
  t.equal(ok.status, 200, ok.text);
  t.same(sim.requests[0]?.bedrock, { action: 'converse', auth: 'bearer' });
  const bad = await bearer(converse(NOVA), { messages: [user('hi')] }, 'wrong-key');
  t.equal(bad.status, 403);
  t.equal(errorType(bad), 'AccessDeniedException');
  t.equal(bad.json().Message, 'Authentication failed: Please make sure your API Key is valid.');
});

t.test('ConverseStream: frames decode into the event sequence, usage after the stop', async (t) => {
  const res = await signed(converse(CLAUDE, 'converse-stream'), { messages: [user(`Stream it. ${directive({ text: 'Hello stream world', chunkSize: 5 })}`)] });
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'application/vnd.amazon.eventstream');
  t.ok(res.headers['x-amzn-requestid']);
  const got = frames(res.bytes);
  t.same(
    got.map((f) => f.headers[':event-type']),
    ['messageStart', 'contentBlockDelta', 'contentBlockDelta', 'contentBlockDelta', 'contentBlockDelta', 'contentBlockStop', 'messageStop', 'metadata'],
  );
  for (const f of got) {
    t.equal(f.headers[':message-type'], 'event');
    t.equal(f.headers[':content-type'], 'application/json');
    t.match(f.payload.p, /^[a-zA-Z0-9]+$/, 'padded');
  }
  t.equal(got[0]?.payload.role, 'assistant');
  const deltas = got.filter((f) => f.headers[':event-type'] === 'contentBlockDelta');
  t.equal(deltas.map((f) => f.payload.delta.text).join(''), 'Hello stream world');
  t.ok(deltas.every((f) => f.payload.contentBlockIndex === 0));
  t.equal(got[6]?.payload.stopReason, 'end_turn');
  const metadata = got[7]?.payload;
  t.ok(metadata.usage.inputTokens > 0 && metadata.usage.outputTokens > 0);
  t.type(metadata.metrics.latencyMs, 'number');
  t.equal(sim.requests[0]?.stream, true);
  t.same(sim.requests[0]?.bedrock, { action: 'converse-stream', auth: 'sigv4' });
});

t.test('tool use: JSON content blocks and the streamed contentBlockStart / input pieces', async (t) => {
  const toolConfig = { tools: [{ toolSpec: { name: 'get_weather', description: 'Weather', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } } } }] };
  const scenario: Scenario = { text: 'Checking.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
  const json = await signed(converse(CLAUDE), { messages: [user(directive(scenario))], toolConfig });
  t.equal(json.status, 200, json.text);
  const body = json.json();
  t.equal(body.stopReason, 'tool_use');
  t.equal(body.output.message.content[0].text, 'Checking.');
  const use = body.output.message.content[1].toolUse;
  t.match(use.toolUseId, /^tooluse_[A-Za-z0-9]{22}$/);
  t.same({ name: use.name, input: use.input }, { name: 'get_weather', input: { city: 'Paris' } });

  const stream = await signed(converse(CLAUDE, 'converse-stream'), { messages: [user(directive({ ...scenario, text: '' }))], toolConfig });
  const got = frames(stream.bytes);
  const start = got.find((f) => f.headers[':event-type'] === 'contentBlockStart');
  t.equal(start?.payload.contentBlockIndex, 0, 'no text block: the tool use is block 0');
  t.equal(start?.payload.start.toolUse.name, 'get_weather');
  t.match(start?.payload.start.toolUse.toolUseId, /^tooluse_/);
  const input = got.filter((f) => f.headers[':event-type'] === 'contentBlockDelta').map((f) => f.payload.delta.toolUse.input).join('');
  t.same(JSON.parse(input), { city: 'Paris' });
  t.equal(got.find((f) => f.headers[':event-type'] === 'messageStop')?.payload.stopReason, 'tool_use');
  t.equal(got.at(-1)?.headers[':event-type'], 'metadata');

  // The round trip: the tool result goes back with the toolConfig.
  const round = await signed(converse(CLAUDE), {
    messages: [user('weather?'), { role: 'assistant', content: [{ toolUse: { toolUseId: use.toolUseId, name: 'get_weather', input: { city: 'Paris' } } }] }, { role: 'user', content: [{ toolResult: { toolUseId: use.toolUseId, content: [{ json: { temp: 20 } }], status: 'success' } }] }],
    toolConfig,
  });
  t.equal(round.status, 200, round.text);
});

t.test('scripted errors: 429 ThrottlingException with retry-after, other statuses, codes', async (t) => {
  sim.enqueue({ error: { status: 429, retryAfterSeconds: 3 } }, { error: { status: 500 } }, { error: { status: 503, code: 'ModelNotReadyException' } }, { error: { status: 400, message: 'Nope', code: 'ServiceQuotaExceededException' } });
  const throttled = await signed(converse(NOVA, 'converse-stream'), { messages: [user('hi')] });
  t.equal(throttled.status, 429);
  t.equal(throttled.headers['x-amzn-errortype'], 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/');
  t.equal(throttled.headers['retry-after'], '3');
  t.same(throttled.json(), { message: 'Too many requests, please wait before trying again.' });
  const internal = await signed(converse(NOVA), { messages: [user('hi')] });
  t.equal(internal.status, 500);
  t.equal(errorType(internal), 'InternalServerException');
  const notReady = await signed(converse(NOVA), { messages: [user('hi')] });
  t.equal(notReady.status, 503);
  t.equal(errorType(notReady), 'ModelNotReadyException');
  const quota = await signed(converse(NOVA), { messages: [user('hi')] });
  t.equal(errorType(quota), 'ServiceQuotaExceededException');
  t.same(quota.json(), { message: 'Nope' });
});

t.test('stream faults: errorAfterEvents sends an exception frame; malformedAfterEvents a bad payload', async (t) => {
  const failing = await signed(converse(NOVA, 'converse-stream'), { messages: [user(directive({ text: 'abcdefgh', errorAfterEvents: { events: 2, message: 'boom' } }))] });
  const got = frames(failing.bytes);
  t.same(got.map((f) => f.headers[':event-type'] ?? f.headers[':exception-type']), ['messageStart', 'contentBlockDelta', 'modelStreamErrorException']);
  const last = got.at(-1);
  t.equal(last?.headers[':message-type'], 'exception');
  t.equal(last?.headers[':content-type'], 'application/json');
  t.equal(last?.payload.message, 'boom');
  const throttled = await signed(converse(NOVA, 'converse-stream'), { messages: [user(directive({ errorAfterEvents: { events: 1, message: 'throttlingException: Slow down' } }))] });
  const tf = frames(throttled.bytes).at(-1);
  t.equal(tf?.headers[':exception-type'], 'throttlingException');
  t.same(tf?.payload, { message: 'Slow down' });

  const broken = await signed(converse(NOVA, 'converse-stream'), { messages: [user(directive({ text: 'abcd', malformedAfterEvents: 1 }))] });
  const bf = frames(broken.bytes);
  t.equal(bf[1]?.headers[':event-type'], 'contentBlockDelta');
  t.equal(bf[1]?.payload, undefined, 'the payload is not JSON');
  t.equal(bf.at(-1)?.headers[':event-type'], 'metadata', 'the stream goes on');
});

t.test('usage: cached tokens are left out of inputTokens; omit gives zeros', async (t) => {
  sim.enqueue({ usage: { input: 100, output: 10, cacheRead: 30, cacheWrite: 20 } }, { usage: 'omit' });
  const cached = (await signed(converse(CLAUDE), { messages: [user('hi')] })).json();
  t.same(cached.usage, { inputTokens: 50, outputTokens: 10, totalTokens: 110, cacheReadInputTokens: 30, cacheWriteInputTokens: 20 });
  const omitted = (await signed(converse(CLAUDE), { messages: [user('hi')] })).json();
  t.same(omitted.usage, { inputTokens: 0, outputTokens: 0, totalTokens: 0 });
});

t.test('extended thinking on Claude: a signed reasoning block, replayed as is', async (t) => {
  const first = (await signed(converse(CLAUDE), { messages: [user('think')], additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 2048 } } })).json();
  const reasoning = first.output.message.content[0].reasoningContent.reasoningText;
  t.type(reasoning.text, 'string');
  t.type(reasoning.signature, 'string');
  const replay = await signed(converse(CLAUDE), {
    messages: [user('think'), { role: 'assistant', content: [{ reasoningContent: { reasoningText: reasoning } }, { text: 'ok' }] }, user('again')],
  });
  t.equal(replay.status, 200, replay.text);
  const forged = await signed(converse(CLAUDE), {
    messages: [user('think'), { role: 'assistant', content: [{ reasoningContent: { reasoningText: { ...reasoning, signature: 'forged' } } }] }, user('again')],
  });
  t.equal(forged.status, 400);
});

t.test('Converse validation', async (t) => {
  const cases: Array<[string, Json, RegExp | string]> = [
    ['toolUse without toolConfig', { messages: [user('hi'), { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_1', name: 'f', input: {} } }] }, { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_1', content: [{ text: 'r' }] } }] }] }, 'The toolConfig field must be defined when using toolUse and toolResult content blocks.'],
    ['no messages', {}, "1 validation error detected: Value null at 'messages' failed to satisfy constraint: Member must not be null"],
    ['modelId in the body', { modelId: NOVA, messages: [user('hi')] }, /"modelId"/],
    ['assistant first', { messages: [{ role: 'assistant', content: [{ text: 'hi' }] }] }, /must start with a user message/],
    ['not alternating', { messages: [user('a'), user('b')] }, /must alternate between user and assistant/],
    ['bad role', { messages: [{ role: 'system', content: [{ text: 'x' }] }] }, /Value 'system' at 'messages.1.member.role' failed to satisfy constraint: Member must satisfy enum value set: \[user, assistant\]/],
    ['bad image bytes', { messages: [{ role: 'user', content: [{ image: { format: 'png', source: { bytes: 'not base64!' } } }] }] }, /base64/],
    ['bad image format', { messages: [{ role: 'user', content: [{ image: { format: 'bmp', source: { bytes: 'AAAA' } } }] }] }, /image\.format/],
    ['unknown block', { messages: [{ role: 'user', content: [{ audio: {} }] }] }, /audio/],
    ['temperature', { messages: [user('hi')], inferenceConfig: { temperature: 2 } }, /inferenceConfig.temperature/],
    ['unanswered tool use', { messages: [user('hi'), { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_1', name: 'f', input: {} } }] }, user('next')], toolConfig: { tools: [{ toolSpec: { name: 'f', inputSchema: { json: {} } } }] } }, 'Expected toolResult blocks at messages.2.content for the following Ids: tooluse_1'],
    ['bad directive', { messages: [user('SIM: {"nope":1}')] }, /unknown scenario field/],
  ];
  for (const [name, body, expected] of cases) {
    const res = await signed(converse(NOVA), body);
    t.equal(res.status, 400, name);
    t.equal(errorType(res), 'ValidationException', name);
    if (typeof expected === 'string') t.equal(res.json().message, expected, name);
    else t.match(res.json().message, expected, name);
  }
  const embedding = await signed(converse('amazon.titan-embed-text-v2:0'), { messages: [user('hi')] });
  t.equal(embedding.status, 400);
});

t.test('InvokeModel embeddings: Titan v2 and v1, Cohere v3', async (t) => {
  const titan = await signed(converse('amazon.titan-embed-text-v2:0', 'invoke'), { inputText: 'the cat sat on the mat', dimensions: 512 });
  t.equal(titan.status, 200, titan.text);
  const tb = titan.json();
  t.equal(tb.embedding.length, 512);
  t.same(tb.embeddingsByType.float, tb.embedding);
  t.ok(tb.inputTextTokenCount > 0);
  t.equal(titan.headers['x-amzn-bedrock-input-token-count'], String(tb.inputTextTokenCount));
  t.ok(titan.headers['x-amzn-bedrock-invocation-latency']);
  t.same(sim.requests[0]?.bedrock, { action: 'invoke', auth: 'sigv4' });
  const similar = (await signed(converse('amazon.titan-embed-text-v2:0', 'invoke'), { inputText: 'the cat sat on a mat', dimensions: 512 })).json();
  const other = (await signed(converse('amazon.titan-embed-text-v2:0', 'invoke'), { inputText: 'quarterly revenue grew strongly', dimensions: 512 })).json();
  t.ok(cosine(tb.embedding, similar.embedding) > cosine(tb.embedding, other.embedding) + 0.3, 'similar texts land close');
  const badDims = await signed(converse('amazon.titan-embed-text-v2:0', 'invoke'), { inputText: 'x', dimensions: 100 });
  t.equal(badDims.status, 400);
  t.equal(errorType(badDims), 'ValidationException');
  // SDKs send InvokeModel's blob as application/octet-stream unless told otherwise.
  const octet = await send(`${sim.url}${converse('amazon.titan-embed-text-v2:0', 'invoke')}`, JSON.stringify({ inputText: 'hello' }), { 'content-type': 'application/octet-stream', authorization: `Bearer ${KEY}` });
  t.equal(octet.status, 200, octet.text);
  t.equal(octet.json().embedding.length, 1024);
  const v1 = (await signed(converse('amazon.titan-embed-text-v1', 'invoke'), { inputText: 'hello' })).json();
  t.equal(v1.embedding.length, 1536);

  const cohere = await signed(converse('cohere.embed-english-v3', 'invoke'), { texts: ['hello world', 'goodbye'], input_type: 'search_document' });
  t.equal(cohere.status, 200, cohere.text);
  const cb = cohere.json();
  t.equal(cb.response_type, 'embeddings_floats');
  t.equal(cb.embeddings.length, 2);
  t.equal(cb.embeddings[0].length, 1024);
  t.same(cb.texts, ['hello world', 'goodbye']);
  t.match(cb.id, /^[0-9a-f-]{36}$/);
  t.ok(Number(cohere.headers['x-amzn-bedrock-input-token-count']) > 0);
  const noType = await signed(converse('cohere.embed-multilingual-v3', 'invoke'), { texts: ['hello'] });
  t.equal(noType.status, 400);
  t.same(noType.json(), { message: 'Malformed input request: #: required key [input_type] not found, please reformat your input and try again.' });
  const byType = (await signed(converse('cohere.embed-english-v3', 'invoke'), { texts: ['hi'], input_type: 'search_query', embedding_types: ['float', 'int8'] })).json();
  t.equal(byType.response_type, 'embeddings_by_type');
  t.equal(byType.embeddings.int8[0].length, 1024);
  const chat = await signed(converse(CLAUDE, 'invoke'), { messages: [] });
  t.equal(chat.status, 400);
  t.equal(errorType(chat), 'ValidationException');
});
