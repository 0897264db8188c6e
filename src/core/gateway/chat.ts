import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChatProviderType, GatewayConfig, ModelConfig, ProviderConfig } from '../../config/types.js';
import { PROVIDER_FAMILIES } from '../../providers/registry.js';
import { upstreamMalformed } from '../../providers/shared/errors.js';
import { SseParser } from '../../providers/shared/sse-parser.js';
import { classifyUpstreamError, type UpstreamClient, type UpstreamResponse } from '../../providers/shared/upstream.js';
import type { ProviderFamily, TranslationContext, UpstreamRequest } from '../../providers/types.js';
import type { CallSignal } from '../abort.js';
import type { ChatRequest, ChatResult, GatewayStreamEvent, StreamPart, ToolCall, Usage } from '../canonical.js';
import type { Catalog } from '../catalog.js';
import { CallAborted, GatewayError, isGatewayError } from '../errors.js';
import { formatMicros } from '../money.js';
import { mayWriteCache } from '../pricing.js';
import { countPromptTokens, countTextTokens, promptTokenBound, promptTokenEstimate } from '../tokens.js';
import { rateHeaders, type Admission, type Admitter } from './admission.js';
import { inlineRemoteImages } from './images.js';
import { InFlight } from './in-flight.js';
import type { CacheRecord, Metered, Settlement } from './settlement.js';
import type { CacheHit, CachePlan, ResponseCache } from '../cache/response-cache.js';
import { costMicros } from '../pricing.js';
import { acceptOrThrow } from './upstream-call.js';

/** A decoded chat call before the gateway resolved its model and output limit. */
export interface ChatDraft extends Omit<ChatRequest, 'model' | 'upstreamModel' | 'maxTokens'> {
  model: string;
  maxTokens?: number;
  /** The client's name for the output limit (max_tokens, max_completion_tokens, max_output_tokens), for messages. */
  maxTokensField?: string;
  /** Request fields the ingress accepted but no provider can act on. */
  ignoredParams?: string[];
  /** `no_cache: true`, or the `x-gateway-cache: no-cache` header: neither read nor write the response cache. */
  noCache?: boolean;
}

/** Who calls and how; the gateway never sees the HTTP request itself. */
export interface CallContext {
  requestId: string;
  endpoint: string;
  accountId: string;
  apiKeyId: string;
  rateLimit: number;
  /** Aborted when the client goes away. */
  signal: CallSignal;
  startedAt: number;
  /** false: the key opted out of the response cache. */
  cache?: boolean;
  /** Part of another call (the semantic cache's embedding lookup): takes no rate-limit slot. */
  unmetered?: boolean;
}

export interface ChatOutcome {
  result: ChatResult;
  usage: Usage;
  model: ModelConfig;
  costMicros: number;
  headers: Record<string, string>;
}

export interface ChatStreamOutcome {
  model: ModelConfig;
  headers: Record<string, string>;
  /**
   * Deltas as they arrive, then (after settlement) `usage` and `finish`, or one `error`: in
   * batches, one per upstream read (the parts that read carried, never held for a later one),
   * so that the ingress writes them to the client in one write, as a byte pipe would.
   */
  events: AsyncGenerator<GatewayStreamEvent[], void, undefined>;
}

interface Prepared {
  model: ModelConfig;
  provider: ProviderConfig;
  family: ProviderFamily;
  request: ChatRequest;
  admission: Admission;
  call: UpstreamRequest;
  headers: Record<string, string>;
  /** The response cache's plan for the call (a miss or a bypass by now). */
  cachePlan: CachePlan | undefined;
}

/** What settling a call needs to know of it. */
interface Settleable {
  model: ModelConfig;
  request: { stream: boolean };
  admission: Admission;
  cachePlan?: CachePlan | undefined;
  /** A cache hit: its tier, similarity and saving, and its charge. */
  hit?: { record: CacheRecord; metered: Metered };
}

const translation: TranslationContext = { newToolCallId: () => `call_${randomBytes(12).toString('base64url')}` };

/**
 * The chat path every ingress format shares: resolve model ► admit (rate limit, budget,
 * hold) ► call the provider ► meter ► settle. Errors after admission still settle (usage row,
 * no charge when nothing was produced) so that no hold outlives its call. `complete` and
 * `stream` take ownership of the draft they are given: it becomes the call's request.
 */
export class ChatService {
  private readonly inFlight = new InFlight();

  constructor(
    private readonly config: GatewayConfig,
    private readonly catalog: Catalog,
    private readonly admitter: Admitter,
    private readonly settlement: Settlement,
    private readonly upstream: UpstreamClient,
    private readonly logger: Logger,
    private readonly cache?: ResponseCache,
  ) {}

  /**
   * Resolves once every admitted call has settled, or after `timeoutMs`. At shutdown, streams
   * that the server cut settle (as 499) after their connections close; settlement must still
   * take them.
   */
  settled(timeoutMs: number): Promise<void> {
    return this.inFlight.settled(timeoutMs);
  }

  async complete(draft: ChatDraft, ctx: CallContext): Promise<ChatOutcome> {
    const model = this.catalog.resolve(draft.model, 'chat');
    const plan = this.cache?.plan(draft, model, ctx, draft.noCache === true);
    const hit = plan && this.cache ? await this.cache.lookup(plan, ctx) : undefined;
    if (hit) return this.completeFromCache(model, hit, ctx);
    const prepared = await this.prepare(draft.stream ? { ...draft, stream: false } : draft, ctx, model, plan);
    const { family, request, headers } = prepared;
    let result: ChatResult;
    let usage: Usage;
    try {
      const response = await this.send(prepared, ctx);
      let text: string;
      try {
        text = await response.body.text();
      } catch (error) {
        throw classifyUpstreamError(prepared.provider.name, error, ctx.signal, 'the answer');
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw upstreamMalformed(prepared.provider.name, 'a response that is not JSON');
      }
      result = family.parseChatResponse(json, request, translation);
      usage = result.usage ?? (await estimateUsage(request, result.text, result.toolCalls.map((c) => c.name + c.arguments).join('')));
    } catch (error) {
      await this.settleFailure(prepared, ctx, error);
      throw error;
    }
    // Outside the try: a failed settlement must not be settled a second time as a failure.
    const record = await this.settle(prepared, ctx, usage, 200);
    headers['x-gateway-cost-inr'] = formatMicros(record.costMicros);
    if (plan) this.cache?.save(plan, result, usage, model, ctx.requestId);
    return { result, usage, model, costMicros: record.costMicros, headers };
  }

  async stream(draft: ChatDraft, ctx: CallContext): Promise<ChatStreamOutcome> {
    const model = this.catalog.resolve(draft.model, 'chat');
    const plan = this.cache?.plan(draft, model, ctx, draft.noCache === true);
    const hit = plan && this.cache ? await this.cache.lookup(plan, ctx) : undefined;
    if (hit) return this.streamFromCache(model, hit, ctx);
    const prepared = await this.prepare(draft.stream ? draft : { ...draft, stream: true }, ctx, model, plan);
    let response: UpstreamResponse;
    try {
      response = await this.send(prepared, ctx);
    } catch (error) {
      await this.settleFailure(prepared, ctx, error);
      throw error;
    }
    return { model: prepared.model, headers: prepared.headers, events: this.relay(prepared, response, ctx) };
  }

  /** Upstream SSE ► parser ► provider decoder ► meter ► the ingress encoder (which pulls, so backpressure holds). */
  private async *relay(prepared: Prepared, response: UpstreamResponse, ctx: CallContext): AsyncGenerator<GatewayStreamEvent[], void, undefined> {
    const parser = new SseParser();
    const decoder = prepared.family.createStreamDecoder(prepared.request, prepared.provider, translation);
    let usage: Usage | undefined;
    let finish: StreamPart | undefined;
    let text = '';
    let toolText = '';
    let settled = false;
    // The answer as it streams, for the response cache (only when the call may be stored).
    const keep = prepared.cachePlan?.outcome === 'lookup';
    const toolCalls: ToolCall[] = [];
    const meter = (part: StreamPart): StreamPart | undefined => {
      switch (part.type) {
        case 'usage':
          usage = part.usage;
          return undefined;
        case 'finish':
          finish = part;
          return undefined;
        case 'text-delta':
          text += part.text;
          return part;
        case 'tool-call-start':
          toolText += part.name;
          if (keep) toolCalls[part.index] = { id: part.id, name: part.name, arguments: '' };
          return part;
        case 'tool-call-delta': {
          toolText += part.argumentsDelta;
          const call = keep ? toolCalls[part.index] : undefined;
          if (call) call.arguments += part.argumentsDelta;
          return part;
        }
      }
    };
    const billable = async (): Promise<Usage | undefined> => usage ?? (text || toolText ? estimateUsage(prepared.request, text, toolText) : undefined);

    try {
      let failure: GatewayError | undefined;
      // What the current upstream read produced; metered parts are relayed even when the read
      // goes on to fail (they are billed).
      let batch: GatewayStreamEvent[] = [];
      try {
        for await (const chunk of response.body as AsyncIterable<Buffer>) {
          for (const event of parser.push(chunk)) {
            for (const part of decoder.push(event)) {
              const out = meter(part);
              if (out) batch.push(out);
            }
          }
          const full = batch;
          batch = [];
          if (full.length > 0) yield full;
        }
        for (const event of parser.end()) for (const part of decoder.push(event)) if (meter(part)) batch.push(part);
        for (const part of decoder.end()) if (meter(part)) batch.push(part);
        const last = batch;
        batch = [];
        if (last.length > 0) yield last;
      } catch (error) {
        const classified = isGatewayError(error) ? error : classifyUpstreamError(prepared.provider.name, error, ctx.signal, 'the answer');
        if (classified instanceof CallAborted) return; // settled in finally, as a client abort
        failure = classified;
      }
      if (batch.length > 0) yield batch;
      if (failure) {
        settled = true;
        await this.settle(prepared, ctx, await billable(), failure.status, failure.reason);
        yield [{ type: 'error', error: failure }];
        return;
      }
      // The call is billed (journaled) before the client gets its last bytes.
      const final = await billable();
      settled = true;
      await this.settle(prepared, ctx, final, 200);
      const end: GatewayStreamEvent = finish ?? { type: 'finish', finishReason: 'stop' };
      if (keep && final && prepared.cachePlan) {
        const done = finish?.type === 'finish' ? finish : undefined;
        const answer = { text, toolCalls: toolCalls.filter((call) => call !== undefined), finishReason: done?.finishReason ?? 'stop', ...(done?.stopSequence !== undefined ? { stopSequence: done.stopSequence } : {}) };
        this.cache?.save(prepared.cachePlan, answer, final, prepared.model, ctx.requestId);
      }
      yield final ? [{ type: 'usage', usage: final }, end] : [end];
    } finally {
      if (!settled) {
        response.body.destroy();
        await this.settle(prepared, ctx, await billable(), 499, 'client_disconnected').catch((error: unknown) =>
          this.logger.error({ err: error, req_id: ctx.requestId }, 'could not settle an aborted call'),
        );
      }
    }
  }

  private async prepare(draft: ChatDraft, ctx: CallContext, model: ModelConfig, cachePlan: CachePlan | undefined): Promise<Prepared> {
    const provider = this.config.providers[model.provider] as ProviderConfig;
    if (!provider.apiKey && provider.apiKeyEnv) {
      throw new GatewayError({
        status: 503,
        type: 'service_unavailable',
        reason: 'provider_not_configured',
        message: `provider '${provider.name}' has no API key: set ${provider.apiKeyEnv} in the gateway's environment and restart it`,
      });
    }
    const family = PROVIDER_FAMILIES[provider.type as ChatProviderType];
    const fast = promptTokenBound(draft);
    const admission = await this.admitter.admit({
      requestId: ctx.requestId,
      accountId: ctx.accountId,
      apiKeyId: ctx.apiKeyId,
      rateLimit: ctx.rateLimit,
      model,
      promptTokens: fast,
      cacheWrites: mayWriteCache(draft),
      // Only near a wallet's or budget's limit (admission.ts); logged, so an operator (and the
      // benchmark) can see how often.
      promptEstimate: async () => {
        try {
          const tight = await promptTokenEstimate(draft, provider.tokenizer ? { ...family.promptTokenMargin, ...provider.tokenizer } : family.promptTokenMargin);
          this.logger.info({ req_id: ctx.requestId, model: model.id, fast, tight }, 'tight prompt bound');
          return tight;
        } catch (error) {
          // The tokenizer failed to load: the fast bound decides (a 402 rather than a 503).
          this.logger.error({ err: error, req_id: ctx.requestId }, 'could not compute the tight prompt bound');
          return fast;
        }
      },
      requestedMaxTokens: draft.maxTokens,
      maxTokensField: draft.maxTokensField ?? 'max_tokens',
    });
    this.inFlight.enter();
    const headers = rateHeaders(admission.rate);
    headers['x-gateway-model'] = model.id;
    if (cachePlan) headers['x-gateway-cache'] = cachePlan.outcome === 'bypass' ? 'bypass' : 'miss';
    // The draft becomes the request in place (hot path: no copy); the service owns the draft
    // it was given. Its ingress-only fields (ignoredParams, maxTokensField) ride along unread;
    // providers read the canonical fields only.
    const resolved = draft as Omit<ChatDraft, 'maxTokens'> & Pick<ChatRequest, 'upstreamModel' | 'maxTokens'>;
    resolved.model = model.id;
    resolved.upstreamModel = model.upstreamModel;
    resolved.maxTokens = admission.maxTokens;
    let request: ChatRequest = resolved;
    try {
      // After admission, so a refused call makes the gateway fetch nothing.
      if (!family.fetchesImageUrls) request = { ...request, messages: await inlineRemoteImages(request.messages, ctx.signal.toAbortSignal(), { outbound: this.config.outbound, logger: this.logger, requestId: ctx.requestId }) };
    } catch (error) {
      await this.settleFailure({ model, request, admission, cachePlan }, ctx, error);
      throw error;
    }
    const call = family.buildChatRequest(request, provider);
    // Extra fields of the ingress's own wire family mean nothing to another family.
    const foreign = request.passthrough && request.passthrough.family !== provider.type ? Object.keys(request.passthrough.fields) : undefined;
    if (draft.ignoredParams?.length || call.ignoredParams.length > 0 || foreign?.length) {
      const ignored = new Set([...(draft.ignoredParams ?? []), ...call.ignoredParams, ...(foreign ?? [])]);
      headers['x-gateway-ignored-params'] = [...ignored].join(', ');
    }
    return { model, provider, family, admission, headers, request, call, cachePlan };
  }

  /** A cache hit as one answer: admitted and billed at the hit's price (`cache.hit_price`). */
  private async completeFromCache(model: ModelConfig, hit: CacheHit, ctx: CallContext): Promise<ChatOutcome> {
    const served = await this.admitHit(model, hit, ctx, false);
    const { answer } = hit;
    const result: ChatResult = {
      text: answer.text,
      toolCalls: answer.toolCalls.map((call) => ({ id: translation.newToolCallId(), name: call.name, arguments: call.arguments })),
      finishReason: answer.finishReason,
      usage: answer.usage,
    };
    if (answer.stopSequence !== undefined) result.stopSequence = answer.stopSequence;
    const record = await this.settle(served, ctx, answer.usage, 200);
    served.headers['x-gateway-cost-inr'] = formatMicros(record.costMicros);
    return { result, usage: answer.usage, model, costMicros: record.costMicros, headers: served.headers };
  }

  /**
   * A cache hit replayed as a stream, in pieces of a few words as a provider sends them, then
   * usage and finish (billed before the last bytes, as any call). A client that leaves
   * before the end is not charged.
   */
  private async streamFromCache(model: ModelConfig, hit: CacheHit, ctx: CallContext): Promise<ChatStreamOutcome> {
    const served = await this.admitHit(model, hit, ctx, true);
    const self = this;
    const { answer } = hit;
    async function* replay(): AsyncGenerator<GatewayStreamEvent[], void, undefined> {
      let settled = false;
      try {
        for (const piece of pieces(answer.text)) yield [{ type: 'text-delta', text: piece }];
        for (const [index, call] of answer.toolCalls.entries()) {
          yield [{ type: 'tool-call-start', index, id: translation.newToolCallId(), name: call.name }];
          for (const piece of pieces(call.arguments)) yield [{ type: 'tool-call-delta', index, argumentsDelta: piece }];
        }
        settled = true;
        await self.settle(served, ctx, answer.usage, 200);
        const finish: StreamPart = answer.stopSequence !== undefined ? { type: 'finish', finishReason: answer.finishReason, stopSequence: answer.stopSequence } : { type: 'finish', finishReason: answer.finishReason };
        yield [{ type: 'usage', usage: answer.usage }, finish];
      } finally {
        if (!settled) {
          served.hit.metered.costMicros = 0;
          await self.settle(served, ctx, answer.usage, 499, 'client_disconnected').catch((error: unknown) =>
            self.logger.error({ err: error, req_id: ctx.requestId }, 'could not settle an aborted cache replay'),
          );
        }
      }
    }
    return { model, headers: served.headers, events: replay() };
  }

  /** Rate limit, key budget and wallet for a hit, with a hold of exactly its charge. */
  private async admitHit(model: ModelConfig, hit: CacheHit, ctx: CallContext, stream: boolean): Promise<Settleable & { hit: NonNullable<Settleable['hit']>; headers: Record<string, string> }> {
    const listMicros = costMicros(model.pricing, hit.answer.usage);
    const charge = Math.round(listMicros * (this.cache?.config.hitPrice ?? 0));
    const admission = await this.admitter.admitAmount({
      requestId: ctx.requestId,
      accountId: ctx.accountId,
      apiKeyId: ctx.apiKeyId,
      rateLimit: ctx.rateLimit,
      model,
      amountMicros: charge,
      what: 'a cached answer',
    });
    this.inFlight.enter();
    const headers = rateHeaders(admission.rate);
    headers['x-gateway-model'] = model.id;
    headers['x-gateway-cache'] = hit.tier;
    if (hit.similarity !== undefined) headers['x-gateway-cache-similarity'] = hit.similarity.toFixed(4);
    const record: CacheRecord = { outcome: hit.tier, savedMicros: listMicros - charge };
    if (hit.similarity !== undefined) record.similarity = hit.similarity;
    const usage = hit.answer.usage;
    return { model, request: { stream }, admission, headers, hit: { record, metered: { unit: 'tokens', quantity: usage.inputTokens + usage.outputTokens, costMicros: charge } } };
  }

  /** Sends the upstream request; a non-2xx answer becomes the normalized error. */
  private async send(prepared: Prepared, ctx: CallContext): Promise<UpstreamResponse> {
    return acceptOrThrow(prepared.provider, await this.upstream.send(prepared.provider, prepared.call, ctx.signal), prepared.family.errorMessage);
  }

  private async settle(prepared: Settleable, ctx: CallContext, usage: Usage | undefined, status: number, errorType?: string) {
    try {
      return await this.settleCall(prepared, ctx, usage, status, errorType);
    } finally {
      this.inFlight.leave();
    }
  }

  private settleCall(prepared: Settleable, ctx: CallContext, usage: Usage | undefined, status: number, errorType?: string) {
    return this.settlement.settle({
      requestId: ctx.requestId,
      accountId: ctx.accountId,
      apiKeyId: ctx.apiKeyId,
      model: prepared.model,
      endpoint: ctx.endpoint,
      stream: prepared.request.stream,
      usage,
      metered: prepared.hit?.metered,
      status,
      errorType,
      startedAt: ctx.startedAt,
      hold: prepared.admission.hold,
      cache: prepared.hit ? prepared.hit.record : prepared.cachePlan ? { outcome: prepared.cachePlan.outcome === 'bypass' ? 'bypass' : 'miss' } : undefined,
    });
  }

  /** A call that failed before producing anything: a usage row, no charge, the hold released. */
  private async settleFailure(prepared: Settleable, ctx: CallContext, error: unknown): Promise<void> {
    const aborted = error instanceof CallAborted;
    const status = aborted ? 499 : isGatewayError(error) ? error.status : 500;
    const code = aborted ? 'client_disconnected' : isGatewayError(error) ? error.reason : 'internal_error';
    try {
      await this.settle(prepared, ctx, undefined, status, code);
    } catch (settleError) {
      this.logger.error({ err: settleError, req_id: ctx.requestId }, 'could not settle a failed call');
    }
  }
}

/** Billing counts for a call the upstream reported no usage for. */
async function estimateUsage(request: ChatRequest, text: string, toolText: string): Promise<Usage> {
  return {
    inputTokens: await countPromptTokens(request),
    outputTokens: (await countTextTokens(text)) + (await countTextTokens(toolText)),
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
  };
}

/** A cached text in the pieces a replayed stream sends: about four words each (a provider sends a token or a few). */
function* pieces(text: string): Generator<string> {
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + 20);
    if (end < text.length) {
      const space = text.indexOf(' ', end);
      end = space === -1 || space - start > 40 ? end : space;
    }
    // Never split a surrogate pair.
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1] ?? '')) end += 1;
    yield text.slice(start, end);
    start = end;
  }
}
