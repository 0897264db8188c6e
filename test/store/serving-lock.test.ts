import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { startGateway } from '../../src/main.js';
import { ServingLock } from '../../src/store/serving-lock.js';
import { tempDir, testConfig } from '../support/gateway.js';

t.test('one daemon alone, or any number sharing through Redis, never both', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const db = join(dir.path, 'gateway.db');

  const alone = ServingLock.take(db, 'alone');
  t.ok(alone, 'the first daemon without Redis takes it');
  t.throws(() => ServingLock.take(db, 'alone'), /another gateway daemon is serving .*gateway\.db: without redis configured only one daemon/);
  t.throws(() => ServingLock.take(db, 'shared'), /a gateway daemon without redis is serving .*gateway\.db/);
  alone?.release();
  alone?.release(); // twice is harmless

  const a = ServingLock.take(db, 'shared');
  const b = ServingLock.take(db, 'shared');
  t.ok(a && b, 'daemons with Redis share it');
  t.throws(() => ServingLock.take(db, 'alone'), /another gateway daemon is serving/, 'a daemon without Redis is refused beside them');
  a?.release();
  t.throws(() => ServingLock.take(db, 'alone'), /another gateway daemon is serving/, 'while any of them runs');
  b?.release();
  const again = ServingLock.take(db, 'alone');
  t.ok(again, 'free once they have all stopped');
  again?.release();

  t.equal(ServingLock.take(':memory:', 'alone'), undefined, 'an in-memory database needs none');
});

t.test('a second daemon without Redis on the same database refuses to start, and leaves the first serving', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const config = testConfig(dir.path);
  const logger = pino({ level: 'silent' });
  const first = await startGateway(config, { logger });
  await t.rejects(startGateway(config, { logger }), /another gateway daemon is serving .*: without redis configured only one daemon may serve a database/);
  const health = await fetch(`${first.url}/health/ready`);
  t.equal(health.status, 200, 'the first daemon still serves');
  await first.close();
  const next = await startGateway(config, { logger });
  t.pass('a daemon starts once the first has stopped');
  await next.close();
});
