import { Box, Text } from 'ink';
import type { DeploymentView, ModelRoutes, RestView, RoutesView } from '../../core/routing/view.js';
import { Table, type Column } from './components.js';

/** The router as an operator reads it (`gateway routes`): props in, no I/O. */

/** Time left of a rest, read at `now`: "23s", "4m 10s", "2h 5m". */
export function restLeft(until: string, now: number): string {
  const seconds = Math.max(0, Math.ceil((Date.parse(until) - now) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m ${seconds % 60}s`;
  return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
}

/** "ok", or "resting 23s (failures)". */
export function restText(rest: RestView, now: number): string {
  if (rest.state !== 'resting') return 'ok';
  const left = rest.resting_until ? ` ${restLeft(rest.resting_until, now)}` : '';
  return `resting${left} (${rest.reason ?? 'unknown'})`;
}

interface Row {
  model: string;
  deployment: DeploymentView;
}

function columns(now: number): Column<Row>[] {
  return [
    { title: 'MODEL', value: (r) => r.model },
    { title: 'PROVIDER', value: (r) => r.deployment.provider },
    { title: 'UPSTREAM', value: (r) => r.deployment.upstream_model },
    { title: 'PRIORITY', value: (r) => String(r.deployment.priority), align: 'right' },
    { title: 'WEIGHT', value: (r) => String(r.deployment.weight), align: 'right' },
    { title: 'STATE', value: (r) => restText(r.deployment, now) },
    { title: 'IN FLIGHT', value: (r) => String(r.deployment.in_flight), align: 'right' },
    { title: 'CALLS', value: (r) => String(r.deployment.calls), align: 'right' },
    { title: 'FAILURES', value: (r) => String(r.deployment.failures), align: 'right' },
    { title: 'LATENCY', value: (r) => (r.deployment.latency_ms === null ? '—' : `${r.deployment.latency_ms} ms`), align: 'right' },
  ];
}

/** The routing settings every model shares, in one line: "strategy weighted · 2 retries · cooldown 30s after 3 failures in 60s · counts over the last 60s". */
export function routingSummary(view: RoutesView): string {
  const c = view.cooldown;
  return `strategy ${view.strategy} · ${view.retries} ${view.retries === 1 ? 'retry' : 'retries'} · cooldown ${c.duration_seconds}s after ${c.failures} ${c.failures === 1 ? 'failure' : 'failures'} in ${c.window_seconds}s · counts over the last ${view.window_seconds}s`;
}

/** Provider keys that rest (each provider once, however many deployments use it). */
function restingKeys(models: readonly ModelRoutes[], now: number): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const model of models) {
    for (const deployment of model.deployments) {
      for (const key of deployment.keys) {
        const id = `${deployment.provider}#${key.index}`;
        if (key.state !== 'resting' || seen.has(id)) continue;
        seen.add(id);
        out.push(`${deployment.provider} key #${key.index} (${key.fingerprint}): ${restText(key, now)}`);
      }
    }
  }
  return out;
}

export function RoutesTable({ view, now, empty }: { view: RoutesView; now: number; empty: string }) {
  const rows = view.data.flatMap((model) => model.deployments.map((deployment) => ({ model: model.model, deployment })));
  const fallbacks = view.data.filter((model) => model.fallbacks.length > 0);
  const keys = restingKeys(view.data, now);
  return (
    <Box flexDirection="column">
      <Text dimColor>{routingSummary(view)}</Text>
      <Table rows={rows} columns={columns(now)} empty={empty} whole />
      {fallbacks.map((model) => (
        <Text key={`f:${model.model}`}>
          <Text dimColor>fallbacks of {model.model}:</Text> {model.fallbacks.join(' → ')}
        </Text>
      ))}
      {keys.map((line) => (
        <Text key={line} color="yellow">
          {line}
        </Text>
      ))}
    </Box>
  );
}
