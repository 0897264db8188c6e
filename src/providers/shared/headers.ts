import type { ProviderConfig } from '../../config/types.js';

const built = new WeakMap<ProviderConfig, Readonly<Record<string, string>>>();

/**
 * A provider's upstream request headers (content type, credentials, the config's own
 * headers): they depend on the provider's config alone, so they are built once per config and
 * shared by its calls (hot path: no object built per call). Frozen, since every call shares them.
 */
export function providerHeaders(provider: ProviderConfig, build: (provider: ProviderConfig) => Record<string, string>): Readonly<Record<string, string>> {
  let headers = built.get(provider);
  if (!headers) {
    headers = Object.freeze(build(provider));
    built.set(provider, headers);
  }
  return headers;
}
