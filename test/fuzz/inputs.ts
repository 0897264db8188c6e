import { formPart, multipartInput } from './multipart.js';
import { allPaths, badAuth, CONTENT_TYPES, credential, junkQuery, mutateFields, short, WRONG_METHODS } from './mutate.js';
import { Rng, SEED } from './rng.js';
import { CHAT_MODELS, type Fixture, type Spec } from './specs.js';
import { badValue, BODY_LIMIT, brokenJson, clone, DEEP_VALUES, HUGE_OR_DEEP, INVALID_UTF8, type Json, put, Raw, setPath, toJson, withInvalidUtf8 } from './values.js';
import { type ErrorShape, type FuzzInput, rawRequest } from './wire.js';

/** One fuzzer input from the seed and its index: random, the sweep of every known field, and the fixed ones. */

function inputRng(index: number): Rng {
  return new Rng((SEED ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
}

function baseHeaders(spec: Spec, rng: Rng, f: Fixture): Record<string, string> {
  const headers: Record<string, string> = {};
  const auth = credential(f, spec.auth);
  if (auth) headers.authorization = auth;
  if (spec.headers) Object.assign(headers, spec.headers(rng, f));
  return headers;
}

export function build(spec: Spec, index: number, f: Fixture): FuzzInput {
  const rng = inputRng(index);
  let path = spec.path(rng, f);
  let method = spec.method;
  const headers = baseHeaders(spec, rng, f);
  const input = (mutation: string, extra: Partial<FuzzInput> = {}): FuzzInput => {
    const made: FuzzInput = { endpoint: spec.name, mutation, method, path, headers, billable: spec.billable === true, shape: spec.shape, ...extra };
    // A body past the limit may be refused before it is all sent: the connection may close under the writer.
    if (made.body && made.body.length > BODY_LIMIT) made.mayBeCut = true;
    return made;
  };

  // A share of every endpoint's inputs goes to what HTTP itself can get wrong.
  if (rng.chance(0.07)) return rawInput(rng, spec, f, path, headers);
  if (rng.chance(0.03)) {
    const wrong = rng.pick(WRONG_METHODS.filter((m) => m !== spec.method));
    method = wrong;
    return input(`wrong-method:${wrong}`, wrong === 'GET' || wrong === 'HEAD' ? {} : { body: Buffer.from(toJson(spec.bases?.(f)[0] ?? {})) , headers: { ...headers, 'content-type': 'application/json' } });
  }
  if (rng.chance(0.02)) {
    const big = rng.chance(0.5) ? { 'x-junk': 'h'.repeat(20_000 + rng.int(40_000)) } : Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`x-h${i}`, 'v'.repeat(50)]));
    return input('oversized-headers', { headers: { ...headers, ...big } });
  }
  if (rng.chance(0.02)) {
    path = `${path}?${'q'.repeat(20_000)}=1`;
    return input('oversized-url');
  }

  if (!spec.bases) {
    // A GET (or DELETE) without a body: junk queries, bad credentials, a body where none goes.
    const roll = rng.int(100);
    if (roll < 50) {
      const query = junkQuery(rng, spec.query ?? []);
      path = `${path}?${query}`;
      return input(`query:${query.slice(0, 60)}`);
    }
    if (roll < 75) {
      const bad = badAuth(rng, f, spec.auth, spec.noLiveSession);
      const merged = { ...headers };
      delete merged.authorization;
      return input(bad.label, { headers: { ...merged, ...bad.headers } });
    }
    if (roll < 85) {
      const body = rng.chance(0.5) ? Buffer.from(toJson(badValue(rng))) : rng.bytes(rng.int(3000));
      return input('body-on-bodiless', { body, headers: { ...headers, 'content-type': rng.pick(CONTENT_TYPES) } });
    }
    if (roll < 92) {
      path = rng.pick([`${path}/`, `${path}//`, `${path}/x`, `${path}%2F`, `${path}/..`, `/v1/v1${path}`, `${path}.json`, path.toUpperCase()]);
      return input('path-variant');
    }
    return input('as-is-with-junk-headers', { headers: { ...headers, accept: rng.pick(['text/html', '*/*', 'application/xml', 'x'.repeat(3000)]), 'accept-encoding': 'gzip, br, zstd, x', 'x-request-id': rng.pick(['', '../../', 'x'.repeat(500), 'ok-id']), 'x-forwarded-for': rng.pick(['1.2.3.4', 'garbage', '::1, 10.0.0.1', 'x'.repeat(2000)]) } });
  }

  // Transcriptions: half the inputs are multipart forms.
  if (spec.multipart && rng.chance(0.55)) {
    const form = multipartInput(rng);
    return input(form.mutation, { body: form.body, headers: { ...headers, 'content-type': form.contentType }, ...(form.mayBeCut ? { mayBeCut: true } : {}) });
  }

  const base = clone(rng.pick(spec.bases(f)));
  const jsonHeaders: Record<string, string> = { ...headers, 'content-type': 'application/json' };
  const roll = rng.int(100);
  if (roll < 56) {
    const done = mutateFields(rng, base, spec.extras ?? []);
    return jsonBody(input, base, jsonHeaders, done.join(' + '));
  }
  if (roll < 63) {
    const value = badValue(rng, 0.3);
    return jsonBody(input, value, jsonHeaders, `body-not-object:${value instanceof Raw ? value.label : short(value)}`);
  }
  if (roll < 69) {
    const text = brokenJson(rng, toJson(base));
    return input('broken-json', { body: Buffer.from(text, 'utf8'), headers: jsonHeaders, ...(text.length > 60_000 ? { bodyLabel: 'broken JSON (long)' } : {}) });
  }
  if (roll < 74) {
    if (rng.chance(0.5)) mutateFields(rng, base, spec.extras ?? []);
    return input('invalid-utf8', { body: withInvalidUtf8(rng, toJson(base)), headers: jsonHeaders });
  }
  if (roll < 77) {
    const variant = rng.int(4);
    const h = variant === 0 ? jsonHeaders : variant === 1 ? headers : { ...headers, 'content-type': rng.pick(CONTENT_TYPES) };
    return input(`empty-body:${variant}`, { body: variant === 3 ? Buffer.from(rng.pick([' ', '\n', '\r\n\t', 'null', '""', '0'])) : Buffer.alloc(0), headers: h });
  }
  if (roll < 81) {
    // A huge string or a deep value at a known field.
    const paths = allPaths(base);
    const path = paths.length > 0 ? rng.pick(paths) : 'x';
    const value = rng.pick(HUGE_OR_DEEP);
    setPath(base, path, value);
    return jsonBody(input, base, jsonHeaders, `huge-or-deep:${path}=${value.label}`);
  }
  if (roll < 82) {
    // Past the body limit (server.max_body_size): refused, perhaps before it is all sent.
    const padded = { ...(base as Record<string, Json>), pad: 'p'.repeat(BODY_LIMIT + rng.int(200_000)) };
    return input('over-body-limit', { body: Buffer.from(toJson(padded)), headers: jsonHeaders, mayBeCut: true, bodyLabel: `valid body + "pad" of ${BODY_LIMIT}+ bytes` });
  }
  if (roll < 88) {
    const done = rng.chance(0.6) ? mutateFields(rng, base, spec.extras ?? []) : [];
    const type = rng.chance(0.15) ? undefined : rng.pick(CONTENT_TYPES);
    const h = { ...headers };
    if (type !== undefined) h['content-type'] = type;
    return input(`content-type:${type?.slice(0, 40) ?? 'none'}${done.length ? ` + ${done.join(' + ')}` : ''}`, { body: Buffer.from(toJson(base)), headers: h });
  }
  if (roll < 96) {
    const done = rng.chance(0.5) ? mutateFields(rng, base, spec.extras ?? []) : [];
    const bad = badAuth(rng, f, spec.auth, spec.noLiveSession);
    const merged = { ...jsonHeaders };
    delete merged.authorization;
    return input(`${bad.label}${done.length ? ` + ${done.join(' + ')}` : ''}`, { body: Buffer.from(toJson(base)), headers: { ...merged, ...bad.headers } });
  }
  const done = mutateFields(rng, base, spec.extras ?? []);
  const query = junkQuery(rng, ['beta', 'stream', 'model', 'api-version', 'key']);
  path = `${path}?${query}`;
  return jsonBody(input, base, jsonHeaders, `query:${query.slice(0, 40)} + ${done.join(' + ')}`);
}

function jsonBody(input: (mutation: string, extra?: Partial<FuzzInput>) => FuzzInput, body: Json, headers: Record<string, string>, mutation: string): FuzzInput {
  const text = toJson(body).replace(/SIM:/g, 'SIM;');
  const buffer = Buffer.from(text, 'utf8');
  return input(mutation, { body: buffer, headers, ...(buffer.length > BODY_LIMIT ? { mayBeCut: true } : {}), ...(buffer.length > 20_000 ? { bodyLabel: mutation } : {}) });
}

/** Requests no client library writes: malformed framing, bytes outside latin1, conflicting lengths, cut bodies. */
function rawInput(rng: Rng, spec: Spec, f: Fixture, path: string, headers: Record<string, string>): FuzzInput {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  const body = Buffer.from(toJson(spec.bases?.(f)[0] ?? {}));
  const make = (mutation: string, raw: Buffer, extra: Partial<FuzzInput> = {}): FuzzInput => ({ endpoint: spec.name, mutation: `raw:${mutation}`, method: spec.method, path, headers, raw, billable: spec.billable === true, shape: spec.shape, ...extra });
  const cl = (n: number) => `Content-Length: ${n}`;
  const json = 'Content-Type: application/json';
  switch (rng.int(22)) {
    case 0:
      return make('header-20KB', rawRequest(spec.method, path, [...lines, `X-Junk: ${'h'.repeat(20_000)}`]));
    case 1:
      return make('control-char-in-header', rawRequest(spec.method, path, [...lines, `X-Junk: a${String.fromCharCode(rng.pick([0, 1, 8, 0x7f]))}b`]));
    case 2:
      return make('bad-header-name', rawRequest(spec.method, path, [...lines, rng.pick(['Bad Header: x', '(x): y', ': empty-name', 'NoColon', 'X-Ü: y'])]));
    case 3:
      return make('obs-fold', rawRequest(spec.method, path, [...lines, 'X-Folded: a', ' continued']));
    case 4:
      return make('non-latin1-authorization', rawRequest(spec.method, path, [Buffer.concat([Buffer.from('Authorization: Bearer '), rng.pick(INVALID_UTF8), Buffer.from('sk-')]), json, cl(body.length)], body));
    case 5:
      return make('two-authorizations', rawRequest(spec.method, path, [`Authorization: Bearer ${f.funded.key}`, `Authorization: Bearer ${f.akm}`, `x-api-key: a`, `x-api-key: b`, json, cl(body.length)], body));
    case 6:
      return make('content-length-not-a-number', rawRequest(spec.method, path, [...lines, json, `Content-Length: ${rng.pick(['abc', '-1', '1e3', '0x10', ' ', '99999999999999999999999'])}`], body));
    case 7:
      return make('two-content-lengths', rawRequest(spec.method, path, [...lines, json, cl(body.length), cl(body.length + 5)], body));
    case 8:
      return make('content-length-and-chunked', rawRequest(spec.method, path, [...lines, json, cl(body.length), 'Transfer-Encoding: chunked'], body));
    case 9:
      return make('bad-chunk-size', rawRequest(spec.method, path, [...lines, json, 'Transfer-Encoding: chunked'], Buffer.from(`zz\r\n${body.toString()}\r\n0\r\n\r\n`)));
    case 10:
      return make('transfer-encoding-gzip', rawRequest(spec.method, path, [...lines, json, 'Transfer-Encoding: gzip, chunked'], Buffer.from(`${body.length.toString(16)}\r\n${body.toString()}\r\n0\r\n\r\n`)));
    case 11:
      return make('truncated-body-half-closed', rawRequest(spec.method, path, [...lines, json, cl(body.length + 100)], body), { rawEnd: true, mayBeCut: true });
    case 12:
      // The rest never comes: answered when server.body_idle_timeout (1 s here) passes.
      return make('truncated-body-stalled', rawRequest(spec.method, path, [...lines, json, cl(body.length + 100)], body), { mayBeCut: true });
    case 13:
      return make('declared-over-limit', rawRequest(spec.method, path, [...lines, json, cl(1_000_000_000_000)], body.subarray(0, 10)), { mayBeCut: true });
    case 14: {
      const chunk = 'a'.repeat(64 * 1024);
      const chunks = Array.from({ length: 6 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('');
      return make('chunked-over-limit', rawRequest(spec.method, path, [...lines, json, 'Transfer-Encoding: chunked'], Buffer.from(`${chunks}0\r\n\r\n`)), { mayBeCut: true });
    }
    case 15:
      return make('request-line', Buffer.from(rng.pick([`${spec.method}  ${path}  HTTP/1.1\r\nHost: x\r\n\r\n`, `${spec.method} ${path} HTTP/9.9\r\nHost: x\r\n\r\n`, `${spec.method.toLowerCase()} ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, `FOO ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, `${spec.method} ${path.slice(1)} HTTP/1.1\r\nHost: x\r\n\r\n`, `${spec.method} http://evil.example${path} HTTP/1.1\r\nHost: x\r\n\r\n`, `OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n`, `${spec.method} ${path}\r\n\r\n`, `${spec.method} ${path} HTTP/1.1\r\n\r\n`]), 'latin1'));
    case 16:
      return make('path-bytes', Buffer.concat([Buffer.from(`${spec.method} ${path}/`), rng.pick([...INVALID_UTF8, Buffer.from(' space'), Buffer.from('\u0000')]), Buffer.from(` HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${lines.join('\r\n')}\r\n\r\n`)]));
    case 17:
      return make('http-1.0-no-host', Buffer.from(`${spec.method} ${path} HTTP/1.0\r\n${lines.join('\r\n')}\r\n\r\n`, 'latin1'));
    case 18:
      return make('expect-100-continue', rawRequest(spec.method, path, [...lines, json, cl(body.length), 'Expect: 100-continue'], body));
    case 19:
      return make('expect-unknown', rawRequest(spec.method, path, [...lines, json, cl(body.length), 'Expect: 200-ok'], body));
    case 20:
      return make('upgrade-websocket', rawRequest('GET', path, [...lines, 'Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13']), { mayBeCut: true });
    default:
      return make('header-bytes-in-value', rawRequest(spec.method, path, [...lines, Buffer.concat([Buffer.from('X-Binary: '), rng.pick(INVALID_UTF8), Buffer.from('\u00e9'), rng.bytes(8).map((b) => (b < 0x20 || b === 0x7f ? 0x41 : b))]), json, cl(body.length)], body));
  }
}

/**
 * The sweep: for every JSON endpoint, every field of its bases (nested ones included) and the
 * fields the bases leave out, one input with a value of a wrong type and one with JSON nested
 * 10,000 levels at that field: each known field is tried, not only those the dice pick.
 */
export interface SweepItem {
  spec: Spec;
  baseIndex: number;
  path: string;
  deep: boolean;
}

/** Bases whose paths a sweep covers: of the chat formats, one OpenAI and one Claude model (the others have the same fields). */
const SWEPT_MODELS = new Set(['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5']);

export function sweepItems(all: readonly Spec[], f: Fixture): SweepItem[] {
  const items: SweepItem[] = [];
  for (const spec of all) {
    if (!spec.bases) continue;
    spec.bases(f).forEach((base, baseIndex) => {
      const model = base !== null && typeof base === 'object' && !Array.isArray(base) && !(base instanceof Raw) ? base.model : undefined;
      if (typeof model === 'string' && CHAT_MODELS.includes(model) && !SWEPT_MODELS.has(model)) return;
      const paths = [...allPaths(base, '', 8), ...(baseIndex === 0 ? [...(spec.extras ?? []), 'x_fuzz_field'] : [])];
      for (const path of paths) for (const deep of [false, true]) items.push({ spec, baseIndex, path, deep });
    });
  }
  return items;
}

const TYPE_CONFUSIONS: readonly Json[] = [null, true, false, 0, -1, 1.5, new Raw('1e309'), new Raw('-0'), new Raw('123456789012345678901234567890'), 'NaN', '', ' ', 'x', {}, [], [null], [{}], { a: 1 }, new Raw('"\\ud800"', 'lone surrogate'), new Raw('{"__proto__":{"x":1}}', '{"__proto__":…}')];

export function buildSweep(item: SweepItem, index: number, f: Fixture): FuzzInput {
  const rng = inputRng(index);
  const spec = item.spec;
  const base = clone((spec.bases?.(f) ?? [])[item.baseIndex] ?? {});
  const value = item.deep ? (DEEP_VALUES[index % DEEP_VALUES.length] as Raw) : clone(rng.pick(TYPE_CONFUSIONS));
  if (!setPath(base, item.path, value)) put(base as Record<string, Json>, item.path, value);
  const headers = { ...baseHeaders(spec, rng, f), 'content-type': 'application/json' };
  const input = (mutation: string, extra: Partial<FuzzInput> = {}): FuzzInput => ({ endpoint: spec.name, mutation, method: spec.method, path: spec.path(rng, f), headers, billable: spec.billable === true, shape: spec.shape, ...extra });
  return jsonBody(input, base, headers, `sweep:${item.path}=${value instanceof Raw ? value.label : short(value)}`);
}

/** Fixed inputs every run sends once: a few that are too big to send often, or must always be there. */
export function fixedInputs(f: Fixture): FuzzInput[] {
  const out: FuzzInput[] = [];
  const auth = { authorization: `Bearer ${f.funded.key}` };
  // A 26 MB upload: the file limit (25 MB) is checked as it streams.
  const boundary = '----fuzzbig';
  const big = Buffer.concat([formPart(boundary, 'model', 'openai/whisper-1'), formPart(boundary, 'file', Buffer.alloc(26 * 1024 * 1024, 1), { filename: 'big.mp3', type: 'audio/mpeg' }), Buffer.from(`--${boundary}--\r\n`)]);
  out.push({ endpoint: 'POST /v1/audio/transcriptions', mutation: 'multipart:file-26MB', method: 'POST', path: '/v1/audio/transcriptions', headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: big, mayBeCut: true, billable: true, shape: 'openai', bodyLabel: '26 MB file' });
  // 404s in both formats, and the spec's doubled path.
  for (const path of ['/v1/v1/messages', '/v1/chat', '/api/nothing', '/v2/models', '/%', '/..%2f..%2f', `/${'x'.repeat(5000)}`]) {
    out.push({ endpoint: 'unknown path', mutation: 'not-found', method: 'POST', path, headers: { ...auth, 'content-type': 'application/json' }, body: Buffer.from('{}'), billable: false, shape: 'openai' });
  }
  out.push({ endpoint: 'POST /v1/messages', mutation: 'wrong-method:GET (anthropic 405)', method: 'GET', path: '/v1/messages', headers: auth, billable: false, shape: 'anthropic' });
  // A field name a response header cannot carry, where the serving family ignores it (named in x-gateway-ignored-params).
  const json = { ...auth, 'content-type': 'application/json' };
  for (const stream of [false, true]) {
    for (const name of ['漢字', 'a\nb']) {
      const field = { [name]: 1 };
      const bodies: [string, ErrorShape, Record<string, unknown>][] = [
        ['POST /v1/chat/completions', 'openai', { model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8, stream, ...field }],
        ['POST /v1/responses', 'openai', { model: 'anthropic/claude-haiku-4-5', input: 'hi', max_output_tokens: 8, stream, ...field }],
        ['POST /v1/messages', 'anthropic', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8, stream, ...field }],
      ];
      for (const [endpoint, shape, body] of bodies) {
        out.push({ endpoint, mutation: `extra-field-not-header-safe:${JSON.stringify(name)}${stream ? ' (stream)' : ''}`, method: 'POST', path: endpoint.split(' ')[1] as string, headers: json, body: Buffer.from(JSON.stringify(body)), billable: true, shape });
      }
    }
  }
  return out;
}
