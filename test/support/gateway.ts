import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { request } from 'undici';
import { buildConfig } from '../../src/config/load.js';
import type { GatewayConfig } from '../../src/config/types.js';
import { initializeFirstAdmin } from '../../src/core/management/init.js';
import { startGateway, type RunningGateway } from '../../src/main.js';
import { awsCredentials } from './simulator/bedrock.js';
import { VERTEX_PROJECT, vertexKeyFile } from './simulator/vertex.js';
import { TEST_BACKEND } from './store.js';

/** The simulator's default AWS credentials (its SigV4 verifier's). */
const SIM_AWS = awsCredentials();

/**
 * Test helpers: a real daemon on port 0 with a temp SQLite file (or, with
 * GATEWAY_TEST_BACKEND=postgres, a scratch PostgreSQL database), and an HTTP client for it.
 */

/** The scratch PostgreSQL database of each test daemon's directory: a second daemon configured with testConfig(dir) shares it. */
const postgresOfDir = new Map<string, string>();

export const TEST_JWT_SECRET = 'test-secret-test-secret-test-secret-0123456789';

export function tempDir(prefix = 'gateway-test-'): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A config from raw YAML-shaped data, with fast bcrypt and quiet logs, rooted at `dir`. */
export function testConfig(dir: string, raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}): GatewayConfig {
  const base: Record<string, unknown> = {
    server: { host: '127.0.0.1', port: 0 },
    database: { path: join(dir, 'gateway.db'), ...(postgresOfDir.has(dir) ? { url: postgresOfDir.get(dir) } : {}) },
    auth: { jwt_secret: TEST_JWT_SECRET, bcrypt_rounds: 4 },
    logging: { level: 'silent' },
  };
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(raw)) {
    const current = merged[key];
    merged[key] =
      typeof current === 'object' && current !== null && typeof value === 'object' && value !== null && !Array.isArray(value)
        ? { ...(current as object), ...(value as object) }
        : value;
  }
  return buildConfig(merged, { env, baseDir: dir, source: 'test' });
}

export interface TestGateway extends RunningGateway {
  dir: string;
  /** Stops the daemon and removes its files. */
  stop(): Promise<void>;
  /** The first admin account's management key (created on start). */
  adminKey: string;
  adminEmail: string;
  http: Http;
}

export interface HttpResponse<T = any> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
  text: string;
}

export type Http = <T = any>(method: string, path: string, options?: { body?: unknown; raw?: string | Buffer; headers?: Record<string, string>; token?: string }) => Promise<HttpResponse<T>>;

export function httpClient(baseUrl: string): Http {
  return async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | Buffer | undefined = options.raw;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await request(`${baseUrl}${path}`, { method: method as 'GET', headers, body: body ?? null });
    const text = await response.body.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.statusCode, headers: response.headers, body: parsed as any, text };
  };
}

/**
 * `logger`: the daemon's logger, to read its log lines (silent by default); `backend`: the
 * store, when a test needs one (default: TEST_BACKEND).
 */
export async function startTestGateway(raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}, options: { logger?: Logger; backend?: 'sqlite' | 'postgres' } = {}): Promise<TestGateway> {
  const dir = tempDir();
  let dropDatabase: (() => Promise<void>) | undefined;
  if ((options.backend ?? TEST_BACKEND) === 'postgres') {
    const { scratchDatabase } = await import('./postgres.js');
    const database = await scratchDatabase();
    postgresOfDir.set(dir.path, database.url);
    dropDatabase = database.drop;
  }
  const config = testConfig(dir.path, raw, env);
  let running: RunningGateway;
  try {
    running = await startGateway(config, { logger: options.logger ?? pino({ level: 'silent' }) });
  } catch (error) {
    await dropDatabase?.();
    dir.remove();
    throw error;
  }
  const adminEmail = 'admin@example.com';
  const init = await initializeFirstAdmin(running.app.store, { email: adminEmail, name: 'Admin', password: 'admin-password', bcryptRounds: 4 });
  return {
    ...running,
    dir: dir.path,
    adminKey: init.secret,
    adminEmail,
    http: httpClient(running.url),
    stop: async () => {
      await running.close();
      await dropDatabase?.();
      postgresOfDir.delete(dir.path);
      dir.remove();
    },
  };
}

/** Providers of every wire family pointed at a provider simulator (test/support/simulator). */
export function simulatedProviders(simulatorUrl: string, key = 'sim-key'): Record<string, unknown> {
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  return {
    openai: { type: 'openai', base_url: `${simulatorUrl}/v1`, api_key: key, timeouts: fast },
    anthropic: { type: 'anthropic', base_url: simulatorUrl, api_key: key, timeouts: fast },
    gemini: { type: 'gemini', base_url: simulatorUrl, api_key: key, timeouts: fast },
    groq: { type: 'openai', base_url: `${simulatorUrl}/v1`, api_key: key, timeouts: fast },
    mistral: { type: 'openai', base_url: `${simulatorUrl}/v1`, api_key: key, timeouts: fast },
    deepseek: { type: 'openai', base_url: `${simulatorUrl}/v1`, api_key: key, timeouts: fast },
    deepgram: { type: 'deepgram', base_url: simulatorUrl, api_key: key, timeouts: fast },
    // The clouds with the simulator's own credentials (SigV4 with its AWS keys; its Vertex test account).
    bedrock: { type: 'bedrock', region: SIM_AWS.region, base_url: `${simulatorUrl}/bedrock`, access_key_id: SIM_AWS.accessKeyId, secret_access_key: SIM_AWS.secretAccessKey, timeouts: fast },
    vertex: { type: 'vertex', project: VERTEX_PROJECT, region: 'global', base_url: `${simulatorUrl}/vertex`, credentials: JSON.stringify(vertexKeyFile(simulatorUrl)), timeouts: fast },
  };
}

export interface FundedKey {
  accountId: string;
  key: string;
  keyId: string;
}

/** An account with `balance` INR and an sk- key (through the management API, as an admin would). */
export async function fundedKey(gw: TestGateway, options: { balance?: number; email?: string; key?: Record<string, unknown> } = {}): Promise<FundedKey> {
  const email = options.email ?? `user-${Math.random().toString(36).slice(2, 10)}@example.com`;
  const account = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email, name: 'Test user' } });
  if (account.status !== 201) throw new Error(`account: ${account.text}`);
  if ((options.balance ?? 100) > 0) {
    const topup = await gw.http('POST', `/api/management/accounts/${account.body.id}/topups`, { token: gw.adminKey, body: { amount: options.balance ?? 100 } });
    if (topup.status !== 201) throw new Error(`topup: ${topup.text}`);
  }
  const key = await gw.http('POST', `/api/management/accounts/${account.body.id}/api-keys`, { token: gw.adminKey, body: { name: 'test', ...options.key } });
  if (key.status !== 201) throw new Error(`key: ${key.text}`);
  return { accountId: account.body.id, key: key.body.api_key, keyId: key.body.id };
}
