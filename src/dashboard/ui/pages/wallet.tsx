import { useEffect, useState } from 'react';
import { asApiError, type ApiError } from '../../lib/api.js';
import { formatDateTime } from '../../lib/format.js';
import { formatMicros, ledgerAmountMicros } from '../../lib/money.js';
import type { LedgerEntry, Page } from '../../lib/types.js';
import { Empty, ErrorNotice, Inr, Loading, PageHeader } from '../components.js';
import { useApp, useTitle, useUser } from '../context.js';

const PAGE_SIZE = 50;

const KIND_LABELS: Record<LedgerEntry['kind'], string> = { topup: 'Top-up', charge: 'Charge', refund: 'Refund' };

/** The wallet: balance and the ledger (top-ups, charges, refunds) with the running balance. */
export function WalletPage() {
  const { api, refreshUser } = useApp();
  const user = useUser();
  useTitle('Wallet');
  const [entries, setEntries] = useState<LedgerEntry[]>([]);
  const [page, setPage] = useState<Page<LedgerEntry> | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);

  const load = (before: string | null): void => {
    setLoading(true);
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (before) query.set('before', before);
    api.ledger(query.toString()).then(
      (result) => {
        setPage(result);
        setEntries((current) => (before ? [...current, ...result.data] : result.data));
        setError(null);
        setLoading(false);
      },
      (reason: unknown) => {
        setError(asApiError(reason));
        setLoading(false);
      },
    );
  };

  useEffect(() => {
    load(null);
    void refreshUser().catch(() => {});
  }, []);

  return (
    <>
      <PageHeader title="Wallet" lead="Your prepaid balance in rupees. Calls are charged as they settle; an admin tops the wallet up." />
      <section className="stats" aria-label="Balance">
        <div className="stat stat-primary">
          <h2>Balance</h2>
          <p className="stat-value" data-testid="wallet-balance">
            <Inr value={user.balance} />
          </p>
        </div>
      </section>
      <section className="panel" aria-labelledby="ledger-heading">
        <h2 id="ledger-heading">Ledger</h2>
        <ErrorNotice error={error} />
        {loading && !page ? <Loading what="Loading the ledger" /> : null}
        {page && entries.length === 0 ? <Empty>No entries yet: your first top-up will show here.</Empty> : null}
        {entries.length > 0 ? (
          <div className="table-wrap">
            <table className="responsive ledger-table">
              <caption className="visually-hidden">Ledger, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Type</th>
                  <th scope="col" className="num">
                    Amount
                  </th>
                  <th scope="col" className="num">
                    Balance after
                  </th>
                  <th scope="col">Reference</th>
                </tr>
              </thead>
              <tbody>
                {entries.map((entry) => {
                  const amount = ledgerAmountMicros(entry);
                  return (
                    <tr key={entry.id}>
                      <th scope="row" data-label="Time">
                        {formatDateTime(entry.created_at)}
                      </th>
                      <td data-label="Type">
                        <span className={`badge badge-${entry.kind}`}>{KIND_LABELS[entry.kind] ?? entry.kind}</span>
                      </td>
                      <td data-label="Amount" className={`num ${amount < 0 ? 'debit' : 'credit'}`}>
                        <span className="money">{formatMicros(amount, { signed: true })}</span>
                      </td>
                      <td data-label="Balance after" className="num">
                        <Inr value={entry.balance_after} />
                      </td>
                      <td data-label="Reference" className="reference">
                        {entry.reference ?? (entry.request_id ? <code title="Request id">{entry.request_id}</code> : null)}
                        {entry.note ? <span className="muted"> {entry.note}</span> : null}
                        {!entry.reference && !entry.request_id && !entry.note ? <span className="muted">—</span> : null}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        ) : null}
        {page?.has_more && page.next_before !== null ? (
          <div className="pager">
            <button type="button" className="button secondary small" disabled={loading} onClick={() => load(String(page.next_before))}>
              {loading ? 'Loading…' : 'Load older entries'}
            </button>
          </div>
        ) : null}
      </section>
    </>
  );
}
