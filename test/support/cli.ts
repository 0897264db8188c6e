import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Test helpers: run the real `gateway` binary as a child process, the way a user does. */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = resolve(ROOT, 'bin/gateway.js');

export interface CliResult {
  /** The exit code (null only if the child died from a signal). */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * A clean environment for the child: no TTY, no inherited GATEWAY_* settings, and none of the
 * test runner's NODE_OPTIONS loaders (they slow every start). `extra` adds or overrides variables.
 */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { CI: 'true' };
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

/** Runs `node bin/gateway.js ...args` in the project root and collects its output. */
export function runCli(args: readonly string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: cliEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    // Generous: CI runs test files in parallel on 2 cores, and some tests start 15 CLIs at once.
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

/** stderr split into lines, without the trailing newline. */
export function lines(text: string): string[] {
  const trimmed = text.replace(/\n+$/, '');
  return trimmed === '' ? [] : trimmed.split('\n');
}

/** A TCP port on 127.0.0.1 that nothing listens on (bound once, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

export interface Running {
  url: Promise<string>;
  exit: Promise<{ code: number | null; stdout: string; stderr: string }>;
  kill(signal: NodeJS.Signals): void;
}

/** `gateway serve` as a child process (its URL once it logs that it listens). */
export function serve(args: string[], env: NodeJS.ProcessEnv = {}): Running {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd: ROOT, env: { ...process.env, CI: 'true', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let resolveUrl: (url: string) => void = () => {};
  const url = new Promise<string>((resolve) => (resolveUrl = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    const match = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"gateway listening"/.exec(stdout);
    if (match) resolveUrl(match[1] as string);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  return { url, exit, kill: (signal) => child.kill(signal) };
}
