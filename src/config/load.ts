import { existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { mergeModelEntries, parseModel, toSourcedEntries } from './catalog.js';
import { CLOUD_KEYS, derivesBaseUrl, readCloud } from './clouds.js';
import { DEFAULT_ANTHROPIC_VERSION, DEFAULT_PROVIDER_TIMEOUTS, DEFAULT_RAW_CONFIG } from './defaults.js';
import {
  isRecord,
  Problems,
  readBool,
  readDuration,
  readEnum,
  parseDuration,
  readInt,
  readSection,
  readSize,
  readString,
  readUrl,
  type Raw,
} from './fields.js';
import { interpolateEnv } from './interpolate.js';
import { readAliases } from './aliases.js';
import { readFallbacks, readRouting } from './routing.js';
import { readAlerts, readGovernance } from './governance.js';
import { readMetrics, readTelemetry } from './observability.js';
import { readBillingBatch, readCache, readOutbound } from './sections.js';
import { readServerLimits } from './server-limits.js';
import { readSignup, readTrustedProxies } from './public-access.js';
import { PROVIDER_TYPES, type GatewayConfig, type ProviderType, type ModelConfig, type ProviderConfig } from './types.js';
import { ConfigError } from './errors.js';
import { BUILTIN_CATALOG, parseYamlFile, readCatalogFile } from './files.js';

/** YAML ► ${ENV} interpolation ► defaults ► validation with path-precise messages ► frozen object. */

export { ConfigError };
export { BUILTIN_CATALOG, BUILTIN_CATALOG_JSON, compileBuiltinCatalog, PACKAGE_ROOT } from './files.js';

/** `created` for catalog models that do not state one (the catalog's price date). */
const CATALOG_CREATED = 1_763_683_200; // 2025-11-21T00:00:00Z

export interface LoadOptions {
  /** `--config FILE`; must exist when given. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** Finds the config file: --config, then $GATEWAY_CONFIG, then ./gateway.yaml, else none. */
export function resolveConfigFile(options: LoadOptions): string | undefined {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const explicit = options.file ?? (env.GATEWAY_CONFIG || undefined);
  if (explicit) return resolve(cwd, explicit);
  const local = resolve(cwd, 'gateway.yaml');
  return existsSync(local) ? local : undefined;
}

export function loadConfig(options: LoadOptions = {}): GatewayConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const file = resolveConfigFile(options);
  let userRaw: unknown = {};
  if (file) {
    if (!existsSync(file)) throw new ConfigError(file, [`config file not found: ${file}`]);
    userRaw = parseYamlFile(file);
  }
  return buildConfig(userRaw, { env, baseDir: file ? dirname(file) : cwd, source: file ?? 'built-in defaults' });
}


interface BuildOptions {
  env: NodeJS.ProcessEnv;
  baseDir: string;
  source: string;
}

/** Validates a parsed (not yet interpolated) user config merged over the defaults. */
export function buildConfig(userRaw: unknown, options: BuildOptions): GatewayConfig {
  const topProblems = new Problems();
  const top = readSection(userRaw, '', ['server', 'database', 'redis', 'cache', 'auth', 'logging', 'outbound', 'routing', 'governance', 'alerts', 'metrics', 'telemetry', 'catalog', 'providers', 'models', 'aliases'], topProblems);
  if (topProblems.lines.length > 0 && !isRecord(userRaw)) throw new ConfigError(options.source, ['(root): must be a mapping']);

  const merged = mergeWithDefaults(top);
  const { value, unset } = interpolateEnv(merged, options.env);
  const raw = value as Raw;
  const problems = new Problems(unset);
  problems.lines.push(...topProblems.lines);

  const server = readSection(raw.server, 'server', ['host', 'port', 'max_body_size', 'shutdown_timeout', 'trust_proxy', 'trusted_proxies', 'public_url', 'max_in_flight', 'max_connections', 'headers_timeout', 'request_timeout', 'body_idle_timeout'], problems);
  const database = readSection(raw.database, 'database', ['path', 'url', 'pool_size', 'busy_timeout', 'billing_batch_window'], problems);
  const redis = readSection(raw.redis, 'redis', ['url', 'key_prefix', 'hold_lease'], problems);
  const auth = readSection(raw.auth, 'auth', ['jwt_secret', 'session_ttl', 'bcrypt_rounds', 'allow_signup', 'cookie_secure', 'login', 'signup'], problems);
  const login = readSection(auth.login, 'auth.login', ['max_failures', 'window'], problems);
  const logging = readSection(raw.logging, 'logging', ['level'], problems);
  const outbound = readSection(raw.outbound, 'outbound', ['allow_private', 'allow_ports'], problems);
  const catalog = readSection(raw.catalog, 'catalog', ['path'], problems);

  const dbPath = readString(database, 'path', 'database', problems, { required: true }) ?? '';
  const databaseUrl = readString(database, 'url', 'database', problems, { pattern: /^postgres(ql)?:\/\/\S+$/, rule: 'must be a postgres:// or postgresql:// URL' });
  // An unset ${DATABASE_URL} must not quietly start a daemon on an empty local SQLite file
  // while its peers share PostgreSQL: a split wallet. (`${VAR:-}` says "absent is fine".)
  const unsetDatabase = databaseUrl === undefined ? problems.unsetVariables('database.url') : undefined;
  if (unsetDatabase?.length) problems.add('database.url', `is empty (write \${${unsetDatabase[0]}:-} to fall back to SQLite when it is unset)`);
  const redisUrl = readString(redis, 'url', 'redis', problems, { pattern: /^rediss?:\/\/\S+$/, rule: 'must be a redis:// or rediss:// URL' });
  const jwtSecret = readString(auth, 'jwt_secret', 'auth', problems);
  if (jwtSecret !== undefined && jwtSecret.length < 32) problems.add('auth.jwt_secret', 'must be at least 32 characters');
  // A generated secret lives beside the SQLite file, on one host; daemons sharing PostgreSQL
  // must all sign and check sessions with one secret.
  if (databaseUrl !== undefined && jwtSecret === undefined) problems.add('auth.jwt_secret', 'is required with database.url (every daemon must sign sessions with the same secret)');

  // A provider the user wrote (not one the embedded defaults bring) must be right; a default
  // one read from the ambient environment is left uncallable when that environment is not.
  const written = new Set(isRecord(top.providers) ? Object.keys(top.providers) : []);
  const providers = readProviders(raw.providers, problems, options.baseDir, written);
  const models = readModels(raw, catalog, new Map(Object.values(providers).map((p) => [p.name, p.type])), options.baseDir, problems);
  const routing = { ...readRouting(raw.routing, problems), fallbacks: readFallbacks(isRecord(raw.routing) ? raw.routing.fallbacks : undefined, models, problems) };
  const aliases = readAliases(raw.aliases, models, problems);

  const config: GatewayConfig = {
    server: {
      host: readString(server, 'host', 'server', problems, { required: true }) ?? '127.0.0.1',
      port: readInt(server, 'port', 'server', problems, 0, 65535, 8080),
      maxBodyBytes: readSize(server, 'max_body_size', 'server', problems, 25 * 1024 * 1024, 1024, 512 * 1024 * 1024),
      shutdownTimeoutMs: readDuration(server, 'shutdown_timeout', 'server', problems, 10_000, 0),
      trustProxy: readBool(server, 'trust_proxy', 'server', problems, false),
      trustedProxies: readTrustedProxies(server, problems),
      publicUrl: readUrl(server, 'public_url', 'server', problems, false)?.replace(/\/+$/, ''),
      limits: readServerLimits(server, problems),
    },
    database: {
      path: dbPath === ':memory:' ? dbPath : resolve(options.baseDir, dbPath),
      ...(databaseUrl !== undefined ? { url: databaseUrl } : {}),
      poolMax: readInt(database, 'pool_size', 'database', problems, 1, 200, 10),
      busyTimeoutMs: readDuration(database, 'busy_timeout', 'database', problems, 5000, 0),
      billingBatchMs: readBillingBatch(database, problems),
    },
    auth: {
      sessionTtlSeconds: Math.floor(readDuration(auth, 'session_ttl', 'auth', problems, 7 * 86_400_000, 60_000) / 1000),
      bcryptRounds: readInt(auth, 'bcrypt_rounds', 'auth', problems, 4, 15, 10),
      allowSignup: readBool(auth, 'allow_signup', 'auth', problems, true),
      cookieSecure: readBool(auth, 'cookie_secure', 'auth', problems, false),
      login: {
        maxFailures: readInt(login, 'max_failures', 'auth.login', problems, 1, 1000, 5),
        windowSeconds: Math.floor(readDuration(login, 'window', 'auth.login', problems, 900_000, 1000) / 1000),
      },
      signup: readSignup(auth.signup, problems),
    },
    logging: { level: readEnum(logging, 'level', 'logging', problems, ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info') },
    outbound: readOutbound(outbound, problems),
    routing,
    cache: readCache(raw.cache, problems),
    governance: readGovernance(raw.governance, problems),
    alerts: readAlerts(raw.alerts, problems),
    metrics: readMetrics(raw.metrics, problems),
    telemetry: readTelemetry(raw.telemetry, options.env, problems),
    providers,
    models,
    aliases,
    source: options.source,
  };
  if (jwtSecret !== undefined) config.auth.jwtSecret = jwtSecret;
  if (redisUrl !== undefined) {
    config.redis = { url: redisUrl, keyPrefix: readString(redis, 'key_prefix', 'redis', problems) ?? 'gateway:', holdLeaseMs: readDuration(redis, 'hold_lease', 'redis', problems, 180_000, 3000) };
  }
  if (problems.lines.length > 0) throw new ConfigError(options.source, problems.lines);
  return deepFreeze(config);
}

/** Sections merge field by field over the defaults; providers by name; models are kept for the catalog merge. */
function mergeWithDefaults(user: Raw): Raw {
  const defaults = DEFAULT_RAW_CONFIG as unknown as Raw;
  const out: Raw = {};
  for (const key of ['server', 'database', 'cache', 'auth', 'logging', 'outbound', 'routing', 'catalog']) {
    const base = defaults[key] as Raw;
    const mine = user[key];
    out[key] = isRecord(mine) ? { ...base, ...mine } : mine === undefined || mine === null ? base : mine;
  }
  const cache = out.cache;
  if (isRecord(cache) && isRecord(user.cache)) {
    for (const tier of ['exact', 'semantic']) {
      const mine = user.cache[tier];
      if (isRecord(mine)) cache[tier] = { ...((defaults.cache as Raw)[tier] as Raw), ...mine };
    }
  }
  const routing = out.routing;
  if (isRecord(routing) && isRecord(user.routing) && isRecord(user.routing.cooldown)) {
    routing.cooldown = { ...((defaults.routing as Raw).cooldown as Raw), ...user.routing.cooldown };
  }
  const auth = out.auth;
  if (isRecord(auth) && isRecord(user.auth) && isRecord(user.auth.login)) {
    auth.login = { ...(defaults.auth as Raw).login as Raw, ...user.auth.login };
  }
  if (isRecord(auth) && isRecord(user.auth) && isRecord(user.auth.signup)) {
    auth.signup = { ...((defaults.auth as Raw).signup as Raw), ...user.auth.signup };
  }
  if (user.redis !== undefined) out.redis = user.redis;
  if (user.governance !== undefined) out.governance = user.governance;
  if (user.alerts !== undefined) out.alerts = user.alerts;
  if (user.metrics !== undefined) out.metrics = user.metrics;
  if (user.telemetry !== undefined) out.telemetry = user.telemetry;
  const providers = user.providers;
  if (isRecord(providers)) {
    const base = defaults.providers as Raw;
    const mergedProviders: Raw = { ...base };
    for (const [name, entry] of Object.entries(providers)) {
      // A provider of the user's own type under a default's name (an OpenAI-compatible "bedrock") takes nothing of the default.
      const sameType = isRecord(entry) && isRecord(base[name]) && (entry.type === undefined || entry.type === (base[name] as Raw).type);
      const merged = sameType ? { ...(base[name] as Raw), ...entry } : entry;
      // The user's `api_keys` replace the default entry's `api_key` (its variable, if set, is not a third key).
      if (isRecord(merged) && isRecord(entry) && entry.api_keys !== undefined && entry.api_key === undefined) delete merged.api_key;
      // A Bedrock API key of the user's replaces the default entry's IAM credentials.
      if (isRecord(merged) && isRecord(entry) && (entry.api_key !== undefined || entry.api_keys !== undefined) && entry.access_key_id === undefined) {
        for (const key of ['access_key_id', 'secret_access_key', 'session_token']) delete merged[key];
      }
      mergedProviders[name] = merged;
    }
    out.providers = mergedProviders;
  } else {
    out.providers = providers === undefined || providers === null ? defaults.providers : providers;
  }
  out.models = user.models;
  out.aliases = user.aliases;
  return out;
}

const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const PROVIDER_KEYS = ['type', 'base_url', 'api_key', 'api_keys', 'headers', 'timeouts', 'anthropic_version', 'max_tokens_param', 'tokenizer', 'responses', ...Object.keys(CLOUD_KEYS)];

function readProviders(raw: unknown, problems: Problems, baseDir: string, written: ReadonlySet<string>): Record<string, ProviderConfig> {
  const out: Record<string, ProviderConfig> = {};
  if (!isRecord(raw)) {
    problems.add('providers', 'must be a mapping of provider name to settings');
    return out;
  }
  for (const [name, value] of Object.entries(raw)) {
    const path = `providers.${name}`;
    if (!PROVIDER_NAME.test(name)) {
      problems.add(path, 'provider names must be lowercase letters, digits, - and _ (they prefix model ids)');
      continue;
    }
    if (!isRecord(value)) {
      problems.add(path, 'must be a mapping');
      continue;
    }
    const entry = readSection(value, path, PROVIDER_KEYS, problems);
    const type = readString(entry, 'type', path, problems, { required: true });
    // A provider of an unknown type is read for its other problems, then left out (its models are refused by name).
    const known = type === undefined || (PROVIDER_TYPES as readonly string[]).includes(type);
    if (!known) problems.add(`${path}.type`, `must be one of: ${PROVIDER_TYPES.join(', ')} (openai covers every OpenAI-compatible vendor)`);
    const baseUrl = readUrl(entry, 'base_url', path, problems, !derivesBaseUrl(type));
    const headers = readHeaders(entry.headers, `${path}.headers`, problems);
    const timeouts = readSection(entry.timeouts, `${path}.timeouts`, ['connect', 'first_byte', 'idle'], problems);
    const provider: ProviderConfig = {
      name,
      type: (known ? (type ?? 'openai') : 'openai') as ProviderConfig['type'],
      baseUrl: baseUrl ?? '',
      headers,
      maxTokensParam: readEnum(entry, 'max_tokens_param', path, problems, ['max_tokens', 'max_completion_tokens'] as const, 'max_tokens'),
      apiKeys: [],
      timeouts: {
        connectMs: readDuration(timeouts, 'connect', `${path}.timeouts`, problems, parseDuration(DEFAULT_PROVIDER_TIMEOUTS.connect) as number),
        firstByteMs: readDuration(timeouts, 'first_byte', `${path}.timeouts`, problems, parseDuration(DEFAULT_PROVIDER_TIMEOUTS.first_byte) as number),
        idleMs: readDuration(timeouts, 'idle', `${path}.timeouts`, problems, parseDuration(DEFAULT_PROVIDER_TIMEOUTS.idle) as number),
      },
    };
    const keys = readApiKeys(entry, path, problems);
    provider.apiKeys = keys.keys;
    if (keys.keys[0] !== undefined) provider.apiKey = keys.keys[0];
    else if (keys.unsetVariable !== undefined) provider.apiKeyEnv = keys.unsetVariable;
    if (provider.type === 'anthropic') {
      provider.anthropicVersion = readString(entry, 'anthropic_version', path, problems) ?? DEFAULT_ANTHROPIC_VERSION;
    } else if (entry.anthropic_version !== undefined) {
      problems.add(`${path}.anthropic_version`, 'only applies to providers of type anthropic');
    }
    if (provider.type !== 'openai' && provider.type !== 'azure' && entry.max_tokens_param !== undefined) {
      problems.add(`${path}.max_tokens_param`, 'only applies to providers of type openai or azure');
    }
    if (written.has(name)) readCloud(entry, provider, path, problems, baseDir);
    else {
      const ambient = problems.scratch();
      readCloud(entry, provider, path, ambient, baseDir);
      // Calls answer 503 with what is wrong: the daemon starts for every other provider.
      if (ambient.lines.length > 0) provider.apiKeyEnv = `valid settings (${ambient.lines.join('; ')})`;
    }
    const tokenizer = readTokenizer(entry.tokenizer, `${path}.tokenizer`, problems);
    if (tokenizer) provider.tokenizer = tokenizer;
    if (provider.type !== 'openai' && entry.responses !== undefined && entry.responses !== null) {
      problems.add(`${path}.responses`, 'only applies to providers of type openai (an upstream with its own /v1/responses)');
    } else if (readBool(entry, 'responses', path, problems, false)) provider.responses = true;
    if (known) out[name] = provider;
  }
  return out;
}

/**
 * `api_key` (one) or `api_keys` (several, used in turn). A key whose variable is unset is left
 * out; with none left, the variable is named for the 503 a call to the provider gets.
 */
function readApiKeys(entry: Raw, path: string, problems: Problems): { keys: string[]; unsetVariable?: string } {
  if (entry.api_keys !== undefined && entry.api_key !== undefined) {
    problems.add(`${path}.api_keys`, 'set api_key or api_keys, not both');
    return { keys: [] };
  }
  if (entry.api_keys === undefined || entry.api_keys === null) {
    const key = readString(entry, 'api_key', path, problems);
    if (key !== undefined) return { keys: [key] };
    const variable = problems.unsetVariables(`${path}.api_key`)?.[0];
    return variable !== undefined ? { keys: [], unsetVariable: variable } : { keys: [] };
  }
  const list = typeof entry.api_keys === 'string' ? entry.api_keys.split(',').map((item) => item.trim()) : entry.api_keys;
  if (!Array.isArray(list)) {
    problems.add(`${path}.api_keys`, 'must be a list of keys');
    return { keys: [] };
  }
  const keys: string[] = [];
  let unsetVariable: string | undefined;
  list.forEach((item: unknown, index) => {
    if (item === '' || item === null || item === undefined) {
      unsetVariable ??= problems.unsetVariables(`${path}.api_keys[${index}]`)?.[0];
      return;
    }
    if (typeof item !== 'string') problems.add(`${path}.api_keys[${index}]`, 'must be a string');
    else if (!keys.includes(item)) keys.push(item);
  });
  return unsetVariable !== undefined && keys.length === 0 ? { keys, unsetVariable } : { keys };
}

/** `tokenizer: { ratio, split_digits }`: the vendor's token counts against cl100k (src/core/tokens.ts). */
function readTokenizer(raw: unknown, path: string, problems: Problems): ProviderConfig['tokenizer'] {
  if (raw === undefined || raw === null) return undefined;
  const section = readSection(raw, path, ['ratio', 'split_digits'], problems);
  const ratio = section.ratio;
  if (typeof ratio !== 'number' || !Number.isFinite(ratio) || ratio < 1 || ratio > 4) {
    problems.add(`${path}.ratio`, 'must be a number from 1 to 4 (how many tokens the vendor counts for one cl100k token, at most)');
    return undefined;
  }
  return { ratio, splitDigits: readBool(section, 'split_digits', path, problems, false) };
}

function readHeaders(raw: unknown, path: string, problems: Problems): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (!isRecord(raw)) {
    problems.add(path, 'must be a mapping of header name to value');
    return {};
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (!/^[A-Za-z0-9-]+$/.test(name)) problems.add(`${path}.${name}`, 'is not a valid header name');
    else if (typeof value !== 'string') problems.add(`${path}.${name}`, 'must be a string');
    else out[name.toLowerCase()] = value;
  }
  return out;
}

function readModels(raw: Raw, catalog: Raw, providerTypes: ReadonlyMap<string, ProviderType>, baseDir: string, problems: Problems): ModelConfig[] {
  const catalogPath = readString(catalog, 'path', 'catalog', problems) ?? 'builtin';
  let base: ReturnType<typeof toSourcedEntries> = [];
  if (catalogPath !== 'none') {
    const file = catalogPath === 'builtin' ? BUILTIN_CATALOG : isAbsolute(catalogPath) ? catalogPath : resolve(baseDir, catalogPath);
    if (!existsSync(file)) problems.add('catalog.path', `file not found: ${file}`);
    else {
      try {
        const doc = readCatalogFile(file);
        const models = isRecord(doc) ? doc.models : undefined;
        base = toSourcedEntries(models, `${file}: models`, problems);
      } catch (error) {
        if (error instanceof ConfigError) problems.lines.push(...error.problems);
        else throw error;
      }
    }
  }
  const overrides = toSourcedEntries(raw.models, 'models', problems);
  const entries = mergeModelEntries(base, overrides, problems);
  const models: ModelConfig[] = [];
  for (const entry of entries) {
    const model = parseModel(entry, providerTypes, CATALOG_CREATED, problems);
    if (model) models.push(model);
  }
  return models;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
