import type { OutboundConfig } from '../../config/types.js';
import type { ContentPart, Message } from '../canonical.js';
import { CallAborted, GatewayError } from '../errors.js';
import type { OutboundFetcher } from '../outbound/fetch-url.js';
import { isOutboundFetchError, POLICY_REFUSALS } from '../outbound/outbound-error.js';

/** Where image fetches get their policy, and where their failures are logged. */
export interface ImageFetchContext {
  /** The config's `outbound` section; one fetcher is built for it, on first use. */
  outbound: OutboundConfig;
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
  requestId: string;
}

/** The one answer to every image URL the gateway did not fetch, whatever the reason. */
const UNFETCHABLE_PARAM = 'messages';
const UNFETCHABLE_MESSAGE = `${UNFETCHABLE_PARAM}: image URL could not be fetched`;

/**
 * For upstreams that cannot fetch image URLs themselves (Gemini), downloads each http(s)
 * image once and inlines it as base64. This is I/O, so it lives here and not in a
 * translator. The download goes through the guarded fetcher (src/core/outbound/), which
 * refuses the operator's internal addresses and ports.
 *
 * A refused or failed download is the client's 400, and the answer is the same for every
 * cause (forbidden host or port, DNS failure, refused connection, HTTP 404, not an image, too
 * large): a caller must not learn anything about the operator's network from it. The cause is
 * logged, with the request id.
 */
export async function inlineRemoteImages(messages: Message[], signal: AbortSignal, context: ImageFetchContext): Promise<Message[]> {
  const cache = new Map<string, Promise<ContentPart>>();
  const convert = async (part: ContentPart): Promise<ContentPart> => {
    if (part.type !== 'image' || part.source.kind !== 'url') return part;
    const url = part.source.url;
    let pending = cache.get(url);
    if (!pending) {
      pending = fetchImage(url, signal, context).then((source) => ({ ...part, source }));
      cache.set(url, pending);
    }
    return pending;
  };
  return Promise.all(
    messages.map(async (message): Promise<Message> => {
      if (message.role !== 'user' && message.role !== 'tool') return message;
      if (!message.content.some((p) => p.type === 'image' && p.source.kind === 'url')) return message;
      return { ...message, content: await Promise.all(message.content.map(convert)) };
    }),
  );
}

const fetchers = new WeakMap<OutboundConfig, Promise<OutboundFetcher>>();

/**
 * The fetcher for this config, built on first use: the module (and the undici connector it
 * builds) is loaded only by daemons that inline an image, which most never do.
 */
function fetcherFor(outbound: OutboundConfig): Promise<OutboundFetcher> {
  let pending = fetchers.get(outbound);
  if (!pending) {
    pending = import('../outbound/fetch-url.js').then(({ OutboundFetcher }) => new OutboundFetcher({ policy: outbound }));
    pending.catch(() => fetchers.delete(outbound));
    fetchers.set(outbound, pending);
  }
  return pending;
}

async function fetchImage(url: string, signal: AbortSignal, context: ImageFetchContext): Promise<{ kind: 'base64'; mediaType: string; data: string }> {
  try {
    const fetcher = await fetcherFor(context.outbound);
    const image = await fetcher.fetchBytes(url, { signal, accept: 'image/*', acceptMediaType: (type) => type.startsWith('image/') });
    return { kind: 'base64', mediaType: image.mediaType, data: image.bytes.toString('base64') };
  } catch (error) {
    if (signal.aborted) throw new CallAborted('client disconnected');
    const kind = isOutboundFetchError(error) ? error.kind : 'internal';
    const fields = { req_id: context.requestId, image_url: loggableUrl(url), reason: kind, detail: error instanceof Error ? error.message : String(error) };
    // A policy refusal may be someone probing the operator's network: worth a warning.
    if (isOutboundFetchError(error) && POLICY_REFUSALS.has(error.kind)) context.logger.warn(fields, 'image URL refused');
    else context.logger.info(fields, 'image URL could not be fetched');
    throw new GatewayError({
      status: 400,
      type: 'invalid_request_error',
      reason: 'image_url_unfetchable',
      param: UNFETCHABLE_PARAM,
      message: UNFETCHABLE_MESSAGE,
      cause: error,
    });
  }
}

/** Scheme, host, port and path: no credentials, no query (signed URLs carry secrets there). */
function loggableUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`.slice(0, 300);
  } catch {
    return '(not a URL)';
  }
}
