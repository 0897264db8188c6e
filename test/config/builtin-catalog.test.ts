import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { parse } from 'yaml';
import { BUILTIN_CATALOG, compileBuiltinCatalog, loadConfig, PACKAGE_ROOT } from '../../src/config/load.js';

/**
 * The built-in catalog compiled to JSON at build time (issue 17: a start on it loads no YAML
 * parser): the JSON is the YAML's exact content, and a daemon's config on the built-in
 * defaults reads it without loading `yaml`.
 */

const dir = mkdtempSync(join(tmpdir(), 'catalog-json-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('compileBuiltinCatalog writes the YAML catalog as JSON, unchanged', async (t) => {
  const out = join(dir, 'models.json');
  compileBuiltinCatalog(out);
  const json = JSON.parse(readFileSync(out, 'utf8')) as { models: Array<{ id: string }> };
  t.same(json, parse(readFileSync(BUILTIN_CATALOG, 'utf8')), 'the same document');
  t.ok(json.models.length > 20, 'with the catalog models');
});

t.test('the compiled catalog serves the same models; the built-in defaults load no YAML parser', async (t) => {
  // The built catalog (npm run build) is what a start reads; without it (or stale) the YAML is parsed.
  const fresh = join(PACKAGE_ROOT, 'dist/models.json');
  mkdirSync(dirname(fresh), { recursive: true });
  compileBuiltinCatalog(fresh);
  const fromJson = loadConfig({ env: {}, cwd: dir }).models.map((m) => m.id);
  // Older than the YAML: not used (the YAML wins).
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(fresh, old, old);
  const fromYaml = loadConfig({ env: {}, cwd: dir }).models.map((m) => m.id);
  compileBuiltinCatalog(fresh);
  t.same(fromJson, fromYaml, 'the same models in the same order');

  const hooks = join(dir, 'hooks.mjs');
  const log = join(dir, 'resolved.txt');
  writeFileSync(hooks, `import { appendFileSync } from 'node:fs';\nexport async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }\n`);
  writeFileSync(log, '');
  const script = `import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(hooks).href)}); const { loadConfig } = await import(${JSON.stringify(pathToFileURL(join(PACKAGE_ROOT, 'src/config/load.ts')).href)}); const n = loadConfig({ env: {}, cwd: ${JSON.stringify(dir)} }).models.length; const { createRequire } = await import('node:module'); const cjs = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/node_modules/yaml/')).length; process.stdout.write(JSON.stringify({ n, cjs }));`;
  const count = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: PACKAGE_ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  const child = JSON.parse(count) as { n: number; cjs: number };
  t.equal(child.n, fromJson.length, 'the child loaded the catalog');
  t.equal(child.cjs, 0, 'no YAML module in the CommonJS cache');
  const resolved = readFileSync(log, 'utf8').split('\n');
  t.ok(resolved.some((url) => url.endsWith('/config/load.ts')), 'the hook recorded the loader');
  t.notOk(resolved.some((url) => url.includes('/node_modules/yaml/')), 'no YAML parser loaded');
});
