/**
 * A small reader of the Prometheus text format (0.0.4), for `gateway status`: samples with
 * their labels, sums over label filters, and quantiles from histogram buckets computed the way
 * PromQL's histogram_quantile() does (linear interpolation within the bucket). No UI code here.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export class MetricsParseError extends Error {
  override name = 'MetricsParseError';
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

/** Every sample of an exposition (comments, HELP and TYPE lines skipped). */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = (lines[index] as string).replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#')) continue;
    try {
      samples.push(parseSampleLine(line));
    } catch (error) {
      throw new MetricsParseError(`line ${index + 1}: ${(error as Error).message}: ${line.slice(0, 200)}`);
    }
  }
  return samples;
}

/** One sample line: `name{label="value",…} value [timestamp]`. */
export function parseSampleLine(line: string): Sample {
  const name = NAME.exec(line)?.[0];
  if (!name) throw new Error('no metric name');
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith('{')) {
    rest = rest.slice(1);
    for (;;) {
      rest = rest.trimStart();
      if (rest.startsWith('}')) {
        rest = rest.slice(1);
        break;
      }
      const label = LABEL_NAME.exec(rest)?.[0];
      if (!label) throw new Error('bad label name');
      rest = rest.slice(label.length).trimStart();
      if (!rest.startsWith('="') && !rest.startsWith('= "')) throw new Error(`label ${label} has no quoted value`);
      rest = rest.slice(rest.indexOf('"') + 1);
      let value = '';
      let i = 0;
      for (; i < rest.length; i++) {
        const ch = rest[i] as string;
        if (ch === '"') break;
        if (ch === '\\') {
          const next = rest[++i];
          if (next === 'n') value += '\n';
          else if (next === '\\' || next === '"') value += next;
          else throw new Error(`bad escape \\${next ?? ''} in label ${label}`);
        } else value += ch;
      }
      if (i >= rest.length) throw new Error(`unterminated value of label ${label}`);
      labels[label] = value;
      rest = rest.slice(i + 1).trimStart();
      if (rest.startsWith(',')) rest = rest.slice(1);
      else if (!rest.startsWith('}')) throw new Error('expected , or } after a label');
    }
  }
  const fields = rest.trim().split(/\s+/);
  if (fields.length < 1 || fields.length > 2 || fields[0] === '') throw new Error('expected a value (and an optional timestamp)');
  return { name, labels, value: parseValue(fields[0] as string) };
}

/** A float as Go's ParseFloat reads it (Prometheus's parser): NaN and Inf in any case (prom-client writes "Nan"). */
function parseValue(raw: string): number {
  const word = raw.toLowerCase();
  if (word === 'nan') return NaN;
  if (word === '+inf' || word === 'inf' || word === '+infinity' || word === 'infinity') return Infinity;
  if (word === '-inf' || word === '-infinity') return -Infinity;
  const value = Number(raw);
  if (raw === '' || Number.isNaN(value)) throw new Error(`bad value ${raw}`);
  return value;
}

/** A label filter: a value to equal, or a test of the value (absent labels read as ""). */
export type LabelMatch = Record<string, string | ((value: string) => boolean)>;

export function matches(sample: Sample, match: LabelMatch): boolean {
  for (const [label, want] of Object.entries(match)) {
    const value = sample.labels[label] ?? '';
    if (typeof want === 'string' ? value !== want : !want(value)) return false;
  }
  return true;
}

/** The sum of the samples named `name` whose labels match. */
export function sumOf(samples: readonly Sample[], name: string, match: LabelMatch = {}): number {
  let total = 0;
  for (const sample of samples) if (sample.name === name && matches(sample, match)) total += sample.value;
  return total;
}

/** Sums of `name` grouped by one label's value. */
export function sumBy(samples: readonly Sample[], name: string, label: string, match: LabelMatch = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const sample of samples) {
    if (sample.name !== name || !matches(sample, match)) continue;
    const key = sample.labels[label] ?? '';
    out[key] = (out[key] ?? 0) + sample.value;
  }
  return out;
}

export function has(samples: readonly Sample[], name: string): boolean {
  return samples.some((sample) => sample.name === name);
}

export interface Bucket {
  /** The bucket's upper bound (Infinity for +Inf). */
  le: number;
  /** Observations at or below `le` (cumulative). */
  count: number;
}

/** A histogram's buckets summed over every series that matches (like `sum by (le) (…_bucket)`), sorted by bound. */
export function bucketsOf(samples: readonly Sample[], histogram: string, match: LabelMatch = {}): Bucket[] {
  const byBound = new Map<number, number>();
  for (const sample of samples) {
    if (sample.name !== `${histogram}_bucket` || !matches(sample, match)) continue;
    const le = parseValue(sample.labels.le ?? '');
    byBound.set(le, (byBound.get(le) ?? 0) + sample.value);
  }
  return [...byBound].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

/**
 * The q-quantile (0 ≤ q ≤ 1) of cumulative buckets, as PromQL's histogram_quantile(): the rank
 * q × count is found in its bucket and interpolated linearly between the bucket's bounds (the
 * first bucket's lower bound is 0; a rank in the +Inf bucket answers the highest finite bound).
 * null without observations, or without a +Inf bucket.
 */
export function histogramQuantile(q: number, input: readonly Bucket[]): number | null {
  if (Number.isNaN(q)) return null;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const buckets = [...input].sort((a, b) => a.le - b.le);
  // Cumulative counts must not fall (a scrape mid-update can make them): as PromQL does, fix that.
  for (let i = 1; i < buckets.length; i++) {
    const previous = buckets[i - 1] as Bucket;
    const bucket = buckets[i] as Bucket;
    if (bucket.count < previous.count) buckets[i] = { le: bucket.le, count: previous.count };
  }
  const last = buckets[buckets.length - 1];
  if (!last || last.le !== Infinity || buckets.length < 2) return null;
  const observations = last.count;
  if (!(observations > 0)) return null;
  const rank = q * observations;
  let index = buckets.findIndex((bucket) => bucket.count >= rank);
  if (index === -1) index = buckets.length - 1;
  if (index === buckets.length - 1) return (buckets[buckets.length - 2] as Bucket).le;
  const bucket = buckets[index] as Bucket;
  if (index === 0 && bucket.le <= 0) return bucket.le;
  const lower = index === 0 ? 0 : (buckets[index - 1] as Bucket).le;
  const below = index === 0 ? 0 : (buckets[index - 1] as Bucket).count;
  const inBucket = bucket.count - below;
  if (inBucket <= 0) return bucket.le;
  return lower + (bucket.le - lower) * ((rank - below) / inBucket);
}

/** p50 and p95 of a histogram's matching series, in its unit; null each without observations. */
export function percentiles(samples: readonly Sample[], histogram: string, match: LabelMatch = {}): { p50: number | null; p95: number | null; count: number } {
  const buckets = bucketsOf(samples, histogram, match);
  return { p50: histogramQuantile(0.5, buckets), p95: histogramQuantile(0.95, buckets), count: sumOf(samples, `${histogram}_count`, match) };
}
