/// <reference lib="dom" />
/**
 * Headless Chromium for the console's end-to-end tests: Debian's /usr/bin/chromium driven by
 * playwright-core (never a browser download), with the flags this machine needs (no background
 * networking: the closed network refuses it). Screenshots go to test-results/console/, and with
 * AX_SCREENSHOTS_DIR set (docs/images/console to refresh the docs' pictures) there as well.
 */
import {copyFileSync, existsSync, mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {type Browser, chromium, type Page} from 'playwright-core';

export const CHROMIUM = process.env.AX_TEST_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = 'test-results/console';

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (bash scripts/tools.sh does, as root)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A full-page screenshot named `name`.png (see the module comment for where it goes). */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SHOTS, {recursive: true});
  const file = join(SHOTS, `${name}.png`);
  await page.screenshot({path: file, fullPage: true});
  const docs = process.env.AX_SCREENSHOTS_DIR;
  if (docs) {
    mkdirSync(docs, {recursive: true});
    copyFileSync(file, join(docs, `${name}.png`));
  }
  return file;
}

/**
 * The page's focus order from the top: each Tab's focused element (tag and accessible name), until
 * focus comes back to the first one or `max` steps. Call it on a freshly loaded page: Chromium
 * starts Tab from the last focused element otherwise, even after a blur.
 */
export async function focusOrder(page: Page, max = 200): Promise<Array<{tag: string; name: string}>> {
  const out: Array<{tag: string; name: string}> = [];
  let first: string | null = null;
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const f = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el || el === document.body) return null;
      const labelled = el.getAttribute('aria-label') ?? (el.id ? document.querySelector(`label[for="${el.id}"]`)?.textContent : null);
      const wrapped = el.closest('label')?.textContent;
      const name = (labelled ?? wrapped ?? el.textContent ?? el.getAttribute('title') ?? '').trim();
      const key = `${el.tagName}|${name}|${el.outerHTML.length}|${Array.from(el.parentElement?.children ?? []).indexOf(el)}`;
      return {tag: el.tagName.toLowerCase(), name, key};
    });
    if (!f) continue;
    if (first === null) first = f.key;
    else if (f.key === first) break;
    out.push({tag: f.tag, name: f.name});
  }
  return out;
}
