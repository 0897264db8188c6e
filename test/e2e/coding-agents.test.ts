import { randomBytes } from 'node:crypto';
import t from 'tap';
import type { UsageRecord } from '../../src/store/usage.js';
import { agentPrompt, codexMissing, ensureClaudeBinary, killClients, prepare, run, startEgressGuard, type AgentClient, type RunResult } from '../support/agents/clients.js';
import { balanceMicros } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey } from '../support/gateway.js';
import { agentTurn, type Shape } from '../support/simulator/agent.js';
import { ProviderSimulator, type RecordedRequest } from '../support/simulator/server.js';

/**
 * Issue 27: the real coding agents — Claude Code (@anthropic-ai/claude-code 2.1.328, Anthropic
 * Messages) and Codex CLI (@openai/codex 0.169.0, OpenAI Responses), as installed by `npm ci` —
 * run headless against a gateway daemon whose providers are the provider simulator, on an
 * Anthropic, an OpenAI and a Gemini model each. The simulator plays the model (agent.ts): asked
 * to run `echo AGENT-MARKER-…`, it calls the client's shell tool; given the tool's output, it
 * answers `The command printed: AGENT-MARKER-…`. Each run must finish that task (two model
 * calls around a real shell command), every call must be billed to the µINR to the client's
 * key and shown in the usage view, and nothing may leave the machine (the clients' proxies
 * point at a guard that refuses everything; see test/support/agents/clients.ts for the switches).
 */

/** An Anthropic, an OpenAI and a Gemini chat model (CODING_AGENT_MODELS=id,id,… to try others). */
const MODELS = process.env.CODING_AGENT_MODELS?.split(',').filter(Boolean) ?? ['anthropic/claude-sonnet-4-5', 'openai/gpt-5', 'gemini/gemini-2.5-flash'];
const CLIENTS: AgentClient[] = ['claude-code', 'codex'];
/** Each run must end well under a minute. */
const RUN_TIMEOUT_MS = 45_000;

const missing: Record<AgentClient, string | undefined> = { 'claude-code': await ensureClaudeBinary(), codex: codexMissing() };

const sim = await ProviderSimulator.start();
t.teardown(() => sim.close());
/** Claude Code's own default model names, mapped as a team would (README "Aliases"). */
const ALIASES = { 'claude-opus-5-5': 'anthropic/claude-sonnet-4-5', 'claude-haiku-5-5': 'openai/gpt-4o-mini', 'claude-*': 'gemini/gemini-2.5-flash' };
/**
 * The OpenAI provider takes the responses format natively (`responses: true`): Codex's calls to
 * OpenAI models go to its /v1/responses as Codex sent them, Claude Code's (messages) are
 * translated to chat completions.
 */
const providers = simulatedProviders(sim.url) as Record<string, Record<string, unknown>>;
providers.openai = { ...providers.openai, responses: true };
const gw = await startTestGateway({ providers, aliases: ALIASES });
t.teardown(() => gw.stop());
const guard = await startEgressGuard();
t.teardown(() => guard.close());
t.teardown(() => killClients());

/** The request shape each upstream family receives, for agentTurn. */
function shapeOf(request: RecordedRequest): Shape {
  if (request.family === 'anthropic') return 'messages';
  if (request.family === 'gemini') return 'gemini';
  return request.path.endsWith('/responses') ? 'responses' : 'chat';
}

/** What a run printed as its final answer: Claude Code's JSON `result`; Codex's last agent_message (JSONL events). */
function finalAnswer(client: AgentClient, result: RunResult): { answer: string | undefined; commandOutputs: string[]; error?: string } {
  if (client === 'claude-code') {
    try {
      const out = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '');
      return { answer: typeof out.result === 'string' ? out.result : undefined, commandOutputs: [], ...(out.is_error ? { error: String(out.result ?? out.subtype) } : {}) };
    } catch {
      return { answer: undefined, commandOutputs: [] };
    }
  }
  let answer: string | undefined;
  const commandOutputs: string[] = [];
  const errors: string[] = [];
  for (const line of result.stdout.split('\n')) {
    let event: any;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    if (event.type === 'item.completed' && event.item?.type === 'agent_message') answer = event.item.text;
    if (event.type === 'item.completed' && event.item?.type === 'command_execution' && event.item.exit_code === 0) commandOutputs.push(String(event.item.aggregated_output ?? ''));
    if (event.type === 'turn.failed' || event.type === 'error') errors.push(JSON.stringify(event));
  }
  return { answer, commandOutputs, ...(errors.length > 0 ? { error: errors.join('\n') } : {}) };
}

interface Tokens {
  /** The whole prompt, cache reads and writes included. */
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cacheWrite1h: number;
}

/** The tokens an upstream's own usage reports (where the simulator keeps it: Anthropic, Responses), in one convention. */
function wireTokens(request: RecordedRequest): Tokens | undefined {
  const u = request.usage as Record<string, any> | undefined;
  if (!u) return undefined;
  if (request.family === 'anthropic') {
    const cacheWrite = u.cache_creation_input_tokens ?? 0;
    const cacheRead = u.cache_read_input_tokens ?? 0;
    return { input: u.input_tokens + cacheWrite + cacheRead, output: u.output_tokens, cacheRead, cacheWrite, cacheWrite1h: u.cache_creation?.ephemeral_1h_input_tokens ?? 0 };
  }
  if (typeof u.input_tokens === 'number') {
    return { input: u.input_tokens, output: u.output_tokens, cacheRead: u.input_tokens_details?.cached_tokens ?? 0, cacheWrite: 0, cacheWrite1h: 0 };
  }
  return undefined;
}

/** µINR at the catalog's prices (µINR per 1M tokens): Σ tokens × price, rounded up once. */
function bill(model: string, tokens: Tokens): number {
  const pricing = gw.app.catalog.get(model)?.pricing;
  if (!pricing) throw new Error(`no pricing for ${model}`);
  const write = BigInt(pricing.cacheWritePer1M ?? pricing.inputPer1M);
  const total =
    BigInt(tokens.input - tokens.cacheRead - tokens.cacheWrite) * BigInt(pricing.inputPer1M) +
    BigInt(tokens.cacheRead) * BigInt(pricing.cacheReadPer1M ?? pricing.inputPer1M) +
    BigInt(tokens.cacheWrite - tokens.cacheWrite1h) * write +
    BigInt(tokens.cacheWrite1h) * BigInt(pricing.cacheWrite1hPer1M ?? write) +
    BigInt(tokens.output) * BigInt(pricing.outputPer1M);
  return Number((total + 999_999n) / 1_000_000n);
}

/** The gateway's usage rows of a key (all pages). */
async function rowsOfKey(keyId: string): Promise<UsageRecord[]> {
  return (await gw.app.store.usage.list({ limit: 1000 })).filter((row) => row.apiKeyId === keyId);
}

/** A run's output, cut for a test message. */
function excerpt(result: RunResult): string {
  return `exit ${result.code}${result.timedOut ? ' (timed out)' : ''} after ${result.ms} ms\nstdout: ${result.stdout.slice(-4000)}\nstderr: ${result.stderr.slice(-4000)}`;
}

for (const client of CLIENTS) {
  // Skipped (with the reason) only when npm ci could not install the client's binary.
  const skip = missing[client] ? { skip: `${client} is not installed: ${missing[client]}` } : {};
  t.test(client, skip, async (t) => {
    const funded: FundedKey = await fundedKey(gw, { balance: 1000, key: { name: client } });
    const balanceBefore = await balanceMicros(gw, funded.accountId);

    for (const model of MODELS) {
      await t.test(`${client} × ${model}`, async (t) => {
        const marker = `AGENT-MARKER-${randomBytes(6).toString('hex')}`;
        const upstreamBefore = sim.requests.length;
        const rowsBefore = new Set((await rowsOfKey(funded.keyId)).map((row) => row.id));
        const prepared = prepare(client, { baseUrl: gw.url, apiKey: funded.key, model, prompt: agentPrompt(marker), proxyUrl: guard.url });
        t.teardown(() => prepared.cleanup());
        const result = await run(prepared.command, prepared.args, { cwd: prepared.cwd, env: prepared.env, timeoutMs: RUN_TIMEOUT_MS });

        // What reached the provider during this run: the first call asked for the shell tool,
        // a later one carried the tool's output back (the simulator's agent answered both).
        const upstream = sim.requests.slice(upstreamBefore);
        const turns = upstream.map((request) => agentTurn(shapeOf(request), request.body));
        const upstreamSummary = upstream.map((r, i) => `${r.family} ${r.path} → ${turns[i]?.type ?? 'default reply'}`).join('; ');

        const diagnostics = { run: excerpt(result) };
        t.notOk(result.timedOut, `${client} finished within ${RUN_TIMEOUT_MS} ms`, diagnostics);
        t.equal(result.code, 0, `${client} exited 0`, diagnostics);
        const { answer, commandOutputs, error } = finalAnswer(client, result);
        t.notOk(error, `no error reported by ${client}${error ? `: ${error}` : ''}`);
        t.equal(answer?.trim(), `The command printed: ${marker}`, 'the final answer quotes what the echo printed', diagnostics);
        if (client === 'codex') t.ok(commandOutputs.some((out) => out.includes(marker)), 'Codex ran the command and it printed the marker', diagnostics);

        t.ok(upstream.length >= 2, `at least two model calls reached the provider (${upstreamSummary})`);
        t.ok(upstream.every((r) => r.model !== ''), 'each upstream call names a model');
        t.ok(turns.some((turn) => turn?.type === 'tool'), `the provider was asked with the shell tool offered and answered with a call of it (${upstreamSummary})`);
        t.ok(turns.some((turn) => turn?.type === 'text' && turn.text.includes(marker)), `the tool's output (the marker) came back to the provider (${upstreamSummary})`);

        // The usage view (management API) shows each turn of the run: one row per model call, billed, on this key and model.
        gw.app.settlement.drain();
        const listed = await gw.http('GET', `/api/management/usage?key=${funded.keyId}&limit=1000`, { token: gw.adminKey });
        t.equal(listed.status, 200, 'GET /api/management/usage');
        const rows = (listed.body.data as Array<Record<string, any>>).filter((row) => !rowsBefore.has(row.id));
        t.equal(rows.length, upstream.length, `one usage row per model call (${rows.length} rows, ${upstream.length} upstream calls)`);
        for (const row of rows) {
          t.match(row, { api_key_id: funded.keyId, model, status: 200, error_type: null }, `usage row ${row.request_id}: ${row.endpoint}, billed to the key`);
          t.ok(row.cost > 0 && row.input_tokens > 0, `usage row ${row.request_id} has tokens and a cost (${row.input_tokens} in, ${row.output_tokens} out, ${row.cost} INR)`);
        }
        t.ok(rows.every((row) => row.endpoint === (client === 'claude-code' ? 'messages' : 'responses')), `the rows name the client's endpoint (${rows.map((r) => r.endpoint).join(', ')})`);
        if (model.startsWith('openai/')) {
          const path = client === 'codex' ? '/v1/responses' : '/v1/chat/completions';
          t.ok(upstream.every((r) => r.path === path), `${client} on OpenAI reaches ${path} (${client === 'codex' ? 'natively' : 'translated'})`);
        }

        // Each call billed to the µINR: the row's cost is its tokens at the catalog's prices, and
        // its tokens are what the provider reported (where the simulator keeps its usage).
        const records = (await rowsOfKey(funded.keyId)).filter((row) => !rowsBefore.has(row.id)).sort((a, b) => a.id - b.id);
        records.forEach((row, i) => {
          const tokens: Tokens = { input: row.inputTokens, output: row.outputTokens, cacheRead: row.cacheReadTokens, cacheWrite: row.cacheWriteTokens, cacheWrite1h: 0 };
          const reported = upstream[i] ? wireTokens(upstream[i]) : undefined;
          if (reported) {
            t.same(
              { input: row.inputTokens, output: row.outputTokens, cacheRead: row.cacheReadTokens, cacheWrite: row.cacheWriteTokens },
              { input: reported.input, output: reported.output, cacheRead: reported.cacheRead, cacheWrite: reported.cacheWrite },
              `call ${i + 1}: the row's tokens are the provider's`,
            );
            tokens.cacheWrite1h = reported.cacheWrite1h;
          }
          t.equal(row.costMicros, bill(model, tokens), `call ${i + 1}: ${row.costMicros} µINR = its tokens at ${model}'s prices`);
          t.equal(row.unchargedMicros, 0, `call ${i + 1}: nothing left uncharged`);
        });
      });
    }

    // Every call of the client's runs, to the µINR: the usage rows' costs, the wallet's debit and the key's spend agree.
    gw.app.settlement.drain();
    const rows = await rowsOfKey(funded.keyId);
    const billed = rows.reduce((sum, row) => sum + row.costMicros, 0);
    const debit = balanceBefore - (await balanceMicros(gw, funded.accountId));
    const key = await gw.app.store.apiKeys.byId(funded.keyId);
    t.ok(rows.length >= 2 * MODELS.length, `${rows.length} usage rows for ${MODELS.length} runs`);
    t.equal(debit, billed, `wallet debit (${debit} µINR) = sum of the usage rows' costs (${billed} µINR)`);
    t.equal(key?.spentMicros, billed, `key spend (${key?.spentMicros} µINR) = sum of the usage rows' costs`);
  });
}

t.test("Claude Code with its own default model names, run by the aliases' targets", missing['claude-code'] ? { skip: `claude-code is not installed: ${missing['claude-code']}` } : {}, async (t) => {
  const funded = await fundedKey(gw, { balance: 1000, key: { name: 'claude-code-defaults' } });
  const balanceBefore = await balanceMicros(gw, funded.accountId);
  const marker = `AGENT-MARKER-${randomBytes(6).toString('hex')}`;
  const upstreamBefore = sim.requests.length;
  const prepared = prepare('claude-code', { baseUrl: gw.url, apiKey: funded.key, model: undefined, prompt: agentPrompt(marker), proxyUrl: guard.url });
  t.teardown(() => prepared.cleanup());
  const result = await run(prepared.command, prepared.args, { cwd: prepared.cwd, env: prepared.env, timeoutMs: RUN_TIMEOUT_MS });
  const diagnostics = { run: excerpt(result) };
  t.equal(result.code, 0, 'Claude Code exited 0', diagnostics);
  const { answer, error } = finalAnswer('claude-code', result);
  t.notOk(error, `no error reported${error ? `: ${error}` : ''}`);
  t.equal(answer?.trim(), `The command printed: ${marker}`, 'the task done', diagnostics);

  gw.app.settlement.drain();
  const rows = await rowsOfKey(funded.keyId);
  const upstream = sim.requests.slice(upstreamBefore);
  t.ok(rows.length >= 2, `${rows.length} usage rows`);
  for (const row of rows) {
    t.ok(row.requestedModel !== null && row.requestedModel in ALIASES || row.requestedModel?.startsWith('claude-'), `row ${row.requestId}: asked as ${row.requestedModel}, run by ${row.model} (status ${row.status})`);
    const target = (ALIASES as Record<string, string>)[row.requestedModel ?? ''] ?? ALIASES['claude-*'];
    t.equal(row.model, target, `${row.requestedModel} → ${target}`);
  }
  t.ok(upstream.length >= 2 && upstream.every((r) => r.model !== ''), `the targets' upstreams served (${upstream.map((r) => `${r.family}:${r.model}`).join(', ')})`);
  // With Claude's names, Claude Code puts system turns among the messages (anthropic-version
  // 2023-06-01): Claude refuses them in its own words, the gateway passes that on, and the
  // client sends the call again without them. The refusal costs nothing.
  const hasSystemTurn = (r: RecordedRequest): boolean => r.family === 'anthropic' && ((r.body as { messages?: Array<{ role: string }> }).messages ?? []).some((m) => m.role === 'system');
  const refused = rows.filter((row) => row.status === 400);
  if (upstream.some(hasSystemTurn)) {
    t.ok(refused.length >= 1, "Claude's refusal of the system turns reached the client");
    t.ok(refused.every((row) => row.costMicros === 0), 'the refused call is not charged');
    t.ok(upstream.some((r) => r.family === 'anthropic' && !hasSystemTurn(r)), 'the client sent it again without them');
  } else t.equal(refused.length, 0, 'no system turns, no refusal');
  const billed = rows.reduce((sum, row) => sum + row.costMicros, 0);
  t.equal(balanceBefore - (await balanceMicros(gw, funded.accountId)), billed, 'the wallet debit is the rows\' costs (at the targets\' prices)');
});

t.test('nothing left the machine', async (t) => {
  t.same(guard.attempts, [], 'no client tried to reach another host through its proxy');
});
