import type { ProviderConfig } from '../../config/types.js';

/**
 * Where a call of the OpenAI wire goes, and with which credential header. OpenAI and every
 * compatible vendor: the base URL and the API path, `Authorization: Bearer`. Azure OpenAI
 * (`providers.<name>.azure`): its deployments API, `/openai/deployments/{deployment}{path}?api-version=…`
 * (the deployment is the model's upstream name), or its v1 API, `/openai/v1{path}` with the
 * deployment in the body; the key goes as `api-key`.
 */
export function openAiUrl(provider: ProviderConfig, path: string, upstreamModel: string): string {
  const azure = provider.azure;
  if (azure === undefined) return provider.baseUrl + path;
  if (azure.apiVersion === undefined) return `${provider.baseUrl}/openai/v1${path}`;
  return `${provider.baseUrl}/openai/deployments/${encodeURIComponent(upstreamModel)}${path}?api-version=${azure.apiVersion}`;
}

/** The credential header of a key: `api-key` for Azure, a bearer token for the others. */
export function setOpenAiCredential(headers: Record<string, string>, provider: ProviderConfig): void {
  if (!provider.apiKey) return;
  if (provider.azure) headers['api-key'] = provider.apiKey;
  else headers.authorization = `Bearer ${provider.apiKey}`;
}
