import t from 'tap';
import { formatInrDisplay, formatMicros, microsToInr, parseInr } from '../../src/core/money.js';

t.test('parseInr turns INR into exact integer µINR', async (t) => {
  t.same(parseInr(12.6), { ok: true, micros: 12_600_000 });
  t.same(parseInr(0.1 + 0.2 === 0.3 ? 0 : 0.3), { ok: true, micros: 300_000 }, 'a float literal is read as written');
  t.same(parseInr('100.000001'), { ok: true, micros: 100_000_001 });
  t.same(parseInr('5.50000000'), { ok: true, micros: 5_500_000 }, 'trailing zeros beyond 6 places are fine');
  t.same(parseInr(0), { ok: true, micros: 0 });
  t.same(parseInr(1_000_000_000), { ok: true, micros: 1e15 });
});

t.test('parseInr refuses what is not an amount', async (t) => {
  for (const bad of [-1, '-0.5', 'abc', '1e3', null, true, Number.NaN, Number.POSITIVE_INFINITY, '1.2.3', '']) {
    t.equal(parseInr(bad).ok, false, `refuses ${String(bad)}`);
  }
  t.match(parseInr(0.0000001), { ok: false, rule: /6 decimal places/ });
  t.match(parseInr('1.1234567'), { ok: false, rule: /6 decimal places/ });
  t.match(parseInr(1_000_000_001), { ok: false, rule: /at most/ });
  t.match(parseInr(1e21), { ok: false, rule: /at most/ });
});

t.test('µINR back to INR numbers and display strings', async (t) => {
  t.equal(microsToInr(12_600_000), 12.6);
  t.equal(microsToInr(1), 0.000001);
  t.equal(microsToInr(-2_500_000), -2.5);
  t.equal(formatMicros(100_000_001), '100.000001');
  t.equal(formatMicros(-1), '-0.000001');
  t.equal(formatInrDisplay(123_456_789_000), '₹1,23,456.789');
  t.equal(formatInrDisplay(5_000_000), '₹5.00');
  t.throws(() => formatMicros(0.5), RangeError);
});
