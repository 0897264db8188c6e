import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Agent } from 'undici';
import { httpClient, simulatedProviders, TEST_JWT_SECRET, type Http } from '../support/gateway.js';
import { dropPrefix, REDIS_URL } from '../support/redis.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { checkBooks, type Account, type Verdict } from './books.js';
import type { Books, DaemonMessage, DaemonReply, Sample } from './protocol.js';
import { FAMILIES, FAULT_NAMES, faultable, MIX, modelFor, send, type Kind, type Outcome, type Plan } from './traffic.js';

/**
 * The soak (issue 28): two gateway daemons in processes of their own, sharing one store (a
 * SQLite file, or a PostgreSQL database) and one Redis, under mixed traffic from many keys for
 * a while, with upstream faults and clients that leave; then the books are checked to the µINR.
 * `npm run soak` (main.ts) runs it and prints the report; test/soak/soak.test.ts runs a short one.
 */

export interface SoakOptions {
  backend: 'sqlite' | 'postgres';
  durationMs: number;
  /** Calls in flight at once (from the soak's clients). */
  concurrency: number;
  /** Share of faultable chat calls sent to a faulty model with an upstream fault. */
  faultRate: number;
  /** Share of calls whose client leaves early. */
  abortRate: number;
  /** At most this many calls a second in all (absent: as fast as the clients go). The suite's soak sets one, so as not to starve the test files beside it. */
  rate?: number;
  /** Progress lines (none when absent). */
  log?: (line: string) => void;
}

export interface DaemonReport {
  name: string;
  samples: Sample[];
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  errors: string[];
  warnings: Record<string, number>;
  crashes: string[];
}

export interface SoakReport {
  options: SoakOptions;
  elapsedMs: number;
  outcomes: Outcome[];
  topups: number;
  daemons: DaemonReport[];
  verdict: Verdict;
}

const ROOT = new URL('../../', import.meta.url).pathname;
const PRICE = { input_cost_per_1m: 12.6, output_cost_per_1m: 50.4, context_window: 128000, max_output_tokens: 16384 };
const FAST = { connect: '2s', first_byte: '2s', idle: '1s' };

/** A message to a daemon, before its id. */
type Request = DaemonMessage extends infer M ? (M extends { id: number } ? Omit<M, 'id'> : never) : never;

/** A daemon process and its IPC requests. */
class Daemon {
  readonly samples: Sample[] = [];
  readonly crashes: string[] = [];
  #next = 0;
  readonly #waiting = new Map<number, { resolve: (reply: DaemonReply) => void; reject: (error: Error) => void }>();

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly url: string,
    readonly http: Http,
  ) {
    child.on('message', (reply: DaemonReply) => {
      if (reply.type === 'crash') this.crashes.push(reply.stack);
      if (!('id' in reply)) return;
      const waiting = this.#waiting.get(reply.id);
      this.#waiting.delete(reply.id);
      if (reply.type === 'failed') waiting?.reject(new Error(`${name}: ${reply.message}`));
      else waiting?.resolve(reply);
    });
    child.on('exit', (code) => {
      for (const waiting of this.#waiting.values()) waiting.reject(new Error(`${name} exited (${code})`));
      this.#waiting.clear();
    });
  }

  static start(name: string, configPath: string): Promise<Daemon> {
    const child = fork(join(ROOT, 'test/soak/daemon.ts'), [configPath], { cwd: ROOT, execArgv: ['--import', 'tsx', '--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`daemon ${name} exited (${code}) before it was ready`)));
      child.once('message', (reply: DaemonReply) => {
        if (reply.type === 'ready') resolve(new Daemon(name, child, reply.url, httpClient(reply.url)));
        else reject(new Error(`daemon ${name}: ${JSON.stringify(reply)}`));
      });
    });
  }

  ask<M extends Request>(message: M): Promise<Extract<DaemonReply, { type: M['type'] extends 'stop' ? 'stopped' : M['type'] }>> {
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve: resolve as (reply: DaemonReply) => void, reject });
      this.child.send({ ...message, id });
    });
  }

  alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(): Promise<void> {
    if (!this.alive()) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    await this.ask({ type: 'stop' }).catch(() => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** Picks by weight, from a counter (deterministic: the same sequence every run). */
function weighted<T>(entries: readonly [T, number][], seq: number): T {
  const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
  let pick = (seq * 7919) % total;
  for (const [value, weight] of entries) {
    pick -= weight;
    if (pick < 0) return value;
  }
  return (entries.at(-1) as [T, number])[0];
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  const cleanups: (() => Promise<void> | void)[] = [];
  try {
    const sim = await ProviderSimulator.start();
    cleanups.push(() => sim.close());
    const dir = mkdtempSync(join(tmpdir(), 'gateway-soak-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const prefix = `soak-${randomUUID()}:`;
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => {
      await dropPrefix(redis, prefix);
      redis.disconnect();
    });
    let databaseUrl: string | undefined;
    if (options.backend === 'postgres') {
      const { scratchDatabase } = await import('../support/pg-scratch.js');
      const database = await scratchDatabase();
      databaseUrl = database.url;
      cleanups.push(() => database.drop());
    }

    const providers: Record<string, unknown> = { ...simulatedProviders(sim.url) };
    for (const family of FAMILIES) {
      providers[`faulty-${family}`] = { type: family, base_url: family === 'openai' ? `${sim.url}/v1` : sim.url, api_key: 'sim-key', timeouts: FAST };
    }
    const config = {
      server: { host: '127.0.0.1', port: 0 },
      database: { path: join(dir, 'gateway.db'), ...(databaseUrl ? { url: databaseUrl } : {}) },
      redis: { url: REDIS_URL, key_prefix: prefix },
      auth: { jwt_secret: TEST_JWT_SECRET, bcrypt_rounds: 4 },
      providers,
      routing: { retries: 1, max_retry_after: '1s', cooldown: { failures: 5, window: '10s', duration: '1s' } },
      models: FAMILIES.map((family) => ({ id: `faulty-${family}/${modelFor('chat.completions', family, false).split('/')[1]}`, name: `faulty ${family}`, ...PRICE })),
      cache: { enabled: true, exact: { models: ['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5'] }, hit_price: 0.1 },
    };
    const configPath = join(dir, 'gateway.json');
    writeFileSync(configPath, JSON.stringify(config));

    // One daemon first (it migrates the store), then the second.
    const a = await Daemon.start('a', configPath);
    cleanups.push(() => a.stop());
    const b = await Daemon.start('b', configPath);
    cleanups.push(() => b.stop());
    const daemons = [a, b];
    const admin = (await a.ask({ type: 'admin' })).key;

    // Accounts: funded ones with keys (some with budgets), and thin ones that run dry.
    const accounts: Account[] = [];
    // One thin account (it runs dry), three keys with small budgets (they run out): the rest of
    // the traffic is paid for, as most of a real gateway's is.
    for (let i = 0; i < 12; i++) {
      const thin = i === 11;
      const account = await a.http('POST', '/api/management/accounts', { token: admin, body: { email: `soak-${i}-${randomUUID()}@example.com`, name: `Soak ${i}` } });
      if (account.status !== 201) throw new Error(`account: ${account.text}`);
      const initial = thin ? 0.2 : 500;
      const topup = await b.http('POST', `/api/management/accounts/${account.body.id}/topups`, { token: admin, body: { amount: initial, reference: `initial-${i}` } });
      if (topup.status !== 201) throw new Error(`topup: ${topup.text}`);
      const keys = [];
      for (let k = 0; k < 3; k++) {
        // Spent under concurrency, never past it.
        const budgeted = k === 2 && i % 4 === 0;
        const budget = budgeted ? { budget: 1 } : {};
        const created = await daemons[k % 2]?.http('POST', `/api/management/accounts/${account.body.id}/api-keys`, { token: admin, body: { name: `soak key ${k}`, ...budget } });
        if (created?.status !== 201) throw new Error(`key: ${created?.text}`);
        keys.push({ key: created.body.api_key as string, keyId: created.body.id as string, accountId: account.body.id as string, budget: budgeted });
      }
      accounts.push({ accountId: account.body.id, keys, topups: new Map([[`initial-${i}`, initial * 1_000_000]]) });
    }
    const allKeys = accounts.flatMap((account) => account.keys);
    log(`soak on ${options.backend}: 2 daemons (${a.url}, ${b.url}), ${accounts.length} accounts, ${allKeys.length} keys, ${options.concurrency} clients, ${Math.round(options.durationMs / 1000)} s`);

    const dispatcher = new Agent({ connections: options.concurrency * 2, keepAliveTimeout: 10_000 });
    cleanups.push(() => dispatcher.close());
    const outcomes: Outcome[] = [];
    const started = Date.now();
    const deadline = started + options.durationMs;
    let seq = 0;
    let topups = 0;

    const planFor = (n: number): Plan => {
      const kind: Kind = weighted(MIX, n);
      const family = FAMILIES[(n >> 3) % FAMILIES.length] as (typeof FAMILIES)[number];
      const fault = faultable(kind) && ((n * 2654435761) % 1000) / 1000 < options.faultRate ? (FAULT_NAMES[(n >> 5) % FAULT_NAMES.length] as string) : undefined;
      const abortDraw = ((n * 40503) % 1000) / 1000;
      const abort = abortDraw < options.abortRate / 2 ? 'early' : abortDraw < options.abortRate ? 'mid-body' : undefined;
      const key = allKeys[(n * 31) % allKeys.length] as (typeof allKeys)[number];
      return { kind, daemon: n % 2, key, model: modelFor(kind, family, fault !== undefined), ...(fault ? { fault } : {}), ...(abort ? { abort } : {}) };
    };

    // The rate: each call takes the next slot of an even schedule, and waits for it.
    let nextSlot = started;
    const paced = async (): Promise<void> => {
      if (!options.rate) return;
      const slot = nextSlot;
      nextSlot = Math.max(nextSlot, Date.now()) + 1000 / options.rate;
      const wait = slot - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    };
    const client = async (): Promise<void> => {
      while (Date.now() < deadline) {
        await paced();
        if (Date.now() >= deadline) break;
        const n = seq++;
        const plan = planFor(n);
        outcomes.push(await send((daemons[plan.daemon] as Daemon).url, dispatcher, plan, n));
      }
    };

    // Top-ups while the traffic runs, on either daemon; every third one sent to both at once
    // with one reference (it must land once).
    const topper = async (): Promise<void> => {
      let n = 0;
      while (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        const account = accounts[n % accounts.length] as Account;
        const reference = `soak-topup-${n}`;
        const amount = 1 + (n % 5);
        const targets = n % 3 === 0 ? daemons : [daemons[n % 2] as Daemon];
        const answers = await Promise.all(targets.map((daemon) => daemon.http('POST', `/api/management/accounts/${account.accountId}/topups`, { token: admin, body: { amount, reference } })));
        if (answers.some((answer) => answer.status === 201 || answer.status === 200)) account.topups.set(reference, amount * 1_000_000);
        if (answers.some((answer) => answer.status >= 300)) throw new Error(`top-up refused: ${answers.map((answer) => answer.text).join(' | ')}`);
        topups++;
        n++;
      }
    };

    // Readings of each daemon about 60 times over the run (at least every 5 s, at most every 0.5 s).
    const sampleEvery = Math.min(5000, Math.max(500, Math.floor(options.durationMs / 60)));
    const sampler = async (): Promise<void> => {
      while (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, sampleEvery));
        for (const daemon of daemons) if (daemon.alive()) daemon.samples.push((await daemon.ask({ type: 'sample' })).sample);
        sim.requests.length = 0; // the simulator's record of requests is not used here
        const done = outcomes.length;
        if (daemons[0]?.samples.length && daemons[0].samples.length % 10 === 0) log(`  ${Math.round((Date.now() - started) / 1000)} s: ${done} calls; RSS ${daemons.map((daemon) => `${daemon.name} ${daemon.samples.at(-1)?.rssMb.toFixed(0)} MB`).join(', ')}`);
      }
    };

    await Promise.all([...Array.from({ length: options.concurrency }, client), topper(), sampler()]);
    const elapsedMs = Date.now() - started;
    log(`  traffic done: ${outcomes.length} calls in ${(elapsedMs / 1000).toFixed(1)} s; checking the books`);

    // Settle: each daemon applies what it settled (b first, then a reads everything).
    const booksOf = (daemon: Daemon): Promise<Books[]> => daemon.ask({ type: 'books', accounts: accounts.map((account) => ({ accountId: account.accountId, keyIds: account.keys.map((key) => key.keyId) })) }).then((reply) => reply.books);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const booksB = await booksOf(b);
    const booksA = await booksOf(a);
    const reports: DaemonReport[] = [];
    for (const daemon of daemons) {
      const final = await daemon.ask({ type: 'final' });
      reports.push({ name: daemon.name, samples: daemon.samples, lagP50Ms: final.lagP50Ms, lagP99Ms: final.lagP99Ms, lagMaxMs: final.lagMaxMs, errors: final.errors, warnings: final.warnings, crashes: daemon.crashes });
    }
    const verdict = checkBooks(accounts, outcomes, booksA, booksB, reports);
    return { options, elapsedMs, outcomes, topups, daemons: reports, verdict };
  } finally {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  }
}
