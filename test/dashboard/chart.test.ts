import t from 'tap';
import { axisInr, buildDailyChart, lastDays, niceScale, OTHER, stack, utcDay } from '../../src/dashboard/lib/chart.js';
import type { DailyRow } from '../../src/dashboard/lib/types.js';

const NOW = Date.parse('2026-03-10T18:30:00.000Z');

t.test('the last N UTC days, oldest first', async (t) => {
  t.same(lastDays(NOW, 3), ['2026-03-08', '2026-03-09', '2026-03-10']);
  t.equal(lastDays(NOW, 30).length, 30);
  t.equal(lastDays(NOW, 30)[0], '2026-02-09');
  t.equal(utcDay(Date.parse('2026-03-10T23:59:59.999Z')), '2026-03-10');
});

t.test('rows become series per model; missing days are zeros; costs summed in µINR', async (t) => {
  const rows: DailyRow[] = [
    { day: '2026-03-09', model: 'a', calls: 2, errors: 0, cost: 0.1 },
    { day: '2026-03-10', model: 'a', calls: 1, errors: 1, cost: 0.2 },
    { day: '2026-03-10', model: 'b', calls: 5, errors: 0, cost: 0.000001 },
    { day: '2025-01-01', model: 'old', calls: 9, errors: 0, cost: 99 },
  ];
  const chart = buildDailyChart(rows, NOW, 3);
  t.same(chart.days, ['2026-03-08', '2026-03-09', '2026-03-10']);
  t.same(chart.series.map((s) => s.name), ['a', 'b'], 'by spend; rows outside the window are left out');
  t.same(chart.series[0]?.costMicros, [0, 100_000, 200_000]);
  t.same(chart.series[1]?.calls, [0, 0, 5]);
  t.same(chart.totalCostMicros, [0, 100_000, 200_001], 'exact: 0.1 + 0.2 is 300000 µINR, not 0.30000000000000004');
  t.same(chart.totalCalls, [0, 2, 6]);
  t.same(chart.totalErrors, [0, 0, 1]);
  t.same(chart.series.map((s) => s.color), [0, 1]);
});

t.test('beyond five models, the rest are "Other models"', async (t) => {
  const rows: DailyRow[] = Array.from({ length: 8 }, (_, i) => ({ day: '2026-03-10', model: `m${i}`, calls: 1, errors: 0, cost: 8 - i }));
  const chart = buildDailyChart(rows, NOW, 30, 5);
  t.same(chart.series.map((s) => s.name), ['m0', 'm1', 'm2', 'm3', 'm4', OTHER]);
  t.equal(chart.series[5]?.costMicros.at(-1), 6_000_000, 'm5 + m6 + m7 = ₹3 + ₹2 + ₹1');
  t.equal(chart.series[5]?.calls.at(-1), 3);
  const six = buildDailyChart(rows.slice(0, 6), NOW, 30, 5);
  t.same(six.series.map((s) => s.name), ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'], 'one model too many is shown, not an "Other" of one');
  t.same(buildDailyChart([], NOW).series, []);
});

t.test('axis scales and stacks', async (t) => {
  t.same(niceScale(1765), { top: 2000, ticks: [0, 500, 1000, 1500, 2000] });
  t.same(niceScale(0.9), { top: 1, ticks: [0, 0.25, 0.5, 0.75, 1] });
  t.same(niceScale(3, 4, true), { top: 4, ticks: [0, 1, 2, 3, 4] }, 'whole numbers for counts');
  t.same(niceScale(1, 4, true), { top: 4, ticks: [0, 1, 2, 3, 4] });
  t.same(niceScale(37, 4, true).ticks, [0, 10, 20, 30, 40]);
  t.same(niceScale(0), { top: 4, ticks: [0, 1, 2, 3, 4] }, 'an empty chart still has an axis');
  t.same(stack([1, 0, 2]), [[0, 1], [1, 1], [1, 3]]);
});

t.test('₹ axis labels with the decimals their step needs', async (t) => {
  t.same([0, 500, 1000].map((v) => axisInr(v, 500)), ['₹0', '₹0.0005', '₹0.0010']);
  t.same([0, 2_500_000, 5_000_000].map((v) => axisInr(v, 2_500_000)), ['₹0', '₹2.5', '₹5.0']);
  t.equal(axisInr(150_000_000_000, 50_000_000_000), '₹1,50,000');
  t.equal(axisInr(500_000_000_000, 250_000_000_000), '₹5L', 'lakhs');
  t.equal(axisInr(2e14, 1e14), '₹20Cr', 'crores');
});
