import { useState, type FormEvent } from 'react';
import { asApiError, type ApiError } from '../../lib/api.js';
import { formatDateTime } from '../../lib/format.js';
import { microsToInr } from '../../lib/money.js';
import type { Account } from '../../lib/types.js';
import { budgetInputValue, checkBudget } from '../../lib/validate.js';
import { Dialog, Empty, ErrorNotice, Field, Inr, Loading } from '../components.js';
import { useApp, useLoad } from '../context.js';

/**
 * The admin pages' governance parts (issue 30): an account's spend limit (what all of its keys
 * together may spend per period) with the dialog that sets it, and the last alerts raised.
 */

/** The spend limit as a stat: spent this period of the limit, and when it renews. */
export function SpendLimitStat({ account, onEdit }: { account: Account; onEdit: () => void }) {
  return (
    <div className="stat" data-spend-limit>
      <h2>Spend limit</h2>
      <p className="stat-value">{account.spend_limit ? <Inr value={account.spend_limit} /> : 'None'}</p>
      <p className="stat-note">
        {account.spend_limit ? (
          <>
            <Inr value={account.spent_this_period ?? 0} /> spent {account.spend_period ? `this ${account.spend_period === 'daily' ? 'day' : account.spend_period === 'weekly' ? 'week' : account.spend_period === 'monthly' ? 'month' : `period (${account.spend_period})`}` : 'in all'}
            {account.period_resets_at ? ` · renews ${formatDateTime(account.period_resets_at)}` : ''}
          </>
        ) : (
          'its keys may spend the whole wallet'
        )}{' '}
        <button type="button" className="link-button" onClick={onEdit}>
          Change
        </button>
      </p>
    </div>
  );
}

export function SpendLimitDialog({ account, onClose, onSaved }: { account: Account; onClose: () => void; onSaved: (account: Account) => void }) {
  const { api } = useApp();
  const [limit, setLimit] = useState(budgetInputValue(account.spend_limit ?? 0));
  // A lifetime limit (no period) stays one; a new limit is offered monthly.
  const [period, setPeriod] = useState(account.spend_period ?? (account.spend_limit ? '' : 'monthly'));
  const [submitted, setSubmitted] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const check = checkBudget(limit);

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    if (!check.ok) return;
    setBusy(true);
    setError(null);
    try {
      onSaved(await api.setSpendLimit(account.id, { spend_limit: microsToInr(check.value), spend_period: period.trim() === '' ? null : period.trim() }));
    } catch (reason) {
      setError(asApiError(reason));
      setBusy(false);
    }
  };

  return (
    <Dialog title={`Spend limit of ${account.name}`} onClose={onClose}>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <p className="muted">What all of {account.email}’s keys together may spend per period, whatever the wallet holds. Calls past it are refused (402).</p>
        <Field
          label="Limit (₹)"
          name="spend_limit"
          inputMode="decimal"
          value={limit}
          onChange={(e) => setLimit(e.target.value)}
          hint="0 = no limit."
          error={submitted && !check.ok ? check.message : error?.param === 'spend_limit' ? error.message : null}
          autoFocus
        />
        <Field
          label="Per"
          name="spend_period"
          list="spend-periods"
          value={period}
          onChange={(e) => setPeriod(e.target.value)}
          hint="daily, weekly, monthly (in the gateway's time zone) or a duration like 30d from the account's creation. Empty = for the account's life."
          error={error?.param === 'spend_period' ? error.message : null}
        />
        <datalist id="spend-periods">
          <option value="daily" />
          <option value="weekly" />
          <option value="monthly" />
        </datalist>
        <ErrorNotice error={error && error.param !== 'spend_limit' && error.param !== 'spend_period' ? error : null} />
        <div className="form-actions">
          <button type="submit" className="button" disabled={busy}>
            {busy ? 'Saving…' : 'Save'}
          </button>
          <button type="button" className="button secondary" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

const EVENT_LABELS: Record<string, string> = {
  balance_low: 'Low balance',
  key_budget: 'Key budget',
  account_spend_limit: 'Spend limit',
  deployment_resting: 'Deployment resting',
};

/** The last alerts the gateway raised, and whether the webhook got them. */
export function AlertsPanel() {
  const { api } = useApp();
  const alerts = useLoad((signal) => api.alerts(signal), [api]);
  const list = alerts.data?.data ?? [];
  return (
    <section className="panel" aria-labelledby="alerts-heading">
      <h2 id="alerts-heading">Recent alerts</h2>
      <ErrorNotice error={alerts.error} />
      {alerts.loading && !alerts.data ? <Loading /> : null}
      {alerts.data && list.length === 0 ? <Empty>No alerts yet. Budgets at 80% and 100%, spend limits, low balances and resting deployments show here.</Empty> : null}
      {list.length > 0 ? (
        <div className="table-wrap">
          <table className="responsive" data-alerts>
            <caption className="visually-hidden">Recent alerts</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Event</th>
                <th scope="col">What happened</th>
                <th scope="col">Webhook</th>
              </tr>
            </thead>
            <tbody>
              {list.map((alert) => (
                <tr key={alert.id} data-alert-event={alert.event}>
                  <td data-label="When">{formatDateTime(alert.created_at)}</td>
                  <td data-label="Event">{EVENT_LABELS[alert.event] ?? alert.event}</td>
                  <td data-label="What happened">{alert.text}</td>
                  <td data-label="Webhook" title={alert.last_error ?? undefined}>
                    {alert.delivery === 'not_sent' ? 'not sent' : alert.delivery}
                    {alert.attempts > 1 ? ` (${alert.attempts} attempts)` : ''}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
