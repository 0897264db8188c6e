/**
 * Where the app goes when the session is missing or ends, and what it tells the person.
 * Pure functions: the app (ui/session.tsx) calls them with the API's error reasons.
 */

/** The `session` query parameter of /login, and the message each value shows. */
export const LOGIN_NOTICES = {
  expired: 'Your session expired. Log in again.',
  'logged-out': 'You have logged out.',
  'signed-up': 'Your account is ready. Log in to continue.',
} as const;

export type LoginNotice = keyof typeof LOGIN_NOTICES;

export function loginNoticeOf(value: string | null): string | null {
  return value !== null && Object.hasOwn(LOGIN_NOTICES, value) ? LOGIN_NOTICES[value as LoginNotice] : null;
}

/**
 * What a 401 means for someone using the app. At start-up without any cookie
 * (`missing_credentials` and no session seen yet) there is nothing to say: it is a first visit.
 * Any other 401 ends a session that existed: expired, logged out elsewhere, or revoked.
 */
export function noticeForLostSession(reason: string | null, hadSession: boolean): LoginNotice | null {
  if (reason === 'session_expired') return 'expired';
  // A cookie the server no longer accepts (logged out in another tab, revoked) was a session too.
  if (!hadSession && reason !== 'invalid_session') return null;
  return 'expired';
}

/** Pages anyone can see without a session. */
const PUBLIC_PATHS = new Set(['/login', '/signup']);

export function isPublicPath(path: string): boolean {
  return PUBLIC_PATHS.has(path);
}

/**
 * A `next` target that stays on this site: a path starting with one `/` (not `//host` or
 * `/\host`, which browsers read as another origin), not the login pages themselves.
 */
export function safeNext(next: string | null | undefined): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/';
  if (/[\u0000-\u001f]/.test(next)) return '/';
  const path = next.split(/[?#]/, 1)[0] ?? '/';
  if (isPublicPath(path)) return '/';
  return next;
}

/** The login page's URL that brings the person back to `from` afterwards, with a notice. */
export function loginHref(from: string | null, notice: LoginNotice | null): string {
  const query = new URLSearchParams();
  if (from && safeNext(from) !== '/') query.set('next', safeNext(from));
  if (notice) query.set('session', notice);
  const text = query.toString();
  return text ? `/login?${text}` : '/login';
}
