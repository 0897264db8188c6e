import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentTurn, type AgentTurn } from '../simulator/agent.js';
import { agentPrompt, codexMissing, ensureClaudeBinary, prepare, run, startEgressGuard, type AgentClient } from './clients.js';

/**
 * Records what the real coding agents send: starts a small HTTP server speaking just enough
 * Anthropic Messages (JSON and SSE, count_tokens) and OpenAI Responses (SSE and JSON) to drive
 * Claude Code and Codex through a shell-tool task (turn 1: a tool call running the marker's echo;
 * turn 2: the tool's result → a text quoting it; side requests get a plain text), and saves
 * every request into test/fixtures/agents/<client>/NN-<purpose>.json, keys redacted.
 *
 *   node --import tsx test/support/agents/record.ts [claude-code] [codex]
 *
 * On Linux with user namespaces, it re-runs itself under `unshare -rn` (a network namespace with
 * only loopback), so that nothing the clients do can leave the machine; either way HTTP(S)_PROXY
 * point at a guard that refuses and reports any other destination.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const FIXTURES = process.env.RECORD_OUT ?? join(ROOT, 'test/fixtures/agents');
const KEY = `sk-recorder-${randomBytes(12).toString('hex')}`;
/**
 * What is recorded: each client with a catalog id (as the e2e test runs it through the gateway),
 * in test/fixtures/agents/<client>/; and a variant where the client behaves differently by model
 * (Claude Code with a model name it does not know as Claude's; Codex with a model it knows, which
 * brings its full tool set), in a sub-directory.
 */
const RECORDINGS: Array<{ client: AgentClient; model: string; dir: string }> = [
  { client: 'claude-code', model: 'anthropic/claude-sonnet-4-5', dir: 'claude-code' },
  { client: 'claude-code', model: 'openai/gpt-5', dir: 'claude-code/openai-gpt-5' },
  { client: 'codex', model: 'openai/gpt-5', dir: 'codex' },
  { client: 'codex', model: 'gpt-5.5', dir: 'codex/known-model-gpt-5.5' },
];

const clients = process.argv.slice(2).filter((a) => a === 'claude-code' || a === 'codex') as AgentClient[];
const wanted = RECORDINGS.filter((r) => clients.length === 0 || clients.includes(r.client));

if (process.env.RECORD_ISOLATED !== '1' && process.platform === 'linux' && process.env.RECORD_NO_ISOLATION !== '1') {
  const probe = spawnSync('unshare', ['-rn', 'true']);
  if (probe.status === 0) {
    const inner = spawnSync('unshare', ['-rn', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
      stdio: 'inherit',
      env: { ...process.env, RECORD_ISOLATED: '1' },
    });
    process.exit(inner.status ?? 1);
  }
  process.stderr.write('record: unshare -rn is not available; recording without a network namespace (the egress guard still refuses other hosts)\n');
}

interface Recorded {
  index: number;
  purpose: string;
  method: string;
  path: string;
  query: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  answer: unknown;
}

const SECRET_HEADERS = new Set(['authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'cookie', 'proxy-authorization']);

function redactHeaders(headers: IncomingMessage['headers']): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!SECRET_HEADERS.has(name)) out[name] = value;
    else if (typeof value === 'string' && value.includes(KEY)) out[name] = value.split(KEY).join('sk-REDACTED');
    else out[name] = 'REDACTED';
  }
  return out;
}

/** Redacts the key wherever it shows up in a body. */
function redactBody(text: string): string {
  return text.split(KEY).join('sk-REDACTED');
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => ok(Buffer.concat(chunks).toString('utf8')));
    req.on('error', fail);
  });
}

const rid = (prefix: string, n = 24): string => `${prefix}${randomBytes(n).toString('hex').slice(0, n)}`;

function tokensOf(value: unknown): number {
  return Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));
}

function purposeOf(turn: AgentTurn | undefined, body: Record<string, unknown>, kind: 'messages' | 'responses'): string {
  if (turn?.type === 'tool') return 'tool-call';
  if (turn?.type === 'text') return 'tool-result';
  const hints: string[] = [];
  if (body.max_tokens === 1) hints.push('quota');
  if (!body.tools || (Array.isArray(body.tools) && body.tools.length === 0)) {
    const system = JSON.stringify(kind === 'messages' ? (body.system ?? '') : (body.instructions ?? '')).toLowerCase();
    if (system.includes('title')) hints.push('title');
    else if (system.includes('summar')) hints.push('summary');
    else hints.push('no-tools');
  }
  return ['side', ...hints].join('-');
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages

function anthropicAnswer(turn: AgentTurn | undefined, model: string, inputTokens: number): { content: Array<Record<string, unknown>>; stop: string; usage: Record<string, unknown> } {
  const content: Array<Record<string, unknown>> = [];
  let stop = 'end_turn';
  if (turn?.type === 'tool') {
    content.push({ type: 'tool_use', id: rid('toolu_01', 22), name: turn.tool.name, input: turn.arguments });
    stop = 'tool_use';
  } else content.push({ type: 'text', text: turn?.type === 'text' ? turn.text : `Hello from the recorder (model ${model}).` });
  const usage = { input_tokens: inputTokens, output_tokens: tokensOf(content), cache_creation_input_tokens: 0, cache_read_input_tokens: 0, service_tier: 'standard' };
  return { content, stop, usage };
}

function sendAnthropic(res: ServerResponse, body: Record<string, unknown>, turn: AgentTurn | undefined): unknown {
  const model = String(body.model ?? '');
  const answer = anthropicAnswer(turn, model, tokensOf(body.messages) + tokensOf(body.system) + tokensOf(body.tools));
  const id = rid('msg_01', 22);
  const message = { id, type: 'message', role: 'assistant', model, content: answer.content, stop_reason: answer.stop, stop_sequence: null, usage: answer.usage };
  const headers = { 'request-id': rid('req_011C', 20) };
  if (body.stream !== true) {
    res.writeHead(200, { ...headers, 'content-type': 'application/json' });
    res.end(JSON.stringify(message));
    return message;
  }
  res.writeHead(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const event = (type: string, data: Record<string, unknown>): void => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };
  event('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...answer.usage, output_tokens: 1 } } });
  answer.content.forEach((block, index) => {
    if (block.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('ping', {});
      event('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    } else {
      event('content_block_start', { index, content_block: { ...block, input: {} } });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', { delta: { stop_reason: answer.stop, stop_sequence: null }, usage: { output_tokens: answer.usage.output_tokens } });
  event('message_stop', {});
  res.end();
  return message;
}

// ---------------------------------------------------------------------------------------------
// OpenAI Responses

function responsesOutput(turn: AgentTurn | undefined, model: string): Array<Record<string, unknown>> {
  if (turn?.type === 'tool') {
    const callId = rid('call_', 24);
    const { tool } = turn;
    if (tool.kind === 'custom') return [{ type: 'custom_tool_call', id: rid('ctc_', 32), status: 'completed', call_id: callId, name: tool.name, input: turn.arguments as string }];
    if (tool.kind === 'local_shell') return [{ type: 'local_shell_call', id: rid('lsh_', 32), status: 'completed', call_id: callId, action: { type: 'exec', ...(turn.arguments as object) } }];
    return [
      {
        type: 'function_call',
        id: rid('fc_', 32),
        status: 'completed',
        call_id: callId,
        name: tool.name,
        ...(tool.namespace ? { namespace: tool.namespace } : {}),
        arguments: JSON.stringify(turn.arguments),
      },
    ];
  }
  const text = turn?.type === 'text' ? turn.text : `Hello from the recorder (model ${model}).`;
  return [{ type: 'message', id: rid('msg_', 32), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] }];
}

function sendResponses(res: ServerResponse, body: Record<string, unknown>, turn: AgentTurn | undefined): unknown {
  const model = String(body.model ?? '');
  const output = responsesOutput(turn, model);
  const inputTokens = tokensOf(body.input) + tokensOf(body.instructions) + tokensOf(body.tools);
  const outputTokens = tokensOf(output);
  const base = {
    id: rid('resp_', 32),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    store: false,
  };
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
  const completed = { ...base, status: 'completed', output, usage };
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': rid('req_', 32) });
    res.end(JSON.stringify(completed));
    return completed;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': rid('req_', 32) });
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>): void => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
  };
  event('response.created', { response: { ...base, status: 'in_progress', output: [], usage: null } });
  event('response.in_progress', { response: { ...base, status: 'in_progress', output: [], usage: null } });
  output.forEach((item, outputIndex) => {
    if (item.type === 'message') {
      const part = (item.content as Array<Record<string, unknown>>)[0] ?? { type: 'output_text', text: '' };
      event('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      event('response.content_part.added', { item_id: item.id, output_index: outputIndex, content_index: 0, part: { ...part, text: '' } });
      event('response.output_text.delta', { item_id: item.id, output_index: outputIndex, content_index: 0, delta: part.text, logprobs: [] });
      event('response.output_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text: part.text, logprobs: [] });
      event('response.content_part.done', { item_id: item.id, output_index: outputIndex, content_index: 0, part });
    } else if (item.type === 'function_call') {
      event('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
      event('response.function_call_arguments.delta', { item_id: item.id, output_index: outputIndex, delta: item.arguments });
      event('response.function_call_arguments.done', { item_id: item.id, output_index: outputIndex, arguments: item.arguments });
    } else if (item.type === 'custom_tool_call') {
      event('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', input: '' } });
      event('response.custom_tool_call_input.delta', { item_id: item.id, output_index: outputIndex, delta: item.input });
      event('response.custom_tool_call_input.done', { item_id: item.id, output_index: outputIndex, input: item.input });
    } else event('response.output_item.added', { output_index: outputIndex, item });
    event('response.output_item.done', { output_index: outputIndex, item });
  });
  event('response.completed', { response: completed });
  res.end();
  return completed;
}

// ---------------------------------------------------------------------------------------------
// One client's recording

async function record(client: AgentClient, model: string, into: string): Promise<void> {
  const missing = client === 'claude-code' ? await ensureClaudeBinary() : codexMissing();
  if (missing) throw new Error(missing);
  const dir = join(FIXTURES, into);
  mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(dir)) if (file.endsWith('.json')) rmSync(join(dir, file));

  const recorded: Recorded[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const url = new URL(req.url ?? '/', 'http://recorder.invalid');
      let body: unknown = raw;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        // kept as text
      }
      const entry: Recorded = {
        index: recorded.length + 1,
        purpose: 'other',
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.search.replace(/^\?/, ''),
        headers: redactHeaders(req.headers),
        body: JSON.parse(redactBody(JSON.stringify(body ?? null))),
        answer: null,
      };
      recorded.push(entry);
      const record = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
      if (req.method === 'POST' && url.pathname === '/v1/messages') {
        const turn = agentTurn('messages', record);
        entry.purpose = `messages-${purposeOf(turn, record, 'messages')}${record.stream === true ? '' : '-json'}`;
        entry.answer = sendAnthropic(res, record, turn);
      } else if (req.method === 'POST' && url.pathname === '/v1/messages/count_tokens') {
        entry.purpose = 'count-tokens';
        entry.answer = { input_tokens: tokensOf(record.messages) + tokensOf(record.system) + tokensOf(record.tools) };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(entry.answer));
      } else if (req.method === 'POST' && url.pathname === '/v1/responses') {
        const turn = agentTurn('responses', record);
        entry.purpose = `responses-${purposeOf(turn, record, 'responses')}${record.stream === true ? '' : '-json'}`;
        entry.answer = sendResponses(res, record, turn);
      } else {
        entry.purpose = `${entry.method.toLowerCase()}${url.pathname.replace(/[^a-z0-9]+/gi, '-')}`;
        entry.answer = { status: 404 };
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'not_found_error', message: `the recorder does not answer ${entry.method} ${url.pathname}` } }));
      }
    })().catch((error: unknown) => {
      process.stderr.write(`recorder failure: ${String(error)}\n`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  const guard = await startEgressGuard();
  const marker = 'AGENT-MARKER-rec0001';
  const prepared = prepare(client, { baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY, model, prompt: agentPrompt(marker), proxyUrl: guard.url });
  // Exploration: RECORD_UNSET=NAME,NAME drops some of the client's switches (e.g. to see the side requests they prevent).
  for (const name of (process.env.RECORD_UNSET ?? '').split(',').filter(Boolean)) delete prepared.env[name];
  process.stdout.write(`record ${client} (${model}): ${prepared.command} ${prepared.args.map((a) => JSON.stringify(a)).join(' ')}\n`);
  const result = await run(prepared.command, prepared.args, { cwd: prepared.cwd, env: prepared.env, timeoutMs: 180_000 });
  prepared.cleanup();
  server.closeAllConnections();
  await new Promise<void>((ok) => server.close(() => ok()));
  await guard.close();

  for (const entry of recorded) {
    const name = `${String(entry.index).padStart(2, '0')}-${entry.purpose}.json`;
    writeFileSync(join(dir, name), JSON.stringify(entry, null, 2) + '\n');
  }
  const transcript = {
    exit: { code: result.code, signal: result.signal, timedOut: result.timedOut, ms: result.ms },
    stdout: redactBody(result.stdout),
    stderr: redactBody(result.stderr).slice(-20_000),
    egressAttempts: guard.attempts,
  };
  writeFileSync(join(dir, '00-run.json'), JSON.stringify(transcript, null, 2) + '\n');
  process.stdout.write(
    `record ${client} (${model}): exit ${result.code}${result.timedOut ? ' (timed out)' : ''} in ${result.ms} ms; ${recorded.length} requests: ${recorded.map((e) => e.purpose).join(', ')}; egress attempts: ${guard.attempts.length}\n`,
  );
}

for (const { client, model, dir } of wanted) await record(client, model, dir);
