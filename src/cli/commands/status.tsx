import type { Command } from 'commander';
import { formatInrDisplay, microsToInr } from '../../core/money.js';
import { CliError, errorMessageOf, readAll, sendRequest } from '../client.js';
import type { Io } from '../io.js';
import { ReportedFailure } from '../main.js';
import { gatewayUrl, type ClientFlags } from '../options.js';
import { has, parsePrometheusText, percentiles, sumBy, sumOf, MetricsParseError, type LabelMatch, type Sample } from '../prometheus.js';
import { emit } from '../render.js';

interface StatusFlags extends Omit<ClientFlags, 'key'> {
  metricsToken?: string;
  metricsPath: string;
}

type Percentiles = { p50: number | null; p95: number | null };

/** `gateway status --json`: one object, these keys always present (null where there is nothing to measure). */
export interface StatusReport {
  url: string;
  ready: boolean;
  readiness: { http_status: number; status: string; db: string | null; redis: string | null; reason: string | null; message: string | null; unapplied_calls: number | null };
  /** Since the daemon started; health checks and scrapes aside. */
  requests: { total: number; by_class: { '2xx': number; '3xx': number; '4xx': number; '5xx': number }; in_flight: number; error_rate: number | null; server_error_rate: number | null };
  latency_seconds: Percentiles;
  overhead_seconds: Percentiles;
  upstream: { attempts: { total: number; ok: number; retried: number; failed: number; resting: number }; failure_rate: number | null; latency_seconds: Percentiles };
  tokens: { input: number; output: number; cache_read: number; cache_write: number };
  charged: { micro_inr: number; inr: number };
  cache: { lookups: number; hits: number; misses: number; bypasses: number; hit_ratio: number | null };
  wallet_holds: { micro_inr: number; inr: number };
  settlement_pending: number;
  deployments_resting: { count: number; deployments: { provider: string; model: string }[] };
  process: { rss_bytes: number | null; heap_used_bytes: number | null; cpu_seconds: number | null; event_loop_lag_seconds: number | null; event_loop_lag_p99_seconds: number | null; uptime_seconds: number | null };
}

const TIMEOUT_MS = 10_000;

/**
 * `gateway status`: one daemon's health picture from `GET /health/ready` and its Prometheus
 * metrics (no management key: neither needs one; a metrics token when `metrics.token` is set).
 * Exit 0 when ready; 1 when not ready (after the picture), or when the daemon or its metrics
 * cannot be read.
 */
export function registerStatusCommand(program: Command, io: Io): void {
  program
    .command('status')
    .description("a daemon's health: readiness, traffic, errors, latency, tokens, INR charged, cache, wallet holds (from /health/ready and /metrics)")
    .option('--url <url>', "gateway address (default: $GATEWAY_URL, else the config file's server address)")
    .option('--config <file>', 'config file, used for the default --url')
    .option('--metrics-token <token>', 'bearer token for /metrics when the daemon sets metrics.token (default: $GATEWAY_METRICS_TOKEN)')
    .option('--metrics-path <path>', "the daemon's metrics.path", '/metrics')
    .option('--json', 'print one JSON document on stdout')
    .action(async (flags: StatusFlags) => {
      const url = (await gatewayUrl(flags, io)).replace(/\/+$/, '');
      const token = flags.metricsToken ?? io.env.GATEWAY_METRICS_TOKEN;
      const health = await fetchText(url, '/health/ready', {});
      if (health.status !== 200 && health.status !== 503) throw new CliError(`GET ${url}/health/ready answered ${health.status}${detail(health.text)}: is ${url} a gateway?`, health.status, parseJson(health.text));
      const scrape = await fetchText(url, flags.metricsPath, token ? { authorization: `Bearer ${token}` } : {});
      if (scrape.status !== 200) throw new CliError(metricsRefusal(url, flags.metricsPath, scrape.status, scrape.text, token !== undefined), scrape.status, parseJson(scrape.text));
      let samples: Sample[];
      try {
        samples = parsePrometheusText(scrape.text);
      } catch (error) {
        if (error instanceof MetricsParseError) throw new CliError(`${url}${flags.metricsPath} is not Prometheus text (${error.message})`);
        throw error;
      }
      const report = buildReport(url, health.status, parseJson(health.text), samples, flags.metricsPath);
      await emit(io, flags.json, report, (ui) => <ui.Details title={`gateway ${url}: ${report.ready ? 'ready' : 'NOT READY'}`} entries={describe(report)} />);
      if (!report.ready) throw new ReportedFailure(`the gateway at ${url} is not ready: ${report.readiness.message ?? report.readiness.reason ?? `/health/ready answered ${report.readiness.http_status}`}`);
    });
}

async function fetchText(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  try {
    const response = await sendRequest(new URL(path, `${base}/`), base, { method: 'GET', headers: { accept: 'text/plain, application/json', ...headers }, signal });
    return { status: response.statusCode ?? 0, text: await readAll(response) };
  } catch (error) {
    if ((error as Error).name === 'AbortError' || (error as Error).name === 'TimeoutError') throw new CliError(`the gateway at ${base} did not answer GET ${path} within ${TIMEOUT_MS / 1000} s`);
    throw error;
  }
}

function metricsRefusal(url: string, path: string, status: number, text: string, withToken: boolean): string {
  const where = `GET ${url}${path} answered ${status}${detail(text)}`;
  if (status === 401) return `${where}: ${withToken ? 'the metrics token is not the daemon\'s metrics.token' : 'the daemon sets metrics.token: pass --metrics-token or set GATEWAY_METRICS_TOKEN'}`;
  if (status === 403) return `${where}: metrics are served to loopback clients only unless the daemon sets metrics.token`;
  if (status === 404) return `${where}: metrics are off (metrics.enabled) or served at another metrics.path (--metrics-path)`;
  return where;
}

function detail(text: string): string {
  const message = errorMessageOf(text);
  return message ? ` (${message})` : '';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const ratio = (part: number, whole: number): number | null => (whole > 0 ? part / whole : null);
const pick = ({ p50, p95 }: Percentiles): Percentiles => ({ p50, p95 });
/** A process gauge; null when absent or not a number (the event-loop lag reads NaN before its first sample). */
function gauge(samples: readonly Sample[], name: string): number | null {
  const value = has(samples, name) ? sumOf(samples, name) : NaN;
  return Number.isFinite(value) ? value : null;
}

/** The report from a readiness answer and a scrape: pure, for tests. */
export function buildReport(url: string, healthStatus: number, healthBody: unknown, samples: readonly Sample[], metricsPath = '/metrics'): StatusReport {
  const body = (healthBody ?? {}) as { status?: unknown; db?: unknown; redis?: unknown; reason?: unknown; unapplied_calls?: unknown };
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  const ready = healthStatus === 200 && body.status === 'ready';
  const probes = new Set(['/health', '/health/ready', metricsPath]);
  const traffic: LabelMatch = { endpoint: (endpoint) => !probes.has(endpoint) };

  const byStatus = sumBy(samples, 'gateway_requests_total', 'status', traffic);
  const byClass = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
  let total = 0;
  for (const [status, count] of Object.entries(byStatus)) {
    total += count;
    const cls = `${status[0]}xx`;
    if (cls in byClass) byClass[cls as keyof typeof byClass] += count;
  }
  const attempts = sumBy(samples, 'gateway_upstream_attempts_total', 'outcome');
  const outcome = (name: string): number => attempts[name] ?? 0;
  const attemptsTotal = Object.values(attempts).reduce((sum, n) => sum + n, 0);
  const hits = sumOf(samples, 'gateway_cache_requests_total', { result: 'hit' });
  const misses = sumOf(samples, 'gateway_cache_requests_total', { result: 'miss' });
  const bypasses = sumOf(samples, 'gateway_cache_requests_total', { result: 'bypass' });
  const lookups = sumOf(samples, 'gateway_cache_requests_total');
  const charged = Math.round(sumOf(samples, 'gateway_cost_micro_inr_total'));
  const held = Math.round(sumOf(samples, 'gateway_wallet_holds_micro_inr'));
  const resting = samples.filter((s) => s.name === 'gateway_deployment_resting' && s.value > 0).map((s) => ({ provider: s.labels.provider ?? '', model: s.labels.model ?? '' }));
  const started = gauge(samples, 'process_start_time_seconds');
  const message = (healthBody as { error?: { message?: unknown } } | undefined)?.error?.message;
  const unapplied = body.unapplied_calls;

  return {
    url,
    ready,
    readiness: {
      http_status: healthStatus,
      status: text(body.status) ?? (ready ? 'ready' : 'not_ready'),
      db: text(body.db),
      redis: text(body.redis),
      reason: text(body.reason) ?? text((healthBody as { error?: { reason?: unknown } } | undefined)?.error?.reason),
      message: text(message),
      unapplied_calls: typeof unapplied === 'number' ? unapplied : null,
    },
    requests: {
      total,
      by_class: byClass,
      in_flight: sumOf(samples, 'gateway_in_flight_requests', traffic),
      error_rate: ratio(byClass['4xx'] + byClass['5xx'], total),
      server_error_rate: ratio(byClass['5xx'], total),
    },
    latency_seconds: pick(percentiles(samples, 'gateway_request_duration_seconds', traffic)),
    overhead_seconds: pick(percentiles(samples, 'gateway_overhead_seconds')),
    upstream: {
      attempts: { total: attemptsTotal, ok: outcome('ok'), retried: outcome('retried'), failed: outcome('failed'), resting: outcome('resting') },
      failure_rate: ratio(attemptsTotal - outcome('ok'), attemptsTotal),
      latency_seconds: pick(percentiles(samples, 'gateway_upstream_duration_seconds')),
    },
    tokens: {
      input: sumOf(samples, 'gateway_tokens_total', { type: 'input' }),
      output: sumOf(samples, 'gateway_tokens_total', { type: 'output' }),
      cache_read: sumOf(samples, 'gateway_tokens_total', { type: 'cache_read' }),
      cache_write: sumOf(samples, 'gateway_tokens_total', { type: 'cache_write' }),
    },
    charged: { micro_inr: charged, inr: microsToInr(charged) },
    cache: { lookups, hits, misses, bypasses, hit_ratio: ratio(hits, lookups) },
    wallet_holds: { micro_inr: held, inr: microsToInr(held) },
    settlement_pending: sumOf(samples, 'gateway_settlement_pending'),
    deployments_resting: { count: resting.length, deployments: resting },
    process: {
      rss_bytes: gauge(samples, 'process_resident_memory_bytes'),
      heap_used_bytes: gauge(samples, 'nodejs_heap_size_used_bytes'),
      cpu_seconds: gauge(samples, 'process_cpu_seconds_total'),
      event_loop_lag_seconds: gauge(samples, 'nodejs_eventloop_lag_seconds'),
      event_loop_lag_p99_seconds: gauge(samples, 'nodejs_eventloop_lag_p99_seconds'),
      uptime_seconds: started === null ? null : Math.max(0, Math.round(Date.now() / 1000 - started)),
    },
  };
}

// For people.

function duration(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 0.001) return `${(seconds * 1000).toFixed(2)} ms`;
  if (seconds < 1) return `${(seconds * 1000).toFixed(1)} ms`;
  return `${seconds.toFixed(2)} s`;
}

const percent = (value: number | null): string => (value === null ? '—' : `${(value * 100).toFixed(1)}%`);
const count = (value: number): string => Math.round(value).toLocaleString('en-US');
const mb = (bytes: number | null): string => (bytes === null ? '—' : `${(bytes / 1024 / 1024).toFixed(1)} MB`);
const quantiles = (p: Percentiles): string => (p.p50 === null ? 'no observations' : `p50 ${duration(p.p50)}, p95 ${duration(p.p95)}`);

function uptime(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
  return `${Math.floor(seconds / 86_400)}d ${Math.floor((seconds % 86_400) / 3600)}h`;
}

/** The report as label/value lines. */
export function describe(r: StatusReport): [string, string][] {
  const rd = r.readiness;
  const deps = [rd.db ? `db ${rd.db}` : '', rd.redis ? `redis ${rd.redis}` : ''].filter(Boolean).join(', ');
  const readiness = r.ready ? 'ready' : `not ready (${rd.reason ?? `HTTP ${rd.http_status}`})`;
  const why: [string, string][] = r.ready ? [] : [['why', rd.message ?? `/health/ready answered ${rd.http_status}`]];
  if (rd.unapplied_calls !== null) why.push(['ledger backlog', `${count(rd.unapplied_calls)} settled calls not in the ledger`]);
  const q = r.requests;
  const a = r.upstream.attempts;
  const t = r.tokens;
  const p = r.process;
  return [
    ['readiness', readiness],
    ...why,
    ['dependencies', deps || '—'],
    ['requests', `${count(q.total)} (2xx ${count(q.by_class['2xx'])}, 3xx ${count(q.by_class['3xx'])}, 4xx ${count(q.by_class['4xx'])}, 5xx ${count(q.by_class['5xx'])}), ${count(q.in_flight)} in flight`],
    ['error rate', `${percent(q.error_rate)} 4xx+5xx, ${percent(q.server_error_rate)} 5xx`],
    ['latency', quantiles(r.latency_seconds)],
    ['overhead', quantiles(r.overhead_seconds)],
    ['upstream attempts', `${count(a.total)} (${count(a.ok)} ok, ${count(a.retried)} retried, ${count(a.failed)} failed, ${count(a.resting)} resting), ${percent(r.upstream.failure_rate)} failed`],
    ['upstream latency', quantiles(r.upstream.latency_seconds)],
    ['tokens', `${count(t.input)} in, ${count(t.output)} out (cache read ${count(t.cache_read)}, cache write ${count(t.cache_write)})`],
    ['charged', formatInrDisplay(r.charged.micro_inr)],
    ['response cache', r.cache.lookups === 0 ? 'no lookups' : `${percent(r.cache.hit_ratio)} hits (${count(r.cache.hits)} hits, ${count(r.cache.misses)} misses, ${count(r.cache.bypasses)} bypassed)`],
    ['wallet holds', formatInrDisplay(r.wallet_holds.micro_inr)],
    ['settlement pending', `${count(r.settlement_pending)} calls`],
    ['deployments resting', r.deployments_resting.count === 0 ? 'none' : r.deployments_resting.deployments.map((d) => `${d.provider} → ${d.model}`).join(', ')],
    ['process', `RSS ${mb(p.rss_bytes)}, heap ${mb(p.heap_used_bytes)}, CPU ${p.cpu_seconds === null ? '—' : `${p.cpu_seconds.toFixed(1)} s`}, up ${uptime(p.uptime_seconds)}`],
    ['event-loop lag', `${duration(p.event_loop_lag_seconds)} (p99 ${duration(p.event_loop_lag_p99_seconds)})`],
  ];
}
