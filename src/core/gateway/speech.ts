import type { Logger } from 'pino';
import type { GatewayConfig, ProviderConfig } from '../../config/types.js';
import { upstreamMalformed } from '../../providers/shared/errors.js';
import { classifyUpstreamError, type UpstreamClient, type UpstreamResponse } from '../../providers/shared/upstream.js';
import type { Catalog } from '../catalog.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { SPEECH_CONTENT_TYPES, type SpeechRequest } from '../media.js';
import { speechCostMicros } from '../pricing.js';
import type { Admitter } from './admission.js';
import type { CallContext, Routed } from './call.js';
import { fallbackNames } from './chain.js';
import { admitFixed, familyOf, nothing, sendMedia } from './media-calls.js';
import { checkSpeech } from './media-rules.js';
import { addIgnoredParams, optional, type SpeechDraft, type SpeechOutcome } from './media-types.js';
import type { CallPipeline } from './pipeline.js';
import type { Metered } from './settlement.js';

/** After a client leaves a speech stream, how long the rest of the audio is read to measure the share it took. */
const SPEECH_DRAIN_MS = 60_000;

/** Audio held until its first bytes: the rest is relayed as it comes. */
interface HeldAudio {
  response: UpstreamResponse;
  chunks: AsyncIterator<Buffer>;
  first: Buffer;
  /** Characters billed for the whole audio (the upstream's count when it states one, at most the input's). */
  characters: number;
  ignored: string[];
}

/**
 * Text to speech: the audio is held until its first bytes (an upstream that fails before is
 * retried, or falls back, invisibly), then relayed as the upstream produces it, never
 * buffered whole, and billed per character once it ends; a client that leaves mid-audio
 * pays the share of the audio it was sent.
 */
export class SpeechCalls {
  /** Abandoned speech calls reading the rest of their audio; stopped at shutdown. */
  private readonly drains = new Set<() => void>();
  private stopping = false;

  constructor(
    private readonly config: GatewayConfig,
    private readonly catalog: Catalog,
    private readonly admitter: Admitter,
    private readonly pipeline: CallPipeline,
    private readonly upstream: UpstreamClient,
    private readonly logger: Logger,
  ) {}

  /**
   * At shutdown: speech calls whose client left stop reading the rest of their audio now and
   * settle with what was read (they would otherwise hold shutdown up to SPEECH_DRAIN_MS).
   */
  stopDrains(): void {
    this.stopping = true;
    for (const stop of [...this.drains]) stop();
  }

  async speech(draft: SpeechDraft, ctx: CallContext): Promise<SpeechOutcome> {
    const model = this.catalog.resolve(draft.model, 'speech');
    const chain = this.pipeline.chain(model, 'speech', fallbackNames({}, ctx), ctx);
    const routed = await this.pipeline.route(
      {
        type: 'speech',
        // Once audio flows, a client that leaves stops the relay but not the upstream read,
        // which goes on (bounded) to measure the share it took.
        detach: true,
        plan: (candidate) => {
          // The voices every deployment takes: OpenAI's newer ones only where all are OpenAI's.
          const types = candidate.deployments.map((deployment) => (this.config.providers[deployment.provider] as ProviderConfig).type);
          const type = types.find((each) => each !== 'openai') ?? 'openai';
          return checkSpeech(candidate, type, candidate.speech ?? { formats: [draft.format], speedMin: 0.25, speedMax: 4, instructions: false }, draft);
        },
        admit: (candidate, characters, first) => admitFixed(this.admitter, candidate, ctx, speechCostMicros(candidate.pricing, characters), `${characters} characters of speech`, first),
        attempt: async (target, characters, _admission, signal): Promise<HeldAudio> => {
          const family = familyOf(target);
          const adapter = family.speech as NonNullable<typeof family.speech>;
          const request: SpeechRequest = { model: target.model.id, upstreamModel: target.deployment.upstreamModel, input: draft.input, voice: draft.voice, format: draft.format, ...optional(draft, ['speed', 'instructions']) };
          const call = adapter.build(request, target.provider);
          const response = await sendMedia(this.upstream, target, family, call, signal);
          const chunks = (response.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
          let first: IteratorResult<Buffer>;
          try {
            first = await chunks.next();
          } catch (error) {
            response.body.destroy();
            throw isGatewayError(error) ? error : classifyUpstreamError(target.provider.name, error, signal, 'the audio');
          }
          // A 200 without audio is the upstream's fault: not charged, tried elsewhere.
          if (first.done) throw upstreamMalformed(target.provider.name, 'no audio');
          const billed = Math.min(characters, adapter.billedCharacters?.(response.headers) ?? characters);
          return { response, chunks, first: first.value, characters: billed, ignored: call.ignoredParams };
        },
      },
      ctx,
      chain,
    );
    addIgnoredParams(routed.headers, routed.answer.ignored);
    return { model: routed.model, headers: routed.headers, contentType: SPEECH_CONTENT_TYPES[draft.format], audio: this.relay(routed, ctx) };
  }

  private async *relay(routed: Routed<number, HeldAudio>, ctx: CallContext): AsyncGenerator<Buffer, void, undefined> {
    const { response, chunks, first, characters } = routed.answer;
    const model = routed.model;
    // Bytes the client was sent (a chunk counts once the consumer comes back for the next:
    // it wrote it), and bytes read from the upstream.
    let delivered = 0;
    let read = first.length;
    let settled = false;
    const bill = (chars: number): Metered => ({ unit: 'characters', quantity: chars, costMicros: speechCostMicros(model.pricing, chars) });
    try {
      yield first;
      delivered += first.length;
      // The rest of the audio is the upstream's time (metrics: not the gateway's overhead).
      ctx.observation?.upstreamOpen(performance.now());
      try {
        // Read through one iterator, never left with `break`: leaving a for-await would destroy
        // the body, and an aborted call reads the rest of it to measure the share the client took.
        for (;;) {
          const next = await chunks.next();
          if (next.done) break;
          read += next.value.length;
          yield next.value;
          delivered += next.value.length;
        }
        ctx.observation?.upstreamClose(performance.now());
      } catch (error) {
        if (ctx.signal.aborted) return; // settled in finally, as a client abort
        // The upstream broke mid-audio: its fault, not charged; the client's response is cut.
        const failure = isGatewayError(error) ? error : classifyUpstreamError(routed.target.provider.name, error, ctx.signal, 'the rest of the audio');
        settled = true;
        const status = failure instanceof GatewayError ? failure.status : 502;
        await this.pipeline.settle(routed, ctx, { metered: nothing(model), status, errorType: failure instanceof GatewayError ? failure.reason : 'upstream_error', stream: true, failure: failure instanceof GatewayError ? failure : undefined });
        throw failure;
      }
      settled = true;
      // Billed (journaled) before the client's response ends.
      await this.pipeline.settle(routed, ctx, { metered: bill(characters), status: 200, stream: true });
    } finally {
      if (!settled) {
        // The client left mid-audio: it pays the share of the characters it was sent, measured
        // against the whole audio (the rest is read, for at most SPEECH_DRAIN_MS or until the
        // daemon stops, and dropped; if it could not be read whole, against what was read).
        let share = 0;
        if (delivered > 0) {
          const rest = await this.drainCount(response, chunks);
          share = Math.ceil((characters * delivered) / (read + rest.bytes));
          if (!rest.complete) this.logger.warn({ req_id: ctx.requestId, delivered, read: read + rest.bytes }, 'could not read the rest of an abandoned speech call: billed the share of what was read');
        } else response.body.destroy();
        await this.pipeline.settle(routed, ctx, { metered: bill(share), status: 499, errorType: 'client_disconnected', stream: true }).catch((error: unknown) =>
          this.logger.error({ err: error, req_id: ctx.requestId }, 'could not settle an aborted speech call'),
        );
      }
    }
  }

  /** Reads and drops the rest of a body for at most SPEECH_DRAIN_MS (less at shutdown), then destroys it. */
  private async drainCount(response: UpstreamResponse, chunks: AsyncIterator<Buffer>): Promise<{ bytes: number; complete: boolean }> {
    let bytes = 0;
    let complete = false;
    const stop = (): void => {
      response.body.destroy();
    };
    if (this.stopping) stop();
    this.drains.add(stop);
    const timer = setTimeout(stop, SPEECH_DRAIN_MS);
    try {
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) bytes += next.value.length;
      complete = true;
    } catch {
      // Cut by the timer, the shutdown or the upstream: what was read is the measure.
    } finally {
      clearTimeout(timer);
      this.drains.delete(stop);
      response.body.destroy();
    }
    return { bytes, complete };
  }
}
