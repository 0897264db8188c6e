import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { LogDestination, type WriteFn } from '../../src/core/log-destination.js';
import { tempDir } from '../support/gateway.js';

const ROOT = new URL('../../', import.meta.url).pathname;

function file(t: { teardown: (fn: () => void) => void }): { path: string; fd: number; text: () => string } {
  const dir = tempDir();
  const path = join(dir.path, 'out.log');
  const fd = openSync(path, 'a');
  t.teardown(() => {
    closeSync(fd);
    dir.remove();
  });
  return { path, fd, text: () => readFileSync(path, 'utf8') };
}

const flushed = (destination: LogDestination): Promise<void> => new Promise((resolve) => destination.flush(resolve));
const line = (i: number): string => `${JSON.stringify({ i, msg: 'request', pad: 'x'.repeat(i % 7) })}\n`;

t.test('lines wait for a flush or a full batch, then go out whole and in order', async (t) => {
  const out = file(t);
  const destination = new LogDestination(out.fd, { flushAt: 1000 });
  t.teardown(() => destination.end());
  destination.write(line(1));
  destination.write(line(2));
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(out.text(), '', 'below the batch size nothing is written yet');
  await flushed(destination);
  t.equal(out.text(), line(1) + line(2), 'a flush writes them');
  let expected = line(1) + line(2);
  for (let i = 3; i < 200; i++) {
    destination.write(line(i));
    expected += line(i);
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.ok(out.text().length >= 1000, 'a full batch is written without a flush');
  await flushed(destination);
  t.equal(out.text(), expected, 'every line once, in order');
  await flushed(destination);
  t.equal(out.text(), expected, 'a flush with nothing pending calls back and writes nothing');
});

t.test('partial writes continue where they stopped, and EAGAIN is retried', async (t) => {
  const out = file(t);
  let calls = 0;
  // At most 7 bytes per write, and every third write answers EAGAIN (a full non-blocking pipe).
  const write: WriteFn = (fd, buffer, offset, length, _position, callback) => {
    calls++;
    if (calls % 3 === 0) {
      setImmediate(() => callback(Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' }), 0));
      return;
    }
    const n = writeSync(fd, buffer, offset, Math.min(7, length));
    setImmediate(() => callback(null, n));
  };
  const destination = new LogDestination(out.fd, { flushAt: 100, retryMs: 1, write });
  t.teardown(() => destination.end());
  let expected = '';
  for (let i = 0; i < 40; i++) {
    const text = `${JSON.stringify({ i, msg: 'é ✓ multi-byte' })}\n`;
    destination.write(text);
    expected += text;
  }
  await flushed(destination);
  t.equal(out.text(), expected, 'the bytes of every line, exactly once');
  t.ok(calls > 40, `written in many pieces (${calls} writes)`);
});

t.test('an fd that fails (EPIPE) stops the output without throwing', async (t) => {
  let calls = 0;
  const write: WriteFn = (_fd, _buffer, _offset, _length, _position, callback) => {
    calls++;
    setImmediate(() => callback(Object.assign(new Error('EPIPE'), { code: 'EPIPE' }), 0));
  };
  const destination = new LogDestination(99, { flushAt: 10, write });
  t.teardown(() => destination.end());
  destination.write(line(1));
  await flushed(destination);
  t.equal(calls, 1);
  destination.write(line(2));
  await flushed(destination);
  t.equal(calls, 1, 'nothing more is tried');
});

t.test('a stalled fd: lines past the cap are dropped and counted, then reported', async (t) => {
  const out = file(t);
  let release: (() => void) | undefined;
  const write: WriteFn = (fd, buffer, offset, length, _position, callback) => {
    const n = writeSync(fd, buffer, offset, length);
    release = () => callback(null, n);
  };
  const destination = new LogDestination(out.fd, { flushAt: 10, maxPending: 200, write });
  t.teardown(() => destination.end());
  destination.write(line(0)); // starts the write that stalls
  let accepted = 0;
  let refused = 0;
  for (let i = 1; i <= 50; i++) {
    if (destination.write(line(i))) accepted++;
    else refused++;
  }
  t.ok(accepted > 0 && refused > 0, `some lines held (${accepted}), the rest dropped (${refused})`);
  const done = flushed(destination);
  release?.();
  await new Promise((resolve) => setTimeout(resolve, 10));
  release?.();
  await done;
  const lines = out.text().trim().split('\n').map((l) => JSON.parse(l) as { i?: number; dropped?: number; level?: number });
  const warning = lines.find((l) => l.dropped !== undefined);
  t.equal(warning?.dropped, refused, 'one warning line with the number dropped');
  t.equal(warning?.level, 40, 'at warn level');
  t.same(lines.filter((l) => l.i !== undefined).map((l) => l.i), Array.from({ length: accepted + 1 }, (_, i) => i), 'the held lines, in order');
});

t.test('through pino: the access-log shape, and what is pending at exit is written', async (t) => {
  const out = file(t);
  const destination = new LogDestination(out.fd);
  const logger = pino({ level: 'info', base: { service: 'llm-gateway' } }, destination);
  logger.info({ req_id: 'req_1', status: 200 }, 'request');
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
  destination.end();
  t.match(JSON.parse(out.text()), { level: 30, service: 'llm-gateway', req_id: 'req_1', status: 200, msg: 'request' });

  // A process that exits right after logging (process.exit, no flush): its lines are out.
  const script = `
    const { LogDestination } = await import('./src/core/log-destination.ts');
    const destination = new LogDestination(1);
    for (let i = 0; i < 3; i++) destination.write(JSON.stringify({ i }) + '\\n');
    process.exit(0);
  `;
  const stdout = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  t.equal(stdout, '{"i":0}\n{"i":1}\n{"i":2}\n');
});
