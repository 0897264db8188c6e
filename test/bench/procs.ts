import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';

/**
 * The benchmark's child processes (provider simulator, floor proxy, gateway daemons), their
 * setup (admin, funded account, a pool of sk- keys) and the /proc readings taken from outside.
 */

export const CLK_TCK = readClockTick();

function readClockTick(): number {
  try {
    const value = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(value) && value > 0 ? value : 100;
  } catch {
    return 100;
  }
}

/** utime + stime of a whole process (all its threads), in microseconds (resolution 1/CLK_TCK s). */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / CLK_TCK;
}

export interface Memory {
  /** Resident set size now, MB. */
  rssMb: number;
  /** Peak resident set size since start (VmHWM), MB. */
  hwmMb: number;
}

export function memory(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

export interface Proc {
  name: string;
  pid: number;
  url: string;
  child: ChildProcess;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null when killed). */
  stop(graceMs?: number): Promise<number | null>;
}

const ROOT = new URL('../../', import.meta.url).pathname;

/** A port free on 127.0.0.1 right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function procOf(name: string, child: ChildProcess, url: string): Proc {
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
  return {
    name,
    pid: child.pid as number,
    url,
    child,
    stop: async (graceMs = 15_000) => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Waits for a stdout line matching `pattern`; keeps draining stdout afterwards. */
function waitForStdout(name: string, child: ChildProcess, pattern: RegExp, timeoutMs = 20_000): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let stderr = '';
    let done = false;
    const timer = setTimeout(() => finish(new Error(`${name}: not ready within ${timeoutMs} ms\n${buffer}${stderr}`)), timeoutMs);
    const finish = (result: Error | RegExpExecArray): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (result instanceof Error) {
        if (child.exitCode === null) child.kill('SIGKILL');
        reject(result);
      } else resolve(result);
    };
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (text: string) => {
      if (done) return;
      buffer += text;
      const match = pattern.exec(buffer);
      if (match) finish(match);
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      stderr += text;
      if (done) process.stderr.write(`[${name}] ${text}`);
    });
    child.once('exit', (code) => finish(new Error(`${name} exited (${code}) before it was ready\n${buffer}${stderr}`)));
  });
}

/** node --import tsx test/support/simulator/main.ts --port 0 */
export async function startSimulator(key = 'sim-key'): Promise<Proc & { key: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/simulator/main.ts', '--port', '0', '--key', key], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: cleanEnv(),
  });
  const match = await waitForStdout('simulator', child, /listening on (http:\/\/[0-9.]+:\d+)/);
  return { ...procOf('simulator', child, match[1] as string), key };
}

/** The two floors (issue 32): the minimal proxy the gateway is judged against, and the same with the client's close propagated upstream. */
export type FloorKind = 'minimal' | 'abort';
const FLOOR_FILES: Record<FloorKind, string> = { minimal: 'floor-minimal', abort: 'floor-abort' };

/**
 * A bare pass-through proxy (floor-minimal.ts or floor-abort.ts) in front of the simulator,
 * compiled to plain JavaScript first (esbuild, dependencies left as imports) and run by `node`
 * with the gateway's own Node flags: no loader in either, so neither pays for one.
 */
export async function startFloor(simUrl: string, simKey: string, nodeArgs: string[] = [], kind: FloorKind = 'minimal'): Promise<Proc> {
  const entry = await compileFloor(FLOOR_FILES[kind]);
  const child = spawn(process.execPath, [...nodeArgs, entry, '--upstream', simUrl, '--key', simKey], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: cleanEnv(),
  });
  const name = kind === 'minimal' ? 'floor' : 'floor-abort';
  const match = await waitForStdout(name, child, /floor listening on (http:\/\/[0-9.]+:\d+)/);
  return procOf(name, child, match[1] as string);
}

/** test/bench/<file>.ts as JavaScript in bench-results/.build/ (under the root, so its imports resolve to node_modules). */
async function compileFloor(file: string): Promise<string> {
  const { build } = await import('esbuild');
  const outfile = join(ROOT, `bench-results/.build/${file}.mjs`);
  await build({ entryPoints: [join(ROOT, `test/bench/${file}.ts`)], outfile, bundle: true, packages: 'external', platform: 'node', format: 'esm', target: 'node20', logLevel: 'error' });
  return outfile;
}

/** The Portkey gateway version the independent benchmark of issue 17 ran. */
export const PORTKEY_VERSION = '1.15.2';

/**
 * Portkey's open-source gateway (`@portkey-ai/gateway`, Node build), installed from the npm
 * registry into bench-results/.portkey on first use (not a dependency of this project), started
 * on a free port with the gateway's Node flags. Callers point it at the simulator per request
 * (x-portkey-provider: openai, x-portkey-custom-host).
 */
export async function startPortkey(nodeArgs: string[] = []): Promise<Proc> {
  const dir = join(ROOT, 'bench-results/.portkey');
  const entry = join(dir, 'node_modules/@portkey-ai/gateway/build/start-server.js');
  try {
    statSync(entry);
  } catch {
    execFileSync('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--ignore-scripts', `@portkey-ai/gateway@${PORTKEY_VERSION}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, entry, `--port=${port}`], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp('portkey', child, url, 30_000, () => '');
  child.stdout?.resume();
  child.stderr?.resume();
  return procOf('portkey', child, url);
}

/** Polls `url` until it answers 200; fails when the child exits first or `timeoutMs` passes (`log()` appended to the error). */
async function waitForHttp(name: string, child: ChildProcess, url: string, timeoutMs: number, log: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode})${log()}`);
    if (Date.now() > deadline) throw new Error(`${name}: ${url} did not answer within ${timeoutMs / 1000} s${log()}`);
    const ok = await request(url).then(
      async (res) => {
        await res.body.dump();
        return res.statusCode === 200;
      },
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
}

/** The environment of a child: this one's, without settings that would change what it runs. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_OPTIONS;
  delete env.GATEWAY_CONFIG;
  delete env.REDIS_URL;
  return env;
}

/** Whether bin/gateway.js will run the compiled dist/ (true) or the sources through tsx. */
export function gatewayRunsCompiled(): boolean {
  const newest = (dir: string): number => {
    let max = 0;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      max = Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
    }
    return max;
  };
  try {
    return statSync(join(ROOT, 'dist/.stamp')).mtimeMs >= newest(join(ROOT, 'src'));
  } catch {
    return false;
  }
}

export interface GatewayOptions {
  name: string;
  simUrl: string;
  simKey: string;
  /** How many sk- keys to create (round-robin, so no key's rate limit is reached). */
  keys: number;
  redis?: { url: string; keyPrefix: string };
  /** PostgreSQL as the store (`database.url`); absent: the SQLite file in the daemon's temp dir. */
  databaseUrl?: string;
  /** The `cache:` section of the config (snake_case, as in gateway.yaml); absent: the default (off). */
  cache?: Record<string, unknown>;
  /** Node flags for the daemon (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /**
   * Deployments of openai/gpt-4o-mini (weighted 3:2:1 over three provider entries on the
   * simulator) instead of its one: the routing path's cost (issue 26).
   */
  deployments?: number;
  /** Another checkout to run the daemon from (built, with node_modules), for A/B runs. */
  root?: string;
  /** The `alerts:` section of the config (issue 30), e.g. a webhook that never answers. */
  alerts?: Record<string, unknown>;
  /** Extra top-level config sections (metrics:, telemetry:), over the defaults. */
  extra?: Record<string, unknown>;
}

export interface GatewayProc extends Proc {
  dir: string;
  /** The SQLite file (with `databaseUrl`: still the config's `database.path`, but not the store). */
  dbPath: string;
  /** The PostgreSQL database the daemon stores in (absent: SQLite at `dbPath`). */
  databaseUrl?: string;
  logPath: string;
  keys: string[];
  accountId: string;
  /** The admin's akm- key (`gateway init`'s). */
  adminKey: string;
}

function cli(args: string[], env: NodeJS.ProcessEnv, root = ROOT): string {
  return execFileSync(process.execPath, ['bin/gateway.js', ...args], { cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A gateway daemon in a temp dir: config, `gateway init`, `gateway serve`, then account and keys over HTTP. */
export async function startGatewayProc(options: GatewayOptions): Promise<GatewayProc> {
  const dir = mkdtempSync(join(tmpdir(), `bench-${options.name}-`));
  const dbPath = join(dir, 'gateway.db');
  const logPath = join(dir, 'gateway.log');
  const configPath = join(dir, 'gateway.yaml');
  const config: Record<string, unknown> = {
    server: { host: '127.0.0.1', port: 0, shutdown_timeout: '5s' },
    database: { path: dbPath, ...(options.databaseUrl ? { url: options.databaseUrl } : {}), ...(process.env.BENCH_BATCH_WINDOW ? { billing_batch_window: process.env.BENCH_BATCH_WINDOW } : {}) },
    auth: { jwt_secret: 'bench-secret-bench-secret-bench-secret-0123', bcrypt_rounds: 4 },
    logging: { level: process.env.BENCH_LOG_LEVEL ?? 'info' },
    providers: {
      openai: { base_url: `${options.simUrl}/v1`, api_key: options.simKey },
      anthropic: { base_url: options.simUrl, api_key: options.simKey },
      gemini: { base_url: options.simUrl, api_key: options.simKey },
    },
  };
  if (options.redis) config.redis = { url: options.redis.url, key_prefix: options.redis.keyPrefix };
  if (options.cache) config.cache = options.cache;
  if (options.alerts) config.alerts = options.alerts;
  if (options.extra) Object.assign(config, options.extra);
  if (options.deployments && options.deployments > 1) {
    const providers = config.providers as Record<string, unknown>;
    const deployments = [];
    for (let i = 0; i < options.deployments; i++) {
      const name = i === 0 ? 'openai' : `openai-${i + 1}`;
      if (i > 0) providers[name] = { type: 'openai', base_url: `${options.simUrl}/v1`, api_key: options.simKey };
      deployments.push({ provider: name, weight: options.deployments - i });
    }
    config.models = [{ id: 'openai/gpt-4o-mini', deployments }];
  }
  writeFileSync(configPath, JSON.stringify(config, null, 2)); // JSON is YAML

  const env = cleanEnv();
  const init = JSON.parse(cli(['init', '--config', configPath, '--email', 'admin@bench.local', '--name', 'Bench admin', '--password', 'bench-password-1', '--json'], env, options.root));
  const adminKey = init.management_key as string;
  if (!/^akm-/.test(adminKey)) throw new Error(`gateway init printed no akm- key: ${JSON.stringify(init)}`);

  // The port is picked here and passed with --port, and readiness is polled on /health: the
  // "gateway listening" log line may sit in a log buffer for a while.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const logFd = openSync(logPath, 'w');
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), 'bin/gateway.js', 'serve', '--config', configPath, '--port', String(port)], {
    cwd: options.root ?? ROOT,
    stdio: ['ignore', logFd, logFd],
    env: cleanEnv(),
  });
  closeSync(logFd);
  try {
    return await setUpGateway(options, child, url, adminKey, { dir, dbPath, logPath, ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}) });
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

async function setUpGateway(
  options: GatewayOptions,
  child: ChildProcess,
  url: string,
  adminKey: string,
  files: { dir: string; dbPath: string; logPath: string; databaseUrl?: string },
): Promise<GatewayProc> {
  const { logPath } = files;
  await waitForHttp(options.name, child, `${url}/health`, 60_000, () => `:\n${readFileSync(logPath, 'utf8')}`);
  const proc = procOf(options.name, child, url);

  const api = async (path: string, body: unknown): Promise<any> => {
    const res = await request(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode !== 201) throw new Error(`${options.name} POST ${path}: ${res.statusCode} ${text}`);
    return JSON.parse(text);
  };
  const account = await api('/api/management/accounts', { email: 'load@bench.local', name: 'Bench load' });
  await api(`/api/management/accounts/${account.id}/topups`, { amount: 1_000_000, reference: 'bench' });
  const keys: string[] = [];
  for (let i = 0; i < options.keys; i++) {
    const key = await api(`/api/management/accounts/${account.id}/api-keys`, { name: `bench-${i}`, rate_limit: 10_000 });
    keys.push(key.api_key as string);
  }
  return { ...proc, ...files, keys, accountId: account.id as string, adminKey };
}

/** Deletes what a Redis-configured gateway left under its key prefix. */
export async function cleanRedisPrefix(url: string, prefix: string): Promise<number> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  let removed = 0;
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) removed += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return removed;
}

/** The local redis-server's pid, to read its CPU (undefined when not found or not local). */
export function localRedisPid(url: string): number | undefined {
  const { hostname, port } = new URL(url);
  if (hostname !== '127.0.0.1' && hostname !== 'localhost') return undefined;
  try {
    for (const pid of execFileSync('pgrep', ['-x', 'redis-server'], { encoding: 'utf8' }).trim().split('\n')) {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`:${port || '6379'}`)) return Number(pid);
    }
  } catch {
    // no pgrep, or no redis-server
  }
  return undefined;
}

/**
 * utime + stime (µs) of every local `postgres` process, by pid: the postmaster, its background
 * processes and one backend per connection (undefined when the server is not on this host).
 * Diff two readings with postgresCpuSince().
 */
export function localPostgresCpu(url: string): Map<number, number> | undefined {
  const { hostname } = new URL(url);
  if (hostname !== '127.0.0.1' && hostname !== 'localhost' && hostname !== '[::1]') return undefined;
  const cpu = new Map<number, number>();
  let pids: string[];
  try {
    pids = execFileSync('pgrep', ['-x', 'postgres'], { encoding: 'utf8' }).trim().split('\n');
  } catch {
    return undefined; // no pgrep, or no postgres process
  }
  for (const pid of pids) {
    try {
      cpu.set(Number(pid), cpuMicros(Number(pid)));
    } catch {
      // exited since pgrep listed it
    }
  }
  return cpu.size > 0 ? cpu : undefined;
}

/**
 * The CPU the local `postgres` processes used since `before` (µs): each process alive at both
 * readings counts its difference, one started since counts all its CPU; one that exited in
 * between is lost (the gateways' pools keep their connections, so their backends stay).
 */
export function postgresCpuSince(before: Map<number, number>, url: string): number {
  const after = localPostgresCpu(url) ?? new Map<number, number>();
  let sum = 0;
  for (const [pid, micros] of after) {
    const was = before.get(pid);
    // A pid reused by a new process (less CPU than the old one had) counts from 0.
    sum += was !== undefined && micros >= was ? micros - was : micros;
  }
  return sum;
}
