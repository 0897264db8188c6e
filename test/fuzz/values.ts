import { Rng } from './rng.js';

/**
 * Bad JSON values for the fuzzer, written as raw text where JSON.stringify cannot write them
 * (numbers past a double, lone surrogates, 10,000-level nesting), broken JSON and invalid UTF-8.
 */

/** JSON text placed as it is (what JSON.stringify cannot produce: 1e309, -0, lone surrogates, 10,000 levels). */
export class Raw {
  constructor(
    readonly text: string,
    /** A short name for reports (the text may be 200 KB). */
    readonly label: string = text.length > 40 ? `${text.slice(0, 40)}…(${text.length} chars)` : text,
  ) {}
}

export type Json = null | boolean | number | string | Raw | Json[] | { [key: string]: Json | undefined };

/** Serializes a tree that may hold Raw nodes (undefined members are left out, as JSON.stringify does). */
export function toJson(value: Json | undefined): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : toJson(item))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const parts: string[] = [];
    for (const key of Object.keys(value)) {
      const member = value[key];
      if (member !== undefined) parts.push(`${JSON.stringify(key)}:${toJson(member)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A copy of a JSON tree (Raw nodes are shared: they are immutable). */
export function clone<T extends Json | undefined>(value: T): T {
  if (value instanceof Raw || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => clone(item)) as T;
  const out: Record<string, Json | undefined> = {};
  for (const key of Object.keys(value)) put(out, key, clone(value[key]));
  return out as T;
}

/** Sets (or, with `remove`, deletes) a dotted path (`messages.0.content`) in a tree, creating nothing that is missing on the way. */
export function setPath(root: Json, path: string, value: Json | undefined, remove = false): boolean {
  const parts = path.split('.');
  let node: Json | undefined = root;
  for (let i = 0; i < parts.length - 1; i++) {
    if (node === null || typeof node !== 'object' || node instanceof Raw) return false;
    node = Array.isArray(node) ? node[Number(parts[i])] : (node as Record<string, Json | undefined>)[parts[i] as string];
  }
  if (node === null || node === undefined || typeof node !== 'object' || node instanceof Raw) return false;
  const last = parts.at(-1) as string;
  if (Array.isArray(node)) {
    const index = Number(last);
    if (remove) node.splice(index, 1);
    else node[index] = value as Json;
  } else if (remove) delete (node as Record<string, Json | undefined>)[last];
  else put(node as Record<string, Json | undefined>, last, value);
  return true;
}

/** Sets an own, enumerable member, `__proto__` included (an assignment would set the prototype instead). */
export function put(node: Record<string, Json | undefined>, key: string, value: Json | undefined): void {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
}

const DEEP = 10_000;
/** Bodies near the body limit the test daemon is given (server.max_body_size), and past it. */
export const BODY_LIMIT = 256 * 1024;

const deepArray = new Raw(`${'['.repeat(DEEP)}${']'.repeat(DEEP)}`, `[[[…]]] ${DEEP} levels`);
const deepObject = new Raw(`${'{"a":'.repeat(DEEP)}1${'}'.repeat(DEEP)}`, `{"a":{"a":…}} ${DEEP} levels`);
const deepMixed = new Raw(`${'[{"x":'.repeat(DEEP / 2)}0${'}]'.repeat(DEEP / 2)}`, `[{"x":[{…}]}] ${DEEP} levels`);
const hugeString = new Raw(JSON.stringify('a'.repeat(200 * 1024)), '"aaa…" 200 KB');
const hugeUnicode = new Raw(JSON.stringify('漢😀'.repeat(12 * 1024)), '"漢😀…" 24k pairs');
const hugeEscapes = new Raw(`"${'\\u0000'.repeat(30_000)}"`, '"\\u0000…" 30k escapes');
const hugeArray = new Raw(`[${'0,'.repeat(60_000)}0]`, '[0,0,…] 60,001 items');
const hugeObjects = new Raw(`[${'{},'.repeat(40_000)}{}]`, '[{},{},…] 40,001 objects');
const hugeStrings = new Raw(`[${'"x",'.repeat(30_000)}"x"]`, '["x",…] 30,001 strings');
const wideObject = new Raw(`{${Array.from({ length: 8000 }, (_, i) => `"k${i}":${i}`).join(',')}}`, '{"k0":0,…} 8,000 keys');
const deepSchema = new Raw(`${'{"type":"object","properties":{"a":'.repeat(3000)}{"type":"string"}${'}}'.repeat(3000)}`, 'JSON schema nested 3,000 levels');

/** Numbers and numeric-looking strings at the edges. */
const EXTREME_NUMBERS: readonly Json[] = [
  new Raw('1e309'),
  new Raw('-1e309'),
  new Raw('-0'),
  new Raw('0e0'),
  new Raw('1e-400'),
  new Raw('9007199254740993'),
  new Raw('123456789012345678901234567890123456789'),
  new Raw('-123456789012345678901234567890.5e-3'),
  new Raw('1E+2'),
  new Raw('0.30000000000000004'),
  new Raw('4.9e-324'),
  new Raw('1.7976931348623157e308'),
  -1,
  0,
  0.5,
  -0.0001,
  2.5,
  3,
  1e21,
  2 ** 31,
  2 ** 32 + 1,
  -(2 ** 53),
  Number.MAX_SAFE_INTEGER,
  'NaN',
  'Infinity',
  '-Infinity',
  '1e309',
  '-0',
  '0x10',
  '1_000',
  ' 1 ',
  '١٢٣',
];

/** Strings that are bad in most places. */
const BAD_STRINGS: readonly Json[] = [
  '',
  ' ',
  '\t\n',
  '\u0000',
  'a\u0000b',
  'null',
  'true',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  new Raw('"\\ud800"', 'lone high surrogate'),
  new Raw('"\\udfff\\ud800x"', 'reversed surrogates'),
  new Raw('"\\u0000\\u001f\\u007f"'),
  '\u202e\u200b\ufeff',
  '😀'.repeat(50),
  'a\r\nInjected: header',
  '%s%n%x%d',
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '../../../../etc/passwd',
  `sk-${'g'.repeat(64)}`,
  `akm-${'0'.repeat(10)}`,
  'x'.repeat(5000),
  'SIM;{"status":500}',
  'openai/',
  '/gpt-4o',
  'openai//gpt-4o',
  ' openai/gpt-4o-mini ',
  'OPENAI/GPT-4O-MINI',
  'nope/nope',
  '2020-13-45',
  '1970-01-01',
  '9999-99-99T99:99:99Z',
  'not-an-email',
  'a@b',
  '@example.com',
];

/** Shapes: containers that are wrong where a scalar goes, and huge or deep ones. */
const BAD_SHAPES: readonly Json[] = [
  {},
  [],
  [null],
  [[]],
  [{}],
  { '': '' },
  { a: { b: { c: [] } } },
  new Raw('{"__proto__":{"polluted":true}}', '{"__proto__":{…}}'),
  new Raw('{"constructor":{"prototype":{"polluted":true}}}', '{"constructor":{"prototype":…}}'),
  new Raw('{"a":1,"a":2,"a":{}}', 'duplicate keys'),
  [1, 'two', null, true, {}],
];

/** JSON 10,000 levels deep: an array, an object, both mixed. */
export const DEEP_VALUES: readonly Raw[] = [deepArray, deepObject, deepMixed];

export const HUGE_OR_DEEP: readonly Raw[] = [deepArray, deepObject, deepMixed, hugeString, hugeUnicode, hugeEscapes, hugeArray, hugeObjects, hugeStrings, wideObject, deepSchema];

/** A bad value of any kind; huge and deep ones with probability `heavy`. */
export function badValue(rng: Rng, heavy = 0.06): Json {
  return clone(pickBad(rng, heavy));
}

function pickBad(rng: Rng, heavy: number): Json {
  if (rng.chance(heavy)) return rng.pick(HUGE_OR_DEEP);
  switch (rng.int(6)) {
    case 0:
      return rng.pick([null, true, false]);
    case 1:
    case 2:
      return rng.pick(EXTREME_NUMBERS);
    case 3:
    case 4:
      return rng.pick(BAD_STRINGS);
    default:
      return rng.pick(BAD_SHAPES);
  }
}

/** Text that is not JSON, or not quite. */
export function brokenJson(rng: Rng, valid: string): string {
  switch (rng.int(14)) {
    case 0:
      return valid.slice(0, Math.max(1, rng.int(valid.length)));
    case 1:
      return `${valid.slice(0, -1)},}`;
    case 2:
      return valid.replace(/"/g, "'");
    case 3:
      return `${valid}${valid}`;
    case 4:
      return `\ufeff${valid}`;
    case 5:
      return `// comment\n${valid}`;
    case 6:
      return valid.replace(/:(\s*)"/, ':NaN,"x":"');
    case 7:
      return `{"model": undefined}`;
    case 8:
      return rng.pick(['[', '{', ']', '}', '"', 'nul', 'tru', '-', '01', '1.', '.5', '+1', '0x1f', '{"a"}', '{a:1}', "{'a':1}", '{"a":1,}', '[1,]', '"\\x41"', '"\\u12"', '"\t"', '\u0000']);
    case 9:
      return `${'['.repeat(200_000)}`;
    case 10:
      return `${valid}\u0000`;
    case 11:
      return valid.replace(/"/, '"\n');
    case 12:
      return `{"a":${'1'.repeat(100_000)}}`;
    default:
      return valid.replace(/[{}]/g, rng.chance(0.5) ? '' : '[');
  }
}

/** Byte sequences that are not UTF-8 (overlong, surrogates, truncated, stray continuation, 0xff). */
export const INVALID_UTF8: readonly Buffer[] = [
  Buffer.from([0xff]),
  Buffer.from([0xfe, 0xff]),
  Buffer.from([0xc0, 0x80]),
  Buffer.from([0xc1, 0xbf]),
  Buffer.from([0xe0, 0x80, 0xaf]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf4, 0x90, 0x80, 0x80]),
  Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
  Buffer.from([0x80]),
  Buffer.from([0xe2, 0x82]),
  Buffer.from([0xf0, 0x9f, 0x98]),
];

/** `json` with invalid UTF-8 bytes put inside its first string values (or anywhere, sometimes). */
export function withInvalidUtf8(rng: Rng, json: string): Buffer {
  const bytes = Buffer.from(json, 'utf8');
  const bad = rng.pick(INVALID_UTF8);
  // Inside a string: right after an opening quote of a value (`:"`), else at a random place.
  const text = bytes.toString('latin1');
  const quotes: number[] = [];
  for (let at = text.indexOf(':"'); at !== -1 && quotes.length < 64; at = text.indexOf(':"', at + 2)) quotes.push(at + 2);
  const where = quotes.length > 0 && rng.chance(0.85) ? rng.pick(quotes) : rng.int(bytes.length + 1);
  return Buffer.concat([bytes.subarray(0, where), bad, bytes.subarray(where)]);
}
