import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { ChatProviderType, ProviderConfig, ProviderType } from '../../src/config/types.js';
import type { ChatRequest, StreamPart } from '../../src/core/canonical.js';
import { PROVIDER_FAMILIES } from '../../src/providers/registry.js';
import { PACKAGE_ROOT } from '../../src/config/load.js';

/**
 * Pure translation against recorded fixtures: a canonical request → each family's upstream
 * body, and recorded upstream streams (`.chunks.txt`, one event's data per line) → the
 * expected canonical parts.
 */

const FIXTURES = join(PACKAGE_ROOT, 'test/fixtures');
const read = (path: string): string => readFileSync(join(FIXTURES, path), 'utf8');

function provider(type: ProviderType): ProviderConfig {
  return {
    name: `test-${type}`,
    type,
    baseUrl: type === 'openai' ? 'http://upstream.test/v1' : 'http://upstream.test',
    apiKey: 'upstream-secret',
    apiKeys: ['upstream-secret'],
    headers: {},
    timeouts: { connectMs: 1000, firstByteMs: 1000, idleMs: 1000 },
    maxTokensParam: 'max_tokens',
    ...(type === 'anthropic' ? { anthropicVersion: '2023-06-01' } : {}),
  };
}

const request = JSON.parse(read('request.canonical.json')) as ChatRequest;

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

for (const type of ['openai', 'anthropic', 'gemini'] as const) {
  t.test(`${type}: canonical request → upstream body`, async (t) => {
    const built = PROVIDER_FAMILIES[type].buildChatRequest(structuredClone(request), provider(type));
    const expected = JSON.parse(read(`${type}/request.expected.json`)) as { url: string; body: unknown; ignoredParams: string[] };
    t.equal(built.url, expected.url);
    t.same(built.ignoredParams, expected.ignoredParams);
    t.strictSame(built.body, expected.body);
    const authHeader = { openai: 'authorization', anthropic: 'x-api-key', gemini: 'x-goog-api-key' }[type];
    t.match(built.headers[authHeader], /upstream-secret/, `the provider key goes in ${authHeader}`);
  });
}

const responses: [ChatProviderType, string][] = [
  ['openai', 'response-tools'],
  ['anthropic', 'response-tools'],
  ['anthropic', 'response-stop-sequence'],
  ['gemini', 'response-calls'],
  ['gemini', 'response-blocked'],
];

for (const [type, name] of responses) {
  t.test(`${type}/${name}.json → canonical result`, async (t) => {
    let ids = 0;
    const result = PROVIDER_FAMILIES[type].parseChatResponse(JSON.parse(read(`${type}/${name}.json`)), request, { newToolCallId: () => `call_${++ids}` });
    t.strictSame(result, JSON.parse(read(`${type}/${name}.expected.json`)));
  });
}

const streams: [ChatProviderType, string][] = [
  ['openai', 'parallel-tools'],
  ['openai', 'text-length'],
  ['anthropic', 'text-cached'],
  ['anthropic', 'text-then-tools'],
  ['gemini', 'parallel-calls'],
  ['gemini', 'thought-and-max-tokens'],
];

for (const [type, name] of streams) {
  t.test(`${type}/${name}.chunks.txt → canonical parts`, async (t) => {
    let ids = 0;
    const decoder = PROVIDER_FAMILIES[type].createStreamDecoder({ ...request, stream: true }, provider(type), { newToolCallId: () => `call_${++ids}` });
    const parts: StreamPart[] = [];
    for (const line of read(`${type}/${name}.chunks.txt`).split('\n').filter((l) => l.trim() !== '')) parts.push(...decoder.push({ data: line }));
    parts.push(...decoder.end());
    t.strictSame(parts, JSON.parse(read(`${type}/${name}.expected.json`)));
  });
}

t.test('a stream cut before its end is an upstream failure, not a short answer', async (t) => {
  const cases: [ChatProviderType, string][] = [
    ['openai', '{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}'],
    ['anthropic', '{"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}'],
    ['gemini', '{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0}]}'],
  ];
  for (const [type, line] of cases) {
    const decoder = PROVIDER_FAMILIES[type].createStreamDecoder({ ...request, stream: true }, provider(type), { newToolCallId: () => 'call_x' });
    decoder.push({ data: line });
    t.match(thrown(() => decoder.end()), { status: 502, reason: 'upstream_malformed_response' }, `${type}`);
  }
});

t.test('upstream error events inside a stream', async (t) => {
  const cases: [ChatProviderType, string][] = [
    ['openai', '{"error":{"message":"boom","type":"server_error"}}'],
    ['anthropic', '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'],
    ['gemini', '{"error":{"code":500,"message":"boom","status":"INTERNAL"}}'],
  ];
  for (const [type, line] of cases) {
    const decoder = PROVIDER_FAMILIES[type].createStreamDecoder({ ...request, stream: true }, provider(type), { newToolCallId: () => 'call_x' });
    t.match(thrown(() => decoder.push({ data: line })), { status: 502, reason: 'upstream_stream_error' }, type);
    const fresh = PROVIDER_FAMILIES[type].createStreamDecoder(request, provider(type), { newToolCallId: () => 'c' });
    t.match(thrown(() => fresh.push({ data: '{not json' })), { reason: 'upstream_malformed_response' }, `${type}: malformed`);
  }
});
