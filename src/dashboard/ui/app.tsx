import { useCallback, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import type { ApiClient, ApiError } from '../lib/api.js';
import type { Page, Router } from '../lib/router.js';
import { isPublicPath, loginHref, noticeForLostSession, safeNext } from '../lib/session.js';
import type { User } from '../lib/types.js';
import { Link, Loading } from './components.js';
import { AppContext, usePlace, useApp, type AppServices } from './context.js';
import { LoginPage, SignupPage } from './pages/auth.js';
import { AdminAccountPage, AdminPage } from './pages/admin.js';
import { AdminRoutesPage } from './pages/admin-routes.js';
import { KeysPage } from './pages/keys.js';
import { ManagementKeysPage } from './pages/management-keys.js';
import { ModelsPage } from './pages/models.js';
import { NotFoundPage } from './pages/not-found.js';
import { OverviewPage } from './pages/overview.js';
import { UsagePage } from './pages/usage.js';
import { WalletPage } from './pages/wallet.js';

type SessionState = { status: 'loading' } | { status: 'anonymous' } | { status: 'signed-in'; user: User };

/** The whole app: the session, the layout, and the page for the current URL. */
export function App({ api, router }: { api: ApiClient; router: Router }) {
  const [session, setSession] = useState<SessionState>({ status: 'loading' });
  const hadSession = useRef(false);

  // A 401 from any session call: the session is over. Go to the login page, with a notice,
  // and come back to this page after logging in.
  const lost = useCallback(
    (error: ApiError) => {
      const place = router.current();
      const notice = noticeForLostSession(error.reason, hadSession.current);
      hadSession.current = false;
      api.csrfToken = null;
      setSession({ status: 'anonymous' });
      if (!isPublicPath(place.path)) router.navigate(loginHref(place.href, notice), { replace: true });
    },
    [api, router],
  );
  api.onSessionLost = lost;

  useEffect(() => {
    api.me().then(
      (me) => {
        hadSession.current = true;
        setSession({ status: 'signed-in', user: me.user });
      },
      (error: ApiError) => {
        // 401s went through `lost`; anything else (the gateway is down) leaves the app anonymous.
        if (error.status !== 401) setSession({ status: 'anonymous' });
      },
    );
  }, [api]);

  const services = useMemo<AppServices>(
    () => ({
      api,
      router,
      user: session.status === 'signed-in' ? session.user : null,
      refreshUser: async () => {
        const me = await api.me();
        hadSession.current = true;
        setSession({ status: 'signed-in', user: me.user });
      },
      signedIn: (user) => {
        hadSession.current = true;
        setSession({ status: 'signed-in', user });
      },
      logout: async () => {
        try {
          await api.logout();
        } finally {
          hadSession.current = false;
          setSession({ status: 'anonymous' });
          router.navigate(loginHref(null, 'logged-out'), { replace: true });
        }
      },
    }),
    [api, router, session],
  );

  return (
    <AppContext.Provider value={services}>
      <Shell session={session} />
    </AppContext.Provider>
  );
}

function Shell({ session }: { session: SessionState }) {
  const place = usePlace();
  const { router } = useApp();
  const publicPage = isPublicPath(place.path);

  // Pages behind the login send an anonymous visitor to it; the login pages send a signed-in
  // person on (to `next`).
  useEffect(() => {
    if (session.status === 'anonymous' && !publicPage) router.navigate(loginHref(place.href, null), { replace: true });
    if (session.status === 'signed-in' && publicPage) router.navigate(safeNext(place.search.get('next')), { replace: true });
  }, [session.status, publicPage, place.href, place.search, router]);

  // A new page: move focus to its heading (screen readers announce it), scroll to the top
  // (back/forward keeps the browser's scroll position).
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    const heading = document.getElementById('page-title');
    heading?.focus({ preventScroll: true });
    if (!place.pop) window.scrollTo(0, 0);
  }, [place.path, place.pop]);

  if (session.status === 'loading') {
    return (
      <main id="main" className="centered">
        <Loading what="Opening the dashboard" />
      </main>
    );
  }
  if (publicPage || session.status === 'anonymous') {
    return (
      <div className="auth-layout">
        <header className="auth-brand">
          <Brand />
        </header>
        <main id="main">{session.status === 'anonymous' && publicPage ? place.route.page === 'signup' ? <SignupPage /> : <LoginPage /> : <Loading />}</main>
      </div>
    );
  }
  return (
    <Layout user={session.user} page={place.route.page}>
      <PageFor />
    </Layout>
  );
}

function PageFor() {
  const place = usePlace();
  const route = place.route;
  switch (route.page) {
    case 'overview':
      return <OverviewPage />;
    case 'keys':
      return <KeysPage />;
    case 'management-keys':
      return <ManagementKeysPage />;
    case 'usage':
      return <UsagePage />;
    case 'wallet':
      return <WalletPage />;
    case 'models':
      return <ModelsPage />;
    case 'admin':
      return <AdminPage />;
    case 'admin-account':
      return <AdminAccountPage id={route.id} />;
    case 'admin-routes':
      return <AdminRoutesPage />;
    case 'login':
    case 'signup':
      return <Loading />;
    case 'not-found':
      return <NotFoundPage />;
  }
}

function Brand() {
  return (
    <span className="brand">
      <svg viewBox="0 0 24 24" width="24" height="24" aria-hidden="true" focusable="false">
        <rect x="2" y="2" width="20" height="20" rx="5" className="brand-mark" />
        <path d="M7 12h10M12 7v10" className="brand-cross" />
      </svg>
      <span>LLM Gateway</span>
    </span>
  );
}

const NAV: { page: Page; href: string; label: string; admin?: boolean }[] = [
  { page: 'overview', href: '/', label: 'Overview' },
  { page: 'keys', href: '/keys', label: 'API keys' },
  { page: 'usage', href: '/usage', label: 'Usage' },
  { page: 'wallet', href: '/wallet', label: 'Wallet' },
  { page: 'models', href: '/models', label: 'Models' },
  { page: 'management-keys', href: '/management-keys', label: 'Management keys' },
  { page: 'admin', href: '/admin', label: 'Admin', admin: true },
];

function Layout({ user, page, children }: { user: User; page: Page; children: ReactNode }) {
  const { logout } = useApp();
  const [menuOpen, setMenuOpen] = useState(false);
  const [leaving, setLeaving] = useState(false);
  const current = page === 'admin-account' || page === 'admin-routes' ? 'admin' : page;
  useEffect(() => setMenuOpen(false), [page]);
  return (
    <div className="layout">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand-link" aria-label="LLM Gateway: overview">
          <Brand />
        </Link>
        <button type="button" className="menu-button" aria-expanded={menuOpen} aria-controls="main-nav" onClick={() => setMenuOpen((open) => !open)}>
          Menu
        </button>
        <nav id="main-nav" aria-label="Main" className={menuOpen ? 'nav open' : 'nav'}>
          <ul>
            {NAV.filter((item) => !item.admin || user.role === 'admin').map((item) => (
              <li key={item.page}>
                <Link to={item.href} aria-current={current === item.page ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
          <div className="account">
            <span className="account-name" title={user.email}>
              {user.name}
              {user.role === 'admin' ? <span className="badge badge-admin">admin</span> : null}
            </span>
            <button
              type="button"
              className="button secondary small"
              disabled={leaving}
              onClick={() => {
                setLeaving(true);
                void logout().finally(() => setLeaving(false));
              }}
            >
              {leaving ? 'Logging out…' : 'Log out'}
            </button>
          </div>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
