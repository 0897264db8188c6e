import type { ReactNode } from 'react';
import { formatInrDisplay, parseInr } from '../core/money.js';
import type { Io } from './io.js';

/** The views and Ink, as one module namespace: loaded by the first human-readable output. */
export type Ui = typeof import('./ui/index.js');

let ui: Promise<Ui> | undefined;
export function loadUi(): Promise<Ui> {
  ui ??= import('./ui/index.js');
  return ui;
}

/**
 * `--json`: one JSON document on stdout (Ink and React never load); otherwise the view, rendered
 * once with Ink.
 */
export async function emit(io: Io, json: boolean | undefined, doc: unknown, view: (ui: Ui) => ReactNode): Promise<void> {
  if (json) {
    io.out(`${JSON.stringify(doc, null, 2)}\n`);
    return;
  }
  const loaded = await loadUi();
  io.out(`${loaded.renderToString(view(loaded), { columns: io.columns })}\n`);
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
