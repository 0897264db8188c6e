import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';

/** Helpers for the dashboard's browser tests: find Chromium, watch pages, take screenshots. */

export const SCREENSHOT_DIR = join(dirname(fileURLToPath(import.meta.url)), 'screenshots');

/** The Chromium to drive: CHROMIUM_PATH, else Debian's package (`apt-get install chromium`). Never a downloaded browser. */
export function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  return candidates.find((path): path is string => Boolean(path) && existsSync(path as string));
}

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 375, height: 812 };

/** What went wrong in a page that no assertion looked at: script errors and CSP violations. */
export interface PageProblems {
  errors: string[];
  cspViolations: string[];
}

export function watch(page: Page): PageProblems {
  const problems: PageProblems = { errors: [], cspViolations: [] };
  page.on('pageerror', (error) => problems.errors.push(error.message));
  page.on('console', (message) => {
    const text = message.text();
    if (/Content Security Policy/i.test(text)) problems.cspViolations.push(text);
  });
  return problems;
}

/**
 * Writes `<name>-desktop.png` (1280×800) and `<name>-phone.png` (375×812), full page, to
 * test/dashboard/screenshots/, then puts the desktop size back.
 */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.setViewportSize(DESKTOP);
  await settle(page);
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-desktop.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  await settle(page);
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-phone.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
}

/** Two animation frames: React has committed and the chart has redrawn at the new width. */
async function settle(page: Page): Promise<void> {
  await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
}

/** Polls until the locator's text contains `expected` (or matches it), up to `timeout` ms. */
export async function waitForText(locator: Locator, expected: string | RegExp, timeout = 10_000): Promise<string> {
  const deadline = Date.now() + timeout;
  let last = '';
  for (;;) {
    last = (await locator.first().textContent({ timeout: Math.max(1, deadline - Date.now()) }).catch(() => '')) ?? '';
    if (typeof expected === 'string' ? last.includes(expected) : expected.test(last)) return last;
    if (Date.now() > deadline) throw new Error(`waited ${timeout} ms for ${String(expected)}; the text was: ${last.slice(0, 400)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Form controls without an accessible label (a <label>, aria-label or aria-labelledby). */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(`(() => {
    const out = [];
    for (const el of document.querySelectorAll('input, select, textarea')) {
      if (el.type === 'hidden') continue;
      const labelled = (el.labels && el.labels.length > 0) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
      if (!labelled) out.push(el.outerHTML.slice(0, 120));
    }
    return out;
  })()`);
}

export async function newContext(browser: Browser, baseURL: string): Promise<BrowserContext> {
  return browser.newContext({ baseURL, viewport: DESKTOP, acceptDownloads: true, permissions: ['clipboard-read', 'clipboard-write'], locale: 'en-IN', timezoneId: 'Asia/Kolkata' });
}
