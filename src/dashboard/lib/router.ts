/**
 * A small history-API router: every page has a URL, links push history entries, the back and
 * forward buttons (popstate) move between them, and a reload lands on the same page (the
 * daemon answers every non-API path with index.html). No DOM here: the browser's history and
 * location are passed in, so tests drive it with fakes.
 */

export type Route =
  | { page: 'login' }
  | { page: 'signup' }
  | { page: 'overview' }
  | { page: 'keys' }
  | { page: 'management-keys' }
  | { page: 'usage' }
  | { page: 'wallet' }
  | { page: 'models' }
  | { page: 'admin' }
  | { page: 'admin-account'; id: string }
  | { page: 'admin-routes' }
  | { page: 'not-found'; path: string };

export type Page = Route['page'];

const STATIC: Record<string, Route> = {
  '/': { page: 'overview' },
  '/login': { page: 'login' },
  '/signup': { page: 'signup' },
  '/keys': { page: 'keys' },
  '/management-keys': { page: 'management-keys' },
  '/usage': { page: 'usage' },
  '/wallet': { page: 'wallet' },
  '/models': { page: 'models' },
  '/admin': { page: 'admin' },
  '/admin/routes': { page: 'admin-routes' },
};

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** The route of a path ("/keys", "/admin/accounts/acc_1"); a trailing slash is ignored. */
export function matchRoute(pathname: string): Route {
  const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') || '/' : pathname || '/';
  const fixed = STATIC[path];
  if (fixed) return fixed;
  const account = /^\/admin\/accounts\/([^/]+)$/.exec(path);
  if (account) {
    const id = decode(account[1] as string);
    if (id) return { page: 'admin-account', id };
  }
  return { page: 'not-found', path: pathname };
}

/** The path of a route (the inverse of matchRoute). */
export function routePath(route: Route): string {
  switch (route.page) {
    case 'overview':
      return '/';
    case 'admin-account':
      return `/admin/accounts/${encodeURIComponent(route.id)}`;
    case 'admin-routes':
      return '/admin/routes';
    case 'not-found':
      return route.path;
    default:
      return `/${route.page}`;
  }
}

export interface HistoryLike {
  pushState(data: unknown, unused: string, url?: string | URL | null): void;
  replaceState(data: unknown, unused: string, url?: string | URL | null): void;
}

export interface LocationLike {
  readonly pathname: string;
  readonly search: string;
  readonly hash: string;
}

/** Where the app is: the route and the query string (filters, paging). */
export interface Place {
  route: Route;
  path: string;
  search: URLSearchParams;
  /** path + search, as in a link. */
  href: string;
  /** Whether this place was reached by back/forward (the page then restores, not resets). */
  pop: boolean;
}

function placeOf(location: LocationLike, pop: boolean): Place {
  const search = new URLSearchParams(location.search);
  const query = search.toString();
  return { route: matchRoute(location.pathname), path: location.pathname, search, href: `${location.pathname}${query ? `?${query}` : ''}`, pop };
}

export class Router {
  private place: Place;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly history: HistoryLike,
    private readonly location: LocationLike,
  ) {
    this.place = placeOf(location, false);
  }

  /** The current place; the same object until the place changes (for useSyncExternalStore). */
  current = (): Place => this.place;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Goes to an in-app href ("/usage?model=x"); `replace` edits the current entry (filters). */
  navigate(href: string, options: { replace?: boolean } = {}): void {
    if (href === this.place.href && !options.replace) return;
    if (options.replace) this.history.replaceState(null, '', href);
    else this.history.pushState(null, '', href);
    this.update(false);
  }

  /** The browser moved through its history (popstate). */
  popped(): void {
    this.update(true);
  }

  private update(pop: boolean): void {
    const next = placeOf(this.location, pop);
    if (next.href === this.place.href && next.pop === this.place.pop) return;
    this.place = next;
    for (const listener of this.listeners) listener();
  }
}

/** The parts of a click that decide whether the router takes it or the browser does. */
export interface ClickLike {
  button: number;
  metaKey: boolean;
  ctrlKey: boolean;
  shiftKey: boolean;
  altKey: boolean;
  defaultPrevented: boolean;
}

/**
 * A plain left click on an in-app link: the router handles it. Ctrl/Cmd/Shift/Alt-clicks
 * (new tab, new window, download), other buttons and `target` links are left to the browser.
 */
export function routerHandlesClick(event: ClickLike, target: string | null, href: string | null): boolean {
  if (event.defaultPrevented || event.button !== 0) return false;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return false;
  if (target && target !== '_self') return false;
  if (!href || !href.startsWith('/') || href.startsWith('//')) return false;
  // The API and the downloads it serves are not pages of the app.
  if (/^\/(api|v1|health)(\/|$|\?)/.test(href)) return false;
  return true;
}
