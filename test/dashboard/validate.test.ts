import t from 'tap';
import { budgetInputValue, checkBudget, checkEmail, checkExpiry, checkName, checkNewPassword, checkRateLimit, checkTopup, expiryInputValue, localDate, newReference, tomorrow } from '../../src/dashboard/lib/validate.js';

t.test('e-mail: the API\'s rule, shown inline', async (t) => {
  t.same(checkEmail(' Asha@Example.COM '), { ok: true, value: 'asha@example.com' });
  for (const bad of ['asha', 'asha@', 'asha@example', 'a b@example.com', '@example.com', 'a@b@c.com']) t.equal(checkEmail(bad).ok, false, `refuses ${bad}`);
  t.match(checkEmail(''), { ok: false, message: 'Enter your e-mail address.' });
  t.match(checkEmail('asha@example'), { ok: false, message: 'Enter an e-mail address like name@example.com.' });
});

t.test('password: at least 8 characters, at most 72 bytes', async (t) => {
  t.same(checkNewPassword('12345678'), { ok: true, value: '12345678' });
  t.match(checkNewPassword('short'), { ok: false, message: 'Use at least 8 characters (5 so far).' });
  t.equal(checkNewPassword('a'.repeat(72)).ok, true);
  t.equal(checkNewPassword('a'.repeat(73)).ok, false);
  t.equal(checkNewPassword('₹'.repeat(24)).ok, true, '24 × 3 bytes = 72');
  t.equal(checkNewPassword('₹'.repeat(25)).ok, false, 'bytes, not characters');
});

t.test('key fields', async (t) => {
  t.same(checkName('  chat app '), { ok: true, value: 'chat app' });
  t.equal(checkName('   ').ok, false);
  t.equal(checkName('x'.repeat(101)).ok, false);
  t.same(checkRateLimit('1000'), { ok: true, value: 1000 });
  t.same(checkRateLimit('10,000'), { ok: true, value: 10000 });
  t.same(checkRateLimit('1'), { ok: true, value: 1 });
  for (const bad of ['0', '10001', '1.5', '-3', 'abc', '']) t.equal(checkRateLimit(bad).ok, false, `refuses ${JSON.stringify(bad)}`);
  t.same(checkBudget(''), { ok: true, value: 0 }, 'empty = unlimited');
  t.same(checkBudget('0'), { ok: true, value: 0 });
  t.same(checkBudget('200.5'), { ok: true, value: 200_500_000 });
  t.equal(checkBudget('-1').ok, false);
  t.same(checkTopup('1,500'), { ok: true, value: 1_500_000_000 });
  t.match(checkTopup('0'), { ok: false, message: 'Top up more than ₹0.' });
  t.equal(budgetInputValue(0), '0');
  t.equal(budgetInputValue(200), '200');
  t.equal(budgetInputValue(1234.5), '1234.5', 'no grouping in an input');
  t.equal(budgetInputValue(0.000001), '0.000001');
});

t.test('expiry: a future local date, sent as the instant that day starts', async (t) => {
  const now = new Date(2026, 2, 10, 15, 0).getTime();
  t.equal(tomorrow(now), '2026-03-11');
  t.same(checkExpiry('', now), { ok: true, value: null }, 'empty = never');
  t.same(checkExpiry('2026-03-11', now), { ok: true, value: new Date(2026, 2, 11).toISOString() });
  t.match(checkExpiry('2026-03-10', now), { ok: false, message: 'Pick a future date (2026-03-11 or later).' });
  t.match(checkExpiry('2026-02-30', now), { ok: false, message: 'That date does not exist.' });
  t.match(checkExpiry('next week', now), { ok: false });
  t.equal(expiryInputValue(new Date(2026, 4, 1).toISOString()), '2026-05-01');
  t.equal(expiryInputValue(null), '');
  t.equal(localDate(new Date(2026, 0, 5)), '2026-01-05');
});

t.test('a top-up reference is made once per dialog', async (t) => {
  let i = 0;
  const random = (): number => [0, 0.5, 0.99][i++ % 3] as number;
  t.equal(newReference(new Date(2026, 2, 10).getTime(), random), 'dashboard-2026-03-10-as9as9as');
  t.match(newReference(Date.now()), /^dashboard-\d{4}-\d{2}-\d{2}-[a-z0-9]{8}$/);
});
