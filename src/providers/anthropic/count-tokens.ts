import type { ProviderConfig } from '../../config/types.js';
import type { ChatRequest } from '../../core/canonical.js';
import type { UpstreamRequest } from '../types.js';
import { buildAnthropicRequest } from './convert-request.js';

/**
 * A wire family whose upstream counts a prompt's tokens itself (POST /v1/messages/count_tokens
 * asks it for models it serves; the registry lists them: TOKEN_COUNTERS).
 */
export interface TokenCounter {
  /** The upstream request that counts the prompt of `request` (its output limit and stream flag are not part of it). */
  buildCountRequest(request: ChatRequest, provider: ProviderConfig): UpstreamRequest;
  /** The count in the upstream's answer; undefined when the answer has none. */
  parseCount(body: unknown): number | undefined;
}

/**
 * The fields Anthropic's count_tokens takes (docs.anthropic.com "Count tokens in a Message"):
 * a messages request without max_tokens, stream and the sampling fields, which it refuses
 * ("max_tokens: Extra inputs are not permitted"). Beta-only fields (context_management,
 * mcp_servers) are left out too: the count is of the prompt, which they do not change.
 */
const COUNT_FIELDS = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'cache_control', 'output_config']);

/**
 * Anthropic's own count (`POST /v1/messages/count_tokens`, free, rate-limited by Anthropic):
 * the messages request the family would send (buildAnthropicRequest: system blocks, tool
 * results, JSON mode's forced tool, cache_control), cut to the fields the endpoint takes.
 */
export const anthropicTokenCounter: TokenCounter = {
  buildCountRequest(request, provider) {
    const call = buildAnthropicRequest({ ...request, stream: false }, provider);
    const body: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(call.body as Record<string, unknown>)) if (COUNT_FIELDS.has(key) && value !== undefined) body[key] = value;
    return { url: `${provider.baseUrl}/v1/messages/count_tokens`, headers: call.headers, body, ignoredParams: [] };
  },
  parseCount(body) {
    if (typeof body !== 'object' || body === null) return undefined;
    const tokens = (body as { input_tokens?: unknown }).input_tokens;
    return typeof tokens === 'number' && Number.isSafeInteger(tokens) && tokens >= 0 ? tokens : undefined;
  },
};
