// A real browser for the dashboard's tests: Debian's Chromium (npm run setup:browser) driven by
// playwright-core, which downloads no browser of its own, with a fresh profile each time and the
// flags that keep it off the network (it needs only loopback). Every page it opens is watched:
// a Content-Security-Policy violation, an uncaught error or a request to any other origin than
// the service's is recorded, for the test to assert there were none. Screenshots go to
// test-output/dashboard/ (gitignored), kept as the test's output.
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { projectPath } from '../../src/paths.js';

export const CHROMIUM = process.env.SWITCHYARD_CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS_DIR = projectPath('test-output', 'dashboard');

/** What a page did that it must not. */
export interface PageTrouble {
  csp: string[];
  errors: string[];
  foreign: string[];
}

export interface TestBrowser {
  context: BrowserContext;
  trouble: PageTrouble;
  page(viewport: { width: number; height: number }): Promise<Page>;
  shot(page: Page, name: string): Promise<string>;
}

export async function openBrowser(t: ExecutionContext, origin: string): Promise<TestBrowser> {
  try {
    accessSync(CHROMIUM, constants.X_OK);
  } catch {
    throw new Error(`the dashboard's browser test needs Chromium at ${CHROMIUM}: npm run setup:browser (.ci/run does), or set SWITCHYARD_CHROMIUM`);
  }
  const profile = mkdtempSync(join(tmpdir(), 'switchyard-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
  });
  t.teardown(async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  });
  const trouble: PageTrouble = { csp: [], errors: [], foreign: [] };
  const watch = (page: Page) => {
    page.setDefaultTimeout(20_000);
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) trouble.csp.push(m.text());
    });
    page.on('pageerror', (e) => trouble.errors.push(e.message));
    page.on('request', (r) => {
      const url = r.url();
      if (!url.startsWith(`${origin}/`) && !url.startsWith('data:')) trouble.foreign.push(url);
    });
  };
  for (const p of context.pages()) watch(p);
  context.on('page', watch);
  mkdirSync(SHOTS_DIR, { recursive: true });
  return {
    context,
    trouble,
    async page(viewport) {
      const page = context.pages().find((p) => p.url() === 'about:blank') ?? (await context.newPage());
      await page.setViewportSize(viewport);
      return page;
    },
    async shot(page, name) {
      const file = join(SHOTS_DIR, `${name}.png`);
      // From the top, so that the sticky header is where a person sees it.
      await page.evaluate('window.scrollTo(0, 0)');
      await page.screenshot({ path: file, fullPage: true });
      t.log(`screenshot: ${file}`);
      return file;
    },
  };
}

/** Tabs through the page until `done` holds for the focused element; fails after `max` presses. */
export async function tabTo(page: Page, done: () => Promise<boolean>, max = 80): Promise<number> {
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press('Tab');
    if (await done()) return i;
  }
  throw new Error(`not reached by ${max} presses of Tab`);
}
