import type { IncomingMessage, ServerResponse } from 'node:http';
import { azureGate, type AzureCall } from './azure.js';
import { bedrockGate, type BedrockCall } from './bedrock.js';
import type { AwsCredentials } from './sigv4.js';
import { vertexGate, type VertexAccount, type VertexCall } from './vertex.js';

/** What the clouds' gates found: the request as its family's handlers take it, and which cloud it came through. */
export interface CloudRequest {
  url: URL;
  raw: Buffer;
  azure?: AzureCall;
  vertex?: VertexCall;
  bedrock?: BedrockCall;
}

/**
 * The clouds' paths (`/azure/…`, `/vertex/…`, `/bedrock/…`): each checks its credentials (api-key,
 * an OAuth2 token, SigV4) and refuses as the cloud does (undefined: answered), or passes the
 * request on. Vertex's token endpoint is answered here. Other paths pass unchanged.
 */
export function throughClouds(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  raw: Buffer,
  clouds: { apiKey: string; vertex: VertexAccount; aws: AwsCredentials },
): CloudRequest | undefined {
  const path = url.pathname;
  if (path.startsWith('/azure/')) {
    const gate = azureGate(req, res, url, clouds.apiKey);
    return gate ? { url: gate.url, raw, azure: gate.azure } : undefined;
  }
  if (path === '/vertex/token') {
    clouds.vertex.exchange(raw, res);
    return undefined;
  }
  if (path.startsWith('/vertex/')) return vertexGate(req, res, url, raw, clouds.vertex, clouds.apiKey);
  if (path.startsWith('/bedrock/')) {
    // Routed and authenticated (SigV4 or a Bedrock API key) before anything else.
    const bedrock = bedrockGate(req, res, url, raw, clouds.aws, clouds.apiKey);
    return bedrock ? { url, raw, bedrock } : undefined;
  }
  return { url, raw };
}
