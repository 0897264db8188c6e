import t from 'tap';
import { AccountsRepo } from '../../src/store/accounts.js';
import { openDatabase } from '../../src/store/db.js';
import { KeysRepo, type KeyRecord } from '../../src/store/keys.js';
import { SessionsRepo } from '../../src/store/sessions.js';
import { PgAccounts, PgKeys, PgSessions } from '../../src/store/pg/accounts.js';
import { connectPostgres, migratePostgres, type PgSql } from '../../src/store/pg/db.js';
import { postgresSkipReason, scratchForFile, type ScratchDatabase } from '../support/postgres.js';

/** Accounts, keys and ended sessions on PostgreSQL, step for step against the SQLite repos. */

const skip = postgresSkipReason();
let db: ScratchDatabase;
let sql: PgSql;
scratchForFile({ max: 2, migrate: true }, async (database, pool) => {
  db = database;
  sql = pool;
});

t.test('the same records and rules as SQLite', { skip }, async (t) => {
  const sqlite = openDatabase(':memory:');
  t.teardown(() => sqlite.close());
  const lite = { accounts: new AccountsRepo(sqlite), api: new KeysRepo(sqlite, 'api'), management: new KeysRepo(sqlite, 'management'), sessions: new SessionsRepo(sqlite) };
  const pg = { accounts: new PgAccounts(sql), api: new PgKeys(sql, 'api'), management: new PgKeys(sql, 'management'), sessions: new PgSessions(sql) };

  const now = 1_790_000_000_000;
  for (const [i, role] of (['admin', 'user', 'user'] as const).entries()) {
    const input = { id: `acc_${i}`, email: `Person${i}@Example.com`, name: `P${i}`, passwordHash: i === 2 ? null : `hash${i}`, role, now: now + i };
    t.same(await pg.accounts.insert(input), lite.accounts.insert(input), `account ${i}`);
  }
  await t.rejects(pg.accounts.insert({ id: 'acc_x', email: 'person1@example.COM', name: 'dup', passwordHash: null, role: 'user', now }), { code: '23505' }, 'a taken e-mail, whatever its case');
  t.throws(() => lite.accounts.insert({ id: 'acc_x', email: 'person1@example.COM', name: 'dup', passwordHash: null, role: 'user', now }), { code: 'SQLITE_CONSTRAINT_UNIQUE' }, 'SQLite refuses it too');
  t.same(await pg.accounts.byId('acc_1'), lite.accounts.byId('acc_1'));
  t.same(await pg.accounts.byEmail('person2@example.com'), lite.accounts.byEmail('person2@example.com'), 'by e-mail, whatever its case');
  t.same(await pg.accounts.list(2, 1), lite.accounts.list(2, 1));
  t.equal(await pg.accounts.countAdmins(), lite.accounts.countAdmins());

  const same = async (label: string, a: Promise<KeyRecord | undefined> | KeyRecord | undefined, b: KeyRecord | undefined) => t.same(await a, b, label);
  for (const kind of ['api', 'management'] as const) {
    const key = { id: `${kind}_1`, accountId: 'acc_1', name: 'laptop', keyHash: `hash-${kind}-1`, maskedKey: 'sk-ab…cd', rateLimit: 60, budgetMicros: 5_000_000, expiresAt: null, now, cache: false };
    await same(`${kind}: insert`, pg[kind].insert(key), lite[kind].insert(key));
    const second = { ...key, id: `${kind}_2`, keyHash: `hash-${kind}-2`, now: now + 5 };
    await same(`${kind}: a second`, pg[kind].insert(second), lite[kind].insert(second));
    await same(`${kind}: by hash`, pg[kind].byHash(`hash-${kind}-2`), lite[kind].byHash(`hash-${kind}-2`));
    t.same(await pg[kind].listByAccount('acc_1'), lite[kind].listByAccount('acc_1'), `${kind}: by account`);
    const changes = { name: 'renamed', rateLimit: 120, budgetMicros: null, expiresAt: now + 1000, cache: true };
    await same(`${kind}: update`, pg[kind].update(`${kind}_1`, changes), lite[kind].update(`${kind}_1`, changes));
    await same(`${kind}: revoke`, pg[kind].revoke(`${kind}_1`, now + 10), lite[kind].revoke(`${kind}_1`, now + 10));
    await same(`${kind}: revoked once`, pg[kind].revoke(`${kind}_1`, now + 99), lite[kind].revoke(`${kind}_1`, now + 99));
    const touches: Array<[string, number]> = [[`${kind}_1`, now + 50], [`${kind}_2`, now + 60]];
    await pg[kind].touchMany(touches);
    lite[kind].touchMany(touches);
    await pg[kind].touchMany([[`${kind}_1`, now + 20]]); // older: kept at the newer time
    lite[kind].touchMany([[`${kind}_1`, now + 20]]);
    t.same(await pg[kind].listByAccount('acc_1'), lite[kind].listByAccount('acc_1'), `${kind}: last use times`);
  }
  await t.rejects(pg.api.insert({ id: 'api_3', accountId: 'acc_1', name: 'x', keyHash: 'hash-api-1', maskedKey: 'm', expiresAt: null, now }), { code: '23505' }, 'one key per hash');

  await pg.sessions.revoke('jti-1', 'acc_1', now + 100);
  await pg.sessions.revoke('jti-1', 'acc_1', now + 999); // again: kept once
  await pg.sessions.revoke('jti-2', 'acc_1', now + 300);
  t.ok(await pg.sessions.isRevoked('jti-1'));
  t.notOk(await pg.sessions.isRevoked('jti-3'));
  t.equal(await pg.sessions.purge(now + 200), 1, 'the expired one purged');
  t.notOk(await pg.sessions.isRevoked('jti-1'));
  t.ok(await pg.sessions.isRevoked('jti-2'));
});
