import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import pino from 'pino';
import { buildConfig } from '../../src/config/load.js';
import { initializeFirstAdmin } from '../../src/core/management/init.js';
import { startGateway, type RunningGateway } from '../../src/main.js';
import type { Books, DaemonMessage, DaemonReply, Sample } from './protocol.js';

/**
 * One soak daemon: a real gateway in a process of its own (its own event loop, heap and RSS),
 * started from a config file (argv[2]) and driven over IPC by the soak (soak.ts). It reports
 * what only the process itself can read: event-loop delay, heap and RSS after a full GC, its
 * logged errors, and (at the end) the books and holds as its store and Redis hold them.
 */

if (!process.send) throw new Error('test/soak/daemon.ts runs as a child process with an IPC channel');
const send = (reply: DaemonReply): void => void process.send?.(reply);

const configPath = process.argv[2] as string;
const raw = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
const config = buildConfig(raw, { env: process.env, baseDir: dirname(configPath), source: configPath });

/** Log lines at warn and above: counted by message; errors kept (the soak fails on any). */
const warnings = new Map<string, number>();
const errorLines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      let level = 0;
      let msg = '';
      try {
        const parsed = JSON.parse(line) as { level?: number; msg?: string };
        level = parsed.level ?? 0;
        msg = parsed.msg ?? '';
      } catch {
        level = 60;
      }
      if (level >= 50) {
        if (errorLines.length < 50) errorLines.push(line.slice(0, 4000));
      } else warnings.set(msg, (warnings.get(msg) ?? 0) + 1);
    }
    done();
  },
});

// Lag: the whole run's histogram, and one per sample window (reset at each sample). Each
// records the time between its timer's ticks, the resolution included: lag is what is beyond it.
const RESOLUTION_MS = 10;
const overall = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
const window = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
overall.enable();
window.enable();

process.on('uncaughtException', (error) => {
  send({ type: 'crash', stack: error.stack ?? String(error) });
  process.exit(70);
});
process.on('unhandledRejection', (reason) => {
  send({ type: 'crash', stack: reason instanceof Error ? (reason.stack ?? reason.message) : String(reason) });
  process.exit(70);
});

let running: RunningGateway | undefined;

const ms = (ns: number): number => Math.max(0, Math.round(ns / 1e4 - RESOLUTION_MS * 100) / 100);

function sample(): Sample {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const memory = process.memoryUsage();
  const reading: Sample = {
    at: Date.now(),
    rssMb: memory.rss / 2 ** 20,
    heapMb: memory.heapUsed / 2 ** 20,
    lagP50Ms: ms(window.percentile(50)),
    lagP99Ms: ms(window.percentile(99)),
    lagMaxMs: ms(window.max),
  };
  window.reset();
  return reading;
}

async function books(accounts: readonly { accountId: string; keyIds: readonly string[] }[]): Promise<Books[]> {
  const app = (running as RunningGateway).app;
  app.settlement.drain();
  const out: Books[] = [];
  for (const { accountId, keyIds } of accounts) {
    const account = await app.store.accounts.byId(accountId);
    const ledger = await app.store.ledger.list(accountId, 1_000_000);
    const usage = await app.store.usage.list({ accountId, limit: 1_000_000 });
    const keys = [];
    for (const keyId of keyIds) {
      const key = await app.store.apiKeys.byId(keyId);
      const held = await app.holds.held(accountId, keyId);
      keys.push({ keyId, spentMicros: key?.spentMicros ?? Number.NaN, budgetMicros: key?.budgetMicros ?? null, heldMicros: held.keyHeldMicros, accountHeldMicros: held.accountHeldMicros });
    }
    out.push({
      accountId,
      balanceMicros: account?.balanceMicros ?? Number.NaN,
      ledgerSumMicros: await app.store.ledger.sum(accountId),
      entries: ledger.map((entry) => ({ kind: entry.kind, amountMicros: entry.amountMicros, balanceAfterMicros: entry.balanceAfterMicros, requestId: entry.requestId, apiKeyId: entry.apiKeyId, reference: entry.reference })),
      usage: usage.map((row) => ({ requestId: row.requestId, apiKeyId: row.apiKeyId, costMicros: row.costMicros, status: row.status, cache: row.cache })),
      keys,
    });
  }
  return out;
}

process.on('message', (message: DaemonMessage) => {
  void (async () => {
    try {
      switch (message.type) {
        case 'sample':
          send({ type: 'sample', id: message.id, sample: sample() });
          break;
        case 'admin': {
          const init = await initializeFirstAdmin((running as RunningGateway).app.store, { email: 'admin@example.com', name: 'Admin', password: 'admin-password', bcryptRounds: 4 });
          send({ type: 'admin', id: message.id, key: init.secret });
          break;
        }
        case 'books':
          send({ type: 'books', id: message.id, books: await books(message.accounts) });
          break;
        case 'final':
          send({
            type: 'final',
            id: message.id,
            lagP50Ms: ms(overall.percentile(50)),
            lagP99Ms: ms(overall.percentile(99)),
            lagMaxMs: ms(overall.max),
            errors: errorLines,
            warnings: Object.fromEntries(warnings),
          });
          break;
        case 'stop':
          await running?.close();
          send({ type: 'stopped', id: message.id });
          process.exit(0);
      }
    } catch (error) {
      send({ type: 'failed', id: message.id, message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    }
  })();
});

running = await startGateway(config, { logger: pino({ level: 'warn' }, sink) });
send({ type: 'ready', url: running.url, pid: process.pid });
