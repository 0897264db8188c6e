import { useState, type FormEvent } from 'react';
import { asApiError, type ApiError } from '../../lib/api.js';
import { formatAgo, formatDate, formatDateTime } from '../../lib/format.js';
import { formatCount, microsToInr } from '../../lib/money.js';
import type { ApiKey, CreatedApiKey } from '../../lib/types.js';
import { budgetInputValue, expiryInputValue } from '../../lib/validate.js';
import { BudgetMeter, ConfirmDialog, Dialog, Empty, ErrorNotice, Link, Loading, PageHeader, SecretOnce, StatusBadge, SuccessNotice } from '../components.js';
import { checkKeyForm, DEFAULT_RATE_LIMIT, KeyFields, limitChanges, limitsOf, listOf, namesField, type KeyFormValues } from './key-form.js';
import { useApp, useLoad, useNow, useTitle } from '../context.js';

/** API keys: create (shown once), list with status and spend, edit, revoke. */
export function KeysPage() {
  const { api } = useApp();
  useTitle('API keys');
  const now = useNow();
  const keys = useLoad(() => api.apiKeys(), [api]);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const [editing, setEditing] = useState<ApiKey | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [message, setMessage] = useState<string | null>(null);

  const list = keys.data?.data ?? [];
  const sorted = [...list].sort((a, b) => Number(b.status === 'active') - Number(a.status === 'active') || b.created_at.localeCompare(a.created_at));

  return (
    <>
      <PageHeader title="API keys" lead="Apps call the gateway with these sk- keys. Each has its own rate limit, budget (for its life or renewing), expiry, models, addresses and limits.">
        {!creating && !created ? (
          <button type="button" className="button" onClick={() => { setCreating(true); setMessage(null); }}>
            Create a key
          </button>
        ) : null}
      </PageHeader>
      {created ? (
        <SecretOnce
          label={`Your new key “${created.name}”`}
          what="the key"
          secret={created.api_key}
          onDone={() => setCreated(null)}
        />
      ) : null}
      {creating ? (
        <CreateKeyForm
          now={now}
          onCancel={() => setCreating(false)}
          onCreated={(key) => {
            setCreating(false);
            setCreated(key);
            keys.reload();
          }}
        />
      ) : null}
      {message ? <SuccessNotice>{message}</SuccessNotice> : null}
      <ErrorNotice error={keys.error} />
      {keys.loading && !keys.data ? <Loading what="Loading your keys" /> : null}
      {keys.data && list.length === 0 ? <Empty>No keys yet. Create one for each app, so you can see and limit what each spends.</Empty> : null}
      {sorted.length > 0 ? (
        <div className="table-wrap">
          <table className="responsive keys-table">
            <caption className="visually-hidden">Your API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Status</th>
                <th scope="col">Spent</th>
                <th scope="col" className="num">
                  Rate limit
                </th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {sorted.map((key) => (
                <tr key={key.id} data-key-id={key.id}>
                  <th scope="row" data-label="Name">
                    <Link to={`/usage?key=${encodeURIComponent(key.id)}`} title="This key's usage">
                      {key.name}
                    </Link>
                    {key.models?.length || key.allowed_ips?.length || key.max_parallel || key.tpm_limit ? (
                      <div className="muted small" data-key-restrictions>
                        {key.models?.length ? `models: ${key.models.join(', ')}` : 'every model'}
                        {key.allowed_ips?.length ? ` · from ${key.allowed_ips.join(', ')}` : ''}
                        {key.max_parallel ? ` · ${formatCount(key.max_parallel)} at once` : ''}
                        {key.tpm_limit ? ` · ${formatCount(key.tpm_limit)} tokens/min` : ''}
                      </div>
                    ) : null}
                  </th>
                  <td data-label="Key">
                    <code>{key.masked_key}</code>
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={key.status} />
                  </td>
                  <td data-label="Spent">
                    <BudgetMeter spent={key.budget_period ? (key.spent_this_period ?? 0) : key.spent} budget={key.budget} />
                    {key.budget_period && key.budget ? (
                      <div className="muted small" data-key-period>
                        {key.budget_period} · renews {key.period_resets_at ? formatDateTime(key.period_resets_at) : ''}
                      </div>
                    ) : null}
                  </td>
                  <td data-label="Rate limit" className="num">
                    {formatCount(key.rate_limit)}/min
                  </td>
                  <td data-label="Last used">
                    <span title={formatDateTime(key.last_used_at, 'never')}>{formatAgo(key.last_used_at, now)}</span>
                  </td>
                  <td data-label="Expires">{key.expires_at ? formatDate(key.expires_at) : 'Never'}</td>
                  <td className="actions">
                    {key.status !== 'revoked' ? (
                      <>
                        <button type="button" className="button secondary small" onClick={() => setEditing(key)} aria-label={`Edit ${key.name}`}>
                          Edit
                        </button>
                        <button type="button" className="button danger-outline small" onClick={() => setRevoking(key)} aria-label={`Revoke ${key.name}`}>
                          Revoke
                        </button>
                      </>
                    ) : (
                      <span className="muted">Revoked {formatDate(key.revoked_at)}</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {editing ? (
        <EditKeyDialog
          key={editing.id}
          apiKey={editing}
          now={now}
          onClose={() => setEditing(null)}
          onSaved={(key) => {
            setEditing(null);
            setMessage(`Saved “${key.name}”.`);
            keys.reload();
          }}
        />
      ) : null}
      {revoking ? (
        <RevokeDialog
          apiKey={revoking}
          onClose={() => setRevoking(null)}
          onRevoked={(key) => {
            setRevoking(null);
            setMessage(`Revoked “${key.name}”: calls with it are refused from now on.`);
            keys.reload();
          }}
        />
      ) : null}
    </>
  );
}

function CreateKeyForm({ now, onCancel, onCreated }: { now: number; onCancel: () => void; onCreated: (key: CreatedApiKey) => void }) {
  const { api } = useApp();
  const [values, setValues] = useState<KeyFormValues>({ name: '', rateLimit: DEFAULT_RATE_LIMIT, budget: '0', expiry: '', models: '', allowedIps: '', maxParallel: '', tpm: '', budgetPeriod: '' });
  const [submitted, setSubmitted] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const checks = checkKeyForm(values, now);

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    const { name, rateLimit, budget, expiry, maxParallel, tpm } = checks;
    if (!name.ok || !rateLimit.ok || !budget.ok || !expiry.ok || !maxParallel.ok || !tpm.ok) return;
    setBusy(true);
    setError(null);
    try {
      const body: Parameters<typeof api.createApiKey>[0] = { name: name.value, rate_limit: rateLimit.value, budget: microsToInr(budget.value), ...limitsOf(values, checks) };
      if (expiry.value) body.expires_at = expiry.value;
      if (listOf(values.models).length > 0) body.models = listOf(values.models);
      if (listOf(values.allowedIps).length > 0) body.allowed_ips = listOf(values.allowedIps);
      onCreated(await api.createApiKey(body));
    } catch (reason) {
      setError(asApiError(reason));
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} noValidate aria-labelledby="create-key-heading">
      <h2 id="create-key-heading">New API key</h2>
      <KeyFields values={values} set={(next) => setValues((v) => ({ ...v, ...next }))} checks={checks} show={submitted} serverError={error} now={now} />
      <ErrorNotice error={error && !namesField(error) ? error : null} />
      <div className="form-actions">
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
        <button type="button" className="button secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function EditKeyDialog({ apiKey, now, onClose, onSaved }: { apiKey: ApiKey; now: number; onClose: () => void; onSaved: (key: ApiKey) => void }) {
  const { api } = useApp();
  const initial: KeyFormValues = {
    name: apiKey.name,
    rateLimit: String(apiKey.rate_limit),
    budget: budgetInputValue(apiKey.budget),
    expiry: expiryInputValue(apiKey.expires_at),
    models: (apiKey.models ?? []).join(', '),
    allowedIps: (apiKey.allowed_ips ?? []).join(', '),
    maxParallel: apiKey.max_parallel ? String(apiKey.max_parallel) : '',
    tpm: apiKey.tpm_limit ? String(apiKey.tpm_limit) : '',
    budgetPeriod: apiKey.budget_period ?? '',
  };
  const [values, setValues] = useState<KeyFormValues>(initial);
  const [submitted, setSubmitted] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  // An unchanged past expiry is not re-checked (the key may have expired: it can be extended or cleared).
  const checks = checkKeyForm(values, now);
  if (values.expiry === initial.expiry && values.expiry !== '') checks.expiry = { ok: true, value: apiKey.expires_at };

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    const { name, rateLimit, budget, expiry, maxParallel, tpm } = checks;
    if (!name.ok || !rateLimit.ok || !budget.ok || !expiry.ok || !maxParallel.ok || !tpm.ok) return;
    const changes: Parameters<typeof api.updateApiKey>[1] = limitChanges(values, checks, apiKey);
    if (name.value !== apiKey.name) changes.name = name.value;
    if (rateLimit.value !== apiKey.rate_limit) changes.rate_limit = rateLimit.value;
    if (microsToInr(budget.value) !== apiKey.budget) changes.budget = microsToInr(budget.value);
    if (values.expiry !== initial.expiry) changes.expires_at = expiry.value;
    if (Object.keys(changes).length === 0) {
      onClose();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onSaved(await api.updateApiKey(apiKey.id, changes));
    } catch (reason) {
      setError(asApiError(reason));
      setBusy(false);
    }
  };

  return (
    <Dialog title={`Edit “${apiKey.name}”`} onClose={onClose}>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <p className="muted">
          <code>{apiKey.masked_key}</code> · spent so far <BudgetMeter spent={apiKey.spent} budget={0} />
        </p>
        <KeyFields values={values} set={(next) => setValues((v) => ({ ...v, ...next }))} checks={checks} show={submitted} serverError={error} now={now} />
        <ErrorNotice error={error && !namesField(error) ? error : null} />
        <div className="form-actions">
          <button type="submit" className="button" disabled={busy}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
          <button type="button" className="button secondary" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function RevokeDialog({ apiKey, onClose, onRevoked }: { apiKey: ApiKey; onClose: () => void; onRevoked: (key: ApiKey) => void }) {
  const { api } = useApp();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  return (
    <ConfirmDialog
      title={`Revoke “${apiKey.name}”?`}
      confirmLabel="Revoke the key"
      busy={busy}
      error={error}
      onClose={onClose}
      onConfirm={() => {
        setBusy(true);
        api.revokeApiKey(apiKey.id).then(onRevoked, (reason: unknown) => {
          setError(asApiError(reason));
          setBusy(false);
        });
      }}
    >
      <p>
        Apps using <code>{apiKey.masked_key}</code> get 401 from now on. This cannot be undone; its usage history stays.
      </p>
    </ConfirmDialog>
  );
}
