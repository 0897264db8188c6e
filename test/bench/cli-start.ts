import { spawn } from 'node:child_process';
import { median, percentile } from './load.js';
import { cleanEnv } from './procs.js';
import type { CliStartResult } from './report.js';

/**
 * The CLI's start (issue 17): how long `node bin/gateway.js …` takes, wall time from spawn to
 * exit, against a bare `node -e 0` measured the same way on the same machine in the same run.
 * `gateway mcp` (stdio) is timed to its answer to `initialize` (it then stays up; it is killed).
 * The runs alternate between commands, so a busy moment spreads over all of them.
 */

const ROOT = new URL('../../', import.meta.url).pathname;

/** cleanEnv(), without the CLI's own defaults either (every command here names its --url and --key). */
function env(): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...cleanEnv(), CI: 'true' };
  delete out.GATEWAY_URL;
  delete out.GATEWAY_ADMIN_KEY;
  return out;
}

/** Spawn to exit, ms; rejects on a non-zero exit (a failing command is not a start time). */
function timeExit(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - started;
      if (code === 0) resolve(ms);
      else reject(new Error(`${args.slice(1).join(' ')} exited ${code}: ${stderr.trim().split('\n')[0] ?? ''}`));
    });
  });
}

/** Spawn to the first JSON-RPC answer on stdout (the answer to `initialize`), ms. */
function timeMcpReady(url: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['bin/gateway.js', 'mcp', '--url', url, '--key', key], { cwd: ROOT, env: env(), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gateway mcp: no answer to initialize within 20 s: ${stderr}`));
    }, 20_000);
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      out += text;
      if (!out.includes('\n')) return;
      const ms = performance.now() - started;
      clearTimeout(timer);
      child.kill('SIGTERM');
      if (/"id":1\b/.test(out) && out.includes('"result"')) resolve(ms);
      else reject(new Error(`gateway mcp answered: ${out.slice(0, 200)}`));
    });
    child.once('error', reject);
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } })}\n`,
    );
  });
}

export async function cliStart(url: string, adminKey: string, runs: number): Promise<CliStartResult> {
  const gw = (...args: string[]): string[] => ['bin/gateway.js', ...args];
  const commands: Array<[string, () => Promise<number>]> = [
    ['node -e 0', () => timeExit(['-e', '0'])],
    ['gateway --help', () => timeExit(gw('--help'))],
    ['gateway --version', () => timeExit(gw('--version'))],
    ['gateway models list --json', () => timeExit(gw('models', 'list', '--json', '--url', url))],
    ['gateway wallet balance --json', () => timeExit(gw('wallet', 'balance', '--json', '--url', url, '--key', adminKey))],
    ['gateway usage list --json', () => timeExit(gw('usage', 'list', '--json', '--limit', '20', '--url', url, '--key', adminKey))],
    ['gateway mcp (to its initialize answer)', () => timeMcpReady(url, adminKey)],
  ];
  const times = new Map<string, number[]>(commands.map(([name]) => [name, []]));
  // One untimed round first: the page cache holds every file afterwards, as on a machine in use.
  for (const [, run] of commands) await run();
  for (let i = 0; i < runs; i++) for (const [name, run] of commands) times.get(name)?.push(await run());
  const bare = median(times.get('node -e 0') ?? []);
  return {
    runs,
    nodeBareMs: bare,
    commands: commands.slice(1).map(([name]) => {
      const sorted = [...(times.get(name) ?? [])].sort((a, b) => a - b);
      const m = median(sorted);
      return { command: name, medianMs: m, p90Ms: percentile(sorted, 0.9), ratio: m / bare };
    }),
  };
}
