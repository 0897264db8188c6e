/**
 * Money is integer micro-rupees (µINR) inside the gateway. INR decimals exist only at the
 * edges: config prices, JSON numbers in API responses, CLI display. Conversions here go
 * through decimal strings, never through float multiplication.
 */

export const MICROS_PER_INR = 1_000_000;

/** Largest amount accepted anywhere (1e9 INR = 1e15 µINR, well inside 2^53). */
export const MAX_INR = 1_000_000_000;
export const MAX_MICROS = MAX_INR * MICROS_PER_INR;

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

export type ParseResult = { ok: true; micros: number } | { ok: false; rule: string };

/**
 * Parses a non-negative INR amount (a JSON number or a decimal string) into µINR.
 * A JS number is turned back into its shortest decimal form (`String(12.6)` is "12.6"),
 * which is exactly what the user wrote, then parsed digit by digit.
 */
export function parseInr(value: unknown): ParseResult {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return { ok: false, rule: 'must be a finite number' };
    if (value < 0) return { ok: false, rule: 'must be >= 0' };
    text = numberToPlainString(value);
  } else if (typeof value === 'string') {
    text = value.trim();
    if (text.startsWith('-')) return { ok: false, rule: 'must be >= 0' };
  } else {
    return { ok: false, rule: 'must be a number (INR)' };
  }
  const match = DECIMAL.exec(text);
  if (!match) return { ok: false, rule: 'must be a number (INR)' };
  const whole = match[1] as string;
  const frac = (match[2] ?? '').replace(/0+$/, '');
  if (frac.length > 6) return { ok: false, rule: 'must have at most 6 decimal places (1 µINR)' };
  const wholeNumber = Number(whole);
  if (wholeNumber > MAX_INR) return { ok: false, rule: `must be at most ${MAX_INR}` };
  const micros = wholeNumber * MICROS_PER_INR + Number(frac.padEnd(6, '0'));
  if (micros > MAX_MICROS) return { ok: false, rule: `must be at most ${MAX_INR}` };
  return { ok: true, micros };
}

/** Plain decimal form of a non-negative number, without exponent notation. */
function numberToPlainString(value: number): string {
  const text = String(value);
  if (!/e/i.test(text)) return text;
  // Exponent form only happens for < 1e-6 or >= 1e21; both are out of range anyway,
  // but render them as plain digits so the caller reports the right rule.
  if (value >= 1) return BigInt(Math.round(value)).toString();
  return value.toFixed(20).replace(/0+$/, '');
}

/** µINR → INR as a JSON number. Exact for every amount we store (≤ 1e15 µINR, 6 decimals). */
export function microsToInr(micros: number): number {
  return Number(formatMicros(micros));
}

/** µINR → plain decimal string with up to 6 decimals, trailing zeros removed ("12.5", "-0.000001"). */
export function formatMicros(micros: number): string {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`not an integer amount of µINR: ${micros}`);
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_INR);
  const digits = String(abs % MICROS_PER_INR).padStart(6, '0');
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 48) end -= 1; // trailing zeros ('0')
  return end > 0 ? `${sign}${whole}.${digits.slice(0, end)}` : `${sign}${whole}`;
}

/** Display form for people: "₹1,234.50" (two decimals at least, more when the amount has them). */
export function formatInrDisplay(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_INR);
  let frac = String(abs % MICROS_PER_INR).padStart(6, '0').replace(/0+$/, '');
  if (frac.length < 2) frac = frac.padEnd(2, '0');
  return `${sign}₹${whole.toLocaleString('en-IN')}.${frac}`;
}
