import t from 'tap';
import { connectPostgres } from '../../src/store/pg/db.js';
import { PgLedger } from '../../src/store/pg/ledger.js';
import { PgStore } from '../../src/store/pg/store.js';
import { postJson, until } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { postgresSkipReason } from '../support/postgres.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * A daemon alone on PostgreSQL remembers admission's funds (issue 32, store/pg/funds-cache.ts):
 * its calls read a wallet once, the cache agrees with the database after them, a budget
 * lowered through the management API refuses the very next call, and a top-up made by another
 * process lets a refused wallet's next call through at once (the refusal's second look).
 * PostgreSQL in either pass (run once: test/run-postgres.sh).
 */

const skip = postgresSkipReason();
const MODEL = 'openai/gpt-4o-mini';

t.test('a daemon alone on PostgreSQL: wallets read once, and every change seen by the next call', { skip }, async (t) => {
  const sim = await ProviderSimulator.start();
  t.teardown(() => sim.close());
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url) }, {}, { backend: 'postgres' });
  t.teardown(() => gw.stop());
  const store = gw.app.store;
  if (!(store instanceof PgStore)) throw new Error('not on PostgreSQL');
  const cache = store.fundsCache;
  await until('the funds cache to listen', () => cache.isListening);
  // Reads are used for ten seconds at most; longer here, so that 20 calls on a slow machine
  // all see the in-place updates (test/store/pg-funds-cache.test.ts checks the limit).
  cache.maxAgeMs = 60_000;
  sim.setDefault({ text: 'hello there' });

  const funded = await fundedKey(gw, { balance: 10 });
  const chat = (key: string) => postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${key}` }, { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
  const misses = cache.misses;
  const hits = cache.hits;
  for (let i = 0; i < 20; i++) t.equal((await chat(funded.key)).status, 200);
  t.ok(cache.misses - misses <= 2, `20 calls read the database ${cache.misses - misses} times`);
  t.ok(cache.hits - hits >= 18, `and memory ${cache.hits - hits} times`);

  // What the cache holds is what the database holds: every call's charge applied once.
  const sql = connectPostgres(gw.app.config.database.url ?? '', { max: 1 });
  t.teardown(() => sql.end({ timeout: 1 }));
  const [row] = await sql<Array<{ balance: number; spent: number; charges: number }>>`
    SELECT a.balance_micros AS balance, k.spent_micros AS spent, (SELECT -sum(amount_micros) FROM ledger WHERE account_id = a.id AND kind = 'charge')::bigint AS charges
      FROM accounts a JOIN api_keys k ON k.account_id = a.id WHERE a.id = ${funded.accountId} AND k.id = ${funded.keyId}`;
  const hitsBefore = cache.hits;
  const seen = await store.funds(funded.accountId, funded.keyId);
  t.equal(cache.hits, hitsBefore + 1, 'the figures below are the cached ones');
  t.equal(seen?.balanceMicros, row?.balance, 'the balance');
  t.equal(seen?.key?.spentMicros, row?.spent, "the key's spend");
  t.equal((row?.balance ?? 0) + (row?.charges ?? 0), 10_000_000, 'the charges and the balance add up to the top-up');

  // A budget lowered through the management API: the next call is refused.
  const patched = await gw.http('PATCH', `/api/management/api-keys/${funded.keyId}`, { token: gw.adminKey, body: { budget: 0.000001 } });
  t.equal(patched.status, 200, patched.text);
  const refused = await chat(funded.key);
  t.equal(refused.status, 402, 'refused by the lowered budget at once');
  t.match(refused.text, /budget/);

  // An empty wallet, refused; then another process tops it up: the next call goes through
  // without waiting for the notice (the refusal reads the database again).
  const empty = await fundedKey(gw, { balance: 0 });
  t.equal((await chat(empty.key)).status, 402, 'an empty wallet is refused');
  t.equal((await chat(empty.key)).status, 402, 'still');
  await new PgLedger(sql).credit('topup', { accountId: empty.accountId, amountMicros: 5_000_000, now: Date.now() });
  t.equal((await chat(empty.key)).status, 200, 'topped up elsewhere: the next call is admitted');
});
