import { useState, type FormEvent } from 'react';
import { asApiError, type ApiError } from '../../lib/api.js';
import { formatAgo, formatDate, formatDateTime } from '../../lib/format.js';
import { formatCount, microsToInr } from '../../lib/money.js';
import type { ApiKey, CreatedApiKey } from '../../lib/types.js';
import { budgetInputValue, checkBudget, checkExpiry, checkName, checkRateLimit, expiryInputValue, RATE_LIMIT_MAX, tomorrow } from '../../lib/validate.js';
import { BudgetMeter, ConfirmDialog, Dialog, Empty, ErrorNotice, Field, Link, Loading, PageHeader, SecretOnce, StatusBadge, SuccessNotice } from '../components.js';
import { useApp, useLoad, useNow, useTitle } from '../context.js';

const DEFAULT_RATE_LIMIT = '1000';

interface KeyFormValues {
  name: string;
  rateLimit: string;
  budget: string;
  expiry: string;
}

interface KeyFormChecks {
  name: ReturnType<typeof checkName>;
  rateLimit: ReturnType<typeof checkRateLimit>;
  budget: ReturnType<typeof checkBudget>;
  expiry: ReturnType<typeof checkExpiry>;
}

function checkKeyForm(values: KeyFormValues, now: number): KeyFormChecks {
  return { name: checkName(values.name, 'a name for the key'), rateLimit: checkRateLimit(values.rateLimit), budget: checkBudget(values.budget), expiry: checkExpiry(values.expiry, now) };
}

/** The fields shared by the create form and the edit dialog, with their rules inline. */
function KeyFields({ values, set, checks, show, serverError, now }: { values: KeyFormValues; set: (next: Partial<KeyFormValues>) => void; checks: KeyFormChecks; show: boolean; serverError: ApiError | null; now: number }) {
  const error = (check: { ok: boolean; message?: string }, param: string): string | null =>
    show && !check.ok ? (check.message ?? null) : serverError?.param === param ? serverError.message : null;
  return (
    <div className="form-grid">
      <Field label="Name" name="name" value={values.name} onChange={(e) => set({ name: e.target.value })} hint="What uses the key, e.g. “chat app (production)”." error={error(checks.name, 'name')} maxLength={100} required />
      <Field
        label="Rate limit (requests per minute)"
        name="rate_limit"
        type="number"
        inputMode="numeric"
        min={1}
        max={RATE_LIMIT_MAX}
        step={1}
        value={values.rateLimit}
        onChange={(e) => set({ rateLimit: e.target.value })}
        hint={`1 to ${formatCount(RATE_LIMIT_MAX)}.`}
        error={error(checks.rateLimit, 'rate_limit')}
        required
      />
      <Field
        label="Budget (₹)"
        name="budget"
        inputMode="decimal"
        value={values.budget}
        onChange={(e) => set({ budget: e.target.value })}
        hint="What the key may spend in total; 0 = no limit."
        error={error(checks.budget, 'budget')}
      />
      <Field label="Expires on" name="expires_at" type="date" min={tomorrow(now)} value={values.expiry} onChange={(e) => set({ expiry: e.target.value })} hint="Empty = never. The key stops at the start of that day." error={error(checks.expiry, 'expires_at')} />
    </div>
  );
}

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
      <PageHeader title="API keys" lead="Apps call the gateway with these sk- keys. Each has its own rate limit, budget and expiry.">
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
                  </th>
                  <td data-label="Key">
                    <code>{key.masked_key}</code>
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={key.status} />
                  </td>
                  <td data-label="Spent">
                    <BudgetMeter spent={key.spent} budget={key.budget} />
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
  const [values, setValues] = useState<KeyFormValues>({ name: '', rateLimit: DEFAULT_RATE_LIMIT, budget: '0', expiry: '' });
  const [submitted, setSubmitted] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const checks = checkKeyForm(values, now);

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    const { name, rateLimit, budget, expiry } = checks;
    if (!name.ok || !rateLimit.ok || !budget.ok || !expiry.ok) return;
    setBusy(true);
    setError(null);
    try {
      const body: Parameters<typeof api.createApiKey>[0] = { name: name.value, rate_limit: rateLimit.value, budget: microsToInr(budget.value) };
      if (expiry.value) body.expires_at = expiry.value;
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
      <ErrorNotice error={error && !['name', 'rate_limit', 'budget', 'expires_at'].includes(error.param ?? '') ? error : null} />
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
  const initial: KeyFormValues = { name: apiKey.name, rateLimit: String(apiKey.rate_limit), budget: budgetInputValue(apiKey.budget), expiry: expiryInputValue(apiKey.expires_at) };
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
    const { name, rateLimit, budget, expiry } = checks;
    if (!name.ok || !rateLimit.ok || !budget.ok || !expiry.ok) return;
    const changes: Parameters<typeof api.updateApiKey>[1] = {};
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
        <ErrorNotice error={error && !['name', 'rate_limit', 'budget', 'expires_at'].includes(error.param ?? '') ? error : null} />
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
