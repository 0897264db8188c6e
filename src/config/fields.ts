/**
 * Path-precise readers for config values. Each reader records a problem
 * (`providers.openai.base_url: must be an http(s) URL`) instead of throwing, so that one
 * run reports every problem in the file.
 */

export class Problems {
  readonly lines: string[] = [];
  constructor(private readonly unset: Map<string, string[]> = new Map()) {}

  unsetVariables(path: string): readonly string[] | undefined {
    return this.unset.get(path);
  }

  /** A separate list of problems that knows the same unset variables. */
  scratch(): Problems {
    return new Problems(this.unset);
  }

  add(path: string, rule: string): void {
    const vars = this.unset.get(path);
    const hint = vars ? ` (${vars.map((name) => `$${name}`).join(', ')} not set)` : '';
    this.lines.push(`${path}: ${rule}${hint}`);
  }
}

export type Raw = Record<string, unknown>;

export function isRecord(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const join = (path: string, key: string): string => (path ? `${path}.${key}` : key);

/** A mapping section; unknown keys are problems (a typo should not be ignored). */
export function readSection(raw: unknown, path: string, allowed: readonly string[], problems: Problems): Raw {
  if (raw === undefined || raw === null) return {};
  if (!isRecord(raw)) {
    problems.add(path, 'must be a mapping');
    return {};
  }
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) problems.add(join(path, key), `unknown key (expected one of: ${allowed.join(', ')})`);
  }
  return raw;
}

export function readString(
  obj: Raw,
  key: string,
  path: string,
  problems: Problems,
  opts: { required?: boolean; pattern?: RegExp; rule?: string } = {},
): string | undefined {
  const value = obj[key];
  const at = join(path, key);
  if (value === undefined || value === null || value === '') {
    if (opts.required) problems.add(at, 'is required');
    return undefined;
  }
  if (typeof value !== 'string') {
    problems.add(at, 'must be a string');
    return undefined;
  }
  if (opts.pattern && !opts.pattern.test(value)) {
    problems.add(at, opts.rule ?? `must match ${opts.pattern}`);
    return undefined;
  }
  return value;
}

export function readUrl(obj: Raw, key: string, path: string, problems: Problems, required: boolean): string | undefined {
  const text = readString(obj, key, path, problems, { required });
  if (text === undefined) return undefined;
  try {
    const url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
    return text.replace(/\/+$/, '');
  } catch {
    problems.add(join(path, key), 'must be an http(s) URL');
    return undefined;
  }
}

/** Integers written in YAML as numbers, or as strings that interpolation produced ("8080"). */
export function readInt(obj: Raw, key: string, path: string, problems: Problems, min: number, max: number, fallback: number): number {
  let value = obj[key];
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) value = Number(value.trim());
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    problems.add(join(path, key), `must be an integer from ${min} to ${max}`);
    return fallback;
  }
  return value;
}

export function readBool(obj: Raw, key: string, path: string, problems: Problems, fallback: boolean): boolean {
  const value = obj[key];
  if (value === undefined || value === null || value === '') return fallback;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  problems.add(join(path, key), 'must be true or false');
  return fallback;
}

export function readEnum<T extends string>(obj: Raw, key: string, path: string, problems: Problems, values: readonly T[], fallback: T): T {
  const value = obj[key];
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value !== 'string' || !values.includes(value as T)) {
    problems.add(join(path, key), `must be one of: ${values.join(', ')}`);
    return fallback;
  }
  return value as T;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration: "250ms", "10s", "15m", "12h", "7d", or a number of milliseconds. Returns ms. */
export function readDuration(obj: Raw, key: string, path: string, problems: Problems, fallbackMs: number, minMs = 1): number {
  const value = obj[key];
  if (value === undefined || value === null || value === '') return fallbackMs;
  const ms = parseDuration(value);
  if (ms === undefined || ms < minMs) {
    problems.add(join(path, key), `must be a duration such as 500ms, 30s, 15m, 12h or 7d (at least ${minMs}ms)`);
    return fallbackMs;
  }
  return ms;
}

export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const match = /^(\d+)\s*(ms|s|m|h|d)$/.exec(value.trim());
  if (!match) return undefined;
  return Number(match[1]) * (DURATION_UNITS[match[2] as string] as number);
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

/** A size: "512kb", "25mb", or a number of bytes. */
export function readSize(obj: Raw, key: string, path: string, problems: Problems, fallback: number, min: number, max: number): number {
  const value = obj[key];
  if (value === undefined || value === null || value === '') return fallback;
  let bytes: number | undefined;
  if (typeof value === 'number' && Number.isInteger(value)) bytes = value;
  else if (typeof value === 'string') {
    const match = /^(\d+)\s*(b|kb|mb)?$/i.exec(value.trim());
    if (match) bytes = Number(match[1]) * (SIZE_UNITS[(match[2] ?? 'b').toLowerCase()] as number);
  }
  if (bytes === undefined || bytes < min || bytes > max) {
    problems.add(join(path, key), `must be a size such as 512kb or 25mb, from ${min} bytes to ${max / 1024 / 1024}mb`);
    return fallback;
  }
  return bytes;
}

/**
 * A YAML list, or one string of comma-separated items (what `${VAR}` gives); empty items
 * (an unset `${VAR}`) are left out.
 */
export function listItems(raw: unknown, at: string, what: string, problems: Problems): Array<{ value: unknown; at: string }> {
  if (raw === undefined || raw === null) return [];
  if (typeof raw === 'string') {
    return raw
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '')
      .map((value, i) => ({ value, at: `${at}[${i}]` }));
  }
  if (!Array.isArray(raw)) {
    problems.add(at, `must be a list of ${what}`);
    return [];
  }
  return raw.map((value: unknown, i) => ({ value, at: `${at}[${i}]` })).filter(({ value }) => value !== '' && value !== null);
}
