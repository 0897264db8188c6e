import type { ModelConfig, ModelType } from '../../config/types.js';
import { MEDIA_FAMILIES } from '../../providers/media-registry.js';
import type { MediaFamily } from '../../providers/media.js';
import { upstreamMalformed } from '../../providers/shared/errors.js';
import { classifyUpstreamError, type UpstreamClient, type UpstreamResponse } from '../../providers/shared/upstream.js';
import type { UpstreamRequest } from '../../providers/types.js';
import type { CallSignal } from '../abort.js';
import type { Admission, Admitter } from './admission.js';
import type { CallContext, Target } from './call.js';
import type { Metered, MeterUnit } from './settlement.js';
import { acceptOrThrow, readAll } from './upstream-call.js';

/** What the media kinds of call share: admission at a fixed amount, the family's adapter, reading JSON answers. */

/** Upstream JSON answers larger than this are refused (images: up to 10 base64 PNGs). */
const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

/** A media call's admission: the rate limit (the first model only), budget and wallet, with a hold of its worst case. */
export function admitFixed(admitter: Admitter, model: ModelConfig, ctx: CallContext, amountMicros: number, what: string, first: boolean): Promise<Admission> {
  return admitter.admitAmount({
    requestId: ctx.requestId,
    accountId: ctx.accountId,
    apiKeyId: ctx.apiKeyId,
    rateLimit: ctx.rateLimit,
    model,
    amountMicros,
    what,
    unmetered: ctx.unmetered === true || !first,
    ...(ctx.tpmLimit !== undefined ? { tpmLimit: ctx.tpmLimit } : {}),
  });
}

/** The media converters of the deployment's provider (the config only routes a kind to families that serve it). */
export function familyOf(target: Target): MediaFamily {
  return MEDIA_FAMILIES[target.provider.type];
}

/** Sends one upstream request; a non-2xx answer becomes the normalized error. */
export async function sendMedia(upstream: UpstreamClient, target: Target, family: MediaFamily, call: UpstreamRequest, signal: CallSignal): Promise<UpstreamResponse> {
  return acceptOrThrow(target.provider, await upstream.send(target.provider, call, signal, target.traceHeaders), (body) => family.errorMessage(body));
}

/** A whole answer, at most MAX_ANSWER_BYTES. */
export async function readAnswer(target: Target, response: UpstreamResponse, signal: CallSignal): Promise<Buffer> {
  let body: Buffer | undefined;
  try {
    body = await readAll(response, MAX_ANSWER_BYTES);
  } catch (error) {
    throw classifyUpstreamError(target.provider.name, error, signal, 'the answer');
  }
  if (!body) throw upstreamMalformed(target.provider.name, `an answer larger than ${MAX_ANSWER_BYTES} bytes`);
  return body;
}

export async function jsonAnswer(upstream: UpstreamClient, target: Target, family: MediaFamily, call: UpstreamRequest, signal: CallSignal): Promise<unknown> {
  const body = await readAnswer(target, await sendMedia(upstream, target, family, call, signal), signal);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw upstreamMalformed(target.provider.name, 'a response that is not JSON');
  }
}

const UNITS: Record<ModelType, MeterUnit> = { chat: 'tokens', embedding: 'tokens', speech: 'characters', transcription: 'seconds', image: 'images' };

/** No charge, in the unit of the model's kind (a failed call's usage row). */
export function nothing(model: ModelConfig): Metered {
  return { unit: UNITS[model.type], quantity: 0, costMicros: 0 };
}
