import { collectDefaultMetrics, Registry } from 'prom-client';
import type { MetricsConfig, ModelConfig } from '../../config/types.js';
import type { NewUsage } from '../../store/usage.js';
import { CounterFamily, GaugeFamily, HistogramFamily, type CounterSeries, type HistogramSeries } from './prom.js';

/**
 * The gateway's Prometheus metrics (issue 31). Every label comes from a bounded set: the
 * route's pattern (never the path), a catalog model id ("unknown" for a name the catalog does
 * not know, "none" for a request that names no model), a provider entry of the config, an
 * HTTP status, an outcome or cache tier of a fixed list. Never a key, account, user, request
 * or error text, except the opt-in per-key families (`metrics.key_labels`), capped at
 * `metrics.max_key_series` keys, the rest as key="other".
 */

/** Seconds, for calls from a few ms to a long stream. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Seconds, for the gateway's own share of a call (a fraction of a millisecond, usually). */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
/** The GenAI semantic conventions' advice for gen_ai.client.token.usage. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** The GenAI semantic conventions' advice for gen_ai.server.time_to_first_token. */
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export type AttemptOutcome = 'ok' | 'retried' | 'failed' | 'resting' | 'cancelled';

/** What the gauges read at scrape time. */
export interface MetricSources {
  /** µINR this daemon holds on wallets for calls in flight. */
  heldMicros(): number;
  /** Calls settled (journaled or queued) not yet in the ledger. */
  settlementPending(): number;
  /** Deployment ids (`provider:upstream`) resting now. */
  restingDeployments(): ReadonlySet<string>;
  models: readonly ModelConfig[];
  backend: 'sqlite' | 'postgres';
}

export class GatewayMetrics {
  readonly requests = new CounterFamily('gateway_requests_total', 'HTTP requests answered, by route, catalog model, provider entry and status.', ['endpoint', 'model', 'provider', 'status']);
  readonly requestDuration = new HistogramFamily('gateway_request_duration_seconds', 'Time from a request to the end of its response (streams included).', ['endpoint', 'model'], LATENCY_BUCKETS);
  readonly attempts = new CounterFamily('gateway_upstream_attempts_total', 'Upstream attempts: ok (answered), retried (failed, another attempt followed), failed (failed, the call gave up), resting (failed and put its deployment or key to rest), cancelled (the client left or routing.timeout passed).', ['provider', 'model', 'outcome']);
  readonly upstreamDuration = new HistogramFamily('gateway_upstream_duration_seconds', 'Time an upstream attempt took to answer (a stream: to its first content).', ['provider', 'model'], LATENCY_BUCKETS);
  readonly overhead = new HistogramFamily('gateway_overhead_seconds', "The gateway's own share of a call: its duration less the time spent waiting on upstreams.", ['endpoint'], OVERHEAD_BUCKETS);
  readonly tokenUsage = new HistogramFamily('gen_ai_client_token_usage', 'Tokens per call (OpenTelemetry GenAI: gen_ai.client.token.usage).', ['gen_ai_token_type', 'model'], TOKEN_BUCKETS);
  readonly tokens = new CounterFamily('gateway_tokens_total', 'Tokens billed, by type (input, output, cache_read, cache_write).', ['model', 'type']);
  readonly ttft = new HistogramFamily('gen_ai_server_time_to_first_token_seconds', "Streams: time from the request to the upstream's first content.", ['model'], TTFT_BUCKETS);
  readonly cost = new CounterFamily('gateway_cost_micro_inr_total', 'What calls were charged, in micro-rupees (the ledger\'s charges).', ['model']);
  readonly cache = new CounterFamily('gateway_cache_requests_total', 'Response cache lookups: tier exact or semantic with result hit; tier none with result miss or bypass.', ['tier', 'result']);
  readonly inFlight = new GaugeFamily('gateway_in_flight_requests', 'Requests between their start and the end of their response.', ['endpoint']);
  readonly storeDuration: HistogramFamily;
  readonly redisErrors = new CounterFamily('gateway_redis_errors_total', 'Errors of the Redis connection.', []);
  private readonly holds: GaugeFamily;
  private readonly pending: GaugeFamily;
  private readonly resting: GaugeFamily;
  private readonly keyRequests: CounterFamily | undefined;
  private readonly keyCost: CounterFamily | undefined;
  private readonly keyTokens: CounterFamily | undefined;
  private readonly keySeries = new Set<string>();
  private readonly restingShown = new Set<string>();
  private readonly families: { render(out: string[]): void }[];
  private readonly redisErrorSeries: CounterSeries;
  private readonly storeSeries = new Map<string, HistogramSeries>();

  constructor(
    private readonly config: MetricsConfig,
    private readonly sources: MetricSources,
  ) {
    this.storeDuration = new HistogramFamily('gateway_store_duration_seconds', 'Store operations: settle (a batch of charges into the ledger), funds (admission\'s wallet and budget read).', ['backend', 'op'], STORE_BUCKETS);
    this.holds = new GaugeFamily('gateway_wallet_holds_micro_inr', 'Micro-rupees this daemon holds on wallets for calls in flight.', [], (g) => g.set(sources.heldMicros()));
    this.pending = new GaugeFamily('gateway_settlement_pending', 'Calls settled (journaled) and not yet in the ledger.', [], (g) => g.set(sources.settlementPending()));
    this.resting = new GaugeFamily('gateway_deployment_resting', '1 while a deployment rests (the router sends its calls elsewhere), by provider entry and catalog model.', ['provider', 'model'], (g) => this.collectResting(g));
    this.redisErrorSeries = this.redisErrors.labels();
    if (config.keyLabels) {
      this.keyRequests = new CounterFamily('gateway_key_requests_total', 'Calls settled per API key (metrics.key_labels; past metrics.max_key_series keys, key="other").', ['key']);
      this.keyCost = new CounterFamily('gateway_key_cost_micro_inr_total', 'What each API key was charged, in micro-rupees (metrics.key_labels).', ['key']);
      this.keyTokens = new CounterFamily('gateway_key_tokens_total', 'Tokens billed per API key (metrics.key_labels).', ['key', 'type']);
    }
    this.families = [
      this.requests,
      this.requestDuration,
      this.inFlight,
      this.overhead,
      this.attempts,
      this.upstreamDuration,
      this.ttft,
      this.tokenUsage,
      this.tokens,
      this.cost,
      this.cache,
      this.holds,
      this.pending,
      this.resting,
      this.storeDuration,
      this.redisErrors,
      ...(this.keyRequests && this.keyCost && this.keyTokens ? [this.keyRequests, this.keyCost, this.keyTokens] : []),
    ];
  }

  /** A settled call (its usage row, as the ledger gets it): tokens, cost, cache, per key. */
  settled(row: NewUsage): void {
    const model = row.model;
    const input = row.inputTokens;
    const output = row.outputTokens;
    if (row.unit === undefined || row.unit === 'tokens') {
      if (input > 0) {
        this.tokenUsage.labels('input', model).observe(input);
        this.tokens.labels(model, 'input').value += input;
      }
      if (output > 0) {
        this.tokenUsage.labels('output', model).observe(output);
        this.tokens.labels(model, 'output').value += output;
      }
      if (row.cacheReadTokens > 0) this.tokens.labels(model, 'cache_read').value += row.cacheReadTokens;
      if (row.cacheWriteTokens > 0) this.tokens.labels(model, 'cache_write').value += row.cacheWriteTokens;
    }
    if (row.costMicros > 0) this.cost.labels(model).value += row.costMicros;
    const cache = row.cache;
    if (cache) {
      if (cache === 'exact' || cache === 'semantic') this.cache.labels(cache, 'hit').value += 1;
      else this.cache.labels('none', cache).value += 1;
    }
    if (this.keyRequests && this.keyCost && this.keyTokens) {
      const key = this.keyLabel(row.apiKeyId ?? 'none');
      this.keyRequests.labels(key).value += 1;
      if (row.costMicros > 0) this.keyCost.labels(key).value += row.costMicros;
      if (input > 0) this.keyTokens.labels(key, 'input').value += input;
      if (output > 0) this.keyTokens.labels(key, 'output').value += output;
    }
  }

  attempt(provider: string, model: string, outcome: AttemptOutcome, seconds: number): void {
    this.attempts.labels(provider, model, outcome).value += 1;
    if (outcome === 'ok') this.upstreamDuration.labels(provider, model).observe(seconds);
  }

  firstToken(model: string, seconds: number): void {
    this.ttft.labels(model).observe(seconds);
  }

  /** A request's end: counted by route, model, provider and status; its duration and overhead. */
  requestEnded(endpoint: string, model: string, provider: string, status: number, seconds: number, upstreamSeconds: number): void {
    this.requests.labels(endpoint, model, provider, statusText(status)).value += 1;
    this.requestDuration.labels(endpoint, model).observe(seconds);
    // Only calls that went upstream: a management read is all overhead, and not what this measures.
    if (upstreamSeconds > 0) this.overhead.labels(endpoint).observe(Math.max(0, seconds - upstreamSeconds));
  }

  /** A store operation's histogram (looked up once per op by its caller's first use). */
  store(op: string): HistogramSeries {
    let series = this.storeSeries.get(op);
    if (!series) {
      series = this.storeDuration.labels(this.sources.backend, op);
      this.storeSeries.set(op, series);
    }
    return series;
  }

  redisError(): void {
    this.redisErrorSeries.value += 1;
  }

  /** The exposition: the gateway's families, then the process's (prom-client's defaults). */
  async render(): Promise<string> {
    const out: string[] = [];
    for (const family of this.families) family.render(out);
    out.push(await processMetrics().metrics());
    return out.join('\n');
  }

  private keyLabel(keyId: string): string {
    if (this.keySeries.has(keyId)) return keyId;
    if (this.keySeries.size >= this.config.maxKeySeries) return 'other';
    this.keySeries.add(keyId);
    return keyId;
  }

  /**
   * Models with several deployments (the router's), and any deployment that has rested since
   * start: 1 while it rests, 0 otherwise. A one-deployment model that never rested has no series.
   */
  private collectResting(gauge: GaugeFamily): void {
    const resting = this.sources.restingDeployments();
    // Two deployments of one model on one provider (different upstream models) share a series: 1 if either rests.
    const values = new Map<string, { provider: string; model: string; value: number }>();
    for (const model of this.sources.models) {
      const routed = model.deployments.length > 1;
      for (const deployment of model.deployments) {
        const key = `${deployment.provider}\u0001${model.id}`;
        const now = resting.has(deployment.id);
        if (now) this.restingShown.add(key);
        if (!(routed || now || this.restingShown.has(key))) continue;
        const entry = values.get(key);
        if (!entry) values.set(key, { provider: deployment.provider, model: model.id, value: now ? 1 : 0 });
        else if (now) entry.value = 1;
      }
    }
    for (const { provider, model, value } of values.values()) gauge.set(value, provider, model);
  }
}

/** The process's own metrics (CPU, memory, heap, event-loop lag, GC): one registry per process, however many gateways it runs. */
let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

const STATUS_TEXT = new Map<number, string>();

function statusText(status: number): string {
  let text = STATUS_TEXT.get(status);
  if (text === undefined) {
    text = String(status);
    if (STATUS_TEXT.size < 200) STATUS_TEXT.set(status, text);
  }
  return text;
}
