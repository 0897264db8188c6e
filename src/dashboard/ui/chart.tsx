import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { niceScale, stack, type DailyChart } from '../lib/chart.js';
import { formatDay } from '../lib/format.js';

/**
 * A stacked bar chart in plain SVG (no chart library: ~2 KB against uPlot's 23 KB gzip, and
 * SVG attributes are allowed by the strict CSP where inline styles are not). Drawn at the
 * width of its box (a ResizeObserver), so text stays legible from a phone to a desktop.
 * Keyboard: focus the chart and move between days with ← →; the day's numbers are read out.
 */

interface Props {
  title: string;
  chart: DailyChart;
  /** Which numbers of a series this chart stacks. */
  pick: 'costMicros' | 'calls';
  format: (value: number) => string;
  /** A shorter form for the axis labels; `step` is the distance between two ticks. */
  formatAxis?: (value: number, step: number) => string;
  integer?: boolean;
}

const HEIGHT = 220;
const PAD = { top: 12, right: 12, bottom: 26, left: 72 };

export function StackedBars({ title, chart, pick, format, formatAxis = format, integer = false }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(640);
  const [active, setActive] = useState<number | null>(null);

  useEffect(() => {
    const element = box.current;
    if (!element || typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver((entries) => {
      const next = Math.floor(entries[0]?.contentRect.width ?? 0);
      if (next > 0) setWidth(next);
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);

  const days = chart.days;
  const totals = days.map((_, day) => chart.series.reduce((sum, series) => sum + (series[pick][day] ?? 0), 0));
  const scale = niceScale(Math.max(0, ...totals), 4, integer);
  const plotW = Math.max(10, width - PAD.left - PAD.right);
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(2, slot * 0.7);
  const y = (value: number): number => PAD.top + plotH - (value / scale.top) * plotH;
  const labelEvery = width < 480 ? 7 : width < 800 ? 5 : 3;
  const grandTotal = totals.reduce((a, b) => a + b, 0);
  const peak = totals.reduce((best, value, i) => (value > (totals[best] ?? 0) ? i : best), 0);
  const summary =
    grandTotal === 0
      ? `${title}: nothing in the last ${days.length} days.`
      : `${title}: ${format(grandTotal)} in the last ${days.length} days; the highest day was ${formatDay(days[peak] ?? '')} with ${format(totals[peak] ?? 0)}.`;

  const readout = (day: number): string => {
    const parts = chart.series.filter((series) => (series[pick][day] ?? 0) > 0).map((series) => `${series.name} ${format(series[pick][day] ?? 0)}`);
    return `${formatDay(days[day] ?? '')}: ${format(totals[day] ?? 0)}${parts.length > 0 ? ` (${parts.join(', ')})` : ''}`;
  };

  const onKey = (event: KeyboardEvent<HTMLDivElement>): void => {
    const last = days.length - 1;
    const current = active ?? last;
    let next: number | null = null;
    if (event.key === 'ArrowLeft') next = Math.max(0, current - 1);
    else if (event.key === 'ArrowRight') next = Math.min(last, current + 1);
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = last;
    else if (event.key === 'Escape') setActive(null);
    if (next !== null) {
      event.preventDefault();
      setActive(next);
    }
  };

  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <div
        ref={box}
        className="chart-box"
        tabIndex={0}
        role="group"
        aria-label={`${summary} Use the left and right arrow keys to read each day.`}
        onKeyDown={onKey}
        onMouseLeave={() => setActive(null)}
        onBlur={() => setActive(null)}
      >
        <svg width={width} height={HEIGHT} viewBox={`0 0 ${width} ${HEIGHT}`} aria-hidden="true" focusable="false">
          {scale.ticks.map((tick) => (
            <g key={tick} className="tick">
              <line x1={PAD.left} x2={width - PAD.right} y1={y(tick)} y2={y(tick)} className={tick === 0 ? 'axis' : 'grid'} />
              <text x={PAD.left - 6} y={y(tick)} dy="0.32em" textAnchor="end">
                {formatAxis(tick, scale.ticks[1] ?? 1)}
              </text>
            </g>
          ))}
          {days.map((day, i) => {
            const x = PAD.left + i * slot + (slot - barW) / 2;
            const segments = stack(chart.series.map((series) => series[pick][i] ?? 0));
            return (
              <g key={day} className={active === i ? 'day active' : 'day'} onMouseEnter={() => setActive(i)}>
                <rect x={PAD.left + i * slot} y={PAD.top} width={slot} height={plotH} className="hit" />
                {segments.map(([from, to], s) =>
                  to > from ? <rect key={s} x={x} width={barW} y={y(to)} height={Math.max(1, y(from) - y(to))} className={`bar series-${chart.series[s]?.color ?? 0}`} /> : null,
                )}
                {i % labelEvery === (days.length - 1) % labelEvery ? (
                  <text x={i === days.length - 1 ? x + barW : x + barW / 2} y={HEIGHT - 8} textAnchor={i === days.length - 1 ? 'end' : 'middle'} className="day-label">
                    {formatDay(day)}
                  </text>
                ) : null}
              </g>
            );
          })}
        </svg>
      </div>
      <p className="chart-readout" aria-live="polite">
        {active !== null ? readout(active) : <span className="muted">{summary}</span>}
      </p>
      <Legend chart={chart} />
    </figure>
  );
}

export function Legend({ chart }: { chart: DailyChart }) {
  if (chart.series.length === 0) return null;
  return (
    <ul className="legend" aria-label="Models">
      {chart.series.map((series) => (
        <li key={series.name}>
          <svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" focusable="false">
            <rect width="12" height="12" rx="2" className={`bar series-${series.color}`} />
          </svg>
          {series.name}
        </li>
      ))}
    </ul>
  );
}
