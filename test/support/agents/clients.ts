import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The real coding agents, run headless and offline against a local base URL: Claude Code
 * (`@anthropic-ai/claude-code`, Anthropic Messages) and Codex CLI (`@openai/codex`, OpenAI
 * Responses). Shared by the recorder (record.ts) and test/e2e/coding-agents.test.ts.
 *
 * Nothing may leave the machine: every telemetry, update, plugin and feature-flag switch of both
 * clients is off, HOME / CLAUDE_CONFIG_DIR / CODEX_HOME are fresh temp dirs, and HTTP(S)_PROXY
 * point at an egress guard on loopback (NO_PROXY: loopback) that refuses and records anything a
 * client still tries to reach.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const CLAUDE_PACKAGE = join(ROOT, 'node_modules/@anthropic-ai/claude-code');
export const CLAUDE_BIN = join(CLAUDE_PACKAGE, 'bin/claude.exe');
export const CODEX_BIN = join(ROOT, 'node_modules/@openai/codex/bin/codex.js');

export type AgentClient = 'claude-code' | 'codex';

/**
 * Makes sure Claude Code's native binary is in place: its postinstall (install.cjs) copies the
 * platform package's binary over the bin/claude.exe placeholder; when npm skipped the script
 * (npm's allowScripts, --ignore-scripts), run it now. Returns why the binary is unusable, or
 * undefined when it is ready.
 */
export async function ensureClaudeBinary(): Promise<string | undefined> {
  if (!existsSync(CLAUDE_BIN)) return `${CLAUDE_BIN} is missing (npm ci did not install @anthropic-ai/claude-code)`;
  // The placeholder is a small script; the native binary is hundreds of MB.
  if (statSync(CLAUDE_BIN).size < 1_000_000) {
    const result = await run(process.execPath, [join(CLAUDE_PACKAGE, 'install.cjs')], { cwd: CLAUDE_PACKAGE, env: process.env, timeoutMs: 120_000 });
    if (result.code !== 0 || statSync(CLAUDE_BIN).size < 1_000_000) return `install.cjs could not put Claude Code's native binary in place: ${result.stderr || result.stdout}`;
  }
  return undefined;
}

export function codexMissing(): string | undefined {
  if (!existsSync(CODEX_BIN)) return `${CODEX_BIN} is missing (npm ci did not install @openai/codex)`;
  return undefined;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  ms: number;
}

/** Spawns a process (its own process group), collects its output, kills the group on timeout. */
export function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; stdin?: string }): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolvePromise) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.end(options.stdin ?? '');
    const kill = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs);
    running.add(kill);
    child.on('error', (error) => {
      stderr += String(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(kill);
      kill(); // anything the client left behind in its group
      resolvePromise({ code, signal, stdout, stderr, timedOut, ms: Date.now() - started });
    });
  });
}

const running = new Set<() => void>();

/** Kills every client still running (teardown). */
export function killClients(): void {
  for (const kill of [...running]) kill();
}

// ---------------------------------------------------------------------------------------------
// The egress guard

export interface EgressGuard {
  url: string;
  /** Every host:port a client tried to reach through the proxy. */
  attempts: string[];
  close(): Promise<void>;
}

/** An HTTP proxy on loopback that lets nothing through: CONNECT and absolute-URL requests are refused (403) and recorded. */
export async function startEgressGuard(): Promise<EgressGuard> {
  const attempts: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    attempts.push(`${req.method} ${req.url}`);
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end('egress refused by the test\n');
  });
  server.on('clientError', (_error, socket: Socket) => socket.destroy());
  server.on('connect', (req, socket: Socket) => {
    socket.on('error', () => undefined);
    attempts.push(`CONNECT ${req.url}`);
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
  });
  server.on('connection', (socket: Socket) => {
    socket.on('error', () => undefined); // a client hanging up on a refusal
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    attempts,
    close: () =>
      new Promise((ok) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => ok());
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// Each client's command line, environment and configuration

export interface AgentRun {
  /** The gateway's (or recorder's) base URL, without /v1. */
  baseUrl: string;
  /** The sk- key the client sends. */
  apiKey: string;
  /** The catalog model id; undefined: the client's own default model names (Claude Code). */
  model: string | undefined;
  prompt: string;
  /** The egress guard's URL (HTTP(S)_PROXY). */
  proxyUrl: string;
}

export interface Prepared {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** The working directory (a fresh temp dir). */
  cwd: string;
  /** Removes the temp dirs. */
  cleanup(): void;
}

/** The environment both clients start from: no inherited secrets or proxies, loopback-only networking. */
function baseEnv(home: string, proxyUrl: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    USER: process.env.USER ?? 'root',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    TMPDIR: join(home, 'tmp'),
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local/share'),
    XDG_STATE_HOME: join(home, '.local/state'),
    HTTP_PROXY: proxyUrl,
    HTTPS_PROXY: proxyUrl,
    ALL_PROXY: proxyUrl,
    http_proxy: proxyUrl,
    https_proxy: proxyUrl,
    all_proxy: proxyUrl,
    NO_PROXY: '127.0.0.1,localhost,::1',
    no_proxy: '127.0.0.1,localhost,::1',
  };
}

function tempHome(client: AgentClient): { home: string; cwd: string; remove: () => void } {
  const root = mkdtempSync(join(tmpdir(), `agent-${client}-`));
  const home = join(root, 'home');
  const cwd = join(root, 'work');
  for (const dir of [home, cwd, join(home, 'tmp')]) mkdirSync(dir, { recursive: true });
  return { home, cwd, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/**
 * Claude Code, headless: `claude -p <prompt> --output-format json --model <model>
 * --allowedTools Bash` with ANTHROPIC_BASE_URL at the gateway, the key in ANTHROPIC_API_KEY,
 * every model alias (sonnet, opus, haiku, the small/fast model) mapped to the catalog id, and
 * telemetry, error reporting, updates, feature flags and non-essential traffic off.
 */
export function claudeCode(runSpec: AgentRun): Prepared {
  const dirs = tempHome('claude-code');
  const configDir = join(dirs.home, '.claude');
  mkdirSync(configDir, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...baseEnv(dirs.home, runSpec.proxyUrl),
    CLAUDE_CONFIG_DIR: configDir,
    ANTHROPIC_BASE_URL: runSpec.baseUrl,
    ANTHROPIC_API_KEY: runSpec.apiKey,
    ...(runSpec.model === undefined
      ? {}
      : {
          ANTHROPIC_MODEL: runSpec.model,
          ANTHROPIC_SMALL_FAST_MODEL: runSpec.model,
          ANTHROPIC_DEFAULT_HAIKU_MODEL: runSpec.model,
          ANTHROPIC_DEFAULT_SONNET_MODEL: runSpec.model,
          ANTHROPIC_DEFAULT_OPUS_MODEL: runSpec.model,
          ANTHROPIC_DEFAULT_FABLE_MODEL: runSpec.model,
        }),
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_UPDATES: '1',
    DISABLE_GROWTHBOOK: '1',
    DISABLE_INSTALLATION_CHECKS: '1',
    DISABLE_BUG_COMMAND: '1',
    DISABLE_FEEDBACK_COMMAND: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_DISABLE_FEATURE_FLAGS: '1',
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
    CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: '1',
    CLAUDE_CODE_DISABLE_AUTO_MEMORY: '1',
    CLAUDE_CODE_ENABLE_TELEMETRY: '0',
    // A gateway error is the test's answer: no retries with back-off.
    CLAUDE_CODE_MAX_RETRIES: '0',
  };
  return {
    command: CLAUDE_BIN,
    args: ['-p', runSpec.prompt, '--output-format', 'json', ...(runSpec.model === undefined ? [] : ['--model', runSpec.model]), '--allowedTools', 'Bash', '--no-session-persistence', '--strict-mcp-config'],
    env,
    cwd: dirs.cwd,
    cleanup: dirs.remove,
  };
}

/** Codex's config.toml: one custom Responses provider at the gateway, nothing else switched on. */
export function codexConfig(runSpec: AgentRun): string {
  return [
    `model = ${JSON.stringify(runSpec.model)}`,
    'model_provider = "gateway"',
    'check_for_update_on_startup = false',
    '',
    '[model_providers.gateway]',
    'name = "LLM gateway"',
    `base_url = ${JSON.stringify(`${runSpec.baseUrl}/v1`)}`,
    'env_key = "GATEWAY_KEY"',
    'wire_api = "responses"',
    // A gateway error is the test's answer: one try, no back-off between retries.
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    '',
    '[otel]',
    'exporter = "none"',
    '',
  ].join('\n');
}

/**
 * Codex, headless: `codex exec --json --skip-git-repo-check
 * --dangerously-bypass-approvals-and-sandbox --ephemeral <prompt>` with CODEX_HOME holding
 * codexConfig() and the key in GATEWAY_KEY.
 */
export function codex(runSpec: AgentRun): Prepared {
  const dirs = tempHome('codex');
  const codexHome = join(dirs.home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(join(codexHome, 'config.toml'), codexConfig(runSpec));
  const env: NodeJS.ProcessEnv = {
    ...baseEnv(dirs.home, runSpec.proxyUrl),
    CODEX_HOME: codexHome,
    GATEWAY_KEY: runSpec.apiKey,
  };
  return {
    command: process.execPath,
    args: [CODEX_BIN, 'exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', '--ephemeral', '--strict-config', '-C', dirs.cwd, runSpec.prompt],
    env,
    cwd: dirs.cwd,
    cleanup: dirs.remove,
  };
}

export function prepare(client: AgentClient, runSpec: AgentRun): Prepared {
  return client === 'claude-code' ? claudeCode(runSpec) : codex(runSpec);
}

/** A prompt asking the agent to run `echo <marker>` and report what it printed. */
export function agentPrompt(marker: string): string {
  return `Run echo ${marker} in the shell, then tell me what it printed.`;
}
