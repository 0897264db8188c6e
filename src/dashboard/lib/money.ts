/**
 * Money in the dashboard. The API sends INR as JSON numbers with at most 6 decimals (1 µINR);
 * the dashboard turns them into integer micro-rupees at once and does every sum, comparison
 * and calculation on integers (BigInt where a product can pass 2^53). INR decimals exist only
 * in what people read and type.
 */

export const MICROS_PER_INR = 1_000_000;
const MICROS = 1_000_000n;

/** An INR number from the API → µINR (exact for every amount the API sends: ≤ 6 decimals). */
export function inrToMicros(inr: number): number {
  if (!Number.isFinite(inr)) throw new RangeError(`not an amount: ${inr}`);
  return Math.round(inr * MICROS_PER_INR);
}

const grouping = new Intl.NumberFormat('en-IN', { maximumFractionDigits: 0 });

/** The Indian grouping of a non-negative whole number (Intl's en-IN): 1,23,45,678. */
function groupIndian(whole: bigint): string {
  return grouping.format(whole);
}

export interface InrFormat {
  /** Fewest decimals shown (default 2). */
  minDecimals?: number;
  /** Most decimals shown (default 6: every µINR, so a small charge never reads as ₹0.00). */
  maxDecimals?: number;
  /** "+₹5.00" for a positive amount (ledger credits). */
  signed?: boolean;
}

/**
 * µINR → "₹1,23,456.78": Indian digit grouping (as Intl's en-IN does), two decimals at least and
 * up to six when the amount has them (₹0.000126 for a small call, never a misleading ₹0.00).
 * Rounds half away from zero past `maxDecimals`. Works on integers, so nothing is lost to floats.
 */
export function formatMicros(micros: number | bigint, options: InrFormat = {}): string {
  const min = options.minDecimals ?? 2;
  const max = Math.max(min, options.maxDecimals ?? 6);
  let value = BigInt(micros);
  const negative = value < 0n;
  if (negative) value = -value;
  // Round to `max` decimals (half away from zero).
  const drop = 10n ** BigInt(6 - Math.min(6, max));
  if (drop > 1n) value = ((value + drop / 2n) / drop) * drop;
  const whole = value / MICROS;
  let fraction = (value % MICROS).toString().padStart(6, '0').slice(0, Math.min(6, max));
  fraction = fraction.replace(/0+$/, '');
  if (fraction.length < min) fraction = fraction.padEnd(min, '0');
  const sign = negative && value !== 0n ? '-' : options.signed && value !== 0n ? '+' : '';
  return `${sign}₹${groupIndian(whole)}${fraction ? `.${fraction}` : ''}`;
}

/** An INR number from the API → "₹1,23,456.78" (see formatMicros). */
export function formatInr(inr: number, options: InrFormat = {}): string {
  return formatMicros(inrToMicros(inr), options);
}

/** A whole count with Indian grouping ("12,34,567"). */
export function formatCount(value: number): string {
  if (!Number.isFinite(value)) return '—';
  const rounded = Math.round(value);
  const text = groupIndian(BigInt(Math.abs(rounded)));
  return rounded < 0 ? `-${text}` : text;
}

export type ParsedInr = { ok: true; micros: number } | { ok: false; message: string };

/** Largest amount the gateway takes (₹1,00,00,00,000). */
export const MAX_INR = 1_000_000_000;

/**
 * What a person typed in an INR field ("1,500.50", "₹ 200", "0") → µINR. Commas and the rupee
 * sign are allowed; more than 6 decimals, negatives and other text are not.
 */
export function parseInrInput(text: string): ParsedInr {
  const cleaned = text.replace(/[₹,\s]/g, '');
  if (cleaned === '') return { ok: false, message: 'Enter an amount in ₹.' };
  if (cleaned.startsWith('-')) return { ok: false, message: 'The amount cannot be negative.' };
  const match = /^(\d+)(?:\.(\d*))?$/.exec(cleaned) ?? /^()\.(\d+)$/.exec(cleaned);
  if (!match) return { ok: false, message: 'Enter a number, like 500 or 1,250.50.' };
  const whole = match[1] || '0';
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > 6) return { ok: false, message: 'At most 6 decimals (₹0.000001 is the smallest unit).' };
  const micros = BigInt(whole) * MICROS + BigInt(fraction.padEnd(6, '0'));
  if (micros > BigInt(MAX_INR) * MICROS) return { ok: false, message: `At most ${formatMicros(BigInt(MAX_INR) * MICROS, { maxDecimals: 0, minDecimals: 0 })}.` };
  return { ok: true, micros: Number(micros) };
}

/** µINR → the JSON number the API takes (exact: at most 6 decimals). */
export function microsToInr(micros: number): number {
  const negative = micros < 0;
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_INR);
  const fraction = String(abs % MICROS_PER_INR).padStart(6, '0');
  const value = Number(`${whole}.${fraction}`);
  return negative ? -value : value;
}

/** Share of a budget spent, 0..1 (0 when the budget is unlimited). */
export function spentShare(spentMicros: number, budgetMicros: number): number {
  if (budgetMicros <= 0) return 0;
  return Math.min(1, Math.max(0, spentMicros / budgetMicros));
}

/** A ledger entry's amount in µINR with its direction: top-ups and refunds +, charges − (whatever sign the API uses). */
export function ledgerAmountMicros(entry: { kind: 'topup' | 'charge' | 'refund'; amount: number }): number {
  const micros = Math.abs(inrToMicros(entry.amount));
  return entry.kind === 'charge' ? -micros : micros;
}
