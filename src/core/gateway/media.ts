import type { Logger } from 'pino';
import type { GatewayConfig, ModelConfig } from '../../config/types.js';
import { upstreamMalformed } from '../../providers/shared/errors.js';
import type { UpstreamClient } from '../../providers/shared/upstream.js';
import type { UpstreamRequest } from '../../providers/types.js';
import { AUDIO_TYPES, extensionOf, probeAudio } from '../audio.js';
import type { Catalog } from '../catalog.js';
import { errors, GatewayError } from '../errors.js';
import type { EmbeddingInput, EmbeddingResult, ImageRequest, ImageResult, TranscriptionRequest, TranscriptionResult } from '../media.js';
import { formatMicros } from '../money.js';
import { billedSeconds, costMicros, imagePriceMicros, transcriptionCostMicros, worstCaseMicros } from '../pricing.js';
import { countTextTokens } from '../tokens.js';
import type { Admitter } from './admission.js';
import type { CallContext } from './call.js';
import { fallbackNames } from './chain.js';
import type { HostedImages } from './hosted-images.js';
import { admitFixed, familyOf, jsonAnswer, readAnswer, sendMedia } from './media-calls.js';
import { checkEmbedding, checkImage, checkTranscription, type ImageChoice } from './media-rules.js';
import { addIgnoredCalls, optional, type EmbeddingDraft, type EmbeddingOutcome, type ImageDraft, type ImageOutcome, type SpeechDraft, type SpeechOutcome, type TranscriptionDraft, type TranscriptionOutcome } from './media-types.js';
import type { CallPipeline } from './pipeline.js';
import { SpeechCalls } from './speech.js';

export { addIgnoredParams } from './media-types.js';
export type { EmbeddingDraft, EmbeddingOutcome, ImageDraft, ImageOutcome, SpeechDraft, SpeechOutcome, TranscriptionDraft, TranscriptionOutcome } from './media-types.js';

/** The default image model when a request names none (the spec's). */
export const DEFAULT_IMAGE_MODEL = 'openai/dall-e-3';

/** 6 kb/s: Opus's lowest bitrate, the least bytes a second of speech can take (the hold of audio of unknown duration). */
const LOWEST_AUDIO_BYTES_PER_SECOND = 750;
/** Per embedding input, for the hold: a tokenizer's begin/end markers. */
const EMBEDDING_TOKENS_PER_INPUT = 4;

/**
 * The embedding, speech, transcription and image calls: resolve the model ► check what it
 * takes (400 before anything is held) ► the call pipeline (admission at the model's prices,
 * deployments, retries, fallbacks, each re-checked and re-admitted) with the kind's attempt
 * below ► settle at the billed units (tokens, characters, seconds, images) of the model that
 * served.
 */
export class MediaService {
  private readonly speechCalls: SpeechCalls;

  constructor(
    private readonly config: GatewayConfig,
    private readonly catalog: Catalog,
    private readonly admitter: Admitter,
    private readonly pipeline: CallPipeline,
    private readonly upstream: UpstreamClient,
    private readonly hosted: HostedImages,
    private readonly logger: Logger,
  ) {
    this.speechCalls = new SpeechCalls(config, catalog, admitter, pipeline, upstream, logger);
  }

  /** At shutdown: abandoned speech calls stop reading the rest of their audio now (speech.ts). */
  stopDrains(): void {
    this.speechCalls.stopDrains();
  }

  /** Resolves once every admitted call has settled, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    return this.pipeline.settled(timeoutMs);
  }

  speech(draft: SpeechDraft, ctx: CallContext): Promise<SpeechOutcome> {
    return this.speechCalls.speech(draft, ctx);
  }

  // ---- Embeddings --------------------------------------------------------------------------

  async embed(draft: EmbeddingDraft, ctx: CallContext): Promise<EmbeddingOutcome> {
    const model = this.catalog.resolve(draft.model, 'embedding');
    const chain = this.pipeline.chain(model, 'embedding', fallbackNames({}, ctx), ctx);
    const routed = await this.pipeline.route(
      {
        type: 'embedding',
        plan: (candidate) => {
          checkEmbedding(candidate, candidate.embedding ?? { dimensions: 0, maxInputs: 2048, tokenArrays: false }, draft.input, draft.dimensions);
          // Every token is at least one UTF-8 byte: the bytes bound the tokens (token arrays are counted).
          let bound = 0;
          if (draft.input.kind === 'text') for (const text of draft.input.texts) bound += Buffer.byteLength(text) + EMBEDDING_TOKENS_PER_INPUT;
          else for (const tokens of draft.input.tokens) bound += tokens.length;
          return bound;
        },
        admit: (candidate, bound, first) => admitFixed(this.admitter, candidate, ctx, worstCaseMicros(candidate.pricing, bound, 0, false), `${bound} input tokens at most`, first),
        attempt: async (target, _bound, _admission, signal) => {
          const family = familyOf(target);
          const adapter = family.embeddings as NonNullable<typeof family.embeddings>;
          const request = { model: target.model.id, upstreamModel: target.deployment.upstreamModel, input: draft.input, encodingFormat: draft.encodingFormat, ...optional(draft, ['dimensions', 'user']) };
          const calls = adapter.build(request, target.provider);
          const bodies = await Promise.all(calls.map((call) => jsonAnswer(this.upstream, target, family, call, signal)));
          return { result: adapter.parse(bodies, request, target.provider), calls };
        },
      },
      ctx,
      chain,
    );
    const served = routed.model;
    const { result, calls } = routed.answer;
    let tokens: number;
    try {
      tokens = result.inputTokens ?? (await this.countInputTokens(draft.input, served, ctx));
    } catch (error) {
      await this.pipeline.settle(routed, ctx, { status: 500, errorType: 'internal_error', stream: false, metered: { unit: 'tokens', quantity: 0, costMicros: 0 } });
      throw error;
    }
    const usage = { inputTokens: tokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
    const record = await this.pipeline.settle(routed, ctx, { usage, metered: { unit: 'tokens', quantity: tokens, costMicros: costMicros(served.pricing, usage) }, status: 200, stream: false });
    const headers = routed.headers;
    addIgnoredCalls(headers, calls);
    headers['x-gateway-cost-inr'] = formatMicros(record.costMicros);
    return { model: served, headers, costMicros: record.costMicros, result: result as EmbeddingResult, inputTokens: tokens };
  }

  /**
   * Billing counts for an upstream that reports no usage (Gemini): cl100k tokens of each input,
   * at most the model's input limit (the upstream embeds no more of an input than that). If
   * the tokenizer cannot load, a quarter of each input's bytes (prose's ratio), logged.
   */
  private async countInputTokens(input: EmbeddingInput, model: ModelConfig, ctx: CallContext): Promise<number> {
    if (input.kind === 'tokens') return input.tokens.reduce((sum, tokens) => sum + tokens.length, 0);
    const limit = model.contextWindow ?? Number.MAX_SAFE_INTEGER;
    let total = 0;
    for (const text of input.texts) {
      let count: number;
      try {
        count = await countTextTokens(text);
      } catch (error) {
        this.logger.error({ err: error, req_id: ctx.requestId }, 'could not count embedding tokens: billed a quarter of the bytes');
        count = Math.ceil(Buffer.byteLength(text) / 4);
      }
      total += Math.min(count, limit);
    }
    return total;
  }

  // ---- Transcription -----------------------------------------------------------------------

  async transcribe(draft: TranscriptionDraft, ctx: CallContext): Promise<TranscriptionOutcome> {
    const model = this.catalog.resolve(draft.model, 'transcription');
    const chain = this.pipeline.chain(model, 'transcription', fallbackNames({}, ctx), ctx);
    const specOf = (candidate: ModelConfig) => candidate.transcription ?? { responseFormats: [draft.responseFormat], timestamps: true, minBilledSeconds: 0 };
    // The model asked for is checked before the file is read (a 400 for what it cannot do).
    checkTranscription(model, specOf(model), draft.responseFormat, draft.timestampGranularities);
    const probe = await probeAudio(draft.audio, draft.mimeType, AUDIO_TYPES[extensionOf(draft.filename)]);
    if (!probe.recognized) {
      throw errors.invalidField('file', `could not read '${draft.filename}' (${draft.mimeType}) as audio: send flac, mp3, mp4, m4a, ogg, wav or webm audio`);
    }
    // Audio whose headers state no duration (a browser's WebM recording): held as if it were
    // at the lowest bitrate speech is encoded at (6 kb/s Opus), charged at what the upstream reports.
    const duration = probe.seconds ?? draft.audio.length / LOWEST_AUDIO_BYTES_PER_SECOND;
    const routed = await this.pipeline.route(
      {
        type: 'transcription',
        plan: (candidate) => {
          const spec = specOf(candidate);
          checkTranscription(candidate, spec, draft.responseFormat, draft.timestampGranularities);
          return spec;
        },
        admit: (candidate, spec, first) => {
          const holdSeconds = billedSeconds(duration, spec.minBilledSeconds);
          return admitFixed(this.admitter, candidate, ctx, transcriptionCostMicros(candidate.pricing, holdSeconds), `${holdSeconds} s of audio`, first);
        },
        attempt: async (target, _spec, _admission, signal) => {
          const family = familyOf(target);
          const adapter = family.transcription as NonNullable<typeof family.transcription>;
          const request: TranscriptionRequest = {
            model: target.model.id,
            upstreamModel: target.deployment.upstreamModel,
            audio: draft.audio,
            filename: draft.filename,
            mimeType: draft.mimeType,
            durationSeconds: duration,
            responseFormat: draft.responseFormat,
            timestampGranularities: draft.timestampGranularities,
            ...optional(draft, ['language', 'prompt', 'temperature']),
          };
          const call = adapter.build(request, target.provider);
          const response = await sendMedia(this.upstream, target, family, call, signal);
          const contentType = String(response.headers['content-type'] ?? 'application/octet-stream');
          const result: TranscriptionResult = adapter.parse(await readAnswer(target, response, signal), contentType, request, target.provider);
          return { result, request, call };
        },
      },
      ctx,
      chain,
    );
    const { result, request, call } = routed.answer;
    // The upstream's duration; else the file's; for a file that states none, the end of the
    // last subtitle cue (srt, vtt) or, failing that, the hold's estimate.
    const stated = result.durationSeconds ?? probe.seconds ?? (result.kind === 'rendered' ? lastCueEnd(result.body) : undefined) ?? duration;
    const seconds = billedSeconds(stated, routed.plan.minBilledSeconds);
    const record = await this.pipeline.settle(routed, ctx, { metered: { unit: 'seconds', quantity: seconds, costMicros: transcriptionCostMicros(routed.model.pricing, seconds) }, status: 200, stream: false });
    const headers = routed.headers;
    addIgnoredCalls(headers, [call]);
    headers['x-gateway-cost-inr'] = formatMicros(record.costMicros);
    headers['x-gateway-audio-seconds'] = String(seconds);
    return { model: routed.model, headers, costMicros: record.costMicros, result, request };
  }

  // ---- Images ------------------------------------------------------------------------------

  /** `baseUrl`: where clients reach the gateway, for the URLs of images it hosts. */
  async generateImages(draft: ImageDraft, ctx: CallContext, baseUrl: string): Promise<ImageOutcome> {
    const model = this.catalog.resolve(draft.model ?? DEFAULT_IMAGE_MODEL, 'image');
    const chain = this.pipeline.chain(model, 'image', fallbackNames({}, ctx), ctx);
    // A model that bills its prompt per token (gpt-image-1) holds the prompt's UTF-8 bytes as tokens too.
    const promptBound = (candidate: ModelConfig): number => (candidate.pricing.inputPer1M > 0 ? Buffer.byteLength(draft.prompt) + EMBEDDING_TOKENS_PER_INPUT : 0);
    const routed = await this.pipeline.route(
      {
        type: 'image',
        plan: (candidate) => {
          const spec = candidate.image ?? { sizes: [draft.size ?? '1024x1024'], defaultSize: '1024x1024', qualities: [], maxImages: 1, styles: false, urlOutput: false, maxPromptChars: 4000 };
          return { spec, choice: checkImage(candidate, spec, draft) };
        },
        admit: (candidate, { choice }, first) => {
          const price = imagePriceMicros(candidate.pricing, choice.size, choice.quality);
          return admitFixed(this.admitter, candidate, ctx, choice.n * price + worstCaseMicros(candidate.pricing, promptBound(candidate), 0, false), describeImages(choice), first);
        },
        attempt: async (target, { spec, choice }, _admission, signal) => {
          const family = familyOf(target);
          const adapter = family.images as NonNullable<typeof family.images>;
          const request: ImageRequest = {
            model: target.model.id,
            upstreamModel: target.deployment.upstreamModel,
            prompt: draft.prompt,
            n: choice.n,
            size: choice.size,
            responseFormat: draft.responseFormat,
            ...optional(choice, ['quality', 'style']),
            ...optional(draft, ['user']),
          };
          // The quality is sent only when the client chose one (the default is the model's own).
          if (draft.quality === undefined) delete request.quality;
          if (spec.urlOutput) request.upstreamResponseFormat = draft.responseFormat;
          const calls = adapter.build(request, target.provider);
          const answers = await Promise.allSettled(calls.map((call) => jsonAnswer(this.upstream, target, family, call, signal)));
          const bodies = answers.flatMap((answer) => (answer.status === 'fulfilled' ? [answer.value] : []));
          // Fanned-out calls (Gemini, one image each): the images made are returned and billed.
          if (bodies.length === 0) throw (answers[0] as PromiseRejectedResult).reason;
          const result = adapter.parse(bodies, request, target.provider);
          if (draft.responseFormat === 'url') await this.host(result, baseUrl);
          else for (const image of result.images) if (!image.b64) throw upstreamMalformed(target.provider.name, 'an image URL where base64 was asked');
          return { result, calls, failed: answers.length - bodies.length };
        },
      },
      ctx,
      chain,
    );
    const served = routed.model;
    const { result, calls, failed } = routed.answer;
    const { choice } = routed.plan;
    const count = result.images.length;
    let promptTokens = 0;
    if (served.pricing.inputPer1M > 0) promptTokens = result.inputTokens ?? (await countTextTokens(draft.prompt).catch(() => promptBound(served)));
    const usage = { inputTokens: promptTokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
    const cost = count * imagePriceMicros(served.pricing, result.size ?? choice.size, result.quality ?? choice.quality) + costMicros(served.pricing, usage);
    const record = await this.pipeline.settle(routed, ctx, { usage, metered: { unit: 'images', quantity: count, costMicros: cost }, status: 200, stream: false });
    const headers = routed.headers;
    addIgnoredCalls(headers, calls as UpstreamRequest[]);
    if (failed > 0) headers['x-gateway-images-failed'] = String(failed);
    headers['x-gateway-cost-inr'] = formatMicros(record.costMicros);
    return { model: served, headers, costMicros: record.costMicros, result: result as ImageResult, created: Math.floor(Date.now() / 1000) };
  }

  /** Images that came as base64 become files the gateway serves for an hour, at unguessable URLs. */
  private async host(result: ImageResult, baseUrl: string): Promise<void> {
    for (const image of result.images) {
      if (image.url || !image.b64) continue;
      let name: string;
      try {
        name = await this.hosted.put(Buffer.from(image.b64, 'base64'), image.mimeType);
      } catch (error) {
        this.logger.error({ err: error, dir: this.hosted.dir }, 'could not keep a generated image');
        throw new GatewayError({
          status: 503,
          type: 'service_unavailable',
          reason: 'image_storage_unavailable',
          message: 'the gateway could not store the image to serve it as a URL (not charged); retry, or ask for response_format b64_json',
          retryable: true,
        });
      }
      image.url = `${baseUrl}/v1/images/files/${name}`;
      delete image.b64;
    }
  }
}

function describeImages(choice: ImageChoice): string {
  return `${choice.n} image${choice.n === 1 ? '' : 's'} of ${choice.size}${choice.quality ? ` at ${choice.quality} quality` : ''}`;
}

/** The end of the last cue of an SRT or WebVTT document, in seconds. */
function lastCueEnd(body: Buffer): number | undefined {
  const matches = body.toString('utf8').match(/--> (\d{2}):(\d{2}):(\d{2})[,.](\d{3})/g);
  const last = matches?.at(-1)?.match(/(\d{2}):(\d{2}):(\d{2})[,.](\d{3})/);
  if (!last) return undefined;
  return Number(last[1]) * 3600 + Number(last[2]) * 60 + Number(last[3]) + Number(last[4]) / 1000;
}
