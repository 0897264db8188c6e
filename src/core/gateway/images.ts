import type { ContentPart, Message } from '../canonical.js';
import { GatewayError } from '../errors.js';

const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 15_000;
const MAX_REDIRECTS = 3;

/**
 * For upstreams that cannot fetch image URLs themselves (Gemini), downloads each http(s)
 * image once and inlines it as base64. This is I/O, so it lives here and not in a
 * translator. A URL that does not give an image is the client's mistake (400).
 */
export async function inlineRemoteImages(messages: Message[], signal: AbortSignal): Promise<Message[]> {
  const cache = new Map<string, Promise<ContentPart>>();
  const convert = async (part: ContentPart): Promise<ContentPart> => {
    if (part.type !== 'image' || part.source.kind !== 'url') return part;
    const url = part.source.url;
    let pending = cache.get(url);
    if (!pending) {
      pending = fetchImage(url, signal).then((source) => ({ ...part, source }));
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

async function fetchImage(url: string, signal: AbortSignal): Promise<{ kind: 'base64'; mediaType: string; data: string }> {
  const fail = (why: string): GatewayError =>
    new GatewayError({ status: 400, type: 'invalid_request_error', code: 'invalid_image_url', param: 'messages', message: `image ${url}: ${why}` });
  let response;
  let target = url;
  // Follows up to MAX_REDIRECTS redirects (CDN links, http → https).
  for (let hop = 0; ; hop++) {
    try {
      // Loaded on first use: most daemons never inline an image (src/providers/shared/http-agent.ts).
      const { request } = await import('undici');
      response = await request(target, { method: 'GET', signal: AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]) });
    } catch (error) {
      throw fail(`could not be downloaded (${(error as { code?: string }).code ?? (error as Error).message})`);
    }
    const location = response.headers.location;
    if (response.statusCode < 300 || response.statusCode >= 400 || typeof location !== 'string') break;
    await response.body.dump();
    if (hop === MAX_REDIRECTS) throw fail(`more than ${MAX_REDIRECTS} redirects`);
    target = new URL(location, target).toString();
    if (!/^https?:/.test(target)) throw fail(`redirects to a URL that is not http(s)`);
  }
  const type = String(response.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
  if (response.statusCode !== 200) {
    await response.body.dump();
    throw fail(`download answered HTTP ${response.statusCode}`);
  }
  if (!type.startsWith('image/')) {
    await response.body.dump();
    throw fail(`is not an image (content-type ${type || 'missing'})`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_IMAGE_BYTES) {
      response.body.destroy();
      throw fail(`is larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MB`);
    }
    chunks.push(chunk);
  }
  return { kind: 'base64', mediaType: type, data: Buffer.concat(chunks).toString('base64') };
}
