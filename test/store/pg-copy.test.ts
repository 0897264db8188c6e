import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import t from 'tap';
import { copySqliteToPostgres } from '../../src/store/pg/copy.js';
import { connectPostgres } from '../../src/store/pg/db.js';
import { runCli } from '../support/cli.js';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { postgresSkipReason, scratchDatabase } from '../support/postgres.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/** `gateway db migrate`: an SQLite deployment into an empty PostgreSQL, the money verified on both sides. */

const skip = postgresSkipReason();

t.test('an SQLite deployment copied into PostgreSQL: every row, every rupee; refusals', { skip }, async (t) => {
  const sim = await ProviderSimulator.start();
  t.teardown(() => sim.close());
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url) }, {}, { backend: 'sqlite' });
  const alice = await fundedKey(gw, { balance: 25 });
  const bob = await fundedKey(gw, { balance: 7.5 });
  for (const who of [alice, bob, alice]) {
    await new OpenAI({ apiKey: who.key, baseURL: `${gw.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });
  }
  gw.app.settlement.drain();
  await gw.close(); // the daemon stops; its files stay
  t.teardown(() => rmSync(gw.dir, { recursive: true, force: true }));
  const sqlitePath = join(gw.dir, 'gateway.db');
  const source = new Database(sqlitePath, { readonly: true });
  const expected = source.prepare('SELECT (SELECT count(*) FROM accounts) AS accounts, (SELECT sum(balance_micros) FROM accounts) AS balance, (SELECT count(*) FROM ledger) AS ledger, (SELECT count(*) FROM usage) AS usage, (SELECT sum(cost_micros) FROM usage) AS cost').get() as { accounts: number; balance: number; ledger: number; usage: number; cost: number };
  source.close();
  t.ok(expected.usage >= 3 && expected.cost > 0, 'calls were billed');

  const target = await scratchDatabase();
  t.teardown(() => target.drop());
  const report = await copySqliteToPostgres(sqlitePath, target.url);
  t.equal(report.accounts, expected.accounts);
  t.equal(report.balanceMicros, expected.balance);
  t.equal(report.ledgerMicros, expected.balance, 'Σ balances = Σ ledger');
  t.equal(report.usageCostMicros, expected.cost);
  t.match(report.tables, [{ table: 'accounts', rows: expected.accounts }, { table: 'api_keys' }, { table: 'management_keys' }, { table: 'ledger', rows: expected.ledger }, { table: 'usage', rows: expected.usage }, { table: 'session_revocations' }]);

  const sql = connectPostgres(target.url, { max: 1 });
  t.teardown(() => sql.end({ timeout: 2 }));
  const [a] = await sql<Array<{ balance_micros: number }>>`SELECT balance_micros FROM accounts WHERE id = ${alice.accountId}`;
  const [l] = await sql<Array<{ total: number }>>`SELECT sum(amount_micros)::bigint AS total FROM ledger WHERE account_id = ${alice.accountId}`;
  t.equal(a?.balance_micros, l?.total, 'alice: balance = ledger in PostgreSQL');
  t.ok((a?.balance_micros ?? 0) < 25_000_000, 'alice was charged');
  const [key] = await sql<Array<{ cache: boolean; key_hash: string }>>`SELECT cache, key_hash FROM api_keys WHERE id = ${bob.keyId}`;
  t.equal(key?.cache, true, 'booleans converted');
  const [next] = await sql<Array<{ id: number }>>`INSERT INTO ledger (account_id, kind, amount_micros, balance_after_micros, created_at) VALUES (${bob.accountId}, 'topup', 1, 1, 0) RETURNING id`;
  t.ok((next?.id ?? 0) > expected.ledger, 'the id sequence continues after the copied rows');

  await t.rejects(copySqliteToPostgres(sqlitePath, target.url), /already holds accounts rows; the copy goes into an empty database only/, 'a non-empty target is refused');

  // The CLI, into another empty database.
  const second = await scratchDatabase();
  t.teardown(() => second.drop());
  const cli = await runCli(['db', 'migrate', '--from', sqlitePath, '--to', second.url, '--json']);
  t.equal(cli.code, 0, cli.stderr);
  t.match(JSON.parse(cli.stdout), { accounts: expected.accounts, balanceMicros: expected.balance });
  const again = await runCli(['db', 'migrate', '--from', sqlitePath, '--to', second.url]);
  t.equal(again.code, 1, 'refused: exit 1');
  t.match(again.stderr, /empty database only/);
  t.notMatch(again.stderr, /postgres:\/\/postgres@/, 'the URL is not echoed back');

  // A source whose balances do not add up: nothing copied.
  const tampered = join(gw.dir, 'tampered.db');
  copyFileSync(sqlitePath, tampered);
  const writable = new Database(tampered);
  writable.prepare('UPDATE accounts SET balance_micros = balance_micros + 1 WHERE id = ?').run(bob.accountId);
  writable.close();
  const third = await scratchDatabase();
  t.teardown(() => third.drop());
  await t.rejects(copySqliteToPostgres(tampered, third.url), /does not add up: 1 account\(s\)/);
  // A billing journal with settled calls not yet applied: refused.
  mkdirSync(`${tampered}-billing`, { recursive: true });
  writeFileSync(`${tampered}-billing/123.abc.log`, '{"requestId":"x"}\n');
  await t.rejects(copySqliteToPostgres(tampered, third.url), /billing journal .* holds settled calls not yet in the ledger/);
  const check = connectPostgres(third.url, { max: 1 });
  t.teardown(() => check.end({ timeout: 2 }));
  const [{ exists } = { exists: true }] = await check<Array<{ exists: boolean }>>`SELECT to_regclass('accounts') IS NOT NULL AS exists`;
  t.equal(exists, false, 'nothing was written to the target');
});
