/** The validated, frozen configuration every part of the daemon reads. */

export type ProviderType = 'openai' | 'anthropic' | 'gemini' | 'deepgram' | 'azure' | 'bedrock' | 'vertex';
export const PROVIDER_TYPES: readonly ProviderType[] = ['openai', 'anthropic', 'gemini', 'deepgram', 'azure', 'bedrock', 'vertex'];
/** The provider types with a chat wire (Deepgram serves speech and transcription only). */
export type ChatProviderType = Exclude<ProviderType, 'deepgram'>;

export type ModelType = 'chat' | 'embedding' | 'speech' | 'transcription' | 'image';
export const MODEL_TYPES: readonly ModelType[] = ['chat', 'embedding', 'speech', 'transcription', 'image'];

export interface ProviderTimeouts {
  /** TCP/TLS connect. */
  connectMs: number;
  /** From request sent to the first response byte (headers). */
  firstByteMs: number;
  /** Longest silence between two body chunks of a streaming response. */
  idleMs: number;
}

export interface ProviderConfig {
  name: string;
  type: ProviderType;
  baseUrl: string;
  /** Absent when the config names no key or the variable it names is unset. */
  apiKey?: string;
  /** The environment variable the api_key came from, to name it when it is missing. */
  apiKeyEnv?: string;
  /**
   * Every key of the provider (`api_keys`, or the one `api_key`), used in turn; a key refused
   * with 401/403 rests and the next is used (src/core/routing/). Empty when none is set.
   */
  apiKeys: readonly string[];
  headers: Readonly<Record<string, string>>;
  timeouts: ProviderTimeouts;
  /** Anthropic only: the `anthropic-version` header sent upstream. */
  anthropicVersion?: string;
  /**
   * OpenAI family only: the field that carries the output limit. OpenAI itself wants
   * `max_completion_tokens` (its reasoning models refuse `max_tokens`); most compatible
   * vendors know only `max_tokens`.
   */
  maxTokensParam: 'max_tokens' | 'max_completion_tokens';
  /**
   * How this vendor's tokenizer counts against cl100k, for admission's tight prompt bound,
   * when it differs from its wire family's (an OpenAI-compatible vendor with a tokenizer of its
   * own). Absent: the family's (src/providers/<family>/index.ts).
   */
  tokenizer?: { ratio: number; splitDigits: boolean };
  /**
   * OpenAI family only: the upstream has its own `/v1/responses` (OpenAI itself), so a
   * responses-format request is forwarded to it as it is (hosted tools, reasoning items and
   * their encrypted content work natively) instead of being translated to chat completions.
   */
  responses?: boolean;
  /**
   * Azure OpenAI (type azure, the OpenAI wire family): the deployments API with this
   * `api-version` (`/openai/deployments/{upstream model}/…?api-version=`), or, without one,
   * the v1 API (`/openai/v1/…`, the deployment named in the body). Sent with `api-key`.
   */
  azure?: { apiVersion?: string };
  /**
   * AWS Bedrock (type bedrock, the Converse API): the region the requests are signed for, and
   * the IAM credentials they are signed with (SigV4), absent when a Bedrock API key (`api_key`,
   * sent as a bearer token) is used instead.
   */
  bedrock?: { region: string; credentials?: AwsCredentials };
  /**
   * Google Vertex AI (type vertex: Gemini and Claude with Vertex's paths): the project and
   * region of the paths, and the service account whose OAuth2 access tokens authorize them.
   */
  vertex?: { project: string; region: string; serviceAccount?: ServiceAccount };
}

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The fields of a Google service-account key file the gateway uses. */
export interface ServiceAccount {
  clientEmail: string;
  privateKey: string;
  privateKeyId?: string;
  /** Where the signed assertion is exchanged for an access token, as the key file says. */
  tokenUri: string;
}

/**
 * Prices are integers in µINR per 1M units (tokens, characters), i.e. the INR price × 1e6.
 * INR per 1M tokens is numerically µINR per token, so cost_µINR = ceil(units × price / 1e6).
 */
export interface ModelPricing {
  inputPer1M: number;
  outputPer1M: number;
  cacheReadPer1M?: number;
  cacheWritePer1M?: number;
  /** Anthropic's 1-hour cache writes (2x input); absent: the cache-write price. */
  cacheWrite1hPer1M?: number;
  /** speech: per 1M input characters. */
  inputPer1MChars?: number;
  /** transcription: per minute of audio, µINR. */
  perMinute?: number;
  /** image: per generated image, µINR (the price of a size and quality imagePrices does not name). */
  perImage?: number;
  /** image: µINR per image by `<size>/<quality>` or `<size>`, looked up in that order. */
  imagePrices?: Readonly<Record<string, number>>;
}

export type SpeechFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';
export const SPEECH_FORMATS: readonly SpeechFormat[] = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];
export type TranscriptionFormat = 'json' | 'text' | 'srt' | 'vtt' | 'verbose_json';
export const TRANSCRIPTION_FORMATS: readonly TranscriptionFormat[] = ['json', 'text', 'srt', 'vtt', 'verbose_json'];

/** What an embedding model takes (catalog keys in config/models.yaml). */
export interface EmbeddingSpec {
  /** The vector length it returns by default. */
  dimensions: number;
  /** The smallest `dimensions` it can be asked for; absent when it takes no `dimensions`. */
  minDimensions?: number;
  /** Inputs per request. */
  maxInputs: number;
  /** Whether it takes inputs as token arrays (OpenAI's own models). */
  tokenArrays: boolean;
}

export interface SpeechSpec {
  formats: readonly SpeechFormat[];
  speedMin: number;
  speedMax: number;
  /** Whether it takes `instructions` (a voice direction). */
  instructions: boolean;
}

export interface TranscriptionSpec {
  responseFormats: readonly TranscriptionFormat[];
  /** Whether it takes `timestamp_granularities[]`. */
  timestamps: boolean;
  /** The vendor's minimum billed duration per request (Groq: 10 s). */
  minBilledSeconds: number;
}

export interface ImageSpec {
  sizes: readonly string[];
  defaultSize: string;
  /** Empty: the model takes no `quality`. */
  qualities: readonly string[];
  defaultQuality?: string;
  maxImages: number;
  styles: boolean;
  /** Whether the upstream can answer with URLs of its own (dall-e); otherwise the gateway hosts the images it must give as URLs. */
  urlOutput: boolean;
  /** The most prompt characters (also its context_window). */
  maxPromptChars: number;
}

/**
 * Where a catalog model is served: a provider entry and the model's name there. A model
 * without `deployments` in the config has one, the provider its id names.
 */
export interface Deployment {
  /** `<provider>:<upstream model>`: the upstream's identity, shared by every catalog model served by it (its health is). */
  id: string;
  provider: string;
  upstreamModel: string;
  /** Share of the calls among the deployments of one priority (weighted routing). */
  weight: number;
  /** 1 first; a higher tier is used only when every deployment of the lower ones failed or rests. */
  priority: number;
}

export interface ModelConfig {
  id: string;
  name: string;
  provider: string;
  upstreamModel: string;
  type: ModelType;
  contextWindow?: number;
  maxOutputTokens?: number;
  pricing: ModelPricing;
  embedding?: EmbeddingSpec;
  speech?: SpeechSpec;
  transcription?: TranscriptionSpec;
  image?: ImageSpec;
  /** Unix seconds, for the OpenAI list shape; defaults to the catalog's date. */
  created: number;
  /** At least one; sorted by priority (the order they are written in within one). */
  deployments: readonly Deployment[];
}

/** What a failed attempt may be retried on: an upstream HTTP status, a failed connection, a timeout. */
export type RetryCondition = number | 'connect' | 'timeout';

/** `routing:` in the YAML: how calls choose among deployments, retry and fall back (src/core/routing/). */
export interface RoutingConfig {
  strategy: 'weighted' | 'least-busy' | 'latency';
  /** Further attempts after the first, over the model's deployments and then its fallbacks. */
  retries: number;
  retryOn: ReadonlySet<RetryCondition>;
  /** A Retry-After up to this is waited for (or another deployment tried); longer: the deployment rests that long. */
  maxRetryAfterMs: number;
  /** A whole call, every attempt included, until its answer starts reaching the client. */
  timeoutMs: number;
  cooldown: { failures: number; windowMs: number; durationMs: number };
  /** Model id ► the models tried, in order, once every deployment of it failed or rests. */
  fallbacks: Readonly<Record<string, readonly string[]>>;
  /**
   * A chat call's output limit above its model's is lowered to the model's (and said in
   * `x-gateway-max-tokens-clamped`) instead of refused with 400, on every chat format; the
   * messages format always clamps (its max_tokens is required, and clients set it high).
   */
  clampMaxTokens: boolean;
}

/**
 * One entry of `aliases:` in the YAML: a name clients may use for a catalog model (Claude
 * Code's default model names mapped to whatever a team runs). Resolved at the ingress, before
 * anything else (src/core/catalog.ts): billing is at the target's prices.
 */
export interface ModelAlias {
  /** The name clients use; with `*` (any run of characters) when `pattern`. */
  name: string;
  /** The catalog model id it stands for. */
  target: string;
  /** A glob (`claude-*-haiku-*`): tried, in file order, for names neither an exact alias nor the catalog knows. */
  pattern: boolean;
}

/**
 * Exceptions to the refusal of URLs a caller gives the gateway to fetch (images for
 * upstreams that cannot fetch them): private, loopback and other internal addresses and every
 * port but 80 and 443 are refused unless listed here.
 */
export interface OutboundConfig {
  /** CIDRs (normalized network addresses, `10.1.0.0/16`) the gateway may connect to anyway. */
  allowPrivate: readonly string[];
  /** Ports allowed besides 80 and 443. */
  allowPorts: readonly number[];
}

/** `cache:` in the YAML: the exact and semantic response caches. */
export interface CacheConfig {
  enabled: boolean;
  /** Whose calls share entries: one account's keys (`account`), or each key on its own (`key`). Never across accounts. */
  scope: 'account' | 'key';
  ttlMs: number;
  /** Limits of the SQLite store (and of the Redis exact tier), least recently used evicted first. */
  maxEntries: number;
  maxBytes: number;
  /** Calls that set a higher temperature are not cached (they ask for variety). */
  maxTemperature: number;
  /** Cache calls whose last message is a tool result (an agent loop mid-task): off by default. */
  toolResults: boolean;
  /** What a hit costs, as a fraction of the answer's list price (0: free). */
  hitPrice: number;
  exact: { models: readonly string[] };
  semantic: {
    models: readonly string[];
    /** A catalog embedding model (id or short name); its calls are billed to the caller. */
    embeddingModel: string;
    /** Vector length asked of models that can shorten theirs; undefined: the model's own. */
    dimensions: number | undefined;
    /** Cosine similarity at or above which an earlier prompt's answer is served. */
    threshold: number;
  };
}

/** `auth.signup:` in the YAML: how fast anonymous clients may create accounts, and with which addresses. */
export interface SignupConfig {
  /** Sign-ups an hour from one client address (an IPv6 /64); 0: no limit. */
  perAddressPerHour: number;
  /** Sign-ups a minute over the whole gateway (every daemon sharing Redis); 0: no limit. */
  perMinute: number;
  /** Lowercase domains whose email addresses may sign up; empty: any. */
  emailDomains: readonly string[];
}

/**
 * What protects the daemon from more calls than it can serve and from slow clients
 * (`server.max_in_flight`, `max_connections`, `headers_timeout`, `request_timeout`,
 * `body_idle_timeout`): src/http/server.ts.
 */
export interface ServerLimits {
  /** Calls in flight (streams until they end) beyond which a new one gets 503 `overloaded` at once; health endpoints are never counted nor refused. */
  maxInFlight: number;
  /** Open sockets beyond which a new one is closed as it is accepted (node's server.maxConnections). */
  maxConnections: number;
  /** The most time from a connection's (or a request's) first byte to the end of its headers (node's headersTimeout); 408 and close beyond. */
  headersTimeoutMs: number;
  /** The most time from a request's first byte to the end of its body (node's requestTimeout; 0: none). Never the response: a stream runs on. */
  requestTimeoutMs: number;
  /** The longest pause while a request body is read before 408 and close (0: none). */
  bodyIdleTimeoutMs: number;
}

export interface GovernanceConfig {
  /** The IANA zone calendar periods (daily, weekly, monthly budgets) follow. */
  timeZone: string;
}

export type AlertEvent = 'balance_low' | 'key_budget' | 'account_spend_limit' | 'deployment_resting';

export interface AlertsConfig {
  /** Absent: alerts are recorded (the dashboard lists them) but sent nowhere. */
  webhookUrl?: string;
  /** Signs each body: `x-gateway-signature: sha256=<HMAC-SHA256 hex>`. */
  webhookSecret?: string;
  events: readonly AlertEvent[];
  /** balance_low: when a wallet falls below this (0: never). */
  balanceLowMicros: number;
}

export interface MetricsConfig {
  /** `GET <path>` in Prometheus text format (on by default). */
  enabled: boolean;
  path: string;
  /** Set: `/metrics` needs `Authorization: Bearer <token>`. Unset: loopback clients only. */
  token?: string;
  /** Per-key series (opt-in), at most maxKeySeries keys; the rest as key="other". */
  keyLabels: boolean;
  maxKeySeries: number;
}

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TelemetryConfig {
  /** Traces exported by OTLP (telemetry.enabled, or an OTLP endpoint in the environment). */
  enabled: boolean;
  /** The traces URL (`.../v1/traces`); absent: the exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else localhost:4318. */
  endpoint?: string;
  protocol: OtlpProtocol;
  serviceName: string;
  /** A ratio of root traces kept (a client's sampled parent is followed); absent: OTEL_TRACES_SAMPLER[_ARG], else all. */
  sampleRatio?: number;
  /** Prompts and answers on spans (gen_ai.input.messages, gen_ai.output.messages): never unless set. */
  captureContent: boolean;
}

export interface GatewayConfig {
  server: {
    host: string;
    port: number;
    maxBodyBytes: number;
    shutdownTimeoutMs: number;
    /** Trust `x-forwarded-for` for the client address (only behind a proxy you run). */
    trustProxy: boolean;
    /**
     * With trustProxy: the proxies' addresses and CIDRs. The client address is the rightmost
     * X-Forwarded-For entry none of them is; empty: the socket's peer is the one proxy (the last entry).
     */
    trustedProxies: readonly string[];
    /**
     * The address clients reach the gateway at (`https://llm.example.com`), for the URLs of
     * images it hosts; absent: the request's Host (and X-Forwarded-Proto/Host with trust_proxy).
     */
    publicUrl: string | undefined;
    /** Overload shedding and slow-client limits (the flat `server.*` keys of ServerLimits). */
    limits: ServerLimits;
  };
  database: {
    /** The SQLite file (the embedded default); with `url`, the directory of this host's own files (the cache file, hosted images). */
    path: string;
    /** `postgres://…`: PostgreSQL is the store, shared by every daemon configured with it. */
    url?: string;
    /** PostgreSQL connections per daemon. */
    poolMax: number;
    busyTimeoutMs: number;
    /** How long settled calls wait to be written to the ledger together (settlement.ts). */
    billingBatchMs: number;
  };
  redis?: { url: string; keyPrefix: string; /** How long a stopped daemon's wallet holds outlive it. */ holdLeaseMs: number };
  /** Response caching (src/core/cache/): off unless `cache.enabled`. */
  cache: CacheConfig;
  auth: {
    /** Absent: generated once and kept next to the database. */
    jwtSecret?: string;
    sessionTtlSeconds: number;
    bcryptRounds: number;
    allowSignup: boolean;
    cookieSecure: boolean;
    login: { maxFailures: number; windowSeconds: number };
    /** Limits on `POST /api/auth/signup` (with allowSignup). */
    signup: SignupConfig;
  };
  logging: { level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' };
  /** What the gateway may fetch on a caller's behalf (image URLs): src/core/outbound/. */
  outbound: OutboundConfig;
  routing: RoutingConfig;
  governance: GovernanceConfig;
  alerts: AlertsConfig;
  metrics: MetricsConfig;
  telemetry: TelemetryConfig;
  providers: Readonly<Record<string, ProviderConfig>>;
  models: readonly ModelConfig[];
  /** `aliases:`, in file order (exact names and patterns). */
  aliases: readonly ModelAlias[];
  /** Where the config came from, for messages: a file path or "built-in defaults". */
  source: string;
}
