import { formatMicros, parseInrInput } from './money.js';

/**
 * The forms' rules, shown inline as people type; the same rules the API applies, so a form
 * the dashboard accepts is one the server accepts (the server's answer is shown all the same).
 */

export type Check<T> = { ok: true; value: T } | { ok: false; message: string };

// The API's rule: local@domain.tld, no spaces.
const EMAIL = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;

export function checkEmail(text: string): Check<string> {
  const value = text.trim();
  if (!value) return { ok: false, message: 'Enter your e-mail address.' };
  if (value.length > 254 || !EMAIL.test(value)) return { ok: false, message: 'Enter an e-mail address like name@example.com.' };
  return { ok: true, value: value.toLowerCase() };
}

export const PASSWORD_MIN = 8;
const PASSWORD_MAX_BYTES = 72;

/** Sign-up's rule: at least 8 characters, at most 72 bytes (what bcrypt reads). */
export function checkNewPassword(text: string): Check<string> {
  if (text.length < PASSWORD_MIN) return { ok: false, message: `Use at least ${PASSWORD_MIN} characters (${text.length} so far).` };
  if (new TextEncoder().encode(text).length > PASSWORD_MAX_BYTES) return { ok: false, message: 'Use at most 72 bytes (about 72 letters).' };
  return { ok: true, value: text };
}

export function checkName(text: string, what = 'a name', max = 100): Check<string> {
  const value = text.trim();
  if (!value) return { ok: false, message: `Enter ${what}.` };
  if (value.length > max) return { ok: false, message: `Use at most ${max} characters.` };
  return { ok: true, value };
}

export const RATE_LIMIT_MAX = 10_000;

export function checkRateLimit(text: string): Check<number> {
  const value = text.trim().replace(/,/g, '');
  if (!/^\d+$/.test(value)) return { ok: false, message: `Enter a whole number of requests per minute, 1 to ${RATE_LIMIT_MAX.toLocaleString('en-IN')}.` };
  const number = Number(value);
  if (number < 1 || number > RATE_LIMIT_MAX) return { ok: false, message: `Use 1 to ${RATE_LIMIT_MAX.toLocaleString('en-IN')} requests per minute.` };
  return { ok: true, value: number };
}

/** A key's budget in ₹: 0 (or empty) = unlimited. Answers µINR. */
export function checkBudget(text: string): Check<number> {
  if (text.trim() === '') return { ok: true, value: 0 };
  const parsed = parseInrInput(text);
  return parsed.ok ? { ok: true, value: parsed.micros } : { ok: false, message: parsed.message };
}

/** A top-up in ₹: more than 0. Answers µINR. */
export function checkTopup(text: string): Check<number> {
  const parsed = parseInrInput(text);
  if (!parsed.ok) return { ok: false, message: parsed.message };
  if (parsed.micros <= 0) return { ok: false, message: 'Top up more than ₹0.' };
  return { ok: true, value: parsed.micros };
}

/** "YYYY-MM-DD" of a local date. */
export function localDate(date: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** The earliest expiry date a form offers: tomorrow (local). */
export function tomorrow(now: number): string {
  const date = new Date(now);
  date.setDate(date.getDate() + 1);
  return localDate(date);
}

/**
 * An expiry date from a date input (YYYY-MM-DD, local): the key stops working at the start of
 * that day, local time. '' = never. Answers the ISO instant the API takes, or null for never.
 */
export function checkExpiry(text: string, now: number): Check<string | null> {
  const value = text.trim();
  if (!value) return { ok: true, value: null };
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return { ok: false, message: 'Pick a date, or leave it empty for no expiry.' };
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(year, month - 1, day);
  if (date.getFullYear() !== year || date.getMonth() !== month - 1 || date.getDate() !== day) return { ok: false, message: 'That date does not exist.' };
  if (date.getTime() <= now) return { ok: false, message: `Pick a future date (${tomorrow(now)} or later).` };
  return { ok: true, value: date.toISOString() };
}

/** The value of a date input for an expiry the API sent (local date), '' for none. */
export function expiryInputValue(iso: string | null): string {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : localDate(date);
}

/** What a budget field shows for an API budget in INR (0 = unlimited → "0"). */
export function budgetInputValue(inr: number): string {
  return inr > 0 ? formatMicros(Math.round(inr * 1_000_000), { minDecimals: 0 }).replace(/[₹,]/g, '') : '0';
}

/** A top-up reference that makes a retried submit apply once: "dashboard-<date>-<random>". */
export function newReference(now: number, random: () => number = Math.random): string {
  const suffix = Array.from({ length: 8 }, () => 'abcdefghijklmnopqrstuvwxyz0123456789'[Math.floor(random() * 36)]).join('');
  return `dashboard-${localDate(new Date(now))}-${suffix}`;
}
