import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/main.js';
import { closedPort, lines, runCli, type CliResult } from '../support/cli.js';
import { httpClient, startTestGateway, tempDir, TEST_JWT_SECRET } from '../support/gateway.js';

/**
 * The `gateway` CLI end to end: `node bin/gateway.js …` in a child process (no TTY, CI=true)
 * against a real daemon started in this process on port 0.
 */

/** The assertions the helpers below use (shared by the root `t` and every subtest). */
type Test = Pick<typeof t, 'equal' | 'match' | 'notMatch' | 'ok'>;

const ANSI = /\u001b\[/;

/** The whole of stdout as one JSON document (fails loudly with the output when it is not). */
function doc<T = any>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code}):\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  }
}

/** Exit 0, nothing on stderr. */
function ok(t: Test, result: CliResult, what: string): void {
  t.equal(result.code, 0, `${what}: exits 0`);
  t.equal(result.stderr, '', `${what}: nothing on stderr`);
}

/** Exit 1: exactly one line `error: …` on stderr. */
function failure(t: Test, result: CliResult, message: RegExp, what: string): void {
  t.equal(result.code, 1, `${what}: exits 1`);
  const errLines = lines(result.stderr);
  t.equal(errLines.length, 1, `${what}: exactly one line on stderr`);
  t.match(errLines[0] ?? '', /^error: /, `${what}: the line starts with "error: "`);
  t.match(errLines[0] ?? '', message, `${what}: the message`);
}

/** Exit 2: a usage error, `error: …` first on stderr, nothing done. */
function usage(t: Test, result: CliResult, message: RegExp, what: string): void {
  t.equal(result.code, 2, `${what}: exits 2`);
  const first = lines(result.stderr)[0] ?? '';
  t.match(first, /^error: /, `${what}: stderr starts with "error: "`);
  t.match(first, message, `${what}: the message`);
}

/**
 * `{"error": {"message": …}}` on stdout, as the only document. When the daemon answered with an
 * error body (`reason` given), the document also carries its type, integer code (= status),
 * reason and param.
 */
function jsonError(t: Test, result: CliResult, message: RegExp, what: string, status?: number, reason?: string): void {
  const body = doc<{ error: { message: string; status?: number; type?: string; code?: number; reason?: string; param?: string | null } }>(result);
  t.match(body.error.message, message, `${what}: JSON error message`);
  t.equal(`error: ${body.error.message}`, lines(result.stderr)[0], `${what}: the JSON message is the stderr message`);
  if (status !== undefined) t.equal(body.error.status, status, `${what}: JSON error status`);
  if (reason !== undefined) {
    t.equal(body.error.code, status, `${what}: JSON error code is the integer status`);
    t.equal(body.error.reason, reason, `${what}: JSON error reason`);
    t.equal(typeof body.error.type, 'string', `${what}: JSON error type`);
    t.ok('param' in body.error, `${what}: JSON error param`);
  }
}

t.test('help, version, usage errors and an unreachable gateway', async (t) => {
  const dead = `http://127.0.0.1:${await closedPort()}`;
  const [help, version, helpWallet, noSubcommand, unknownOption, missingName, negative, tooPrecise, rateZero, noKey, noKeyJson, unknownCommand, missingId, badLimit, usageJson] =
    await Promise.all([
      runCli(['--help']),
      runCli(['--version']),
      runCli(['help', 'wallet']),
      runCli(['wallet']),
      runCli(['accounts', 'list', '--url', dead, '--key', 'akm-x', '--bogus']),
      runCli(['keys', 'create', '--url', dead, '--key', 'akm-x']),
      runCli(['wallet', 'topup', '--url', dead, '--key', 'akm-x', '--email', 'u@example.com', '--amount', '-5']),
      runCli(['wallet', 'topup', '--url', dead, '--key', 'akm-x', '--email', 'u@example.com', '--amount', '1.1234567']),
      runCli(['keys', 'create', '--url', dead, '--key', 'akm-x', '--name', 'a', '--rate-limit', '0']),
      runCli(['accounts', 'list', '--url', dead]),
      runCli(['wallet', 'balance', '--url', dead, '--json']),
      runCli(['bogus']),
      runCli(['keys', 'revoke', '--url', dead, '--key', 'akm-x']),
      runCli(['accounts', 'list', '--url', dead, '--key', 'akm-x', '--limit', '0']),
      runCli(['keys', 'create', '--url', dead, '--key', 'akm-x', '--name', 'a', '--rate-limit', '0', '--json']),
    ]);

  ok(t, help, '--help');
  t.match(help.stdout, /^Usage: gateway /m, '--help prints usage on stdout');
  for (const command of ['serve', 'init', 'accounts', 'wallet', 'keys', 'mgmt-keys', 'models']) {
    t.match(help.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), `--help lists ${command}`);
  }
  ok(t, version, '--version');
  t.equal(version.stdout, '0.1.0\n', '--version prints 0.1.0');
  ok(t, helpWallet, 'help wallet');
  t.match(helpWallet.stdout, /^Usage: gateway wallet /m, 'help wallet prints the group usage on stdout');
  for (const command of ['topup', 'balance', 'ledger']) t.match(helpWallet.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), `help wallet lists ${command}`);

  // A group without its subcommand does nothing: commander prints the usage on stderr as an error.
  t.equal(noSubcommand.stdout, '', '`gateway wallet`: nothing on stdout');
  t.match(noSubcommand.stderr, /^Usage: gateway wallet /m, '`gateway wallet`: the usage goes to stderr');
  // Regression: this exited 0, so `gateway wallet && next-step` carried on as if it had worked.
  t.equal(noSubcommand.code, 2, '`gateway wallet` without a subcommand is a usage error (exit 2)');

  // Every usage error below points at a dead port: had the command gone on, it would exit 1
  // ("cannot reach"), so exit 2 also shows that nothing was sent.
  usage(t, unknownOption, /unknown option '--bogus'/, 'unknown option');
  usage(t, missingName, /required option '--name <name>' not specified/, 'keys create without --name');
  usage(t, negative, /--amount <inr>.*'-5' is invalid\. must be >= 0/, '--amount -5');
  usage(t, tooPrecise, /--amount <inr>.*'1\.1234567' is invalid\. must have at most 6 decimal places/, '--amount 1.1234567');
  usage(t, rateZero, /--rate-limit <rpm>.*'0' is invalid\. must be an integer from 1 to 10000/, '--rate-limit 0');
  usage(t, unknownCommand, /unknown command 'bogus'/, 'unknown command');
  usage(t, missingId, /missing required argument 'id'/, 'keys revoke without an id');
  usage(t, badLimit, /--limit <n>.*must be an integer from 1 to 1000/, '--limit 0');
  for (const [result, what] of [[unknownOption, 'unknown option'], [missingName, 'missing option'], [negative, '--amount -5'], [noKey, 'no key']] as const) {
    t.equal(result.stdout, '', `${what}: nothing on stdout without --json`);
  }

  usage(t, noKey, /^error: no management key: pass --key akm-… or set GATEWAY_ADMIN_KEY$/, 'no management key');
  t.equal(lines(noKey.stderr).length, 1, 'no management key: one line on stderr');
  usage(t, noKeyJson, /no management key/, 'no management key, --json');
  jsonError(t, noKeyJson, /^no management key: pass --key akm-… or set GATEWAY_ADMIN_KEY$/, 'no management key, --json');

  // Regression: usage errors found by commander printed no JSON document with --json.
  usage(t, usageJson, /--rate-limit/, '--rate-limit 0 --json');
  let usageDoc: unknown;
  try {
    usageDoc = JSON.parse(usageJson.stdout);
  } catch {
    usageDoc = usageJson.stdout;
  }
  t.match(usageDoc, { error: { message: /--rate-limit <rpm>.*'0' is invalid/ } }, '--json usage error: stdout holds {"error": {"message": …}}');

  const [unreachable, unreachableJson] = await Promise.all([
    runCli(['accounts', 'list', '--url', dead, '--key', 'akm-x']),
    runCli(['wallet', 'balance', '--url', dead, '--key', 'akm-x', '--json']),
  ]);
  const reach = new RegExp(`^error: cannot reach the gateway at ${dead.replace(/\./g, '\\.')} \\(ECONNREFUSED\\)`);
  failure(t, unreachable, reach, 'no daemon at --url');
  t.match(unreachable.stderr, /gateway serve/, 'the message says to start the daemon');
  t.equal(unreachable.stdout, '', 'no daemon: nothing on stdout');
  failure(t, unreachableJson, /cannot reach the gateway/, 'no daemon, --json');
  jsonError(t, unreachableJson, /^cannot reach the gateway at /, 'no daemon, --json');
});

t.test('gateway init on a fresh database', async (t) => {
  const one = tempDir('gateway-cli-init-');
  const two = tempDir('gateway-cli-init-');
  t.teardown(() => {
    one.remove();
    two.remove();
  });
  const yaml = `database: { path: ./gw.db }\nauth: { bcrypt_rounds: 4, jwt_secret: ${TEST_JWT_SECRET} }\nlogging: { level: silent }\n`;
  const fileOne = join(one.path, 'gateway.yaml');
  const fileTwo = join(two.path, 'gateway.yaml');
  writeFileSync(fileOne, yaml);
  writeFileSync(fileTwo, yaml);

  // Refused before touching the database: the first init below still succeeds.
  const [short, noPassword, badEmail] = await Promise.all([
    runCli(['init', '--email', 'root@example.com', '--name', 'Root', '--password', 'short', '--config', fileOne, '--json']),
    runCli(['init', '--email', 'root@example.com', '--name', 'Root', '--config', fileOne]),
    runCli(['init', '--email', 'not-an-email', '--name', 'Root', '--password', 'password1', '--config', fileOne]),
  ]);
  usage(t, short, /--password: must be at least 8 characters/, 'init with a 5-character password');
  jsonError(t, short, /password: must be at least 8 characters/, 'init with a short password, --json');
  usage(t, noPassword, /--password: is required \(or set GATEWAY_INIT_PASSWORD\)/, 'init without a password');
  usage(t, badEmail, /--email: must be an email address/, 'init with a bad email');

  const [first, fromEnv] = await Promise.all([
    runCli(['init', '--email', 'Root@Example.com', '--name', 'Root', '--password', 'password1', '--config', fileOne, '--json']),
    runCli(['init', '--email', 'env@example.com', '--name', 'Env', '--config', fileTwo], { env: { GATEWAY_INIT_PASSWORD: 'env-password' } }),
  ]);
  ok(t, first, 'init --json');
  const created = doc(first);
  t.match(created.management_key, /^akm-[0-9a-f]{64}$/, 'init prints the akm- key');
  t.match(created.account, { email: 'root@example.com', name: 'Root', role: 'admin', balance: 0 }, 'the account is an admin (email lower-cased)');
  t.match(created.account.id, /^acc_/);
  t.match(created.key, { object: 'management_key', account_id: created.account.id, status: 'active', expires_at: null });
  t.equal(created.key.masked_key, `akm-${created.management_key.slice(4, 8)}…${created.management_key.slice(-4)}`, 'the key view is masked');
  t.notOk('management_key' in created.key, 'the key view carries no secret');

  // GATEWAY_INIT_PASSWORD in place of --password, human output.
  ok(t, fromEnv, 'init with GATEWAY_INIT_PASSWORD');
  const envKey = /akm-[0-9a-f]{64}/.exec(fromEnv.stdout)?.[0];
  t.ok(envKey, 'human init output shows the full akm- key');
  t.match(fromEnv.stdout, /shown only this once/, 'with the shown-once warning');
  t.match(fromEnv.stdout, /env@example\.com \(acc_[\w-]+, admin\)/, 'and the admin account');
  t.match(fromEnv.stdout, join(two.path, 'gw.db'), 'and the database path, resolved next to the config file');
  t.notMatch(fromEnv.stdout, ANSI, 'no colour codes when stdout is not a TTY');

  const [again, againJson] = await Promise.all([
    runCli(['init', '--email', 'other@example.com', '--name', 'Other', '--password', 'password1', '--config', fileOne]),
    runCli(['init', '--email', 'other@example.com', '--name', 'Other', '--config', fileOne, '--json'], { env: { GATEWAY_INIT_PASSWORD: 'password1' } }),
  ]);
  failure(t, again, /an admin account already exists/, 'second init');
  t.equal(again.stdout, '', 'second init prints no key');
  failure(t, againJson, /an admin account already exists/, 'second init, --json');
  jsonError(t, againJson, /an admin account already exists/, 'second init, --json', 409);

  // The printed keys work against a daemon on the same database.
  for (const [file, key, email] of [
    [fileOne, created.management_key as string, 'root@example.com'],
    [fileTwo, envKey ?? '', 'env@example.com'],
  ] as const) {
    const running = await startGateway(loadConfig({ file, env: {} }), { logger: pino({ level: 'silent' }), port: 0 });
    try {
      const http = httpClient(running.url);
      const me = await http('GET', '/api/management/me', { token: key });
      t.equal(me.status, 200, `the akm- key from init works (${email})`);
      t.match(me.body.account, { email, role: 'admin' });
      const list = await http('GET', '/api/management/accounts', { token: key });
      t.equal(list.status, 200, 'and has admin rights');
      t.equal(list.body.data.length, 1, 'the failed init attempts created no account');
      const login = await http('POST', '/api/auth/login', { body: { email, password: email === 'env@example.com' ? 'env-password' : 'password1' } });
      t.equal(login.status, 200, 'the admin can log in with the init password');
    } finally {
      await running.close();
    }
  }
});

t.test('admin commands against a running daemon', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const dead = `http://127.0.0.1:${await closedPort()}`;
  const admin = ['--url', gw.url, '--key', gw.adminKey];
  const email = 'u@example.com';

  // accounts create (human) ---------------------------------------------------------------------
  const createdAccount = await runCli(['accounts', 'create', '--email', email, '--name', 'U', '--password', 'password1', ...admin]);
  ok(t, createdAccount, 'accounts create');
  t.match(createdAccount.stdout, /✔ account u@example\.com created/);
  t.match(createdAccount.stdout, /role\s+user/);
  t.match(createdAccount.stdout, /balance\s+₹0\.00/);
  const userId = /id\s+(acc_\S+)/.exec(createdAccount.stdout)?.[1];
  t.ok(userId, 'accounts create shows the new id');
  const stored = await gw.http('GET', `/api/management/accounts/${email}`, { token: gw.adminKey });
  t.match(stored.body, { id: userId, email, name: 'U', role: 'user', balance: 0 }, 'the account exists in the daemon');
  const login = await gw.http('POST', '/api/auth/login', { body: { email, password: 'password1' } });
  t.equal(login.status, 200, 'the account can log in with --password');

  // accounts list: via GATEWAY_URL / GATEWAY_ADMIN_KEY (human) and via flags (--json) --------------
  const [listHuman, listJson, duplicate] = await Promise.all([
    runCli(['accounts', 'list'], { env: { GATEWAY_URL: gw.url, GATEWAY_ADMIN_KEY: gw.adminKey } }),
    runCli(['accounts', 'list', '--json', ...admin]),
    runCli(['accounts', 'create', '--email', email, '--name', 'Again', ...admin, '--json']),
  ]);
  ok(t, listHuman, 'accounts list with GATEWAY_URL and GATEWAY_ADMIN_KEY');
  t.match(listHuman.stdout, /^ID\s+EMAIL\s+NAME\s+ROLE\s+BALANCE\s+SPEND LIMIT\s+CREATED\s*$/m, 'accounts list: table headers');
  t.match(listHuman.stdout, new RegExp(`^acc_\\S+\\s+${gw.adminEmail.replace('.', '\\.')}\\s+Admin\\s+admin\\s+₹0\\.00\\s+-\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ\\s*$`, 'm'), 'the admin row');
  t.match(listHuman.stdout, new RegExp(`^${userId}\\s+u@example\\.com\\s+U\\s+user\\s+₹0\\.00`, 'm'), 'the user row');
  t.notMatch(listHuman.stdout, ANSI, 'no colour codes when stdout is not a TTY');
  ok(t, listJson, 'accounts list --json');
  const accounts = doc(listJson);
  t.equal(accounts.object, 'list');
  t.same(
    accounts.data.map((a: { email: string }) => a.email).sort(),
    [gw.adminEmail, email].sort(),
    'accounts list --json: both accounts',
  );
  for (const account of accounts.data) t.same(Object.keys(account).sort(), ['balance', 'created_at', 'email', 'id', 'name', 'period_resets_at', 'role', 'spend_limit', 'spend_period', 'spent_this_period'], 'account shape');
  failure(t, duplicate, /u@example\.com/, 'accounts create with a taken email');
  jsonError(t, duplicate, /u@example\.com/, 'accounts create with a taken email, --json', 409, 'email_taken');
  t.match(doc(duplicate).error, { type: 'conflict_error', param: 'email' }, 'the daemon\'s type and param');

  // wallet topup, replayed; unknown email ----------------------------------------------------------
  const topupArgs = ['wallet', 'topup', '--email', email, '--amount', '100.5', '--reference', 'r1', ...admin];
  const firstTopup = await runCli(topupArgs);
  ok(t, firstTopup, 'wallet topup');
  t.match(firstTopup.stdout, /✔ added ₹100\.50 to u@example\.com/);
  t.match(firstTopup.stdout, /balance\s+₹100\.50/);
  t.match(firstTopup.stdout, /reference\s+r1/);
  const [replay, replayHuman, unknownTopup, unknownTopupJson] = await Promise.all([
    runCli([...topupArgs, '--json']),
    runCli(topupArgs),
    runCli(['wallet', 'topup', '--email', 'nobody@example.com', '--amount', '1', ...admin]),
    runCli(['wallet', 'topup', '--email', 'nobody@example.com', '--amount', '1', ...admin, '--json']),
  ]);
  ok(t, replay, 'wallet topup again, --json');
  const replayed = doc(replay);
  t.equal(replayed.replayed, true, 'the second top-up with the same reference is a replay');
  t.equal(replayed.balance, 100.5, 'the balance stays 100.5');
  t.match(replayed.topup, { kind: 'topup', amount: 100.5, balance_after: 100.5, reference: 'r1', account_id: userId });
  ok(t, replayHuman, 'wallet topup again, human');
  t.match(replayHuman.stdout, /top-up r1 was already applied; nothing changed/);
  t.match(replayHuman.stdout, /balance\s+₹100\.50/);
  failure(t, unknownTopup, /^error: account 'nobody@example\.com' not found$/, 'wallet topup for an unknown email');
  t.equal(unknownTopup.stdout, '');
  jsonError(t, unknownTopupJson, /^account 'nobody@example\.com' not found$/, 'wallet topup for an unknown email, --json', 404, 'account_not_found');
  t.equal(unknownTopupJson.code, 1);

  // wallet balance and ledger ----------------------------------------------------------------------
  const [balanceHuman, balanceJson, ledgerHuman, ledgerJson] = await Promise.all([
    runCli(['wallet', 'balance', '--email', email, ...admin]),
    runCli(['wallet', 'balance', '--email', 'U@Example.com', ...admin, '--json']),
    runCli(['wallet', 'ledger', '--email', email, ...admin]),
    runCli(['wallet', 'ledger', '--email', email, ...admin, '--json']),
  ]);
  ok(t, balanceHuman, 'wallet balance');
  t.match(balanceHuman.stdout, /account\s+u@example\.com/);
  t.match(balanceHuman.stdout, /balance\s+₹100\.50/);
  ok(t, balanceJson, 'wallet balance --json');
  t.same(doc(balanceJson), { account_id: userId, email, balance: 100.5, currency: 'INR' }, 'wallet balance --json (email matched case-insensitively)');
  ok(t, ledgerHuman, 'wallet ledger');
  t.match(ledgerHuman.stdout, /^ID\s+TIME\s+KIND\s+AMOUNT\s+BALANCE\s+REFERENCE\s*$/m, 'ledger headers');
  t.match(ledgerHuman.stdout, /^\s*\d+\s+\S+ \S+Z\s+topup\s+₹100\.50\s+₹100\.50\s+r1\s*$/m, 'the top-up row');
  ok(t, ledgerJson, 'wallet ledger --json');
  const ledger = doc(ledgerJson);
  t.equal(ledger.object, 'list');
  t.equal(ledger.data.length, 1, 'the replay added no ledger entry');
  t.match(ledger.data[0], { id: replayed.topup.id, kind: 'topup', amount: 100.5, balance_after: 100.5, reference: 'r1' });

  // keys create (--json and human) -----------------------------------------------------------------
  const [keyJson, keyHuman] = await Promise.all([
    runCli(['keys', 'create', '--email', email, '--name', 'app', '--rate-limit', '60', '--budget', '25', '--expires-at', '2030-01-01', '--models', 'openai/gpt-4o-mini, anthropic/*', '--allowed-ips', '127.0.0.1,::1', '--max-parallel', '4', '--tpm', '20000', '--budget-period', 'monthly', ...admin, '--json']),
    runCli(['keys', 'create', '--email', email, '--name', 'human', ...admin]),
  ]);
  ok(t, keyJson, 'keys create --json');
  const key = doc(keyJson);
  t.match(key.api_key, /^sk-[0-9a-f]{64}$/, 'the full sk- key, once');
  t.match(key, { object: 'api_key', account_id: userId, name: 'app', rate_limit: 60, budget: 25, spent: 0, status: 'active', expires_at: '2030-01-01T00:00:00.000Z', revoked_at: null });
  t.same([key.models, key.allowed_ips], [['openai/gpt-4o-mini', 'anthropic/*'], ['127.0.0.1', '::1']], '--models and --allowed-ips, comma-separated');
  t.match(key, { max_parallel: 4, tpm_limit: 20000, budget_period: 'monthly', spent_this_period: 0 }, '--max-parallel, --tpm, --budget-period');
  t.match(key.period_resets_at, /^\d{4}-\d\d-\d\dT18:30:00\.000Z$/, 'a monthly budget renews at midnight IST');
  const limited = await runCli(['accounts', 'update', email, '--spend-limit', '500', '--spend-period', 'weekly', ...admin, '--json']);
  ok(t, limited, 'accounts update --spend-limit --spend-period');
  t.match(doc(limited), { email, spend_limit: 500, spend_period: 'weekly', spent_this_period: 0 });
  const limitedHuman = await runCli(['accounts', 'update', email, '--spend-limit', '0', ...admin]);
  ok(t, limitedHuman, 'accounts update (human)');
  t.match(limitedHuman.stdout, /updated/);
  t.equal((await gw.http('GET', `/api/management/accounts/${userId}`, { token: gw.adminKey })).body.spend_limit, null, '--spend-limit 0 removes it');
  const badPeriod = await runCli(['accounts', 'update', email, '--spend-period', 'yearly', ...admin]);
  t.not(badPeriod.code, 0, 'a bad period fails');
  t.match(badPeriod.stderr, /spend_period/, 'naming the field');
  t.match(key.id, /^key_/);
  const secret = key.api_key as string;
  const masked = `sk-${secret.slice(3, 7)}…${secret.slice(-4)}`;
  t.equal(key.masked_key, masked);
  const credits = await gw.http('GET', '/v1/credits', { token: secret });
  t.equal(credits.status, 200, 'the new key works');
  t.same(credits.body, { balance: 100.5, currency: 'INR' }, '/v1/credits shows the account balance');

  ok(t, keyHuman, 'keys create (human)');
  const humanSecret = /sk-[0-9a-f]{64}/.exec(keyHuman.stdout)?.[0] ?? '';
  t.match(humanSecret, /^sk-[0-9a-f]{64}$/, 'keys create shows the full sk- key');
  t.match(keyHuman.stdout, /Store it now: it is shown only this once and cannot be recovered\./, 'with the shown-once warning');
  t.match(keyHuman.stdout, /rate limit\s+10000 requests\/minute/, 'default rate limit');
  t.match(keyHuman.stdout, /budget\s+unlimited/, 'no budget = unlimited');
  t.match(keyHuman.stdout, /expires\s+never/);
  t.match(keyHuman.stdout, /models\s+all/, 'no models list: all');
  t.match(keyHuman.stdout, /allowed ips\s+anywhere/);
  t.equal((await gw.http('GET', '/v1/credits', { token: humanSecret })).status, 200, 'the key shown by the human output works');
  const humanMasked = `sk-${humanSecret.slice(3, 7)}…${humanSecret.slice(-4)}`;

  // keys list: masked only ---------------------------------------------------------------------------
  const [keysHuman, keysJson] = await Promise.all([runCli(['keys', 'list', '--email', email, ...admin]), runCli(['keys', 'list', '--email', email, ...admin, '--json'])]);
  ok(t, keysHuman, 'keys list');
  t.match(keysHuman.stdout, /^ID\s+NAME\s+KEY\s+RPM\s+BUDGET\s+SPENT\s+STATUS\s+EXPIRES\s+LAST USED\s*$/m, 'keys list headers');
  t.match(keysHuman.stdout, new RegExp(`^${key.id}\\s+app\\s+${masked}\\s+60\\s+₹25\\.00/monthly\\s+₹0\\.00\\s+active\\s+2030-01-01 00:00:00Z`, 'm'), 'the app key row');
  t.match(keysHuman.stdout, humanMasked, 'the second key, masked');
  t.notMatch(keysHuman.stdout, secret, 'keys list never shows the full key');
  t.notMatch(keysHuman.stdout, humanSecret, 'keys list never shows the full key (2)');
  t.notMatch(keysHuman.stdout, /sk-[0-9a-f]{8,}/, 'no unmasked sk- key at all');
  ok(t, keysJson, 'keys list --json');
  const keyList = doc(keysJson);
  t.equal(keyList.data.length, 2);
  t.notMatch(keysJson.stdout, /sk-[0-9a-f]{8,}/, 'keys list --json carries no secret');
  t.same(keyList.data.map((k: { masked_key: string }) => k.masked_key).sort(), [masked, humanMasked].sort());
  t.equal(keyList.data.find((k: { masked_key: string }) => k.masked_key === humanMasked)?.budget, 0, 'keys list --json: no budget is 0');

  // keys create --json without --budget: budget 0 (unlimited)
  const noBudgetJson = await runCli(['keys', 'create', '--email', email, '--name', 'no-budget', ...admin, '--json']);
  ok(t, noBudgetJson, 'keys create --json without --budget');
  t.match(doc(noBudgetJson), { object: 'api_key', name: 'no-budget', rate_limit: 10000, spent: 0, status: 'active' });
  t.equal(doc(noBudgetJson).budget, 0, 'keys create --json without --budget: budget 0 (unlimited), not null');

  // keys update ------------------------------------------------------------------------------------
  const unlimited = await runCli(['keys', 'update', key.id, '--budget', '0', ...admin, '--json']);
  ok(t, unlimited, 'keys update --budget 0');
  t.match(doc(unlimited), { id: key.id, budget: 0, rate_limit: 60, name: 'app', expires_at: '2030-01-01T00:00:00.000Z' }, '--budget 0 means unlimited (0)');
  t.equal(doc(unlimited).budget, 0, 'budget 0, a number, not null');
  t.notOk('api_key' in doc(unlimited), 'update shows no secret');
  const renamed = await runCli(['keys', 'update', key.id, '--name', 'new', ...admin]);
  ok(t, renamed, 'keys update --name');
  t.match(renamed.stdout, `✔ API key ${key.id} updated`);
  t.match(renamed.stdout, new RegExp(`^${key.id}\\s+new\\s+${masked}\\s+60\\s+unlimited\\s`, 'm'), 'the updated row');
  t.notMatch(renamed.stdout, secret);
  const afterUpdate = await gw.http('GET', `/api/management/api-keys/${key.id}`, { token: gw.adminKey });
  t.match(afterUpdate.body, { name: 'new', budget: 0, rate_limit: 60, status: 'active', expires_at: '2030-01-01T00:00:00.000Z' }, 'the daemon has the changes');

  // keys revoke; unknown id -----------------------------------------------------------------------------
  const [revoked, unknownRevoke, unknownRevokeJson] = await Promise.all([
    runCli(['keys', 'revoke', key.id, ...admin]),
    runCli(['keys', 'revoke', 'key_doesnotexist', ...admin]),
    runCli(['keys', 'revoke', 'key_doesnotexist', ...admin, '--json']),
  ]);
  ok(t, revoked, 'keys revoke');
  t.match(revoked.stdout, `✔ API key ${key.id} (${masked}) revoked`);
  t.equal((await gw.http('GET', '/v1/credits', { token: secret })).status, 401, 'the revoked key is refused');
  t.equal((await gw.http('GET', '/v1/credits', { token: humanSecret })).status, 200, 'the other key still works');
  failure(t, unknownRevoke, /^error: api key 'key_doesnotexist' not found$/, 'keys revoke with an unknown id (404)');
  t.equal(unknownRevoke.stdout, '');
  t.equal(unknownRevokeJson.code, 1);
  jsonError(t, unknownRevokeJson, /not found/, 'keys revoke with an unknown id, --json', 404, 'api_key_not_found');

  // mgmt-keys, and what a user's akm- key may do ----------------------------------------------------
  const mgmtCreated = await runCli(['mgmt-keys', 'create', '--email', email, '--name', 'tool', ...admin, '--json']);
  ok(t, mgmtCreated, 'mgmt-keys create');
  const mgmt = doc(mgmtCreated);
  t.match(mgmt.management_key, /^akm-[0-9a-f]{64}$/);
  t.match(mgmt, { object: 'management_key', account_id: userId, name: 'tool', status: 'active', expires_at: null });
  t.notOk('rate_limit' in mgmt, 'management keys have no rate limit');
  const userKey = mgmt.management_key as string;
  const userMasked = `akm-${userKey.slice(4, 8)}…${userKey.slice(-4)}`;
  t.equal(mgmt.masked_key, userMasked);

  const [mgmtList, userAccounts, userBalance, userOther, userTopup] = await Promise.all([
    runCli(['mgmt-keys', 'list', '--email', email, ...admin]),
    runCli(['accounts', 'list', '--url', gw.url, '--key', userKey]),
    runCli(['wallet', 'balance', '--url', gw.url, '--key', userKey, '--json']),
    runCli(['wallet', 'balance', '--url', gw.url, '--key', userKey, '--email', gw.adminEmail]),
    runCli(['wallet', 'topup', '--email', email, '--amount', '5', '--url', gw.url, '--key', userKey]),
  ]);
  ok(t, mgmtList, 'mgmt-keys list');
  t.match(mgmtList.stdout, /^ID\s+NAME\s+KEY\s+STATUS\s+EXPIRES\s+LAST USED\s*$/m, 'mgmt-keys list headers (no RPM/BUDGET)');
  t.match(mgmtList.stdout, new RegExp(`^${mgmt.id}\\s+tool\\s+${userMasked}\\s+active\\s+never`, 'm'));
  t.notMatch(mgmtList.stdout, userKey, 'mgmt-keys list never shows the full key');
  failure(t, userAccounts, /admin/, "a user's key: accounts list");
  t.equal(userAccounts.stdout, '');
  ok(t, userBalance, "a user's key: wallet balance without --email");
  t.same(doc(userBalance), { account_id: userId, email, balance: 100.5, currency: 'INR' }, 'its own balance');
  failure(t, userOther, /not found/, "a user's key: another account's balance is hidden");
  failure(t, userTopup, /admin/, "a user's key: wallet topup");
  t.equal((await gw.http('GET', `/api/management/accounts/${email}/balance`, { token: gw.adminKey })).body.balance, 100.5, 'the refused top-up changed nothing');

  const mgmtRevoked = await runCli(['mgmt-keys', 'revoke', mgmt.id, ...admin, '--json']);
  ok(t, mgmtRevoked, 'mgmt-keys revoke');
  t.match(doc(mgmtRevoked), { id: mgmt.id, object: 'management_key', status: 'revoked', masked_key: userMasked });
  t.ok(doc(mgmtRevoked).revoked_at, 'revoked_at is set');
  t.equal((await gw.http('GET', '/api/management/me', { token: userKey })).status, 401, 'the revoked management key is refused');
  t.equal((await gw.http('GET', '/api/management/me', { token: gw.adminKey })).status, 200, 'the admin key still works');

  // models list (no key needed) ----------------------------------------------------------------------
  const catalog = await gw.http('GET', '/api/models');
  const [modelsHuman, modelsJson, embeddingJson, embeddingHuman] = await Promise.all([
    // --url wins over GATEWAY_URL (which points at a dead port here).
    runCli(['models', 'list', '--url', gw.url], { env: { GATEWAY_URL: dead } }),
    runCli(['models', 'list', '--json'], { env: { GATEWAY_URL: gw.url } }),
    runCli(['models', 'list', '--url', gw.url, '--type', 'embedding', '--json']),
    runCli(['models', 'list', '--url', gw.url, '--type', 'embedding']),
  ]);
  ok(t, modelsHuman, 'models list');
  t.match(modelsHuman.stdout, /^MODEL\s+TYPE\s+CONTEXT\s+INPUT\/1M\s+OUTPUT\/1M\s*$/m, 'models list headers');
  const chatRows = lines(modelsHuman.stdout).filter((line) => /^\S+\s+chat\s+\d+\s+₹[\d,]+\.\d\d+\s+₹[\d,]+\.\d\d+\s*$/.test(line));
  t.ok(chatRows.length >= 15, `models list shows at least 15 chat models with INR prices (${chatRows.length})`);
  ok(t, modelsJson, 'models list --json');
  const models = doc(modelsJson);
  t.equal(models.object, 'list');
  t.same(models.data, catalog.body.data, 'models list --json is the daemon catalog');
  t.ok(models.data.filter((m: { type: string }) => m.type === 'chat').length >= 15, 'at least 15 chat models');
  t.ok(models.data.every((m: { pricing: { currency: string } }) => m.pricing.currency === 'INR'), 'every price is in INR');
  for (const model of models.data.filter((m: { type: string }) => m.type === 'chat').slice(0, 3)) {
    t.match(modelsHuman.stdout, new RegExp(`^${model.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+chat\\s`, 'm'), `the human table lists ${model.id}`);
  }
  ok(t, embeddingJson, 'models list --type embedding --json');
  const embeddings = doc(embeddingJson).data as { id: string; type: string }[];
  t.ok(embeddings.length > 0, 'there are embedding models');
  t.same(embeddings, catalog.body.data.filter((m: { type: string }) => m.type === 'embedding'), 'exactly the embedding models');
  ok(t, embeddingHuman, 'models list --type embedding');
  t.notMatch(embeddingHuman.stdout, /\schat\s/, 'no chat models in the embedding list');
  for (const model of embeddings) t.match(embeddingHuman.stdout, model.id, `the embedding table lists ${model.id}`);
});
