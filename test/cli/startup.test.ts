import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { closedPort, runCli } from '../support/cli.js';

/**
 * What a CLI command loads before it answers (issue 17): `--help`, `--version`, every `--json`
 * command and `gateway mcp` never load Ink or React's renderer, the daemon (its store, config
 * loader, providers), undici or the MCP SDK they do not use. The modules are recorded by a
 * module-resolution hook in the child (`--import`), so this tests what the real binary imports,
 * not a timing (timings are the benchmark's: `npm run bench` reports the CLI's start times).
 */

const dir = mkdtempSync(join(tmpdir(), 'cli-startup-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const log = join(dir, 'resolved.txt');
const hooks = join(dir, 'hooks.mjs');
const register = join(dir, 'register.mjs');
writeFileSync(
  hooks,
  `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(log)}, result.url + '\\n');
  return result;
}
`,
);
writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);

/** The modules the command resolved (file URLs), from a fresh log. */
async function modulesOf(args: string[], env: Record<string, string> = {}): Promise<{ modules: string[]; code: number | null; stdout: string }> {
  writeFileSync(log, '');
  const result = await runCli(args, { env: { ...env, NODE_OPTIONS: `--import ${pathToFileURL(register).href}` } });
  return { modules: readFileSync(log, 'utf8').split('\n').filter(Boolean), code: result.code, stdout: result.stdout };
}

const HEAVY: Array<[string, RegExp]> = [
  ['Ink', /\/node_modules\/ink\//],
  ['undici', /\/node_modules\/undici\//],
  ['the MCP SDK', /\/node_modules\/@modelcontextprotocol\//],
  ['better-sqlite3', /\/node_modules\/better-sqlite3\//],
  ['the YAML parser', /\/node_modules\/yaml\//],
  ['the daemon (src/main, src/app)', /\/(src|dist)\/(main|app)\.(ts|js)$/],
  ['the config loader', /\/(src|dist)\/config\/load\.(ts|js)$/],
  ['the store', /\/(src|dist)\/store\/(store|open|db)\.(ts|js)$/],
];

function loadsNothingHeavy(t: Pick<typeof import('tap').default, 'ok' | 'same'>, what: string, modules: string[], allowed: string[] = []): void {
  t.ok(modules.some((url) => /\/cli\/main\.(ts|js)$/.test(url)), `${what}: the hook saw the CLI load (the recording works)`);
  for (const [name, pattern] of HEAVY) {
    if (allowed.includes(name)) continue;
    const hits = modules.filter((url) => pattern.test(url));
    t.same(hits.slice(0, 3), [], `${what}: does not load ${name}`);
  }
}

t.test('--help, --version and command help load no UI, daemon or client libraries', async (t) => {
  for (const args of [['--help'], ['--version'], ['keys', 'create', '--help'], ['serve', '--help'], ['mcp', '--help']]) {
    const { modules, code } = await modulesOf(args);
    t.equal(code, 0, `${args.join(' ')}: exits 0`);
    loadsNothingHeavy(t, args.join(' '), modules);
  }
});

t.test('--json commands load neither Ink nor undici (node:http carries the call)', async (t) => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  for (const args of [
    ['models', 'list', '--json', '--url', url],
    ['wallet', 'balance', '--json', '--url', url, '--key', 'akm-x'],
    ['usage', 'list', '--json', '--url', url, '--key', 'akm-x'],
    ['keys', 'list', '--json', '--url', url, '--key', 'akm-x'],
  ]) {
    const { modules, code, stdout } = await modulesOf(args);
    t.equal(code, 1, `${args.slice(0, 2).join(' ')}: exits 1 (no daemon at ${url})`);
    t.match(stdout, /cannot reach the gateway/, `${args.slice(0, 2).join(' ')}: the JSON error says why`);
    loadsNothingHeavy(t, args.slice(0, 2).join(' '), modules);
  }
});

t.test('gateway mcp relays with node:http alone: no MCP SDK, no Ink, no undici', async (t) => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const { modules, code } = await modulesOf(['mcp', '--url', url, '--key', 'akm-x']);
  t.equal(code, 1, 'exits 1 (no daemon to relay to)');
  loadsNothingHeavy(t, 'mcp', modules);
});

t.test('--url unset: the config loader (and YAML) load only to find the address', async (t) => {
  const config = join(dir, 'gateway.yaml');
  writeFileSync(config, `server:\n  port: ${await closedPort()}\n`);
  const { modules, code } = await modulesOf(['models', 'list', '--json', '--config', config]);
  t.equal(code, 1, 'exits 1 (nothing listens on the configured port)');
  loadsNothingHeavy(t, 'models list --config', modules, ['the YAML parser', 'the config loader']);
  t.ok(modules.some((url) => /\/config\/load\.(ts|js)$/.test(url)), 'the config loader did load');
});
