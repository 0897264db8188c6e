import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { DEFAULT_AZURE_API_VERSION } from './defaults.js';
import { isRecord, readEnum, readString, type Problems, type Raw } from './fields.js';
import type { ProviderConfig, ServiceAccount } from './types.js';

/**
 * The settings of the cloud provider types (Azure OpenAI, AWS Bedrock, Google Vertex AI):
 * where their paths go and the credentials their requests carry. A credential whose variable
 * is unset is not a configuration mistake (the default config names them all): the provider's
 * calls answer 503 naming the variable, as a missing api_key does.
 */

/** The keys only these provider types take, with the types they apply to. */
export const CLOUD_KEYS: Readonly<Record<string, readonly ProviderConfig['type'][]>> = {
  api_version: ['azure'],
  api: ['azure'],
  region: ['bedrock', 'vertex'],
  access_key_id: ['bedrock'],
  secret_access_key: ['bedrock'],
  session_token: ['bedrock'],
  project: ['vertex'],
  credentials: ['vertex'],
};

/** The provider types whose base URL follows from their region (base_url optional). */
export function derivesBaseUrl(type: string | undefined): boolean {
  return type === 'bedrock' || type === 'vertex';
}

export function readCloud(entry: Raw, provider: ProviderConfig, path: string, problems: Problems, baseDir: string): void {
  for (const [key, types] of Object.entries(CLOUD_KEYS)) {
    if (entry[key] !== undefined && entry[key] !== null && !types.includes(provider.type)) problems.add(`${path}.${key}`, `only applies to providers of type ${types.join(' or ')}`);
  }
  if (provider.type === 'azure') readAzure(entry, provider, path, problems);
  else if (provider.type === 'bedrock') readBedrock(entry, provider, path, problems);
  else if (provider.type === 'vertex') readVertex(entry, provider, path, problems, baseDir);
}

/** Azure's `api_version` (the deployments API; default the current GA) or `api: v1`. */
function readAzure(entry: Raw, provider: ProviderConfig, path: string, problems: Problems): void {
  const api = readEnum(entry, 'api', path, problems, ['deployments', 'v1'] as const, 'deployments');
  const apiVersion = readString(entry, 'api_version', path, problems);
  if (api === 'v1') {
    if (apiVersion !== undefined) problems.add(`${path}.api_version`, 'the v1 API takes no api-version: remove it, or set api: deployments');
    provider.azure = {};
    return;
  }
  if (apiVersion !== undefined && !/^\d{4}-\d{2}-\d{2}(-preview)?$/.test(apiVersion)) problems.add(`${path}.api_version`, 'must be a date like 2024-10-21 (or 2025-04-01-preview)');
  provider.azure = { apiVersion: apiVersion ?? DEFAULT_AZURE_API_VERSION };
}

const AWS_REGION = /^[a-z]{2,4}(-[a-z]+)+-\d{1,2}$/;

/**
 * Bedrock: `region` (required), then IAM credentials (`access_key_id` + `secret_access_key`,
 * `session_token` for temporary ones) signed with SigV4, or a Bedrock API key (`api_key`).
 */
function readBedrock(entry: Raw, provider: ProviderConfig, path: string, problems: Problems): void {
  const region = readString(entry, 'region', path, problems, { pattern: AWS_REGION, rule: 'must be an AWS region like us-east-1' });
  if (region === undefined && !problems.unsetVariables(`${path}.region`) && (entry.region === undefined || entry.region === null)) problems.add(`${path}.region`, 'is required (the AWS region of the Bedrock runtime, e.g. us-east-1)');
  const accessKeyId = readString(entry, 'access_key_id', path, problems);
  const secretAccessKey = readString(entry, 'secret_access_key', path, problems);
  const sessionToken = readString(entry, 'session_token', path, problems);
  provider.bedrock = { region: region ?? 'us-east-1' };
  // China's regions are under amazonaws.com.cn.
  if (!provider.baseUrl) provider.baseUrl = `https://bedrock-runtime.${provider.bedrock.region}.amazonaws.com${provider.bedrock.region.startsWith('cn-') ? '.cn' : ''}`;
  if (provider.apiKeys.length > 0) {
    if (accessKeyId !== undefined || secretAccessKey !== undefined) problems.add(`${path}.api_key`, 'set a Bedrock API key or access_key_id and secret_access_key, not both');
    return;
  }
  if (accessKeyId !== undefined && secretAccessKey !== undefined) {
    provider.bedrock.credentials = { accessKeyId, secretAccessKey, ...(sessionToken !== undefined ? { sessionToken } : {}) };
    delete provider.apiKeyEnv;
    return;
  }
  const unset = [...(problems.unsetVariables(`${path}.access_key_id`) ?? []), ...(problems.unsetVariables(`${path}.secret_access_key`) ?? [])];
  if (unset.length > 0) {
    // The default config's variables, unset: calls answer 503 naming them.
    provider.apiKeyEnv = unset.join(' and ');
    return;
  }
  if (provider.apiKeyEnv !== undefined) return;
  if (accessKeyId !== undefined) problems.add(`${path}.secret_access_key`, 'is required with access_key_id');
  else if (secretAccessKey !== undefined) problems.add(`${path}.access_key_id`, 'is required with secret_access_key');
  else problems.add(`${path}.access_key_id`, 'is required: access_key_id and secret_access_key (SigV4), or api_key (a Bedrock API key)');
}

/**
 * Vertex: a service-account key file (`credentials`), the `project` (default: the key file's
 * `project_id`) and `region` (default us-central1; `global` too).
 */
function readVertex(entry: Raw, provider: ProviderConfig, path: string, problems: Problems, baseDir: string): void {
  const region = readString(entry, 'region', path, problems, { pattern: /^(global|[a-z]+(-[a-z]+)+\d+)$/, rule: 'must be a Google Cloud region like us-central1, or global' }) ?? 'us-central1';
  if (!provider.baseUrl) provider.baseUrl = region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region}-aiplatform.googleapis.com`;
  const credentials = readString(entry, 'credentials', path, problems);
  const account = credentials === undefined ? undefined : readServiceAccount(credentials, `${path}.credentials`, problems, baseDir);
  const written = readString(entry, 'project', path, problems, { pattern: PROJECT, rule: 'must be a Google Cloud project id (lowercase letters, digits and hyphens; a domain-scoped one as domain:project)' });
  const project = written ?? (entry.project === undefined || entry.project === null || entry.project === '' ? account?.projectId : undefined);
  provider.vertex = { project: project ?? '', region };
  const unset = [...(problems.unsetVariables(`${path}.project`) ?? []), ...(problems.unsetVariables(`${path}.credentials`) ?? [])];
  if (credentials === undefined && unset.length === 0) problems.add(`${path}.credentials`, "is required: a service-account key file's path (or its JSON)");
  if (project === undefined && unset.length === 0 && credentials !== undefined && account && entry.project === undefined) problems.add(`${path}.project`, "is required (the key file names no project_id)");
  if (account && project !== undefined) provider.vertex.serviceAccount = account.serviceAccount;
  else if (unset.length > 0) provider.apiKeyEnv = unset.join(' and ');
}

const PROJECT = /^([a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,61}[a-z0-9]$/;

/** A service-account key file (or its JSON inline): its email, private key and token_uri, checked. */
function readServiceAccount(value: string, path: string, problems: Problems, baseDir: string): { serviceAccount: ServiceAccount; projectId?: string } | undefined {
  let text = value;
  if (!value.trimStart().startsWith('{')) {
    const file = isAbsolute(value) ? value : resolve(baseDir, value);
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      // The path, unless the value is plainly not one (a key pasted in another encoding): never echo a secret.
      const named = value.length <= 200 && !/\s/.test(value) ? ` ${file}` : ` (a value of ${value.length} characters that is neither a path nor JSON)`;
      problems.add(path, `cannot read the key file${named} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
      return undefined;
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    problems.add(path, 'must be a service-account key file (JSON); this is not JSON');
    return undefined;
  }
  if (!isRecord(parsed) || parsed.type !== 'service_account') {
    problems.add(path, 'must be a service-account key file (its "type" is "service_account"); user credentials and other kinds are not supported');
    return undefined;
  }
  const clientEmail = parsed.client_email;
  const privateKey = parsed.private_key;
  const tokenUri = parsed.token_uri ?? 'https://oauth2.googleapis.com/token';
  if (typeof clientEmail !== 'string' || clientEmail === '') problems.add(path, 'the key file has no client_email');
  else if (typeof privateKey !== 'string' || !isRsaKey(privateKey)) problems.add(path, 'the key file has no RSA private_key in PEM form');
  else if (typeof tokenUri !== 'string' || !/^https?:\/\//.test(tokenUri)) problems.add(path, "the key file's token_uri must be an http(s) URL");
  else {
    const serviceAccount: ServiceAccount = { clientEmail, privateKey, tokenUri, ...(typeof parsed.private_key_id === 'string' ? { privateKeyId: parsed.private_key_id } : {}) };
    return typeof parsed.project_id === 'string' && parsed.project_id !== '' ? { serviceAccount, projectId: parsed.project_id } : { serviceAccount };
  }
  return undefined;
}

/** Google signs service-account assertions with RS256: an RSA key. */
function isRsaKey(pem: string): boolean {
  try {
    return createPrivateKey(pem).asymmetricKeyType === 'rsa';
  } catch {
    return false;
  }
}

/** The provider types that carry other vendors' models (a cloud's copy of Gemini, Claude, GPT). */
const CLOUD_TYPES: ReadonlySet<string> = new Set(['azure', 'bedrock', 'vertex']);

/**
 * Which of several models sharing a short name (`gemini-2.5-flash` on gemini and on vertex) it
 * stands for: the one on a provider with credentials before one without, then a vendor's own
 * API before a cloud's (core/catalog.ts). Lower first.
 */
export function providerRank(provider: ProviderConfig | undefined): number {
  if (!provider) return 4;
  const unset = provider.apiKeys.length === 0 && provider.apiKeyEnv !== undefined;
  return (unset ? 2 : 0) + (CLOUD_TYPES.has(provider.type) ? 1 : 0);
}
