import { formatMicros, inrToMicros } from './money.js';
import type { DailyRow } from './types.js';

/**
 * Data for the Overview's charts: spend and calls per UTC day for the last N days, stacked by
 * model. The most expensive models get their own series; the rest are summed into "Other
 * models", so the legend stays readable. Days without calls are zeros (the API leaves them out).
 */

export interface Series {
  /** The model id, or OTHER. */
  name: string;
  /** Index into the chart palette (CSS classes series-0 …). */
  color: number;
  costMicros: number[];
  calls: number[];
}

export interface DailyChart {
  days: string[];
  series: Series[];
  totalCostMicros: number[];
  totalCalls: number[];
  totalErrors: number[];
}

export const OTHER = 'Other models';

/** "YYYY-MM-DD" of an instant in UTC. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The `days` UTC days ending with the day of `now`, oldest first. */
export function lastDays(now: number, days: number): string[] {
  const today = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
  const out: string[] = [];
  for (let i = days - 1; i >= 0; i -= 1) out.push(utcDay(today - i * 86_400_000));
  return out;
}

export function buildDailyChart(rows: DailyRow[], now: number, days = 30, maxSeries = 5): DailyChart {
  const dayList = lastDays(now, days);
  const index = new Map(dayList.map((day, i) => [day, i]));
  const byModel = new Map<string, { cost: number; calls: number }>();
  for (const row of rows) {
    if (!index.has(row.day)) continue;
    const total = byModel.get(row.model) ?? { cost: 0, calls: 0 };
    total.cost += inrToMicros(row.cost);
    total.calls += row.calls;
    byModel.set(row.model, total);
  }
  const ranked = [...byModel.entries()].sort((a, b) => b[1].cost - a[1].cost || b[1].calls - a[1].calls || a[0].localeCompare(b[0]));
  // With one model too many, that model is shown rather than an "Other" of one.
  const own = ranked.length <= maxSeries + 1 ? ranked : ranked.slice(0, maxSeries);
  const names = own.map(([model]) => model);
  const hasOther = ranked.length > names.length;
  const series: Series[] = names.map((name, color) => ({ name, color, costMicros: dayList.map(() => 0), calls: dayList.map(() => 0) }));
  if (hasOther) series.push({ name: OTHER, color: series.length, costMicros: dayList.map(() => 0), calls: dayList.map(() => 0) });
  const seriesIndex = new Map(names.map((name, i) => [name, i]));
  const totalCostMicros = dayList.map(() => 0);
  const totalCalls = dayList.map(() => 0);
  const totalErrors = dayList.map(() => 0);
  for (const row of rows) {
    const day = index.get(row.day);
    if (day === undefined) continue;
    const target = series[seriesIndex.get(row.model) ?? series.length - 1] as Series;
    const cost = inrToMicros(row.cost);
    target.costMicros[day] = (target.costMicros[day] ?? 0) + cost;
    target.calls[day] = (target.calls[day] ?? 0) + row.calls;
    totalCostMicros[day] = (totalCostMicros[day] ?? 0) + cost;
    totalCalls[day] = (totalCalls[day] ?? 0) + row.calls;
    totalErrors[day] = (totalErrors[day] ?? 0) + row.errors;
  }
  return { days: dayList, series, totalCostMicros, totalCalls, totalErrors };
}

/**
 * A "nice" axis for values up to `max`: `count` even steps of 1, 2, 2.5 or 5 × 10^n.
 * `integer`: whole steps only (counts of calls).
 */
export function niceScale(max: number, count = 4, integer = false): { top: number; ticks: number[] } {
  if (!(max > 0)) return { top: count, ticks: Array.from({ length: count + 1 }, (_, i) => i) };
  const rough = max / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const candidates = [1, 2, 2.5, 5, 10].map((m) => m * power).filter((s) => !integer || Number.isInteger(s));
  let step = candidates.find((s) => s >= rough) ?? 10 * power;
  if (integer) step = Math.max(1, Math.ceil(step));
  const top = step * count;
  return { top, ticks: Array.from({ length: count + 1 }, (_, i) => Number((i * step).toPrecision(12))) };
}

/** Stacked bar segments of one day: [start, end] in data units, bottom-up, series order. */
export function stack(values: number[]): [number, number][] {
  let at = 0;
  return values.map((value) => {
    const segment: [number, number] = [at, at + value];
    at += value;
    return segment;
  });
}

/**
 * An axis label in ₹ (value and step in µINR) with as many decimals as the ticks need to
 * differ (steps of ₹0.0005 show four); lakhs and crores shortened on large axes ("₹2.5L").
 */
export function axisInr(micros: number, stepMicros: number): string {
  if (micros === 0) return '₹0';
  if (stepMicros >= 10_000_000 * 1_000_000) return `₹${Number((micros / 1e13).toPrecision(3))}Cr`;
  if (stepMicros >= 100_000 * 1_000_000) return `₹${Number((micros / 1e11).toPrecision(3))}L`;
  let decimals = 0;
  while (decimals < 6 && stepMicros % 10 ** (6 - decimals) !== 0) decimals += 1;
  return formatMicros(Math.round(micros), { minDecimals: decimals, maxDecimals: decimals });
}
