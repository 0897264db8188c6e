import t from 'tap';
import type { PgSql } from '../../src/store/pg/db.js';
import { PgFundsReader } from '../../src/store/pg/funds-reader.js';
import { PgLedger } from '../../src/store/pg/ledger.js';
import { postgresSkipReason, scratchForFile, seedTwoWallets } from '../support/postgres.js';

/**
 * Admission's funds reads on PostgreSQL (issue 32): the reads asked for in one turn go out in
 * one statement, each caller gets its own account's and key's figures (a key of another
 * account is no key), and nothing is cached: a read after a charge sees it.
 */

const skip = postgresSkipReason();
let sql: PgSql;
scratchForFile({ max: 4, migrate: true }, async (_database, pool) => {
  sql = pool;
  await seedTwoWallets(sql);
});

/** The pool, counting the statements sent through it (a tagged call is one statement). */
function counting(pool: PgSql): { sql: PgSql; statements: () => number } {
  let n = 0;
  const proxy = new Proxy(pool, {
    apply(target, thisArg, args: unknown[]) {
      n += 1;
      return Reflect.apply(target, thisArg, args) as unknown;
    },
  });
  return { sql: proxy, statements: () => n };
}

t.test('the reads of one turn go out in one statement, each answered with its own funds', { skip }, async (t) => {
  const { sql: counted, statements } = counting(sql);
  const reader = new PgFundsReader(counted);
  const asks: Array<[string, string]> = [];
  for (let i = 0; i < 40; i++) asks.push(i % 4 === 0 ? ['acc_a', 'key_a'] : i % 4 === 1 ? ['acc_b', 'key_b'] : i % 4 === 2 ? ['acc_a', 'key_b'] : ['acc_nope', 'key_a']);
  const results = await Promise.all(asks.map(([account, key]) => reader.read(account, key)));
  t.equal(statements(), 1, 'one statement for 40 reads');
  for (const [i, funds] of results.entries()) {
    const [account] = asks[i] as [string, string];
    if (account === 'acc_nope') {
      t.equal(funds, undefined, 'an account that does not exist: no funds');
      continue;
    }
    t.equal(funds?.balanceMicros, account === 'acc_a' ? 7_000_000 : 3_000_000, `read ${i}: its account's balance`);
    if (i % 4 === 0) t.equal(funds?.key?.budgetMicros, 9_000_000, `read ${i}: its key's budget`);
    if (i % 4 === 1) t.same([funds?.key?.budgetMicros, funds?.key?.spentMicros], [null, 0], `read ${i}: a key without a budget`);
    if (i % 4 === 2) t.equal(funds?.key, undefined, `read ${i}: another account's key is no key`);
  }
});

t.test('reads in separate turns each go out at once, and see every commit before them', { skip }, async (t) => {
  const { sql: counted, statements } = counting(sql);
  const reader = new PgFundsReader(counted);
  const first = await reader.read('acc_a', 'key_a');
  await new PgLedger(sql).chargeMany([{ accountId: 'acc_a', amountMicros: 250, requestId: 'req_funds_1', apiKeyId: 'key_a', now: Date.now() }]);
  const second = await reader.read('acc_a', 'key_a');
  t.equal(statements(), 2, 'one statement each');
  t.equal((first?.balanceMicros ?? 0) - (second?.balanceMicros ?? 0), 250, 'the charge is seen: nothing cached');
  t.equal((second?.key?.spentMicros ?? 0) - (first?.key?.spentMicros ?? 0), 250, "and the key's spend");
});

t.test('a failed statement fails every read of its batch, and the next batch still goes out', { skip }, async (t) => {
  const reader = new PgFundsReader(sql);
  // Not text: the statement fails, as a dropped table or a bad id would make it.
  const bad = [reader.read('acc_a', 'key_a'), reader.read('\u0000', 'key_a')];
  const settled = await Promise.allSettled(bad);
  t.same(
    settled.map((result) => result.status),
    ['rejected', 'rejected'],
    'both reads of the failed batch fail',
  );
  t.equal((await reader.read('acc_b', 'key_b'))?.balanceMicros, 3_000_000, 'the reader still works');
});
