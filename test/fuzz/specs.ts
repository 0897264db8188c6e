import type { DaemonFixture } from './daemon.js';
import { Rng } from './rng.js';
import { clone, type Json } from './values.js';
import { type ErrorShape } from './wire.js';

/** What the fuzzer's inputs are built from: the fixture, the bases of every endpoint's bodies, and every route with its share. */

/** What the inputs use: the daemon's keys, session and ids (test/fuzz/daemon.ts makes them). */
export type Fixture = DaemonFixture;

export type Auth = 'sk' | 'akm' | 'session' | 'none';

export interface Spec {
  /** As registered: `POST /v1/chat/completions`. */
  name: string;
  method: string;
  /** The path, its parameters filled (valid ones or junk). */
  path: (rng: Rng, f: Fixture) => string;
  auth: Auth;
  shape: ErrorShape;
  /** A 2xx of it may charge the funded key. */
  billable?: boolean;
  /** Well-formed bodies the mutations start from (JSON endpoints). */
  bases?: (f: Fixture) => Json[];
  /** Known fields the bases leave out (added with bad values). */
  extras?: readonly string[];
  /** Known query parameters (given junk values). */
  query?: readonly string[];
  /** Headers the route needs (MCP's accept). */
  headers?: (rng: Rng, f: Fixture) => Record<string, string>;
  /** Multipart as well as JSON (transcriptions). */
  multipart?: boolean;
  /** Relative share of the inputs. */
  weight: number;
  /** Never send the live session (a valid logout would end it). */
  noLiveSession?: boolean;
}

export const CHAT_MODELS = ['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5', 'gemini/gemini-2.5-flash', 'gpt-4o-mini', 'groq/llama-3.3-70b-versatile', 'nope/nope'];
const JUNK_IDS = ['', '%00', '%ZZ', '..', '%2e%2e', 'me%00', 'acc_', 'key_0000', 'x'.repeat(3000), '%F0%9F%98%80', '%FF%FE', '1e309', '-1', '0', 'null', 'undefined', '__proto__', 'constructor', "'%20OR%201=1", 'a%2Fb', '%252F', ';', '*', '~', 'sk-123'];

const junkId = (rng: Rng): string => rng.pick(JUNK_IDS) || rng.word();
const realOrJunk = (rng: Rng, real: string[]): string => (rng.chance(0.45) ? rng.pick(real) : junkId(rng));

function chatBases(): Json[] {
  const tool = { type: 'function', function: { name: 'get_time', description: 'the time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } } };
  return CHAT_MODELS.flatMap((model) => [
    {
      model,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi', name: 'fuzz' },
      ],
      max_tokens: 16,
      temperature: 0.2,
      top_p: 1,
      stop: ['\n\n'],
      seed: 7,
      user: 'fuzz',
      stream: false,
      tools: [tool],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      response_format: { type: 'text' },
      cache: false,
      no_cache: true,
      n: 1,
      models: ['openai/gpt-4o'],
    },
    {
      model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: '12:00' }] },
      ],
      tools: [tool],
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
      max_completion_tokens: 32,
    },
  ]);
}

function responsesBases(): Json[] {
  return CHAT_MODELS.flatMap((model) => [
    {
      model,
      input: 'hi',
      instructions: 'be brief',
      max_output_tokens: 16,
      temperature: 0.5,
      top_p: 1,
      stream: false,
      store: false,
      tools: [{ type: 'function', name: 'get_time', description: 'the time', parameters: { type: 'object', properties: {} } }],
      tool_choice: 'auto',
      text: { format: { type: 'text' } },
      parallel_tool_calls: true,
      metadata: { k: 'v' },
      reasoning: { effort: 'low', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      user: 'fuzz',
    },
    {
      model,
      stream: true,
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }, { type: 'input_image', image_url: 'https://example.com/a.png' }] },
        { type: 'function_call', call_id: 'c1', name: 'get_time', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: '12:00' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] },
      ],
      tools: [{ type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } }],
      tool_choice: { type: 'function', name: 'get_time' },
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' } } },
      models: ['openai/gpt-4o'],
    },
  ]);
}

function messagesBases(countTokens: boolean): Json[] {
  const tool = { name: 'get_time', description: 'the time', input_schema: { type: 'object', properties: {} } };
  return CHAT_MODELS.flatMap((model) => {
    const bodies: Record<string, Json | undefined>[] = [
      {
        model,
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
        system: 'be brief',
        temperature: 0.5,
        top_p: 1,
        top_k: 5,
        stop_sequences: ['\n'],
        metadata: { user_id: 'fuzz' },
        stream: false,
        tools: [tool],
        tool_choice: { type: 'auto' },
        thinking: { type: 'disabled' },
      },
      {
        model,
        max_tokens: 4096,
        stream: true,
        system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral', ttl: '5m' } }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] },
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, { type: 'tool_use', id: 't1', name: 'get_time', input: { tz: 'UTC' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: '12:00' }], is_error: false }] },
        ],
        tools: [tool],
        tool_choice: { type: 'tool', name: 'get_time', disable_parallel_tool_use: true },
        thinking: { type: 'enabled', budget_tokens: 2048 },
        output_config: { effort: 'high' },
      },
    ];
    if (countTokens) for (const body of bodies) delete body.max_tokens;
    return bodies as Json[];
  });
}

const SESSION_KEY_BASE: Json = { name: 'fuzz key', rate_limit: 60, budget: 1.5, expires_at: '2099-01-01', cache: true };

function keyCreateBases(kind: 'api' | 'management'): Json[] {
  return kind === 'api' ? [clone(SESSION_KEY_BASE), { name: 'k2', expires_at: '2099-12-31T23:59:59Z' }] : [{ name: 'fuzz mgmt', expires_at: '2099-01-01' }];
}

function accountBases(): Json[] {
  return [{ email: 'fuzz-new@example.com', name: 'Fuzz New', password: 'password-123', role: 'user' }];
}

function topupBases(): Json[] {
  return [{ amount: 1.5, reference: 'fuzz-ref', note: 'fuzz' }];
}

function mcpBases(f: Fixture): Json[] {
  const call = (name: string, args: Json): Json => ({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name, arguments: args } });
  return [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1.0' } } },
    { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
    call('get_balance', { account_id: f.scratchId }),
    call('list_models', { type: 'chat' }),
    call('estimate_cost', { model: 'openai/gpt-4o-mini', input_tokens: 10, output_tokens: 10 }),
    call('list_ledger', { account_id: f.scratchId, limit: 5 }),
    call('top_up_wallet', { account_id: f.scratchId, amount: 1, reference: 'mcp-fuzz' }),
    call('create_account', { email: 'mcp-fuzz@example.com', name: 'MCP fuzz' }),
    [{ jsonrpc: '2.0', id: 4, method: 'ping' }, { jsonrpc: '2.0', method: 'notifications/initialized' }],
  ];
}

const USAGE_QUERY = ['api_key_id', 'model', 'endpoint', 'status', 'since', 'until', 'limit', 'before'];

/** Every route the router registers (grep "router.add(" src), with its share of the inputs. */
export function specs(): Spec[] {
  const ok = (path: string) => () => path;
  const json = (name: string, auth: Auth, bases: Spec['bases'], weight: number, extra: Partial<Spec> = {}): Spec => {
    const [method, path] = name.split(' ') as [string, string];
    return { name, method, path: ok(path), auth, shape: 'openai', bases, weight, ...extra };
  };
  const get = (name: string, auth: Auth, weight: number, extra: Partial<Spec> = {}): Spec => {
    const [method, path] = name.split(' ') as [string, string];
    return { name, method, path: ok(path), auth, shape: 'openai', weight, ...extra };
  };
  const accountPath = (suffix: string) => (rng: Rng, f: Fixture) => `/api/management/accounts/${realOrJunk(rng, [f.scratchId, f.scratchEmail, 'me'])}${suffix}`;
  return [
    // Inference (sk-)
    json('POST /v1/chat/completions', 'sk', chatBases, 15, { billable: true, extras: ['logprobs', 'top_logprobs', 'frequency_penalty', 'presence_penalty', 'logit_bias', 'modalities', 'audio', 'prediction', 'reasoning_effort', 'metadata', 'store', 'service_tier'] }),
    json('POST /v1/responses', 'sk', responsesBases, 10, { billable: true, extras: ['previous_response_id', 'conversation', 'background', 'prompt_cache_key', 'truncation', 'service_tier', 'stream_options', 'safety_identifier', 'client_metadata'] }),
    json('POST /v1/messages', 'sk', () => messagesBases(false), 10, { billable: true, shape: 'anthropic', extras: ['container', 'mcp_servers', 'service_tier', 'context_management'] }),
    json('POST /v1/messages/count_tokens', 'sk', () => messagesBases(true), 5, { shape: 'anthropic' }),
    json('POST /v1/embeddings', 'sk', () => [
      { model: 'openai/text-embedding-3-small', input: ['the quick', 'brown fox'], encoding_format: 'float', dimensions: 8, user: 'fuzz' },
      { model: 'text-embedding-3-small', input: [[1, 2, 3], [4, 5]], encoding_format: 'base64' },
      { model: 'gemini/gemini-embedding-001', input: 'hello' },
    ], 6, { billable: true }),
    json('POST /v1/audio/speech', 'sk', () => [
      { model: 'openai/tts-1', input: 'hello there', voice: 'alloy', response_format: 'mp3', speed: 1, instructions: 'calm', stream_format: 'audio' },
      { model: 'deepgram/aura-2', input: 'hello', voice: 'nova', response_format: 'wav' },
    ], 5, { billable: true }),
    json('POST /v1/audio/transcriptions', 'sk', () => [
      { model: 'openai/whisper-1', input_audio: { data: 'SUQzBAAAAAAAI1RTU0UAAAAPAAADTGF2ZjU4Ljc2LjEwMAAAAAAAAAAAAAAA', format: 'mp3' }, language: 'en', prompt: 'fuzz', response_format: 'json', temperature: 0, timestamp_granularities: ['segment'] },
      { model: 'deepgram/nova-3', input_audio: { data: 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=', format: 'wav' } },
    ], 10, { billable: true, multipart: true }),
    json('POST /v1/images/generations', 'sk', () => [
      { model: 'openai/gpt-image-1', prompt: 'a cat', n: 1, size: '1024x1024', quality: 'low', response_format: 'b64_json', user: 'fuzz' },
      { model: 'openai/dall-e-3', prompt: 'a dog', size: '1792x1024', quality: 'hd', style: 'vivid' },
      { prompt: 'a default model' },
    ], 5, { billable: true }),
    get('GET /v1/credits', 'sk', 1),
    // Public
    get('GET /health', 'none', 0.5),
    get('GET /health/ready', 'none', 0.5),
    get('GET /v1/models', 'none', 0.5),
    { ...get('GET /v1/models/*id', 'none', 1), path: (rng) => `/v1/models/${rng.chance(0.4) ? rng.pick(['openai/gpt-4o-mini', 'gpt-4o-mini', 'anthropic/claude-haiku-4-5']) : `${junkId(rng)}/${junkId(rng)}`}` },
    get('GET /api/models', 'none', 0.5),
    { ...get('GET /v1/images/files/:name', 'none', 0.5), path: (rng) => `/v1/images/files/${junkId(rng)}` },
    { ...get('GET /assets/*file', 'none', 0.3), path: (rng) => `/assets/${junkId(rng)}` },
    get('GET /favicon.ico', 'none', 0.2),
    get('GET /', 'none', 0.2),
    // Auth
    json('POST /api/auth/signup', 'none', () => [{ email: 'fuzz-signup@example.com', password: 'password-123', name: 'Fuzz' }], 4),
    json('POST /api/auth/login', 'none', (f) => [{ email: f.adminEmail, password: 'wrong-password' }, { email: 'nobody@example.com', password: 'password-123' }], 4),
    // Never the live session: a valid logout would end it.
    json('POST /api/auth/logout', 'none', () => [{}], 1, { noLiveSession: true }),
    get('GET /api/auth/me', 'session', 1),
    // Session keys
    json('POST /api/api-keys', 'session', () => keyCreateBases('api'), 3),
    get('GET /api/api-keys', 'session', 0.5),
    { ...get('GET /api/api-keys/:id', 'session', 0.7), path: (rng, f) => `/api/api-keys/${realOrJunk(rng, [f.adminApiKeyId])}` },
    { ...json('PATCH /api/api-keys/:id', 'session', () => [{ name: 'renamed', rate_limit: 100, budget: 0, expires_at: null, cache: false }], 2), path: (rng, f) => `/api/api-keys/${realOrJunk(rng, [f.adminApiKeyId])}` },
    { ...get('DELETE /api/api-keys/:id', 'session', 0.5), path: (rng) => `/api/api-keys/${junkId(rng)}` },
    json('POST /api/management-keys', 'session', () => keyCreateBases('management'), 1.5),
    get('GET /api/management-keys', 'session', 0.5),
    { ...get('GET /api/management-keys/:id', 'session', 0.5), path: (rng, f) => `/api/management-keys/${realOrJunk(rng, [f.adminMgmtKeyId])}` },
    { ...get('DELETE /api/management-keys/:id', 'session', 0.5), path: (rng) => `/api/management-keys/${junkId(rng)}` },
    // Dashboard (session)
    get('GET /api/dashboard/overview', 'session', 0.7),
    get('GET /api/dashboard/daily', 'session', 1, { query: ['days'] }),
    get('GET /api/usage', 'session', 1.5, { query: USAGE_QUERY }),
    get('GET /api/usage/export.csv', 'session', 1, { query: USAGE_QUERY }),
    get('GET /api/usage/stream', 'session', 0.7, { query: USAGE_QUERY }),
    get('GET /api/wallet/ledger', 'session', 1, { query: ['limit', 'before'] }),
    // Admin pages (an admin's session)
    get('GET /api/admin/accounts', 'session', 0.7, { query: ['limit', 'offset'] }),
    json('POST /api/admin/accounts', 'session', accountBases, 2),
    { ...json('POST /api/admin/accounts/:id/topups', 'session', topupBases, 2), path: (rng, f) => `/api/admin/accounts/${realOrJunk(rng, [f.scratchId, f.scratchEmail])}/topups` },
    { ...get('GET /api/admin/accounts/:id/api-keys', 'session', 0.5), path: (rng, f) => `/api/admin/accounts/${realOrJunk(rng, [f.scratchId, f.scratchEmail])}/api-keys` },
    get('GET /api/admin/usage', 'session', 1, { query: ['account_id', ...USAGE_QUERY] }),
    get('GET /api/admin/routes', 'session', 0.5, { query: ['model', 'active'] }),
    // Management API (akm-)
    get('GET /api/management/me', 'akm', 0.5),
    get('GET /api/management/accounts', 'akm', 1, { query: ['email', 'limit', 'offset'] }),
    json('POST /api/management/accounts', 'akm', accountBases, 3),
    { ...get('GET /api/management/accounts/:account', 'akm', 0.7), path: accountPath('') },
    { ...get('GET /api/management/accounts/:account/balance', 'akm', 0.7), path: accountPath('/balance') },
    { ...json('POST /api/management/accounts/:account/topups', 'akm', topupBases, 3), path: accountPath('/topups') },
    { ...get('GET /api/management/accounts/:account/ledger', 'akm', 1, { query: ['limit', 'before'] }), path: accountPath('/ledger') },
    { ...json('POST /api/management/accounts/:account/api-keys', 'akm', () => keyCreateBases('api'), 2.5), path: accountPath('/api-keys') },
    { ...get('GET /api/management/accounts/:account/api-keys', 'akm', 0.5), path: accountPath('/api-keys') },
    { ...json('POST /api/management/accounts/:account/management-keys', 'akm', () => keyCreateBases('management'), 1.5), path: accountPath('/management-keys') },
    { ...get('GET /api/management/accounts/:account/management-keys', 'akm', 0.5), path: accountPath('/management-keys') },
    { ...get('GET /api/management/api-keys/:id', 'akm', 0.5), path: (rng, f) => `/api/management/api-keys/${realOrJunk(rng, [f.scratchKeyId])}` },
    { ...json('PATCH /api/management/api-keys/:id', 'akm', () => [{ name: 'renamed', rate_limit: 100, budget: 2, expires_at: '2099-01-01', cache: true }], 2.5), path: (rng, f) => `/api/management/api-keys/${realOrJunk(rng, [f.scratchKeyId])}` },
    { ...get('DELETE /api/management/api-keys/:id', 'akm', 0.5), path: (rng) => `/api/management/api-keys/${junkId(rng)}` },
    { ...get('GET /api/management/management-keys/:id', 'akm', 0.5), path: (rng, f) => `/api/management/management-keys/${realOrJunk(rng, [f.adminMgmtKeyId])}` },
    { ...get('DELETE /api/management/management-keys/:id', 'akm', 0.5), path: (rng) => `/api/management/management-keys/${junkId(rng)}` },
    get('GET /api/management/usage', 'akm', 1.5, { query: ['account', 'key', 'model', 'limit', 'since', 'until', 'before'] }),
    get('GET /api/management/usage/stream', 'akm', 0.7, { query: ['account', 'key', 'model', 'since', 'limit'] }),
    get('GET /api/management/routes', 'akm', 0.5, { query: ['model', 'active'] }),
    get('GET /api/management/cache', 'akm', 0.5),
    get('DELETE /api/management/cache', 'akm', 0.5, { query: ['account'] }),
    // MCP (akm-)
    {
      ...json('POST /mcp', 'akm', mcpBases, 6, { shape: 'mcp' }),
      headers: (rng, f) => ({ accept: 'application/json, text/event-stream', ...(rng.chance(0.6) ? { 'mcp-session-id': rng.chance(0.8) ? f.mcpSession : junkId(rng) || 'x' } : {}), ...(rng.chance(0.3) ? { 'mcp-protocol-version': rng.pick(['2025-06-18', '1999-01-01', '', 'x'.repeat(300)]) } : {}) }),
    },
    { ...get('GET /mcp', 'akm', 0.7, { shape: 'mcp' }), headers: (rng, f) => ({ accept: 'text/event-stream', ...(rng.chance(0.7) ? { 'mcp-session-id': rng.chance(0.3) ? f.mcpSession : `${junkId(rng)}x` } : {}) }) },
    // Never the live MCP session: a valid DELETE would end it.
    { ...get('DELETE /mcp', 'akm', 0.5, { shape: 'mcp' }), headers: (rng): Record<string, string> => (rng.chance(0.7) ? { 'mcp-session-id': `${junkId(rng)}x` } : {}) },
  ];
}
