import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { GatewayMetrics } from '../../src/core/telemetry/metrics.js';
import { ROOT } from '../support/cli.js';

/**
 * ops/grafana/gateway.json: valid JSON of an importable dashboard; every panel titled with a
 * unique id; every query on the Prometheus data-source variable and naming only metrics the
 * gateway exposes (its families and prom-client's process defaults, read from a real render),
 * counters always under rate()/increase(), gauges never; and each family on some panel.
 */

/** The families the gateway documents (src/core/telemetry/metrics.ts), by type. */
const FAMILIES: Record<string, 'counter' | 'gauge' | 'histogram'> = {
  gateway_requests_total: 'counter',
  gateway_request_duration_seconds: 'histogram',
  gateway_in_flight_requests: 'gauge',
  gateway_overhead_seconds: 'histogram',
  gateway_upstream_attempts_total: 'counter',
  gateway_upstream_duration_seconds: 'histogram',
  gen_ai_server_time_to_first_token_seconds: 'histogram',
  gen_ai_client_token_usage: 'histogram',
  gateway_tokens_total: 'counter',
  gateway_cost_micro_inr_total: 'counter',
  gateway_cache_requests_total: 'counter',
  gateway_wallet_holds_micro_inr: 'gauge',
  gateway_settlement_pending: 'gauge',
  gateway_deployment_resting: 'gauge',
  gateway_store_duration_seconds: 'histogram',
  gateway_redis_errors_total: 'counter',
};

/** PromQL functions and aggregations a panel may call. */
const FUNCTIONS = new Set(['sum', 'max', 'min', 'avg', 'count', 'topk', 'bottomk', 'rate', 'irate', 'increase', 'histogram_quantile', 'label_replace', 'vector', 'clamp_min', 'clamp_max', 'abs', 'time', 'deriv', 'delta', 'max_over_time', 'avg_over_time', 'scalar']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

interface Reference {
  name: string;
  /** What encloses it directly: the function it is the argument of, if any. */
  wrappedBy: string | undefined;
}

/** The metric names an expression reads, and the functions it calls (unknown ones reported). */
function readExpr(expr: string): { metrics: Reference[]; functions: string[] } {
  const cleaned = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // string literals (label values, regexes)
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // grouping clauses
    .replace(/\$\{?\w+\}?/g, ' ') // Grafana variables outside the above
    .replace(/(^|[^\w:])\d+(\.\d+)?(e[+-]?\d+)?/gi, '$1 '); // numbers
  const metrics: Reference[] = [];
  const functions: string[] = [];
  for (const match of cleaned.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const name = match[0];
    const after = cleaned.slice((match.index ?? 0) + name.length);
    if (/^\s*\(/.test(after)) {
      functions.push(name);
      continue;
    }
    if (KEYWORDS.has(name.toLowerCase())) continue;
    const before = /([a-zA-Z_]+)\s*\(\s*$/.exec(cleaned.slice(0, match.index));
    metrics.push({ name, wrappedBy: before?.[1] });
  }
  return { metrics, functions };
}

/** name → type of every series name the gateway's /metrics can carry (histograms with their suffixes). */
async function exposedNames(): Promise<Map<string, string>> {
  const metrics = new GatewayMetrics(
    { enabled: true, path: '/metrics', keyLabels: false, maxKeySeries: 1000 },
    { heldMicros: () => 0, settlementPending: () => 0, restingDeployments: () => new Set(), models: [], backend: 'sqlite' },
  );
  const names = new Map<string, string>();
  for (const match of (await metrics.render()).matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string];
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.set(`${name}${suffix}`, 'counter');
    else names.set(name, type);
  }
  return names;
}

interface Panel {
  id?: unknown;
  type?: string;
  title?: unknown;
  datasource?: { type?: string; uid?: string };
  targets?: { expr?: unknown; refId?: unknown; datasource?: { type?: string; uid?: string } }[];
  panels?: Panel[];
}

function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((panel) => [panel, ...allPanels(panel.panels ?? [])]);
}

/** Problems of one expression against the exposed names: unknown metrics or functions, counters outside rate()/increase(), gauges inside. */
function problemsOf(expr: string, exposed: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  const { metrics, functions } = readExpr(expr);
  if (metrics.length === 0) problems.push('reads no metric');
  for (const fn of functions) if (!FUNCTIONS.has(fn)) problems.push(`unknown function ${fn}()`);
  for (const { name, wrappedBy } of metrics) {
    const type = exposed.get(name);
    if (type === undefined) problems.push(`unknown metric ${name}`);
    else if (type === 'counter' && !['rate', 'irate', 'increase'].includes(wrappedBy ?? '')) problems.push(`counter ${name} outside rate()/increase()`);
    else if (type === 'gauge' && ['rate', 'irate', 'increase'].includes(wrappedBy ?? '')) problems.push(`gauge ${name} inside ${wrappedBy}()`);
  }
  return problems;
}

t.test('the expression reader and its checks can fail', async (t) => {
  const exposed = await exposedNames();
  t.same(
    readExpr('histogram_quantile(0.95, sum by (le, provider) (rate(gateway_upstream_duration_seconds_bucket{model=~"$model", le!="x_total"}[$__rate_interval]))) * 1e3').metrics,
    [{ name: 'gateway_upstream_duration_seconds_bucket', wrappedBy: 'rate' }],
    'labels, strings, ranges, grouping, variables and numbers are not metrics',
  );
  t.same(readExpr('sum(gateway_deployment_resting) or vector(0)').functions, ['sum', 'vector']);
  t.same(problemsOf('sum(rate(gateway_requests_total[5m]))', exposed), [], 'a counter under rate()');
  t.same(problemsOf('sum(rate(gateway_nope_total[5m]))', exposed), ['unknown metric gateway_nope_total'], 'an unknown metric is caught');
  t.same(problemsOf('sum(gateway_requests_total)', exposed), ['counter gateway_requests_total outside rate()/increase()'], 'a bare counter is caught');
  t.same(problemsOf('rate(gateway_settlement_pending[5m])', exposed), ['gauge gateway_settlement_pending inside rate()'], 'a gauge under rate() is caught');
  t.same(problemsOf('predict_linear(process_resident_memory_bytes[1h], 3600)', exposed), ['unknown function predict_linear()'], 'an unlisted function is caught');
  t.same(problemsOf('vector(1)', exposed), ['reads no metric']);
  for (const [name, type] of Object.entries(FAMILIES)) {
    const names = type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
    for (const series of names) t.ok(exposed.has(series), `the gateway exposes ${series}`);
  }
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_p99_seconds']) t.ok(exposed.has(name), `process default ${name}`);
});

t.test('ops/grafana/gateway.json', async (t) => {
  const text = readFileSync(join(ROOT, 'ops/grafana/gateway.json'), 'utf8');
  let dashboard: { title?: unknown; uid?: unknown; schemaVersion?: unknown; panels?: Panel[]; templating?: { list?: { name?: string; type?: string; query?: unknown; definition?: unknown; datasource?: { uid?: string } }[] } };
  try {
    dashboard = JSON.parse(text) as typeof dashboard;
  } catch (error) {
    t.fail(`not valid JSON: ${(error as Error).message}`);
    return;
  }
  t.equal(typeof dashboard.title, 'string', 'a title');
  t.equal(typeof dashboard.uid, 'string', 'a uid');
  t.ok(typeof dashboard.schemaVersion === 'number' && dashboard.schemaVersion >= 36 && dashboard.schemaVersion <= 41, `schemaVersion ${String(dashboard.schemaVersion)}`);

  const variables = new Map((dashboard.templating?.list ?? []).map((v) => [v.name, v]));
  t.match(variables.get('datasource'), { type: 'datasource', query: 'prometheus' }, 'a Prometheus data-source variable');
  const exposed = await exposedNames();
  for (const name of ['model', 'provider']) {
    const variable = variables.get(name);
    t.equal(variable?.type, 'query', `$${name} is a query variable`);
    t.equal(variable?.datasource?.uid, '${datasource}', `$${name} queries the data-source variable`);
    const query = typeof variable?.query === 'string' ? variable.query : (variable?.query as { query?: string } | undefined)?.query;
    const labelValues = /^label_values\((\w+)(\{[^}]*\})?,\s*(\w+)\)$/.exec(query ?? '');
    t.ok(labelValues, `$${name}: label_values(metric, label) (${query})`);
    t.ok(exposed.has(labelValues?.[1] ?? ''), `$${name}: from an exposed metric`);
    t.equal(labelValues?.[3], name, `$${name}: of the ${name} label`);
  }

  const panels = allPanels(dashboard.panels ?? []);
  t.ok(panels.length >= 20, `${panels.length} panels`);
  const ids = new Set<unknown>();
  const used = new Set<string>();
  for (const panel of panels) {
    const title = typeof panel.title === 'string' ? panel.title : '';
    t.ok(title.trim() !== '', `panel ${String(panel.id)} has a title`);
    t.ok(Number.isInteger(panel.id), `"${title}": an integer id`);
    t.notOk(ids.has(panel.id), `"${title}": id ${String(panel.id)} is unique`);
    ids.add(panel.id);
    if (panel.type === 'row') continue;
    t.same(panel.datasource, { type: 'prometheus', uid: '${datasource}' }, `"${title}": the data-source variable`);
    t.ok((panel.targets ?? []).length > 0, `"${title}": has queries`);
    const refIds = new Set<unknown>();
    for (const target of panel.targets ?? []) {
      t.notOk(refIds.has(target.refId), `"${title}": unique refId ${String(target.refId)}`);
      refIds.add(target.refId);
      t.equal(target.datasource?.uid, '${datasource}', `"${title}" ${String(target.refId)}: the data-source variable`);
      const expr = typeof target.expr === 'string' ? target.expr : '';
      t.same(problemsOf(expr, exposed), [], `"${title}" ${String(target.refId)}: ${expr}`);
      for (const { name } of readExpr(expr).metrics) used.add(name.replace(/_(bucket|sum|count)$/, ''));
    }
  }
  for (const family of Object.keys(FAMILIES)) t.ok(used.has(family), `a panel shows ${family}`);
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']) t.ok(used.has(name), `a panel shows ${name}`);
});
