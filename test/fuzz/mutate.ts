import { Rng } from './rng.js';
import { type Auth, type Fixture } from './specs.js';
import { badValue, clone, type Json, put, Raw, setPath, toJson } from './values.js';

/** The fuzzer's mutations: wrong types, missing and extra fields, bad credentials, junk query strings. */

export const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'multipart/form-data; boundary=----fuzz',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/xml',
  'application/octet-stream',
  'APPLICATION/JSON',
  'application/json;;;;',
  'application/json, text/html',
  'image/png',
  `application/${'x'.repeat(4000)}`,
  '*/*',
];

/** Paths to every member of a tree (`messages.0.content`), up to `depth`. */
export function allPaths(value: Json, prefix = '', depth = 5): string[] {
  if (depth === 0 || value === null || typeof value !== 'object' || value instanceof Raw) return [];
  const out: string[] = [];
  const keys = Array.isArray(value) ? value.map((_, i) => String(i)) : Object.keys(value);
  for (const key of keys) {
    const path = prefix ? `${prefix}.${key}` : key;
    out.push(path);
    const member = Array.isArray(value) ? value[Number(key)] : (value as Record<string, Json>)[key];
    out.push(...allPaths(member as Json, path, depth - 1));
  }
  return out;
}

function getPath(root: Json, path: string): Json | undefined {
  let node: Json | undefined = root;
  for (const part of path.split('.')) {
    if (node === null || node === undefined || typeof node !== 'object' || node instanceof Raw) return undefined;
    node = Array.isArray(node) ? node[Number(part)] : (node as Record<string, Json>)[part];
  }
  return node;
}

/** The same value in another JSON type: "5" for 5, 5 for "5", [v], {value: v}, its JSON as a string. */
function otherType(rng: Rng, value: Json | undefined): Json {
  if (typeof value === 'number') return rng.pick([String(value), [value], { value }, value !== 0, null]);
  if (typeof value === 'string') return rng.pick([Number(value) || 1, [value], { value }, value === '' ? 0 : true, null, value.toUpperCase()]);
  if (typeof value === 'boolean') return rng.pick([String(value), value ? 1 : 0, [value], { value }]);
  if (Array.isArray(value)) return rng.pick([value[0] ?? null, toJson(value), { ...value } as Json, value.length, [value]]);
  if (value !== null && typeof value === 'object' && !(value instanceof Raw)) return rng.pick([[value], toJson(value), Object.keys(value).length, true]);
  return rng.pick(['x', 1, [], {}]);
}

/** 1 to 3 changes to a body: wrong types, missing and extra fields, other-type values, grown arrays. Returns what was done. */
export function mutateFields(rng: Rng, body: Json, extras: readonly string[]): string[] {
  const done: string[] = [];
  const count = rng.chance(0.6) ? 1 : 2 + rng.int(2);
  for (let i = 0; i < count; i++) {
    const paths = allPaths(body);
    const roll = rng.int(100);
    if (roll < 45 && paths.length > 0) {
      const path = rng.pick(paths);
      const value = badValue(rng);
      setPath(body, path, value);
      done.push(`wrong-value:${path}=${value instanceof Raw ? value.label : short(value)}`);
    } else if (roll < 60 && paths.length > 0) {
      const path = rng.pick(paths);
      setPath(body, path, undefined, true);
      done.push(`missing:${path}`);
    } else if (roll < 78 && paths.length > 0) {
      const path = rng.pick(paths);
      const value = otherType(rng, getPath(body, path));
      setPath(body, path, value);
      done.push(`other-type:${path}=${short(value)}`);
    } else if (roll < 90) {
      // A field the endpoint knows but the base left out, or one nobody knows, at the top or inside.
      const name = extras.length > 0 && rng.chance(0.5) ? rng.pick(extras) : rng.pick(['foo', '__proto__', 'constructor', '', ' model', 'MODEL', 'x'.repeat(300), rng.word()]);
      const objects = ['', ...paths.filter((path) => { const v = getPath(body, path); return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw); })];
      const at = rng.pick(objects);
      const value = rng.chance(0.7) ? badValue(rng) : rng.word();
      if (at === '' && body !== null && typeof body === 'object' && !Array.isArray(body) && !(body instanceof Raw)) put(body as Record<string, Json>, name, value);
      else if (at !== '') setPath(body, `${at}.${name}`, value);
      done.push(`extra:${at ? `${at}.` : ''}${name.length > 20 ? `${name.slice(0, 20)}…` : name}=${value instanceof Raw ? value.label : short(value)}`);
    } else {
      // An array grown to thousands of members (each a copy of its first).
      const arrays = paths.filter((path) => Array.isArray(getPath(body, path)));
      if (arrays.length === 0) continue;
      const path = rng.pick(arrays);
      const array = getPath(body, path) as Json[];
      // Thousands of members, but a body of at most ~400 KB (a member may itself be huge or deep).
      const size = Math.min(rng.pick([100, 1000, 2049, 5000]), Math.max(2, Math.floor(400_000 / Math.max(1, toJson(array[0] ?? null).length))));
      setPath(body, path, Array.from({ length: size }, () => clone(array[0] ?? null)));
      done.push(`grown:${path}x${size}`);
    }
  }
  return done;
}

export function short(value: Json | undefined): string {
  const text = value instanceof Raw ? value.label : toJson(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

export function badAuth(rng: Rng, f: Fixture, auth: Auth, noLiveSession = false): { headers: Record<string, string>; label: string } {
  const choices: [string, Record<string, string>][] = [
    ['none', {}],
    ['Bearer', { authorization: 'Bearer' }],
    ['Bearer-space', { authorization: 'Bearer ' }],
    ['Basic', { authorization: 'Basic dXNlcjpwYXNzd29yZA==' }],
    ['two-tokens', { authorization: `Bearer ${f.funded.key} ${f.akm}` }],
    ['sk-non-hex', { authorization: `Bearer sk-${'g'.repeat(64)}` }],
    ['sk-short', { authorization: `Bearer sk-${'a'.repeat(63)}` }],
    ['sk-unknown', { authorization: `Bearer sk-${'0'.repeat(64)}` }],
    ['sk-upper', { authorization: `Bearer ${f.funded.key.toUpperCase()}` }],
    ['key-plus-x', { authorization: `Bearer ${f.funded.key}x` }],
    ['akm', { authorization: `Bearer ${f.akm}` }],
    ['sk', { authorization: `Bearer ${f.funded.key}` }],
    ['session', { authorization: `Bearer ${f.session}` }],
    ['long', { authorization: `Bearer ${'a'.repeat(8000)}` }],
    ['jwt-alg-none', { authorization: 'Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhY2NfMSIsImV4cCI6OTk5OTk5OTk5OX0.' }],
    ['jwt-garbage', { authorization: 'Bearer eyJ.eyJ.sig' }],
    ['jwt-tampered', { authorization: `Bearer ${f.session.slice(0, -4)}AAAA` }],
    ['x-api-key-junk', { 'x-api-key': `sk-${'z'.repeat(64)}` }],
    ['x-api-key-empty', { 'x-api-key': ' ' }],
    ['cookie-junk', { cookie: 'token=junk; token=; =;;' }],
    ['cookie-session-no-csrf', { cookie: `token=${f.session}` }],
    ['cookie-session-bad-csrf', { cookie: `token=${f.session}`, 'x-csrf-token': 'nope' }],
    ['cookie-foreign-origin', { cookie: `token=${f.session}`, origin: 'https://evil.example' }],
    ['malformed-origin', { authorization: credential(f, auth) ?? 'Bearer x', origin: 'http://[::1' }],
  ];
  const usable = noLiveSession ? choices.filter(([, headers]) => !Object.values(headers).some((value) => value.includes(f.session))) : choices;
  const [label, headers] = rng.pick(usable);
  return { headers, label: `bad-auth:${label}` };
}

export function credential(f: Fixture, auth: Auth): string | undefined {
  switch (auth) {
    case 'sk':
      return `Bearer ${f.funded.key}`;
    case 'akm':
      return `Bearer ${f.akm}`;
    case 'session':
      return `Bearer ${f.session}`;
    default:
      return undefined;
  }
}

export function junkQuery(rng: Rng, known: readonly string[]): string {
  const name = known.length > 0 && rng.chance(0.7) ? rng.pick(known) : rng.pick(['x', '%', '', '__proto__', 'a[b]', 'limit[]']);
  const value = rng.pick([
    '-1',
    '0',
    '1e3',
    '1.5',
    '99999999999999999999999',
    'NaN',
    'Infinity',
    '%',
    '%ZZ',
    '%E0%A4%A',
    '%00',
    '%FF%FE',
    '0x10',
    ' 1',
    '+1',
    '1e309',
    '2020-13-45',
    '9999999999999',
    '12345678901',
    '-0',
    'true',
    'ok',
    'error',
    'chat.completions',
    'me',
    'x'.repeat(2000),
    encodeURIComponent('😀'.repeat(20)),
    '',
  ]);
  let query = `${name}=${value}`;
  if (rng.chance(0.2)) query += `&${name}=${rng.pick(['1', '2', ''])}`;
  if (rng.chance(0.05)) query = Array.from({ length: 2000 }, (_, i) => `a${i}=${i}`).join('&');
  if (rng.chance(0.05)) query = rng.pick(['&&&', '=', '==&==', '?', '#frag', '%', '&%&']);
  return query;
}

export const WRONG_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'SEARCH', 'QUERY'];
