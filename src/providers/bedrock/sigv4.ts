import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentials } from '../../config/types.js';
import type { Authenticator, OutgoingRequest } from '../types.js';

/** The headers a signature adds; the others it covers are the request's own. */
const SIGNATURE_HEADERS = ['authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256'];

/**
 * AWS Signature Version 4 for the Bedrock runtime (service `bedrock`), by Smithy's signer (the
 * AWS SDK's own), over exactly the path that is sent: a model id is one path segment with `:`
 * as `%3A` and `/` as `%2F`, and the signer encodes the path once more for the canonical
 * request, as AWS does for every service but S3.
 */
export class SigV4Signer implements Authenticator {
  /** Loaded on the first signed request: a daemon without Bedrock credentials never loads the signer. */
  private signer: Promise<SignatureV4> | undefined;

  constructor(
    private readonly region: string,
    private readonly credentials: AwsCredentials,
  ) {}

  async headers(request: OutgoingRequest): Promise<Record<string, string>> {
    this.signer ??= import('@smithy/signature-v4').then(
      ({ SignatureV4 }) => new SignatureV4({ service: 'bedrock', region: this.region, credentials: this.credentials, sha256: NodeSha256, uriEscapePath: true, applyChecksum: false }),
    );
    const signer = await this.signer;
    const url = new URL(request.origin);
    const queryAt = request.path.indexOf('?');
    const path = queryAt === -1 ? request.path : request.path.slice(0, queryAt);
    const query: Record<string, string> = {};
    if (queryAt !== -1) for (const [key, value] of new URLSearchParams(request.path.slice(queryAt + 1))) query[key] = value;
    const signed = await signer.sign({
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      // The signer decodes nothing: it takes the path as it goes on the wire.
      path,
      query,
      headers: { ...request.headers, host: url.host },
      body: request.body,
    });
    const out: Record<string, string> = {};
    for (const name of SIGNATURE_HEADERS) {
      const value = signed.headers[name];
      if (value !== undefined) out[name] = value;
    }
    return out;
  }
}

type Data = string | ArrayBuffer | ArrayBufferView;

function bytes(data: Data): Buffer | string {
  if (typeof data === 'string') return data;
  return ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data);
}

/** SHA-256 and HMAC-SHA-256 by node:crypto, in the shape the signer takes (the AWS SDK's @smithy/hash-node). */
class NodeSha256 {
  private hash: Hash | Hmac;

  constructor(private readonly secret?: Data) {
    this.hash = this.start();
  }

  update(data: Uint8Array): void {
    this.hash.update(bytes(data));
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }

  reset(): void {
    this.hash = this.start();
  }

  private start(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(this.secret));
  }
}
