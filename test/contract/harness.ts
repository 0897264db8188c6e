import type t from 'tap';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { at, check, describe, type FieldTable } from './check.js';
import { DECIDED_ERROR_EXTRAS, DECIDED_MESSAGES_ERROR, DECISIONS, ERROR_OBJECT } from './spec.js';

/**
 * What the contract tests share: one live daemon (a real gateway on port 0 with a temp SQLite
 * file, its providers pointed at the provider simulator), plain HTTP, and the assertions that
 * hold a response to a table of spec.ts. Nothing here reads the specification file.
 */

/** A tap test, as the callback of `t.test` receives it. */
export type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

export interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  text: string;
}

export interface Daemon {
  gw: TestGateway;
  sim: ProviderSimulator;
  url: string;
  call(method: string, path: string, options?: { body?: unknown; raw?: string | Buffer; headers?: Record<string, string>; token?: string }): Promise<Res>;
}

/** Starts the simulator and a daemon using it; both stop when `test` ends. */
export async function startDaemon(test: Tap | typeof t, raw: Record<string, unknown> = {}): Promise<Daemon> {
  const sim = await ProviderSimulator.start();
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url), ...raw });
  test.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  return {
    gw,
    sim,
    url: gw.url,
    call: async (method, path, options) => {
      const res = await gw.http<unknown>(method, path, options);
      return { status: res.status, headers: res.headers, body: res.body, text: res.text };
    },
  };
}

export function header(res: Pick<Res, 'headers'>, name: string): string | undefined {
  const value = res.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Asserts that `value` conforms to `table`; the failure lists every mismatch by path. */
export function conforms(test: Tap, value: unknown, table: FieldTable, label: string): boolean {
  const problems = describe(check(value, table));
  return test.same(problems, [], `${label}: conforms to the table`);
}

export type Format = 'openai' | 'messages';

export interface ExpectedError {
  /** The format of the endpoint: the messages format adds top-level `type: 'error'` and the vendor's error types. */
  format?: Format;
  type?: string;
  param?: string | null;
  reason?: string;
}

/**
 * The error contract on one response: the status, the spec's error object (message and type
 * strings, `code` an integer equal to the HTTP status), the gateway's `reason`/`param`, an
 * x-request-id, a JSON body; for the messages format the top-level `type: 'error'` and the
 * vendor's error type for the status.
 */
export function expectError(test: Tap, res: Res, status: number, label: string, expected: ExpectedError = {}): void {
  test.equal(res.status, status, `${label}: status ${status}${res.status === status ? '' : ` (body ${res.text.slice(0, 300)})`}`);
  conforms(test, res.body, ERROR_OBJECT, `${label}: error object`);
  test.equal(at(res.body, 'error.code'), res.status, `${label}: error.code is the integer HTTP status`);
  conforms(test, res.body, DECIDED_ERROR_EXTRAS, `${label}: error.reason and error.param`);
  test.ok(header(res, 'x-request-id'), `${label}: x-request-id`);
  test.match(header(res, 'content-type') ?? '', /^application\/json/, `${label}: a JSON body`);
  if (expected.format === 'messages') {
    conforms(test, res.body, DECIDED_MESSAGES_ERROR, `${label}: messages-format error body`);
    const vendorType = DECISIONS.messagesTypes[status];
    if (vendorType !== undefined) test.equal(at(res.body, 'error.type'), vendorType, `${label}: error.type ${vendorType} (the messages format's)`);
  }
  if (expected.type !== undefined) test.equal(at(res.body, 'error.type'), expected.type, `${label}: error.type ${expected.type}`);
  if (expected.param !== undefined) test.equal(at(res.body, 'error.param'), expected.param, `${label}: error.param ${String(expected.param)}`);
  if (expected.reason !== undefined) test.equal(at(res.body, 'error.reason'), expected.reason, `${label}: error.reason ${expected.reason}`);
}

// ---------------------------------------------------------------------------------------------
// Accounts, sessions, keys

let counter = 0;
export function uniqueEmail(prefix = 'contract'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}@example.com`;
}

export const PASSWORD = 'contract-password-1';

export interface Session {
  token: string;
  userId: string;
  email: string;
  /** The session's X-CSRF-Token, for changes made with the cookie. */
  csrf: string;
}

/** Signs up through POST /api/auth/signup (the public endpoint) and returns the session. */
export async function signup(daemon: Daemon, email = uniqueEmail()): Promise<Session> {
  const res = await daemon.call('POST', '/api/auth/signup', { body: { email, password: PASSWORD, name: 'Contract' } });
  const token = at(res.body, 'token');
  const userId = at(res.body, 'user.id');
  const csrf = at(res.body, 'csrf_token');
  if (res.status !== DECISIONS.signupStatus || typeof token !== 'string' || typeof userId !== 'string' || typeof csrf !== 'string') throw new Error(`signup: ${res.status} ${res.text}`);
  return { token, userId, email, csrf };
}

/** An account with `balance` INR and an sk- key, set up through the management API (as an admin would). */
export function funded(daemon: Daemon, balance: number, key: Record<string, unknown> = {}): Promise<FundedKey> {
  return fundedKey(daemon.gw, { balance, key });
}

/** Credits an account through the management API. */
export async function topUp(daemon: Daemon, accountId: string, amount: number): Promise<void> {
  const res = await daemon.call('POST', `/api/management/accounts/${accountId}/topups`, { token: daemon.gw.adminKey, body: { amount } });
  if (res.status !== 201) throw new Error(`top-up: ${res.status} ${res.text}`);
}

// ---------------------------------------------------------------------------------------------
// The three chat-style formats

export interface InferenceFormat {
  name: string;
  path: string;
  format: Format;
  /** A valid body for `model` whose user text is `text` (a SIM directive scripts the provider's reply). */
  body(model: string, text: string, extra?: Record<string, unknown>): Record<string, unknown>;
}

export const CHAT: InferenceFormat = {
  name: 'chat',
  path: '/v1/chat/completions',
  format: 'openai',
  body: (model, text, extra = {}) => ({ model, messages: [{ role: 'user', content: text }], ...extra }),
};

export const RESPONSES: InferenceFormat = {
  name: 'responses',
  path: '/v1/responses',
  format: 'openai',
  body: (model, text, extra = {}) => ({ model, input: text, ...extra }),
};

export const MESSAGES: InferenceFormat = {
  name: 'messages',
  path: '/v1/messages',
  format: 'messages',
  body: (model, text, extra = {}) => ({ model, max_tokens: 64, messages: [{ role: 'user', content: text }], ...extra }),
};

export const FORMATS: readonly InferenceFormat[] = [CHAT, RESPONSES, MESSAGES];

/** A SIM directive: the provider simulator plays this scenario for the call. */
export function sim(scenario: Record<string, unknown>): string {
  return `SIM: ${JSON.stringify(scenario)}`;
}

export const MODEL = 'openai/gpt-4o-mini';

// ---------------------------------------------------------------------------------------------
// Server-Sent Events

export interface SseFrame {
  event?: string;
  data: string;
}

/** The frames of a whole SSE body (comments dropped, multi-line data joined). */
export function sseFrames(text: string): SseFrame[] {
  const frames: SseFrame[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length === 0) continue;
    frames.push(event === undefined ? { data: data.join('\n') } : { event, data: data.join('\n') });
  }
  return frames;
}

/** JSON.parse, or undefined. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
