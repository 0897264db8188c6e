import t from 'tap';
import { at, check, describe, isOfType, jsonTypeOf, type FieldTable } from './check.js';
import { API_KEY, CATALOG_MODEL_LIST, CHAT_COMPLETION, COMPAT_MODEL_LIST, ENDPOINTS, ERROR_OBJECT, LIMITS, USER_PROFILE, WALLET_BALANCE } from './spec.js';

/**
 * The checker itself: a conforming value passes, and a renamed, missing or retyped field
 * fails with its path, so the contract suite can demonstrably fail.
 */

const model = { id: 'openai/gpt-4o-mini', name: 'GPT-4o mini', provider: 'openai', context_window: 8192, input_cost_per_1m: 12.6, output_cost_per_1m: 50 };
const catalog = { object: 'list', data: [model, { ...model, id: 'groq/openai/gpt-oss-120b', provider: 'groq' }] };

const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'openai/gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
};

const error = { error: { message: 'bad', type: 'invalid_request_error', code: 400 } };

/** A deep copy with `edit` applied (the fixtures stay untouched). */
function variant<T>(value: T, edit: (copy: T) => void): T {
  const copy = structuredClone(value);
  edit(copy);
  return copy;
}

t.test('types: integer is Number.isInteger, number any finite number', async (t) => {
  t.ok(isOfType(3, 'integer'));
  t.ok(isOfType(3, 'number'), 'an integer is a number');
  t.notOk(isOfType(3.5, 'integer'));
  t.notOk(isOfType('3', 'integer'));
  t.notOk(isOfType(Number.NaN, 'number'));
  t.notOk(isOfType(Number.POSITIVE_INFINITY, 'number'));
  t.notOk(isOfType(null, 'object'));
  t.notOk(isOfType([], 'object'));
  t.ok(isOfType([], 'array'));
  t.ok(isOfType(null, 'null'));
  t.equal(jsonTypeOf(undefined), 'missing');
  t.equal(jsonTypeOf(8192.5), 'number');
  t.equal(jsonTypeOf(8192), 'integer');
});

t.test('conforming values pass; extra fields are allowed', async (t) => {
  t.same(check(catalog, CATALOG_MODEL_LIST), []);
  t.same(check(completion, CHAT_COMPLETION), []);
  t.same(check(error, ERROR_OBJECT), []);
  t.same(check({ ...error, error: { ...error.error, reason: 'x', param: null } }, ERROR_OBJECT), [], 'extra error fields');
  t.same(check({ user: { balance: 0, email: 'a@b.co', name: 'A', id: 'acc_1' } }, USER_PROFILE), [], 'balance 0 (an integer) is a number');
  t.same(check({ balance: 12.5, currency: 'INR' }, WALLET_BALANCE), []);
  t.same(check({ object: 'list', data: [] }, COMPAT_MODEL_LIST), [], 'an empty list checks nothing below data[]');
  const key = { name: 'app', api_key: `sk-${'ab'.repeat(32)}`, rate_limit: 10000, budget: 0, expires_at: null };
  t.same(check(key, API_KEY), []);
  t.same(check({ ...key, expires_at: '2031-06-30' }, API_KEY), [], 'YYYY-MM-DD');
  t.same(check({ ...key, expires_at: '2031-06-30T13:00:00.000Z' }, API_KEY), [], 'ISO 8601 date-time');
});

t.test('a renamed field fails by path', async (t) => {
  const renamed = variant(catalog, (c) => {
    const first = c.data[0] as Record<string, unknown>;
    first.contextWindow = first.context_window;
    delete first.context_window;
  });
  t.same(describe(check(renamed, CATALOG_MODEL_LIST)), ['data[0].context_window: expected integer, got missing']);

  const renamedUsage = variant(completion, (c) => {
    const usage = c.usage as Record<string, unknown>;
    usage.input_tokens = usage.prompt_tokens;
    delete usage.prompt_tokens;
  });
  t.same(describe(check(renamedUsage, CHAT_COMPLETION)), ['usage.prompt_tokens: expected integer, got missing']);

  t.same(describe(check({ object: 'list', models: catalog.data }, CATALOG_MODEL_LIST)), ['data: expected array, got missing'], 'a renamed list reports once');
});

t.test('a missing field fails by path, a missing parent once', async (t) => {
  const noUsage = variant(completion, (c) => {
    delete (c as Partial<typeof completion>).usage;
  });
  t.same(describe(check(noUsage, CHAT_COMPLETION)), ['usage: expected object, got missing']);

  const noContent = variant(completion, (c) => {
    delete (c.choices[0]?.message as Partial<{ content: string }>).content;
  });
  t.same(describe(check(noContent, CHAT_COMPLETION)), ['choices[0].message.content: expected string, got missing']);

  t.same(describe(check({}, ERROR_OBJECT)), ['error: expected object, got missing']);
  t.same(describe(check('Not Found', ERROR_OBJECT)), ['(root): expected object, got string "Not Found"'], 'a text body');
});

t.test('a retyped field fails by path', async (t) => {
  const cases: [string, unknown, FieldTable, string[]][] = [
    ['context_window 8192.5', variant(catalog, (c) => Object.assign(c.data[1] as object, { context_window: 8192.5 })), CATALOG_MODEL_LIST, ['data[1].context_window: expected integer, got number 8192.5']],
    ['context_window "8192"', variant(catalog, (c) => Object.assign(c.data[0] as object, { context_window: '8192' })), CATALOG_MODEL_LIST, ['data[0].context_window: expected integer, got string "8192"']],
    ['input_cost_per_1m "12.6"', variant(catalog, (c) => Object.assign(c.data[0] as object, { input_cost_per_1m: '12.6' })), CATALOG_MODEL_LIST, ['data[0].input_cost_per_1m: expected number, got string "12.6"']],
    ['code "400"', { error: { ...error.error, code: '400' } }, ERROR_OBJECT, ['error.code: expected integer, got string "400"']],
    ['code 400.5', { error: { ...error.error, code: 400.5 } }, ERROR_OBJECT, ['error.code: expected integer, got number 400.5']],
    ['message null', { error: { ...error.error, message: null } }, ERROR_OBJECT, ['error.message: expected string, got null null']],
    ['usage.total_tokens 5.5', variant(completion, (c) => Object.assign(c.usage, { total_tokens: 5.5 })), CHAT_COMPLETION, ['usage.total_tokens: expected integer, got number 5.5']],
    ['created as a date string', { ...completion, created: '2025-01-01' }, CHAT_COMPLETION, ['created: expected integer, got string "2025-01-01"']],
    ['choices an object', { ...completion, choices: { 0: 'x' } }, CHAT_COMPLETION, ['choices: expected array, got object {"0":"x"}']],
    ['balance "12.5"', { balance: '12.5' }, WALLET_BALANCE, ['balance: expected number, got string "12.5"']],
    ['balance NaN', { balance: Number.NaN }, WALLET_BALANCE, ['balance: expected number, got non-finite number (NaN)']],
    ['user.email a number', { user: { balance: 1, email: 42, name: 'A' } }, USER_PROFILE, ['user.email: expected string, got integer 42']],
  ];
  for (const [label, value, table, expected] of cases) t.same(describe(check(value, table)), expected, label);
});

t.test('literals and patterns', async (t) => {
  t.same(describe(check({ ...catalog, object: 'List' }, CATALOG_MODEL_LIST)), ['object: expected the value "list", got string "List"']);
  t.same(describe(check({ ...completion, object: 'chat.completion.chunk' }, CHAT_COMPLETION)), ['object: expected the value "chat.completion", got string "chat.completion.chunk"']);
  t.same(describe(check({ object: 'list', data: [{ id: 'openai/x', object: 'models', owned_by: 'openai' }] }, COMPAT_MODEL_LIST)), ['data[0].object: expected the value "model", got string "models"']);
  t.same(describe(check(variant(catalog, (c) => Object.assign(c.data[0] as object, { id: 'gpt-4o-mini' })), CATALOG_MODEL_LIST)), ['data[0].id: expected a string matching /^[^/\\s]+\\/\\S+$/, got string "gpt-4o-mini"']);
  const key = { name: 'app', api_key: `sk-${'AB'.repeat(32)}`, rate_limit: 60, budget: 0, expires_at: 'tomorrow' };
  const mismatches = check(key, API_KEY);
  t.same(mismatches.map((m) => m.path), ['api_key', 'expires_at'], 'upper-case hex and a free-text date fail');
  t.ok(mismatches.every((m) => m.expected.startsWith('a string matching')));
  t.same(describe(check({ ...key, api_key: `sk-${'ab'.repeat(31)}`, expires_at: null }, API_KEY)).length, 1, '62 hex characters fail');
  t.same(describe(check({ ...key, api_key: `sk-${'ab'.repeat(32)}`, rate_limit: 60.5, expires_at: null }, API_KEY)), ['rate_limit: expected integer, got number 60.5']);
});

t.test('every mismatch is reported, not only the first', async (t) => {
  const broken = { object: 'chat.completion', created: 1.5, choices: [{ index: '0', message: { role: 'assistant', content: 7 }, finish_reason: null }, { index: 1, message: null, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: '2' } };
  t.same(describe(check(broken, CHAT_COMPLETION)), [
    'id: expected string, got missing',
    'created: expected integer, got number 1.5',
    'model: expected string, got missing',
    'choices[0].index: expected integer, got string "0"',
    'choices[1].message: expected object, got null null',
    'choices[0].message.content: expected string, got integer 7',
    'choices[0].finish_reason: expected string, got null null',
    'usage.total_tokens: expected integer, got string "2"',
  ]);
});

t.test('at() reads paths without casts', async (t) => {
  t.equal(at(completion, 'choices.0.message.content'), 'hi');
  t.equal(at(completion, 'usage.nope.deeper'), undefined);
  t.equal(at('text', 'a'), undefined);
});

t.test('the spec tables are whole', async (t) => {
  t.equal(ENDPOINTS.length, 17, 'the endpoint table has 17 rows');
  t.equal(new Set(ENDPOINTS.map((e) => `${e.method} ${e.path}`)).size, ENDPOINTS.length, 'no row twice');
  t.equal(LIMITS.length, 8, 'the limits table has 9 rows, minus the rate-limit statement the gateway did not pick');
  t.same(CHAT_COMPLETION.map((r) => r.path).filter((p) => p.startsWith('usage.')), ['usage.prompt_tokens', 'usage.completion_tokens', 'usage.total_tokens']);
});
