import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import t from 'tap';
import { startTestGateway } from '../support/gateway.js';
import { dropPrefix, REDIS_URL, redisSkipReason } from '../support/redis.js';
import { at, list, str } from './check.js';
import {
  CHAT,
  conforms,
  expectError,
  FORMATS,
  funded,
  header,
  MESSAGES,
  MODEL,
  parseJson,
  RESPONSES,
  sim,
  signup,
  sseFrames,
  startDaemon,
  uniqueEmail,
  PASSWORD,
  type Res,
  type Tap,
} from './harness.js';
import {
  API_KEY_CREATED,
  CATALOG_MODEL_LIST,
  CHAT_COMPLETION,
  COMPAT_MODEL_LIST,
  DECIDED_CHAT_CHUNK,
  DECIDED_KEY_LIST,
  DECIDED_MESSAGE_OBJECT,
  DECIDED_READY_WITHOUT_REDIS,
  DECIDED_RESPONSE_OBJECT,
  DECIDED_SIGNUP,
  DECISIONS,
  ENDPOINTS,
  HEALTH,
  LOGIN,
  READY_ALL_HEALTHY,
  USER_PROFILE,
  WALLET_BALANCE,
  type EndpointRow,
} from './spec.js';

/**
 * Contract: every row of the spec's endpoint table (its success status and auth rule), the
 * statuses the spec states per endpoint (402, 429, 404), and the endpoint notes (model names,
 * streams, any catalog model on every chat-style endpoint, readiness with Redis).
 */

const daemon = await startDaemon(t);
/** Half a second of silence, 8 kHz 8-bit mono WAV, base64-encoded (transcription shape B). */
const SILENT_WAV = (() => {
  const samples = 4000;
  const wav = Buffer.alloc(44 + samples, 0x80);
  wav.write('RIFF', 0);
  wav.writeUInt32LE(36 + samples, 4);
  wav.write('WAVEfmt ', 8);
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(8000, 24);
  wav.writeUInt32LE(8000, 28);
  wav.writeUInt16LE(1, 32);
  wav.writeUInt16LE(8, 34);
  wav.write('data', 36);
  wav.writeUInt32LE(samples, 40);
  return wav.toString('base64');
})();

/** How to make one successful call to an endpoint, and what its 200 must look like. */
interface SuccessCase {
  /** `credential` goes in `Authorization: Bearer`; `headers` are added (a session cookie). */
  call(credential: string | undefined, headers?: Record<string, string>): Promise<Res>;
  verify(t: Tap, res: Res): void;
}

async function successCase(row: EndpointRow): Promise<SuccessCase> {
  const post = (body: unknown) => (credential: string | undefined, headers: Record<string, string> = {}) =>
    daemon.call('POST', row.path, { body, headers, ...(credential ? { token: credential } : {}) });
  const get = (credential: string | undefined, headers: Record<string, string> = {}) => daemon.call('GET', row.path, { headers, ...(credential ? { token: credential } : {}) });
  const table = (name: string, check: (t: Tap, res: Res) => void): ((t: Tap, res: Res) => void) => (t, res) => {
    t.equal(res.status, 200, `${name}: 200${res.status === 200 ? '' : ` (${res.text.slice(0, 200)})`}`);
    check(t, res);
  };
  switch (row.path) {
    case '/v1/chat/completions':
      return { call: post(CHAT.body(MODEL, 'hi')), verify: table(row.path, (t, res) => conforms(t, res.body, CHAT_COMPLETION, row.path)) };
    case '/v1/responses':
      return { call: post(RESPONSES.body(MODEL, 'hi')), verify: table(row.path, (t, res) => conforms(t, res.body, DECIDED_RESPONSE_OBJECT, row.path)) };
    case '/v1/messages':
      return { call: post(MESSAGES.body(MODEL, 'hi')), verify: table(row.path, (t, res) => conforms(t, res.body, DECIDED_MESSAGE_OBJECT, row.path)) };
    case '/v1/embeddings':
      return {
        call: post({ model: 'text-embedding-3-small', input: ['hello', 'world'] }),
        verify: table(row.path, (t, res) => {
          t.equal(list(res.body, 'data').length, 2, 'one embedding vector per input');
          t.ok(list(res.body, 'data.0.embedding').every((n) => typeof n === 'number'), 'vectors of numbers (encoding_format float by default)');
        }),
      };
    case '/v1/audio/speech':
      return {
        call: post({ model: 'openai/tts-1', input: 'hello', voice: 'alloy' }),
        verify: table(row.path, (t, res) => t.match(header(res, 'content-type') ?? '', /^audio\//, 'raw audio bytes (mp3 by default)')),
      };
    case '/v1/audio/transcriptions':
      return {
        call: post({ model: 'openai/whisper-1', input_audio: { data: SILENT_WAV, format: 'wav' } }),
        verify: table(row.path, (t, res) => t.ok(res.text.length > 0, 'transcription text')),
      };
    case '/v1/images/generations':
      return {
        call: post({ prompt: 'a lighthouse at dusk' }),
        verify: table(row.path, (t, res) => t.type(at(res.body, 'data.0.url'), 'string', 'generated images as URLs by default')),
      };
    case '/v1/credits':
      return { call: get, verify: table(row.path, (t, res) => conforms(t, res.body, WALLET_BALANCE, row.path)) };
    case '/v1/models':
      return { call: get, verify: table(row.path, (t, res) => conforms(t, res.body, COMPAT_MODEL_LIST, row.path)) };
    case '/api/models':
      return { call: get, verify: table(row.path, (t, res) => conforms(t, res.body, CATALOG_MODEL_LIST, row.path)) };
    case '/health':
      return { call: get, verify: table(row.path, (t, res) => conforms(t, res.body, HEALTH, row.path)) };
    case '/health/ready':
      // No Redis on this daemon: the decided `disabled`; the spec's `ok` is asserted below with Redis.
      return { call: get, verify: table(row.path, (t, res) => conforms(t, res.body, DECIDED_READY_WITHOUT_REDIS, row.path)) };
    case '/api/auth/signup':
      return {
        call: (credential) => daemon.call('POST', row.path, { body: { email: uniqueEmail('signup'), password: PASSWORD, name: 'New' }, ...(credential ? { token: credential } : {}) }),
        verify: (t, res) => {
          t.equal(res.status, DECISIONS.signupStatus, `${row.path}: 200`);
          conforms(t, res.body, DECIDED_SIGNUP, row.path);
          t.match(header(res, 'set-cookie') ?? '', /^token=[^;]+/, 'a session token set as a cookie');
        },
      };
    case '/api/auth/login': {
      const account = await signup(daemon);
      return { call: post({ email: account.email, password: PASSWORD }), verify: table(row.path, (t, res) => conforms(t, res.body, LOGIN, row.path)) };
    }
    case '/api/auth/me':
      return { call: get, verify: table(row.path, (t, res) => conforms(t, res.body, USER_PROFILE, row.path)) };
    case '/api/api-keys':
      return row.method === 'POST'
        ? {
            call: post({ name: 'endpoint test' }),
            verify: (t, res) => {
              t.equal(res.status, DECISIONS.keyCreateStatus, `${row.path}: 200`);
              conforms(t, res.body, API_KEY_CREATED, row.path);
            },
          }
        : { call: get, verify: table(row.path, (t, res) => conforms(t, res.body, DECIDED_KEY_LIST, row.path)) };
    default:
      throw new Error(`no success case for ${row.method} ${row.path}`);
  }
}

const key = await funded(daemon, 100);
const account = await signup(daemon);

for (const row of ENDPOINTS) {
  const name = `${row.method} ${row.path} (auth: ${row.auth}; ${row.purpose})`;
  const options = row.todo ? { todo: row.todo } : {};
  t.test(name, options, async (t) => {
    const success = await successCase(row);
    const own = row.auth === 'api_key' ? key.key : row.auth === 'session' ? account.token : undefined;
    success.verify(t, await success.call(own));

    if (row.auth === 'none') {
      // Public: no credentials needed (the call above had none), and a stray one is not refused.
      success.verify(t, await success.call(`sk-${'f'.repeat(64)}`));
      return;
    }
    if (row.auth === 'session') {
      // Authentication 3: the session token as a cookie named `token` works as well as the
      // bearer (a change made with the cookie carries the session's CSRF token, as a browser's).
      success.verify(t, await success.call(undefined, { cookie: `theme=dark; token=${account.token}`, ...(row.method === 'GET' ? {} : { 'x-csrf-token': account.csrf }) }));
    }
    const missing = await success.call(undefined);
    expectError(t, missing, 401, `${name} without credentials`, { type: DECISIONS.unauthenticatedType, format: row.path === '/v1/messages' ? 'messages' : 'openai' });
    const wrong = row.auth === 'api_key' ? `sk-${'0'.repeat(64)}` : 'not-a-session-token';
    expectError(t, await success.call(wrong), 401, `${name} with a wrong ${row.auth === 'api_key' ? 'key' : 'session token'}`, {
      type: DECISIONS.unauthenticatedType,
      format: row.path === '/v1/messages' ? 'messages' : 'openai',
    });
    if (row.auth === 'api_key') {
      expectError(t, await success.call(account.token), 401, `${name} with a session token instead of a key`, { format: row.path === '/v1/messages' ? 'messages' : 'openai' });
      expectError(t, await success.call(daemon.gw.adminKey), 403, `${name} with an akm- management key`, { format: row.path === '/v1/messages' ? 'messages' : 'openai' });
    } else {
      const refused = await success.call(key.key);
      t.ok(refused.status === 401 || refused.status === 403, `${name} with an sk- key instead of a session: refused (${refused.status})`);
      expectError(t, refused, refused.status, `${name} with an sk- key instead of a session`);
    }
  });
}

t.test('402 insufficient credits on chat, responses and messages (spec: Errors 2)', async (t) => {
  const empty = await funded(daemon, 0);
  const tiny = await funded(daemon, 0.000001);
  const budgeted = await funded(daemon, 100, { budget: 0.000001 });
  for (const format of FORMATS) {
    const tinyWallet = await daemon.call('POST', format.path, { token: tiny.key, body: format.body(MODEL, 'hi') });
    expectError(t, tinyWallet, 402, `${format.name}: a wallet of ₹0.000001`, { format: format.format, reason: 'insufficient_credits' });
    const wallet = await daemon.call('POST', format.path, { token: empty.key, body: format.body(MODEL, 'hi') });
    expectError(t, wallet, 402, `${format.name}: empty wallet`, { format: format.format, reason: 'insufficient_credits' });
    if (format.format === 'openai') t.equal(at(wallet.body, 'error.type'), DECISIONS.insufficientCreditsType, `${format.name}: type insufficient_credits`);
    const budget = await daemon.call('POST', format.path, { token: budgeted.key, body: format.body(MODEL, 'hi') });
    expectError(t, budget, 402, `${format.name}: key budget exceeded`, { format: format.format, reason: 'budget_exceeded' });
    if (format.format === 'openai') t.equal(at(budget.body, 'error.type'), DECISIONS.budgetExceededType, `${format.name}: type budget_exceeded`);
  }
  const credits = await daemon.call('GET', '/v1/credits', { token: empty.key });
  t.equal(credits.status, 200, 'an empty wallet can still read its balance');
});

t.test('429 rate limit exceeded on chat, responses and messages (spec: Errors 2)', async (t) => {
  for (const format of FORMATS) {
    const limited = await funded(daemon, 100, { rate_limit: 1 });
    const first = await daemon.call('POST', format.path, { token: limited.key, body: format.body(MODEL, 'hi') });
    t.equal(first.status, 200, `${format.name}: the first call of the minute passes`);
    const second = await daemon.call('POST', format.path, { token: limited.key, body: format.body(MODEL, 'hi') });
    expectError(t, second, 429, `${format.name}: the second call of the minute`, { format: format.format, reason: 'rate_limit_exceeded' });
    if (format.format === 'openai') t.equal(at(second.body, 'error.type'), DECISIONS.rateLimitType, `${format.name}: type rate_limit_exceeded`);
    const retryAfter = Number(header(second, 'retry-after'));
    t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${format.name}: retry-after in whole seconds within the minute (${String(header(second, 'retry-after'))})`);
  }
});

t.test('404 on a wrong path, with the error envelope (spec: Errors 2; POST /v1/messages)', async (t) => {
  const paths: [string, string][] = [
    ['POST', '/v1/v1/messages'],
    ['POST', '/v1/v1/chat/completions'],
    ['POST', '/v1/chat/completion'],
    ['GET', '/v1/nope'],
    ['GET', '/api/nope'],
    ['GET', '/nope'],
  ];
  for (const [method, path] of paths) {
    const res = await daemon.call(method, path, { token: key.key, ...(method === 'POST' ? { body: MESSAGES.body(MODEL, 'hi') } : {}) });
    expectError(t, res, 404, `${method} ${path}`);
  }
  // `/` is the web dashboard (issue 13), HTML whether or not it is built.
  const root = await daemon.call('GET', '/');
  t.match(header(root, 'content-type') ?? '', /^text\/html/, 'GET / is the dashboard page');
  const anthropic = new Anthropic({ apiKey: key.key, baseURL: daemon.url, maxRetries: 0 });
  const message = await anthropic.messages.create({ model: MODEL, max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(message.type, 'message', 'the messages SDK works given the base address without /v1');
  const doubled = new Anthropic({ apiKey: key.key, baseURL: `${daemon.url}/v1`, maxRetries: 0 });
  const error = await doubled.messages.create({ model: MODEL, max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(error instanceof Anthropic.NotFoundError, 'given the base address with /v1 it reaches /v1/v1/messages: 404');
});

t.test('POST /v1/chat/completions: model names, stream, tools (spec: POST /v1/chat/completions)', async (t) => {
  for (const model of ['openai/gpt-4o-mini', 'gpt-4o-mini', 'claude-haiku-4-5', 'gemini-2.5-flash']) {
    const res = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body(model, 'hi') });
    t.equal(res.status, 200, `model ${model}: 200`);
    conforms(t, res.body, CHAT_COMPLETION, `model ${model}`);
  }

  const text = 'streamed contract reply';
  const stream = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body(MODEL, sim({ text, chunkSize: 5 }), { stream: true }) });
  t.equal(stream.status, 200, 'stream: 200');
  t.match(header(stream, 'content-type') ?? '', /^text\/event-stream/, 'stream: Server-Sent Events');
  const frames = sseFrames(stream.text);
  t.ok(frames.length >= 3, 'stream: several data frames');
  t.equal(frames.at(-1)?.data, '[DONE]', 'stream: ends with data: [DONE]');
  const chunks = frames.slice(0, -1).map((f) => parseJson(f.data));
  t.ok(frames.every((f) => f.event === undefined), 'stream: data-only frames (no event names)');
  chunks.forEach((chunk, i) => conforms(t, chunk, DECIDED_CHAT_CHUNK, `stream chunk ${i}`));
  t.equal(chunks.map((c) => str(c, 'choices.0.delta.content') ?? '').join(''), text, 'stream: the deltas add up to the reply');
  t.equal(chunks.map((c) => at(c, 'choices.0.finish_reason')).filter((f) => f !== null).at(-1), 'stop', 'stream: a normal end gives stop');

  const notStreamed = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body(MODEL, 'hi', { stream: false }) });
  conforms(t, notStreamed.body, CHAT_COMPLETION, 'stream false: one JSON completion');

  const jsonMode = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body(MODEL, sim({ text: '{"a":1}' }), { response_format: { type: 'json_object' }, max_tokens: 50 }) });
  t.equal(jsonMode.status, 200, 'response_format json_object and max_tokens are accepted');
  conforms(t, jsonMode.body, CHAT_COMPLETION, 'JSON mode');

  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  for (const toolChoice of ['auto', 'none', 'required', { type: 'function', function: { name: 'get_weather' } }]) {
    const res = await daemon.call('POST', CHAT.path, {
      token: key.key,
      body: CHAT.body(MODEL, sim({ text: 'checking', toolCalls: [{ name: 'get_weather', arguments: { city: 'Pune' } }] }), { tools, tool_choice: toolChoice }),
    });
    t.equal(res.status, 200, `tools with tool_choice ${JSON.stringify(toolChoice)}: 200`);
    conforms(t, res.body, CHAT_COMPLETION, `tool call reply (tool_choice ${JSON.stringify(toolChoice)})`);
  }

  const flags = await daemon.call('POST', CHAT.path, { token: key.key, body: CHAT.body('anthropic/claude-haiku-4-5', 'hi', { cache: true, no_cache: true, temperature: 0.5 }) });
  t.equal(flags.status, 200, 'cache and no_cache are accepted');
});

t.test('every catalog chat model serves all three chat-style formats (spec: What the service does 3)', async (t) => {
  const catalog = await daemon.call('GET', '/api/models');
  // `type` is the gateway's field (not in the spec's table): the chat-style endpoints serve chat models.
  const models = list(catalog.body, 'data')
    .filter((m) => at(m, 'type') === 'chat')
    .map((m) => str(m, 'id') ?? '');
  t.ok(models.length >= 10, `${models.length} chat models in the catalog`);
  const rich = await funded(daemon, 10_000);
  const failures: string[] = [];
  for (const model of models) {
    for (const format of FORMATS) {
      const res = await daemon.call('POST', format.path, { token: rich.key, body: format.body(model, 'hi') });
      if (res.status !== 200) failures.push(`${format.name} ${model}: ${res.status} ${res.text.slice(0, 120)}`);
    }
  }
  t.same(failures, [], `${models.length} models × 3 formats answer 200`);
});

t.test('POST /v1/responses: stateful features are unsupported (spec: POST /v1/responses)', async (t) => {
  const res = await daemon.call('POST', RESPONSES.path, { token: key.key, body: RESPONSES.body(MODEL, 'hi', { previous_response_id: 'resp_123' }) });
  expectError(t, res, 400, 'previous_response_id', { param: 'previous_response_id' });
  const asArray = await daemon.call('POST', RESPONSES.path, { token: key.key, body: RESPONSES.body(MODEL, 'ignored', { input: [{ role: 'user', content: 'hi' }] }) });
  t.equal(asArray.status, 200, 'input as an array of message objects');
  const streamed = await daemon.call('POST', RESPONSES.path, { token: key.key, body: RESPONSES.body(MODEL, 'hi', { stream: true }) });
  t.equal(streamed.status, 200, 'stream true');
  t.match(header(streamed, 'content-type') ?? '', /^text\/event-stream/, 'stream: Server-Sent Events');
});

t.test('POST /v1/messages: system and stream (spec: POST /v1/messages)', async (t) => {
  const res = await daemon.call('POST', MESSAGES.path, { token: key.key, body: MESSAGES.body('gemini/gemini-2.5-flash', 'hi', { system: 'be brief' }) });
  t.equal(res.status, 200, 'system as a string, a non-vendor model');
  conforms(t, res.body, DECIDED_MESSAGE_OBJECT, 'message');
  const streamed = await daemon.call('POST', MESSAGES.path, { token: key.key, body: MESSAGES.body(MODEL, 'hi', { stream: true }) });
  t.equal(streamed.status, 200, 'stream true');
  t.match(header(streamed, 'content-type') ?? '', /^text\/event-stream/, 'stream: Server-Sent Events');
  t.ok(sseFrames(streamed.text).some((f) => f.event === 'message_stop'), 'the stream ends with message_stop');
});

t.test('GET /health/ready with every dependency healthy: ready, ok, ok (spec: GET /health/ready)', { skip: redisSkipReason() }, async (t) => {
  const prefix = `contract-${randomUUID()}:`;
  const withRedis = await startTestGateway({ redis: { url: REDIS_URL, key_prefix: prefix } });
  t.teardown(async () => {
    if (withRedis.app.redis) await dropPrefix(withRedis.app.redis, prefix);
    await withRedis.stop();
  });
  const res = await withRedis.http<unknown>('GET', '/health/ready');
  t.equal(res.status, 200);
  conforms(t, res.body, READY_ALL_HEALTHY, '/health/ready with Redis');
  const live = await withRedis.http<unknown>('GET', '/health');
  conforms(t, live.body, HEALTH, '/health with Redis');
});
