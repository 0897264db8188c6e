/** A Prometheus text-format reader for tests: every sample, by name and labels. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = match[3] ?? '';
    const pattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/g;
    let consumed = 0;
    for (let label = pattern.exec(body); label; label = pattern.exec(body)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      consumed = pattern.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`bad labels: ${line}`);
    const raw = match[4] as string;
    samples.push({ name: match[1] as string, labels, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  }
  return samples;
}

/** The sum of the samples of `name` whose labels include `match`. */
export function total(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
}

/** How many series (distinct label sets) `name` has; a histogram counted once per label set (its _count). */
export function seriesOf(samples: readonly Sample[], prefix: string): number {
  return samples.filter((s) => s.name.startsWith(prefix) && !s.name.endsWith('_bucket') && !s.name.endsWith('_sum')).length;
}
