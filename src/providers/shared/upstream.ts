import { Readable } from 'node:stream';
import type { Agent as UndiciAgent, Dispatcher } from 'undici';
import type { ProviderConfig } from '../../config/types.js';
import type { CallSignal } from '../../core/abort.js';
import { CallAborted, type GatewayError } from '../../core/errors.js';
import type { UpstreamRequest } from '../types.js';
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
  /** Upstream URLs split once into origin and path: the agent is called directly, with no URL parse per call. */
  private readonly targets = new Map<string, { origin: string; path: string }>();

  async send(provider: ProviderConfig, call: UpstreamRequest, signal: CallSignal): Promise<UpstreamResponse> {
    try {
      const { origin, path } = this.target(call.url);
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
      throw classifyUpstreamError(provider.name, error, signal, 'the response');
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
