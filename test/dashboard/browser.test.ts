import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import t from 'tap';
import { request } from 'undici';
import { ensureDashboard } from '../../src/dashboard/build.js';
import { formatInr } from '../../src/dashboard/lib/money.js';
import { simulatedProviders, startTestGateway, TEST_JWT_SECRET, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';
import { findChromium, newContext, screenshots, unlabelledControls, waitForText, watch, type PageProblems } from './browser-support.js';

/**
 * The dashboard in a real Chromium (Debian's package, driven by playwright-core) against a
 * real daemon and the provider simulator: sign up, log in, keys shown once, a real call with
 * the key, live usage, balance, edit and revoke, CSV export, the admin top-up, logout, an
 * expired session, a cross-origin write refused. Screenshots of every page at desktop and
 * phone width go to test/dashboard/screenshots/.
 */

const chromium = findChromium();
const skip = chromium ? false : 'no Chromium: install Debian\'s package (apt-get install -y chromium) or set CHROMIUM_PATH';

if (!chromium && process.env.CI === 'true') {
  t.fail('CI must run the browser tests: .ci/run installs chromium, but none was found');
}

const MODEL = 'openai/gpt-4o-mini';
const PASSWORD = 'correct horse battery';

t.test('the dashboard in Chromium', { skip, timeout: 120_000 }, async (t) => {
  const started = Date.now();
  const built = await ensureDashboard();
  t.comment(built ? 'built the dashboard (dist/dashboard was missing or stale)' : 'dist/dashboard is up to date');

  const { chromium: playwright } = await import('playwright-core');
  const sim = await ProviderSimulator.start();
  const gw: TestGateway = await startTestGateway({ providers: simulatedProviders(sim.url) });
  const browser: Browser = await playwright.launch({ executablePath: chromium as string, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  t.teardown(async () => {
    await browser.close();
    await gw.stop();
    await sim.close();
    t.comment(`browser tests took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  const base = gw.url;
  const email = `asha-${randomBytes(4).toString('hex')}@example.com`;
  const user: { context?: BrowserContext; page?: Page; problems?: PageProblems; key?: string; keyId?: string; accountId?: string } = {};
  const pages: { page: Page; problems: PageProblems; who: string }[] = [];

  const open = async (context: BrowserContext, who: string): Promise<{ page: Page; problems: PageProblems }> => {
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const problems = watch(page);
    pages.push({ page, problems, who });
    return { page, problems };
  };

  const heading = (page: Page) => page.locator('h1');

  /** Checks the page's form controls are labelled, then writes its screenshots. */
  const capture = async (tt: Tap, page: Page, name: string): Promise<void> => {
    tt.same(await unlabelledControls(page), [], `${name}: every input has a label`);
    await screenshots(page, name);
  };

  const chat = async (key: string, content = 'hello from the browser test') => {
    const response = await request(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }] }),
    });
    return { status: response.statusCode, body: (await response.body.json()) as { id?: string; error?: { message: string } } };
  };

  const credits = async (key: string): Promise<number> => {
    const response = await request(`${base}/v1/credits`, { headers: { authorization: `Bearer ${key}` } });
    return ((await response.body.json()) as { balance: number }).balance;
  };

  await t.test('sign up: the rules inline, then the overview', async (t) => {
    user.context = await newContext(browser, base);
    const { page, problems } = await open(user.context, 'user');
    user.page = page;
    user.problems = problems;
    await page.goto('/');
    await page.waitForURL(/\/login$/);
    t.equal(await heading(page).textContent(), 'Log in', 'a visitor without a session lands on the login page');
    await capture(t, page, 'login');

    await page.getByRole('link', { name: 'Sign up' }).click();
    await page.waitForURL(/\/signup$/);
    await page.getByLabel('Name').fill('Asha Rao');
    await page.getByLabel('E-mail').fill('asha@nowhere');
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await waitForText(page.locator('.field-error'), 'Enter an e-mail address like name@example.com.');
    await waitForText(page.locator('.field-error').nth(1), 'Use at least 8 characters (5 so far).');
    t.equal(page.url(), `${base}/signup`, 'an invalid form is not sent');
    await capture(t, page, 'signup');

    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.waitForURL(`${base}/`);
    await waitForText(heading(page), 'Overview');
    await waitForText(page.getByTestId('balance'), '₹0.00');
    const me = await page.evaluate('fetch("/api/auth/me").then((r) => r.json())');
    user.accountId = (me as { user: { id: string } }).user.id;
    t.ok(user.accountId, 'the session cookie works for the API');
  });

  await t.test('admin: log in, top up the new account with a reference (idempotent)', async (t) => {
    const context = await newContext(browser, base);
    const { page } = await open(context, 'admin');
    await page.goto('/admin');
    await page.waitForURL(/\/login\?next=%2Fadmin$/);
    await page.getByLabel('E-mail').fill(gw.adminEmail);
    await page.getByLabel('Password', { exact: true }).fill('admin-password');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/admin`);
    await waitForText(heading(page), 'Admin');
    const row = page.locator(`tr[data-account-email="${email}"]`);
    await waitForText(row, '₹0.00');

    await row.getByRole('button', { name: /Top up/ }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Amount (₹)').fill('1,500');
    const reference = `invoice-${randomBytes(3).toString('hex')}`;
    await dialog.getByLabel('Reference').fill(reference);
    await dialog.getByRole('button', { name: 'Top up' }).click();
    await waitForText(page.getByRole('status').filter({ hasText: 'Topped up' }), `Topped up ${email} by ₹1,500.00. The balance is now ₹1,500.00.`);
    await waitForText(row, '₹1,500.00');

    // The same reference again: applied once, the balance unchanged.
    await row.getByRole('button', { name: /Top up/ }).click();
    await dialog.getByLabel('Amount (₹)').fill('1500');
    await dialog.getByLabel('Reference').fill(reference);
    await dialog.getByRole('button', { name: 'Top up' }).click();
    await waitForText(page.getByRole('status').filter({ hasText: 'already applied' }), 'nothing was added');
    await waitForText(row, '₹1,500.00');

    // A new account, with a password so its person can log in.
    await page.getByRole('button', { name: 'Create an account' }).click();
    await page.getByLabel('E-mail').fill('ravi@example.com');
    await page.getByLabel('Name').fill('Ravi Kumar');
    await page.getByLabel('Password (optional)').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    await waitForText(page.locator('.field-error'), 'Use at least 8 characters');
    await page.getByLabel('Password (optional)').fill('ravi-password');
    await page.getByRole('button', { name: 'Create account' }).click();
    await waitForText(page.getByRole('status').filter({ hasText: 'Created' }), 'Created ravi@example.com.');
    await waitForText(page.locator('tr[data-account-email="ravi@example.com"]'), '₹0.00');
    await waitForText(page.locator('section[aria-labelledby="alerts-heading"]'), 'Recent alerts');
    await capture(t, page, 'admin');
    await context.close();
  });

  await t.test('create a key: shown once, copied, then only masked', async (t) => {
    const page = user.page as Page;
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(`${base}/keys`);
    await page.getByRole('button', { name: 'Create a key' }).click();
    t.equal(await page.getByLabel('Rate limit (requests per minute)').inputValue(), '1000', 'the form starts at 1000 requests per minute');
    await page.getByLabel('Rate limit (requests per minute)').fill('20000');
    await page.getByRole('button', { name: 'Create key' }).click();
    await waitForText(page.locator('.field-error'), 'Enter a name for the key.');
    await waitForText(page.locator('.field-error').nth(1), 'Use 1 to 10,000 requests per minute.');
    await page.getByLabel('Name').fill('chat app');
    await page.getByLabel('Rate limit (requests per minute)').fill('600');
    await page.getByLabel('Budget (₹)').fill('200');
    await page.getByRole('button', { name: 'Create key' }).click();

    const secret = page.getByRole('textbox', { name: /Your new key/ });
    await secret.waitFor();
    const key = await secret.inputValue();
    t.match(key, /^sk-[0-9a-f]{64}$/, 'the new key is shown');
    await waitForText(page.locator('.secret-once'), 'shown only this once');
    await page.getByRole('button', { name: 'Copy' }).click();
    await waitForText(page.locator('.copy-status'), 'Copied');
    t.equal(await page.evaluate('navigator.clipboard.readText()'), key, 'Copy put the key on the clipboard');
    await capture(t, page, 'keys-created');
    user.key = key;

    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.reload();
    const row = page.locator('tbody tr').filter({ hasText: 'chat app' });
    await waitForText(row, 'Active');
    user.keyId = (await row.getAttribute('data-key-id')) ?? undefined;
    t.notOk((await page.content()).includes(key.slice(3)), 'after the first view the page never holds the key');
    t.match(await row.textContent(), /sk-.*…|sk-.*\*/, 'the list shows the masked key');
    t.match(await row.textContent(), /₹0\.00\s*of\s*₹200\.00/, 'spent against the budget');
    t.match(await row.textContent(), /600\/min/, 'the rate limit');
  });

  await t.test('a call with the key: the usage row arrives live, the balance drops', async (t) => {
    const page = user.page as Page;
    const key = user.key as string;
    await page.goto('/usage');
    await waitForText(heading(page), 'Usage');
    await page.getByLabel('Live').check();
    await waitForText(page.locator('.toolbar'), 'Showing new calls as they settle');

    const call = await chat(key);
    t.equal(call.status, 200, 'the chat call succeeds against the simulator');
    const row = page.locator('tbody tr').filter({ hasText: MODEL });
    await waitForText(row, 'OK', 15_000);
    t.equal(page.url(), `${base}/usage`, 'the row arrived without a reload');

    const usage = (await page.evaluate('fetch("/api/usage?limit=1").then((r) => r.json())')) as { data: { cost: number; request_id: string; input_tokens: number }[] };
    const first = usage.data[0];
    t.ok(first && first.cost > 0, 'the call was billed');
    await waitForText(row, formatInr(first?.cost ?? 0));
    t.match(await row.textContent(), /Chat completions/);
    t.match(await row.textContent(), /chat app/);

    // A second call while the overview is open: its numbers follow without a reload.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click();
    await waitForText(page.locator('.live-dot'), 'Live');
    const before = await credits(key);
    await waitForText(page.getByTestId('balance'), formatInr(before));
    await waitForText(page.getByTestId('calls-today'), '1');
    t.equal((await chat(key, 'a second call')).status, 200);
    const after = await credits(key);
    t.ok(after < before && after < 1500, 'the second call cost something');
    await waitForText(page.getByTestId('balance'), formatInr(after), 15_000);
    await waitForText(page.getByTestId('calls-today'), '2', 15_000);
    await page.locator('figure.chart').first().waitFor();
    t.match(await page.locator('figure.chart').first().textContent(), /Spend per day/);
    t.match(await page.locator('.legend').first().textContent(), new RegExp(MODEL.replace('/', '\\/')));
    await capture(t, page, 'overview');
  });

  await t.test('usage: filters in the URL, a call\'s detail, CSV export, the back button', async (t) => {
    const page = user.page as Page;
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage' }).click();
    await page.waitForURL(`${base}/usage`);
    await page.getByLabel('Model').selectOption(MODEL);
    await page.waitForURL(`${base}/usage?model=${encodeURIComponent(MODEL)}`);
    await page.getByLabel('Status').selectOption('error');
    await waitForText(page.locator('main'), 'No calls match these filters.');
    await page.getByLabel('Status').selectOption('ok');
    await waitForText(page.locator('tbody'), MODEL);
    t.equal(await page.locator('tbody tr').count(), 2, 'both calls listed');

    await page.locator('tbody tr').first().getByRole('button').click();
    const dialog = page.getByRole('dialog', { name: 'Call details' });
    await waitForText(dialog, 'Request id');
    t.match(await dialog.textContent(), /Input tokens/);
    await capture(t, page, 'usage-detail');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    const csv = readFileSync(await download.path(), 'utf8');
    const lines = csv.trim().split(/\r?\n/);
    t.match(lines[0], /request_id/, 'the CSV has its header');
    t.equal(lines.length, 3, 'the CSV has the two filtered calls');
    t.ok(lines.slice(1).every((line) => line.includes(MODEL)), 'each row is a call of the filtered model');
    t.match(download.suggestedFilename(), /\.csv$/);

    await page.reload();
    t.equal(await page.getByLabel('Model').inputValue(), MODEL, 'a reload keeps the filters');
    await capture(t, page, 'usage');

    // Back and forward move between pages.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Wallet' }).click();
    await waitForText(heading(page), 'Wallet');
    await page.goBack();
    await waitForText(heading(page), 'Usage');
    t.equal(page.url(), `${base}/usage?model=${encodeURIComponent(MODEL)}&status=ok`, 'back returns to the filtered usage page');
    await page.goForward();
    await waitForText(heading(page), 'Wallet');
  });

  await t.test('wallet: the ledger with its running balance', async (t) => {
    const page = user.page as Page;
    await page.goto('/wallet');
    const rows = page.locator('tbody tr');
    await waitForText(rows.last(), 'Top-up');
    t.match(await rows.last().textContent(), /\+₹1,500\.00/);
    t.match(await rows.last().textContent(), /invoice-/, 'the top-up shows its reference');
    t.equal(await rows.count(), 3, 'a top-up and two charges');
    await waitForText(rows.first(), 'Charge');
    await waitForText(page.getByTestId('wallet-balance'), formatInr(await credits(user.key as string)));
    await capture(t, page, 'wallet');

    t.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin' }).count(), 0, 'no Admin link for a user');
    await page.goto('/admin');
    await waitForText(page.getByRole('alert'), 'Only admin accounts can see this page.');
  });

  await t.test('edit the key, then revoke it', async (t) => {
    const page = user.page as Page;
    await page.goto('/keys');
    await page.getByRole('button', { name: 'Edit chat app' }).click();
    const dialog = page.getByRole('dialog');
    t.equal(await dialog.getByLabel('Budget (₹)').inputValue(), '200');
    await dialog.getByLabel('Name').fill('chat app (prod)');
    await dialog.getByLabel('Rate limit (requests per minute)').fill('50');
    await dialog.getByLabel('Budget (₹)').fill('0');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await waitForText(page.getByRole('status'), 'Saved “chat app (prod)”.');
    const row = page.locator('tbody tr').filter({ hasText: 'chat app (prod)' });
    await waitForText(row, '50/min');
    t.match(await row.textContent(), /no limit/, 'a budget of 0 is unlimited');

    // Governance: the models the key may call and where from, each entry checked by the server.
    await page.getByRole('button', { name: 'Edit chat app (prod)' }).click();
    const governed = page.getByRole('dialog');
    await governed.getByLabel('Models').fill('openai/gpt-4o-mini, gpt-9000');
    await governed.getByRole('button', { name: 'Save changes' }).click();
    await waitForText(governed.locator('.field-error'), "models[1]: 'gpt-9000' is not a catalog model id, alias or short name");
    await governed.getByLabel('Models').fill('anthropic/*');
    await governed.getByLabel('Allowed IP addresses').fill('127.0.0.0/8, ::1');
    await governed.getByRole('button', { name: 'Save changes' }).click();
    await waitForText(page.getByRole('status'), 'Saved “chat app (prod)”.');
    await waitForText(row.locator('[data-key-restrictions]'), 'models: anthropic/* · from 127.0.0.0/8, ::1');
    const refused = await chat(user.key as string);
    t.equal(refused.status, 403, `${MODEL} is now outside the key's models`);
    t.match(refused.body.error?.message, /may not call/);

    // Limits: calls at once, tokens per minute, a budget that renews monthly.
    await page.getByRole('button', { name: 'Edit chat app (prod)' }).click();
    const limits = page.getByRole('dialog');
    await limits.getByLabel('Calls at once').fill('0');
    await limits.getByRole('button', { name: 'Save changes' }).click();
    await waitForText(limits.locator('.field-error'), 'Enter a whole number of calls, 1 to 10,000');
    await limits.getByLabel('Calls at once').fill('3');
    await limits.getByLabel('Tokens per minute').fill('20000');
    await limits.getByLabel('Budget (₹)').fill('500');
    await limits.getByLabel('Budget renews').fill('fortnightly');
    await limits.getByRole('button', { name: 'Save changes' }).click();
    await waitForText(limits.locator('.field-error'), 'budget_period: must be daily, weekly, monthly or a duration');
    await limits.getByLabel('Budget renews').fill('monthly');
    await limits.getByRole('button', { name: 'Save changes' }).click();
    await waitForText(page.getByRole('status'), 'Saved “chat app (prod)”.');
    await waitForText(row.locator('[data-key-restrictions]'), '3 at once · 20,000 tokens/min');
    await waitForText(row.locator('[data-key-period]'), 'monthly · renews');
    const saved = (await gw.http('GET', '/api/management/api-keys/' + (user.keyId as string), { token: gw.adminKey })).body;
    t.match(saved, { max_parallel: 3, tpm_limit: 20000, budget: 500, budget_period: 'monthly' }, 'the form saved every limit');
    await page.getByRole('button', { name: 'Edit chat app (prod)' }).click();
    const clearing = page.getByRole('dialog');
    t.equal(await clearing.getByLabel('Calls at once').inputValue(), '3', 'the edit dialog shows the limits');
    await clearing.getByLabel('Calls at once').fill('');
    await clearing.getByRole('button', { name: 'Save changes' }).click();
    await waitForText(page.getByRole('status'), 'Saved “chat app (prod)”.');
    t.equal((await gw.http('GET', '/api/management/api-keys/' + (user.keyId as string), { token: gw.adminKey })).body.max_parallel, null, 'emptied: no limit');

    await page.getByRole('button', { name: 'Revoke chat app (prod)' }).click();
    const confirm = page.getByRole('dialog');
    await waitForText(confirm, 'cannot be undone');
    await capture(t, page, 'keys-revoke');
    await confirm.getByRole('button', { name: 'Revoke the key' }).click();
    await waitForText(row, 'Revoked');
    const call = await chat(user.key as string);
    t.equal(call.status, 401, 'the revoked key is refused');
    await capture(t, page, 'keys');
  });

  await t.test('management keys: shown once, listed, revoked', async (t) => {
    const page = user.page as Page;
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Management keys' }).click();
    await page.getByRole('button', { name: 'Create a management key' }).click();
    await page.getByLabel('Name').fill('billing script');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByRole('textbox', { name: /Your new management key/ }).inputValue();
    t.match(secret, /^akm-/, 'the akm- key is shown once');
    await page.getByRole('button', { name: 'I have saved it' }).click();
    const row = page.locator('tbody tr').filter({ hasText: 'billing script' });
    await waitForText(row, 'Active');
    await page.getByRole('button', { name: 'Revoke billing script' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke the key' }).click();
    await waitForText(row, 'Revoked');
    await capture(t, page, 'management-keys');
  });

  await t.test('models: search and the cost calculator', async (t) => {
    const page = user.page as Page;
    await page.goto('/models');
    await page.getByLabel('Search').fill('haiku 4.5');
    await waitForText(page.locator('.models-table tbody'), 'anthropic/claude-haiku-4-5');
    t.equal(await page.locator('.models-table tbody tr').count(), 3, 'the search narrows the catalog to Claude Haiku 4.5: Anthropic\'s, on Bedrock and on Vertex');
    await page.getByRole('button', { name: 'Price a call of Claude Haiku 4.5', exact: true }).click();
    const calculator = page.locator('.calculator');
    await calculator.getByLabel('Input tokens').fill('1000000');
    await calculator.getByLabel('Of which cached').fill('0');
    await calculator.getByLabel('Output tokens').fill('1000000');
    // ₹84 + ₹420 per 1M tokens (config/models.yaml).
    await waitForText(page.getByTestId('estimate'), '₹504.00');
    await page.getByLabel('Search').fill('');
    await capture(t, page, 'models');
  });

  await t.test('admin: an account\'s keys and usage', async (t) => {
    const context = await newContext(browser, base);
    const { page } = await open(context, 'admin');
    await page.goto('/login');
    await page.getByLabel('E-mail').fill(gw.adminEmail);
    await page.getByLabel('Password', { exact: true }).fill('admin-password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(`${base}/`);
    await page.goto(`/admin/accounts/${encodeURIComponent(user.accountId as string)}`);
    await waitForText(heading(page), 'Asha Rao');
    await waitForText(page.locator('section').filter({ hasText: 'API keys' }), 'chat app (prod)');
    await waitForText(page.locator('.usage-table'), MODEL);
    t.equal(await page.locator('.usage-table tbody tr').count(), 2, 'the account\'s two calls');
    // The account's spend limit, set from its page.
    await page.locator('[data-spend-limit]').getByRole('button', { name: 'Change' }).click();
    const limit = page.getByRole('dialog');
    await limit.getByLabel('Limit (₹)').fill('2500');
    await limit.getByLabel('Per').fill('weekly');
    await limit.getByRole('button', { name: 'Save' }).click();
    await waitForText(page.locator('[data-spend-limit]'), '₹2,500.00');
    await waitForText(page.locator('[data-spend-limit]'), 'spent this week');
    t.match((await gw.http('GET', `/api/management/accounts/${user.accountId as string}`, { token: gw.adminKey })).body, { spend_limit: 2500, spend_period: 'weekly' });
    await capture(t, page, 'admin-account');
    await context.close();
  });

  await t.test('admin: routes, their rests, refreshed by the button, from the keyboard', async (t) => {
    const context = await newContext(browser, base);
    const { page } = await open(context, 'admin');
    gw.app.routes.restDeployment('openai:gpt-4o-mini', 120_000, 'failures', Date.now());
    await page.goto('/login?next=%2Fadmin');
    await page.getByLabel('E-mail').fill(gw.adminEmail);
    await page.getByLabel('Password', { exact: true }).fill('admin-password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(`${base}/admin`);
    await page.getByRole('link', { name: 'Routes' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/admin/routes`);
    await waitForText(heading(page), 'Routes');
    t.equal(await page.evaluate('document.activeElement && document.activeElement.id'), 'page-title', 'focus moves to the heading');
    await waitForText(page.locator('.page-header .lead'), 'Strategy weighted, 2 retries.');
    const resting = page.locator('tr[data-deployment="openai:gpt-4o-mini"]');
    await waitForText(resting, 'Resting');
    t.match(await resting.textContent(), /more, until .* · after repeated failures/, 'the rest: time left, until when, why');
    t.equal(await page.locator('section[data-model="openai/gpt-4o"]').count(), 0, 'an idle model is not listed');

    // A rest set after the page loaded shows after Refresh (Enter on the button).
    gw.app.routes.restDeployment('openai:gpt-4o', 120_000, 'retry-after', Date.now());
    await page.getByRole('button', { name: 'Refresh' }).focus();
    await page.keyboard.press('Enter');
    const other = page.locator('tr[data-deployment="openai:gpt-4o"]');
    await waitForText(other, 'the provider asked to wait');
    t.match(await page.getByRole('status').filter({ hasText: 'Updated at' }).textContent(), /Updated at/, 'the refresh is announced');
    await page.setViewportSize({ width: 375, height: 812 });
    t.ok(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'), 'nothing wider than a phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    await capture(t, page, 'admin-routes');
    await context.close();
  });

  await t.test('a write from another origin is refused (CSRF)', async (t) => {
    const context = user.context as BrowserContext;
    // A page on another origin of the same host (same site: the Lax cookie goes along).
    const evil: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><body>
<form id="f" method="post" action="${base}/api/api-keys" enctype="text/plain"><input name='{"name":"evil form","x":"' value='"}'></form>
<script>
fetch(${JSON.stringify(`${base}/api/api-keys`)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ name: 'evil fetch' }) })
  .finally(() => document.getElementById('f').submit());
</script></body>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => evil.close(() => resolve())));
    const evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/`;

    const { page } = await open(context, 'evil');
    const statuses: number[] = [];
    page.on('response', (response) => {
      if (response.url() === `${base}/api/api-keys` && response.request().method() === 'POST') statuses.push(response.status());
    });
    const formAnswer = page.waitForResponse((response) => response.url() === `${base}/api/api-keys` && response.request().method() === 'POST' && response.request().resourceType() === 'document');
    await page.goto(evilUrl);
    const answer = await formAnswer;
    t.equal(answer.status(), 403, 'the cross-origin form post is refused');
    const body = (await answer.json()) as { error: { reason: string } };
    t.comment(`refused with reason ${body.error.reason}`);
    t.ok(statuses.length >= 1 && statuses.every((status) => status === 403), `every cross-origin POST got 403 (${statuses.join(', ')})`);

    const own = (user.page as Page);
    const keys = (await own.evaluate('fetch("/api/api-keys").then((r) => r.json())')) as { data: { name: string }[] };
    t.notOk(keys.data.some((key) => key.name.startsWith('evil')), 'no key was created');
    await page.close();
  });

  await t.test('log out: the session ends on the server too', async (t) => {
    const page = user.page as Page;
    const context = user.context as BrowserContext;
    await page.goto('/keys');
    const cookie = (await context.cookies(base)).find((c) => c.name === 'token');
    t.ok(cookie?.httpOnly, 'the session cookie is HttpOnly');
    t.equal(await page.evaluate('document.cookie.includes("token=")'), false, 'scripts cannot read it');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login\?session=logged-out$/);
    await waitForText(page.getByRole('status'), 'You have logged out.');
    await page.goto('/keys');
    await page.waitForURL(/\/login\?next=%2Fkeys$/);

    // The old token, put back by hand, is refused: logout revoked it.
    await context.addCookies([{ ...(cookie as NonNullable<typeof cookie>) }]);
    await page.goto('/usage');
    await page.waitForURL(/\/login\?next=%2Fusage&session=expired$/);
    await waitForText(page.getByRole('status'), 'Your session expired. Log in again.');
  });

  await t.test('an expired session lands on the login page with a message, then back', async (t) => {
    const page = user.page as Page;
    const context = user.context as BrowserContext;
    await page.goto('/login');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(`${base}/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await waitForText(heading(page), 'API keys');

    // The session runs out while the app is open: the next call answers 401 session_expired.
    const now = Math.floor(Date.now() / 1000);
    const expired = jwt.sign({ sub: user.accountId, jti: randomBytes(16).toString('base64url'), iat: now - 7200, exp: now - 60 }, TEST_JWT_SECRET, { algorithm: 'HS256', issuer: 'llm-gateway', audience: 'session' });
    await context.addCookies([{ name: 'token', value: expired, url: base, httpOnly: true, sameSite: 'Lax' }]);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage' }).click();
    await page.waitForURL(/\/login\?next=%2Fusage&session=expired$/);
    await waitForText(page.getByRole('status'), 'Your session expired. Log in again.');
    await capture(t, page, 'session-expired');

    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(`${base}/usage`);
    await waitForText(heading(page), 'Usage');
    t.pass('logging in again returns to the page the session ended on');
  });

  await t.test('keyboard: focus is visible, the menu works at phone width', async (t) => {
    const page = user.page as Page;
    await page.setViewportSize({ width: 375, height: 812 });
    await page.goto('/');
    await waitForText(heading(page), 'Overview');
    await page.keyboard.press('Tab');
    t.equal(await page.evaluate('document.activeElement.textContent'), 'Skip to content', 'the first Tab reaches the skip link');
    t.equal(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle'), 'solid', 'the focused element has a visible outline');
    const menu = page.getByRole('button', { name: 'Menu' });
    await menu.focus();
    await page.keyboard.press('Enter');
    t.equal(await menu.getAttribute('aria-expanded'), 'true');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Models' }).click();
    await waitForText(heading(page), 'Models');
    t.equal(await page.evaluate('document.activeElement && document.activeElement.id'), 'page-title', 'a new page moves focus to its heading');
    t.equal(await menu.getAttribute('aria-expanded'), 'false', 'the menu closes after navigating');
    await page.setViewportSize({ width: 1280, height: 800 });

    // The charts read out each day from the keyboard.
    await page.goto('/');
    const chart = page.getByRole('group', { name: /Spend per day/ });
    await chart.focus();
    await page.keyboard.press('End');
    const today = await waitForText(page.locator('.chart-readout').first(), /₹/);
    t.match(today, /openai\/gpt-4o-mini ₹/, 'the last day: its spend by model');
    await page.keyboard.press('ArrowLeft');
    t.not(await page.locator('.chart-readout').first().textContent(), today, '← moves to the day before');
  });

  await t.test('no script errors and no CSP violations on any page', async (t) => {
    for (const { problems, who } of pages) {
      t.same(problems.errors, [], `${who}: no uncaught errors`);
      t.same(problems.cspViolations, [], `${who}: nothing blocked by the Content-Security-Policy`);
    }
  });
});

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];
