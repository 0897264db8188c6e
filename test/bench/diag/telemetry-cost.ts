import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import type { Deployment, ProviderConfig } from '../../../src/config/types.js';
import { GatewayMetrics } from '../../../src/core/telemetry/metrics.js';
import { Telemetry } from '../../../src/core/telemetry/telemetry.js';
import { GatewayTracer } from '../../../src/core/telemetry/tracing.js';
import type { NewUsage } from '../../../src/store/usage.js';

/**
 * What the request path's telemetry calls cost per chat call, in process, without the rest of
 * the gateway: metrics only, then metrics and traces (two spans, exported by OTLP to a local
 * collector that answers at once). CPU per call over ROUNDS rounds of N calls (after a warm-up).
 *
 *   node --import tsx test/bench/diag/telemetry-cost.ts        (PROTOCOL=http/json for OTLP JSON)
 */

const N = Number(process.env.N ?? 30_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const collector = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end());
});
await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`;

const metrics = () => new GatewayMetrics({ enabled: true, path: '/metrics', keyLabels: false, maxKeySeries: 1000 }, { heldMicros: () => 0, settlementPending: () => 0, restingDeployments: () => new Set(), models: [], backend: 'sqlite' });
const provider = { name: 'openai', type: 'openai', baseUrl: 'http://127.0.0.1:9/v1' } as ProviderConfig;
const deployment: Deployment = { id: 'openai:gpt-4o-mini', provider: 'openai', upstreamModel: 'gpt-4o-mini', weight: 1, priority: 1 };
const target = { model: { id: 'openai/gpt-4o-mini' }, deployment, provider };
const row = { requestId: 'r', accountId: 'a', apiKeyId: 'key_1', model: 'openai/gpt-4o-mini', provider: 'openai', endpoint: 'chat.completions', stream: false, inputTokens: 12, outputTokens: 30, cacheReadTokens: 0, cacheWriteTokens: 0, unit: 'tokens', units: 42, costMicros: 845, unchargedMicros: 0, status: 200, errorType: null, latencyMs: 3, createdAt: 0, deployment: 'openai:gpt-4o-mini', attempts: 1, requestedModel: null, cache: 'miss' } as NewUsage;

function call(telemetry: Telemetry): void {
  const started = performance.now();
  const observation = telemetry.requestStarted(started, '/v1/chat/completions', 'req_1', 'POST', {}, '/v1/chat/completions', () => '127.0.0.1');
  observation.model = 'unknown';
  if (observation.span) observation.request = { maxTokens: 8, temperature: 0.5 };
  const sent = performance.now();
  const span = telemetry.attemptStarted(observation, target, 'chat', 1, sent);
  if (span) telemetry.traceHeaders(span);
  telemetry.attemptEnded(observation, target, sent, performance.now(), 'ok', span);
  if (observation.span) observation.response = { id: 'chatcmpl-1', finishReasons: ['stop'] };
  telemetry.settled(row, observation);
  telemetry.requestEnded(observation, 200, performance.now(), false);
}

async function measure(name: string, telemetry: Telemetry): Promise<void> {
  for (let i = 0; i < N; i++) call(telemetry);
  const figures: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    await telemetry.tracer?.flush();
    const before = process.cpuUsage();
    for (let i = 0; i < N; i++) {
      call(telemetry);
      // Let the exporter's timer and sockets run, as between a daemon's requests.
      if (i % 200 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await telemetry.tracer?.flush();
    const used = process.cpuUsage(before);
    figures.push((used.user + used.system) / N);
  }
  figures.sort((a, b) => a - b);
  console.log(`${name}: ${figures[figures.length >> 1]?.toFixed(2)} µs CPU per call (rounds ${figures.map((f) => f.toFixed(2)).join(' ')})`);
}

await measure('metrics only', new Telemetry(metrics(), undefined));
const tracer = await GatewayTracer.create({ enabled: true, endpoint: url, protocol: process.env.PROTOCOL === 'http/json' ? 'http/json' : 'http/protobuf', serviceName: 'bench', captureContent: false, sampleRatio: 1 }, pino({ level: 'silent' }));
await measure('metrics and traces (100%)', new Telemetry(metrics(), tracer));
await tracer.shutdown(1000);
collector.close();
