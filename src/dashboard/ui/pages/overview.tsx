import { useMemo, useRef } from 'react';
import { axisInr, buildDailyChart } from '../../lib/chart.js';
import { formatCount, formatMicros, inrToMicros } from '../../lib/money.js';
import { StackedBars } from '../chart.js';
import { Empty, ErrorNotice, Inr, Link, Loading, PageHeader } from '../components.js';
import { useApp, useLoad, useNow, useTitle, useUsageStream, useUser } from '../context.js';

const DAYS = 30;

/** Balance, spend, calls, the 30-day charts and the top keys and models; live as calls settle. */
export function OverviewPage() {
  const { api } = useApp();
  const user = useUser();
  useTitle('Overview');
  const now = useNow(60_000);
  const overview = useLoad((signal) => api.overview(signal), [api]);
  const daily = useLoad((signal) => api.daily(DAYS, signal), [api]);

  // Each settled call (the live feed) refreshes the numbers, at most once a second.
  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  const live = useUsageStream(true, () => {
    if (pending.current) return;
    pending.current = setTimeout(() => {
      pending.current = null;
      overview.reload();
      daily.reload();
    }, 1000);
  });

  const chart = useMemo(() => (daily.data ? buildDailyChart(daily.data.data, now, DAYS) : null), [daily.data, now]);
  const data = overview.data;

  return (
    <>
      <PageHeader title="Overview" lead={`Welcome, ${user.name}.`}>
        <span className={`live-dot ${live}`} role="status">
          {live === 'open' ? 'Live' : live === 'connecting' ? 'Connecting…' : 'Not live'}
        </span>
      </PageHeader>
      <ErrorNotice error={overview.error} />
      {data && inrToMicros(data.balance) <= 0 ? (
        <p className="notice notice-warning" role="status">
          Your balance is {formatMicros(inrToMicros(data.balance))}: calls are refused until an admin tops up your wallet.
        </p>
      ) : null}
      {!data && overview.loading ? <Loading what="Loading your numbers" /> : null}
      {data ? (
        <section aria-label="Numbers" className="stats">
          <div className="stat stat-primary">
            <h2>Balance</h2>
            <p className="stat-value" data-testid="balance">
              <Inr value={data.balance} />
            </p>
            <p className="stat-note">
              <Link to="/wallet">Wallet and ledger</Link>
            </p>
          </div>
          <div className="stat">
            <h2>Held</h2>
            <p className="stat-value">
              <Inr value={data.held} />
            </p>
            <p className="stat-note">by calls in progress</p>
          </div>
          <div className="stat">
            <h2>Spent today</h2>
            <p className="stat-value" data-testid="spent-today">
              <Inr value={data.spent_today} />
            </p>
            <p className="stat-note">this month <Inr value={data.spent_month} /></p>
          </div>
          <div className="stat">
            <h2>Calls today</h2>
            <p className="stat-value" data-testid="calls-today">
              {formatCount(data.calls_today)}
            </p>
            <p className={data.errors_today > 0 ? 'stat-note error-text' : 'stat-note'}>
              {formatCount(data.errors_today)} error{data.errors_today === 1 ? '' : 's'}
            </p>
          </div>
          <div className="stat">
            <h2>Calls this month</h2>
            <p className="stat-value">{formatCount(data.calls_month)}</p>
            <p className={data.errors_month > 0 ? 'stat-note error-text' : 'stat-note'}>
              {formatCount(data.errors_month)} error{data.errors_month === 1 ? '' : 's'}
            </p>
          </div>
        </section>
      ) : null}

      <section className="panel" aria-labelledby="daily-heading">
        <h2 id="daily-heading">Last {DAYS} days by model</h2>
        <ErrorNotice error={daily.error} />
        {!chart && daily.loading ? <Loading what="Loading the daily figures" /> : null}
        {chart ? (
          chart.series.length === 0 ? (
            <Empty>
              No calls in the last {DAYS} days. Make a key on the <Link to="/keys">API keys</Link> page and point your app at this gateway.
            </Empty>
          ) : (
            <div>
              <div className="charts">
                <StackedBars title="Spend per day (₹)" chart={chart} pick="costMicros" format={(v) => formatMicros(v)} formatAxis={axisInr} />
                <StackedBars title="Calls per day" chart={chart} pick="calls" format={(v) => formatCount(v)} integer />
              </div>
              <details className="chart-table">
                <summary>The figures as a table</summary>
                <div className="table-wrap">
                  <table>
                    <caption className="visually-hidden">Spend and calls per day</caption>
                    <thead>
                      <tr>
                        <th scope="col">Day (UTC)</th>
                        <th scope="col" className="num">
                          Calls
                        </th>
                        <th scope="col" className="num">
                          Errors
                        </th>
                        <th scope="col" className="num">
                          Spend
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {chart.days
                        .map((day, i) => ({ day, i }))
                        .filter(({ i }) => (chart.totalCalls[i] ?? 0) > 0)
                        .reverse()
                        .map(({ day, i }) => (
                          <tr key={day}>
                            <th scope="row">{day}</th>
                            <td className="num">{formatCount(chart.totalCalls[i] ?? 0)}</td>
                            <td className="num">{formatCount(chart.totalErrors[i] ?? 0)}</td>
                            <td className="num">{formatMicros(chart.totalCostMicros[i] ?? 0)}</td>
                          </tr>
                        ))}
                    </tbody>
                  </table>
                </div>
              </details>
            </div>
          )
        ) : null}
      </section>

      {data ? (
        <div className="two-columns">
          <section className="panel" aria-labelledby="top-keys">
            <h2 id="top-keys">Top keys this month</h2>
            {data.top_keys.length === 0 ? (
              <Empty>No spend this month.</Empty>
            ) : (
              <table className="compact">
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col" className="num">
                      Calls
                    </th>
                    <th scope="col" className="num">
                      Spend
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.top_keys.map((key) => (
                    <tr key={key.api_key_id ?? 'none'}>
                      <th scope="row">{key.api_key_id ? <Link to={`/usage?key=${encodeURIComponent(key.api_key_id)}`}>{key.name ?? key.api_key_id}</Link> : (key.name ?? 'No key')}</th>
                      <td className="num">{formatCount(key.calls)}</td>
                      <td className="num">
                        <Inr value={key.cost} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
          <section className="panel" aria-labelledby="top-models">
            <h2 id="top-models">Top models this month</h2>
            {data.top_models.length === 0 ? (
              <Empty>No spend this month.</Empty>
            ) : (
              <table className="compact">
                <thead>
                  <tr>
                    <th scope="col">Model</th>
                    <th scope="col" className="num">
                      Calls
                    </th>
                    <th scope="col" className="num">
                      Spend
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.top_models.map((model) => (
                    <tr key={model.model}>
                      <th scope="row">
                        <Link to={`/usage?model=${encodeURIComponent(model.model)}`}>{model.model}</Link>
                      </th>
                      <td className="num">{formatCount(model.calls)}</td>
                      <td className="num">
                        <Inr value={model.cost} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </div>
      ) : null}
    </>
  );
}
