/**
 * The embedded default configuration, in the same snake_case shape as the YAML file, so that
 * it goes through the same interpolation and validation as a user's file. A user's file is
 * merged over it: sections field by field, providers by name, models by id.
 */

export const DEFAULT_RAW_CONFIG = {
  server: {
    host: '127.0.0.1',
    port: 8080,
    max_body_size: '25mb',
    shutdown_timeout: '10s',
    trust_proxy: false,
    // Slow clients (src/config/server-limits.ts has the reasons); max_in_flight and
    // max_connections are sized for the machine there when unset.
    headers_timeout: '20s',
    request_timeout: '300s',
    body_idle_timeout: '20s',
  },
  database: { path: './data/gateway.db', busy_timeout: '5s', billing_batch_window: '100ms' },
  auth: {
    session_ttl: '7d',
    bcrypt_rounds: 10,
    allow_signup: true,
    cookie_secure: false,
    login: { max_failures: 5, window: '15m' },
    // Sign-ups an hour per client address (an IPv6 /64) and a minute in all; 0: no limit.
    signup: { per_address: 5, per_minute: 60, email_domains: [] },
  },
  logging: { level: 'info' },
  cache: {
    enabled: false,
    scope: 'account',
    ttl: '1h',
    max_entries: 100_000,
    max_size: '256mb',
    max_temperature: 1,
    tool_results: false,
    hit_price: 0,
    exact: { models: ['*'] },
    semantic: { models: [], embedding_model: 'openai/text-embedding-3-small', dimensions: 256, threshold: 0.95 },
  },
  outbound: { allow_private: [], allow_ports: [] },
  routing: {
    strategy: 'weighted',
    retries: 2,
    max_retry_after: '10s',
    timeout: '300s',
    cooldown: { failures: 3, window: '60s', duration: '30s' },
    clamp_max_tokens: false,
  },
  catalog: { path: 'builtin' },
  providers: {
    openai: { type: 'openai', base_url: 'https://api.openai.com/v1', api_key: '${OPENAI_API_KEY}', max_tokens_param: 'max_completion_tokens' },
    anthropic: { type: 'anthropic', base_url: 'https://api.anthropic.com', api_key: '${ANTHROPIC_API_KEY}' },
    gemini: { type: 'gemini', base_url: 'https://generativelanguage.googleapis.com', api_key: '${GEMINI_API_KEY}' },
    groq: { type: 'openai', base_url: 'https://api.groq.com/openai/v1', api_key: '${GROQ_API_KEY}' },
    // Mistral's current models (Small 3+, Medium 3) use Tekken, which splits numbers into
    // digits; with a token per digit it counts at most 1.07 times cl100k on 95% of natural
    // samples (median 0.93). Older SentencePiece models (7B, Mixtral, Large 2407) count up to
    // 1.34: give those ratio 1.35.
    mistral: { type: 'openai', base_url: 'https://api.mistral.ai/v1', api_key: '${MISTRAL_API_KEY}', tokenizer: { ratio: 1.15, split_digits: true } },
    deepseek: { type: 'openai', base_url: 'https://api.deepseek.com/v1', api_key: '${DEEPSEEK_API_KEY}' },
    // Speech (Aura-2, /v1/speak) and transcription (Nova, /v1/listen); no chat.
    deepgram: { type: 'deepgram', base_url: 'https://api.deepgram.com', api_key: '${DEEPGRAM_API_KEY}' },
    // The clouds, from the variables their own SDKs read (README "Cloud providers").
    bedrock: {
      type: 'bedrock',
      region: '${AWS_REGION:-us-east-1}',
      access_key_id: '${AWS_ACCESS_KEY_ID}',
      secret_access_key: '${AWS_SECRET_ACCESS_KEY}',
      session_token: '${AWS_SESSION_TOKEN:-}',
    },
    vertex: { type: 'vertex', project: '${GOOGLE_CLOUD_PROJECT}', region: '${GOOGLE_CLOUD_LOCATION:-global}', credentials: '${GOOGLE_APPLICATION_CREDENTIALS}' },
  },
  models: [],
} as const;

export const DEFAULT_PROVIDER_TIMEOUTS = { connect: '10s', first_byte: '120s', idle: '60s' } as const;

export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/** Azure OpenAI's current GA api-version for the deployments API. */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21';
