import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { ProviderConfig } from '../../src/config/types.js';
import type { ChatRequest, StreamPart } from '../../src/core/canonical.js';
import { isGatewayError } from '../../src/core/errors.js';
import { bedrockFamily } from '../../src/providers/bedrock/index.js';
import { awsErrorType, upstreamHttpError } from '../../src/providers/shared/errors.js';

/**
 * Bedrock's Converse family without the network: real ConverseStream bytes recorded from AWS
 * (test/fixtures/bedrock, pydantic-ai's cassettes) decoded by the event-stream parser and the
 * stream decoder, in reads of every size; the request's path and shape; AWS's error names.
 */

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'bedrock');

const provider: ProviderConfig = {
  name: 'bedrock',
  type: 'bedrock',
  baseUrl: 'https://bedrock-runtime.us-east-1.amazonaws.com',
  apiKeys: [],
  headers: {},
  maxTokensParam: 'max_tokens',
  timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 },
  bedrock: { region: 'us-east-1', credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } },
};

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return { model: 'bedrock/m', upstreamModel: 'us.amazon.nova-micro-v1:0', messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }], maxTokens: 100, stream: true, ...overrides };
}

/** Feeds the bytes in reads of `size` bytes (a frame split across reads, several frames in one). */
function decode(bytes: Buffer, size: number): StreamPart[] {
  const parser = bedrockFamily.createFrameParser?.(provider);
  if (!parser) throw new Error('Bedrock has a frame parser');
  const decoder = bedrockFamily.createStreamDecoder(request(), provider, { newToolCallId: () => 'x' });
  const parts: StreamPart[] = [];
  for (let at = 0; at < bytes.length; at += size) for (const event of parser.push(bytes.subarray(at, at + size))) parts.push(...decoder.push(event));
  for (const event of parser.end()) parts.push(...decoder.push(event));
  parts.push(...decoder.end());
  return parts;
}

t.test('a recorded ConverseStream (text) decodes to its text, usage and finish', async (t) => {
  const bytes = readFileSync(join(FIXTURES, 'converse-stream.bin'));
  for (const size of [1, 7, 100, 4096, bytes.length]) {
    const parts = decode(bytes, size);
    const text = parts.map((part) => (part.type === 'text-delta' ? part.text : '')).join('');
    t.match(text, /^The capital of France is Paris\./, `the answer's text (reads of ${size} bytes)`);
    t.match(text, /"The City of Love\."$/, 'to its last delta');
    t.same(parts.filter((part) => part.type === 'usage'), [{ type: 'usage', usage: { inputTokens: 13, outputTokens: 82, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 } }], 'the usage of the metadata event, after the stop');
    t.same(parts.at(-1), { type: 'finish', finishReason: 'stop' }, 'end_turn is stop');
  }
});

t.test('a recorded ConverseStream with a tool use decodes to the call', async (t) => {
  const parts = decode(readFileSync(join(FIXTURES, 'converse-stream-tool.bin')), 13);
  const starts = parts.filter((part) => part.type === 'tool-call-start');
  t.same(starts, [{ type: 'tool-call-start', index: 0, id: 'tooluse_lAG_zP8QRHmSYOwZzzaCqA', name: 'get_temperature' }]);
  const args = parts.map((part) => (part.type === 'tool-call-delta' ? part.argumentsDelta : '')).join('');
  t.same(JSON.parse(args), { city: 'Paris' });
  t.match(parts.find((part) => part.type === 'usage'), { usage: { inputTokens: 471, outputTokens: 91 } });
  t.same(parts.at(-1), { type: 'finish', finishReason: 'tool_calls' });
});

t.test('a broken frame, a cut stream and an exception frame are errors, not silence', async (t) => {
  const bytes = Buffer.from(readFileSync(join(FIXTURES, 'converse-stream.bin')));
  const corrupt = Buffer.from(bytes);
  corrupt[40] = (corrupt[40] ?? 0) ^ 0xff;
  t.throws(() => decode(corrupt, 4096), { reason: 'upstream_malformed_response', message: /checksum/ }, 'a checksum that does not match');
  t.throws(() => decode(bytes.subarray(0, bytes.length - 10), 4096), { reason: 'upstream_malformed_response', message: /ended inside a frame/ }, 'a stream cut inside a frame');
  // The stream up to its messageStop frame, with no stop: ended early.
  const decoder = bedrockFamily.createStreamDecoder(request(), provider, { newToolCallId: () => 'x' });
  t.throws(() => decoder.end(), { reason: 'upstream_malformed_response', message: /messageStop/ }, 'no messageStop');
  t.throws(() => decoder.push({ event: 'throttlingException', data: '{"message":"Too many requests, please wait before trying again."}' }), { status: 429, reason: 'upstream_rate_limited', message: /Too many requests/ }, 'throttling: a 429');
  t.throws(() => decoder.push({ event: 'validationException', data: '{"message":"Input is too long"}' }), { status: 400, reason: 'upstream_invalid_request', message: 'Input is too long' }, "a validation exception: the client's 400");
  t.throws(() => decoder.push({ event: 'modelStreamErrorException', data: '{"message":"boom","originalStatusCode":500}' }), { reason: 'upstream_stream_error', message: /modelStreamErrorException: boom/ }, 'the model failing mid-answer: a stream error');
});

t.test('the Converse request: one path segment for the model, toolConfig whenever the history holds tools', async (t) => {
  const call = bedrockFamily.buildChatRequest(request({ stream: false }), provider);
  t.equal(call.url, 'https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/converse', "':' as %3A");
  const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0';
  t.equal(bedrockFamily.buildChatRequest(request({ upstreamModel: arn }), provider).url, `https://bedrock-runtime.us-east-1.amazonaws.com/model/${arn.replaceAll(':', '%3A').replace('/', '%2F')}/converse-stream`, "an ARN's '/' as %2F: one segment");

  const history = request({
    stream: false,
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }, { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } }] },
      { role: 'assistant', content: [], toolCalls: [{ id: 't1', name: 'weather', arguments: '{"city":"Paris"}' }, { id: 't2', name: 'weather', arguments: '{"city":"Rome"}' }] },
      { role: 'tool', toolCallId: 't1', content: [{ type: 'text', text: '21C' }] },
      { role: 'tool', toolCallId: 't2', content: [{ type: 'text', text: 'boom' }], isError: true },
      { role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
    ],
  });
  const body = bedrockFamily.buildChatRequest(history, provider).body as Record<string, unknown>;
  t.same(body.system, [{ text: 'Be brief.' }]);
  t.same(body.messages, [
    { role: 'user', content: [{ text: 'Weather in Paris and Rome?' }, { image: { format: 'png', source: { bytes: 'iVBORw0KGgo=' } } }] },
    { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'weather', input: { city: 'Paris' } } }, { toolUse: { toolUseId: 't2', name: 'weather', input: { city: 'Rome' } } }] },
    { role: 'user', content: [{ toolResult: { toolUseId: 't1', content: [{ text: '21C' }] } }, { toolResult: { toolUseId: 't2', content: [{ text: 'boom' }], status: 'error' } }, { text: 'Thanks' }] },
  ], 'tool results and the next text in one user turn');
  t.same(body.toolConfig, { tools: [{ toolSpec: { name: 'weather', description: 'A tool this conversation used.', inputSchema: { json: { type: 'object' } } } }] }, 'toolConfig for a history with tool blocks, though the request has no tools');
  t.same(body.inferenceConfig, { maxTokens: 100 });

  const tools = bedrockFamily.buildChatRequest(request({ tools: [{ name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }], toolChoice: { type: 'required' }, temperature: 0.2, stop: ['END'] }), provider).body as Record<string, unknown>;
  t.same(tools.toolConfig, { tools: [{ toolSpec: { name: 'weather', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } } } }], toolChoice: { any: {} } });
  t.same(tools.inferenceConfig, { maxTokens: 100, temperature: 0.2, stopSequences: ['END'] });

  const claude = bedrockFamily.buildChatRequest(request({ upstreamModel: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', maxTokens: 4000, reasoning: { budgetTokens: 2000 }, temperature: 0.5 }), provider);
  t.same((claude.body as Record<string, unknown>).additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 2000 } }, "Claude's thinking in additionalModelRequestFields");
  t.notOk('temperature' in ((claude.body as { inferenceConfig: object }).inferenceConfig), 'no temperature with thinking');
  const nova = bedrockFamily.buildChatRequest(request({ reasoning: { effort: 'high' }, seed: 3 }), provider);
  t.same(nova.ignoredParams, ['seed', 'reasoning'], 'named when the model cannot take them');
  t.throws(() => bedrockFamily.buildChatRequest(request({ messages: [{ role: 'user', content: [{ type: 'image', source: { kind: 'base64', mediaType: 'image/tiff', data: 'AAAA' } }] }] }), provider), { status: 400, message: /png, jpeg, gif and webp/ });

  // Prompt caching's cachePoint only where the model caches (another refuses the request).
  const marked = (upstreamModel: string) =>
    bedrockFamily.buildChatRequest(request({ upstreamModel, messages: [{ role: 'system', content: [{ type: 'text', text: 'Long rules', cacheControl: { type: 'ephemeral' } }] }, { role: 'user', content: [{ type: 'text', text: 'Hi', cacheControl: { type: 'ephemeral' } }] }] }), provider).body as Record<string, unknown>;
  t.same(marked(CLAUDE).system, [{ text: 'Long rules' }, { cachePoint: { type: 'default' } }], 'Claude 4.5 caches');
  t.same((marked(CLAUDE).messages as unknown[])[0], { role: 'user', content: [{ text: 'Hi' }, { cachePoint: { type: 'default' } }] });
  t.same(marked('us.amazon.nova-pro-v1:0').system, [{ text: 'Long rules' }, { cachePoint: { type: 'default' } }], 'Nova caches');
  t.same(marked('us.meta.llama3-3-70b-instruct-v1:0').system, [{ text: 'Long rules' }], 'Llama does not: no cachePoint');
  t.same(marked('anthropic.claude-3-sonnet-20240229-v1:0').system, [{ text: 'Long rules' }], 'nor Claude 3 Sonnet');
  const none = bedrockFamily.buildChatRequest(request({ toolChoice: { type: 'none' }, messages: history.messages }), provider);
  t.ok(none.ignoredParams.includes('tool_choice'), 'tool_choice none cannot be kept with a history of tool calls: named');
});

t.test("AWS's error names decide what the client sees", async (t) => {
  t.equal(awsErrorType({ 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' }), 'ThrottlingException');
  t.equal(awsErrorType({ 'x-amzn-errortype': 'ValidationException' }), 'ValidationException');
  t.equal(awsErrorType({}), undefined);
  const answer = (status: number, errorType: string, message: string) => upstreamHttpError('bedrock', { status, errorType, message, body: { message }, retryAfterMs: undefined, credentials: 'access_key_id and secret_access_key (or api_key)' });
  const signature = answer(403, 'InvalidSignatureException', 'The request signature we calculated does not match the signature you provided.');
  t.match(signature, { status: 502, reason: 'upstream_auth_failed', upstream: { status: 401 } });
  t.match(signature.message, /AWS credentials \(InvalidSignatureException\): an administrator must check the provider's access_key_id and secret_access_key/);
  t.notMatch(signature.message, /calculated/, "AWS's words are not relayed (a mismatch quotes the canonical request)");
  t.match(answer(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.'), { reason: 'upstream_auth_failed' });
  t.match(answer(403, 'AccessDeniedException', 'You don\'t have access to the model with the specified model ID.'), { status: 502, reason: 'upstream_access_denied', upstream: { misconfigured: true } });
  t.match(answer(429, 'ThrottlingException', 'Too many requests, please wait before trying again.'), { status: 429, reason: 'upstream_rate_limited' });
  t.match(answer(400, 'ValidationException', 'messages.0: blank text'), { status: 400, reason: 'upstream_invalid_request', message: 'messages.0: blank text' });
  t.match(answer(400, 'ValidationException', 'The provided model identifier is invalid.'), { status: 502, reason: 'upstream_model_not_found', upstream: { misconfigured: true } });
  t.match(answer(429, 'ModelNotReadyException', 'Model is not ready'), { status: 503, reason: 'upstream_unavailable', retryable: true });
  t.match(answer(503, 'ServiceUnavailableException', 'Service unavailable'), { status: 503, reason: 'upstream_unavailable' });
  t.ok(isGatewayError(signature));
});
