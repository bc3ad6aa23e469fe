/// <reference lib="dom" />
/**
 * Every page a person meets — the operator's web app and the recipient's link pages — checked in
 * headless Chromium by axe-core (the npm package, WCAG 2.1 A and AA rules) at a desktop width
 * (1280 px) and a phone's (390 px): no serious or critical violation, and nothing a table holds
 * cut off at the phone's width.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { closePage, launchChromium } from '../support/browser';
import { root } from '../support/fixtures';
import { eventually } from '../support/eventually';
import { codeIn, linkIn, startSmtp, type Mailbox } from '../support/smtp';
import { testService, type TestService } from '../support/service';

const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;
const WIDTHS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
];

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** The serious and critical WCAG A/AA violations on the page as it is now, one line each. */
async function violations(page: Page): Promise<string[]> {
  // evaluated through the DevTools protocol: the page's Content-Security-Policy does not apply to it
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<{ violations: unknown[] }> } })
      .axe;
    const r = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    });
    return r.violations;
  });
  return (found as Violation[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) =>
      v.nodes.map(
        (n) =>
          `${v.id} (${v.impact}) at ${n.target.join(' ')}: ${(n.failureSummary ?? v.help).split('\n').slice(0, 2).join(' ')}`,
      ),
    );
}

describe('every page meets WCAG 2.1 AA (axe-core) at 1280 and 390 px', () => {
  let t: TestService;
  let mail: Mailbox;
  let browser: Browser;
  let base: string;
  let documentId: string;
  let postcardId: string;
  let linkUrl: string;
  let recipient: string;

  beforeAll(async () => {
    mail = await startSmtp();
    t = await testService({ config: { smtpUrl: mail.url } });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    await t.service.apps.magicLink.put({ public_url: base, organization_name: 'Acme Clinic' });
    recipient = 'robin@example.com';
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': t.key },
      payload: {
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: postcard,
        destinations: {
          inkit_storage: { name: 'Postcard for Jordan' },
          magic_link: { recipient_email: recipient, expire_after_n_views: 5, retain_from_created: { days: 2 } },
        },
      },
    });
    documentId = made.json().document_id as string;
    linkUrl = linkIn(await mail.next(recipient));
    const token = (await t.service.keys.create('postcard', 'website form')).secret;
    const sent = await t.app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { ...postcard, api_token: token, template_id: EXAMPLE_IDS.postcard },
    });
    postcardId = sent.json().id as string;
    await eventually(async () => (await t.service.postcards.get(postcardId)).status === 'rendered', 'rendered', 30);
    browser = await launchChromium();
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    await mail?.close();
  });

  async function operatorContext(viewport: { width: number; height: number }): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    await page.goto(`${base}/app/signin`);
    expect((await violations(page)).join('\n')).toBe('');
    await page.getByLabel(/API key/).fill(t.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => u.pathname !== '/app/signin');
    await closePage(page);
    return context;
  }

  const operatorPages = () => [
    '/app/templates',
    '/app/templates/gallery',
    `/app/templates/${EXAMPLE_IDS.letter}/preview`,
    `/app/templates/${EXAMPLE_IDS.letter}/edit`,
    '/app/generate',
    `/app/generate?template_id=${EXAMPLE_IDS.letter}`,
    '/app/documents',
    `/app/documents/${documentId}`,
    '/app/links',
    '/app/postcards',
    `/app/postcards/${postcardId}`,
    '/app/settings',
  ];

  it.each(WIDTHS)(
    'the web app at $width px',
    async (viewport) => {
      const context = await operatorContext(viewport);
      const page = await context.newPage();
      const found: string[] = [];
      for (const url of operatorPages()) {
        await page.goto(`${base}${url}`);
        await page.waitForLoadState('load');
        found.push(...(await violations(page)).map((v) => `${url}: ${v}`));
      }
      expect(found.join('\n')).toBe('');
      await closePage(page);
      await context.close();
    },
    120_000,
  );

  it('shows each link whole at 390 px: its status and views are on the screen', async () => {
    const context = await operatorContext({ width: 390, height: 844 });
    const page = await context.newPage();
    for (const [url, selector] of [
      ['/app/links', '[data-link] [data-status], [data-link] [data-views]'],
      [`/app/documents/${documentId}`, '[data-link] .badge, [data-link] [data-views-used]'],
    ]) {
      await page.goto(`${base}${url}`);
      const cells = page.locator(selector);
      expect(await cells.count()).toBeGreaterThan(0);
      for (const cell of await cells.all()) {
        const box = (await cell.boundingBox())!;
        expect({ url, left: box.x >= 0, right: box.x + box.width <= 390 }).toEqual({ url, left: true, right: true });
      }
    }
    await closePage(page);
    await context.close();
  }, 60_000);

  it.each(WIDTHS)(
    "the recipient's pages at $width px",
    async (viewport) => {
      const context = await browser.newContext({ viewport });
      context.setDefaultTimeout(15_000);
      const page = await context.newPage();
      const found: string[] = [];
      const check = async (what: string) => found.push(...(await violations(page)).map((v) => `${what}: ${v}`));
      await page.goto(linkUrl);
      await check('sign-in');
      const before = mail.messages.length;
      await page.getByRole('button', { name: /E-mail me a code/ }).click();
      await page.waitForURL((u) => u.searchParams.get('sent') === '1');
      await check('code entry');
      await page.getByLabel(/code/i).fill(codeIn(await mail.next(recipient, before)));
      await page.getByRole('button', { name: 'Show the document' }).click();
      await page.waitForSelector('body[data-rendered="true"], [data-pdf]', { timeout: 30_000 });
      await check('document');
      await page.goto(`${base}/l/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`);
      await check('unavailable');
      expect(found.join('\n')).toBe('');
      await closePage(page);
      await context.close();
    },
    120_000,
  );
});
