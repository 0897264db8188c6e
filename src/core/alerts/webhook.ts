import { createHmac } from 'node:crypto';

/**
 * Delivery of alerts to the operator's webhook (`alerts.webhook_url`, optionally signed with
 * `alerts.webhook_secret`). The caller decides what to send and deduplicates; this module only
 * delivers, off the request path: `enqueue` puts the alert in an in-memory queue and returns,
 * and a few workers POST it with retries and backoff, so a slow or dead webhook never slows a
 * call. The queue is bounded, and nothing survives a restart: alerts are advisory, and the
 * state that raised them (a low balance, a spent budget) raises them again.
 *
 * The URL and the secret are kept in private fields and never appear in a result or a log:
 * a Slack incoming-webhook URL is itself a credential.
 */

export type AlertEvent = 'balance_low' | 'key_budget' | 'account_spend_limit' | 'deployment_resting';

export interface AlertPayload {
  /** Unique alert id (e.g. 'alt_...'), also sent as the header x-gateway-alert-id. */
  id: string;
  event: AlertEvent;
  /** What it is about: an account id, key id, deployment name. */
  subject: string;
  created_at: string; // ISO 8601
  /** A human sentence; Slack incoming webhooks display the `text` field as is. */
  text: string;
  [extra: string]: unknown; // event-specific fields (threshold, balance_inr, ...)
}

export interface DeliveryResult {
  id: string;
  ok: boolean;
  /** POSTs made (0 when the alert was dropped before its first). */
  attempts: number;
  /** HTTP status of the last attempt, when one answered. */
  status?: number;
  /** Why it failed; never holds the URL or the secret. */
  error?: string;
}

export interface WebhookOptions {
  url: string;
  /** Signs each body (x-gateway-signature); an empty string counts as unset. */
  secret?: string;
  /** Backoff before retry n (1-based): default 1 s, 5 s, 30 s, 2 min, 10 min; then give up. */
  retryDelaysMs?: readonly number[];
  timeoutMs?: number; // per attempt, default 10 s
  /**
   * Alerts waiting for their turn or a retry, default 1000 (up to MAX_CONCURRENT more are in
   * flight); beyond it the oldest is dropped and reported as failed.
   */
  maxQueued?: number;
  /** Called once per alert, when delivered or given up (dropped, refused, out of retries, closed). */
  onResult?: (result: DeliveryResult) => void;
  fetch?: typeof fetch; // injectable; default globalThis.fetch
}

export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [1_000, 5_000, 30_000, 120_000, 600_000];
/** POSTs at once: enough to drain a burst, few enough not to flood a small receiver. */
export const MAX_CONCURRENT = 4;
/** A receiver's retry-after is honoured up to this, so one bad header cannot park an alert for days. */
const MAX_RETRY_AFTER_MS = 600_000;
/** What a header value may hold; anything else would make fetch reject on every attempt. */
const HEADER_SAFE = /^[\x20-\x7e]*$/;

/** 'sha256=' + hex HMAC-SHA256 of the body's exact (UTF-8) bytes, as GitHub-style receivers check. */
export function signature(secret: string, body: string): string {
  return 'sha256=' + createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

interface Job {
  readonly id: string;
  /** Enqueue order: the oldest is dropped first when the queue is full. */
  readonly seq: number;
  /** Serialized once, so every attempt sends (and signs) the same bytes. */
  readonly body: string;
  readonly headers: Record<string, string>;
  attempts: number;
  timer?: NodeJS.Timeout;
}

type Outcome = { ok: true; status: number } | { ok: false; retry: boolean; status?: number; error: string; retryAfterMs?: number };

export class WebhookSender {
  readonly #url: string;
  readonly #secret: string | undefined;
  readonly #delays: readonly number[];
  readonly #timeoutMs: number;
  readonly #maxQueued: number;
  readonly #onResult: ((result: DeliveryResult) => void) | undefined;
  readonly #fetch: typeof fetch;
  /** Ready to be sent, in the order they became ready. */
  readonly #ready: Job[] = [];
  /** Waiting out a backoff delay. */
  readonly #waiting = new Set<Job>();
  /** Being POSTed; the controller lets close() cut them short. */
  readonly #inFlight = new Map<Job, AbortController>();
  readonly #drainers = new Set<() => void>();
  #seq = 0;
  #pumpScheduled = false;
  #closed = false;

  constructor(options: WebhookOptions) {
    this.#url = options.url;
    this.#secret = options.secret || undefined;
    this.#delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#maxQueued = Math.max(1, options.maxQueued ?? 1_000);
    this.#onResult = options.onResult;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * Queues an alert and returns: synchronous, never throws, never touches the network (the
   * workers start on a microtask, so a burst of enqueues is all queued, and trimmed, first).
   */
  enqueue(alert: AlertPayload): void {
    const [id, event] = [String(alert?.id), String(alert?.event)];
    const refused = this.#closed ? 'sender closed' : HEADER_SAFE.test(id + event) ? undefined : 'invalid alert id or event';
    if (refused) return this.#report({ id, ok: false, attempts: 0, error: refused });
    let body: string;
    try {
      body = JSON.stringify(alert);
    } catch {
      // A BigInt or a cycle among the extra fields: no attempt could ever send it.
      return this.#report({ id, ok: false, attempts: 0, error: 'alert is not serializable' });
    }
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'llm-gateway-alerts', 'x-gateway-alert-id': id, 'x-gateway-event': event };
    if (this.#secret !== undefined) headers['x-gateway-signature'] = signature(this.#secret, body);
    if (this.#ready.length + this.#waiting.size >= this.#maxQueued) this.#dropOldest();
    this.#ready.push({ id, seq: this.#seq++, body, headers, attempts: 0 });
    if (!this.#pumpScheduled) {
      this.#pumpScheduled = true;
      queueMicrotask(() => this.#pump());
    }
  }

  /** Alerts not yet delivered or given up: queued, waiting for a retry, or in flight. */
  get pending(): number {
    return this.#ready.length + this.#waiting.size + this.#inFlight.size;
  }

  /** Resolves when the queue is empty and nothing is in flight (for tests and shutdown), or after `ms`. */
  drain(ms = Infinity): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => {
      // Not unref'd, unlike the retry timers: the caller asked to wait, and without it the
      // process could exit mid-drain with nothing else keeping it alive.
      const timer = setTimeout(() => done(), Math.min(ms, 2 ** 31 - 1));
      const done = (): void => {
        clearTimeout(timer);
        this.#drainers.delete(done);
        resolve();
      };
      this.#drainers.add(done);
    });
  }

  /**
   * Stops timers and cuts in-flight POSTs short; every alert not yet delivered is reported as
   * failed ('sender closed'). Call drain(ms) first to give them a chance.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const abandoned = [...this.#ready, ...this.#waiting];
    for (const job of this.#waiting) clearTimeout(job.timer);
    this.#ready.length = 0;
    this.#waiting.clear();
    for (const controller of this.#inFlight.values()) controller.abort();
    for (const job of abandoned) this.#report({ id: job.id, ok: false, attempts: job.attempts, error: 'sender closed' });
    this.#settle();
  }

  #pump(): void {
    this.#pumpScheduled = false;
    while (!this.#closed && this.#inFlight.size < MAX_CONCURRENT) {
      const job = this.#ready.shift();
      if (!job) break;
      void this.#attempt(job);
    }
    this.#settle();
  }

  async #attempt(job: Job): Promise<void> {
    const controller = new AbortController();
    this.#inFlight.set(job, controller);
    job.attempts += 1;
    const outcome = await this.#post(job, controller);
    this.#inFlight.delete(job);
    if (this.#closed) {
      this.#report({ id: job.id, ok: false, attempts: job.attempts, error: 'sender closed' });
    } else if (outcome.ok) {
      this.#report({ id: job.id, ok: true, attempts: job.attempts, status: outcome.status });
    } else if (outcome.retry && job.attempts <= this.#delays.length) {
      const delay = Math.max(this.#delays[job.attempts - 1] ?? 0, outcome.retryAfterMs ?? 0);
      // Unref'd: a pending retry must never keep the process alive.
      job.timer = setTimeout(() => this.#retry(job), delay).unref();
      this.#waiting.add(job);
    } else {
      const { status, error } = outcome;
      this.#report({ id: job.id, ok: false, attempts: job.attempts, ...(status !== undefined && { status }), error });
    }
    this.#pump();
  }

  #retry(job: Job): void {
    job.timer = undefined;
    this.#waiting.delete(job);
    this.#ready.push(job);
    this.#pump();
  }

  /**
   * One POST; never throws. The timeout is our own timer racing the fetch: on Node 20 a fetch
   * given AbortSignal.any([..., AbortSignal.timeout(ms)]) never aborts once a garbage collection
   * has run (weakly held signals, cf. nodejs/undici#4068), and a silent receiver would then hold
   * a slot forever. The race frees the slot whatever fetch does.
   * Errors are described by code only: messages may quote the URL.
   */
  async #post(job: Job, controller: AbortController): Promise<Outcome> {
    const timer = setTimeout(() => controller.abort(new DOMException('timeout', 'TimeoutError')), this.#timeoutMs).unref();
    const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason)));
    try {
      // Redirects are not followed: one would send a signed alert where the operator did not configure.
      const sent = Promise.resolve().then(() => this.#fetch(this.#url, { method: 'POST', headers: job.headers, body: job.body, redirect: 'manual', signal: controller.signal }));
      // An answer that arrives after the race was lost still holds a connection: released.
      sent.then((late) => controller.signal.aborted && discard(late), () => {});
      const response = await Promise.race([sent, aborted]);
      discard(response);
      const status = response.status;
      if (status >= 200 && status < 300) return { ok: true, status };
      const retryAfterMs = status === 429 || status === 503 ? retryAfter(response.headers.get('retry-after')) : undefined;
      return { ok: false, retry: status === 429 || status >= 500, status, error: `HTTP ${status}`, retryAfterMs };
    } catch (error) {
      return { ok: false, retry: true, error: describe(error, this.#timeoutMs) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops the alert enqueued first among those not in flight (the queue is full). */
  #dropOldest(): void {
    let oldest: Job | undefined;
    for (const job of [...this.#ready, ...this.#waiting]) if (!oldest || job.seq < oldest.seq) oldest = job;
    if (!oldest) return;
    if (this.#waiting.delete(oldest)) clearTimeout(oldest.timer);
    else this.#ready.splice(this.#ready.indexOf(oldest), 1);
    this.#report({ id: oldest.id, ok: false, attempts: oldest.attempts, error: 'dropped: queue full' });
  }

  #report(result: DeliveryResult): void {
    try {
      this.#onResult?.(result);
    } catch {
      // A failing callback must not stop delivery of the other alerts.
    }
  }

  #settle(): void {
    if (this.pending === 0) for (const done of [...this.#drainers]) done();
  }
}

/** The answer's body is of no use; discarding it frees the connection. */
function discard(response: Response): void {
  response.body?.cancel().catch(() => {});
}

/** Seconds only (what Slack and most APIs send), capped; anything else is ignored. */
function retryAfter(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Math.min(Number(value) * 1000, MAX_RETRY_AFTER_MS);
}

function describe(error: unknown, timeoutMs: number): string {
  const name = error instanceof Error ? error.name : '';
  if (name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  if (name === 'AbortError') return 'aborted';
  const code = codeOf(error) ?? codeOf(error instanceof Error ? error.cause : undefined);
  return code ? `network error (${code})` : 'network error';
}

/** A Node error code such as ECONNREFUSED, if it looks like one (never free text). */
function codeOf(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,40}$/.test(code) ? code : undefined;
}
