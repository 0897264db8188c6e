import { useId } from 'react';
import { formatClock, formatLatency, formatRemaining } from '../../lib/format.js';
import { formatCount } from '../../lib/money.js';
import type { ModelRoutes, RestReason, RestState, RouteDeployment, RoutesView } from '../../lib/types.js';
import { Empty, ErrorNotice, Link, Loading, PageHeader } from '../components.js';
import { useApp, useLoad, useNow, useTitle, useUser } from '../context.js';
import { AdminsOnly } from './admin.js';

/**
 * The router as an operator reads it (GET /api/admin/routes?active=true): the models with
 * several deployments, fallbacks, a rest or traffic, each deployment in the order it is tried,
 * with its state, calls in flight, calls and failures in the last window, and latency. Loaded
 * when the page opens and by the Refresh button; rests count down between loads.
 */

const REASONS: Record<RestReason, string> = {
  failures: 'after repeated failures',
  auth: 'its key was refused',
  quota: 'its quota is used up',
  'retry-after': 'the provider asked to wait',
};

/** "Strategy weighted, 2 retries. A deployment that fails 3 attempts within 60 s rests 30 s." */
export function routingSummary(view: RoutesView): string {
  const c = view.cooldown;
  return `Strategy ${view.strategy}, ${view.retries} ${view.retries === 1 ? 'retry' : 'retries'}. A deployment that fails ${c.failures} ${c.failures === 1 ? 'attempt' : 'attempts'} within ${c.window_seconds} s rests ${c.duration_seconds} s. Calls and failures are those of the last ${view.window_seconds} s.`;
}

/** "12 s more, until 02:03:12 pm · after repeated failures"; a rest that ended since the last load says so. */
export function restText(rest: RestState, now: number): string {
  const left = formatRemaining(rest.resting_until, now);
  const when = left ? `${left} more, until ${formatClock(rest.resting_until)}` : 'ended since this view was loaded';
  return rest.reason ? `${when} · ${REASONS[rest.reason]}` : when;
}

function RestBadge({ rest, now }: { rest: RestState; now: number }) {
  if (rest.state !== 'resting') return <span className="badge badge-ok">OK</span>;
  return (
    <span className="rest">
      <span className="badge badge-resting">Resting</span>
      <span className="rest-detail">{restText(rest, now)}</span>
    </span>
  );
}

function DeploymentRow({ deployment: d, now }: { deployment: RouteDeployment; now: number }) {
  const restingKeys = d.keys.filter((key) => key.state === 'resting');
  return (
    <tr data-deployment={d.id}>
      <th scope="row" data-label="Deployment">
        <span className="block">{d.provider}</span>
        <code className="muted block">{d.upstream_model}</code>
      </th>
      <td data-label="Priority" className="num">
        {d.priority}
      </td>
      <td data-label="Weight" className="num">
        {formatCount(d.weight)}
      </td>
      <td data-label="State">
        <RestBadge rest={d} now={now} />
        {restingKeys.length > 0 ? (
          <ul className="key-rests">
            {restingKeys.map((key) => (
              <li key={key.index}>
                Key {key.index + 1} of {d.keys.length} (<code>{key.fingerprint}</code>) rests {restText(key, now)}
              </li>
            ))}
          </ul>
        ) : null}
      </td>
      <td data-label="In flight" className="num">
        {formatCount(d.in_flight)}
      </td>
      <td data-label="Calls" className="num">
        {formatCount(d.calls)}
      </td>
      <td data-label="Failures" className={d.failures > 0 ? 'num error-text' : 'num'}>
        {formatCount(d.failures)}
      </td>
      <td data-label="Latency" className="num">
        {formatLatency(d.latency_ms)}
      </td>
    </tr>
  );
}

function ModelPanel({ model, now }: { model: ModelRoutes; now: number }) {
  const headingId = useId();
  return (
    <section className="panel" aria-labelledby={headingId} data-model={model.model}>
      <h2 id={headingId}>{model.model}</h2>
      {model.fallbacks.length > 0 ? <p className="muted">Falls back to {model.fallbacks.join(' → ')}.</p> : null}
      <div className="table-wrap">
        <table className="responsive compact">
          <caption className="visually-hidden">Deployments of {model.model}, in the order they are tried</caption>
          <thead>
            <tr>
              <th scope="col">Deployment</th>
              <th scope="col" className="num">
                Priority
              </th>
              <th scope="col" className="num">
                Weight
              </th>
              <th scope="col">State</th>
              <th scope="col" className="num">
                In flight
              </th>
              <th scope="col" className="num">
                Calls
              </th>
              <th scope="col" className="num">
                Failures
              </th>
              <th scope="col" className="num">
                Latency
              </th>
            </tr>
          </thead>
          <tbody>
            {model.deployments.map((deployment) => (
              <DeploymentRow key={deployment.id} deployment={deployment} now={now} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

export function AdminRoutesPage() {
  const { api } = useApp();
  const user = useUser();
  useTitle('Routes · Admin');
  // Ticks each second so a rest counts down; the data itself changes only on a load.
  const now = useNow(1000);
  const routes = useLoad(async (signal) => (user.role === 'admin' ? { view: await api.routes(signal), at: Date.now() } : null), [api, user.role]);
  if (user.role !== 'admin') return <AdminsOnly />;
  const view = routes.data?.view;

  return (
    <>
      <p className="breadcrumb">
        <Link to="/admin">← Admin</Link>
      </p>
      <PageHeader title="Routes" lead={view ? routingSummary(view) : 'How calls reach the providers: each busy model’s deployments, in the order they are tried.'}>
        <button type="button" className="button secondary" onClick={routes.reload} aria-describedby="routes-updated">
          {routes.loading ? 'Refreshing…' : 'Refresh'}
        </button>
      </PageHeader>
      <p id="routes-updated" className="muted updated" role="status">
        {routes.data ? `Updated at ${formatClock(routes.data.at)}.` : ''}
      </p>
      <ErrorNotice error={routes.error} />
      {routes.loading && !routes.data ? <Loading what="Loading routes" /> : null}
      {view && view.data.length === 0 ? <Empty>No model is busy: none has several deployments, fallbacks, a rest or calls in the last {view.window_seconds} s.</Empty> : null}
      {view?.data.map((model) => <ModelPanel key={model.model} model={model} now={now} />)}
    </>
  );
}
