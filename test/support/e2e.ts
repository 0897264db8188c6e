import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type t from 'tap';
import { request } from 'undici';
import { startGateway, type RunningGateway } from '../../src/main.js';
import type { UsageRecord } from '../../src/store/usage.js';
import { startTestGateway, testConfig, type FundedKey, type TestGateway } from './gateway.js';
import { dropPrefix, REDIS_URL } from './redis.js';

/** Helpers shared by the end-to-end tests: reading responses, the store and the holds. */

/** A tap test, as the callback of `t.test` receives it. */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

export function header(raw: { headers: Record<string, string | string[] | undefined> }, name: string): string | undefined {
  const value = raw.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A response as the end-to-end tests check it: status, headers, the body as text and as JSON (when it is JSON). */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** POST with a JSON body (a string is sent as it is), read whole. */
export async function postJson(url: string, headers: Record<string, string>, body: unknown): Promise<RawResponse> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `condition` holds (a bound, not a timing assertion). */
export async function until(what: string, condition: () => boolean | Promise<boolean>, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(10);
  }
}

/** Exact ceiling division of µINR·tokens sums by 1e6, as the gateway must round (once per call, up). */
export function ceilMillion(total: bigint): number {
  return Number((total + 999_999n) / 1_000_000n);
}

/**
 * A call's usage row priced at `prices` (µINR per million input and output tokens, as the
 * catalog states them), and charged exactly once at that cost. `usage`: also asserts the
 * upstream reported both token counts (the message says whose).
 */
export async function exactlyBilled(test: Tap, gw: RunningGateway, accountId: string, requestId: string | undefined | null, prices: { input: bigint; output: bigint }, usage?: string): Promise<void> {
  gw.app.settlement.drain();
  const row = await usageRow(gw, requestId ?? undefined);
  test.ok(row, `a usage row for ${requestId}`);
  if (!row) return;
  if (usage !== undefined) test.ok(row.inputTokens > 0 && row.outputTokens > 0, usage);
  const expected = ceilMillion(BigInt(row.inputTokens) * prices.input + BigInt(row.outputTokens) * prices.output);
  test.equal(row.costMicros, expected, `${row.costMicros} µINR = ${row.inputTokens} in + ${row.outputTokens} out at the catalog's prices`);
  const charged = await charges(gw, accountId, requestId ?? undefined);
  test.equal(charged.length, 1, 'charged once');
  test.equal(-(charged[0]?.amountMicros ?? 0), expected, 'the charge is the cost');
}

/** µINR as the INR number the API shows. */
export function inr(micros: number): number {
  return micros / 1_000_000;
}

export async function usageRow(gw: RunningGateway, requestId: string | undefined): Promise<UsageRecord | undefined> {
  return (await gw.app.store.usage.list({ limit: 1000 })).find((row) => row.requestId === requestId);
}

export async function charges(gw: RunningGateway, accountId: string, requestId?: string) {
  return (await gw.app.store.ledger.list(accountId, 10_000)).filter((e) => e.kind === 'charge' && (requestId === undefined || e.requestId === requestId));
}

export async function balanceMicros(gw: RunningGateway, accountId: string): Promise<number> {
  return (await gw.app.store.accounts.byId(accountId))?.balanceMicros ?? Number.NaN;
}

/** Applies what each daemon settled to the shared ledger (each does so in its own batches). */
export function drainAll(...gateways: RunningGateway[]): void {
  for (const gw of gateways) gw.app.settlement.drain();
}

export async function noHolds(test: Tap, gw: RunningGateway, funded: FundedKey): Promise<void> {
  gw.app.settlement.drain(); // a hold lasts until its call's charge is in the ledger
  // With Redis, each daemon releases the holds it took over its own connection once their
  // charges are committed: a read over another daemon's connection can reach Redis just before
  // that release. A hold still there after 2 s has outlived its call.
  const read = () => gw.app.holds.held(funded.accountId, funded.keyId);
  let held = await read();
  for (const deadline = Date.now() + 2000; (held.accountHeldMicros !== 0 || held.keyHeldMicros !== 0) && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    held = await read();
  }
  test.same(held, { accountHeldMicros: 0, keyHeldMicros: 0 }, 'no hold outlives its call');
}

/**
 * Two daemons on one store (the first's: its SQLite file, or its PostgreSQL database) and one
 * Redis under a fresh key prefix, configured with `raw` (plus the redis section); at the end of
 * `test` both stop and the prefix is cleaned.
 */
export async function twoDaemonsOnRedis(test: Tap, raw: Record<string, unknown>): Promise<{ a: TestGateway; b: RunningGateway }> {
  const prefix = `test-${randomUUID()}:`;
  const config = { ...raw, redis: { url: REDIS_URL, key_prefix: prefix } };
  const a = await startTestGateway(config);
  const b = await startGateway(testConfig(a.dir, config), { logger: pino({ level: 'silent' }) });
  test.teardown(async () => {
    if (a.app.redis) await dropPrefix(a.app.redis, prefix);
    await b.close();
    await a.stop();
  });
  return { a, b };
}
