import t from 'tap';
import { build, problemsOf } from '../support/config.js';

/** `routing:`, a model's `deployments:` and a provider's `api_keys:` (issue 26). */

t.test('defaults: every model has its one deployment; two further attempts on transient failures', async (t) => {
  const config = build({});
  const mini = config.models.find((m) => m.id === 'openai/gpt-4o-mini');
  t.same(mini?.deployments, [{ id: 'openai:gpt-4o-mini', provider: 'openai', upstreamModel: 'gpt-4o-mini', weight: 1, priority: 1 }]);
  t.match(config.routing, { strategy: 'weighted', retries: 2, maxRetryAfterMs: 10_000, timeoutMs: 300_000, cooldown: { failures: 3, windowMs: 60_000, durationMs: 30_000 }, fallbacks: {} });
  t.same([...config.routing.retryOn].sort(), [408, 429, 500, 502, 503, 504, 529, 'connect', 'timeout'].sort());
  t.same(config.providers.openai?.apiKeys, [], 'no key without $OPENAI_API_KEY');
  t.equal(config.providers.openai?.apiKeyEnv, 'OPENAI_API_KEY');
  t.same(build({}, { OPENAI_API_KEY: 'sk-1' }).providers.openai?.apiKeys, ['sk-1'], 'api_key is a one-key list');
});

t.test('the issue\'s shape: several keys, deployments with weights and priorities, fallbacks', async (t) => {
  const config = build(
    {
      providers: {
        openai: { type: 'openai', api_keys: ['${OPENAI_KEY_A}', '${OPENAI_KEY_B}'] },
        'openai-eu': { type: 'openai', base_url: 'https://eu.api.openai.com/v1', api_key: '${OPENAI_EU_KEY}' },
        openrouter: { type: 'openai', base_url: 'https://openrouter.ai/api/v1', api_key: 'or-key' },
      },
      models: [
        {
          id: 'openai/gpt-4o-mini',
          deployments: [
            { provider: 'openrouter', upstream_model: 'openai/gpt-4o-mini', priority: 2 },
            { provider: 'openai', weight: 3 },
            { provider: 'openai-eu', weight: 1 },
          ],
        },
      ],
      routing: {
        strategy: 'least-busy',
        retries: 3,
        retry_on: [429, 503, 'connect'],
        max_retry_after: '5s',
        timeout: '90s',
        cooldown: { duration: '45s' },
        fallbacks: { 'anthropic/claude-sonnet-4-5': ['openai/gpt-5', 'gemini/gemini-2.5-pro'] },
      },
    },
    { OPENAI_KEY_A: 'key-a', OPENAI_KEY_B: 'key-b', OPENAI_EU_KEY: 'key-eu' },
  );
  t.same(config.providers.openai?.apiKeys, ['key-a', 'key-b'], 'api_keys, in order');
  t.equal(config.providers.openai?.apiKey, 'key-a');
  t.equal(config.providers.openai?.baseUrl, 'https://api.openai.com/v1', 'the default entry\'s other fields stay');
  const mini = config.models.find((m) => m.id === 'openai/gpt-4o-mini');
  t.same(
    mini?.deployments.map((d) => [d.provider, d.upstreamModel, d.weight, d.priority]),
    [
      ['openai', 'gpt-4o-mini', 3, 1],
      ['openai-eu', 'gpt-4o-mini', 1, 1],
      ['openrouter', 'openai/gpt-4o-mini', 1, 2],
    ],
    'sorted by priority, written order within one; upstream_model defaults to the model\'s',
  );
  t.equal(mini?.pricing.inputPer1M, build({}).models.find((m) => m.id === 'openai/gpt-4o-mini')?.pricing.inputPer1M, 'the catalog entry\'s other fields stay');
  t.match(config.routing, { strategy: 'least-busy', retries: 3, maxRetryAfterMs: 5000, timeoutMs: 90_000, cooldown: { failures: 3, windowMs: 60_000, durationMs: 45_000 } });
  t.same([...config.routing.retryOn], [429, 503, 'connect']);
  t.same(config.routing.fallbacks, { 'anthropic/claude-sonnet-4-5': ['openai/gpt-5', 'gemini/gemini-2.5-pro'] });
});

t.test('an unset key variable in api_keys is left out; with none left, the variable is named', async (t) => {
  const partial = build({ providers: { openai: { api_keys: ['${A}', '${B}'] } } }, { B: 'key-b' });
  t.same(partial.providers.openai?.apiKeys, ['key-b']);
  const none = build({ providers: { openai: { api_keys: ['${A}', '${B}'] } } });
  t.same(none.providers.openai?.apiKeys, []);
  t.equal(none.providers.openai?.apiKeyEnv, 'A');
  t.same(build({ providers: { openai: { api_keys: 'k1, k2' } } }).providers.openai?.apiKeys, ['k1', 'k2'], 'one comma-separated string (what ${VAR} gives)');
});

t.test('mistakes are named by path', async (t) => {
  t.same(problemsOf({ providers: { extra: { type: 'openai', base_url: 'https://x.example/v1', api_key: 'k', api_keys: ['k'] } } }), ['providers.extra.api_keys: set api_key or api_keys, not both']);
  t.same(problemsOf({ providers: { openai: { api_keys: { a: 1 } } } }), ['providers.openai.api_keys: must be a list of keys']);
  t.same(problemsOf({ models: [{ id: 'openai/gpt-4o-mini', deployments: [{ provider: 'nope' }] }] }), ["models[0].deployments[0].provider: provider 'nope' is not configured under providers"]);
  t.same(problemsOf({ models: [{ id: 'openai/gpt-4o-mini', deployments: [{ provider: 'deepgram' }] }] }), ["models[0].deployments[0].provider: 'deepgram' is a provider of type deepgram, which serves speech, transcription models, not chat"]);
  t.same(problemsOf({ models: [{ id: 'openai/gpt-4o-mini', deployments: [] }] }), ['models[0].deployments: must be a non-empty list of {provider, upstream_model, weight, priority}']);
  t.same(problemsOf({ models: [{ id: 'openai/gpt-4o-mini', deployments: [{ provider: 'openai', weight: 0, colour: 'red' }] }] }), [
    'models[0].deployments[0].colour: unknown key (expected one of: provider, upstream_model, weight, priority)',
    'models[0].deployments[0].weight: must be an integer from 1 to 1000000',
  ]);
  t.same(problemsOf({ models: [{ id: 'openai/gpt-4o-mini', deployments: [{ provider: 'openai' }, { provider: 'openai' }] }] }), ['models[0].deployments[1]: duplicate deployment (provider openai, upstream_model gpt-4o-mini)']);
  t.same(problemsOf({ routing: { strategy: 'fastest' } }), ['routing.strategy: must be one of: weighted, least-busy, latency']);
  t.same(problemsOf({ routing: { retry_on: [500, 'sometimes', 200] } }), ['routing.retry_on[1]: must be an HTTP error status (400-599), connect or timeout', 'routing.retry_on[2]: must be an HTTP error status (400-599), connect or timeout']);
  t.same(problemsOf({ routing: { retries: 11 } }), ['routing.retries: must be an integer from 0 to 10']);
  t.same(problemsOf({ routing: { cooldown: { failures: 0 } } }), ['routing.cooldown.failures: must be an integer from 1 to 1000']);
  t.same(problemsOf({ routing: { fallbacks: { 'openai/nope': ['openai/gpt-4o'] } } }), ["routing.fallbacks.openai/nope: 'openai/nope' is not a model of the catalog"]);
  t.same(problemsOf({ routing: { fallbacks: { 'openai/gpt-4o': ['openai/text-embedding-3-small', 'openai/gpt-4o', 'x/y'] } } }), [
    "routing.fallbacks.openai/gpt-4o[0]: 'openai/text-embedding-3-small' is of type embedding, openai/gpt-4o of type chat",
    'routing.fallbacks.openai/gpt-4o[1]: a model cannot fall back to itself',
    'routing.fallbacks.openai/gpt-4o[2]: "x/y" is not a model of the catalog',
  ]);
  t.same(problemsOf({ routing: { colour: 1 } }), ['routing.colour: unknown key (expected one of: strategy, retries, retry_on, max_retry_after, timeout, cooldown, fallbacks, clamp_max_tokens)']);
});

t.test('a model of its own, served only through deployments, needs no provider of its prefix\'s name', async (t) => {
  const config = build({ models: [{ id: 'team/chat', name: 'Team chat', input_cost_per_1m: 1, output_cost_per_1m: 2, deployments: [{ provider: 'groq', upstream_model: 'llama-3.3-70b-versatile' }] }] });
  t.same(config.models.find((m) => m.id === 'team/chat')?.deployments.map((d) => d.id), ['groq:llama-3.3-70b-versatile']);
  t.same(problemsOf({ models: [{ id: 'team/chat', name: 'x', input_cost_per_1m: 1, output_cost_per_1m: 2 }] }), ["models[0].id: provider 'team' is not configured under providers"]);
});
