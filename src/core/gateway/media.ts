import type { Logger } from 'pino';
import type { GatewayConfig, ModelConfig, ModelType, ProviderConfig } from '../../config/types.js';
import { MEDIA_FAMILIES } from '../../providers/media-registry.js';
import type { MediaFamily } from '../../providers/media.js';
import { upstreamMalformed } from '../../providers/shared/errors.js';
import { classifyUpstreamError, type UpstreamClient, type UpstreamResponse } from '../../providers/shared/upstream.js';
import type { UpstreamRequest } from '../../providers/types.js';
import { CallSignal } from '../abort.js';
import { AUDIO_TYPES, extensionOf, probeAudio } from '../audio.js';
import type { Catalog } from '../catalog.js';
import { CallAborted, errors, GatewayError, isGatewayError } from '../errors.js';
import type {
  EmbeddingInput,
  EmbeddingResult,
  ImageRequest,
  ImageResult,
  SpeechFormat,
  SpeechRequest,
  TranscriptionFormat,
  TranscriptionRequest,
  TranscriptionResult,
} from '../media.js';
import { SPEECH_CONTENT_TYPES } from '../media.js';
import { formatMicros } from '../money.js';
import { billedSeconds, costMicros, imagePriceMicros, speechCostMicros, transcriptionCostMicros, worstCaseMicros } from '../pricing.js';
import { countTextTokens } from '../tokens.js';
import { rateHeaders, type Admission, type Admitter } from './admission.js';
import type { CallContext } from './chat.js';
import type { HostedImages } from './hosted-images.js';
import { checkEmbedding, checkImage, checkSpeech, checkTranscription } from './media-rules.js';
import { InFlight } from './in-flight.js';
import type { Metered, MeterUnit, Settlement } from './settlement.js';
import { acceptOrThrow, readAll } from './upstream-call.js';

export interface EmbeddingDraft {
  model: string;
  input: EmbeddingInput;
  dimensions?: number;
  encodingFormat: 'float' | 'base64';
  user?: string;
}

export interface SpeechDraft {
  model: string;
  input: string;
  voice: string;
  format: SpeechFormat;
  speed?: number;
  instructions?: string;
}

export interface TranscriptionDraft {
  model: string;
  audio: Buffer;
  filename: string;
  mimeType: string;
  language?: string;
  prompt?: string;
  responseFormat: TranscriptionFormat;
  temperature?: number;
  timestampGranularities: Array<'word' | 'segment'>;
}

export interface ImageDraft {
  model?: string;
  prompt: string;
  n?: number;
  size?: string;
  quality?: string;
  style?: string;
  responseFormat: 'url' | 'b64_json';
  user?: string;
}

/** Every media outcome: the model, the response headers (rate limit, cost), what was billed. */
interface Outcome {
  model: ModelConfig;
  headers: Record<string, string>;
  costMicros: number;
}

export interface EmbeddingOutcome extends Outcome {
  result: EmbeddingResult;
  inputTokens: number;
}

export interface TranscriptionOutcome extends Outcome {
  result: TranscriptionResult;
  request: TranscriptionRequest;
}

export interface ImageOutcome extends Outcome {
  result: ImageResult;
  created: number;
}

export interface SpeechOutcome {
  model: ModelConfig;
  headers: Record<string, string>;
  contentType: string;
  /**
   * The audio as the upstream sends it. The call settles when it ends (before the client's
   * response ends); a consumer that stops early (the client left) bills what it took.
   */
  audio: AsyncGenerator<Buffer, void, undefined>;
}

interface Resolved {
  model: ModelConfig;
  provider: ProviderConfig;
  family: MediaFamily;
}

/** The default image model when a request names none (the spec's). */
export const DEFAULT_IMAGE_MODEL = 'openai/dall-e-3';

/** Upstream JSON answers larger than this are refused (images: up to 10 base64 PNGs). */
const MAX_ANSWER_BYTES = 128 * 1024 * 1024;
/** After a client leaves a speech stream, how long the rest of the audio is read to measure the share it took. */
const SPEECH_DRAIN_MS = 60_000;
/** 6 kb/s: Opus's lowest bitrate, the least bytes a second of speech can take (the hold of audio of unknown duration). */
const LOWEST_AUDIO_BYTES_PER_SECOND = 750;
/** Per embedding input, for the hold: a tokenizer's begin/end markers. */
const EMBEDDING_TOKENS_PER_INPUT = 4;

/**
 * The embedding, speech, transcription and image calls: resolve the model ► check what it
 * takes (400 before anything is held) ► admit (rate limit, budget, a hold of the call's
 * worst case, as chat) ► call the provider through its family's converter ► settle at the
 * billed units (tokens, characters, seconds, images). Errors after admission settle too (a
 * usage row, no charge), so no hold outlives its call.
 */
export class MediaService {
  private readonly inFlight = new InFlight();
  /** Abandoned speech calls reading the rest of their audio; stopped at shutdown. */
  private readonly drains = new Set<() => void>();
  private stopping = false;

  constructor(
    private readonly config: GatewayConfig,
    private readonly catalog: Catalog,
    private readonly admitter: Admitter,
    private readonly settlement: Settlement,
    private readonly upstream: UpstreamClient,
    private readonly hosted: HostedImages,
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

  /** Resolves once every admitted call has settled, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    return this.inFlight.settled(timeoutMs);
  }

  // ---- Embeddings --------------------------------------------------------------------------

  async embed(draft: EmbeddingDraft, ctx: CallContext): Promise<EmbeddingOutcome> {
    const { model, provider, family } = this.resolve(draft.model, 'embedding');
    const adapter = family.embeddings as NonNullable<MediaFamily['embeddings']>;
    checkEmbedding(model, model.embedding ?? { dimensions: 0, maxInputs: 2048, tokenArrays: false }, draft.input, draft.dimensions);
    // Every token is at least one UTF-8 byte: the bytes bound the tokens (token arrays are counted).
    let bound = 0;
    if (draft.input.kind === 'text') for (const text of draft.input.texts) bound += Buffer.byteLength(text) + EMBEDDING_TOKENS_PER_INPUT;
    else for (const tokens of draft.input.tokens) bound += tokens.length;
    const admission = await this.admit(model, ctx, worstCaseMicros(model.pricing, bound, 0, false), `${bound} input tokens at most`);
    const request = { model: model.id, upstreamModel: model.upstreamModel, input: draft.input, encodingFormat: draft.encodingFormat, ...optional(draft, ['dimensions', 'user']) };
    const headers = this.headers(model, admission);
    let result: EmbeddingResult;
    let tokens: number;
    try {
      const calls = adapter.build(request, provider);
      ignored(headers, calls);
      const bodies = await Promise.all(calls.map((call) => this.json(provider, family, call, ctx)));
      result = adapter.parse(bodies, request, provider);
      tokens = result.inputTokens ?? (await this.countInputTokens(draft.input, model, ctx));
    } catch (error) {
      await this.fail(model, ctx, admission, error);
      throw error;
    }
    const usage = { inputTokens: tokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
    const cost = await this.settle(model, ctx, admission, { unit: 'tokens', quantity: tokens, costMicros: costMicros(model.pricing, usage) }, 200, undefined, usage);
    headers['x-gateway-cost-inr'] = formatMicros(cost);
    return { model, headers, costMicros: cost, result, inputTokens: tokens };
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

  // ---- Speech ------------------------------------------------------------------------------

  async speech(draft: SpeechDraft, ctx: CallContext): Promise<SpeechOutcome> {
    const { model, provider, family } = this.resolve(draft.model, 'speech');
    const adapter = family.speech as NonNullable<MediaFamily['speech']>;
    const characters = checkSpeech(model, provider.type, model.speech ?? { formats: [draft.format], speedMin: 0.25, speedMax: 4, instructions: false }, draft);
    const admission = await this.admit(model, ctx, speechCostMicros(model.pricing, characters), `${characters} characters of speech`);
    const request: SpeechRequest = { model: model.id, upstreamModel: model.upstreamModel, input: draft.input, voice: draft.voice, format: draft.format, ...optional(draft, ['speed', 'instructions']) };
    const headers = this.headers(model, admission);
    // The upstream call has its own signal: once audio flows, a client that leaves stops the
    // relay but not the upstream read, which goes on (bounded) to measure the share it took.
    const upstreamSignal = new CallSignal();
    let streaming = false;
    const onAbort = (): void => {
      if (!streaming) upstreamSignal.abort();
    };
    ctx.signal.once('abort', onAbort);
    let response: UpstreamResponse;
    try {
      const call = adapter.build(request, provider);
      ignored(headers, [call]);
      // The client may have left while the call was admitted: nothing is asked of the upstream then.
      if (ctx.signal.aborted) throw new CallAborted('client disconnected');
      response = await acceptOrThrow(provider, await this.upstream.send(provider, call, upstreamSignal), family.errorMessage);
      if (ctx.signal.aborted) {
        response.body.destroy();
        throw new CallAborted('client disconnected');
      }
    } catch (error) {
      ctx.signal.off('abort', onAbort);
      const failure = error instanceof GatewayError && ctx.signal.aborted ? new CallAborted('client disconnected') : error;
      await this.fail(model, ctx, admission, failure);
      throw failure;
    }
    streaming = true;
    ctx.signal.off('abort', onAbort);
    const billed = Math.min(characters, adapter.billedCharacters?.(response.headers) ?? characters);
    return { model, headers, contentType: SPEECH_CONTENT_TYPES[draft.format], audio: this.relayAudio(model, provider, admission, response, ctx, billed) };
  }

  private async *relayAudio(model: ModelConfig, provider: ProviderConfig, admission: Admission, response: UpstreamResponse, ctx: CallContext, characters: number): AsyncGenerator<Buffer, void, undefined> {
    // Bytes the client was sent (a chunk counts once the consumer comes back for the next:
    // it wrote it), and bytes read from the upstream.
    let delivered = 0;
    let read = 0;
    let settled = false;
    // Read through one iterator, never left with `break`: leaving a for-await would destroy the
    // body, and an aborted call reads the rest of it to measure the share the client took.
    const chunks = (response.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    const bill = (chars: number): Metered => ({ unit: 'characters', quantity: chars, costMicros: speechCostMicros(model.pricing, chars) });
    try {
      try {
        for (;;) {
          const next = await chunks.next();
          if (next.done) break;
          read += next.value.length;
          yield next.value;
          delivered += next.value.length;
        }
      } catch (error) {
        if (ctx.signal.aborted) return; // settled in finally, as a client abort
        // The upstream broke mid-audio: its fault, not charged; the client's response is cut.
        const failure = isGatewayError(error) ? error : classifyUpstreamError(provider.name, error, ctx.signal, 'the rest of the audio');
        settled = true;
        await this.settle(model, ctx, admission, nothing(model), failure instanceof GatewayError ? failure.status : 502, failure instanceof GatewayError ? failure.reason : 'upstream_error');
        throw failure;
      }
      settled = true;
      if (read === 0) {
        // A 200 without audio is the upstream's fault: not charged, an error for the client.
        const failure = upstreamMalformed(provider.name, 'no audio');
        await this.settle(model, ctx, admission, nothing(model), failure.status, failure.reason);
        throw failure;
      }
      // Billed (journaled) before the client's response ends.
      await this.settle(model, ctx, admission, bill(characters), 200);
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
        await this.settle(model, ctx, admission, bill(share), 499, 'client_disconnected').catch((error: unknown) =>
          this.logger.error({ err: error, req_id: ctx.requestId }, 'could not settle an aborted speech call'),
        );
      }
    }
  }

  // ---- Transcription -----------------------------------------------------------------------

  async transcribe(draft: TranscriptionDraft, ctx: CallContext): Promise<TranscriptionOutcome> {
    const { model, provider, family } = this.resolve(draft.model, 'transcription');
    const adapter = family.transcription as NonNullable<MediaFamily['transcription']>;
    const spec = model.transcription ?? { responseFormats: [draft.responseFormat], timestamps: true, minBilledSeconds: 0 };
    checkTranscription(model, spec, draft.responseFormat, draft.timestampGranularities);
    const probe = await probeAudio(draft.audio, draft.mimeType, AUDIO_TYPES[extensionOf(draft.filename)]);
    if (!probe.recognized) {
      throw errors.invalidField('file', `could not read '${draft.filename}' (${draft.mimeType}) as audio: send flac, mp3, mp4, m4a, ogg, wav or webm audio`);
    }
    // Audio whose headers state no duration (a browser's WebM recording): held as if it were
    // at the lowest bitrate speech is encoded at (6 kb/s Opus), charged at what the upstream reports.
    const duration = probe.seconds ?? draft.audio.length / LOWEST_AUDIO_BYTES_PER_SECOND;
    const holdSeconds = billedSeconds(duration, spec.minBilledSeconds);
    const admission = await this.admit(model, ctx, transcriptionCostMicros(model.pricing, holdSeconds), `${holdSeconds} s of audio`);
    const request: TranscriptionRequest = {
      model: model.id,
      upstreamModel: model.upstreamModel,
      audio: draft.audio,
      filename: draft.filename,
      mimeType: draft.mimeType,
      durationSeconds: duration,
      responseFormat: draft.responseFormat,
      timestampGranularities: draft.timestampGranularities,
      ...optional(draft, ['language', 'prompt', 'temperature']),
    };
    const headers = this.headers(model, admission);
    let result: TranscriptionResult;
    try {
      const call = adapter.build(request, provider);
      ignored(headers, [call]);
      const response = await this.send(provider, family, call, ctx);
      const contentType = String(response.headers['content-type'] ?? 'application/octet-stream');
      result = adapter.parse(await this.readAnswer(provider, response, ctx), contentType, request, provider);
    } catch (error) {
      await this.fail(model, ctx, admission, error);
      throw error;
    }
    // The upstream's duration; else the file's; for a file that states none, the end of the
    // last subtitle cue (srt, vtt) or, failing that, the hold's estimate.
    const stated = result.durationSeconds ?? probe.seconds ?? (result.kind === 'rendered' ? lastCueEnd(result.body) : undefined) ?? duration;
    const seconds = billedSeconds(stated, spec.minBilledSeconds);
    const cost = await this.settle(model, ctx, admission, { unit: 'seconds', quantity: seconds, costMicros: transcriptionCostMicros(model.pricing, seconds) }, 200);
    headers['x-gateway-cost-inr'] = formatMicros(cost);
    headers['x-gateway-audio-seconds'] = String(seconds);
    return { model, headers, costMicros: cost, result, request };
  }

  // ---- Images ------------------------------------------------------------------------------

  /** `baseUrl`: where clients reach the gateway, for the URLs of images it hosts. */
  async generateImages(draft: ImageDraft, ctx: CallContext, baseUrl: string): Promise<ImageOutcome> {
    const { model, provider, family } = this.resolve(draft.model ?? DEFAULT_IMAGE_MODEL, 'image');
    const adapter = family.images as NonNullable<MediaFamily['images']>;
    const spec = model.image ?? { sizes: [draft.size ?? '1024x1024'], defaultSize: '1024x1024', qualities: [], maxImages: 1, styles: false, urlOutput: false, maxPromptChars: 4000 };
    const choice = checkImage(model, spec, draft);
    const price = imagePriceMicros(model.pricing, choice.size, choice.quality);
    // A model that bills its prompt per token (gpt-image-1) holds the prompt's UTF-8 bytes as tokens too.
    const promptBound = model.pricing.inputPer1M > 0 ? Buffer.byteLength(draft.prompt) + EMBEDDING_TOKENS_PER_INPUT : 0;
    const admission = await this.admit(model, ctx, choice.n * price + worstCaseMicros(model.pricing, promptBound, 0, false), `${choice.n} image${choice.n === 1 ? '' : 's'} of ${choice.size}${choice.quality ? ` at ${choice.quality} quality` : ''}`);
    const request: ImageRequest = {
      model: model.id,
      upstreamModel: model.upstreamModel,
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
    const headers = this.headers(model, admission);
    let result: ImageResult;
    try {
      const calls = adapter.build(request, provider);
      ignored(headers, calls);
      const answers = await Promise.allSettled(calls.map((call) => this.json(provider, family, call, ctx)));
      const bodies = answers.flatMap((answer) => (answer.status === 'fulfilled' ? [answer.value] : []));
      // Fanned-out calls (Gemini, one image each): the images made are returned and billed.
      if (bodies.length === 0) throw (answers[0] as PromiseRejectedResult).reason;
      if (bodies.length < answers.length) headers['x-gateway-images-failed'] = String(answers.length - bodies.length);
      result = adapter.parse(bodies, request, provider);
      if (draft.responseFormat === 'url') await this.host(result, baseUrl);
      else for (const image of result.images) if (!image.b64) throw upstreamMalformed(provider.name, 'an image URL where base64 was asked');
    } catch (error) {
      await this.fail(model, ctx, admission, error);
      throw error;
    }
    const count = result.images.length;
    let promptTokens = 0;
    if (model.pricing.inputPer1M > 0) promptTokens = result.inputTokens ?? (await countTextTokens(draft.prompt).catch(() => promptBound));
    const usage = { inputTokens: promptTokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
    const cost = count * imagePriceMicros(model.pricing, result.size ?? choice.size, result.quality ?? choice.quality) + costMicros(model.pricing, usage);
    const charged = await this.settle(model, ctx, admission, { unit: 'images', quantity: count, costMicros: cost }, 200, undefined, usage);
    headers['x-gateway-cost-inr'] = formatMicros(charged);
    return { model, headers, costMicros: charged, result, created: Math.floor(Date.now() / 1000) };
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

  // ---- Shared ------------------------------------------------------------------------------

  private resolve(name: string, kind: ModelType): Resolved {
    const model = this.catalog.resolve(name, kind);
    const provider = this.config.providers[model.provider] as ProviderConfig;
    if (!provider.apiKey && provider.apiKeyEnv) {
      throw new GatewayError({
        status: 503,
        type: 'service_unavailable',
        reason: 'provider_not_configured',
        message: `provider '${provider.name}' has no API key: set ${provider.apiKeyEnv} in the gateway's environment and restart it`,
      });
    }
    return { model, provider, family: MEDIA_FAMILIES[provider.type] };
  }

  private async admit(model: ModelConfig, ctx: CallContext, amountMicros: number, what: string): Promise<Admission> {
    const admission = await this.admitter.admitAmount({
      requestId: ctx.requestId,
      accountId: ctx.accountId,
      apiKeyId: ctx.apiKeyId,
      rateLimit: ctx.rateLimit,
      model,
      amountMicros,
      what,
      unmetered: ctx.unmetered === true,
    });
    this.inFlight.enter();
    return admission;
  }

  private headers(model: ModelConfig, admission: Admission): Record<string, string> {
    const headers = rateHeaders(admission.rate);
    headers['x-gateway-model'] = model.id;
    return headers;
  }

  private async send(provider: ProviderConfig, family: MediaFamily, call: UpstreamRequest, ctx: CallContext): Promise<UpstreamResponse> {
    return acceptOrThrow(provider, await this.upstream.send(provider, call, ctx.signal), (body) => family.errorMessage(body));
  }

  private async readAnswer(provider: ProviderConfig, response: UpstreamResponse, ctx: CallContext): Promise<Buffer> {
    let body: Buffer | undefined;
    try {
      body = await readAll(response, MAX_ANSWER_BYTES);
    } catch (error) {
      throw classifyUpstreamError(provider.name, error, ctx.signal, 'the answer');
    }
    if (!body) throw upstreamMalformed(provider.name, `an answer larger than ${MAX_ANSWER_BYTES} bytes`);
    return body;
  }

  private async json(provider: ProviderConfig, family: MediaFamily, call: UpstreamRequest, ctx: CallContext): Promise<unknown> {
    const body = await this.readAnswer(provider, await this.send(provider, family, call, ctx), ctx);
    try {
      return JSON.parse(body.toString('utf8'));
    } catch {
      throw upstreamMalformed(provider.name, 'a response that is not JSON');
    }
  }

  /** Returns the µINR charged (capped at the hold). */
  private async settle(model: ModelConfig, ctx: CallContext, admission: Admission, metered: Metered | undefined, status: number, errorType?: string, usage?: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number; reasoningTokens: number }): Promise<number> {
    try {
      const record = await this.settlement.settle({
        requestId: ctx.requestId,
        accountId: ctx.accountId,
        apiKeyId: ctx.apiKeyId,
        model,
        endpoint: ctx.endpoint,
        stream: model.type === 'speech',
        usage,
        metered,
        status,
        errorType,
        startedAt: ctx.startedAt,
        hold: admission.hold,
      });
      return record.costMicros;
    } finally {
      this.inFlight.leave();
    }
  }

  /** A call that failed before producing anything billable: a usage row (0 of its unit), no charge, the hold released. */
  private async fail(model: ModelConfig, ctx: CallContext, admission: Admission, error: unknown): Promise<void> {
    const aborted = error instanceof CallAborted;
    const status = aborted ? 499 : isGatewayError(error) ? error.status : 500;
    const reason = aborted ? 'client_disconnected' : isGatewayError(error) ? error.reason : 'internal_error';
    try {
      await this.settle(model, ctx, admission, nothing(model), status, reason);
    } catch (settleError) {
      this.logger.error({ err: settleError, req_id: ctx.requestId }, 'could not settle a failed call');
    }
  }
}

/** The end of the last cue of an SRT or WebVTT document, in seconds. */
function lastCueEnd(body: Buffer): number | undefined {
  const matches = body.toString('utf8').match(/--> (\d{2}):(\d{2}):(\d{2})[,.](\d{3})/g);
  const last = matches?.at(-1)?.match(/(\d{2}):(\d{2}):(\d{2})[,.](\d{3})/);
  if (!last) return undefined;
  return Number(last[1]) * 3600 + Number(last[2]) * 60 + Number(last[3]) + Number(last[4]) / 1000;
}

const UNITS: Record<ModelType, MeterUnit> = { chat: 'tokens', embedding: 'tokens', speech: 'characters', transcription: 'seconds', image: 'images' };

/** No charge, in the unit of the model's kind (a failed call's usage row). */
function nothing(model: ModelConfig): Metered {
  return { unit: UNITS[model.type], quantity: 0, costMicros: 0 };
}

/** The keys of `source` that are set, copied (optional fields stay absent rather than undefined). */
function optional<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}

/** Names the parameters a provider cannot take (dropped) in `x-gateway-ignored-params`. */
function ignored(headers: Record<string, string>, calls: readonly UpstreamRequest[]): void {
  addIgnoredParams(headers, calls.flatMap((call) => call.ignoredParams));
}

/** A request field name as it may appear in a response header (a client's keys can hold anything). */
const HEADER_SAFE_NAME = /^[A-Za-z0-9_.[\]-]{1,64}$/;

/**
 * Adds field names to `x-gateway-ignored-params`: only names a header can carry, at most 20
 * (a key such as "€" or "a\nb" would make the response headers invalid after the call was billed).
 */
export function addIgnoredParams(headers: Record<string, string>, names: readonly string[]): void {
  const all = new Set([...(headers['x-gateway-ignored-params']?.split(', ') ?? []), ...names.filter((name) => HEADER_SAFE_NAME.test(name))]);
  if (all.size > 0) headers['x-gateway-ignored-params'] = [...all].slice(0, 20).join(', ');
}




