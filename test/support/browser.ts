/// <reference lib="dom" />
/**
 * Headless Chromium driven by playwright-core, as the browser tests use it: the Chromium shipped
 * inside the npm package `@sparticuz/chromium` (a dev dependency; unpacked once to the temporary
 * folder), or the browser at CHROMIUM_PATH. Never one downloaded at run time.
 */
import fs from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

async function chromiumPath(): Promise<string> {
  const given = process.env.CHROMIUM_PATH;
  if (given) {
    if (!fs.existsSync(given)) throw new Error(`CHROMIUM_PATH names ${given}, which does not exist`);
    return given;
  }
  // its own launch flags are for serverless hosts (web security off, one process): only the binary is used
  const packaged = (await import('@sparticuz/chromium')).default;
  return packaged.executablePath();
}

/** Starts headless Chromium. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: await chromiumPath(),
    args: [
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

/**
 * Collects what the pages' Content-Security-Policy blocks (an inline style, a script from
 * elsewhere), as `path: directive`, on every page the context or page loads from now on.
 */
export async function watchBlocked(target: BrowserContext | Page): Promise<string[]> {
  const blocked: string[] = [];
  await target.exposeBinding('reportBlocked', (_source, what: string) => void blocked.push(what));
  await target.addInitScript(() => {
    document.addEventListener(
      'securitypolicyviolation',
      (e) =>
        void (window as unknown as { reportBlocked: (w: string) => void }).reportBlocked(
          `${location.pathname}: ${e.violatedDirective} at line ${e.lineNumber}`,
        ),
    );
  });
  return blocked;
}

/**
 * Closes a page once no navigation is committing: Chromium acknowledges a close that races a
 * navigation commit without closing the page, and `page.close()` then waits forever
 * (crbug.com/536385539, microsoft/playwright#42366). Waiting for the page's load first avoids it.
 */
export async function closePage(page: Page): Promise<void> {
  await page.waitForLoadState('load').catch(() => undefined);
  await page.close();
}
