import { Writable } from 'node:stream';
import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * The fuzzer's daemon, in a worker thread (test/fuzz/endpoints.test.ts): a gateway on SQLite
 * with the provider simulator, and the fixture the inputs use (a funded sk- key, the admin's
 * akm- key, session and own keys, a scratch account, an MCP session). In a thread of its own it
 * has a core of its own, and an uncaught exception ends it (as it would end the daemon's
 * process) instead of the test: the test sees the worker's `error`, records a crash and starts
 * another. It answers the test's questions over messages: `final` (the funded account's
 * ledger, balance and holds, the error lines of its log), `logs` (the log lines naming some
 * request ids) and `stop`.
 */

export interface DaemonOptions {
  bodyLimit: number;
  entry?: string;
}

export interface DaemonFixture {
  url: string;
  adminEmail: string;
  funded: { key: string; accountId: string; keyId: string };
  akm: string;
  session: string;
  adminApiKeyId: string;
  adminMgmtKeyId: string;
  scratchId: string;
  scratchEmail: string;
  scratchKeyId: string;
  mcpSession: string;
}

export interface DaemonFinal {
  balanceBefore: number;
  balanceAfter: number;
  /** Ledger entries of the funded account written since the fixture was made. */
  entries: { kind: string; requestId: string | null; amountMicros: number }[];
  held: { accountHeldMicros: number; keyHeldMicros: number };
  upstreamRequests: number;
  /** Log lines at level error or fatal. */
  errors: string[];
}

export type DaemonRequest = { id: number; op: 'final' } | { id: number; op: 'logs'; requestIds: string[] } | { id: number; op: 'stop' };

const options = workerData as DaemonOptions;
const port = parentPort;
if (!port) throw new Error('test/fuzz/daemon.ts runs in a worker thread');

// An uncaught exception ends the daemon's process (it has no handler of its own): the test
// hears of it as a crash, with the stack, and this thread carries on so the run can go on.
// (A fault that still ends the thread is seen by the test as the worker's `error`.)
const reportCrash = (kind: string) => (error: unknown): void => {
  port.postMessage({ op: 'crash', kind, stack: error instanceof Error ? (error.stack ?? error.message) : String(error) });
};
process.on('uncaughtException', reportCrash('uncaughtException'));
process.on('unhandledRejection', reportCrash('unhandledRejection'));

const logLines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    if (logLines.length < 50_000) logLines.push(chunk.toString('utf8'));
    done();
  },
});

const sim = await ProviderSimulator.start();
const gw = await startTestGateway(
  {
    providers: simulatedProviders(sim.url),
    routing: { retries: 0 },
    server: { max_body_size: `${options.bodyLimit / 1024}kb`, body_idle_timeout: '1s' },
  },
  {},
  { logger: pino({ level: 'warn' }, sink), backend: 'sqlite' },
);

const funded = await fundedKey(gw, { balance: 100_000, email: 'funded@example.com' });
const login = await gw.http('POST', '/api/auth/login', { body: { email: gw.adminEmail, password: 'admin-password' } });
if (login.status !== 200) throw new Error(`admin login: ${login.text}`);
const session = login.body.token as string;
const adminKey = await gw.http('POST', '/api/api-keys', { token: session, body: { name: 'admin key' } });
const mgmtKeys = await gw.http('GET', '/api/management-keys', { token: session });
const scratch = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email: 'scratch@example.com', name: 'Scratch' } });
const scratchKey = await gw.http('POST', `/api/management/accounts/${scratch.body.id}/api-keys`, { token: gw.adminKey, body: { name: 'scratch' } });
const accept = { accept: 'application/json, text/event-stream' };
const init = await gw.http('POST', '/mcp', {
  token: gw.adminKey,
  headers: accept,
  body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } },
});
const mcpSession = String(init.headers['mcp-session-id'] ?? '');
if (!mcpSession) throw new Error(`MCP initialize: ${init.status} ${init.text}`);
await gw.http('POST', '/mcp', { token: gw.adminKey, headers: { ...accept, 'mcp-session-id': mcpSession }, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });

gw.app.settlement.drain();
const balanceBefore = (await gw.app.store.accounts.byId(funded.accountId))?.balanceMicros ?? Number.NaN;
const ledgerBefore = new Set((await gw.app.store.ledger.list(funded.accountId, 10_000)).map((entry) => entry.id));

const fixture: DaemonFixture = {
  url: gw.url,
  adminEmail: gw.adminEmail,
  funded: { key: funded.key, accountId: funded.accountId, keyId: funded.keyId },
  akm: gw.adminKey,
  session,
  adminApiKeyId: adminKey.body.id,
  adminMgmtKeyId: mgmtKeys.body.data[0].id,
  scratchId: scratch.body.id,
  scratchEmail: 'scratch@example.com',
  scratchKeyId: scratchKey.body.id,
  mcpSession,
};

async function final(): Promise<DaemonFinal> {
  gw.app.settlement.drain();
  const entries = (await gw.app.store.ledger.list(funded.accountId, 100_000)).filter((entry) => !ledgerBefore.has(entry.id));
  return {
    balanceBefore,
    balanceAfter: (await gw.app.store.accounts.byId(funded.accountId))?.balanceMicros ?? Number.NaN,
    entries: entries.map((entry) => ({ kind: entry.kind, requestId: entry.requestId, amountMicros: entry.amountMicros })),
    held: await gw.app.holds.held(funded.accountId, funded.keyId),
    upstreamRequests: sim.requests.length,
    errors: logLines.filter((line) => /"level":(50|60)/.test(line)),
  };
}

port.on('message', (message: DaemonRequest) => {
  void (async () => {
    switch (message.op) {
      case 'final':
        port.postMessage({ id: message.id, result: await final() });
        break;
      case 'logs':
        port.postMessage({ id: message.id, result: logLines.filter((line) => message.requestIds.some((id) => line.includes(id))) });
        break;
      case 'stop':
        await gw.stop();
        await sim.close();
        port.postMessage({ id: message.id, result: true });
        port.close();
        break;
    }
  })();
});

port.postMessage({ op: 'ready', fixture });
