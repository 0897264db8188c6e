import type { GatewayConfig, ModelConfig, ProviderConfig } from '../../config/types.js';
import type { Catalog } from '../catalog.js';
import type { Rest } from './decide.js';
import { keyFingerprint, type RouteHealth } from './health.js';

/**
 * What an operator sees of the router (`gateway routes`, the management API, the dashboard's
 * admin area, the MCP tool): every model's deployments in the order they are tried, each
 * with its state (ok, or resting until when and why), its provider's keys (fingerprints,
 * never the keys), calls in flight, calls and failed attempts in the last window, and its
 * recent time to an answer.
 */

export interface RestView {
  state: 'ok' | 'resting';
  /** ISO time the rest ends; null when ok. */
  resting_until: string | null;
  /** failures (the cooldown), auth (a refused key), quota (an exhausted quota), retry-after (the upstream asked to wait). */
  reason: Rest['reason'] | null;
}

export interface KeyView extends RestView {
  index: number;
  /** The first 12 hex of the key's SHA-256: which key, without the key. */
  fingerprint: string;
}

export interface DeploymentView extends RestView {
  id: string;
  provider: string;
  upstream_model: string;
  weight: number;
  priority: number;
  keys: KeyView[];
  in_flight: number;
  /** Attempts in the last window (every daemon's, with Redis). */
  calls: number;
  failures: number;
  /** Recent time to an answer (a stream's first content), ms; null before the first. */
  latency_ms: number | null;
}

export interface ModelRoutes {
  model: string;
  type: ModelConfig['type'];
  deployments: DeploymentView[];
  /** The config's `routing.fallbacks` of the model. */
  fallbacks: readonly string[];
}

export interface RoutesView {
  object: 'routes';
  strategy: GatewayConfig['routing']['strategy'];
  retries: number;
  window_seconds: number;
  cooldown: { failures: number; window_seconds: number; duration_seconds: number };
  data: ModelRoutes[];
}

function restView(rest: Rest | undefined): RestView {
  return rest ? { state: 'resting', resting_until: new Date(rest.until).toISOString(), reason: rest.reason } : { state: 'ok', resting_until: null, reason: null };
}

/**
 * The view every surface serves (the management API, the dashboard's admin API, the MCP tool):
 * one model (an id or short name, active or not; 404 when it names none), or every model of
 * the catalog, only the active ones when `activeOnly`.
 */
export function routesFor(config: GatewayConfig, catalog: Catalog, health: RouteHealth, query: { model?: string | undefined; activeOnly: boolean }): RoutesView {
  const models = query.model === undefined ? catalog.models : [catalog.find(query.model)];
  return routesView(config, models, health, Date.now(), { onlyActive: query.model === undefined && query.activeOnly });
}

/**
 * `models` limits the view to those ids; `onlyRouted` to models with more than one deployment,
 * a fallback, a rest or traffic in the window (the rest of the catalog is idle defaults).
 */
export function routesView(config: GatewayConfig, models: readonly ModelConfig[], health: RouteHealth, now: number, options: { onlyActive?: boolean } = {}): RoutesView {
  const routing = config.routing;
  const data: ModelRoutes[] = [];
  for (const model of models) {
    const deployments = model.deployments.map((deployment): DeploymentView => {
      const provider = config.providers[deployment.provider] as ProviderConfig;
      const keys = provider.apiKeys.map((key, index): KeyView => ({ index, fingerprint: keyFingerprint(key), ...restView(health.keyRest(provider, index, now)) }));
      const rest = health.deploymentRest(deployment.id, now) ?? health.keysRest(provider, now);
      const stats = health.stats(deployment.id, now);
      const latency = health.latency(deployment.id);
      return {
        id: deployment.id,
        provider: deployment.provider,
        upstream_model: deployment.upstreamModel,
        weight: deployment.weight,
        priority: deployment.priority,
        ...restView(rest),
        keys,
        in_flight: health.busy(deployment.id),
        calls: stats.calls,
        failures: stats.failures,
        latency_ms: latency === undefined ? null : Math.round(latency),
      };
    });
    const fallbacks = routing.fallbacks[model.id] ?? [];
    const active = deployments.length > 1 || fallbacks.length > 0 || deployments.some((d) => d.state === 'resting' || d.calls > 0 || d.in_flight > 0);
    if (options.onlyActive && !active) continue;
    data.push({ model: model.id, type: model.type, deployments, fallbacks });
  }
  return {
    object: 'routes',
    strategy: routing.strategy,
    retries: routing.retries,
    window_seconds: Math.round(routing.cooldown.windowMs / 1000),
    cooldown: { failures: routing.cooldown.failures, window_seconds: Math.round(routing.cooldown.windowMs / 1000), duration_seconds: Math.round(routing.cooldown.durationMs / 1000) },
    data,
  };
}
