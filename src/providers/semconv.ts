import type { ProviderConfig } from '../config/types.js';

/**
 * `gen_ai.provider.name` (OpenTelemetry GenAI semantic conventions) for a provider entry: by
 * its type, and for OpenAI-compatible entries by the vendor its base URL names; any other
 * OpenAI-compatible server is "openai" (its wire).
 */
const BY_TYPE: Readonly<Record<ProviderConfig['type'], string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  deepgram: 'deepgram',
  azure: 'azure.ai.openai',
  bedrock: 'aws.bedrock',
  vertex: 'gcp.vertex_ai',
};

const BY_HOST: readonly [RegExp, string][] = [
  [/(^|\.)groq\.com$/, 'groq'],
  [/(^|\.)mistral\.ai$/, 'mistral_ai'],
  [/(^|\.)deepseek\.com$/, 'deepseek'],
  [/(^|\.)x\.ai$/, 'x_ai'],
  [/(^|\.)perplexity\.ai$/, 'perplexity'],
  [/(^|\.)cohere\.(com|ai)$/, 'cohere'],
];

const names = new WeakMap<ProviderConfig, { provider: string; host: string }>();

/** The provider's semantic-conventions name and its server's host (`server.address`), computed once per entry. */
export function providerIdentity(provider: ProviderConfig): { provider: string; host: string } {
  let known = names.get(provider);
  if (!known) {
    let host = '';
    try {
      host = new URL(provider.baseUrl).hostname;
    } catch {
      // A cloud entry without a base URL of its own: its region's host is not named.
    }
    const vendor = provider.type === 'openai' ? BY_HOST.find(([pattern]) => pattern.test(host))?.[1] : undefined;
    known = { provider: vendor ?? BY_TYPE[provider.type], host };
    names.set(provider, known);
  }
  return known;
}
