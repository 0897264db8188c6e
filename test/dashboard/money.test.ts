import t from 'tap';
import { formatCount, formatInr, formatMicros, inrToMicros, ledgerAmountMicros, microsToInr, parseInrInput, spentShare } from '../../src/dashboard/lib/money.js';

t.test('₹ the Indian way: lakh and crore grouping, as Intl en-IN writes it', async (t) => {
  t.equal(formatInr(123456.78), '₹1,23,456.78');
  t.equal(formatInr(12345678.9), '₹1,23,45,678.90');
  t.equal(formatInr(0), '₹0.00');
  t.equal(formatInr(999), '₹999.00');
  t.equal(formatInr(1000), '₹1,000.00');
  t.equal(formatInr(1_000_000_000), '₹1,00,00,00,000.00');
  const intl = new Intl.NumberFormat('en-IN', { style: 'currency', currency: 'INR' });
  for (const value of [0, 1, 12.5, 999.99, 1234.56, 99999.99, 100000, 123456.78, 9876543.21, 123456789.01]) {
    t.equal(formatInr(value), intl.format(value), `${value} reads as Intl's en-IN (${intl.format(value)})`);
  }
});

t.test('small amounts keep their µINR: a call never reads as ₹0.00', async (t) => {
  t.equal(formatInr(0.000126), '₹0.000126');
  t.equal(formatInr(0.00087), '₹0.00087');
  t.equal(formatInr(1499.998235), '₹1,499.998235');
  t.equal(formatInr(12.5), '₹12.50', 'two decimals at least');
  t.equal(formatInr(0.1 + 0.2), '₹0.30', 'float noise past 6 decimals is not shown');
  t.equal(formatMicros(1), '₹0.000001');
});

t.test('sign, rounding and options', async (t) => {
  t.equal(formatMicros(-2_500_000), '-₹2.50');
  t.equal(formatMicros(2_500_000, { signed: true }), '+₹2.50');
  t.equal(formatMicros(0, { signed: true }), '₹0.00', 'zero has no sign');
  t.equal(formatMicros(1_234_567, { maxDecimals: 2 }), '₹1.23');
  t.equal(formatMicros(1_235_000, { maxDecimals: 2 }), '₹1.24', 'half rounds away from zero');
  t.equal(formatMicros(-1_235_000, { maxDecimals: 2 }), '-₹1.24');
  t.equal(formatMicros(999_999_999, { maxDecimals: 0, minDecimals: 0 }), '₹1,000');
  t.equal(formatMicros(10n ** 15n), '₹1,00,00,00,000.00', 'BigInt µINR too');
  t.equal(formatCount(1234567), '12,34,567');
  t.equal(formatCount(-1500), '-1,500');
});

t.test('INR numbers ↔ integer µINR, exactly', async (t) => {
  t.equal(inrToMicros(12.6), 12_600_000);
  t.equal(inrToMicros(0.000001), 1);
  t.equal(inrToMicros(1499.998235), 1_499_998_235);
  t.equal(inrToMicros(0.1) + inrToMicros(0.2), inrToMicros(0.3), 'sums are exact on integers');
  t.equal(microsToInr(12_600_000), 12.6);
  t.equal(microsToInr(1), 0.000001);
  t.equal(microsToInr(-2_500_000), -2.5);
  for (const micros of [0, 1, 999_999, 1_000_000, 123_456_789_012, 1e15]) t.equal(inrToMicros(microsToInr(micros)), micros, `${micros} round-trips`);
  t.throws(() => inrToMicros(Number.NaN));
});

t.test('what people type in an amount field', async (t) => {
  t.same(parseInrInput('1,500.50'), { ok: true, micros: 1_500_500_000 });
  t.same(parseInrInput('₹ 200'), { ok: true, micros: 200_000_000 });
  t.same(parseInrInput('0'), { ok: true, micros: 0 });
  t.same(parseInrInput('.5'), { ok: true, micros: 500_000 });
  t.same(parseInrInput('10.'), { ok: true, micros: 10_000_000 });
  t.same(parseInrInput('0.000001'), { ok: true, micros: 1 });
  t.same(parseInrInput('1.2300000'), { ok: true, micros: 1_230_000 }, 'trailing zeros past 6 decimals are fine');
  t.match(parseInrInput(''), { ok: false, message: /Enter an amount/ });
  t.match(parseInrInput('-5'), { ok: false, message: /negative/ });
  t.match(parseInrInput('1e3'), { ok: false, message: /Enter a number/ });
  t.match(parseInrInput('abc'), { ok: false });
  t.match(parseInrInput('0.0000001'), { ok: false, message: /6 decimals/ });
  t.match(parseInrInput('1000000001'), { ok: false, message: /At most ₹1,00,00,00,000/ });
});

t.test('share of a budget spent', async (t) => {
  t.equal(spentShare(50, 200), 0.25);
  t.equal(spentShare(300, 200), 1, 'capped at 1');
  t.equal(spentShare(5, 0), 0, 'unlimited');
});

t.test('ledger amounts read with their direction', async (t) => {
  t.equal(ledgerAmountMicros({ kind: 'topup', amount: 1500 }), 1_500_000_000);
  t.equal(ledgerAmountMicros({ kind: 'refund', amount: 0.5 }), 500_000);
  t.equal(ledgerAmountMicros({ kind: 'charge', amount: -0.00087 }), -870, 'a negative charge');
  t.equal(ledgerAmountMicros({ kind: 'charge', amount: 0.00087 }), -870, 'a positive charge is a debit too');
  t.equal(formatMicros(ledgerAmountMicros({ kind: 'topup', amount: 1500 }), { signed: true }), '+₹1,500.00');
});
