import type { App } from '../app.js';
import { resolveAliases } from './aliases.js';
import { errors } from '../core/errors.js';
import type { GatewayStreamEvent } from '../core/canonical.js';
import type { CallContext, ChatDraft, ChatOutcome, ChatStreamOutcome } from '../core/gateway/chat.js';
import { SseWriter, type SseEvent } from '../http/sse.js';
import { toGatewayError, type RequestContext } from '../http/server.js';
import type { Catalog } from '../core/catalog.js';
import { KeyPolicy } from '../core/key-policy.js';
import type { KeyRecord } from '../store/keys.js';

/** One SSE event; `event` is the `event:` line (absent in the chat-completions format). */
export type SseFrame = SseEvent;

/** An ingress format's stream encoder: the opening events, then events per gateway part. */
export interface StreamEncoder {
  start(): SseFrame[];
  encode(event: GatewayStreamEvent): SseFrame[];
}

/** How one ingress format renders a chat call. */
export interface ChatRendering {
  json(outcome: ChatOutcome): unknown;
  /** The encoder of a stream, once it is routed (a promise where it needs the prompt's count first). */
  stream(outcome: ChatStreamOutcome): StreamEncoder | Promise<StreamEncoder>;
}

/**
 * Runs a decoded chat call through the gateway and writes it in the ingress's format: one
 * JSON body, or SSE frames written as the parts arrive (waiting for drain, so a slow client
 * slows the upstream read instead of growing memory).
 */
export async function serveChatCall(app: App, ctx: RequestContext, key: KeyRecord, draft: ChatDraft, endpoint: string, rendering: ChatRendering): Promise<void> {
  const call = callContext(ctx, key, endpoint, app.catalog);
  resolveAliases(app.catalog, 'chat', draft, call);
  if (optsOutOfCache(ctx.req.headers['x-gateway-cache'])) draft.noCache = true;
  if (!draft.stream) {
    const outcome = await app.chat.complete(draft, call);
    ctx.send(200, rendering.json(outcome), outcome.headers);
    return;
  }
  const outcome = await app.chat.stream(draft, call);
  const sse = new SseWriter(ctx.res);
  let encoder: StreamEncoder;
  try {
    encoder = await rendering.stream(outcome);
    const opened = sse.open(200, outcome.headers, encoder.start());
    if (opened) await opened;
  } catch (error) {
    // Nothing of the stream is read: its call is ended here (upstream closed, hold released).
    await outcome.cancel(toGatewayError(error)).catch(() => undefined);
    throw error;
  }
  // One write per batch (what one upstream read carried): nothing waits for a later read.
  for await (const batch of outcome.events) {
    if (sse.isClosed) break;
    const frames: SseFrame[] = [];
    for (const event of batch) for (const frame of encoder.encode(event)) frames.push(frame);
    const drained = sse.sendAll(frames);
    if (drained) await drained;
  }
  sse.end();
}

/**
 * The gateway's view of an inference request: who calls, and a signal that aborts the
 * upstream call when the client disconnects before the response is complete.
 */
export function callContext(ctx: RequestContext, key: KeyRecord, endpoint: string, catalog: Catalog): CallContext {
  const fallbacks = fallbackHeader(ctx.req.headers['x-gateway-fallbacks']);
  const call: CallContext = {
    requestId: ctx.requestId,
    endpoint,
    accountId: key.accountId,
    apiKeyId: key.id,
    rateLimit: key.rateLimit ?? 10_000,
    signal: ctx.signal,
    startedAt: Date.now(),
    cache: key.cache,
  };
  if (fallbacks) call.fallbacks = fallbacks;
  const observation = ctx.observation;
  if (observation) {
    // A model call: "unknown" until the catalog resolves the model it names.
    observation.model = 'unknown';
    call.observation = observation;
  }
  if (key.tpmLimit !== null) call.tpmLimit = key.tpmLimit;
  const policy = KeyPolicy.of(key, catalog);
  if (policy) call.policy = policy;
  return call;
}

/** At most this many fallbacks in a request (the body's `models` or the header). */
export const MAX_FALLBACKS = 10;

/** `x-gateway-fallbacks: id1, id2`: models to fall back to, in order, on every endpoint. */
function fallbackHeader(header: string | string[] | undefined): string[] | undefined {
  if (header === undefined) return undefined;
  const names = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length > MAX_FALLBACKS) throw errors.invalidHeader('x-gateway-fallbacks', `at most ${MAX_FALLBACKS} models`);
  return names.length > 0 ? names : undefined;
}

/** `x-gateway-cache: no-cache` (the switch for formats whose body has no `no_cache`, and any client). */
function optsOutOfCache(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const values = Array.isArray(header) ? header.join(',') : header;
  return values.split(',').some((value) => {
    const v = value.trim().toLowerCase();
    return v === 'no-cache' || v === 'no-store' || v === 'bypass';
  });
}
