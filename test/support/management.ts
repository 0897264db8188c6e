import { createHash } from 'node:crypto';
import { request } from 'undici';
import type { NewUsage, UsageRecord } from '../../src/store/usage.js';
import type { HttpResponse, TestGateway } from './gateway.js';

/** Helpers for the management API tests: accounts with their own akm- key, keys, usage rows, an SSE reader. */

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export const SK_FORMAT = /^sk-[0-9a-f]{64}$/;
export const AKM_FORMAT = /^akm-[0-9a-f]{64}$/;

function expectStatus(res: HttpResponse, status: number, what: string): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status}: ${res.text}`);
}

export interface AccountWithKey {
  id: string;
  email: string;
  /** The account's own akm- key (created by the admin). */
  key: string;
  keyId: string;
}

/** An account created by the admin through the API, plus a management key for it. */
export async function createAccountWithKey(gw: TestGateway, email: string, options: { role?: 'user' | 'admin'; name?: string } = {}): Promise<AccountWithKey> {
  const created = await gw.http('POST', '/api/management/accounts', {
    token: gw.adminKey,
    body: { email, name: options.name ?? email.split('@')[0], role: options.role ?? 'user' },
  });
  expectStatus(created, 201, `create account ${email}`);
  const key = await gw.http('POST', `/api/management/accounts/${created.body.id}/management-keys`, { token: gw.adminKey, body: { name: 'tests' } });
  expectStatus(key, 201, `create management key for ${email}`);
  return { id: created.body.id, email: created.body.email, key: key.body.management_key, keyId: key.body.id };
}

/** An sk- key for an account, created with `token`. */
export async function createApiKey(gw: TestGateway, token: string, account: string, body: Record<string, unknown> = { name: 'app' }): Promise<{ id: string; secret: string; body: any }> {
  const res = await gw.http('POST', `/api/management/accounts/${encodeURIComponent(account)}/api-keys`, { token, body });
  expectStatus(res, 201, `create api key for ${account}`);
  return { id: res.body.id, secret: res.body.api_key, body: res.body };
}

export async function topup(gw: TestGateway, account: string, amount: number, headers: Record<string, string> = {}): Promise<HttpResponse> {
  return gw.http('POST', `/api/management/accounts/${encodeURIComponent(account)}/topups`, { token: gw.adminKey, body: { amount }, headers });
}

let requestCounter = 0;

/** A usage row with sane defaults; `overrides` win. */
export function usageRow(overrides: Partial<NewUsage> & Pick<NewUsage, 'accountId'>): NewUsage {
  requestCounter += 1;
  return {
    requestId: `req_test_${process.pid}_${requestCounter}`,
    apiKeyId: null,
    model: 'gpt-test',
    provider: 'openai',
    endpoint: '/v1/chat/completions',
    stream: false,
    inputTokens: 10,
    outputTokens: 20,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costMicros: 1_250_000,
    unchargedMicros: 0,
    status: 200,
    errorType: null,
    latencyMs: 123,
    createdAt: Date.parse('2025-06-01T00:00:00Z'),
    ...overrides,
  };
}

/** A usage row written straight to the store (no charge), as settlement would write it. */
export async function insertUsage(gw: TestGateway, overrides: Partial<NewUsage> & Pick<NewUsage, 'accountId'>): Promise<UsageRecord> {
  const [record] = await gw.app.store.settle([], [usageRow(overrides)]);
  return record as UsageRecord;
}

export interface SseFrame {
  event?: string;
  data?: string;
  comments: string[];
}

export interface UsageStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body when the stream was refused (status other than 200). */
  error: any;
  /** The next frame (comments included); null once the stream ended. */
  nextFrame(): Promise<SseFrame | null>;
  /** The next frame that carries an event (keep-alive comments skipped); null once the stream ended. */
  nextEvent(): Promise<SseFrame | null>;
  close(): void;
}

/** Time after which a read that should have produced a frame fails instead of hanging the run. */
const HANG_GUARD_MS = 15_000;

/** Opens `GET /api/management/usage/stream` and reads it frame by frame as the bytes arrive. */
export async function openUsageStream(gw: TestGateway, token: string, query = ''): Promise<UsageStream> {
  const res = await request(`${gw.url}/api/management/usage/stream${query}`, { headers: { authorization: `Bearer ${token}` } });
  let error: any;
  if (res.statusCode !== 200) {
    const text = await res.body.text();
    try {
      error = JSON.parse(text);
    } catch {
      error = text;
    }
  }
  const iterator = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const decoder = new TextDecoder();
  let buffer = '';

  const parse = (raw: string): SseFrame => {
    const frame: SseFrame = { comments: [] };
    for (const line of raw.split('\n')) {
      if (line.startsWith(':')) frame.comments.push(line.slice(1).trim());
      else if (line.startsWith('event:')) frame.event = line.slice(6).trim();
      else if (line.startsWith('data:')) frame.data = (frame.data === undefined ? '' : `${frame.data}\n`) + line.slice(5).replace(/^ /, '');
    }
    return frame;
  };

  const readFrame = async (): Promise<SseFrame | null> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end !== -1) {
        const raw = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        return parse(raw);
      }
      const chunk = await iterator.next();
      if (chunk.done) return null;
      buffer += decoder.decode(chunk.value, { stream: true });
    }
  };

  const guarded = async <T>(promise: Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const guard = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no SSE frame within ${HANG_GUARD_MS}ms`)), HANG_GUARD_MS);
      timer.unref();
    });
    try {
      return await Promise.race([promise, guard]);
    } finally {
      clearTimeout(timer);
    }
  };

  const nextFrame = (): Promise<SseFrame | null> => guarded(readFrame());
  const nextEvent = (): Promise<SseFrame | null> =>
    guarded(
      (async () => {
        for (;;) {
          const frame = await readFrame();
          if (frame === null || frame.event !== undefined || frame.data !== undefined) return frame;
        }
      })(),
    );

  return {
    status: res.statusCode,
    headers: res.headers,
    error,
    nextFrame,
    nextEvent,
    close: () => res.body.destroy(),
  };
}
