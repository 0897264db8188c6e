import type { ApiError } from '../../lib/api.js';
import { formatCount } from '../../lib/money.js';
import type { ApiKey } from '../../lib/types.js';
import { checkBudget, checkExpiry, checkName, checkRateLimit, RATE_LIMIT_MAX, tomorrow, type Check } from '../../lib/validate.js';
import { Field } from '../components.js';

/** The API key form's fields (create and edit), their checks, and what they send. */

export const DEFAULT_RATE_LIMIT = '1000';

export interface KeyFormValues {
  name: string;
  rateLimit: string;
  budget: string;
  expiry: string;
  /** Comma-separated; empty: all models, anywhere. */
  models: string;
  allowedIps: string;
  /** Empty: no limit. */
  maxParallel: string;
  tpm: string;
  /** Empty: the budget is for the key's life. */
  budgetPeriod: string;
}

/** A comma-separated field as its list (the server checks each entry and names the one it refuses). */
export function listOf(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

const LIST_FIELDS = ['models', 'allowed_ips'];
const FIELDS = ['name', 'rate_limit', 'budget', 'expires_at', 'max_parallel', 'tpm_limit', 'budget_period'];
/** Whether a server error names a field of the form (`models[2]` is the models field's). */
export function namesField(error: ApiError | null): boolean {
  const param = error?.param ?? '';
  return FIELDS.includes(param) || LIST_FIELDS.some((field) => param === field || param.startsWith(`${field}[`));
}

export interface KeyFormChecks {
  name: ReturnType<typeof checkName>;
  rateLimit: ReturnType<typeof checkRateLimit>;
  budget: ReturnType<typeof checkBudget>;
  expiry: ReturnType<typeof checkExpiry>;
  maxParallel: Check<number | null>;
  tpm: Check<number | null>;
}

export const MAX_PARALLEL = 10_000;
export const MAX_TPM = 1_000_000_000;

/** An optional whole-number limit: empty = none. */
function checkLimit(text: string, max: number, what: string): Check<number | null> {
  const value = text.trim().replace(/,/g, '');
  if (value === '') return { ok: true, value: null };
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) return { ok: false, message: `Enter a whole number of ${what}, 1 to ${max.toLocaleString('en-IN')}, or leave it empty for no limit.` };
  return { ok: true, value: Number(value) };
}

export function checkKeyForm(values: KeyFormValues, now: number): KeyFormChecks {
  return {
    name: checkName(values.name, 'a name for the key'),
    rateLimit: checkRateLimit(values.rateLimit),
    budget: checkBudget(values.budget),
    expiry: checkExpiry(values.expiry, now),
    maxParallel: checkLimit(values.maxParallel, MAX_PARALLEL, 'calls'),
    tpm: checkLimit(values.tpm, MAX_TPM, 'tokens'),
  };
}

/** The limits of a new key (only those set). */
export function limitsOf(values: KeyFormValues, checks: KeyFormChecks): { max_parallel?: number; tpm_limit?: number; budget_period?: string } {
  const out: { max_parallel?: number; tpm_limit?: number; budget_period?: string } = {};
  if (checks.maxParallel.ok && checks.maxParallel.value !== null) out.max_parallel = checks.maxParallel.value;
  if (checks.tpm.ok && checks.tpm.value !== null) out.tpm_limit = checks.tpm.value;
  if (values.budgetPeriod.trim() !== '') out.budget_period = values.budgetPeriod.trim();
  return out;
}

/** What an edit changes of the key's lists and limits (null clears one). */
export function limitChanges(values: KeyFormValues, checks: KeyFormChecks, key: ApiKey): { models?: string[]; allowed_ips?: string[]; max_parallel?: number | null; tpm_limit?: number | null; budget_period?: string | null } {
  const changes: { models?: string[]; allowed_ips?: string[]; max_parallel?: number | null; tpm_limit?: number | null; budget_period?: string | null } = {};
  if (listOf(values.models).join(',') !== (key.models ?? []).join(',')) changes.models = listOf(values.models);
  if (listOf(values.allowedIps).join(',') !== (key.allowed_ips ?? []).join(',')) changes.allowed_ips = listOf(values.allowedIps);
  if (checks.maxParallel.ok && checks.maxParallel.value !== (key.max_parallel ?? null)) changes.max_parallel = checks.maxParallel.value;
  if (checks.tpm.ok && checks.tpm.value !== (key.tpm_limit ?? null)) changes.tpm_limit = checks.tpm.value;
  const period = values.budgetPeriod.trim() === '' ? null : values.budgetPeriod.trim();
  if (period !== (key.budget_period ?? null)) changes.budget_period = period;
  return changes;
}

/** The fields shared by the create form and the edit dialog, with their rules inline. */
export function KeyFields({ values, set, checks, show, serverError, now }: { values: KeyFormValues; set: (next: Partial<KeyFormValues>) => void; checks: KeyFormChecks; show: boolean; serverError: ApiError | null; now: number }) {
  const error = (check: { ok: boolean; message?: string }, param: string): string | null =>
    show && !check.ok ? (check.message ?? null) : serverError?.param === param || serverError?.param?.startsWith(`${param}[`) ? serverError.message : null;
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
        hint="What the key may spend in total, or per period when it renews; 0 = no limit."
        error={error(checks.budget, 'budget')}
      />
      <Field
        label="Budget renews"
        name="budget_period"
        list="budget-periods"
        value={values.budgetPeriod}
        onChange={(e) => set({ budgetPeriod: e.target.value })}
        hint="daily, weekly, monthly (at midnight, on Monday, on the 1st, in the gateway's time zone) or every 30d, 12h… from the key's creation. Empty = never: the budget is for the key's life."
        error={error({ ok: true }, 'budget_period')}
      />
      <datalist id="budget-periods">
        <option value="daily" />
        <option value="weekly" />
        <option value="monthly" />
      </datalist>
      <Field label="Expires on" name="expires_at" type="date" min={tomorrow(now)} value={values.expiry} onChange={(e) => set({ expiry: e.target.value })} hint="Empty = never. The key stops at the start of that day." error={error(checks.expiry, 'expires_at')} />
      <Field
        label="Models"
        name="models"
        value={values.models}
        onChange={(e) => set({ models: e.target.value })}
        hint="Model ids, aliases or patterns the key may call, comma-separated (openai/gpt-4o-mini, anthropic/*). Empty = all."
        error={error({ ok: true }, 'models')}
      />
      <Field
        label="Allowed IP addresses"
        name="allowed_ips"
        value={values.allowedIps}
        onChange={(e) => set({ allowedIps: e.target.value })}
        hint="Addresses and CIDRs the key may be used from, comma-separated (10.0.0.0/8, 2001:db8::/32). Empty = anywhere."
        error={error({ ok: true }, 'allowed_ips')}
      />
      <Field
        label="Calls at once"
        name="max_parallel"
        inputMode="numeric"
        value={values.maxParallel}
        onChange={(e) => set({ maxParallel: e.target.value })}
        hint={`Calls in flight at the same time, 1 to ${formatCount(MAX_PARALLEL)}; one more is refused (429). Empty = no limit.`}
        error={error(checks.maxParallel, 'max_parallel')}
      />
      <Field
        label="Tokens per minute"
        name="tpm_limit"
        inputMode="numeric"
        value={values.tpm}
        onChange={(e) => set({ tpm: e.target.value })}
        hint="Input and output tokens the key may use in any minute. Empty = no limit."
        error={error(checks.tpm, 'tpm_limit')}
      />
    </div>
  );
}

