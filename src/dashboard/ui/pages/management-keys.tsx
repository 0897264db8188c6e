import { useState, type FormEvent } from 'react';
import { asApiError, type ApiError } from '../../lib/api.js';
import { formatAgo, formatDate } from '../../lib/format.js';
import type { CreatedManagementKey, ManagementKey } from '../../lib/types.js';
import { checkExpiry, checkName, tomorrow } from '../../lib/validate.js';
import { ConfirmDialog, Empty, ErrorNotice, Field, Loading, PageHeader, SecretOnce, StatusBadge, SuccessNotice } from '../components.js';
import { useApp, useLoad, useNow, useTitle } from '../context.js';

/** Management keys (akm-): for tools and scripts that manage the account; never for inference. */
export function ManagementKeysPage() {
  const { api } = useApp();
  useTitle('Management keys');
  const now = useNow();
  const keys = useLoad(() => api.managementKeys(), [api]);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreatedManagementKey | null>(null);
  const [revoking, setRevoking] = useState<ManagementKey | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const list = keys.data?.data ?? [];

  return (
    <>
      <PageHeader title="Management keys" lead="akm- keys let tools and the gateway CLI manage this account (keys, usage). They cannot make model calls.">
        {!creating && !created ? (
          <button type="button" className="button" onClick={() => { setCreating(true); setMessage(null); }}>
            Create a management key
          </button>
        ) : null}
      </PageHeader>
      {created ? <SecretOnce label={`Your new management key “${created.name}”`} what="the key" secret={created.management_key} onDone={() => setCreated(null)} /> : null}
      {creating ? (
        <CreateForm
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
      {keys.loading && !keys.data ? <Loading what="Loading your management keys" /> : null}
      {keys.data && list.length === 0 ? <Empty>No management keys.</Empty> : null}
      {list.length > 0 ? (
        <div className="table-wrap">
          <table className="responsive">
            <caption className="visually-hidden">Your management keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((key) => (
                <tr key={key.id}>
                  <th scope="row" data-label="Name">
                    {key.name}
                  </th>
                  <td data-label="Key">
                    <code>{key.masked_key}</code>
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={key.status} />
                  </td>
                  <td data-label="Created">{formatDate(key.created_at)}</td>
                  <td data-label="Last used">{formatAgo(key.last_used_at, now)}</td>
                  <td data-label="Expires">{key.expires_at ? formatDate(key.expires_at) : 'Never'}</td>
                  <td className="actions">
                    {key.status !== 'revoked' ? (
                      <button type="button" className="button danger-outline small" onClick={() => setRevoking(key)} aria-label={`Revoke ${key.name}`}>
                        Revoke
                      </button>
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
      {revoking ? (
        <RevokeManagementKey
          apiKey={revoking}
          onClose={() => setRevoking(null)}
          onRevoked={(key) => {
            setRevoking(null);
            setMessage(`Revoked “${key.name}”.`);
            keys.reload();
          }}
        />
      ) : null}
    </>
  );
}

function CreateForm({ now, onCancel, onCreated }: { now: number; onCancel: () => void; onCreated: (key: CreatedManagementKey) => void }) {
  const { api } = useApp();
  const [name, setName] = useState('');
  const [expiry, setExpiry] = useState('');
  const [submitted, setSubmitted] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const nameCheck = checkName(name, 'a name for the key');
  const expiryCheck = checkExpiry(expiry, now);

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    if (!nameCheck.ok || !expiryCheck.ok) return;
    setBusy(true);
    setError(null);
    try {
      const body: { name: string; expires_at?: string } = { name: nameCheck.value };
      if (expiryCheck.value) body.expires_at = expiryCheck.value;
      onCreated(await api.createManagementKey(body));
    } catch (reason) {
      setError(asApiError(reason));
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} noValidate aria-labelledby="create-mkey-heading">
      <h2 id="create-mkey-heading">New management key</h2>
      <div className="form-grid">
        <Field label="Name" name="name" value={name} onChange={(e) => setName(e.target.value)} error={submitted && !nameCheck.ok ? nameCheck.message : null} maxLength={100} hint="What uses it, e.g. “billing script”." required />
        <Field label="Expires on" name="expires_at" type="date" min={tomorrow(now)} value={expiry} onChange={(e) => setExpiry(e.target.value)} hint="Empty = never." error={submitted && !expiryCheck.ok ? expiryCheck.message : null} />
      </div>
      <ErrorNotice error={error} />
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

function RevokeManagementKey({ apiKey, onClose, onRevoked }: { apiKey: ManagementKey; onClose: () => void; onRevoked: (key: ManagementKey) => void }) {
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
        api.revokeManagementKey(apiKey.id).then(onRevoked, (reason: unknown) => {
          setError(asApiError(reason));
          setBusy(false);
        });
      }}
    >
      <p>
        Tools using <code>{apiKey.masked_key}</code> are refused from now on. This cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
