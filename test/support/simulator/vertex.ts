import { createHash, createPublicKey, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { embedText } from './embed.js';
import { promptTokens } from './tokens.js';
import { VERTEX_TEST_PRIVATE_KEY } from './vertex-key.js';

/**
 * Google Vertex AI, as the simulator serves it under `/vertex` (the provider's base URL is
 * `${sim.url}/vertex`, its key file's token_uri `${sim.url}/vertex/token`):
 * - the OAuth2 token endpoint of a service account: the RS256 JWT assertion's signature is
 *   checked against the account's public key (by node:crypto, not the JWT library the gateway
 *   signs with) and its claims (iss, aud = the token_uri, scope, iat/exp, at most an hour);
 * - `/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}`
 *   with a bearer access token it issued and has not expired: Google's generateContent,
 *   streamGenerateContent and predict (embeddings), Anthropic's rawPredict and
 *   streamRawPredict (Claude's Messages with `anthropic_version: vertex-2023-10-16` in the
 *   body and no `model`). A checked request goes on to the Gemini or Anthropic handlers as the
 *   request it is.
 */

export const VERTEX_PROJECT = 'sim-project';

/** The key file of the simulator at `simUrl` (its fixed test key, its token endpoint). */
export function vertexKeyFile(simUrl: string): Record<string, string> {
  return new VertexAccount(`${simUrl}/vertex/token`).keyFile();
}
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

export interface VertexCall {
  publisher: string;
  method: string;
  project: string;
  region: string;
}

export class VertexAccount {
  readonly clientEmail = 'gateway@sim-project.iam.gserviceaccount.com';
  readonly privateKeyId: string;
  /** Token lifetime in seconds for the next exchanges. */
  tokenLifetime = 3600;
  /** Assertions exchanged so far. */
  exchanges = 0;
  /** Requests refused for their token (401) so far. */
  refusals = 0;
  /** Refuse every token (as if each had just been revoked). */
  refuseAll = false;
  /** `:predict` calls answered so far. */
  predictions = 0;
  readonly #tokens = new Map<string, number>();
  readonly #privateKey: string;
  readonly #publicKey: KeyObject;

  /** The account of the simulator's fixed test key, unless another private key (PEM) is given. */
  constructor(
    readonly tokenUri: string,
    privateKey: string = VERTEX_TEST_PRIVATE_KEY,
  ) {
    this.#privateKey = privateKey;
    this.#publicKey = createPublicKey(privateKey);
    this.privateKeyId = createHash('sha1').update(privateKey).digest('hex');
  }

  /** An account with a key of its own (its assertions fail at another account's token endpoint). */
  static withNewKey(tokenUri: string): VertexAccount {
    return new VertexAccount(tokenUri, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  }

  /** The service-account key file a user downloads from the console. */
  keyFile(): Record<string, string> {
    return {
      type: 'service_account',
      project_id: VERTEX_PROJECT,
      private_key_id: this.privateKeyId,
      private_key: this.#privateKey,
      client_email: this.clientEmail,
      client_id: '100000000000000000001',
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: this.tokenUri,
    };
  }

  /** Every token issued so far stops working (as if they had all expired). */
  expireTokens(): void {
    for (const token of this.#tokens.keys()) this.#tokens.set(token, 0);
  }

  tokenValid(token: string | undefined): boolean {
    const until = token === undefined ? undefined : this.#tokens.get(token);
    return until !== undefined && until > Date.now();
  }

  /** POST token_uri: grant_type jwt-bearer with the assertion → an access token, or Google's refusal. */
  exchange(raw: Buffer, res: ServerResponse): void {
    const form = new URLSearchParams(raw.toString('utf8'));
    const refuse = (description: string): void => json(res, 400, { error: 'invalid_grant', error_description: description });
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json(res, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' });
    const assertion = form.get('assertion') ?? '';
    const [head, payload, signature] = assertion.split('.');
    if (head === undefined || payload === undefined || signature === undefined) return refuse('Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    const header = decode(head);
    const claims = decode(payload);
    if (!header || !claims || header.alg !== 'RS256') return refuse('Invalid JWT header.');
    if (header.kid !== undefined && header.kid !== this.privateKeyId) return refuse('Invalid JWT Signature.');
    const signed = verify('RSA-SHA256', Buffer.from(`${head}.${payload}`), this.#publicKey, Buffer.from(signature, 'base64url'));
    if (!signed) return refuse('Invalid JWT Signature.');
    const now = Math.floor(Date.now() / 1000);
    const iat = claims.iat;
    const exp = claims.exp;
    if (claims.iss !== this.clientEmail) return refuse('Invalid JWT: iss does not name this service account.');
    if (claims.aud !== this.tokenUri) return refuse(`Invalid JWT: aud must be ${this.tokenUri}.`);
    if (typeof claims.scope !== 'string' || !claims.scope.split(' ').includes(SCOPE)) return json(res, 400, { error: 'invalid_scope', error_description: 'Invalid OAuth scope or ID token audience provided.' });
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp <= now || iat > now + 300 || exp - iat > 3600) {
      return refuse('Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
    }
    this.exchanges += 1;
    const token = `ya29.sim-${randomBytes(24).toString('base64url')}`;
    this.#tokens.set(token, Date.now() + this.tokenLifetime * 1000);
    json(res, 200, { access_token: token, expires_in: this.tokenLifetime, token_type: 'Bearer' });
  }
}

function decode(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}

function googleError(res: ServerResponse, status: number, state: string, message: string): undefined {
  json(res, status, { error: { code: status, message, status: state } });
  return undefined;
}

const GOOGLE_METHODS = new Set(['generateContent', 'streamGenerateContent', 'predict', 'countTokens']);
const ANTHROPIC_METHODS = new Set(['rawPredict', 'streamRawPredict']);

/**
 * Checks a Vertex request (token, project, path, Claude's body) and returns it as the Gemini or
 * Anthropic request it is (URL and body), or answers Vertex's refusal (undefined). `predict` is
 * answered here (embeddings).
 */
export function vertexGate(req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer, account: VertexAccount, apiKey: string): { url: URL; raw: Buffer; vertex: VertexCall } | undefined {
  const match = /^\/vertex\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/([^/]+)\/models\/([^/:]+):([A-Za-z]+)$/.exec(url.pathname);
  if (!match) return googleError(res, 404, 'NOT_FOUND', 'The requested URL was not found on this server.');
  const [, project = '', region = '', publisher = '', model = '', method = ''] = match;
  const token = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (account.refuseAll || !account.tokenValid(token)) {
    account.refusals += 1;
    return googleError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.');
  }
  if (decodeURIComponent(project) !== VERTEX_PROJECT) return googleError(res, 403, 'PERMISSION_DENIED', `Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/${project}/locations/${region}' (or it may not exist).`);
  const vertex: VertexCall = { publisher, method, project, region };
  const name = decodeURIComponent(model);
  if (publisher === 'google' && GOOGLE_METHODS.has(method)) {
    if (method === 'predict') {
      account.predictions += 1;
      return predict(res, raw, name);
    }
    if (method === 'streamGenerateContent' && url.searchParams.get('alt') !== 'sse') return googleError(res, 400, 'INVALID_ARGUMENT', 'The simulator serves streamGenerateContent with alt=sse only.');
    // The Gemini handlers check an API key: the one the token stands for.
    req.headers['x-goog-api-key'] = apiKey;
    const next = new URL(`/v1beta/models/${encodeURIComponent(name)}:${method}`, url);
    if (url.searchParams.has('alt')) next.searchParams.set('alt', url.searchParams.get('alt') ?? '');
    return { url: next, raw, vertex };
  }
  if (publisher === 'anthropic' && ANTHROPIC_METHODS.has(method)) {
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(raw.toString('utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      return anthropicError(res, 'Invalid JSON body');
    }
    if (body.anthropic_version !== 'vertex-2023-10-16') return anthropicError(res, 'anthropic_version: Input should be \'vertex-2023-10-16\'');
    if ('model' in body) return anthropicError(res, 'model: Extra inputs are not permitted');
    if ((method === 'streamRawPredict') !== (body.stream === true)) return anthropicError(res, `stream: ${method} wants stream ${method === 'streamRawPredict'}`);
    const { anthropic_version: _version, ...rest } = body;
    req.headers['x-api-key'] = apiKey;
    req.headers['anthropic-version'] = '2023-06-01';
    return { url: new URL('/v1/messages', url), raw: Buffer.from(JSON.stringify({ model: name, ...rest })), vertex };
  }
  return googleError(res, 404, 'NOT_FOUND', `Publisher Model \`projects/${project}/locations/${region}/publishers/${publisher}/models/${name}\` was not found or your project does not have access to it.`);
}

function anthropicError(res: ServerResponse, message: string): undefined {
  json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message } });
  return undefined;
}

/** `:predict` for text embeddings: `instances[].content`, `parameters.outputDimensionality`. */
function predict(res: ServerResponse, raw: Buffer, model: string): undefined {
  let body: { instances?: unknown; parameters?: { outputDimensionality?: unknown } };
  try {
    body = JSON.parse(raw.toString('utf8')) as typeof body;
  } catch {
    return googleError(res, 400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
  }
  const instances = body.instances;
  const limit = /^gemini-embedding/.test(model) ? 1 : 250;
  if (!Array.isArray(instances) || instances.length === 0) return googleError(res, 400, 'INVALID_ARGUMENT', 'instances: required.');
  if (instances.length > limit) return googleError(res, 400, 'INVALID_ARGUMENT', `${model} takes at most ${limit} instance(s) per request.`);
  const dims = body.parameters?.outputDimensionality;
  const native = /^gemini-embedding/.test(model) ? 3072 : 768;
  if (dims !== undefined && (typeof dims !== 'number' || !Number.isInteger(dims) || dims < 1 || dims > native)) return googleError(res, 400, 'INVALID_ARGUMENT', 'outputDimensionality is out of range.');
  const predictions = [];
  for (const instance of instances) {
    const content = (instance as { content?: unknown }).content;
    if (typeof content !== 'string') return googleError(res, 400, 'INVALID_ARGUMENT', 'instances[].content must be a string.');
    const tokens = promptTokens('gemini', model, { text: content, messages: 0 });
    predictions.push({ embeddings: { values: embedText(content, native, dims as number | undefined, false), statistics: { token_count: tokens, truncated: false } } });
  }
  json(res, 200, { predictions, metadata: { billableCharacterCount: instances.reduce((sum: number, item) => sum + String((item as { content?: unknown }).content).length, 0) } });
  return undefined;
}
