import { randomUUID } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import t from 'tap';
import { request } from 'undici';
import { initializeFirstAdmin } from '../../src/core/management/init.js';
import { startGateway } from '../../src/main.js';
import { latestPgVersion } from '../../src/store/pg/db.js';
import { PG_MIGRATIONS } from '../../src/store/pg/migrations.js';
import { PgStore } from '../../src/store/pg/store.js';
import { serve, type Running } from '../support/cli.js';
import { header, postJson, until, type RawResponse } from '../support/e2e.js';
import { httpClient, simulatedProviders, tempDir, testConfig, TEST_JWT_SECRET, type Http } from '../support/gateway.js';
import { postgresSkipReason, scratchDatabase, type ScratchDatabase } from '../support/postgres.js';
import { dropPrefix, REDIS_URL, redisSkipReason } from '../support/redis.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * Issue 16: several daemons, each on its own "host" (its own directory, no shared file), one
 * PostgreSQL and one Redis. Each daemon is a real `gateway serve` process, so one can be
 * killed with SIGKILL under load.
 */

const skip = postgresSkipReason() || redisSkipReason();
const MODEL = 'openai/gpt-4o-mini';
const LEASE = '4s';

interface Daemon {
  name: string;
  url: string;
  http: Http;
  running: Running;
  dir: { path: string; remove: () => void };
}

const call = (daemon: Daemon, key: string) => postJson(`${daemon.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, { model: MODEL, messages: [{ role: 'user', content: 'hi there' }], max_tokens: 5 });

t.test('three daemons on one PostgreSQL and one Redis', { skip }, async (t) => {
  const sim = await ProviderSimulator.start();
  t.teardown(() => sim.close());
  const database: ScratchDatabase = await scratchDatabase();
  const prefix = `pg-daemons-${randomUUID()}:`;
  const redis = new Redis(REDIS_URL);
  const sql = postgres(database.url, { max: 2, onnotice: () => undefined, types: { bigint: postgres.BigInt } });
  const daemons: Daemon[] = [];
  t.teardown(async () => {
    for (const daemon of daemons) daemon.running.kill('SIGKILL');
    await Promise.all(daemons.map((daemon) => daemon.running.exit));
    for (const daemon of daemons) daemon.dir.remove();
    await sql.end({ timeout: 1 });
    await database.drop();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  // Three daemons starting together on an empty database: one applies the migrations (under an
  // advisory lock), the others wait and find nothing to do.
  const started = await Promise.all(
    ['a', 'b', 'c'].map(async (name) => {
      const dir = tempDir(`gateway-pg-${name}-`);
      const file = join(dir.path, 'gateway.yaml');
      const config = {
        server: { host: '127.0.0.1', port: 0 },
        database: { path: join(dir.path, 'gateway.db'), url: database.url },
        redis: { url: REDIS_URL, key_prefix: prefix, hold_lease: LEASE },
        auth: { jwt_secret: TEST_JWT_SECRET, bcrypt_rounds: 4 },
        logging: { level: 'info' },
        providers: simulatedProviders(sim.url),
        cache: {
          enabled: true,
          exact: { models: ['*'] },
          semantic: { models: ['openai/gpt-4o'], embedding_model: 'openai/text-embedding-3-small', dimensions: 256, threshold: 0.95 },
        },
      };
      writeFileSync(file, JSON.stringify(config)); // JSON is YAML
      const running = serve(['--config', file]);
      const url = await Promise.race([running.url, running.exit.then((exit) => Promise.reject(new Error(`daemon ${name} exited: ${exit.stderr || exit.stdout}`)))]);
      return { name, url, http: httpClient(url), running, dir };
    }),
  );
  daemons.push(...started);
  const [a, b, c] = started as [Daemon, Daemon, Daemon];
  const [version] = await sql<Array<{ n: bigint; latest: number }>>`SELECT count(*) AS n, max(version) AS latest FROM schema_migrations`;
  t.same([Number(version?.n), version?.latest], [PG_MIGRATIONS.length, latestPgVersion()], 'the migrations were applied once each, by one of the three');

  const store = await PgStore.open(database.url);
  const init = await initializeFirstAdmin(store, { email: 'admin@example.com', name: 'Admin', password: 'admin-password', bcryptRounds: 4 });
  await store.close();
  const admin = init.secret;

  async function funded(balance: number, key: Record<string, unknown> = {}): Promise<{ accountId: string; key: string; keyId: string }> {
    const account = await a.http('POST', '/api/management/accounts', { token: admin, body: { email: `u-${randomUUID()}@example.com`, name: 'User' } });
    if (account.status !== 201) throw new Error(account.text);
    if (balance > 0) {
      const topup = await c.http('POST', `/api/management/accounts/${account.body.id}/topups`, { token: admin, body: { amount: balance } });
      if (topup.status !== 201) throw new Error(topup.text);
    }
    const created = await a.http('POST', `/api/management/accounts/${account.body.id}/api-keys`, { token: admin, body: { name: 'k', ...key } });
    if (created.status !== 201) throw new Error(created.text);
    return { accountId: account.body.id, key: created.body.api_key, keyId: created.body.id };
  }

  /** The account's stored balance and its ledger's sum, straight from PostgreSQL. */
  async function books(accountId: string): Promise<{ balance: bigint; sum: bigint; charges: Map<string, bigint> }> {
    const [account] = await sql<Array<{ balance_micros: bigint }>>`SELECT balance_micros FROM accounts WHERE id = ${accountId}`;
    const [ledger] = await sql<Array<{ sum: bigint }>>`SELECT coalesce(sum(amount_micros), 0)::bigint AS sum FROM ledger WHERE account_id = ${accountId}`;
    const rows = await sql<Array<{ request_id: string; amount_micros: bigint }>>`SELECT request_id, amount_micros FROM ledger WHERE account_id = ${accountId} AND kind = 'charge'`;
    const charges = new Map<string, bigint>();
    for (const row of rows) {
      if (charges.has(row.request_id)) throw new Error(`two charges for ${row.request_id}`);
      charges.set(row.request_id, -row.amount_micros);
    }
    return { balance: account?.balance_micros ?? -1n, sum: ledger?.sum ?? -2n, charges };
  }

  const heldOn = async (accountId: string): Promise<number> => Number((await redis.hget(`${prefix}holds2:acct:${accountId}`, '#')) ?? 0);

  await t.test('each daemon answers, readiness names the database', async (t) => {
    for (const daemon of started) {
      const ready = await daemon.http('GET', '/health/ready');
      t.equal(ready.status, 200, `${daemon.name} is ready`);
      t.same(ready.body, { status: 'ready', db: 'ok', redis: 'ok' });
    }
  });

  await t.test('the rate limit is exact across the three daemons', async (t) => {
    const user = await funded(100, { rate_limit: 12 });
    const answers = await Promise.all(Array.from({ length: 36 }, (_, i) => call(started[i % 3] as Daemon, user.key)));
    const statuses = answers.map((answer) => answer.status);
    t.equal(statuses.filter((s) => s === 200).length, 12, '12 calls admitted in the minute, whichever daemon took them');
    t.equal(statuses.filter((s) => s === 429).length, 24, 'the other 24 refused with 429');
    const { charges, balance, sum } = await books(user.accountId);
    t.equal(charges.size, 12, 'one charge per admitted call');
    t.equal(balance, sum, 'the balance is the ledger sum');
  });

  await t.test('200 concurrent calls through three daemons never overspend the wallet', async (t) => {
    const user = await funded(0.03);
    // Waves of 200 concurrent calls, spread over the daemons, until the wallet answers none.
    const ok: RawResponse[] = [];
    let refused = 0;
    let waves = 0;
    for (; waves < 30; waves++) {
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => call(started[i % 3] as Daemon, user.key)));
      const fine = answers.filter((answer) => answer.status === 200);
      ok.push(...fine);
      refused += answers.filter((answer) => answer.status === 402).length;
      if (answers.some((answer) => answer.status !== 200 && answer.status !== 402)) t.fail(`unexpected statuses: ${answers.map((answer) => answer.status).join(',')}`);
      if (fine.length === 0) break;
    }
    t.ok(ok.length > 0 && refused > 0, `${ok.length} calls answered and ${refused} refused with 402 in ${waves + 1} waves of 200`);
    const { balance, sum, charges } = await books(user.accountId);
    t.ok(balance >= 0n, `the balance never went below zero (${balance} µINR left, less than one call's hold)`);
    t.equal(balance, sum, 'the balance is the ledger sum');
    t.equal(charges.size, ok.length, 'one charge per answered call');
    let stated = 0n;
    for (const answer of ok) {
      const id = header(answer, 'x-request-id') as string;
      const cost = BigInt(Math.round(Number(header(answer, 'x-gateway-cost-inr')) * 1e6));
      stated += cost;
      if (charges.get(id) !== cost) t.fail(`call ${id}: charged ${charges.get(id)}, stated ${cost}`);
    }
    t.equal(30_000n - balance, stated, 'what the answers stated is what left the wallet, to the µINR');
    await until('every hold released', async () => (await heldOn(user.accountId)) === 0, 5000);
  });

  await t.test('a key revoked on one daemon is refused by the other two within 2 s', async (t) => {
    const user = await funded(10);
    t.equal((await call(b, user.key)).status, 200, 'b accepts the key (and caches it)');
    t.equal((await call(c, user.key)).status, 200, 'c too');
    const revoked = await a.http('DELETE', `/api/management/api-keys/${user.keyId}`, { token: admin });
    t.equal(revoked.status, 200);
    const since = Date.now();
    // The bound: pub/sub invalidation, not the 5 s key cache.
    await until('b and c refuse the revoked key', async () => (await call(b, user.key)).status === 401 && (await call(c, user.key)).status === 401, 2000);
    t.pass(`refused by both within ${Date.now() - since} ms of the revocation`);
  });

  await t.test('the live usage feed of one daemon shows the calls of the others', async (t) => {
    const user = await funded(10);
    const stream = await request(`${c.url}/api/management/usage/stream?account=${user.accountId}`, { headers: { authorization: `Bearer ${admin}` } });
    t.equal(stream.statusCode, 200);
    let text = '';
    stream.body.on('data', (chunk: Buffer) => (text += chunk.toString()));
    await until('the stream is open', () => text.includes('usage stream open'));
    const onA = header(await call(a, user.key), 'x-request-id') as string;
    const onB = header(await call(b, user.key), 'x-request-id') as string;
    await until("both calls on c's feed", () => text.includes(onA) && text.includes(onB), 5000);
    t.pass('a call on a and a call on b both reached the feed on c');
    stream.body.destroy();
  });

  await t.test('the response cache is shared: an exact hit and a paraphrase hit on other hosts', async (t) => {
    const user = await funded(10);
    const ask = (daemon: Daemon, content: string) => postJson(`${daemon.url}/v1/chat/completions`, { authorization: `Bearer ${user.key}` }, { model: 'openai/gpt-4o', messages: [{ role: 'user', content }] });
    const question = 'In two sentences, explain how photosynthesis turns sunlight water and carbon dioxide into sugar and oxygen in green plants';
    const paraphrase = 'In two sentences explain how photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen in green plants please';
    sim.enqueue({}, { text: 'Shared across hosts.' });
    const first = await ask(a, question);
    t.equal(header(first, 'x-gateway-cache'), 'miss');
    await until('the exact hit on b', async () => header(await ask(b, question), 'x-gateway-cache') === 'exact', 5000);
    // c indexes the entries the others stored at its next look at the table (every 5 s). Asked
    // before that, c would miss and store its own answer for the paraphrase: ask once, after.
    await new Promise((resolve) => setTimeout(resolve, 8000));
    const hit = await ask(c, paraphrase);
    t.equal(header(hit, 'x-gateway-cache'), 'semantic', 'c finds the paraphrase of the question a stored');
    t.equal(hit?.json?.choices?.[0]?.message?.content, 'Shared across hosts.', "c answers with a's answer");
    const purged = await b.http('DELETE', `/api/management/cache?account=${user.accountId}`, { token: admin });
    t.equal(purged.status, 200);
    t.equal(header(await ask(c, question), 'x-gateway-cache'), 'miss', 'a purge on one daemon empties the shared table');
  });

  await t.test('an image hosted by one daemon is served by the others', async (t) => {
    const user = await funded(10);
    const generated = await postJson(`${a.url}/v1/images/generations`, { authorization: `Bearer ${user.key}` }, { model: 'gpt-image-1', prompt: 'a dog', quality: 'low' });
    t.equal(generated.status, 200, generated.text.slice(0, 200));
    const url = String(generated.json?.data?.[0]?.url ?? '');
    const path = new URL(url).pathname;
    t.match(path, /^\/v1\/images\/files\/[0-9a-z]+-[A-Za-z0-9_-]{43}\.png$/);
    for (const daemon of [b, c]) {
      const image = await request(`${daemon.url}${path}`);
      const body = Buffer.from(await image.body.arrayBuffer());
      t.equal(image.statusCode, 200, `${daemon.name} serves it`);
      t.equal(image.headers['content-type'], 'image/png');
      t.same([...body.subarray(1, 4)].map((x) => String.fromCharCode(x)).join(''), 'PNG', 'a PNG');
    }
    const other = await request(`${c.url}${path.replace(/-[A-Za-z0-9_-]{43}/, `-${'A'.repeat(43)}`)}`);
    await other.body.dump();
    t.equal(other.statusCode, 404, 'another name finds nothing');
    t.same(readdirSync(a.dir.path), ['gateway.yaml'], 'nothing kept on the host: no file beside the config');
  });

  await t.test('kill -9 of one daemon under load: every completed call is in the ledger, the others serve on', async (t) => {
    sim.setDefault({ delayMs: 40 });
    t.teardown(() => sim.setDefault({}));
    const user = await funded(100);
    interface Outcome {
      daemon: string;
      status: number | 'cut';
      requestId: string | undefined;
      cost: bigint;
      at: number;
    }
    const outcomes: Outcome[] = [];
    let stop = false;
    const worker = async (daemon: Daemon) => {
      while (!stop) {
        try {
          const answer = await call(daemon, user.key);
          outcomes.push({ daemon: daemon.name, status: answer.status, requestId: header(answer, 'x-request-id'), cost: BigInt(Math.round(Number(header(answer, 'x-gateway-cost-inr') ?? 0) * 1e6)), at: Date.now() });
        } catch {
          outcomes.push({ daemon: daemon.name, status: 'cut', requestId: undefined, cost: 0n, at: Date.now() });
          if (daemon === b) await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    const workers = started.flatMap((daemon) => Array.from({ length: 6 }, () => worker(daemon)));
    await until('calls completed on every daemon', () => new Set(outcomes.filter((o) => o.status === 200).map((o) => o.daemon)).size === 3, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    b.running.kill('SIGKILL');
    const killedAt = Date.now();
    const exit = await b.running.exit;
    t.equal(exit.code, null, 'b was killed, no clean stop');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    stop = true;
    await Promise.all(workers);

    const completed = outcomes.filter((o) => o.status === 200);
    const onB = completed.filter((o) => o.daemon === 'b');
    t.ok(onB.length > 0, `b completed ${onB.length} calls before it was killed`);
    const after = completed.filter((o) => o.daemon !== 'b' && o.at > killedAt + 100);
    t.ok(after.length > 0, `a and c served ${after.length} calls after the kill`);
    t.equal(outcomes.filter((o) => o.status !== 200 && o.status !== 'cut').length, 0, 'no call failed other than those cut on b');
    const { balance, sum, charges } = await books(user.accountId);
    const missing = completed.filter((o) => charges.get(o.requestId as string) !== o.cost);
    t.same(missing, [], `every one of the ${completed.length} completed calls is in the ledger at its stated cost, b's included`);
    t.equal(balance, sum, 'the balance is the ledger sum');
    t.ok(charges.size >= completed.length, `${charges.size} charges for ${completed.length} completed calls (a call b committed but could not finish is charged too)`);
    // b's calls in flight when it died left holds in Redis; they go with their lease.
    await until("the dead daemon's holds expire with their lease", async () => (await heldOn(user.accountId)) === 0, 4000 + 8000);
    t.pass(`no hold outlived b by more than its ${LEASE} lease (plus the purge interval)`);
  });

  await t.test('readiness: 503 while the database is read-only, and no answer goes out unbilled', async (t) => {
    const user = await funded(10);
    const name = database.name;
    const reconnectAll = () => sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`;
    await sql.unsafe(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
    await reconnectAll();
    try {
      await until('a reports the database not ready', async () => (await a.http('GET', '/health/ready')).status === 503, 10_000);
      const ready = await a.http('GET', '/health/ready');
      t.match(ready.body, { status: 'not_ready', db: 'error', redis: 'ok', error: { code: 503, reason: 'database_unavailable' } });
      const before = await books(user.accountId);
      const refused = await call(a, user.key);
      t.not(refused.status, 200, `no answer the ledger cannot take (got ${refused.status})`);
      t.match(refused.json, { error: { message: String, type: String, code: refused.status } }, 'an error in the contract shape');
      const afterCall = await books(user.accountId);
      t.equal(afterCall.charges.size, before.charges.size, 'and no charge');
    } finally {
      await sql.unsafe(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
      await reconnectAll();
    }
    await until('a is ready again', async () => (await a.http('GET', '/health/ready')).status === 200, 10_000);
    t.equal((await call(a, user.key)).status, 200, 'and serves again');
    // Every connection cut at once (a restart, a failover): the calls in progress are committed
    // on new connections (settlement retries what failed on a dead one), each charged once.
    const before = (await books(user.accountId)).charges.size;
    // Each on a connection of its own: a kept-alive one from earlier calls could be closed by
    // the client pool's idle timer as it is reused (undici's "other side closed"), which is not
    // what this checks.
    const fresh = (daemon: Daemon) =>
      postJson(`${daemon.url}/v1/chat/completions`, { authorization: `Bearer ${user.key}`, connection: 'close' }, { model: MODEL, messages: [{ role: 'user', content: 'hi there' }], max_tokens: 5 });
    const during = await Promise.all([reconnectAll(), ...Array.from({ length: 6 }, (_, i) => fresh(started[i % 2 === 0 ? 0 : 2] as Daemon))]);
    const answers = during.slice(1) as RawResponse[];
    t.same(answers.map((answer) => answer.status), Array(6).fill(200), `every call answered through the cut ${answers.filter((answer) => answer.status !== 200).map((answer) => answer.text.slice(0, 300)).join(' | ')}`);
    const after = await books(user.accountId);
    t.equal(after.charges.size, before + 6, 'and charged once each');
    t.equal(after.balance, after.sum, 'the balance is the ledger sum');
  });
});

t.test('without Redis, a second daemon on the same PostgreSQL is refused', { skip: postgresSkipReason() }, async (t) => {
  const database = await scratchDatabase();
  t.teardown(() => database.drop());
  const first = tempDir();
  const second = tempDir();
  t.teardown(() => {
    first.remove();
    second.remove();
  });
  const quiet = { logger: pino({ level: 'silent' }) };
  const alone = await startGateway(testConfig(first.path, { database: { url: database.url } }), quiet);
  await t.rejects(startGateway(testConfig(second.path, { database: { url: database.url } }), quiet), /another gateway daemon is serving/, 'a second daemon without Redis');
  await t.rejects(
    startGateway(testConfig(second.path, { database: { url: database.url }, redis: { url: REDIS_URL, key_prefix: `pg-alone-${randomUUID()}:` } }), quiet),
    /without redis is serving/,
    'a daemon with Redis beside one without',
  );
  await alone.close();
  const next = await startGateway(testConfig(second.path, { database: { url: database.url } }), quiet);
  t.pass('once the first stopped, another may serve');
  await next.close();
});
