import { formatCount } from './money.js';
import type { Unit, UsageRow } from './types.js';

/** How times, durations and quantities read in the dashboard (Indian English conventions). */

const dateTime = new Intl.DateTimeFormat('en-IN', { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat('en-IN', { dateStyle: 'medium' });
const timeWithSeconds = new Intl.DateTimeFormat('en-IN', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const shortDay = new Intl.DateTimeFormat('en-IN', { day: 'numeric', month: 'short', timeZone: 'UTC' });

function parse(iso: string | null | undefined): Date | null {
  if (!iso) return null;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? null : date;
}

export function formatDateTime(iso: string | null | undefined, empty = '—'): string {
  const date = parse(iso);
  return date ? dateTime.format(date) : empty;
}

export function formatDate(iso: string | null | undefined, empty = '—'): string {
  const date = parse(iso);
  return date ? dateOnly.format(date) : empty;
}

/** Today's calls show the time with seconds; older ones the date and time. */
export function formatCallTime(iso: string, now: number): string {
  const date = parse(iso);
  if (!date) return '—';
  const sameDay = new Date(now).toDateString() === date.toDateString();
  return sameDay ? timeWithSeconds.format(date) : dateTime.format(date);
}

/** "12 Mar" for a UTC day "YYYY-MM-DD" (chart axes). */
export function formatDay(day: string): string {
  const date = parse(`${day}T00:00:00Z`);
  return date ? shortDay.format(date) : day;
}

/** "just now", "5 min ago", "3 h ago", "2 days ago", else the date. */
export function formatAgo(iso: string | null | undefined, now: number, empty = 'Never'): string {
  const date = parse(iso);
  if (!date) return empty;
  const seconds = Math.round((now - date.getTime()) / 1000);
  if (seconds < 45) return 'just now';
  if (seconds < 3600) return `${Math.max(1, Math.round(seconds / 60))} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  if (seconds < 30 * 86_400) {
    const days = Math.round(seconds / 86_400);
    return `${days} day${days === 1 ? '' : 's'} ago`;
  }
  return dateOnly.format(date);
}

/** Time left until `iso`: "23 s", "4 min 10 s", "2 h 5 min"; null once it has passed. */
export function formatRemaining(iso: string | null | undefined, now: number): string | null {
  const date = parse(iso);
  if (!date) return null;
  const seconds = Math.ceil((date.getTime() - now) / 1000);
  if (seconds <= 0) return null;
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)} min${seconds % 60 ? ` ${seconds % 60} s` : ''}`;
  return `${Math.floor(seconds / 3600)} h${Math.floor((seconds % 3600) / 60) ? ` ${Math.floor((seconds % 3600) / 60)} min` : ''}`;
}

/** A time of day with seconds ("02:03:12 pm"), for what changes within minutes. */
export function formatClock(iso: string | number | null | undefined): string {
  const date = typeof iso === 'number' ? new Date(iso) : parse(iso);
  return date && !Number.isNaN(date.getTime()) ? timeWithSeconds.format(date) : '—';
}

export function formatLatency(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

const UNIT_WORDS: Record<Unit, [string, string]> = {
  tokens: ['token', 'tokens'],
  characters: ['character', 'characters'],
  seconds: ['second', 'seconds'],
  images: ['image', 'images'],
};

export function plural(count: number, unit: Unit): string {
  const [one, many] = UNIT_WORDS[unit];
  return `${formatCount(count)} ${count === 1 ? one : many}`;
}

/** What a call used: "1,200 in · 350 out" for token calls, else "42 characters", "3 images". */
export function formatQuantity(row: Pick<UsageRow, 'unit' | 'units' | 'input_tokens' | 'output_tokens' | 'endpoint'>): string {
  const unit = row.unit ?? 'tokens';
  if (unit !== 'tokens') return plural(row.units ?? 0, unit);
  if (row.endpoint === 'embeddings') return plural(row.input_tokens, 'tokens');
  return `${formatCount(row.input_tokens)} in · ${formatCount(row.output_tokens)} out`;
}

/**
 * What a token call read from and wrote to the provider's prompt cache (Anthropic's
 * cache_control; both are part of its input, and not the gateway's response cache):
 * "prompt cache: 6,502 read · 1,200 written"; null when it used none (or is not a token call).
 */
export function formatCacheTokens(row: Pick<UsageRow, 'unit' | 'cache_read_tokens' | 'cache_write_tokens'>): string | null {
  if ((row.unit ?? 'tokens') !== 'tokens') return null;
  const parts: string[] = [];
  if (row.cache_read_tokens > 0) parts.push(`${formatCount(row.cache_read_tokens)} read`);
  if (row.cache_write_tokens > 0) parts.push(`${formatCount(row.cache_write_tokens)} written`);
  return parts.length > 0 ? `prompt cache: ${parts.join(' · ')}` : null;
}

/** "chat.completions" → "Chat completions" (table cells and filters). */
export const ENDPOINT_LABELS: Record<string, string> = {
  'chat.completions': 'Chat completions',
  responses: 'Responses',
  messages: 'Messages',
  embeddings: 'Embeddings',
  'audio.speech': 'Speech',
  'audio.transcriptions': 'Transcription',
  'images.generations': 'Images',
};

export function endpointLabel(endpoint: string): string {
  return ENDPOINT_LABELS[endpoint] ?? endpoint;
}

/** A context window: "1,28,000 tokens" (Indian grouping), "—" for none. */
export function formatContext(size: number, unit: 'tokens' | 'characters' | null): string {
  if (!size || !unit) return '—';
  return `${formatCount(size)} ${unit}`;
}
