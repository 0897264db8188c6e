import { Readable } from 'node:stream';
import type { Agent as UndiciAgent, Dispatcher } from 'undici';
import type { ProviderConfig } from '../../config/types.js';
import type { CallSignal } from '../../core/abort.js';
import { CallAborted, GatewayError, isGatewayError } from '../../core/errors.js';
import { authenticatorFor } from '../auth.js';
import type { Authenticator, UpstreamRequest } from '../types.js';
import { upstreamBroken, upstreamTimeout } from './errors.js';
import { Agent, requestVia } from './http-agent.js';

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

/**
 * Upstream HTTP: `undici.request` on one kept-alive Agent per provider (connect timeout
 * there), with the first-byte timeout as `headersTimeout` and the between-chunks timeout as
 * `bodyTimeout`. Aborting the signal (client disconnect) destroys the upstream socket.
 */
export class UpstreamClient {
  private readonly agents = new Map<string, UndiciAgent>();
  /** The credential step of each provider that has one (its token cache lives there). */
  private readonly authenticators = new Map<string, { for: ProviderConfig['bedrock'] | ProviderConfig['vertex']; auth: Authenticator | undefined }>();
  /** Upstream URLs split once into origin and path: the agent is called directly, with no URL parse per call. */
  private readonly targets = new Map<string, { origin: string; path: string }>();

  /** `extraHeaders`: the attempt's own (its trace context), over the family's. */
  async send(provider: ProviderConfig, request: UpstreamRequest, signal: CallSignal, extraHeaders?: Record<string, string>): Promise<UpstreamResponse> {
    const call = extraHeaders === undefined ? request : { ...request, headers: { ...request.headers, ...extraHeaders } };
    try {
      const { origin, path } = this.target(call.url);
      const auth = this.authenticator(provider);
      if (auth) return await this.sendAuthorized(provider, auth, origin, path, call, signal);
      const response = await requestVia(this.agent(provider), {
        origin,
        path,
        method: 'POST',
        headers: call.headers,
        body: call.rawBody === undefined ? JSON.stringify(call.body) : Buffer.isBuffer(call.rawBody) ? call.rawBody : Readable.from(call.rawBody, { objectMode: false }),
        signal,
        headersTimeout: provider.timeouts.firstByteMs,
        bodyTimeout: provider.timeouts.idleMs,
      });
      return { status: response.statusCode, headers: response.headers, body: response.body };
    } catch (error) {
      if (isGatewayError(error)) throw error;
      throw classifyUpstreamError(provider.name, error, signal, 'the response');
    }
  }

  /**
   * A request with the provider's credential step: the body serialized once (a signature covers
   * it), the credential's headers added, and on a 401 one more try with a fresh credential.
   */
  private async sendAuthorized(provider: ProviderConfig, auth: Authenticator, origin: string, path: string, call: UpstreamRequest, signal: CallSignal): Promise<UpstreamResponse> {
    const body = call.rawBody === undefined ? JSON.stringify(call.body) : Buffer.isBuffer(call.rawBody) ? call.rawBody : Buffer.concat(call.rawBody);
    for (let attempt = 0; ; attempt++) {
      let credential: Record<string, string>;
      try {
        credential = await auth.headers({ origin, path, headers: call.headers, body }, signal);
      } catch (error) {
        throw credentialFailure(provider, error, signal);
      }
      const headers = { ...call.headers, ...credential };
      const response = await requestVia(this.agent(provider), { origin, path, method: 'POST', headers, body, signal, headersTimeout: provider.timeouts.firstByteMs, bodyTimeout: provider.timeouts.idleMs });
      if (response.statusCode === 401 && attempt === 0 && auth.refused?.(credential) === true) {
        await response.body.dump().catch(() => undefined);
        continue;
      }
      return { status: response.statusCode, headers: response.headers, body: response.body };
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((agent) => agent.close()));
    this.agents.clear();
  }

  private target(url: string): { origin: string; path: string } {
    let target = this.targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`upstream URL ${parsed.origin} is not http(s)`);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      // Bounded: the catalog's models times their endpoints, unless URLs carry per-call parts.
      if (this.targets.size >= 1000) this.targets.clear();
      this.targets.set(url, target);
    }
    return target;
  }

  private authenticator(provider: ProviderConfig): Authenticator | undefined {
    if (provider.type !== 'bedrock' && provider.type !== 'vertex') return undefined;
    const settings = provider.bedrock ?? provider.vertex;
    let entry = this.authenticators.get(provider.name);
    // Rebuilt when the provider's settings change (a reloaded config), so a token is never
    // used for another account.
    if (!entry || entry.for !== settings) {
      entry = { for: settings, auth: authenticatorFor(provider, (url, form, signal) => this.postForm(provider, url, form, signal)) };
      this.authenticators.set(provider.name, entry);
    }
    return entry.auth;
  }

  /**
   * A token exchange: a form POST with a short deadline of its own (every call waiting for the
   * token waits for it), its answer read up to 64 KB.
   */
  private async postForm(provider: ProviderConfig, url: string, form: string, signal: CallSignal): Promise<{ status: number; text: string }> {
    const { origin, path } = this.target(url);
    const deadline = setTimeout(() => signal.abort(), TOKEN_TIMEOUT_MS);
    try {
      const response = await requestVia(this.agent(provider), {
        origin,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        signal,
        headersTimeout: TOKEN_TIMEOUT_MS,
        bodyTimeout: TOKEN_TIMEOUT_MS,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > TOKEN_ANSWER_BYTES) {
          response.body.destroy();
          break;
        }
        chunks.push(chunk);
      }
      return { status: response.statusCode, text: Buffer.concat(chunks).toString('utf8') };
    } catch (error) {
      if (signal.aborted) throw upstreamTimeout(provider.name, 'an access token');
      throw classifyUpstreamError(provider.name, error, signal, 'an access token');
    } finally {
      clearTimeout(deadline);
    }
  }

  private agent(provider: ProviderConfig): UndiciAgent {
    let agent = this.agents.get(provider.name);
    if (!agent) {
      // No cap on connections: each open stream holds one, and a cap would leave streams
      // waiting for a socket without a byte (1,000 concurrent streams are a target).
      agent = new Agent({
        connect: { timeout: provider.timeouts.connectMs },
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 600_000,
      });
      this.agents.set(provider.name, agent);
    }
    return agent;
  }
}

/** How long a token exchange may take, and how much of its answer is read. */
const TOKEN_TIMEOUT_MS = 15_000;
const TOKEN_ANSWER_BYTES = 64 * 1024;

/**
 * A credential step that failed: its own GatewayError (a refused assertion, a token endpoint
 * that timed out), the caller leaving, or anything else (a key the signer cannot use) as the
 * credentials' fault, not a connection's.
 */
function credentialFailure(provider: ProviderConfig, error: unknown, signal: CallSignal): GatewayError | CallAborted {
  if (error instanceof CallAborted || signal.aborted) return new CallAborted('client disconnected');
  if (isGatewayError(error)) return error;
  return new GatewayError({
    status: 502,
    type: 'upstream_error',
    reason: 'upstream_auth_failed',
    message: `${provider.name} could not sign the request with its credentials (${(error as Error).message ?? 'unknown error'}): an administrator must check them`,
    upstream: { kind: 'http', status: 401 },
  });
}

/** An exception from undici (sending, or reading the body) as the error the client should see. */
export function classifyUpstreamError(provider: string, error: unknown, signal: { readonly aborted: boolean }, waitingFor: string): GatewayError | CallAborted {
  if (signal.aborted) return new CallAborted('client disconnected');
  const code = (error as { code?: string }).code;
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return upstreamTimeout(provider, 'a connection', { kind: 'connect' });
    case 'UND_ERR_HEADERS_TIMEOUT':
      return upstreamTimeout(provider, waitingFor);
    case 'UND_ERR_BODY_TIMEOUT':
      return upstreamTimeout(provider, 'the next part of the answer');
    case 'ECONNREFUSED':
      return upstreamBroken(provider, 'connection refused');
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return upstreamBroken(provider, 'host not found');
    default:
      return upstreamBroken(provider, `connection failed (${code ?? (error as Error).message ?? 'unknown error'})`);
  }
}
