import type { IncomingMessage } from 'node:http';
import { errors } from '../core/errors.js';

/**
 * Reads a request body into memory up to `limit` bytes: 413 as soon as the declared length
 * or the bytes received pass it (without buffering the rest).
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(errors.bodyTooLarge(limit));
  }
  // Events, not `for await`: the async iterator costs more than the read on small bodies.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(errors.bodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

/**
 * Reads and parses a JSON body. Any content type but multipart/form-data is tried as JSON
 * (curl -d sends application/x-www-form-urlencoded by default). An empty body is `undefined`.
 */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (type.startsWith('multipart/form-data')) throw errors.unsupportedMediaType('application/json');
  const body = await readBody(req, limit);
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw errors.invalidJson();
  }
}
