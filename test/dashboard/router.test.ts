import t from 'tap';
import { matchRoute, Router, routePath, routerHandlesClick, type HistoryLike, type LocationLike, type Route } from '../../src/dashboard/lib/router.js';

t.test('every page has a path, and paths map back to pages', async (t) => {
  const routes: Route[] = [
    { page: 'overview' },
    { page: 'login' },
    { page: 'signup' },
    { page: 'keys' },
    { page: 'management-keys' },
    { page: 'usage' },
    { page: 'wallet' },
    { page: 'models' },
    { page: 'admin' },
    { page: 'admin-account', id: 'acc_1' },
    { page: 'admin-account', id: 'a b/c' },
    { page: 'admin-routes' },
  ];
  for (const route of routes) t.same(matchRoute(routePath(route)), route, `${routePath(route)} round-trips`);
  t.equal(routePath({ page: 'admin-account', id: 'a b/c' }), '/admin/accounts/a%20b%2Fc');
  t.equal(routePath({ page: 'admin-routes' }), '/admin/routes');
  t.same(matchRoute('/keys/'), { page: 'keys' }, 'a trailing slash is ignored');
  t.same(matchRoute(''), { page: 'overview' });
  t.same(matchRoute('/nope'), { page: 'not-found', path: '/nope' });
  t.same(matchRoute('/admin/accounts/%E0%A4%A'), { page: 'not-found', path: '/admin/accounts/%E0%A4%A' }, 'bad escapes are not pages');
  t.same(matchRoute('/admin/accounts/x/y'), { page: 'not-found', path: '/admin/accounts/x/y' });
});

/** A browser history in memory: entries, an index, back and forward. */
class FakeHistory implements HistoryLike, LocationLike {
  entries = ['/'];
  index = 0;
  pushState(_data: unknown, _unused: string, url?: string | URL | null): void {
    this.entries = [...this.entries.slice(0, this.index + 1), String(url)];
    this.index += 1;
  }
  replaceState(_data: unknown, _unused: string, url?: string | URL | null): void {
    this.entries[this.index] = String(url);
  }
  back(): void {
    this.index = Math.max(0, this.index - 1);
  }
  forward(): void {
    this.index = Math.min(this.entries.length - 1, this.index + 1);
  }
  private get url(): URL {
    return new URL(this.entries[this.index] as string, 'http://gateway.test');
  }
  get pathname(): string {
    return this.url.pathname;
  }
  get search(): string {
    return this.url.search;
  }
  get hash(): string {
    return this.url.hash;
  }
}

t.test('navigate pushes, replace edits, back and forward restore', async (t) => {
  const history = new FakeHistory();
  const router = new Router(history, history);
  let notified = 0;
  const unsubscribe = router.subscribe(() => (notified += 1));
  t.same(router.current().route, { page: 'overview' });

  router.navigate('/usage?model=m');
  t.same(router.current().route, { page: 'usage' });
  t.equal(router.current().search.get('model'), 'm');
  t.equal(router.current().href, '/usage?model=m');
  t.equal(router.current().pop, false);
  t.same(history.entries, ['/', '/usage?model=m']);

  router.navigate('/usage?model=n', { replace: true });
  t.same(history.entries, ['/', '/usage?model=n'], 'filters replace the entry: back leaves the page');

  const before = router.current();
  router.navigate('/usage?model=n');
  t.equal(router.current(), before, 'the same place: no new entry, the same snapshot');
  t.equal(history.entries.length, 2);

  router.navigate('/keys');
  history.back();
  router.popped();
  t.same(router.current().route, { page: 'usage' }, 'back');
  t.equal(router.current().pop, true, 'reached by back');
  history.forward();
  router.popped();
  t.same(router.current().route, { page: 'keys' }, 'forward');
  t.equal(notified, 5);
  unsubscribe();
  router.navigate('/wallet');
  t.equal(notified, 5, 'unsubscribed');
});

t.test('which clicks the router takes', async (t) => {
  const plain = { button: 0, metaKey: false, ctrlKey: false, shiftKey: false, altKey: false, defaultPrevented: false };
  t.ok(routerHandlesClick(plain, null, '/keys'));
  t.ok(routerHandlesClick(plain, '_self', '/keys'));
  t.notOk(routerHandlesClick({ ...plain, ctrlKey: true }, null, '/keys'), 'ctrl-click: a new tab');
  t.notOk(routerHandlesClick({ ...plain, metaKey: true }, null, '/keys'));
  t.notOk(routerHandlesClick({ ...plain, shiftKey: true }, null, '/keys'));
  t.notOk(routerHandlesClick({ ...plain, altKey: true }, null, '/keys'));
  t.notOk(routerHandlesClick({ ...plain, button: 1 }, null, '/keys'), 'middle button');
  t.notOk(routerHandlesClick({ ...plain, defaultPrevented: true }, null, '/keys'));
  t.notOk(routerHandlesClick(plain, '_blank', '/keys'));
  t.notOk(routerHandlesClick(plain, null, 'https://example.com/'), 'another site');
  t.notOk(routerHandlesClick(plain, null, '//example.com/'));
  t.notOk(routerHandlesClick(plain, null, '/api/usage/export.csv?model=x'), 'downloads from the API');
  t.notOk(routerHandlesClick(plain, null, '/v1/models'));
  t.ok(routerHandlesClick(plain, null, '/apis-are-pages-too'), 'only the /api/ prefix');
});
