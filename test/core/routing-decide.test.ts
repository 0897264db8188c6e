import t from 'tap';
import type { Deployment, RetryCondition, RoutingConfig } from '../../src/config/types.js';
import { backoffMs, classifyFailure, pickDeployment, weightedChoice, type Option, type UpstreamFailure, type Verdict } from '../../src/core/routing/decide.js';

/** The router's decisions as tables: an upstream outcome in, a verdict out; options in, a pick out. */

const routing: Pick<RoutingConfig, 'retryOn' | 'maxRetryAfterMs' | 'cooldown'> = {
  retryOn: new Set<RetryCondition>([408, 429, 500, 502, 503, 504, 529, 'connect', 'timeout']),
  maxRetryAfterMs: 10_000,
  cooldown: { failures: 3, windowMs: 60_000, durationMs: 30_000 },
};

t.test('classifyFailure: what each upstream outcome means', async (t) => {
  const BACKOFF = 250;
  const rows: Array<[string, UpstreamFailure | undefined, Verdict]> = [
    ['not an upstream failure (client left, gateway error): the call ends', undefined, { retry: false, countFailure: false }],
    ['500: retried, counted', { kind: 'http', status: 500 }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['502', { kind: 'http', status: 502 }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['503', { kind: 'http', status: 503 }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['504', { kind: 'http', status: 504 }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['529 (Anthropic overloaded)', { kind: 'http', status: 529 }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['408', { kind: 'http', status: 408 }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['429 without Retry-After: backoff', { kind: 'http', status: 429 }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['429 with Retry-After within max: waited for on that deployment', { kind: 'http', status: 429, retryAfterMs: 2000 }, { retry: true, againAfterMs: 2000, countFailure: true }],
    ['429 with Retry-After above max: the deployment rests that long', { kind: 'http', status: 429, retryAfterMs: 60_000 }, { retry: true, restDeployment: { ms: 60_000, reason: 'retry-after' }, countFailure: false }],
    ['503 with Retry-After above max rests too', { kind: 'http', status: 503, retryAfterMs: 11_000 }, { retry: true, restDeployment: { ms: 11_000, reason: 'retry-after' }, countFailure: false }],
    ['429 quota exhausted: the key rests for the cooldown, never waited on', { kind: 'http', status: 429, quota: true }, { retry: true, restKey: { ms: 30_000, reason: 'quota' }, countFailure: false }],
    ['429 quota with a longer Retry-After: rests that long', { kind: 'http', status: 429, quota: true, retryAfterMs: 120_000 }, { retry: true, restKey: { ms: 120_000, reason: 'quota' }, countFailure: false }],
    ['401: the key rests, the next key is tried', { kind: 'http', status: 401 }, { retry: true, rotateKey: true, restKey: { ms: 30_000, reason: 'auth' }, countFailure: false }],
    ['403 likewise', { kind: 'http', status: 403 }, { retry: true, rotateKey: true, restKey: { ms: 30_000, reason: 'auth' }, countFailure: false }],
    ['400: never retried', { kind: 'http', status: 400 }, { retry: false, countFailure: false }],
    ['404: never retried', { kind: 'http', status: 404 }, { retry: false, countFailure: false }],
    ['413: never retried', { kind: 'http', status: 413 }, { retry: false, countFailure: false }],
    ['422: never retried', { kind: 'http', status: 422 }, { retry: false, countFailure: false }],
    ['connection refused', { kind: 'connect' }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['timeout', { kind: 'timeout' }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['a 200 that is not JSON: as a 502', { kind: 'malformed' }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
    ['a stream error before the first content: as a 502', { kind: 'stream' }, { retry: true, againAfterMs: BACKOFF, countFailure: true }],
  ];
  for (const [name, failure, verdict] of rows) t.same(classifyFailure(failure, routing, BACKOFF), verdict, name);
});

t.test('classifyFailure follows retry_on', async (t) => {
  const narrow = { ...routing, retryOn: new Set<RetryCondition>([503]) };
  t.same(classifyFailure({ kind: 'http', status: 502 }, narrow, 100), { retry: false, countFailure: true }, 'a 5xx not listed: returned, still counted against the deployment');
  t.same(classifyFailure({ kind: 'connect' }, narrow, 100), { retry: false, countFailure: true }, 'connect not listed');
  t.same(classifyFailure({ kind: 'timeout' }, narrow, 100), { retry: false, countFailure: true }, 'timeout not listed');
  t.same(classifyFailure({ kind: 'http', status: 429 }, narrow, 100), { retry: false, countFailure: true }, '429 not listed');
  t.same(classifyFailure({ kind: 'http', status: 429, quota: true }, narrow, 100), { retry: false, restKey: { ms: 30_000, reason: 'quota' }, countFailure: false }, 'quota still rests its key');
  t.same(classifyFailure({ kind: 'http', status: 401 }, narrow, 100).rotateKey, true, '401 rotates keys whatever retry_on says');
  const wide = { ...routing, retryOn: new Set<RetryCondition>([400]) };
  t.same(classifyFailure({ kind: 'http', status: 400 }, wide, 100), { retry: true, countFailure: false }, 'a 400 an operator lists: other deployments, never this one again');
});

t.test('backoff doubles, jittered, capped at 5 s', async (t) => {
  t.equal(backoffMs(1, 1), 250);
  t.equal(backoffMs(1, 0), 125);
  t.equal(backoffMs(2, 1), 500);
  t.equal(backoffMs(3, 1), 1000);
  t.equal(backoffMs(20, 1), 5000);
});

const dep = (provider: string, weight = 1, priority = 1): Deployment => ({ id: `${provider}:m`, provider, upstreamModel: 'm', weight, priority });
const opt = (candidate: number, deployment: Deployment, extra: Partial<Option> = {}): Option => ({ candidate, deployment, rest: undefined, busy: 0, latencyMs: undefined, tried: 0, blocked: false, readyAt: 0, ...extra });
const NOW = 1_000_000;
const DEADLINE = NOW + 60_000;

t.test('pickDeployment: tiers, strategies, retries of tried deployments, rests', async (t) => {
  const a = dep('a', 3);
  const b = dep('b', 1);
  const c = dep('c', 1, 2);
  const f = dep('f');
  const pick = (options: Option[], strategy: RoutingConfig['strategy'] = 'weighted', random = 0) => {
    const choice = pickDeployment(options, strategy, NOW, DEADLINE, random);
    return choice ? `${choice.option.candidate}:${choice.option.deployment.provider}${choice.waitMs ? `+${choice.waitMs}` : ''}` : 'none';
  };
  t.equal(pick([opt(0, a), opt(0, b), opt(0, c)], 'weighted', 0), '0:a', 'weighted: the low end of the draw is a (3 of 4)');
  t.equal(pick([opt(0, a), opt(0, b), opt(0, c)], 'weighted', 0.74), '0:a');
  t.equal(pick([opt(0, a), opt(0, b), opt(0, c)], 'weighted', 0.76), '0:b', 'the top quarter is b');
  t.equal(pick([opt(0, a, { tried: 1, readyAt: NOW + 100 }), opt(0, b), opt(0, c)]), '0:b', 'a tried deployment waits while an untried one of its tier remains');
  t.equal(pick([opt(0, a, { tried: 1, readyAt: NOW + 100 }), opt(0, b, { blocked: true }), opt(0, c)]), '0:c', 'priority 2 once every priority-1 deployment failed');
  t.equal(pick([opt(0, a, { rest: { until: NOW + 1, reason: 'failures' } }), opt(0, b, { rest: { until: NOW + 1, reason: 'auth' } }), opt(0, c)]), '0:c', 'resting deployments are passed over');
  t.equal(pick([opt(0, a, { blocked: true }), opt(0, b, { blocked: true }), opt(0, c, { blocked: true }), opt(1, f)]), '1:f', 'the fallback model once the model is exhausted');
  t.equal(pick([opt(0, a, { tried: 1, readyAt: NOW + 300 }), opt(1, f)]), '1:f', 'a fallback at once rather than waiting for a Retry-After');
  t.equal(pick([opt(0, a, { tried: 1, readyAt: NOW + 300 }), opt(1, f, { tried: 1, readyAt: NOW + 200 })]), '1:f+200', 'then the soonest ready of those tried');
  t.equal(pick([opt(0, a, { tried: 1, readyAt: NOW + 300 })]), '0:a+300', 'a model\'s only deployment, again after its Retry-After');
  t.equal(pick([opt(0, a, { tried: 1, readyAt: DEADLINE + 1 })]), 'none', 'not past the call\'s deadline');
  t.equal(pick([opt(0, a, { tried: 1, readyAt: NOW, rest: { until: NOW + 5, reason: 'retry-after' } })]), 'none', 'not while it rests for a stated reason');
  t.equal(pick([opt(0, a, { tried: 1, readyAt: NOW, rest: { until: NOW + 5, reason: 'failures' } })]), '0:a', 'a cooldown does not stop a retry of what this call tried');
  t.equal(pick([opt(0, a, { rest: { until: NOW + 5000, reason: 'failures' } }), opt(0, b, { rest: { until: NOW + 50, reason: 'failures' } })]), '0:b', 'all cooling down and nothing else: the one that wakes first, rather than no call');
  t.equal(pick([opt(0, a, { rest: { until: NOW + 5000, reason: 'quota' } })]), 'none', 'all resting for a stated reason: none');
  t.equal(pick([opt(0, a, { rest: { until: NOW - 1, reason: 'quota' } })]), '0:a', 'a rest that ended is no rest');
  t.equal(pick([opt(0, a, { busy: 5 }), opt(0, b, { busy: 2 })], 'least-busy'), '0:b', 'least-busy: fewest in flight');
  t.equal(pick([opt(0, a, { latencyMs: 300 }), opt(0, b, { latencyMs: 120 })], 'latency'), '0:b', 'latency: the fastest');
  t.equal(pick([opt(0, a, { latencyMs: 300 }), opt(0, b)], 'latency'), '0:b', 'latency: an unmeasured one is measured first');
});

t.test('weightedChoice spreads by weight', async (t) => {
  const pool = [opt(0, dep('x', 3)), opt(0, dep('y', 1))];
  let x = 0;
  for (let i = 0; i < 1000; i++) if (weightedChoice(pool, i / 1000).deployment.provider === 'x') x++;
  t.equal(x, 750, 'uniform draws split 3:1 exactly');
});
