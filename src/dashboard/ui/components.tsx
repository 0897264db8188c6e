import { useEffect, useId, useRef, useState, type AnchorHTMLAttributes, type ReactNode, type MouseEvent, type InputHTMLAttributes, type SelectHTMLAttributes } from 'react';
import type { ApiError } from '../lib/api.js';
import { formatInr, formatMicros, spentShare, type InrFormat } from '../lib/money.js';
import { routerHandlesClick } from '../lib/router.js';
import type { KeyStatus } from '../lib/types.js';
import { useApp } from './context.js';

/** Shared building blocks: links, form fields, notices, dialogs, money. */

type LinkProps = Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'> & { to: string; children: ReactNode };

/** An in-app link: a real <a href> (open in a new tab works), routed without a reload. */
export function Link({ to, children, onClick, ...rest }: LinkProps) {
  const { router } = useApp();
  const handle = (event: MouseEvent<HTMLAnchorElement>): void => {
    onClick?.(event);
    if (!routerHandlesClick(event, event.currentTarget.getAttribute('target'), to)) return;
    event.preventDefault();
    router.navigate(to);
  };
  return (
    <a href={to} onClick={handle} {...rest}>
      {children}
    </a>
  );
}

export function PageHeader({ title, children, lead }: { title: string; lead?: ReactNode; children?: ReactNode }) {
  return (
    <div className="page-header">
      <div>
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {lead ? <p className="lead">{lead}</p> : null}
      </div>
      {children ? <div className="page-actions">{children}</div> : null}
    </div>
  );
}

interface FieldShell {
  label: string;
  hint?: ReactNode;
  error?: string | null;
  className?: string;
}

/** A labelled input with its hint and its error, tied together for screen readers. */
export function Field({ label, hint, error, className, ...input }: FieldShell & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  return (
    <div className={`field${error ? ' has-error' : ''}${className ? ` ${className}` : ''}`}>
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-invalid={error ? true : undefined} aria-describedby={describedBy} {...input} />
      {hint ? (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      ) : null}
      {error ? (
        <p className="field-error" id={errorId}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

export function SelectField({ label, hint, error, className, children, ...select }: FieldShell & SelectHTMLAttributes<HTMLSelectElement> & { children: ReactNode }) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div className={`field${error ? ' has-error' : ''}${className ? ` ${className}` : ''}`}>
      <label htmlFor={id}>{label}</label>
      <select id={id} aria-describedby={hintId} {...select}>
        {children}
      </select>
      {hint ? (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      ) : null}
      {error ? <p className="field-error">{error}</p> : null}
    </div>
  );
}

/** An error from the API (or a form), read out at once. */
export function ErrorNotice({ error, children }: { error?: ApiError | string | null; children?: ReactNode }) {
  if (!error && !children) return null;
  const message = typeof error === 'string' ? error : error?.message;
  return (
    <div className="notice notice-error" role="alert">
      {message}
      {children}
    </div>
  );
}

export function SuccessNotice({ children }: { children: ReactNode }) {
  return (
    <div className="notice notice-success" role="status">
      {children}
    </div>
  );
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p className="loading" role="status">
      {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** An INR amount from the API: "₹1,23,456.78" (up to 6 decimals when it has them). */
export function Inr({ value, className, ...format }: { value: number; className?: string } & InrFormat) {
  return <span className={`money${className ? ` ${className}` : ''}`}>{formatInr(value, format)}</span>;
}

export function Micros({ value, className, ...format }: { value: number; className?: string } & InrFormat) {
  return <span className={`money${className ? ` ${className}` : ''}`}>{formatMicros(value, format)}</span>;
}

const STATUS_TEXT: Record<KeyStatus, string> = { active: 'Active', expired: 'Expired', revoked: 'Revoked', exhausted: 'Budget used up' };

export function StatusBadge({ status }: { status: KeyStatus }) {
  return <span className={`badge badge-${status}`}>{STATUS_TEXT[status]}</span>;
}

/** A call's outcome: "OK", or "Error 429" with the HTTP status. */
export function CallStatus({ status }: { status: number | 'ok' | 'error' }) {
  const ok = typeof status === 'number' ? status < 400 : status === 'ok';
  const text = ok ? 'OK' : typeof status === 'number' ? `Error ${status}` : 'Error';
  return <span className={`badge badge-${ok ? 'ok' : 'error'}`}>{text}</span>;
}

/** Spent against a budget: "₹12.50 of ₹200.00" and a meter (unlimited: "no limit"). */
export function BudgetMeter({ spent, budget }: { spent: number; budget: number }) {
  const spentMicros = Math.round(spent * 1_000_000);
  const budgetMicros = Math.round(budget * 1_000_000);
  if (budgetMicros <= 0) {
    return (
      <span className="budget">
        <Inr value={spent} /> <span className="muted">· no limit</span>
      </span>
    );
  }
  const share = spentShare(spentMicros, budgetMicros);
  return (
    <span className="budget">
      <span>
        <Inr value={spent} /> <span className="muted">of</span> <Inr value={budget} maxDecimals={2} />
      </span>
      <meter min={0} max={1} low={0.75} high={0.9} optimum={0} value={share} aria-label={`${Math.round(share * 100)}% of the budget spent`} />
    </span>
  );
}

/**
 * A modal dialog on the native <dialog>: focus moves into it and is kept there, Escape
 * closes it, focus returns to what opened it.
 */
export function Dialog({ title, onClose, children, className }: { title: string; onClose: () => void; children: ReactNode; className?: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    if (!dialog.open) dialog.showModal();
    const closed = (): void => onCloseRef.current();
    dialog.addEventListener('close', closed);
    return () => {
      dialog.removeEventListener('close', closed);
      if (dialog.open) dialog.close();
      opener?.focus();
    };
  }, []);
  return (
    <dialog ref={ref} aria-labelledby={titleId} className={className ? `dialog ${className}` : 'dialog'}>
      <div className="dialog-head">
        <h2 id={titleId}>{title}</h2>
        <button type="button" className="icon-button" aria-label="Close" onClick={() => ref.current?.close()}>
          ×
        </button>
      </div>
      {children}
    </dialog>
  );
}

/** Asks before an action that cannot be undone. */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  onConfirm,
  onClose,
  busy,
  error,
}: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onClose: () => void;
  busy: boolean;
  error: ApiError | null;
}) {
  return (
    <Dialog title={title} onClose={onClose}>
      <div className="dialog-body">{children}</div>
      <ErrorNotice error={error} />
      <div className="form-actions">
        <button type="button" className="button danger" onClick={onConfirm} disabled={busy}>
          {busy ? 'Working…' : confirmLabel}
        </button>
        <button type="button" className="button secondary" onClick={onClose} autoFocus>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

/** Copies text to the clipboard (with a fallback where the Clipboard API is not allowed). */
export async function copyText(text: string, field: HTMLInputElement | null): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection copy
  }
  if (!field) return false;
  field.focus();
  field.select();
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

/**
 * A secret shown once: the value in a read-only field (select it by hand if copying fails),
 * a copy button and the warning that it cannot be shown again.
 */
export function SecretOnce({ label, secret, onDone, what }: { label: string; secret: string; onDone: () => void; what: string }) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  const headingRef = useRef<HTMLHeadingElement>(null);
  useEffect(() => headingRef.current?.focus(), []);
  return (
    <section className="secret-once" aria-labelledby="secret-heading">
      <h2 id="secret-heading" tabIndex={-1} ref={headingRef}>
        {label}
      </h2>
      <p className="warning">
        <strong>Copy it now: it is shown only this once.</strong> The gateway keeps only a hash of {what}; if you lose it, revoke it and make a new one.
      </p>
      <div className="secret-row">
        <label htmlFor="secret-value" className="visually-hidden">
          {label}
        </label>
        <input id="secret-value" ref={field} className="secret" readOnly value={secret} onFocus={(event) => event.currentTarget.select()} spellCheck={false} />
        <button
          type="button"
          className="button"
          onClick={() => {
            void copyText(secret, field.current).then((ok) => setCopied(ok ? 'yes' : 'no'));
          }}
        >
          Copy
        </button>
      </div>
      <p role="status" className="copy-status">
        {copied === 'yes' ? 'Copied to the clipboard.' : copied === 'no' ? 'Could not copy: select the key and copy it by hand.' : ''}
      </p>
      <button type="button" className="button secondary" onClick={onDone}>
        I have saved it
      </button>
    </section>
  );
}
