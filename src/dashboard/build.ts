import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/**
 * Builds the dashboard into dist/dashboard: index.html, assets/<name>-<hash>.js|.css|.svg
 * (content-hashed names, served with a long immutable cache) and manifest.json. One esbuild
 * pass (about half a second); `npm run build` runs it after tsc. The page has no inline script
 * or style, so it runs under the daemon's strict Content-Security-Policy.
 *
 *   node --import tsx src/dashboard/build.ts          # build
 *   node --import tsx src/dashboard/build.ts --check  # exit 1 when dist/dashboard is stale
 */

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(here, '..', '..');
export const SOURCE_DIR = here;
export const OUT_DIR = join(ROOT, 'dist', 'dashboard');

export interface BuiltFile {
  /** Path under dist/dashboard, e.g. "assets/app-3F2A9C1B.js". */
  path: string;
  bytes: number;
  gzip: number;
}

export interface Manifest {
  files: string[];
  entry: { js: string; css: string; icon: string };
  /** Sizes of what the first page load downloads. */
  sizes: BuiltFile[];
  built_at: string;
}

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><rect x="2" y="2" width="20" height="20" rx="5" fill="#1d4ed8"/><path d="M7 12h10M12 7v10" stroke="#fff" stroke-width="2.4" stroke-linecap="round"/></svg>\n`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function indexHtml(entry: Manifest['entry']): string {
  const asset = (path: string): string => escapeHtml(`/${path}`);
  return `<!doctype html>
<html lang="en-IN">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<meta name="referrer" content="same-origin">
<title>LLM Gateway</title>
<link rel="icon" type="image/svg+xml" href="${asset(entry.icon)}">
<link rel="stylesheet" href="${asset(entry.css)}">
<script type="module" src="${asset(entry.js)}"></script>
</head>
<body>
<div id="root"></div>
<noscript><p class="noscript">The dashboard needs JavaScript. The API works without it: see the README.</p></noscript>
</body>
</html>
`;
}

function shortHash(content: string | Uint8Array): string {
  return createHash('sha256').update(content).digest('hex').slice(0, 10);
}

function sizeOf(dir: string, path: string): BuiltFile {
  const content = readFileSync(join(dir, path));
  return { path, bytes: content.length, gzip: gzipSync(content, { level: 9 }).length };
}

/** Builds into a temporary folder, then swaps it in: a daemon serving the old build never sees half a new one. */
export async function buildDashboard(options: { outDir?: string; quiet?: boolean } = {}): Promise<Manifest> {
  const outDir = options.outDir ?? OUT_DIR;
  const started = performance.now();
  const staging = `${outDir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const assets = join(staging, 'assets');
  mkdirSync(assets, { recursive: true });

  const result = await build({
    entryPoints: { app: join(SOURCE_DIR, 'main.tsx'), styles: join(SOURCE_DIR, 'styles.css') },
    bundle: true,
    minify: true,
    format: 'esm',
    // Browsers of the last few years (EventSource, <dialog>, :focus-visible, BigInt).
    target: ['chrome111', 'firefox115', 'safari16.4', 'edge111'],
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    outdir: assets,
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    legalComments: 'none',
    charset: 'utf8',
    metafile: true,
    logLevel: 'warning',
    absWorkingDir: ROOT,
  });

  const outputs = Object.keys(result.metafile.outputs).map((path) => relative(staging, join(ROOT, path)).split('\\').join('/'));
  const js = outputs.find((path) => /^assets\/app-[^/]+\.js$/.test(path));
  const css = outputs.find((path) => /^assets\/styles-[^/]+\.css$/.test(path));
  if (!js || !css) throw new Error(`the build made no app script or stylesheet: ${outputs.join(', ')}`);
  const icon = `assets/icon-${shortHash(FAVICON)}.svg`;
  writeFileSync(join(staging, icon), FAVICON);
  // For browsers that ask /favicon.ico before reading the page (the daemon serves favicon.svg there).
  writeFileSync(join(staging, 'favicon.svg'), FAVICON);

  const entry = { js, css, icon };
  writeFileSync(join(staging, 'index.html'), indexHtml(entry));
  const files = ['index.html', 'favicon.svg', ...outputs, icon].sort();
  const manifest: Manifest = { files, entry, sizes: [js, css, icon, 'index.html'].map((path) => sizeOf(staging, path)), built_at: new Date().toISOString() };
  writeFileSync(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);

  mkdirSync(dirname(outDir), { recursive: true });
  const old = `${outDir}.old-${process.pid}`;
  if (existsSync(outDir)) renameSync(outDir, old);
  renameSync(staging, outDir);
  rmSync(old, { recursive: true, force: true });

  if (!options.quiet) {
    const ms = Math.round(performance.now() - started);
    const kb = (n: number): string => `${(n / 1024).toFixed(1)} KB`;
    const total = manifest.sizes.reduce((sum, file) => sum + file.gzip, 0);
    const parts = manifest.sizes.map((file) => `${file.path} ${kb(file.bytes)} (${kb(file.gzip)} gzip)`).join(', ');
    console.log(`dashboard: built in ${ms} ms: ${parts}; first load ${kb(total)} gzip`);
  }
  return manifest;
}

function newestIn(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestIn(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Whether dist/dashboard is at least as new as every dashboard source (and the lockfile). */
export function dashboardIsFresh(outDir = OUT_DIR): boolean {
  try {
    const built = statSync(join(outDir, 'manifest.json')).mtimeMs;
    return built >= Math.max(newestIn(SOURCE_DIR), statSync(join(ROOT, 'package-lock.json')).mtimeMs);
  } catch {
    return false;
  }
}

/** Builds unless the build is fresh; answers whether it built. */
export async function ensureDashboard(): Promise<boolean> {
  if (dashboardIsFresh()) return false;
  await buildDashboard({ quiet: true });
  return true;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--check')) {
    const fresh = dashboardIsFresh();
    console.log(fresh ? 'dashboard: up to date' : 'dashboard: stale (run npm run build)');
    process.exit(fresh ? 0 : 1);
  }
  await buildDashboard();
}
