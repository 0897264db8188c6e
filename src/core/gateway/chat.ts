import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChatProviderType, GatewayConfig } from '../../config/types.js';
import { chatFamily } from '../../providers/registry.js';
import { upstreamMalformed } from '../../providers/shared/errors.js';
import { classifyUpstreamError, type UpstreamClient } from '../../providers/shared/upstream.js';
import type { TranslationContext, UpstreamRequest } from '../../providers/types.js';
import type { CallSignal } from '../abort.js';
import type { ChatDraft } from '../call-context.js';
import { emptyUsage, type ChatRequest, type ChatResult, type GatewayStreamEvent, type Usage } from '../canonical.js';
import type { Catalog } from '../catalog.js';
import { CallAborted, type GatewayError } from '../errors.js';
import { formatMicros } from '../money.js';
import { mayWriteCache } from '../pricing.js';
import type { PromptTokenMargin } from '../tokens.js';
import { countPromptTokens, countTextTokens, promptTokenBound, promptTokenEstimate } from '../tokens.js';
import type { CachePlan, ResponseCache } from '../cache/response-cache.js';
import type { Admission, Admitter } from './admission.js';
import { cancellable, type CallContext, type CallKind, type ChatOutcome, type ChatStreamOutcome, type Routed, type Target } from './call.js';
import { ChatCacheHits } from './chat-cache-hits.js';
import { holdStream, readStream, type HeldStream } from './chat-stream.js';
import { inlineRemoteImages } from './images.js';
import { fallbackNames } from './chain.js';
import { modelPromptMargin } from './margin.js';
import type { CallPipeline } from './pipeline.js';
import { acceptOrThrow } from './upstream-call.js';
import { contentAttribute } from '../telemetry/telemetry.js';

export type { CallContext, ChatOutcome, ChatStreamOutcome } from './call.js';
export type { ChatDraft } from '../call-context.js';

/** What a chat attempt needs of its model: the prompt-token margin of the families it is served by. */
interface ChatPlan {
  margin: PromptTokenMargin;
}

/** A JSON answer, and the upstream request that got it (its ignored parameters). */
interface ChatAnswer {
  result: ChatResult;
  call: UpstreamRequest;
}

interface StreamAnswer {
  held: HeldStream;
  call: UpstreamRequest;
}

const translation: TranslationContext = { newToolCallId: () => `call_${randomBytes(12).toString('base64url')}` };

/**
 * The chat calls of every ingress format: the response cache's stage (a hit is answered
 * without an upstream), then the call pipeline (routing, admission, attempts) with the chat
 * attempt below, then the relay (JSON, or a stream held until its first content) and one
 * settlement at the model that served. `complete` and `stream` take ownership of the draft
 * they are given: it becomes the call's request.
 */
export class ChatService {
  private readonly hits: ChatCacheHits;

  constructor(
    private readonly config: GatewayConfig,
    private readonly catalog: Catalog,
    private readonly admitter: Admitter,
    private readonly pipeline: CallPipeline,
    private readonly upstream: UpstreamClient,
    private readonly logger: Logger,
    private readonly cache?: ResponseCache,
  ) {
    this.hits = new ChatCacheHits(admitter, pipeline, logger, translation, cache);
  }

  /** Resolves once every admitted call has settled, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    return this.pipeline.settled(timeoutMs);
  }

  async complete(draft: ChatDraft, ctx: CallContext): Promise<ChatOutcome> {
    const model = this.catalog.resolve(draft.model, 'chat');
    const chain = this.pipeline.chain(model, 'chat', fallbackNames(draft, ctx), ctx);
    const plan = this.cache?.plan(draft, model, ctx, draft.noCache === true);
    const hit = plan && this.cache ? await this.cache.lookup(plan, ctx) : undefined;
    if (hit) return this.hits.complete(model, hit, ctx);
    if (draft.stream) draft = { ...draft, stream: false };
    traceRequest(ctx, draft, this.pipeline.telemetry.capturesContent);
    const routed = await this.pipeline.route(this.kind(draft, ctx, false, plan), ctx, chain);
    const { result, call } = routed.answer;
    if (ctx.observation?.span?.isRecording()) {
      ctx.observation.response = { id: result.id, finishReasons: [result.finishReason] };
      if (this.pipeline.telemetry.capturesContent) ctx.observation.response.output = contentAttribute([{ role: 'assistant', parts: [{ type: 'text', content: result.text }], finish_reason: result.finishReason }]);
    }
    const request = draft as unknown as ChatRequest;
    let usage: Usage;
    try {
      usage = result.usage ?? (await estimateUsage(request, result.text, result.toolCalls.map((c) => c.name + c.arguments).join('')));
    } catch (error) {
      await this.pipeline.settle(routed, ctx, { status: 500, errorType: 'internal_error', stream: false, cache: cacheRecord(plan) });
      throw error;
    }
    const record = await this.pipeline.settle(routed, ctx, { usage, status: 200, stream: false, cache: cacheRecord(plan) });
    const headers = this.headers(routed, draft, call, plan);
    headers['x-gateway-cost-inr'] = formatMicros(record.costMicros);
    // Kept only when the model asked for answered: a fallback's answer is not that model's.
    // A native answer (the upstream's own object) is not kept: the canonical encoders could not replay it.
    if (plan && routed.model === model && !result.native) this.cache?.save(plan, result, usage, model, ctx.requestId);
    return { result, usage, model: routed.model, costMicros: record.costMicros, headers };
  }

  async stream(draft: ChatDraft, ctx: CallContext): Promise<ChatStreamOutcome> {
    const model = this.catalog.resolve(draft.model, 'chat');
    const chain = this.pipeline.chain(model, 'chat', fallbackNames(draft, ctx), ctx);
    const plan = this.cache?.plan(draft, model, ctx, draft.noCache === true);
    const hit = plan && this.cache ? await this.cache.lookup(plan, ctx) : undefined;
    if (hit) return this.hits.stream(model, hit, ctx);
    if (!draft.stream) draft = { ...draft, stream: true };
    traceRequest(ctx, draft, this.pipeline.telemetry.capturesContent);
    const routed = await this.pipeline.route(this.kind(draft, ctx, true, plan), ctx, chain);
    // The attempt that answered held the stream until its first content.
    this.pipeline.telemetry.firstToken(ctx.observation, routed.model.id, performance.now());
    const headers = this.headers(routed, draft, routed.answer.call, plan);
    const native = routed.answer.call.native === true;
    const keep = plan?.outcome === 'lookup' && routed.model === model && !native ? plan : undefined;
    const request = draft as unknown as ChatRequest;
    const outcome: ChatStreamOutcome = {
      model: routed.model,
      headers,
      ...cancellable(
        (started) => this.relay(routed, request, ctx, plan, keep, started),
        async (failure) => {
          routed.answer.held.response.body.destroy();
          await this.pipeline.settle(routed, ctx, { usage: undefined, status: failure.status, errorType: failure.reason, stream: true, cache: cacheRecord(plan), failure });
        },
      ),
      estimatePrompt: () => estimatePrompt(request, this.logger, ctx.requestId),
      native,
    };
    const promptUsage = routed.answer.held.meter.promptUsage;
    if (promptUsage) outcome.promptUsage = promptUsage;
    return outcome;
  }

  /** The rest of a held stream ► the ingress encoder (which pulls, so backpressure holds), then one settlement. */
  private async *relay(routed: Routed<ChatPlan, StreamAnswer>, request: ChatRequest, ctx: CallContext, plan: CachePlan | undefined, keep: CachePlan | undefined, started: () => void): AsyncGenerator<GatewayStreamEvent[], void, undefined> {
    started();
    const { held } = routed.answer;
    const meter = held.meter;
    const billable = async (): Promise<Usage | undefined> => meter.usage ?? (meter.text || meter.toolText || meter.reasoningText ? estimateUsage(request, meter.text + meter.reasoningText, meter.toolText) : undefined);
    let settled = false;
    try {
      const outcome: { failure?: GatewayError } = {};
      // The rest of the stream is the upstream's time (the client's reading included), not the gateway's.
      const observation = ctx.observation;
      observation?.upstreamOpen(performance.now());
      try {
        for await (const batch of readStream(held, routed.signal, outcome)) yield batch;
      } catch (error) {
        if (error instanceof CallAborted) return; // settled in finally, as a client abort
        throw error;
      } finally {
        observation?.upstreamClose(performance.now());
      }
      if (observation?.span?.isRecording() && meter.finish?.type === 'finish') {
        const id = held.decoder.responseId;
        observation.response = id === undefined ? { finishReasons: [meter.finish.finishReason] } : { id, finishReasons: [meter.finish.finishReason] };
        if (this.pipeline.telemetry.capturesContent) observation.response.output = contentAttribute([{ role: 'assistant', parts: [{ type: 'text', content: meter.text }], finish_reason: meter.finish.finishReason }]);
      }
      const failure = outcome.failure;
      if (failure) {
        // After the first byte nothing switches: the stream ends with the format's error event,
        // billed for what was delivered.
        settled = true;
        await this.pipeline.settle(routed, ctx, { usage: await billable(), status: failure.status, errorType: failure.reason, stream: true, cache: cacheRecord(plan), failure });
        yield [{ type: 'error', error: failure }];
        return;
      }
      // The call is billed (journaled) before the client gets its last bytes.
      const final = await billable();
      settled = true;
      await this.pipeline.settle(routed, ctx, { usage: final, status: 200, stream: true, cache: cacheRecord(plan) });
      const end: GatewayStreamEvent = meter.finish ?? { type: 'finish', finishReason: 'stop' };
      if (keep && final) {
        const done = meter.finish?.type === 'finish' ? meter.finish : undefined;
        const answer = { text: meter.text, toolCalls: meter.toolCalls.filter((call) => call !== undefined), finishReason: done?.finishReason ?? 'stop', ...(done?.stopSequence !== undefined ? { stopSequence: done.stopSequence } : {}) };
        this.cache?.save(keep, answer, final, routed.model, ctx.requestId);
      }
      yield final ? [{ type: 'usage', usage: final }, end] : [end];
    } finally {
      if (!settled) {
        held.response.body.destroy();
        await this.pipeline.settle(routed, ctx, { usage: await billable(), status: 499, errorType: 'client_disconnected', stream: true, cache: cacheRecord(plan) }).catch((error: unknown) =>
          this.logger.error({ err: error, req_id: ctx.requestId }, 'could not settle an aborted call'),
        );
      }
    }
  }

  /** The chat kind of call for the pipeline: the draft becomes the request, sent to each deployment tried. */
  private kind(draft: ChatDraft, ctx: CallContext, stream: true, plan: CachePlan | undefined): CallKind<ChatPlan, StreamAnswer>;
  private kind(draft: ChatDraft, ctx: CallContext, stream: false, plan: CachePlan | undefined): CallKind<ChatPlan, ChatAnswer>;
  private kind(draft: ChatDraft, ctx: CallContext, stream: boolean, plan: CachePlan | undefined): CallKind<ChatPlan, ChatAnswer | StreamAnswer> {
    // A body that may go natively holds for what only the upstream reads, too (hosted tools, encrypted reasoning).
    const fast = promptTokenBound(draft) + (draft.native?.extraBytes ?? 0);
    const cacheWrites = mayWriteCache(draft);
    const requested = draft.maxTokens;
    // The draft becomes the request in place (hot path: no copy); the service owns the draft
    // it was given. Its ingress-only fields (ignoredParams, maxTokensField) ride along unread;
    // providers read the canonical fields only.
    const request = draft as unknown as ChatRequest;
    let inlined = false;
    const keep = plan?.outcome === 'lookup';
    return {
      type: 'chat',
      cache: cacheRecord(plan),
      plan: (model) => ({ margin: modelPromptMargin(this.config, model) }),
      admit: (model, chatPlan, first) =>
        this.admitter.admit({
          requestId: ctx.requestId,
          accountId: ctx.accountId,
          apiKeyId: ctx.apiKeyId,
          rateLimit: ctx.rateLimit,
          ...(ctx.tpmLimit !== undefined ? { tpmLimit: ctx.tpmLimit } : {}),
          model,
          promptTokens: fast,
          cacheWrites,
          unmetered: !first,
          // Only near a wallet's or budget's limit (admission.ts); logged, so an operator (and
          // the benchmark) can see how often.
          promptEstimate: async () => {
            try {
              const tight = (await promptTokenEstimate(draft, chatPlan.margin)) + (draft.native?.extraBytes ?? 0);
              this.logger.info({ req_id: ctx.requestId, model: model.id, fast, tight }, 'tight prompt bound');
              return tight;
            } catch (error) {
              // The tokenizer failed to load: the fast bound decides (a 402 rather than a 503).
              this.logger.error({ err: error, req_id: ctx.requestId }, 'could not compute the tight prompt bound');
              return fast;
            }
          },
          requestedMaxTokens: requested,
          maxTokensField: draft.maxTokensField ?? 'max_tokens',
          clampMaxTokens: draft.clampMaxTokens === true || this.config.routing.clampMaxTokens,
        }),
      attempt: async (target: Target, _plan: ChatPlan, admission: Admission, signal: CallSignal) => {
        const family = chatFamily(target.provider, target.deployment.upstreamModel);
        request.model = target.model.id;
        request.upstreamModel = target.deployment.upstreamModel;
        request.maxTokens = admission.maxTokens;
        // Before the first attempt on a family that cannot fetch image URLs (after admission, so
        // a refused call makes the gateway fetch nothing); once inlined, every family takes them.
        if (!family.fetchesImageUrls && !inlined) {
          request.messages = await inlineRemoteImages(request.messages, ctx.signal.toAbortSignal(), { outbound: this.config.outbound, logger: this.logger, requestId: ctx.requestId });
          inlined = true;
        }
        const call = family.buildChatRequest(request, target.provider);
        const response = await acceptOrThrow(target.provider, await this.upstream.send(target.provider, call, signal, target.traceHeaders), family.errorMessage);
        if (stream) return { held: await holdStream(response, family, request, target.provider, translation, keep, signal), call };
        let text: string;
        try {
          text = await response.body.text();
        } catch (error) {
          throw classifyUpstreamError(target.provider.name, error, signal, 'the answer');
        }
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw upstreamMalformed(target.provider.name, 'a response that is not JSON');
        }
        return { result: family.parseChatResponse(json, request, translation), call };
      },
    };
  }

  /** The routed call's headers, the response cache's outcome and the parameters the serving upstream could not take. */
  private headers(routed: Routed<ChatPlan, unknown>, draft: ChatDraft, call: UpstreamRequest, plan: CachePlan | undefined): Record<string, string> {
    const headers = routed.headers;
    if (plan) headers['x-gateway-cache'] = plan.outcome === 'bypass' ? 'bypass' : 'miss';
    // The output limit asked for, lowered to the serving model's (admission.ts).
    const clamped = routed.admission.clampedFrom;
    if (clamped !== undefined) headers['x-gateway-max-tokens-clamped'] = `${clamped}->${routed.admission.maxTokens}`;
    // Extra fields of the ingress's own wire family mean nothing to another family.
    // A native call (the client's own body to an upstream of its format) drops and ignores nothing.
    if (call.native) return headers;
    if (draft.droppedTools?.length) headers['x-gateway-dropped-tools'] = draft.droppedTools.join(', ');
    const request = draft as unknown as ChatRequest;
    const foreign = request.passthrough && request.passthrough.family !== routed.target.provider.type ? Object.keys(request.passthrough.fields) : undefined;
    if (draft.ignoredParams?.length || call.ignoredParams.length > 0 || foreign?.length) {
      const ignored = new Set([...(draft.ignoredParams ?? []), ...call.ignoredParams, ...(foreign ?? [])]);
      // Field names the client chose: only those a header can carry are named.
      headers['x-gateway-ignored-params'] = [...ignored].filter((name) => /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(name) && name.length <= 128).join(', ');
    }
    return headers;
  }
}

/** The GenAI request attributes of the call's attempt spans (traced requests only). */
function traceRequest(ctx: CallContext, draft: ChatDraft, captureContent: boolean): void {
  const observation = ctx.observation;
  // A trace not sampled records nothing: no work for its attributes.
  if (!observation?.span?.isRecording()) return;
  observation.request = { maxTokens: draft.maxTokens, temperature: draft.temperature };
  if (captureContent) observation.request.input = contentAttribute(draft.messages);
}

function cacheRecord(plan: CachePlan | undefined): { outcome: 'bypass' | 'miss' } | undefined {
  return plan ? { outcome: plan.outcome === 'bypass' ? 'bypass' : 'miss' } : undefined;
}

/**
 * The prompt's usage for a format that states it before the first content, when the upstream
 * did not (only Claude does): the gateway's count. If the tokenizer cannot load, a quarter
 * of the byte bound (prose's ratio) stands in: the stream must not fail for a figure.
 */
async function estimatePrompt(request: ChatRequest, logger: Logger, requestId: string): Promise<Usage> {
  try {
    return { ...emptyUsage(), inputTokens: await countPromptTokens(request) };
  } catch (error) {
    logger.error({ err: error, req_id: requestId }, 'could not count the prompt for message_start');
    return { ...emptyUsage(), inputTokens: Math.ceil(promptTokenBound(request) / 4) };
  }
}

/** Billing counts for a call the upstream reported no usage for. */
export async function estimateUsage(request: ChatRequest, text: string, toolText: string): Promise<Usage> {
  return {
    inputTokens: await countPromptTokens(request),
    outputTokens: (await countTextTokens(text)) + (await countTextTokens(toolText)),
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
  };
}
