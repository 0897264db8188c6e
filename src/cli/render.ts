import type { ReactNode } from 'react';
import { renderToString } from 'ink';
import { formatInrDisplay, parseInr } from '../core/money.js';
import type { Io } from './io.js';

/** `--json`: one JSON document on stdout; otherwise the Ink view, rendered once. */
export function emit(io: Io, json: boolean | undefined, doc: unknown, view: () => ReactNode): void {
  if (json) io.out(`${JSON.stringify(doc, null, 2)}\n`);
  else io.out(`${renderToString(view(), { columns: io.columns })}\n`);
}

/** An INR number from the API, for people: "₹1,234.50". */
export function inr(value: number | null | undefined, unlimited = '—'): string {
  if (value === null || value === undefined) return unlimited;
  const parsed = parseInr(Math.abs(value));
  if (!parsed.ok) return String(value);
  return formatInrDisplay(value < 0 ? -parsed.micros : parsed.micros);
}

export function when(iso: string | null | undefined, never = '—'): string {
  return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : never;
}
