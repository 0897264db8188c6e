import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig, PACKAGE_ROOT, resolveConfigFile } from '../../src/config/load.js';
import { build, problemsOf, problemsThrownBy } from '../support/config.js';
import { tempDir } from '../support/gateway.js';

t.test('built-in defaults', async (t) => {
  const config = build({});
  t.equal(config.server.host, '127.0.0.1');
  t.equal(config.server.port, 8080);
  t.equal(config.database.path, '/srv/gw/data/gateway.db', 'the database path is relative to the config directory');
  t.equal(config.redis, undefined, 'no Redis unless configured');
  t.equal(config.auth.jwtSecret, undefined, 'secret generated later when not configured');
  t.equal(config.auth.sessionTtlSeconds, 7 * 86400);
  t.same(Object.keys(config.providers).sort(), ['anthropic', 'bedrock', 'deepgram', 'deepseek', 'gemini', 'groq', 'mistral', 'openai', 'vertex']);
  t.equal(config.providers.anthropic?.anthropicVersion, '2023-06-01');
  t.same(config.providers.openai?.timeouts, { connectMs: 10_000, firstByteMs: 120_000, idleMs: 60_000 });
  t.ok(Object.isFrozen(config) && Object.isFrozen(config.server) && Object.isFrozen(config.models[0]), 'the config is frozen');
});

t.test('the shipped catalog', async (t) => {
  const { models } = build({});
  const chat = models.filter((m) => m.type === 'chat');
  t.ok(chat.length >= 15, `at least 15 chat models (has ${chat.length})`);
  const providers = new Set(chat.map((m) => m.provider));
  for (const name of ['openai', 'anthropic', 'gemini', 'groq', 'mistral', 'deepseek']) t.ok(providers.has(name), `chat models from ${name}`);
  for (const type of ['embedding', 'speech', 'transcription', 'image'] as const) t.ok(models.some((m) => m.type === type), `has ${type} models`);
  const mini = models.find((m) => m.id === 'openai/gpt-4o-mini');
  t.same(mini?.pricing, { inputPer1M: 12_600_000, outputPer1M: 50_400_000, cacheReadPer1M: 6_300_000 }, 'INR prices as integer µINR per 1M');
  t.equal(mini?.upstreamModel, 'gpt-4o-mini');
  t.equal(models.find((m) => m.id === 'groq/openai/gpt-oss-120b')?.upstreamModel, 'openai/gpt-oss-120b', 'the upstream name is everything after the provider');
  t.equal(new Set(models.map((m) => m.id)).size, models.length, 'ids are unique');
});

t.test('env interpolation', async (t) => {
  const config = build(
    {
      server: { port: '${PORT:-9090}', host: '${HOST}' },
      auth: { jwt_secret: '${SECRET}' },
      providers: { openai: { api_key: 'sk-${KEY_PART}-$${literal}' }, local: { type: 'openai', base_url: 'http://127.0.0.1:11434/v1' } },
    },
    { HOST: '0.0.0.0', SECRET: 's'.repeat(40), KEY_PART: 'abc' },
  );
  t.equal(config.server.port, 9090, 'default used when the variable is unset');
  t.equal(config.server.host, '0.0.0.0');
  t.equal(config.auth.jwtSecret, 's'.repeat(40));
  t.equal(config.providers.openai?.apiKey, 'sk-abc-${literal}', '$${ writes a literal ${');
  t.equal(config.providers.local?.apiKey, undefined, 'a provider may have no key (local servers)');
});

t.test('a provider whose key variable is unset is allowed and remembers the variable', async (t) => {
  const config = build({}, { OPENAI_API_KEY: 'sk-real' });
  t.equal(config.providers.openai?.apiKey, 'sk-real');
  t.equal(config.providers.anthropic?.apiKey, undefined);
  t.equal(config.providers.anthropic?.apiKeyEnv, 'ANTHROPIC_API_KEY');
  const custom = build({ providers: { together: { type: 'openai', base_url: 'https://api.together.xyz/v1', api_key: '${TOGETHER_KEY}' } } });
  t.equal(custom.providers.together?.apiKeyEnv, 'TOGETHER_KEY');
});

t.test('user providers and models merge over the defaults', async (t) => {
  const config = build({
    providers: { openai: { base_url: 'http://127.0.0.1:9999/v1' }, ollama: { type: 'openai', base_url: 'http://127.0.0.1:11434/v1' } },
    models: [
      { id: 'openai/gpt-4o-mini', input_cost_per_1m: 10 },
      { id: 'ollama/llama3.2', name: 'Llama 3.2 (local)', input_cost_per_1m: 0, output_cost_per_1m: 0 },
    ],
  });
  t.equal(config.providers.openai?.baseUrl, 'http://127.0.0.1:9999/v1');
  t.equal(config.providers.openai?.type, 'openai', 'fields not given keep their defaults');
  const mini = config.models.find((m) => m.id === 'openai/gpt-4o-mini');
  t.equal(mini?.pricing.inputPer1M, 10_000_000, 'the override changed the input price');
  t.equal(mini?.pricing.outputPer1M, 50_400_000, 'and kept the output price');
  t.equal(mini?.name, 'GPT-4o mini');
  t.ok(config.models.find((m) => m.id === 'ollama/llama3.2'), 'new models are added');
  t.equal(build({ catalog: { path: 'none' }, models: [{ id: 'openai/x', input_cost_per_1m: 1, output_cost_per_1m: 2 }] }).models.length, 1, 'catalog: none drops the shipped catalog');
});

t.test('validation reports every problem with its path and rule', async (t) => {
  const problems = problemsOf({
    server: { port: 70000, prot: 1, max_body_size: 'huge' },
    database: { path: '' },
    redis: { url: 'http://localhost' },
    auth: { jwt_secret: 'short', bcrypt_rounds: 3, session_ttl: 'forever' },
    logging: { level: 'loud' },
    providers: {
      openai: { base_url: 'ftp://x' },
      Bad_Name: { type: 'openai', base_url: 'http://x' },
      weird: { type: 'cohere', base_url: 'http://x', timeouts: { connect: 'soon' } },
      gem: { type: 'gemini', base_url: 'http://x', anthropic_version: '2023-06-01' },
    },
    models: [
      { id: 'nowhere/model', input_cost_per_1m: 1, output_cost_per_1m: 1 },
      { id: 'openai/new-model', input_cost_per_1m: -1 },
      { id: 'openai/img', type: 'image' },
      { name: 'no id' },
      { id: 'openai/gpt-4o', cost: 3 },
    ],
    extra: true,
  });
  const expected = [
    /^extra: unknown key/,
    /^server\.prot: unknown key/,
    /^server\.port: must be an integer from 0 to 65535$/,
    /^server\.max_body_size: must be a size/,
    /^database\.path: is required$/,
    /^redis\.url: must be a redis:\/\/ or rediss:\/\/ URL$/,
    /^auth\.jwt_secret: must be at least 32 characters$/,
    /^auth\.bcrypt_rounds: must be an integer from 4 to 15$/,
    /^auth\.session_ttl: must be a duration/,
    /^logging\.level: must be one of/,
    /^providers\.openai\.base_url: must be an http\(s\) URL$/,
    /^providers\.Bad_Name: provider names must be lowercase/,
    /^providers\.weird\.type: must be one of: openai, anthropic, gemini/,
    /^providers\.weird\.timeouts\.connect: must be a duration/,
    /^providers\.gem\.anthropic_version: only applies to providers of type anthropic$/,
    /^models\[0\]\.id: provider 'nowhere' is not configured under providers$/,
    /^models\[1\]\.input_cost_per_1m: must be >= 0/,
    /^models\[1\]\.output_cost_per_1m: is required for chat models/,
    /^models\[2\]: a image model needs one of: cost_per_image, image_prices$/,
    /^models\[3\]\.id: is required$/,
    /^models\[4\]\.cost: unknown key/,
  ];
  for (const pattern of expected) t.ok(problems.some((line) => pattern.test(line)), `reports ${pattern}`);
  t.equal(problems.length, expected.length, `no other problems: ${JSON.stringify(problems, null, 1)}`);
});

t.test('an unset variable is named in the problem it causes', async (t) => {
  const problems = problemsOf({ providers: { openai: { base_url: '${OPENAI_BASE_URL}' } } });
  t.same(problems, ['providers.openai.base_url: is required ($OPENAI_BASE_URL not set)']);
});

t.test('files: YAML errors, precedence, relative paths', async (t) => {
  const dir = tempDir();
  t.teardown(dir.remove);
  const file = join(dir.path, 'gw.yaml');
  writeFileSync(file, 'server:\n  port: 9000\n  port: 9001\n');
  t.match(problemsThrownBy(() => loadConfig({ file })), [/gw\.yaml:3:3: Map keys must be unique$/], 'duplicate keys are YAML errors with a line number');
  writeFileSync(file, 'server: [unclosed\n');
  t.ok(problemsThrownBy(() => loadConfig({ file })).length > 0, 'syntax errors are ConfigErrors');
  t.match(problemsThrownBy(() => loadConfig({ file: join(dir.path, 'missing.yaml') })), [/config file not found/]);

  writeFileSync(file, 'server: { port: 9100 }\ndatabase: { path: ./db/gw.db }\n');
  const explicit = loadConfig({ file, env: {} });
  t.equal(explicit.server.port, 9100);
  t.equal(explicit.database.path, join(dir.path, 'db/gw.db'), 'database path resolved against the config file');
  t.equal(explicit.source, file);

  t.equal(resolveConfigFile({ env: { GATEWAY_CONFIG: 'gw.yaml' }, cwd: dir.path }), file, '$GATEWAY_CONFIG is used without --config');
  t.equal(resolveConfigFile({ env: {}, cwd: dir.path }), undefined, 'no gateway.yaml: built-in defaults');
  writeFileSync(join(dir.path, 'gateway.yaml'), 'server: { port: 9200 }\n');
  t.equal(loadConfig({ env: {}, cwd: dir.path }).server.port, 9200, './gateway.yaml is found');
  t.equal(loadConfig({ file, env: { GATEWAY_CONFIG: 'gateway.yaml' }, cwd: dir.path }).server.port, 9100, '--config wins over the environment');
  writeFileSync(file, '');
  t.equal(loadConfig({ file, env: {} }).server.port, 8080, 'an empty file means defaults');
});

t.test('gateway.example.yaml is a valid config that states the defaults', async (t) => {
  const example = loadConfig({ file: join(PACKAGE_ROOT, 'gateway.example.yaml'), env: {} });
  const defaults = build({});
  t.same(example.server, defaults.server);
  t.same(example.auth, defaults.auth);
  t.same(example.providers, defaults.providers, 'the example lists the built-in providers as they are');
  t.same(example.routing, defaults.routing, 'and the routing defaults');
  t.equal(example.database.path, join(PACKAGE_ROOT, 'data/gateway.db'));
  t.equal(example.models.length, defaults.models.length);
});

t.test('database.billing_batch_window: a duration from 1ms to 5s, 100ms by default', async (t) => {
  t.equal(build({}).database.billingBatchMs, 100);
  t.equal(build({ database: { billing_batch_window: '250ms' } }).database.billingBatchMs, 250);
  t.match(problemsOf({ database: { billing_batch_window: '0ms' } }), [/^database\.billing_batch_window: must be a duration .*\(at least 1ms\)$/]);
  t.match(problemsOf({ database: { billing_batch_window: '10s' } }), [/^database\.billing_batch_window: must be at most 5s/]);
  t.match(problemsOf({ database: { billing_batch_window: 'soon' } }), [/^database\.billing_batch_window: must be a duration/]);
});

t.test('outbound: the allow-list for URLs fetched on a caller\'s behalf, empty by default', async (t) => {
  const defaults = build({});
  t.same(defaults.outbound, { allowPrivate: [], allowPorts: [] }, 'nothing private allowed, only ports 80 and 443');
  t.ok(Object.isFrozen(defaults.outbound.allowPrivate), 'frozen with the rest');
  const example = loadConfig({ file: join(PACKAGE_ROOT, 'gateway.example.yaml'), env: {} });
  t.same(example.outbound, defaults.outbound, 'gateway.example.yaml states the default');

  const config = build({ outbound: { allow_private: ['127.0.0.1/32', '10.20.0.0/16', 'fd00:1::/32', '192.168.1.10'], allow_ports: [8080, '9000', 8080] } });
  t.same(config.outbound, { allowPrivate: ['127.0.0.1/32', '10.20.0.0/16', 'fd00:1::/32', '192.168.1.10'], allowPorts: [8080, 9000] });
  const fromEnv = build({ outbound: { allow_private: '${NETS}', allow_ports: '${PORTS:-}' } }, { NETS: '10.1.0.0/16, 10.2.0.0/16' });
  t.same(fromEnv.outbound, { allowPrivate: ['10.1.0.0/16', '10.2.0.0/16'], allowPorts: [] }, 'a comma-separated string, as ${VAR} gives');
  t.same(build({ outbound: { allow_private: ['${UNSET_NET}'] } }).outbound.allowPrivate, [], 'an item from an unset variable is absent');
});

t.test('outbound: path-precise problems', async (t) => {
  t.same(problemsOf({ outbound: { allow_private: ['10.0.0.0/8', 'intranet'] } }), ['outbound.allow_private[1]: must be a CIDR like 10.0.0.0/8 or fd00::/8']);
  t.same(problemsOf({ outbound: { allow_private: ['10.0.0.1/8'] } }), [
    'outbound.allow_private[0]: has bits set after the prefix length: write the network address (10.0.0.0/8)',
  ]);
  t.match(problemsOf({ outbound: { allow_private: ['10.0.0.0/40', 42] } }), [/^outbound\.allow_private\[0\]: must be a CIDR like 10\.0\.0\.0\/8 \(prefix length 0 to 32\)$/, /^outbound\.allow_private\[1\]: must be a CIDR like 10\.0\.0\.0\/8$/]);
  t.same(problemsOf({ outbound: { allow_private: 42 } }), ['outbound.allow_private: must be a list of CIDRs like 10.0.0.0/8']);
  t.same(problemsOf({ outbound: { allow_private: 'intranet' } }), ['outbound.allow_private[0]: must be a CIDR like 10.0.0.0/8 or fd00::/8']);
  t.same(problemsOf({ outbound: { allow_ports: [8080, 0, 70000, 'http', 8.5] } }), [
    'outbound.allow_ports[1]: must be a port number from 1 to 65535',
    'outbound.allow_ports[2]: must be a port number from 1 to 65535',
    'outbound.allow_ports[3]: must be a port number from 1 to 65535',
    'outbound.allow_ports[4]: must be a port number from 1 to 65535',
  ]);
  t.same(problemsOf({ outbound: { allow_ports: { http: 8080 } } }), ['outbound.allow_ports: must be a list of port numbers']);
  t.match(problemsOf({ outbound: { allow_hosts: ['images.internal'] } }), [/^outbound\.allow_hosts: unknown key \(expected one of: allow_private, allow_ports\)$/]);
  t.same(problemsOf({ outbound: 'open' }), ['outbound: must be a mapping']);
});

t.test('providers.<name>.tokenizer: the vendor tokenizer against cl100k, for the tight prompt bound', async (t) => {
  const defaults = build({});
  t.same(defaults.providers.mistral?.tokenizer, { ratio: 1.15, splitDigits: true }, 'mistral splits digits');
  t.equal(defaults.providers.openai?.tokenizer, undefined, 'others take their family margin');
  const merged = build({ providers: { mistral: { base_url: 'http://127.0.0.1:1/v1' }, qwen: { type: 'openai', base_url: 'http://q/v1', tokenizer: { ratio: 1.2, split_digits: true } } } });
  t.same(merged.providers.mistral?.tokenizer, { ratio: 1.15, splitDigits: true }, 'kept when a user entry overrides other fields');
  t.same(merged.providers.qwen?.tokenizer, { ratio: 1.2, splitDigits: true });
  const problems = problemsOf({ providers: { a: { type: 'openai', base_url: 'http://a/v1', tokenizer: { ratio: 0.5 } }, b: { type: 'openai', base_url: 'http://b/v1', tokenizer: { ratio: 1.1, digits: true } } } });
  t.ok(problems.some((line) => line.startsWith('providers.a.tokenizer.ratio: must be a number from 1 to 4')), problems.join('\n'));
  t.ok(problems.some((line) => line.startsWith('providers.b.tokenizer.digits: unknown key')), problems.join('\n'));
});

t.test('cache: off by default, every setting validated, tiers merged over the defaults', async (t) => {
  const defaults = build({});
  t.equal(defaults.cache.enabled, false, 'off by default');
  t.same(defaults.cache.exact.models, ['*']);
  t.same(defaults.cache.semantic.models, []);
  t.equal(defaults.cache.semantic.threshold, 0.95);
  t.equal(defaults.cache.semantic.dimensions, 256);
  t.equal(defaults.cache.ttlMs, 3_600_000);
  t.equal(defaults.cache.maxBytes, 256 * 1024 * 1024);
  const example = loadConfig({ file: join(PACKAGE_ROOT, 'gateway.example.yaml'), env: {} });
  t.same(example.cache, defaults.cache, 'gateway.example.yaml states the defaults');

  const config = build({ cache: { enabled: true, scope: 'key', ttl: '10m', max_entries: 5, hit_price: 0.25, semantic: { models: 'openai/*, *mini*', threshold: '0.9' } } });
  t.equal(config.cache.scope, 'key');
  t.equal(config.cache.ttlMs, 600_000);
  t.equal(config.cache.hitPrice, 0.25);
  t.same(config.cache.semantic.models, ['openai/*', '*mini*'], 'a comma-separated string (what ${VAR} gives)');
  t.equal(config.cache.semantic.threshold, 0.9);
  t.equal(config.cache.semantic.embeddingModel, 'openai/text-embedding-3-small', 'the tier merged over its defaults');
  t.same(config.cache.exact.models, ['*']);

  t.match(problemsOf({ cache: { scope: 'global' } }), [/^cache\.scope: must be one of: account, key$/]);
  t.match(problemsOf({ cache: { hit_price: 2 } }), [/^cache\.hit_price: must be a number from 0 to 1$/]);
  t.match(problemsOf({ cache: { semantic: { threshold: 0.2 } } }), [/^cache\.semantic\.threshold: must be a number from 0\.5 to 1$/]);
  t.match(problemsOf({ cache: { exact: { models: [3] } } }), [/^cache\.exact\.models: must be a list of model ids/]);
  t.match(problemsOf({ cache: { ttl: 'forever' } }), [/^cache\.ttl: must be a duration/]);
  t.match(problemsOf({ cache: { semantic: { vectors: 3 } } }), [/^cache\.semantic\.vectors: unknown key/]);
  t.match(problemsOf({ cache: { max_entries: 0 } }), [/^cache\.max_entries: must be an integer from 1/]);
});

t.test('database.url selects PostgreSQL; an unset ${DATABASE_URL} is an error, not a quiet SQLite', async (t) => {
  const secret = 'a-shared-session-secret-of-32-characters!';
  const pg = build({ database: { url: '${DATABASE_URL}', pool_size: 25 }, auth: { jwt_secret: secret } }, { DATABASE_URL: 'postgres://gw:pw@db.internal:5432/gateway' });
  t.equal(pg.database.url, 'postgres://gw:pw@db.internal:5432/gateway');
  t.equal(pg.database.poolMax, 25);
  t.equal(build({}).database.url, undefined, 'absent: SQLite (the embedded default)');
  t.equal(build({}).database.poolMax, 10);
  t.equal(build({ database: { url: '${DATABASE_URL:-}' } }).database.url, undefined, '${VAR:-} falls back to SQLite when unset');
  t.throws(() => build({ database: { url: '${DATABASE_URL}' }, auth: { jwt_secret: secret } }), /database\.url: is empty \(write \$\{DATABASE_URL:-\} to fall back to SQLite when it is unset\)/);
  t.throws(() => build({ database: { url: 'mysql://x/y' }, auth: { jwt_secret: secret } }), /database\.url: must be a postgres:\/\/ or postgresql:\/\/ URL/);
  t.throws(() => build({ database: { url: 'postgres://db/gw' } }), /auth\.jwt_secret: is required with database\.url/, 'one session secret for every daemon');
  t.throws(() => build({ database: { url: 'postgres://db/gw', pool_size: 0 }, auth: { jwt_secret: secret } }), /database\.pool_size: must be an integer from 1 to 200/);
  t.equal(build({ redis: { url: 'redis://r:6379', hold_lease: '30s' } }).redis?.holdLeaseMs, 30_000, 'redis.hold_lease');
  t.equal(build({ redis: { url: 'redis://r:6379' } }).redis?.holdLeaseMs, 180_000, 'three minutes by default');
  t.throws(() => build({ redis: { url: 'redis://r:6379', hold_lease: '1s' } }), /redis\.hold_lease/);
});

t.test('azure providers: the deployments API by default (api-version 2024-10-21), or api: v1; mistakes named', async (t) => {
  const price = { input_cost_per_1m: 1, output_cost_per_1m: 2 };
  const config = build({
    providers: {
      az: { type: 'azure', base_url: 'https://res.openai.azure.com', api_key: 'k' },
      az2: { type: 'azure', base_url: 'https://res.openai.azure.com', api_key: 'k', api_version: '2025-04-01-preview' },
      azv1: { type: 'azure', base_url: 'https://res.openai.azure.com', api_key: 'k', api: 'v1' },
    },
    models: [{ id: 'az/my-gpt4o', name: 'mine', ...price }],
  });
  t.same(config.providers.az?.azure, { apiVersion: '2024-10-21' });
  t.same(config.providers.az2?.azure, { apiVersion: '2025-04-01-preview' });
  t.same(config.providers.azv1?.azure, {});
  t.ok(config.models.some((model) => model.id === 'az/my-gpt4o'), 'an azure model is a chat model of the OpenAI wire');
  // The README's example: an Azure deployment in front of OpenAI's own.
  const routed = build({
    providers: { azure: { type: 'azure', base_url: 'https://my-resource.openai.azure.com', api_key: 'k' } },
    models: [
      { id: 'azure/gpt-4o-mini-prod', name: 'GPT-4o mini (Azure)', upstream_model: 'gpt-4o-mini-prod', context_window: 128000, max_output_tokens: 16384, input_cost_per_1m: 12.6, output_cost_per_1m: 50.4 },
      { id: 'openai/gpt-4o-mini', name: 'GPT-4o mini', deployments: [{ provider: 'azure', upstream_model: 'gpt-4o-mini-prod' }, { provider: 'openai', priority: 2 }] },
    ],
  });
  t.match(routed.models.find((model) => model.id === 'openai/gpt-4o-mini')?.deployments, [{ provider: 'azure', upstreamModel: 'gpt-4o-mini-prod' }, { provider: 'openai', upstreamModel: 'gpt-4o-mini' }]);
  t.same(problemsOf({ providers: { az: { type: 'azure', base_url: 'https://r.openai.azure.com', api: 'v1', api_version: '2024-10-21' } } }), ['providers.az.api_version: the v1 API takes no api-version: remove it, or set api: deployments']);
  t.same(problemsOf({ providers: { az: { type: 'azure', base_url: 'https://r.openai.azure.com', api_version: 'latest' } } }), ['providers.az.api_version: must be a date like 2024-10-21 (or 2025-04-01-preview)']);
  t.same(problemsOf({ providers: { openai: { api_version: '2024-10-21' } } }), ['providers.openai.api_version: only applies to providers of type azure']);
});

t.test('a model on a provider of an unknown type: the path and the rule, no crash', async (t) => {
  const problems = problemsOf({ providers: { mine: { type: 'bedrockish', base_url: 'https://example.com' } }, models: [{ id: 'mine/model', name: 'm', input_cost_per_1m: 1, output_cost_per_1m: 1 }] });
  t.match(problems, [/^providers\.mine\.type: must be one of: openai, anthropic, gemini, deepgram, azure/, /^models\[0\]\.id: provider 'mine' is not configured under providers$/]);
});
