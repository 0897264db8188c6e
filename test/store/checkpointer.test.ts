import { join } from 'node:path';
import t from 'tap';
import { Checkpointer } from '../../src/store/checkpointer.js';
import { openDatabase } from '../../src/store/db.js';
import { tempDir } from '../support/gateway.js';

/**
 * WAL checkpoints off the event loop (src/store/checkpointer.ts): the worker starts on the
 * first write and takes the checkpoints from the daemon's connection, keeps running while
 * writes go on, stops once they have stopped (SQLite's automatic checkpoint back on), starts
 * again on the next write, and never after stop().
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test('the worker checkpoints while writes go on, stops when they stop, and starts again on the next', async (t) => {
  const dir = tempDir();
  const db = openDatabase(join(dir.path, 'wal.db'), { migrations: [] });
  t.teardown(() => {
    db.close();
    dir.remove();
  });
  db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
  const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
  const errors: string[] = [];
  const checkpointer = new Checkpointer(db, db.name, 1000, (message) => errors.push(message), { intervalMs: 50, idleMs: 300 });
  const autocheckpoint = () => db.pragma('wal_autocheckpoint', { simple: true });

  t.equal(checkpointer.running, false, 'no worker before the first write');
  t.equal(autocheckpoint(), 1000, "SQLite's automatic checkpoint is on meanwhile");

  // About 250 pages of WAL in separate commits, more than one interval of them.
  for (let i = 0; i < 60; i++) {
    insert.run(Buffer.alloc(16_384, i));
    checkpointer.wrote();
    if (i % 20 === 19) await sleep(60);
  }
  t.equal(checkpointer.running, true, 'the first write started the worker');
  t.equal(autocheckpoint(), 0, "the daemon's connection no longer checkpoints");
  await sleep(200);
  insert.run(Buffer.alloc(100));
  checkpointer.wrote();
  const [frames] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
  t.ok((frames?.log ?? Infinity) < 10, `the worker checkpointed the WAL, so the next write started it over (${frames?.log} frames in it)`);

  for (let i = 0; i < 8; i++) {
    await sleep(100);
    insert.run(Buffer.alloc(100));
    checkpointer.wrote();
  }
  t.equal(checkpointer.running, true, 'writes every 100 ms (idle limit 300 ms): the worker keeps running');

  await sleep(1000);
  t.equal(checkpointer.running, false, 'no write for over twice the idle limit: the worker stopped');
  t.equal(autocheckpoint(), 1000, "SQLite's automatic checkpoint is back on");

  insert.run(Buffer.alloc(100));
  checkpointer.wrote();
  t.equal(checkpointer.running, true, 'the next write starts a worker again');
  t.equal(autocheckpoint(), 0);

  await checkpointer.stop();
  t.equal(checkpointer.running, false, 'stop() stops it');
  t.equal(autocheckpoint(), 1000);
  checkpointer.wrote();
  t.equal(checkpointer.running, false, 'and a write after stop() starts none');
  t.same(errors, [], 'no checkpoint failed');
});
