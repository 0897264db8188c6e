import { isRecord, Problems, readBool, readDuration, readEnum, readInt, readSection, readString, type Raw } from './fields.js';
import type { Deployment, ModelConfig, ModelType, ProviderType, RetryCondition, RoutingConfig } from './types.js';

/**
 * `routing:` (strategy, retries, cooldowns, model fallbacks) and a model's `deployments:`.
 * The defaults are what a team expects without writing anything: two further attempts on
 * timeouts, connection failures, 408, 429 and 5xx; a deployment that failed three calls in a
 * minute rests 30 s.
 */

export const DEFAULT_RETRY_ON: readonly RetryCondition[] = [408, 429, 500, 502, 503, 504, 529, 'connect', 'timeout'];

const ROUTING_KEYS = ['strategy', 'retries', 'retry_on', 'max_retry_after', 'timeout', 'cooldown', 'fallbacks', 'clamp_max_tokens'];
const DEPLOYMENT_KEYS = ['provider', 'upstream_model', 'weight', 'priority'];

/** `routing:` without its fallbacks (they name catalog models: readFallbacks, once the catalog is read). */
export function readRouting(raw: unknown, problems: Problems): Omit<RoutingConfig, 'fallbacks'> {
  const section = readSection(raw, 'routing', ROUTING_KEYS, problems);
  const cooldown = readSection(section.cooldown, 'routing.cooldown', ['failures', 'window', 'duration'], problems);
  return {
    strategy: readEnum(section, 'strategy', 'routing', problems, ['weighted', 'least-busy', 'latency'] as const, 'weighted'),
    retries: readInt(section, 'retries', 'routing', problems, 0, 10, 2),
    retryOn: readRetryOn(section.retry_on, problems),
    maxRetryAfterMs: readDuration(section, 'max_retry_after', 'routing', problems, 10_000, 0),
    timeoutMs: readDuration(section, 'timeout', 'routing', problems, 300_000, 1000),
    cooldown: {
      failures: readInt(cooldown, 'failures', 'routing.cooldown', problems, 1, 1000, 3),
      windowMs: readDuration(cooldown, 'window', 'routing.cooldown', problems, 60_000, 1000),
      durationMs: readDuration(cooldown, 'duration', 'routing.cooldown', problems, 30_000, 1000),
    },
    clampMaxTokens: readBool(section, 'clamp_max_tokens', 'routing', problems, false),
  };
}

function readRetryOn(raw: unknown, problems: Problems): ReadonlySet<RetryCondition> {
  if (raw === undefined || raw === null) return new Set(DEFAULT_RETRY_ON);
  const items = typeof raw === 'string' ? raw.split(',').map((item) => item.trim()).filter((item) => item !== '') : raw;
  if (!Array.isArray(items)) {
    problems.add('routing.retry_on', 'must be a list of HTTP statuses (408, 429, 5xx), connect and timeout');
    return new Set(DEFAULT_RETRY_ON);
  }
  const out = new Set<RetryCondition>();
  items.forEach((item: unknown, index) => {
    const value = typeof item === 'string' && /^\d{3}$/.test(item) ? Number(item) : item;
    if (value === 'connect' || value === 'timeout') out.add(value);
    else if (typeof value === 'number' && Number.isInteger(value) && value >= 400 && value <= 599) {
      // 401/403 rotate keys and a quota-exhausted 429 rests its key whatever this says; a
      // 400-class answer other than 408 and 429 fails the same way on every deployment.
      out.add(value);
    } else problems.add(`routing.retry_on[${index}]`, 'must be an HTTP error status (400-599), connect or timeout');
  });
  return out;
}

/** `routing.fallbacks`: model id ► model ids of the same kind, each in the catalog. */
export function readFallbacks(raw: unknown, models: readonly ModelConfig[], problems: Problems): Record<string, readonly string[]> {
  const out: Record<string, readonly string[]> = {};
  if (raw === undefined || raw === null) return out;
  if (!isRecord(raw)) {
    problems.add('routing.fallbacks', 'must be a mapping of model id to a list of model ids');
    return out;
  }
  const byId = new Map(models.map((model) => [model.id, model]));
  for (const [id, list] of Object.entries(raw)) {
    const path = `routing.fallbacks.${id}`;
    const model = byId.get(id);
    if (!model) {
      problems.add(path, `'${id}' is not a model of the catalog`);
      continue;
    }
    const items = typeof list === 'string' ? list.split(',').map((item) => item.trim()).filter((item) => item !== '') : list;
    if (!Array.isArray(items) || items.length === 0) {
      problems.add(path, 'must be a non-empty list of model ids');
      continue;
    }
    const ids: string[] = [];
    items.forEach((item: unknown, index) => {
      const target = typeof item === 'string' ? byId.get(item) : undefined;
      if (!target) problems.add(`${path}[${index}]`, `${JSON.stringify(item)} is not a model of the catalog`);
      else if (target.type !== model.type) problems.add(`${path}[${index}]`, `'${target.id}' is of type ${target.type}, ${id} of type ${model.type}`);
      else if (target.id === id) problems.add(`${path}[${index}]`, 'a model cannot fall back to itself');
      else if (!ids.includes(target.id)) ids.push(target.id);
    });
    out[id] = ids;
  }
  return out;
}

/**
 * A model's `deployments:`; absent: one, on the provider its id names. Each names a
 * configured provider whose wire family serves the model's kind.
 */
export function readDeployments(
  raw: unknown,
  path: string,
  model: { provider: string; upstreamModel: string; type: ModelType },
  providerTypes: ReadonlyMap<string, ProviderType>,
  familyKinds: Readonly<Record<ProviderType, readonly ModelType[]>>,
  problems: Problems,
): Deployment[] {
  if (raw === undefined || raw === null) {
    return [{ id: `${model.provider}:${model.upstreamModel}`, provider: model.provider, upstreamModel: model.upstreamModel, weight: 1, priority: 1 }];
  }
  if (!Array.isArray(raw) || raw.length === 0) {
    problems.add(path, 'must be a non-empty list of {provider, upstream_model, weight, priority}');
    return [];
  }
  const out: Deployment[] = [];
  raw.forEach((item: unknown, index) => {
    const at = `${path}[${index}]`;
    if (!isRecord(item)) {
      problems.add(at, 'must be a mapping with provider (and optionally upstream_model, weight, priority)');
      return;
    }
    const entry: Raw = readSection(item, at, DEPLOYMENT_KEYS, problems);
    const provider = readString(entry, 'provider', at, problems, { required: true });
    const upstreamModel = readString(entry, 'upstream_model', at, problems) ?? model.upstreamModel;
    const weight = readInt(entry, 'weight', at, problems, 1, 1_000_000, 1);
    const priority = readInt(entry, 'priority', at, problems, 1, 100, 1);
    if (provider === undefined) return;
    const type = providerTypes.get(provider);
    if (!type) {
      problems.add(`${at}.provider`, `provider '${provider}' is not configured under providers`);
      return;
    }
    if (!familyKinds[type].includes(model.type)) {
      problems.add(`${at}.provider`, `'${provider}' is a provider of type ${type}, which serves ${familyKinds[type].join(', ')} models, not ${model.type}`);
      return;
    }
    const id = `${provider}:${upstreamModel}`;
    if (out.some((deployment) => deployment.id === id)) {
      problems.add(at, `duplicate deployment (provider ${provider}, upstream_model ${upstreamModel})`);
      return;
    }
    out.push({ id, provider, upstreamModel, weight, priority });
  });
  // Stable: within a priority, the order written.
  return out.sort((a, b) => a.priority - b.priority);
}
