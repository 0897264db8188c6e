import t from 'tap';
import { callSucceeded, DEFAULT_FILTERS, newerPage, olderPage, filtersFromSearch, filtersProblem, filtersToSearch, isFiltered, localToIso, rowMatches, timeBounds, usageQuery, type UsageFilters } from '../../src/dashboard/lib/filters.js';
import type { UsageRow } from '../../src/dashboard/lib/types.js';

const NOW = Date.parse('2026-03-10T12:00:00.000Z');

function filters(change: Partial<UsageFilters>): UsageFilters {
  return { ...DEFAULT_FILTERS, ...change };
}

t.test('the page URL holds the filters, defaults left out', async (t) => {
  t.equal(filtersToSearch(DEFAULT_FILTERS), '', '/usage stays /usage');
  const set = filters({ key: 'key_1', model: 'openai/gpt-4o-mini', endpoint: 'embeddings', status: 'error', range: '7d', before: '42' });
  const search = filtersToSearch(set);
  t.equal(search, 'key=key_1&model=openai%2Fgpt-4o-mini&endpoint=embeddings&status=error&range=7d&before=42');
  t.same(filtersFromSearch(new URLSearchParams(search)), set, 'and back');
  const custom = filters({ range: 'custom', from: '2026-03-01T09:30', to: '2026-03-02T18:00' });
  t.same(filtersFromSearch(new URLSearchParams(filtersToSearch(custom))), custom);
  t.equal(filtersToSearch(filters({ range: '24h', from: '2026-03-01T09:30' })), 'range=24h', 'custom bounds only with the custom range');
});

t.test('a hand-edited URL cannot put nonsense in the filters', async (t) => {
  const parsed = filtersFromSearch(new URLSearchParams('endpoint=drop+table&status=maybe&range=1y&from=yesterday&before=1%3B2&model=+x+'));
  t.same(parsed, filters({ model: 'x' }));
});

t.test('the API query: ids, ISO bounds, paging', async (t) => {
  t.equal(usageQuery(DEFAULT_FILTERS, NOW, { limit: 50 }), 'limit=50');
  t.equal(usageQuery(filters({ range: '24h' }), NOW, { limit: 50 }), 'since=2026-03-09T12%3A00%3A00.000Z&limit=50');
  t.equal(usageQuery(filters({ range: '1h', status: 'ok', before: '99' }), NOW, { limit: 25 }), 'status=ok&since=2026-03-10T11%3A00%3A00.000Z&limit=25&before=99');
  t.equal(usageQuery(filters({ key: 'key_1', model: 'm', endpoint: 'responses', before: '99' }), NOW), 'api_key_id=key_1&model=m&endpoint=responses', 'the export query has no paging');
  t.equal(usageQuery(DEFAULT_FILTERS, NOW, { accountId: 'acc_1', limit: 10 }), 'account_id=acc_1&limit=10', 'the admin view names the account');
  const custom = filters({ range: 'custom', from: '2026-03-01T09:30', to: '2026-03-02T18:00' });
  const query = new URLSearchParams(usageQuery(custom, NOW));
  t.equal(query.get('since'), new Date(2026, 2, 1, 9, 30).toISOString(), 'custom bounds are local times sent as UTC');
  t.equal(query.get('until'), new Date(2026, 2, 2, 18, 0).toISOString());
});

t.test('time bounds and their problems', async (t) => {
  t.same(timeBounds(DEFAULT_FILTERS, NOW), {});
  t.same(timeBounds(filters({ range: '30d' }), NOW), { since: NOW - 30 * 86_400_000 });
  t.same(timeBounds(filters({ range: 'custom', from: '2026-03-01T09:30' }), NOW), { since: new Date(2026, 2, 1, 9, 30).getTime() }, 'an open end');
  t.equal(filtersProblem(filters({ range: 'custom', from: '2026-03-02T00:00', to: '2026-03-01T00:00' })), 'The end of the range must be after its start.');
  t.equal(filtersProblem(filters({ range: 'custom', from: '2026-03-01T00:00', to: '2026-03-02T00:00' })), null);
  t.equal(localToIso('not a date'), null);
  t.equal(localToIso('2026-13-45T99:99'), null);
});

function row(change: Partial<UsageRow>): UsageRow {
  return {
    id: 1,
    request_id: 'req_1',
    account_id: 'acc_1',
    api_key_id: 'key_1',
    api_key_name: 'app',
    model: 'openai/gpt-4o-mini',
    provider: 'openai',
    endpoint: 'chat.completions',
    stream: false,
    input_tokens: 7,
    output_tokens: 15,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    unit: 'tokens',
    units: 22,
    cost: 0.000845,
    status: 200,
    error_type: null,
    latency_ms: 28,
    created_at: new Date(NOW - 60_000).toISOString(),
    ...change,
  };
}

t.test('live rows are kept only when they match the filters', async (t) => {
  t.ok(rowMatches(row({}), DEFAULT_FILTERS, NOW));
  t.ok(rowMatches(row({}), filters({ key: 'key_1', model: 'openai/gpt-4o-mini', endpoint: 'chat.completions', status: 'ok', range: '1h' }), NOW));
  t.notOk(rowMatches(row({}), filters({ key: 'key_2' }), NOW));
  t.notOk(rowMatches(row({}), filters({ model: 'other' }), NOW));
  t.notOk(rowMatches(row({}), filters({ endpoint: 'embeddings' }), NOW));
  t.notOk(rowMatches(row({}), filters({ status: 'error' }), NOW));
  t.ok(rowMatches(row({ status: 429 }), filters({ status: 'error' }), NOW), 'an HTTP status of 400 or more is an error');
  t.notOk(rowMatches(row({ created_at: new Date(NOW - 2 * 3_600_000).toISOString() }), filters({ range: '1h' }), NOW));
  t.notOk(rowMatches(row({}), filters({ range: 'custom', to: '2026-01-01T00:00' }), NOW), 'past the custom end');
});

t.test('a call succeeded: a status below 400 (or "ok")', async (t) => {
  t.ok(callSucceeded({ status: 200 }));
  t.ok(callSucceeded({ status: 'ok' }));
  t.notOk(callSucceeded({ status: 402 }));
  t.notOk(callSucceeded({ status: 502 }));
  t.notOk(callSucceeded({ status: 'error' }));
  t.notOk(isFiltered(filters({ before: '5' })), 'paging is not a filter');
  t.ok(isFiltered(filters({ range: '7d' })));
});

t.test('paging: older pushes the cursor, newer pops it', async (t) => {
  const first = filters({ model: 'm' });
  const second = olderPage(first, [], 120);
  t.same(second, { filters: filters({ model: 'm', before: '120' }), stack: [''] });
  const third = olderPage(second.filters, second.stack, 70);
  t.same(third.stack, ['', '120']);
  t.equal(third.filters.before, '70');
  const back = newerPage(third.filters, third.stack);
  t.same(back, { filters: filters({ model: 'm', before: '120' }), stack: [''] });
  t.same(newerPage(back.filters, back.stack), { filters: first, stack: [] }, 'back to the newest');
  t.same(newerPage(filters({ before: '9' }), []), { filters: DEFAULT_FILTERS, stack: [] }, 'a reloaded page goes to the newest');
});
