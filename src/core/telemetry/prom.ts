/**
 * Prometheus families whose updates are plain field adds on a series the caller looked up
 * (one Map lookup), rendered in the text exposition format (0.0.4) at scrape time.
 * prom-client (metrics.ts) serves the process's own metrics beside them; its label hashing
 * per update (~0.35 µs) times a dozen updates per call is what this avoids on the request path.
 */

export interface CounterSeries {
  value: number;
}

export class HistogramSeries {
  /** Per bucket (not cumulative; summed at render); the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count += 1;
  }
}

interface Entry<S> {
  labels: readonly string[];
  series: S;
}

/** A level of the series tree: one Map per label, keyed by its value; the last level holds the entries. */
type Level<S> = Map<string, Level<S> | Entry<S>>;

abstract class Family<S> {
  /** Series by label values, one Map level per label: no key string is built per update. */
  private readonly root: Level<S> = new Map();
  private alone: Entry<S> | undefined;
  protected readonly entries: Entry<S>[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    if (labelNames.length > 4) throw new Error(`${name}: at most 4 labels`);
  }

  /** The series of these label values (in labelNames' order), made on first use. */
  labels(a = '', b = '', c = '', d = ''): S {
    const depth = this.labelNames.length;
    if (depth === 0) return (this.alone ??= this.add([])).series;
    let level = this.root;
    for (let i = 0; ; i++) {
      const value = i === 0 ? a : i === 1 ? b : i === 2 ? c : d;
      const next = level.get(value);
      if (i === depth - 1) {
        if (next !== undefined) return (next as Entry<S>).series;
        const entry = this.add([a, b, c, d].slice(0, depth));
        level.set(value, entry);
        return entry.series;
      }
      if (next === undefined) {
        const created: Level<S> = new Map();
        level.set(value, created);
        level = created;
      } else level = next as Level<S>;
    }
  }

  private add(labels: readonly string[]): Entry<S> {
    const entry = { labels, series: this.create() };
    this.entries.push(entry);
    return entry;
  }

  /** How many series the family holds (cardinality tests). */
  get size(): number {
    return this.entries.length;
  }

  protected abstract create(): S;
  abstract render(out: string[]): void;

  protected head(out: string[], type: string): void {
    out.push(`# HELP ${this.name} ${this.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${this.name} ${type}`);
  }

  protected labelText(values: readonly string[], extra?: string): string {
    const parts: string[] = [];
    for (let i = 0; i < this.labelNames.length; i++) parts.push(`${this.labelNames[i]}="${escapeLabel(values[i] ?? '')}"`);
    if (extra !== undefined) parts.push(extra);
    return parts.length === 0 ? '' : `{${parts.join(',')}}`;
  }
}

export class CounterFamily extends Family<CounterSeries> {
  protected create(): CounterSeries {
    return { value: 0 };
  }

  render(out: string[]): void {
    this.head(out, 'counter');
    for (const { labels, series } of this.entries) out.push(`${this.name}${this.labelText(labels)} ${formatNumber(series.value)}`);
  }
}

/** A gauge: its value set or moved by the caller, or by `collect` just before each render. */
export class GaugeFamily extends Family<CounterSeries> {
  constructor(name: string, help: string, labelNames: readonly string[], private readonly collect?: (family: GaugeFamily) => void) {
    super(name, help, labelNames);
  }

  protected create(): CounterSeries {
    return { value: 0 };
  }

  set(value: number, ...labels: string[]): void {
    this.labels(...labels).value = value;
  }

  render(out: string[]): void {
    this.collect?.(this);
    this.head(out, 'gauge');
    for (const { labels, series } of this.entries) out.push(`${this.name}${this.labelText(labels)} ${formatNumber(series.value)}`);
  }
}

export class HistogramFamily extends Family<HistogramSeries> {
  constructor(name: string, help: string, labelNames: readonly string[], private readonly bounds: readonly number[]) {
    super(name, help, labelNames);
  }

  protected create(): HistogramSeries {
    return new HistogramSeries(this.bounds);
  }

  render(out: string[]): void {
    this.head(out, 'histogram');
    for (const { labels, series } of this.entries) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += series.counts[i] as number;
        const le = i < this.bounds.length ? formatNumber(this.bounds[i] as number) : '+Inf';
        out.push(`${this.name}_bucket${this.labelText(labels, `le="${le}"`)} ${cumulative}`);
      }
      out.push(`${this.name}_sum${this.labelText(labels)} ${formatNumber(series.sum)}`, `${this.name}_count${this.labelText(labels)} ${series.count}`);
    }
  }
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}
