import type { Logger } from 'pino';
import type { ModelConfig } from '../../config/types.js';
import type { TranslationContext } from '../../providers/types.js';
import type { ChatResult, GatewayStreamEvent, StreamPart, Usage } from '../canonical.js';
import type { CacheHit, ResponseCache } from '../cache/response-cache.js';
import type { GatewayError } from '../errors.js';
import { formatMicros } from '../money.js';
import { costMicros } from '../pricing.js';
import type { Admission, Admitter } from './admission.js';
import { rateHeaders } from './refusals.js';
import { cancellable, type CallContext, type ChatStreamOutcome } from './call.js';
import type { CallPipeline } from './pipeline.js';
import type { CacheRecord, Metered, SettledCall } from './settlement.js';

/** A hit, admitted: its hold, headers and charge. */
interface AdmittedHit {
  admission: Admission;
  headers: Record<string, string>;
  record: CacheRecord;
  metered: Metered;
}

/**
 * Chat calls the response cache answers: no upstream, no routing; admitted (rate limit,
 * budget, wallet) with a hold of exactly the hit's charge (`cache.hit_price` of its list
 * price) and settled once, as any call.
 */
export class ChatCacheHits {
  constructor(
    private readonly admitter: Admitter,
    private readonly pipeline: CallPipeline,
    private readonly logger: Logger,
    private readonly translation: TranslationContext,
    private readonly cache: ResponseCache | undefined,
  ) {}

  /** A cache hit as one answer. */
  async complete(model: ModelConfig, hit: CacheHit, ctx: CallContext): Promise<{ result: ChatResult; usage: Usage; model: ModelConfig; costMicros: number; headers: Record<string, string> }> {
    const served = await this.admit(model, hit, ctx);
    const { answer } = hit;
    const result: ChatResult = {
      text: answer.text,
      toolCalls: answer.toolCalls.map((call) => ({ id: this.translation.newToolCallId(), name: call.name, arguments: call.arguments })),
      finishReason: answer.finishReason,
      usage: answer.usage,
    };
    if (answer.stopSequence !== undefined) result.stopSequence = answer.stopSequence;
    const record = await this.settle(model, served, ctx, answer.usage, false, 200);
    served.headers['x-gateway-cost-inr'] = formatMicros(record.costMicros);
    return { result, usage: answer.usage, model, costMicros: record.costMicros, headers: served.headers };
  }

  /**
   * A cache hit replayed as a stream, in pieces of a few words as a provider sends them, then
   * usage and finish (billed before the last bytes, as any call). A client that leaves
   * before the end is not charged.
   */
  async stream(model: ModelConfig, hit: CacheHit, ctx: CallContext): Promise<ChatStreamOutcome> {
    const served = await this.admit(model, hit, ctx);
    const { answer } = hit;
    const translation = this.translation;
    const self = this;
    async function* replay(started: () => void): AsyncGenerator<GatewayStreamEvent[], void, undefined> {
      started();
      let settled = false;
      try {
        for (const piece of pieces(answer.text)) yield [{ type: 'text-delta', text: piece }];
        for (const [index, call] of answer.toolCalls.entries()) {
          yield [{ type: 'tool-call-start', index, id: translation.newToolCallId(), name: call.name }];
          for (const piece of pieces(call.arguments)) yield [{ type: 'tool-call-delta', index, argumentsDelta: piece }];
        }
        settled = true;
        await self.settle(model, served, ctx, answer.usage, true, 200);
        const finish: StreamPart = answer.stopSequence !== undefined ? { type: 'finish', finishReason: answer.finishReason, stopSequence: answer.stopSequence } : { type: 'finish', finishReason: answer.finishReason };
        yield [{ type: 'usage', usage: answer.usage }, finish];
      } finally {
        if (!settled) {
          served.metered.costMicros = 0;
          await self.settle(model, served, ctx, answer.usage, true, 499, 'client_disconnected').catch((error: unknown) =>
            self.logger.error({ err: error, req_id: ctx.requestId }, 'could not settle an aborted cache replay'),
          );
        }
      }
    }
    const promptUsage: Usage = { ...answer.usage, outputTokens: 0, reasoningTokens: 0 };
    const unread = async (failure: GatewayError): Promise<void> => {
      served.metered.costMicros = 0;
      await self.settle(model, served, ctx, answer.usage, true, failure.status, failure.reason);
    };
    return { model, headers: served.headers, ...cancellable(replay, unread), promptUsage, estimatePrompt: () => Promise.resolve(promptUsage), native: false };
  }

  /** Rate limit, key budget and wallet for a hit, with a hold of exactly its charge. */
  private async admit(model: ModelConfig, hit: CacheHit, ctx: CallContext): Promise<AdmittedHit> {
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
    this.pipeline.enterAlone();
    const headers = rateHeaders(admission.rate);
    headers['x-gateway-model'] = model.id;
    headers['x-gateway-attempts'] = '0';
    headers['x-gateway-cache'] = hit.tier;
    if (hit.similarity !== undefined) headers['x-gateway-cache-similarity'] = hit.similarity.toFixed(4);
    const record: CacheRecord = { outcome: hit.tier, savedMicros: listMicros - charge };
    if (hit.similarity !== undefined) record.similarity = hit.similarity;
    const usage = hit.answer.usage;
    return { admission, headers, record, metered: { unit: 'tokens', quantity: usage.inputTokens + usage.outputTokens, costMicros: charge } };
  }

  private settle(model: ModelConfig, hit: AdmittedHit, ctx: CallContext, usage: Usage, stream: boolean, status: number, errorType?: string): Promise<SettledCall> {
    return this.pipeline.settleAlone({
      requestId: ctx.requestId,
      accountId: ctx.accountId,
      apiKeyId: ctx.apiKeyId,
      model,
      attempts: 0,
      endpoint: ctx.endpoint,
      stream,
      usage,
      metered: hit.metered,
      status,
      errorType,
      startedAt: ctx.startedAt,
      hold: hit.admission.hold,
      cache: hit.record,
      requestedModel: ctx.requestedModel,
      observation: ctx.observation,
    });
  }
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
