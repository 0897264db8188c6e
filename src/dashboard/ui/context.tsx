import { createContext, useCallback, useContext, useEffect, useRef, useState, useSyncExternalStore } from 'react';
import type { ApiClient } from '../lib/api.js';
import { ApiError } from '../lib/api.js';
import type { Place, Router } from '../lib/router.js';
import type { User } from '../lib/types.js';

/** What every page reads: the API client, the router, the signed-in person. */
export interface AppServices {
  api: ApiClient;
  router: Router;
  user: User | null;
  /** Re-reads the session (balance, role) from /api/auth/me. */
  refreshUser: () => Promise<void>;
  /** After login/signup: the session's user. */
  signedIn: (user: User) => void;
  logout: () => Promise<void>;
}

export const AppContext = createContext<AppServices | null>(null);

export function useApp(): AppServices {
  const services = useContext(AppContext);
  if (!services) throw new Error('useApp outside <AppContext>');
  return services;
}

/** The signed-in user on pages behind the login (the app only renders them with one). */
export function useUser(): User {
  const { user } = useApp();
  if (!user) throw new Error('a signed-in page rendered without a user');
  return user;
}

export function usePlace(): Place {
  const { router } = useApp();
  return useSyncExternalStore(router.subscribe, router.current);
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  /** Loads again; the current data stays on screen meanwhile. */
  reload: () => void;
}

/**
 * Loads data for a page and reloads when `deps` change; a load that is superseded is aborted,
 * so an old answer never overwrites a newer one. A lost session (401) is handled by the API
 * client (to the login page); other errors are returned for the page to show.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    const controller = new AbortController();
    setLoading(true);
    loadRef.current(controller.signal).then(
      (value) => {
        if (controller.signal.aborted) return;
        setData(value);
        setError(null);
        setLoading(false);
      },
      (reason: unknown) => {
        if (controller.signal.aborted) return;
        setError(reason instanceof ApiError ? reason : new ApiError(0, reason instanceof Error ? reason.message : String(reason)));
        setLoading(false);
      },
    );
    return () => controller.abort();
  }, [...deps, generation]);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  return { data, error, loading, reload };
}

/** The current time, ticking every `intervalMs` (relative times like "5 min ago"). */
export function useNow(intervalMs = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}

/** Sets the document title for a page: "Usage · LLM Gateway". */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · LLM Gateway`;
  }, [title]);
}

export type StreamState = 'connecting' | 'open' | 'closed';

/**
 * The live usage feed (GET /api/usage/stream, Server-Sent Events with the session cookie):
 * `onRow` for each settled call of the session's account. EventSource reconnects by itself
 * after a network error; a refusal (401) closes it.
 */
export function useUsageStream(enabled: boolean, onRow: (data: string) => void): StreamState {
  const [state, setState] = useState<StreamState>('closed');
  const onRowRef = useRef(onRow);
  onRowRef.current = onRow;
  useEffect(() => {
    if (!enabled) {
      setState('closed');
      return;
    }
    const source = new EventSource('/api/usage/stream');
    setState('connecting');
    source.addEventListener('open', () => setState('open'));
    source.addEventListener('error', () => setState(source.readyState === EventSource.CLOSED ? 'closed' : 'connecting'));
    source.addEventListener('usage', (event) => onRowRef.current((event as MessageEvent<string>).data));
    return () => source.close();
  }, [enabled]);
  return state;
}
