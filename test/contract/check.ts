/**
 * A small typed checker for the contract tables in spec.ts: it validates a JSON value against a
 * table of field paths and reports every mismatch by its concrete path (`choices[0].message`).
 *
 * Rules (the contract's, not a schema language):
 * - A path is dot-separated names; `name[]` means "every element of the array `name`".
 * - `integer` is Number.isInteger; `number` is any finite number (integers included).
 * - `object` is a non-null, non-array object; `array` an array; `null` the JSON null.
 * - A field may list several types (`['string', 'null']`), a literal value, a pattern
 *   (strings only) or a set of allowed values.
 * - Extra fields are allowed; a missing or retyped field is a mismatch.
 * - `[]` over an empty array checks nothing below it (the tests assert non-emptiness themselves).
 */

export type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null';

export type Literal = string | number | boolean | null;

export interface FieldRule {
  /** Dotted path; `[]` after a name walks every element of that array. */
  readonly path: string;
  /** The type (or types) the value must have. */
  readonly type: FieldType | readonly FieldType[];
  /** The exact value the field must have (e.g. `object: 'list'`). */
  readonly literal?: Literal;
  /** A pattern a string value must match (e.g. the `sk-` key format). */
  readonly pattern?: RegExp;
  /** The values the field may take (e.g. a role). */
  readonly oneOf?: readonly Literal[];
  /** Free text: what the spec says about the field. */
  readonly note?: string;
}

/** A table of fields, as written in the spec (one row per field). */
export type FieldTable = readonly FieldRule[];

export interface Mismatch {
  /** The concrete path (array indices filled in). */
  path: string;
  expected: string;
  actual: string;
}

/** The JSON type of a value, in the checker's vocabulary (`integer` before `number`). */
export function jsonTypeOf(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return `non-finite number (${String(value)})`;
    return Number.isInteger(value) ? 'integer' : 'number';
  }
  if (typeof value === 'object') return 'object';
  return typeof value; // string, boolean (JSON has nothing else)
}

/** Whether `value` is of the table type `type`. */
export function isOfType(value: unknown, type: FieldType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
    case 'null':
      return value === null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  if (value === undefined) return 'missing';
  if (typeof value === 'number' && !Number.isFinite(value)) return jsonTypeOf(value);
  const text = JSON.stringify(value);
  const shown = text.length > 80 ? `${text.slice(0, 77)}...` : text;
  return `${jsonTypeOf(value)} ${shown}`;
}

interface Segment {
  name: string;
  each: boolean;
}

function parsePath(path: string): Segment[] {
  return path.split('.').map((part) => (part.endsWith('[]') ? { name: part.slice(0, -2), each: true } : { name: part, each: false }));
}

function join(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}.${name}`;
}

/**
 * All values a rule's path reaches, with their concrete paths; a path that cannot be walked
 * (a parent missing or of the wrong type) is reported as a mismatch at the deepest point reached.
 */
function resolve(root: unknown, rule: FieldRule, out: Mismatch[]): { path: string; value: unknown }[] {
  let current: { path: string; value: unknown }[] = [{ path: '', value: root }];
  const segments = parsePath(rule.path);
  for (const segment of segments) {
    const next: { path: string; value: unknown }[] = [];
    for (const node of current) {
      if (!isRecord(node.value)) {
        out.push({ path: node.path === '' ? '(root)' : node.path, expected: 'object', actual: show(node.value) });
        continue;
      }
      const path = join(node.path, segment.name);
      const value = node.value[segment.name];
      if (!segment.each) {
        next.push({ path, value });
        continue;
      }
      if (!Array.isArray(value)) {
        out.push({ path, expected: 'array', actual: show(value) });
        continue;
      }
      value.forEach((element, i) => next.push({ path: `${path}[${i}]`, value: element }));
    }
    current = next;
  }
  return current;
}

function checkValue(path: string, value: unknown, rule: FieldRule): Mismatch[] {
  const types: readonly FieldType[] = typeof rule.type === 'string' ? [rule.type] : rule.type;
  if (!types.some((type) => isOfType(value, type))) return [{ path, expected: types.join(' | '), actual: show(value) }];
  if (rule.literal !== undefined && value !== rule.literal) return [{ path, expected: `the value ${JSON.stringify(rule.literal)}`, actual: show(value) }];
  if (rule.oneOf !== undefined && !rule.oneOf.includes(value as Literal)) {
    return [{ path, expected: `one of ${rule.oneOf.map((v) => JSON.stringify(v)).join(', ')}`, actual: show(value) }];
  }
  if (rule.pattern !== undefined && typeof value === 'string' && !rule.pattern.test(value)) return [{ path, expected: `a string matching ${String(rule.pattern)}`, actual: show(value) }];
  return [];
}

/** Every mismatch between `value` and `table` (empty when it conforms). Duplicates are reported once. */
export function check(value: unknown, table: FieldTable): Mismatch[] {
  const out: Mismatch[] = [];
  for (const rule of table) {
    for (const node of resolve(value, rule, out)) out.push(...checkValue(node.path, node.value, rule));
  }
  const seen = new Set<string>();
  return out.filter((m) => {
    const key = `${m.path}\u0000${m.expected}\u0000${m.actual}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** One line per mismatch: `path: expected X, got Y`. */
export function describe(mismatches: readonly Mismatch[]): string[] {
  return mismatches.map((m) => `${m.path}: expected ${m.expected}, got ${m.actual}`);
}

/**
 * Reads a value at a simple path (`error.code`, `data.0.id`) without type assertions at the
 * call site; undefined when any step is missing.
 */
export function at(value: unknown, path: string): unknown {
  let current: unknown = value;
  for (const part of path.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(part)) current = current[Number(part)];
    else if (isRecord(current)) current = current[part];
    else return undefined;
  }
  return current;
}

/** `at` narrowed to a string (undefined otherwise). */
export function str(value: unknown, path: string): string | undefined {
  const found = at(value, path);
  return typeof found === 'string' ? found : undefined;
}

/** `at` narrowed to an array (empty otherwise). */
export function list(value: unknown, path: string): unknown[] {
  const found = at(value, path);
  return Array.isArray(found) ? found : [];
}
