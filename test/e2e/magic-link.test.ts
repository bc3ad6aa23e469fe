/// <reference lib="dom" />
/**
 * The whole path a recipient takes, in headless Chromium (Debian's, driven by playwright-core):
 * open the link from the e-mail, ask for a code, type it, see the document drawn by pdf.js, use
 * up the views, see the page that says the link is gone.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { closePage, launchChromium, watchBlocked } from '../support/browser';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { codeIn, linkIn, startSmtp, type Mailbox } from '../support/smtp';
import { testService, type TestService } from '../support/service';
import { FakeClock } from '../../src/clock';
import { VIEW_MS } from '../../src/links';
import { PAGE_IMAGE_WIDTH } from '../../src/templates/viewcopy';
import { readPdf } from '../support/pdf';
import { eventually } from '../support/eventually';

const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('a recipient in a browser', () => {
  let t: TestService;
  let mail: Mailbox;
  let browser: Browser;
  let base: string;
  // the service's time, moved on by the test (cookies keep the browser's own time)
  const clock = new FakeClock(new Date());

  beforeAll(async () => {
    mail = await startSmtp();
    t = await testService({ clock, config: { smtpUrl: mail.url } });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    await t.service.apps.magicLink.put({
      public_url: base,
      organization_name: 'Acme Clinic',
      sender_name: 'Dana Reyes',
      accent_color: '#0B6E4F',
    });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    await mail?.close();
  });

  async function share(to: string, views: number, more: Record<string, unknown> = {}): Promise<string> {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': t.key },
      payload: {
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: postcard,
        destinations: {
          inkit_storage: { name: 'Your postcard proof' },
          magic_link: { recipient_email: to, expire_after_n_views: views, ...more },
        },
      },
    });
    expect(res.statusCode).toBe(201);
    return linkIn(await mail.next(to));
  }

  it('opens the e-mailed link, proves the address with a code, sees the document until the views run out', async () => {
    const url = await share('pat@example.com', 2);
    const openedAt = async () =>
      (
        await t.service.database.db
          .selectFrom('magic_links')
          .select('opened_at')
          .where('auth_email', '=', 'pat@example.com')
          .executeTakeFirstOrThrow()
      ).opened_at;
    // a mail scanner fetches every link in the e-mail first
    expect((await fetch(url, { headers: { 'user-agent': 'Mimecast-LinkScanner/1.0' } })).status).toBe(200);
    const page = await browser.newPage();
    const blocked = await watchBlocked(page);
    try {
      const first = await page.goto(url);
      expect(await openedAt()).toBeNull();
      // not framable, sends no referrer (the URL holds the token), scripts only from the service
      expect(first?.headers()).toMatchObject({ 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer' });
      expect(first?.headers()['content-security-policy']).toContain("script-src 'self'");
      await expect(page.getByRole('heading', { name: 'Your postcard proof' }).isVisible()).resolves.toBe(true);
      // the organisation's accent colour reaches the page
      await expect(
        page.getByRole('button', { name: 'E-mail me a code' }).evaluate((b) => getComputedStyle(b).backgroundColor),
      ).resolves.toBe('rgb(11, 110, 79)');
      const before = mail.messages.length;
      await page.getByRole('button', { name: 'E-mail me a code' }).click();
      const code = codeIn(await mail.next('pat@example.com', before));
      await page.getByLabel('Code').fill(code);
      await page.getByRole('button', { name: 'Show the document' }).click();
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      const pages = await page.locator('#pages canvas').count();
      expect(pages).toBe(2); // the postcard: front and back
      // pdf.js drew something: the canvas is not blank
      const inked = await page
        .locator('#pages canvas')
        .first()
        .evaluate((c: HTMLCanvasElement) => {
          const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
          let dark = 0;
          for (let i = 0; i < d.length; i += 4 * 97) if (d[i] < 200) dark++;
          return dark;
        });
      expect(inked).toBeGreaterThan(50);
      await expect(page.getByText('View 1 of 2', { exact: false }).isVisible()).resolves.toBe(true);
      // opened when the recipient first saw it, not when the scanner or the sign-in page fetched it
      expect(await openedAt()).toBe(clock.now().toISOString());
      const download = await page.getByRole('link', { name: 'Download PDF' }).getAttribute('href');
      expect(download).toMatch(/document\.pdf\?download=1$/);

      // a reload within the view is the same view; after it, the next view
      await page.reload();
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      await expect(page.getByText('View 1 of 2', { exact: false }).isVisible()).resolves.toBe(true);
      clock.advance(VIEW_MS);
      await page.reload();
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      await expect(page.getByText('View 2 of 2', { exact: false }).isVisible()).resolves.toBe(true);
      clock.advance(VIEW_MS);

      const gone = await page.goto(url);
      expect(gone?.status()).toBe(404);
      await expect(page.getByRole('heading', { name: 'This link is no longer available' }).isVisible()).resolves.toBe(
        true,
      );
      expect(gone?.headers()['x-frame-options']).toBe('DENY');
      expect(blocked).toEqual([]);
    } finally {
      await closePage(page);
    }
  });

  it("shows the link's end in the recipient's own time zone, and the UTC time as its tooltip", async () => {
    const url = await share('tokyo@example.com', 3);
    const context = await browser.newContext({ timezoneId: 'Asia/Tokyo', locale: 'en-US' });
    const page = await context.newPage();
    try {
      await page.goto(url);
      const before = mail.messages.length;
      await page.getByRole('button', { name: 'E-mail me a code' }).click();
      await page.getByLabel('Code').fill(codeIn(await mail.next('tokyo@example.com', before)));
      await page.getByRole('button', { name: 'Show the document' }).click();
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      const time = page.locator('time[datetime]');
      const iso = (await time.getAttribute('datetime'))!;
      // the 10-day cap of a view limit, 9 hours ahead in Tokyo
      const tokyo = new Date(Date.parse(iso) + 9 * 3600 * 1000);
      const text = (await time.textContent())!;
      expect(text).toContain('GMT+9');
      // the year is left out when it is this year's
      if (tokyo.getUTCFullYear() !== new Date().getFullYear()) expect(text).toContain(String(tokyo.getUTCFullYear()));
      expect(text).toMatch(
        new RegExp(`\\b${((tokyo.getUTCHours() + 11) % 12) + 1}:${String(tokyo.getUTCMinutes()).padStart(2, '0')}\\b`),
      );
      expect(await time.getAttribute('title')).toBe(`${iso.replace('T', ' ').slice(0, 16)} UTC`);
    } finally {
      await context.close();
    }
  });

  /** Opens the link (in a fresh page unless given one) and signs in with the e-mailed code, up to the drawn document. */
  async function signedIn(url: string, to: string, given?: Page, { drawn = true } = {}) {
    const page = given ?? (await browser.newPage());
    await page.goto(url);
    const before = mail.messages.length;
    await page.getByRole('button', { name: 'E-mail me a code' }).click();
    await page.getByLabel('Code').fill(codeIn(await mail.next(to, before)));
    await page.getByRole('button', { name: 'Show the document' }).click();
    if (drawn) await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
    return page;
  }

  it('says who shared it and what they wrote, and pages, zooms and jumps by thumbnail with buttons and keys', async () => {
    const message = 'Here is the proof.\nCall me with any changes.';
    const url = await share('vic@example.com', 2, { message });
    const context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
    const page = await context.newPage();
    try {
      await page.goto(url);
      await expect(page.locator('.from').textContent()).resolves.toContain('Dana Reyes at Acme Clinic');
      await signedIn(url, 'vic@example.com', page);
      if (process.env.VIEWER_SHOTS) await page.screenshot({ path: `${process.env.VIEWER_SHOTS}/desktop.png` });
      await expect(page.locator('.from').textContent()).resolves.toContain('Dana Reyes at Acme Clinic');
      // the sender's words as written: text, line break kept, no markup made of them
      expect(await page.locator('blockquote.message').innerText()).toBe(message);
      // the brand's icon (the default install's: Paperlink's)
      const icon = await page.locator('link[rel="icon"]').getAttribute('href');
      expect(await page.evaluate(async (u) => (await fetch(u)).headers.get('content-type'), icon!)).toBe(
        'image/svg+xml',
      );

      const number = page.getByLabel('Page number');
      const top = (n: number) =>
        page.locator(`#pages [data-page="${n}"]`).evaluate((el) => Math.round(el.getBoundingClientRect().top));
      expect(await number.inputValue()).toBe('1');
      await expect(page.getByRole('button', { name: 'Previous page' }).isDisabled()).resolves.toBe(true);
      await page.getByRole('button', { name: 'Next page' }).click();
      expect(await number.inputValue()).toBe('2');
      // page 2 is at the top of the window, below the toolbar
      const below = (await page.getByRole('toolbar', { name: 'Document' }).boundingBox())!;
      expect(Math.abs((await top(2)) - (below.y + below.height))).toBeLessThan(40);
      await expect(page.getByRole('button', { name: 'Next page' }).isDisabled()).resolves.toBe(true);
      // the keys act where the focus is on the document, and nowhere else
      await page.keyboard.press('ArrowLeft');
      expect(await number.inputValue()).toBe('2');
      await page.locator('#pages').focus();
      await page.keyboard.press('ArrowLeft');
      expect(await number.inputValue()).toBe('1');
      await number.fill('2');
      await number.press('Enter');
      expect(await number.inputValue()).toBe('2');

      // zoom: in a step, out a step, and back to the width of the window
      const width = () => page.locator('#pages [data-page="1"]').evaluate((el) => el.getBoundingClientRect().width);
      const fit = await width();
      await page.getByRole('button', { name: 'Zoom in' }).click();
      await expect(page.locator('#zoom').textContent()).resolves.toBe('125%');
      expect(await width()).toBeCloseTo(fit * 1.25, 0);
      await page.locator('#pages').click();
      await page.keyboard.press('-');
      await page.keyboard.press('-');
      await expect(page.locator('#zoom').textContent()).resolves.toBe('75%');
      await page.keyboard.press('0');
      await expect(page.locator('#zoom').textContent()).resolves.toBe('100%');
      expect(await width()).toBeCloseTo(fit, 0);
      await page.getByRole('button', { name: 'Zoom in' }).click();
      await page.getByRole('button', { name: 'Fit to width' }).click();
      expect(await width()).toBeCloseTo(fit, 0);
      // zoomed wider than the window, the arrows pan the page instead of turning it
      for (let i = 0; i < 4; i++) await page.getByRole('button', { name: 'Zoom in' }).click();
      await expect(page.locator('#zoom').textContent()).resolves.toBe('300%');
      await page.locator('#pages').focus();
      const at = await number.inputValue();
      await page.keyboard.press('ArrowRight');
      expect(await number.inputValue()).toBe(at);
      // (the browser's own scrolling, smooth: it gets there)
      await eventually(
        async () => (await page.locator('#pages').evaluate((el) => el.scrollLeft)) > 0,
        'the arrow panned the zoomed page',
      );
      await page.keyboard.press('0');

      // thumbnails: one per page, drawn, the page shown marked; a click goes to its page
      const thumbs = page.getByRole('navigation', { name: 'Pages' }).getByRole('button');
      expect(await thumbs.count()).toBe(2);
      await page.getByRole('button', { name: 'Page 1', exact: true }).click();
      expect(await number.inputValue()).toBe('1');
      await expect(
        page.getByRole('button', { name: 'Page 1', exact: true }).getAttribute('aria-current'),
      ).resolves.toBe('true');
      expect(await page.getByRole('button', { name: 'Page 2', exact: true }).getAttribute('aria-current')).toBeNull();
      await page.getByRole('button', { name: 'Pages', exact: true }).click();
      expect(await page.getByRole('navigation', { name: 'Pages' }).isVisible()).toBe(false);
    } finally {
      await context.close();
    }
  });

  it('on a phone, keeps the thumbnails behind the Pages button and scrolls nothing sideways', async () => {
    const url = await share('phone@example.com', 2, { message: 'A long message '.repeat(20) });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    try {
      await signedIn(url, 'phone@example.com', page);
      if (process.env.VIEWER_SHOTS) await page.screenshot({ path: `${process.env.VIEWER_SHOTS}/phone.png` });
      const toggle = page.getByRole('button', { name: 'Pages', exact: true });
      await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('false');
      expect(await page.getByRole('navigation', { name: 'Pages' }).isVisible()).toBe(false);
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(
        0,
      );
      // open, the focus is in them; Escape closes them and gives it back
      await toggle.click();
      await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('true');
      expect(await page.evaluate(() => document.activeElement?.closest('#thumbs') !== null)).toBe(true);
      await page.keyboard.press('Escape');
      await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('false');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('thumbs-toggle');
      await toggle.click();
      // choosing a page closes them again
      await page.getByRole('button', { name: 'Page 2', exact: true }).click();
      expect(await page.getByLabel('Page number').inputValue()).toBe('2');
      expect(await page.getByRole('navigation', { name: 'Pages' }).isVisible()).toBe(false);
    } finally {
      await context.close();
    }
  });

  it("with JavaScript off, signs in and opens the PDF in the browser's own viewer", async () => {
    const url = await share('nojs@example.com', 2);
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    try {
      // the sign-in pages are forms: they need no script
      await signedIn(url, 'nojs@example.com', page, { drawn: false });
      // the controls need the script: they are not offered
      expect(await page.getByRole('toolbar', { name: 'Document' }).isVisible()).toBe(false);
      const open = page.getByRole('link', { name: 'Open the PDF' });
      await expect(open.isVisible()).resolves.toBe(true);
      const pdf = await context.request.get(new URL((await open.getAttribute('href'))!, url).href);
      expect(pdf.status()).toBe(200);
      expect(pdf.headers()['content-type']).toBe('application/pdf');
      await expect(page.getByRole('link', { name: 'Download PDF' }).isVisible()).resolves.toBe(true);
    } finally {
      await context.close();
    }
  });

  it('reads the watermark, filled in for the viewer, in the PDF the viewer draws and downloads', async () => {
    const url = await share('wanda@example.com', 2, { watermark: { text: 'Confidential: {{email}}' } });
    const page = await signedIn(url, 'wanda@example.com');
    try {
      // what pdf.js drew and what the download button gets: the PDF the browser fetched, with the page's cookie
      const href = await page.getByRole('link', { name: 'Download PDF' }).getAttribute('href');
      const bytes = await page.evaluate(async (u) => [...new Uint8Array(await (await fetch(u)).arrayBuffer())], href!);
      const read = await readPdf(new Uint8Array(bytes));
      expect(read.pages.map((p) => p.text.includes('Confidential: wanda@example.com'))).toEqual([true, true]);
    } finally {
      await closePage(page);
    }
  });

  it('without downloads shows the pages as images, with no download button and no PDF to fetch', async () => {
    const url = await share('dora@example.com', 2, { allow_download: false, watermark: { text: '{{email}}' } });
    const page = await signedIn(url, 'dora@example.com');
    const pdfs: string[] = [];
    page.on('response', (r) => {
      if (r.headers()['content-type']?.includes('application/pdf')) pdfs.push(r.url());
    });
    try {
      await page.reload();
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      const images = page.locator('#pages img');
      expect(await images.count()).toBe(2);
      await expect(page.getByRole('img', { name: 'Page 2 of 2' }).isVisible()).resolves.toBe(true);
      // drawn: the images have their size
      expect(await images.first().evaluate((i: HTMLImageElement) => i.naturalWidth)).toBe(PAGE_IMAGE_WIDTH);
      expect(await page.getByRole('link', { name: 'Download PDF' }).count()).toBe(0);
      const status = await page.evaluate(async () => {
        const at = location.pathname;
        return Promise.all(
          [`${at}/document.pdf`, `${at}/document.pdf?download=1`].map(async (u) => (await fetch(u)).status),
        );
      });
      expect(status).toEqual([404, 404]);
      expect(pdfs).toEqual([]);
    } finally {
      await closePage(page);
    }
  });

  it('lets a colleague the link allows sign in with their own address', async () => {
    const url = await share('lead@example.com', 2, { allowed_viewers: ['@studio.example'] });
    const page = await browser.newPage();
    try {
      await page.goto(url);
      await page.getByLabel('Your e-mail address').fill('someone@elsewhere.example');
      await page.getByRole('button', { name: 'E-mail me a code' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toContain('cannot open this document');
      const before = mail.messages.length;
      await page.getByLabel('Your e-mail address').fill('Kim@Studio.example');
      await page.getByRole('button', { name: 'E-mail me a code' }).click();
      await expect(page.getByText('We e-mailed a 6-digit code to kim@studio.example').isVisible()).resolves.toBe(true);
      await page.getByLabel('Code').fill(codeIn(await mail.next('kim@studio.example', before)));
      await page.getByRole('button', { name: 'Show the document' }).click();
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      await expect(page.getByText('View 1 of 2', { exact: false }).isVisible()).resolves.toBe(true);
    } finally {
      await closePage(page);
    }
  });

  it('reports the time on each page as the recipient reads, in the browser, to the link page figures', async () => {
    const url = await share('reader@example.com', 2, { allow_download: false });
    const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
    const page = await context.newPage();
    try {
      // the page's time is the test's: it moves only when told to
      await page.clock.install();
      await signedIn(url, 'reader@example.com', page);
      await page.clock.pauseAt((await page.evaluate(() => Date.now())) + 1000);
      // page 1 in the middle of the window for 5 s, then page 2 for 4 s (the tick after scrolling counts for page 1)
      await page.clock.runFor(5000);
      await page.locator('img[data-page="2"]').evaluate((img) => img.scrollIntoView({ block: 'center' }));
      await page.clock.runFor(5000);
      // leaving the page sends what was not sent yet
      await page.goto('about:blank');
      const id = (
        await t.service.database.db
          .selectFrom('magic_links')
          .select('id')
          .where('recipient_email', '=', 'reader@example.com')
          .executeTakeFirstOrThrow()
      ).id;
      const pageTime = async (n: number) =>
        (await t.service.links.viewers(id))[0]?.pages.find((p) => p.page === n)?.seconds;
      await eventually(async () => (await pageTime(2)) !== undefined, 'the page times arrived');
      // page 2: exactly the four ticks of the paused clock; page 1: its six, and what passed before the pause
      expect(await pageTime(2)).toBe(4);
      expect(await pageTime(1)).toBeGreaterThanOrEqual(6);
      expect(await pageTime(1)).toBeLessThan(9);
    } finally {
      await context.close();
    }
  });

  it('fits a phone screen and tells the recipient when the code is wrong', async () => {
    const url = await share('sam@example.com', 1);
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    try {
      await page.goto(url);
      await page.getByRole('button', { name: 'E-mail me a code' }).click();
      await page.getByLabel('Code').fill('000000');
      await page.getByRole('button', { name: 'Show the document' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toContain('not right');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
    } finally {
      await context.close();
    }
  });
});
