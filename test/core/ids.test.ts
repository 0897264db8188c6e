import t from 'tap';
import { CallSignal } from '../../src/core/abort.js';
import { newRequestId } from '../../src/core/ids.js';

const UUID7 = /^req_([0-9a-f]{12})7([0-9a-f]{3})[89ab][0-9a-f]{15}$/;

t.test('request ids are UUIDv7: time first, version 7, variant 10', async (t) => {
  const before = Date.now();
  const id = newRequestId();
  const after = Date.now();
  const match = UUID7.exec(id);
  t.ok(match, `${id} has the UUIDv7 layout`);
  const ms = parseInt(match?.[1] ?? '', 16);
  t.ok(ms >= before && ms <= after, 'the first 48 bits are the creation time in ms');
});

t.test('ids made in one process strictly increase, even within one millisecond', async (t) => {
  const ids = Array.from({ length: 20_000 }, () => newRequestId());
  t.ok(ids.every((id, i) => i === 0 || id > (ids[i - 1] as string)), 'each id sorts after the one before');
  t.equal(new Set(ids).size, ids.length, 'no duplicates');
  t.ok(ids.every((id) => UUID7.test(id)), 'all keep the layout');
});

t.test('more than 4,096 ids in one millisecond borrow the next millisecond, in order', async (t) => {
  const now = Date.now() + 60_000; // a millisecond no other test has used
  const ids = Array.from({ length: 5000 }, () => newRequestId(now));
  t.ok(ids.every((id, i) => i === 0 || id > (ids[i - 1] as string)), 'still increasing');
  t.equal(parseInt(ids[0]?.slice(4, 16) ?? '', 16), now);
  t.equal(parseInt(ids[4095]?.slice(4, 16) ?? '', 16), now, 'the 4,096th id is in the same millisecond');
  t.equal(parseInt(ids[4096]?.slice(4, 16) ?? '', 16), now + 1, 'the 4,097th takes the next one');
  const later = newRequestId(now);
  t.ok(later > (ids.at(-1) as string), 'a clock that has not caught up does not go back');
});

t.test('the random part differs between ids', async (t) => {
  const tails = new Set(Array.from({ length: 1000 }, () => newRequestId().slice(-15)));
  t.equal(tails.size, 1000);
});

t.test('CallSignal: abort once, listeners, and a linked AbortSignal', async (t) => {
  const signal = new CallSignal();
  let calls = 0;
  signal.once('abort', () => calls++);
  const linked = signal.toAbortSignal();
  t.equal(signal.toAbortSignal(), linked, 'one linked signal');
  t.notOk(signal.aborted);
  t.notOk(linked.aborted);
  signal.abort();
  signal.abort();
  t.ok(signal.aborted);
  t.ok(linked.aborted, 'the linked AbortSignal follows');
  t.equal(calls, 1, 'listeners run once');
  t.ok(new CallSignal().toAbortSignal().aborted === false);
  const late = new CallSignal();
  late.abort();
  t.ok(late.toAbortSignal().aborted, 'a signal linked after the abort starts aborted');
});
