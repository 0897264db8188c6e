import { useState, type FormEvent } from 'react';
import { asApiError, type ApiError } from '../../lib/api.js';
import { formatAgo, formatDate, formatDateTime } from '../../lib/format.js';
import { formatCount, formatMicros, inrToMicros, microsToInr } from '../../lib/money.js';
import type { Account, Role, TopupResult } from '../../lib/types.js';
import { checkEmail, checkName, checkNewPassword, checkTopup, newReference } from '../../lib/validate.js';
import { BudgetMeter, Dialog, Empty, ErrorNotice, Field, Inr, Link, Loading, PageHeader, SelectField, StatusBadge } from '../components.js';
import { useApp, useLoad, useNow, useTitle, useUser } from '../context.js';
import { UsageExplorer } from './usage.js';
import { AlertsPanel, SpendLimitDialog, SpendLimitStat } from './admin-governance.js';

/** What a top-up did: added, or (a reference used before) nothing. */
interface Message {
  text: string;
  tone: 'success' | 'warning';
}

export function topupMessage(email: string, result: TopupResult): Message {
  const amount = formatMicros(Math.abs(inrToMicros(result.entry.amount)));
  const balance = formatMicros(inrToMicros(result.balance));
  if (result.replayed) {
    return { text: `The reference “${result.entry.reference ?? ''}” was already applied (${amount} on ${formatDateTime(result.entry.created_at)}): nothing was added. ${email}'s balance is ${balance}.`, tone: 'warning' };
  }
  return { text: `Topped up ${email} by ${amount}. The balance is now ${balance}.`, tone: 'success' };
}

function MessageNotice({ message }: { message: Message | null }) {
  if (!message) return null;
  return (
    <div className={`notice notice-${message.tone}`} role="status">
      {message.text}
    </div>
  );
}

export function AdminsOnly() {
  return (
    <>
      <PageHeader title="Admin" />
      <div className="notice notice-warning" role="alert">
        Only admin accounts can see this page.
      </div>
    </>
  );
}

/** Accounts with their balances; create an account; top up a wallet. */
export function AdminPage() {
  const { api } = useApp();
  const user = useUser();
  useTitle('Admin');
  const accounts = useLoad((signal) => (user.role === 'admin' ? api.accounts(signal) : Promise.resolve({ data: [] as Account[] })), [api, user.role]);
  const [creating, setCreating] = useState(false);
  const [topping, setTopping] = useState<Account | null>(null);
  const [message, setMessage] = useState<Message | null>(null);
  if (user.role !== 'admin') return <AdminsOnly />;
  const list = accounts.data?.data ?? [];

  return (
    <>
      <PageHeader title="Admin" lead="Every account on this gateway, with its balance.">
        <Link to="/admin/routes" className="button secondary">
          Routes
        </Link>
        {!creating ? (
          <button type="button" className="button" onClick={() => { setCreating(true); setMessage(null); }}>
            Create an account
          </button>
        ) : null}
      </PageHeader>
      {creating ? (
        <CreateAccountForm
          onCancel={() => setCreating(false)}
          onCreated={(account) => {
            setCreating(false);
            setMessage({ text: `Created ${account.email}. Top up their wallet so their keys can make calls.`, tone: 'success' });
            accounts.reload();
          }}
        />
      ) : null}
      <MessageNotice message={message} />
      <ErrorNotice error={accounts.error} />
      {accounts.loading && !accounts.data ? <Loading what="Loading accounts" /> : null}
      {accounts.data && list.length === 0 ? <Empty>No accounts.</Empty> : null}
      {list.length > 0 ? (
        <div className="table-wrap">
          <table className="responsive accounts-table">
            <caption className="visually-hidden">Accounts</caption>
            <thead>
              <tr>
                <th scope="col">Account</th>
                <th scope="col">Role</th>
                <th scope="col" className="num">
                  Balance
                </th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((account) => (
                <tr key={account.id} data-account-email={account.email}>
                  <th scope="row" data-label="Account">
                    <Link to={`/admin/accounts/${encodeURIComponent(account.id)}`}>{account.name}</Link>
                    <span className="muted block">{account.email}</span>
                  </th>
                  <td data-label="Role">{account.role}</td>
                  <td data-label="Balance" className="num">
                    <Inr value={account.balance} />
                  </td>
                  <td data-label="Created">{formatDate(account.created_at)}</td>
                  <td className="actions">
                    <button type="button" className="button secondary small" onClick={() => setTopping(account)} aria-label={`Top up ${account.email}`}>
                      Top up
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <AlertsPanel />
      {topping ? (
        <TopupDialog
          account={topping}
          onClose={() => setTopping(null)}
          onDone={(result) => {
            setTopping(null);
            setMessage(topupMessage(topping.email, result));
            accounts.reload();
          }}
        />
      ) : null}
    </>
  );
}

function CreateAccountForm({ onCancel, onCreated }: { onCancel: () => void; onCreated: (account: Account) => void }) {
  const { api } = useApp();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('user');
  const [password, setPassword] = useState('');
  const [submitted, setSubmitted] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const emailCheck = checkEmail(email);
  const nameCheck = checkName(name, 'a name', 200);
  // Optional: without one, the person cannot log in until a password is set (CLI) or they use management keys.
  const passwordCheck = password ? checkNewPassword(password) : null;

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    if (!emailCheck.ok || !nameCheck.ok || (passwordCheck && !passwordCheck.ok)) return;
    setBusy(true);
    setError(null);
    try {
      onCreated(await api.createAccount({ email: emailCheck.value, name: nameCheck.value, role, ...(passwordCheck?.ok ? { password: passwordCheck.value } : {}) }));
    } catch (reason) {
      setError(asApiError(reason));
      setBusy(false);
    }
  };

  return (
    <form className="panel" onSubmit={(event) => void submit(event)} noValidate aria-labelledby="create-account-heading">
      <h2 id="create-account-heading">New account</h2>
      <div className="form-grid">
        <Field label="E-mail" type="email" value={email} onChange={(e) => setEmail(e.target.value)} error={submitted && !emailCheck.ok ? emailCheck.message : error?.param === 'email' ? error.message : null} required />
        <Field label="Name" value={name} onChange={(e) => setName(e.target.value)} error={submitted && !nameCheck.ok ? nameCheck.message : null} required />
        <Field
          label="Password (optional)"
          type="password"
          autoComplete="new-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          hint="At least 8 characters. Without one, they cannot log in to the dashboard yet."
          error={submitted && passwordCheck && !passwordCheck.ok ? passwordCheck.message : error?.param === 'password' ? error.message : null}
        />
        <SelectField label="Role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          <option value="user">User</option>
          <option value="admin">Admin</option>
        </SelectField>
      </div>
      <ErrorNotice error={error && error.param !== 'email' && error.param !== 'password' ? error : null} />
      <div className="form-actions">
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Creating…' : 'Create account'}
        </button>
        <button type="button" className="button secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/**
 * Top-up with a reference. The reference is made when the dialog opens and kept across
 * retries, so a double submit or a retry after a network error applies once (the API is
 * idempotent per reference).
 */
function TopupDialog({ account, onClose, onDone }: { account: Account; onClose: () => void; onDone: (result: TopupResult) => void }) {
  const { api } = useApp();
  const [amount, setAmount] = useState('');
  const [reference, setReference] = useState(() => newReference(Date.now()));
  const [submitted, setSubmitted] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const amountCheck = checkTopup(amount);
  const referenceError = reference.trim() ? null : 'Enter a reference (an invoice or payment id).';

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setSubmitted(true);
    if (!amountCheck.ok || referenceError) return;
    setBusy(true);
    setError(null);
    try {
      onDone(await api.topup(account.id, { amount: microsToInr(amountCheck.value), reference: reference.trim() }));
    } catch (reason) {
      setError(asApiError(reason));
      setBusy(false);
    }
  };

  return (
    <Dialog title={`Top up ${account.name}`} onClose={onClose}>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <p className="muted">
          {account.email} · balance <Inr value={account.balance} />
        </p>
        <Field
          label="Amount (₹)"
          name="amount"
          inputMode="decimal"
          value={amount}
          onChange={(e) => setAmount(e.target.value)}
          hint={amountCheck.ok ? `Adds ${formatMicros(amountCheck.value)}.` : 'For example 500 or 1,250.50.'}
          error={submitted && !amountCheck.ok ? amountCheck.message : error?.param === 'amount' ? error.message : null}
          autoFocus
          required
        />
        <Field
          label="Reference"
          name="reference"
          value={reference}
          onChange={(e) => setReference(e.target.value)}
          hint="An invoice or payment id. The same reference is applied only once."
          error={submitted && referenceError ? referenceError : error?.param === 'reference' ? error.message : null}
          maxLength={200}
          required
        />
        <ErrorNotice error={error && error.param !== 'amount' && error.param !== 'reference' ? error : null} />
        <div className="form-actions">
          <button type="submit" className="button" disabled={busy}>
            {busy ? 'Topping up…' : 'Top up'}
          </button>
          <button type="button" className="button secondary" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** One account: its balance, its keys and its usage. */
export function AdminAccountPage({ id }: { id: string }) {
  const { api } = useApp();
  const user = useUser();
  const now = useNow();
  const accounts = useLoad((signal) => (user.role === 'admin' ? api.accounts(signal) : Promise.resolve({ data: [] as Account[] })), [api, user.role]);
  const keys = useLoad((signal) => (user.role === 'admin' ? api.accountKeys(id, signal) : Promise.resolve({ data: [] })), [api, id, user.role]);
  const [topping, setTopping] = useState(false);
  const [limiting, setLimiting] = useState(false);
  const [message, setMessage] = useState<Message | null>(null);
  const account = accounts.data?.data.find((a) => a.id === id);
  useTitle(account ? `${account.email} · Admin` : 'Account · Admin');
  if (user.role !== 'admin') return <AdminsOnly />;

  return (
    <>
      <p className="breadcrumb">
        <Link to="/admin">← All accounts</Link>
      </p>
      <PageHeader title={account ? account.name : 'Account'} lead={account ? `${account.email} · ${account.role}` : undefined}>
        {account ? (
          <button type="button" className="button" onClick={() => setTopping(true)}>
            Top up
          </button>
        ) : null}
      </PageHeader>
      <ErrorNotice error={accounts.error} />
      {accounts.data && !account ? <ErrorNotice error="There is no account with this id." /> : null}
      <MessageNotice message={message} />
      {account ? (
        <section className="stats" aria-label="Balance">
          <div className="stat stat-primary">
            <h2>Balance</h2>
            <p className="stat-value">
              <Inr value={account.balance} />
            </p>
          </div>
          <div className="stat">
            <h2>Keys</h2>
            <p className="stat-value">{formatCount(keys.data?.data.filter((key) => key.status === 'active').length ?? 0)}</p>
            <p className="stat-note">active</p>
          </div>
          <SpendLimitStat account={account} onEdit={() => setLimiting(true)} />
        </section>
      ) : null}
      {limiting && account ? (
        <SpendLimitDialog
          account={account}
          onClose={() => setLimiting(false)}
          onSaved={(saved) => {
            setLimiting(false);
            setMessage({ tone: 'success', text: saved.spend_limit ? `${saved.email} may spend ₹${saved.spend_limit} ${saved.spend_period ?? 'in all'}.` : `${saved.email} has no spend limit.` });
            accounts.reload();
          }}
        />
      ) : null}
      <section className="panel" aria-labelledby="account-keys">
        <h2 id="account-keys">API keys</h2>
        <ErrorNotice error={keys.error} />
        {keys.loading && !keys.data ? <Loading /> : null}
        {keys.data && keys.data.data.length === 0 ? <Empty>No keys.</Empty> : null}
        {keys.data && keys.data.data.length > 0 ? (
          <div className="table-wrap">
            <table className="responsive">
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
                </tr>
              </thead>
              <tbody>
                {keys.data.data.map((key) => (
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
                    <td data-label="Spent">
                      <BudgetMeter spent={key.budget_period ? (key.spent_this_period ?? 0) : key.spent} budget={key.budget} />
                    </td>
                    <td data-label="Rate limit" className="num">
                      {formatCount(key.rate_limit)}/min
                    </td>
                    <td data-label="Last used">{formatAgo(key.last_used_at, now)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>
      <section className="panel" aria-labelledby="account-usage">
        <h2 id="account-usage">Usage</h2>
        <UsageExplorer accountId={id} {...(keys.data ? { keys: keys.data.data } : {})} />
      </section>
      {topping && account ? (
        <TopupDialog
          account={account}
          onClose={() => setTopping(false)}
          onDone={(result) => {
            setTopping(false);
            setMessage(topupMessage(account.email, result));
            accounts.reload();
          }}
        />
      ) : null}
    </>
  );
}
