import type { ProviderConfig } from '../../config/types.js';
import { awsErrorType, credentialSettings, retryAfterMs, upstreamHttpError } from '../../providers/shared/errors.js';
import type { UpstreamResponse } from '../../providers/shared/upstream.js';

/** A cap on upstream error bodies read into memory. */
const MAX_ERROR_BODY = 64 * 1024;

/**
 * A non-2xx upstream answer as the normalized error the client sees (its message read with the
 * family's reader from at most 64 KB of the body); a 2xx answer passes through.
 */
export async function acceptOrThrow(provider: ProviderConfig, response: UpstreamResponse, errorMessage: (body: unknown) => string | undefined): Promise<UpstreamResponse> {
  if (response.status < 300) return response;
  let body: unknown;
  try {
    const text = (await readLimited(response, MAX_ERROR_BODY)).toString('utf8');
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const errorType = awsErrorType(response.headers);
  throw upstreamHttpError(provider.name, {
    status: response.status,
    message: errorMessage(body),
    body,
    retryAfterMs: retryAfterMs(response.headers, Date.now()),
    credentials: credentialSettings(provider.type),
    ...(errorType !== undefined ? { errorType } : {}),
  });
}

/** At most `limit` bytes of a body (the rest is dropped and the body destroyed); `undefined` from readAll when it is larger. */
export async function readLimited(response: UpstreamResponse, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      response.body.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The whole body, or `undefined` when it passes `limit` bytes. */
export async function readAll(response: UpstreamResponse, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      response.body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
