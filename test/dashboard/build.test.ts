import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { buildDashboard, indexHtml } from '../../src/dashboard/build.js';
import { tempDir } from '../support/gateway.js';

/** The dashboard's build: hashed assets, a page the strict CSP allows, a small first download. */

t.test('builds index.html, hashed assets and a manifest', async (t) => {
  const dir = tempDir('dashboard-build-');
  t.teardown(dir.remove);
  const outDir = join(dir.path, 'dashboard');
  const started = performance.now();
  const manifest = await buildDashboard({ outDir, quiet: true });
  const ms = performance.now() - started;
  t.comment(`built in ${Math.round(ms)} ms`);

  t.match(manifest.entry.js, /^assets\/app-[A-Z0-9]{8,}\.js$/, 'the script name carries its hash');
  t.match(manifest.entry.css, /^assets\/styles-[A-Z0-9]{8,}\.css$/);
  t.match(manifest.entry.icon, /^assets\/icon-[0-9a-f]{10}\.svg$/);
  for (const file of manifest.files) t.ok(existsSync(join(outDir, file)), `${file} exists`);
  t.ok(existsSync(join(outDir, 'manifest.json')));
  t.notOk(existsSync(`${outDir}.tmp-${process.pid}`), 'the staging folder is gone');

  const html = readFileSync(join(outDir, 'index.html'), 'utf8');
  t.ok(html.includes(`<script type="module" src="/${manifest.entry.js}"></script>`), 'the page loads the hashed script by an absolute path (deep links work)');
  t.ok(html.includes(`<link rel="stylesheet" href="/${manifest.entry.css}">`));
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  t.notMatch(html, /<style|\sstyle=/, 'no inline style');
  t.notMatch(html, /https?:\/\//, 'nothing from another origin (no CDN, no web fonts)');

  const js = manifest.sizes.find((file) => file.path === manifest.entry.js);
  const gzip = manifest.sizes.reduce((sum, file) => sum + file.gzip, 0);
  t.comment(`first load: ${(gzip / 1024).toFixed(1)} KB gzip (script ${((js?.gzip ?? 0) / 1024).toFixed(1)} KB)`);
  t.ok((js?.gzip ?? Infinity) < 150 * 1024, 'the script is under 150 KB gzip');
  const css = readFileSync(join(outDir, manifest.entry.css), 'utf8');
  t.notMatch(css, /@import|url\(\s*['"]?https?:/, 'the stylesheet fetches nothing from outside');
  const script = readFileSync(join(outDir, manifest.entry.js), 'utf8');
  t.notMatch(script, /\beval\(|new Function\(/, 'no eval (the CSP has no unsafe-eval)');

  // A second build replaces the first whole.
  const again = await buildDashboard({ outDir, quiet: true });
  t.equal(again.entry.js, manifest.entry.js, 'the same sources give the same names');
  rmSync(outDir, { recursive: true, force: true });
});

t.test('index.html escapes what it embeds', async (t) => {
  const html = indexHtml({ js: 'assets/a"b.js', css: 'assets/c.css', icon: 'assets/i.svg' });
  t.ok(html.includes('/assets/a&#34;b.js'));
});
