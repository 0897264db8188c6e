import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import bcrypt from 'bcryptjs';
import { transformSync } from 'esbuild';
import t from 'tap';
import { PACKAGE_ROOT } from '../../src/config/files.js';
import { GatewayError } from '../../src/core/errors.js';
import { PASSWORD_WORKER_NICE, PasswordPool } from '../../src/core/auth/password-pool.js';
import { hashPassword, verifyPassword } from '../../src/core/auth/passwords.js';

/**
 * bcrypt in worker threads (src/core/auth/password-pool.ts): the answers bcrypt gives, a
 * bounded queue that refuses at once (503 overloaded) when full, shutdown, and a process that
 * is never kept alive by an idle worker, under tsx and as compiled JavaScript.
 */

const run = promisify(execFile);

function isQueueFull(error: unknown): boolean {
  return (
    error instanceof GatewayError &&
    error.status === 503 &&
    error.type === 'overloaded' &&
    error.reason === 'password_queue_full' &&
    error.headers['retry-after'] === '1' &&
    error.toBody().error.code === 503
  );
}

t.test('hash and compare agree with plain bcryptjs, both ways', async (t) => {
  const pool = new PasswordPool({ workers: 2 });
  t.teardown(() => pool.close());
  const hash = await pool.hash('correct horse', 4);
  t.match(hash, /^\$2b\$04\$.{53}$/, 'a bcrypt hash at the rounds asked');
  t.equal(await pool.compare('correct horse', hash), true, 'the pool verifies its own hash');
  t.equal(await pool.compare('wrong horse', hash), false, 'a wrong password is false');
  t.equal(bcrypt.compareSync('correct horse', hash), true, 'bcryptjs verifies the pool hash');
  const plain = bcrypt.hashSync('battery staple', 5);
  t.equal(await pool.compare('battery staple', plain), true, 'the pool verifies a bcryptjs hash');
  t.equal(await pool.compare('battery stapler', plain), false);
  t.equal(await pool.compare('anything', 'not-a-bcrypt-hash'), false, 'a malformed hash matches nothing');
  t.not(await pool.hash('correct horse', 4), hash, 'a fresh salt each time');
  t.same(pool.stats(), { workers: 1, running: 0, queued: 0 }, 'one job at a time: one worker, reused');
  const both = await Promise.all([pool.hash('a', 4), pool.hash('b', 4), pool.hash('c', 4)]);
  t.equal(new Set(both).size, 3);
  t.same(pool.stats(), { workers: 2, running: 0, queued: 0 }, 'jobs at once: as many workers as the pool allows');
});

t.test('an idle worker stops after idleMs, a job in time keeps it, and the next job starts another', async (t) => {
  const pool = new PasswordPool({ workers: 2, idleMs: 1000 });
  t.teardown(() => pool.close());
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  await Promise.all([pool.hash('a', 4), pool.hash('b', 4)]);
  t.equal(pool.stats().workers, 2, 'two jobs at once: two workers');
  await sleep(500);
  const hash = await pool.hash('c', 4);
  await sleep(700);
  t.equal(pool.stats().workers, 1, 'the worker left idle stopped; the one that took a job meanwhile did not');
  await sleep(1000);
  t.same(pool.stats(), { workers: 0, running: 0, queued: 0 }, 'then the other stops too');
  t.equal(await pool.compare('c', hash), true, 'the next job starts a worker and is answered');
  t.equal(pool.stats().workers, 1);
  const kept = new PasswordPool({ workers: 1, idleMs: 0 });
  t.teardown(() => kept.close());
  await kept.hash('a', 4);
  await sleep(400);
  t.equal(kept.stats().workers, 1, 'idleMs 0: workers stay until close()');
});

t.test('hashPassword and verifyPassword (a given pool, and the shared one)', async (t) => {
  const pool = new PasswordPool({ workers: 1 });
  t.teardown(() => pool.close());
  const hash = await hashPassword('correct horse', 4, pool);
  t.equal(await verifyPassword('correct horse', hash, 4, pool), true);
  t.equal(await verifyPassword('wrong horse', hash, 4, pool), false);
  t.equal(await verifyPassword('correct horse', null, 4, pool), false, 'no hash (unknown email): false');
  t.equal(await verifyPassword('correct horse', undefined, 4, pool), false);
  t.equal(await verifyPassword('correct horse', '', 4, pool), false);
  const shared = await hashPassword('shared pool', 4);
  t.equal(await verifyPassword('shared pool', shared, 4), true, 'the shared pool, without one given');
});

t.test('without a hash, verifyPassword still spends a bcrypt comparison in the pool', async (t) => {
  // A pool of one worker and no queue: while it is busy, even the unknown-email path is refused,
  // so it does go through the pool (the same work as a real comparison, for timing).
  const pool = new PasswordPool({ workers: 1, maxQueued: 0 });
  t.teardown(() => pool.close());
  await verifyPassword('warm-up', null, 4, pool); // the dummy hash at 4 rounds, computed once
  const busy = pool.hash('busy', 10);
  await t.rejects(verifyPassword('someone', null, 4, pool), 'refused while the only worker is busy');
  await busy;
  const started = performance.now();
  t.equal(await verifyPassword('someone', null, 10, pool), false);
  t.ok(performance.now() - started > 5, 'a 10-round dummy comparison takes bcrypt time');
});

t.test('on Linux the workers run at a lower priority than the event loop', { skip: process.platform !== 'linux' && 'per-thread nice values are Linux only' }, async (t) => {
  const pool = new PasswordPool({ workers: 2 });
  t.teardown(() => pool.close());
  await Promise.all([pool.hash('a', 4), pool.hash('b', 4)]);
  const niceOf = (tid: string): number => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  };
  const nices = readdirSync('/proc/self/task').map(niceOf);
  t.equal(niceOf(String(process.pid)), 0, 'the event loop keeps its priority');
  t.ok(nices.filter((nice) => nice === PASSWORD_WORKER_NICE).length >= 2, `both workers at nice ${PASSWORD_WORKER_NICE}`);
});

t.test('a full queue refuses at once with 503 overloaded, retry-after 1', async (t) => {
  const pool = new PasswordPool({ workers: 1, maxQueued: 2 });
  t.teardown(() => pool.close());
  await pool.hash('warm-up', 4); // the worker started (under tsx, a few hundred ms)
  const settledAt: number[] = [];
  const outcomes: Array<Promise<PromiseSettledResult<string>>> = [];
  const started = performance.now();
  for (let i = 0; i < 12; i++) {
    const job = pool.hash(`password-${i}`, 10);
    outcomes.push(
      job.then(
        (value) => ((settledAt[i] = performance.now() - started), { status: 'fulfilled' as const, value }),
        (reason: unknown) => ((settledAt[i] = performance.now() - started), { status: 'rejected' as const, reason }),
      ),
    );
  }
  t.same(pool.stats(), { workers: 1, running: 1, queued: 2 }, 'one running, two waiting');
  const results = await Promise.all(outcomes);
  const accepted = results.slice(0, 3);
  const refused = results.slice(3);
  t.ok(accepted.every((r) => r.status === 'fulfilled' && r.value.startsWith('$2b$10$')), 'the first three (1 running + 2 queued) are hashed');
  t.ok(refused.every((r) => r.status === 'rejected' && isQueueFull(r.reason)), 'the other nine: 503 overloaded, password_queue_full, retry-after 1');
  const slowestRefusal = Math.max(...settledAt.slice(3));
  const firstHash = Math.min(...settledAt.slice(0, 3));
  t.ok(slowestRefusal < 20, `refused without waiting (${slowestRefusal.toFixed(2)} ms)`);
  t.ok(firstHash > slowestRefusal, `before any hash finished (first after ${firstHash.toFixed(1)} ms)`);
  t.same(pool.stats(), { workers: 1, running: 0, queued: 0 }, 'drained');
  t.equal(await pool.compare('password-0', (accepted[0] as PromiseFulfilledResult<string>).value), true, 'takes jobs again once drained');
});

t.test('close: running and waiting jobs fail, later calls too, workers stop', async (t) => {
  const pool = new PasswordPool({ workers: 2, maxQueued: 4 });
  const jobs = Array.from({ length: 5 }, (_, i) => pool.hash(`p${i}`, 12));
  t.same(pool.stats(), { workers: 2, running: 2, queued: 3 });
  const settled = Promise.allSettled(jobs);
  const started = performance.now();
  await pool.close();
  t.ok(performance.now() - started < 1000, 'close does not wait for the hashes');
  const results = await settled;
  t.ok(
    results.every((r) => r.status === 'rejected' && r.reason instanceof GatewayError && r.reason.status === 503 && r.reason.reason === 'shutting_down'),
    'each pending job: 503 shutting_down',
  );
  t.same(pool.stats(), { workers: 0, running: 0, queued: 0 });
  t.match(await pool.hash('late', 4).catch((error: unknown) => error), { status: 503, reason: 'shutting_down' }, 'a call after close is refused');
  await pool.close(); // twice is fine
});

t.test('a worker that dies fails its job, and the next job gets a new worker', async (t) => {
  const pool = new PasswordPool({ workers: 1 });
  t.teardown(() => pool.close());
  await pool.hash('warm-up', 4);
  const slot = (pool as unknown as { slots: Array<{ worker: import('node:worker_threads').Worker }> }).slots[0]!;
  const job = pool.hash('doomed', 12);
  const queued = pool.hash('next', 4);
  await slot.worker.terminate();
  t.match(await job.catch((error: unknown) => error), { status: 500, reason: 'internal_error' }, 'the running job fails');
  t.equal(await pool.compare('next', await queued), true, 'the queued job ran on a new worker');
});

/**
 * A child process that hashes once through the shared pool of `module` and never closes it: it
 * must exit on its own. (A script file, not `--input-type -e`: workers inherit execArgv.)
 */
async function exitsAlone(t: Tap, module: string, nodeArgs: string[], cwd: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'password-child-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, 'child.mjs');
  writeFileSync(script, `const m = await import(${JSON.stringify(module)}); const h = await m.hashPassword('pw', 4); console.log(h); console.log(await m.verifyPassword('pw', h, 4));\n`);
  const started = performance.now();
  const { stdout } = await run(process.execPath, [...nodeArgs, script], { cwd, timeout: 30_000 });
  const [hash, ok] = stdout.trim().split('\n');
  t.match(hash, /^\$2b\$04\$/, 'hashed in the child');
  t.equal(ok, 'true', 'and verified');
  t.ok(performance.now() - started < 30_000, 'the child exited: an idle worker keeps no process alive');
}

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('under tsx: the worker starts from the .ts source, and the process exits with it idle', async (t) => {
  const module = new URL('../../src/core/auth/passwords.ts', import.meta.url).href;
  await exitsAlone(t, module, ['--import', 'tsx'], PACKAGE_ROOT);
});

t.test('compiled (as in dist/): the worker starts from the .js next to the pool', async (t) => {
  // The files as tsc would emit them, transpiled one by one (no bundle), in a directory that
  // resolves bcryptjs from the package's node_modules, and run by plain node (no tsx).
  const root = mkdtempSync(join(tmpdir(), 'password-pool-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  symlinkSync(join(PACKAGE_ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  for (const file of ['core/errors.ts', 'core/auth/passwords.ts', 'core/auth/password-pool.ts', 'core/auth/password-worker.ts']) {
    const { code } = transformSync(readFileSync(join(PACKAGE_ROOT, 'src', file), 'utf8'), { loader: 'ts', format: 'esm', target: 'node20' });
    const out = join(root, 'dist', file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, code);
  }
  writeFileSync(join(root, 'package.json'), '{"type":"module"}');
  const module = new URL(`file://${join(root, 'dist/core/auth/passwords.js')}`).href;
  await exitsAlone(t, module, [], root);
});
