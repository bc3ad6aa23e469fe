/// <reference lib="dom" />
/**
 * The operator's web app in headless Chromium (Debian's, driven by playwright-core), walked as an
 * operator would: sign in, upload a template, copy its id, generate a document with a Magic Link,
 * share an existing document, watch the views go up after the recipient opens it, expire it,
 * create and revoke keys and tokens, look at postcards. Each page is saved as a screenshot in
 * test-results/screenshots for a person to look at.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { closePage, launchChromium, watchBlocked } from '../support/browser';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { cli } from '../support/cli';
import { eventually } from '../support/eventually';
import { fillableForm, png, root } from '../support/fixtures';
import { codeIn, linkIn, startSmtp, type Mailbox } from '../support/smtp';
import { testService, type TestService } from '../support/service';

const SHOTS = path.join(root, 'test-results', 'screenshots');
const postcard = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

const TEMPLATE = `<?xml version="1.0" encoding="UTF-8"?>
<document name="Welcome note" size="a5">
  <body>
    <image src="logo.png" width="1.5in" alt="Logo"/>
    <p font-size="18"><b>Welcome, {{first_name}}</b></p>
    <p>Your plan: {{plan}}</p>
    <page-break/>
    <p>What comes next: a second page, so that the viewer reports time on two pages.</p>
  </body>
</document>
`;
const BROKEN = `<document name="Broken">
  <body>
    <p>Hello {{name}}</body>
</document>
`;

describe('the operator web app in a browser', () => {
  let t: TestService;
  let mail: Mailbox;
  let browser: Browser;
  let base: string;
  let operator: BrowserContext;
  let page: Page;
  const files = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-web-'));
  /** Everything the pages' Content-Security-Policy blocked, on any page of the walk (e.g. an inline style). */
  let blocked: string[];

  const shot = async (p: Page, name: string) => {
    await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };
  const api = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: { 'x-service-api-token': t.key },
      ...(payload ? { payload: payload } : {}),
    });

  beforeAll(async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    fs.writeFileSync(path.join(files, 'welcome.xml'), TEMPLATE);
    fs.writeFileSync(path.join(files, 'logo.png'), png);
    fs.writeFileSync(path.join(files, 'broken.xml'), BROKEN);
    fs.writeFileSync(path.join(files, 'membership.pdf'), await fillableForm());
    mail = await startSmtp();
    t = await testService({ config: { smtpUrl: mail.url } });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    await t.service.apps.magicLink.put({ public_url: base, organization_name: 'Acme Clinic' });
    browser = await launchChromium();
    operator = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await operator.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    operator.setDefaultTimeout(10_000);
    blocked = await watchBlocked(operator);
    page = await operator.newPage();
    page.on('dialog', (d) => void d.accept());
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    await mail?.close();
    fs.rmSync(files, { recursive: true, force: true });
  });

  async function signIn(p: Page, secret: string, at = '/app/templates') {
    await p.goto(`${base}${at}`);
    expect(new URL(p.url()).pathname).toBe('/app/signin');
    await p.getByLabel(/API key/).fill(secret);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL((u) => u.pathname === at);
  }

  it('sends a page without a session to the sign-in, refuses a wrong key, and comes back after signing in', async () => {
    const res = await page.goto(`${base}/app/documents`);
    expect(res?.status()).toBe(200);
    expect(new URL(page.url()).pathname).toBe('/app/signin');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/app/documents');
    await shot(page, '01-sign-in');
    await page.getByLabel(/API key/).fill('plk_notarealkey00000000000');
    const wrong = page.waitForResponse((r) => r.url().endsWith('/app/signin') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect((await wrong).status()).toBe(401);
    await expect(page.getByRole('alert').textContent()).resolves.toContain('not a live API key');
    await page.getByLabel(/API key/).fill(t.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => u.pathname === '/app/documents');
    const cookie = (await operator.cookies(`${base}/app`)).find((c) => c.name === 'paperlink_admin')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/app' });
  });

  let templateId: string;

  it('uploads a template with its image, shows line and column for a broken one, and copies the id', async () => {
    await page.goto(`${base}/app/templates`);
    await page.getByLabel('Template file').setInputFiles(path.join(files, 'broken.xml'));
    await page.getByRole('button', { name: 'Upload template' }).click();
    const alert = page.locator('.notice.error');
    await expect(alert.textContent()).resolves.toMatch(/line 3, column \d+/i);
    await shot(page, '02-templates-upload-error');

    await page.getByLabel('Template file').setInputFiles(path.join(files, 'welcome.xml'));
    await page.getByLabel(/Images, fonts and CSS/).setInputFiles(path.join(files, 'logo.png'));
    await page.getByRole('button', { name: 'Upload template' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'template_uploaded');
    const row = page.locator('tr', { hasText: 'Welcome note' });
    templateId = (await row.locator('code').first().textContent())!;
    expect(templateId).toMatch(/^tmpl_/);
    await expect(row.textContent()).resolves.toContain('first_name');
    await row.getByRole('button', { name: `Copy ${templateId}` }).click();
    await expect(page.evaluate(() => navigator.clipboard.readText())).resolves.toBe(templateId);
    await shot(page, '03-templates');
    // stored with its asset: the API renders it
    const gen = await api('POST', '/v1/generate', {
      template_id: templateId,
      merge_parameters: { first_name: 'Ann', plan: 'Gold' },
      destinations: { inkit_storage: { name: 'api copy' } },
    });
    expect(gen.statusCode).toBe(201);

    // a fillable PDF: named after the file, its fields are the variables
    await page.getByLabel('Template file').setInputFiles(path.join(files, 'membership.pdf'));
    await page.getByRole('button', { name: 'Upload template' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'template_uploaded');
    const pdfRow = page.locator('tr', { hasText: 'membership' });
    await expect(pdfRow.locator('td').first().textContent()).resolves.toMatch(/PDF · version 1 · added /);
    await expect(pdfRow.locator('.chip').allTextContents()).resolves.toEqual(['member_name', 'member_number']);

    await row.getByRole('link', { name: 'Preview of Welcome note' }).click();
    await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
    // both pages of the welcome note
    await expect(page.locator('#pages canvas').count()).resolves.toBe(2);
    await shot(page, '04-template-preview');

    // delete (the confirm dialog is accepted): gone from the list and from the API
    await page.goto(`${base}/app/templates`);
    const pdfId = (await page.locator('tr', { hasText: 'membership' }).locator('code').first().textContent())!;
    await page.locator('tr', { hasText: 'membership' }).getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'template_deleted');
    await expect(page.locator('tr', { hasText: 'membership' }).count()).resolves.toBe(0);
    expect((await api('GET', `/v1/templates/${pdfId}`)).statusCode).toBe(404);
  });

  let documentUrl: string;
  let shownUrl: string;

  it('generates a document with a Magic Link from the form, with the API rules on bad settings', async () => {
    await page.goto(`${base}/app/generate`);
    await page.getByLabel('Template').selectOption(templateId);
    await page.waitForURL((u) => u.searchParams.get('template_id') === templateId);
    await page.getByLabel('First name').fill('Robin');
    await page.getByLabel('plan').fill('Platinum');
    await page.getByLabel('Document name').fill('Welcome for Robin');
    await page.getByLabel('Share with a Magic Link').check();
    await page.getByLabel('Recipient Email').fill('robin@example.com');
    // no limit at all: the API's rule, shown on the form
    const refused = page.waitForResponse((r) => r.url().endsWith('/app/generate') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Generate document' }).click();
    expect((await refused).status()).toBe(422);
    // in the form's words, not the API's field names
    const said = (await page.locator('.notice.error').textContent())!;
    expect(said).toContain('Magic Link: Choose a limit: a number of views, a time, or both.');
    expect(said).not.toMatch(/expire_after_n_views|retain_from/);
    await expect(page.getByLabel('First name').inputValue()).resolves.toBe('Robin');
    // only the sign-in the Magic Link app allows (e-mailed codes here) can be chosen; Social is shown, not set up
    await expect(page.getByLabel('Email (a one-time code)').count()).resolves.toBe(1);
    await expect(page.getByLabel('Social (OpenID Connect sign-in)').isDisabled()).resolves.toBe(true);
    await shot(page, '05-generate-error');

    // Magic Links not set up: the form says what to do and keeps everything typed
    const stored = await t.service.database.db
      .selectFrom('settings')
      .selectAll()
      .where('key', '=', 'app:magic_link')
      .executeTakeFirstOrThrow();
    await t.service.database.db.deleteFrom('settings').where('key', '=', 'app:magic_link').execute();
    t.service.apps.magicLink.serverUrl = t.service.apps.magicLink.serverUrl; // forget the cached settings
    try {
      await page.getByLabel('Expire after N views').fill('3');
      const notSetUp = page.waitForResponse(
        (r) => r.url().endsWith('/app/generate') && r.request().method() === 'POST',
      );
      await page.getByRole('button', { name: 'Generate document' }).click();
      expect((await notSetUp).status()).toBe(422);
      await expect(page.locator('.notice.error').textContent()).resolves.toContain('Magic Links are not set up yet');
      await expect(page.getByLabel('First name').inputValue()).resolves.toBe('Robin');
      await expect(page.getByLabel('Recipient Email').inputValue()).resolves.toBe('robin@example.com');
      await expect(page.getByLabel('Expire after N views').inputValue()).resolves.toBe('3');
      await expect(page.getByLabel('Document name').inputValue()).resolves.toBe('Welcome for Robin');
    } finally {
      await t.service.database.db.insertInto('settings').values(stored).execute();
      t.service.apps.magicLink.serverUrl = t.service.apps.magicLink.serverUrl;
    }

    await page.getByLabel('Expire after N views').fill('3');
    await page.getByLabel('Expire after', { exact: true }).fill('2');
    await page.getByLabel('Unit').selectOption('days');
    await page.getByRole('button', { name: 'Generate document' }).click();
    await page.waitForURL((u) => u.pathname.startsWith('/app/documents/doc_'));
    documentUrl = page.url().split('?')[0];
    await expect(page.getByRole('heading', { name: 'Welcome for Robin' }).isVisible()).resolves.toBe(true);
    // the new link's URL, shown once with a copy button (the API shows it once too)
    const secret = page.locator('.notice.secret');
    await expect(secret.textContent()).resolves.toMatch(
      /Magic Link e-mailed to robin@example\.com[\s\S]*not shown again/,
    );
    shownUrl = (await secret.locator('[data-secret]').textContent())!;
    expect(shownUrl).toMatch(/^http:\/\/[^/]+\/l\/[A-Za-z0-9_-]{20,}$/);
    await expect(secret.getByRole('button', { name: /copy/i }).count()).resolves.toBe(1);
    await page.reload();
    await expect(page.locator('.notice.secret').count()).resolves.toBe(0);
    const card = page.locator('.link-card');
    await expect(card.count()).resolves.toBe(1);
    await expect(card.locator('.badge').textContent()).resolves.toBe('active');
    await expect(card.locator('[data-views-left]').textContent()).resolves.toBe('3');
    await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
    await shot(page, '06-document');

    const id = documentUrl.split('/').pop()!;
    const doc = (await api('GET', `/v1/documents/${id}`)).json();
    expect(doc).toMatchObject({ name: 'Welcome for Robin', template_id: templateId, created_by: { name: 'test key' } });
    expect(doc.magic_links[0]).toMatchObject({
      recipient_email: 'robin@example.com',
      expire_after_n_views: 3,
      retain_from_created: { days: 2 },
    });

    // the download button saves the stored PDF under the document's name
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download PDF' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('Welcome for Robin.pdf');
    const saved = fs.readFileSync(await download.path());
    expect(saved.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(saved.length).toBe(doc.size);
  });

  it('shows the views going up after the recipient opens the link, and expires it on request', async () => {
    const url = linkIn(await mail.next('robin@example.com'));
    // the URL the web app showed once is the one e-mailed
    expect(url).toBe(shownUrl);
    const recipient = await browser.newContext();
    try {
      const r = await recipient.newPage();
      await r.goto(url);
      const before = mail.messages.length;
      await r.getByRole('button', { name: 'E-mail me a code' }).click();
      await r.getByLabel('Code').fill(codeIn(await mail.next('robin@example.com', before)));
      await r.getByRole('button', { name: 'Show the document' }).click();
      await r.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      // the viewer's report of the time on each page (what its script sends every 15 s and on leaving)
      expect(
        await r.evaluate(async () => {
          const res = await fetch(`${location.pathname}/activity`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ pages: { '1': 12_000, '2': 3_000 } }),
          });
          return res.status;
        }),
      ).toBe(204);

      await page.goto(documentUrl);
      const card = page.locator('.link-card');
      await expect(card.locator('[data-views-used]').textContent()).resolves.toBe('1');
      await expect(card.locator('[data-views-left]').textContent()).resolves.toBe('2');
      await expect(card.locator('progress').evaluate((m: HTMLProgressElement) => [m.value, m.max])).resolves.toEqual([
        1, 3,
      ]);
      await card.locator('summary').click();
      await expect(card.locator('details table').textContent()).resolves.toContain('robin@example.com');
      // who viewed it, per person
      await expect(card.locator('[data-viewers] li').allTextContents()).resolves.toEqual([
        expect.stringMatching(/^robin@example\.com: 1 view, last \S.*, \d+ s reading$/),
      ]);
      // time per page as a small chart, its figures in its label and each bar's tooltip
      const chart = card.locator('svg.page-chart');
      await expect(chart.getAttribute('aria-label')).resolves.toMatch(/^Time per page: page 1 \d+ s, page 2 \d+ s$/);
      expect(Number(await chart.locator('g[data-page="1"]').getAttribute('data-seconds'))).toBeGreaterThanOrEqual(12);
      expect(Number(await chart.locator('g[data-page="2"]').getAttribute('data-seconds'))).toBeGreaterThanOrEqual(3);
      // the browser in words, not the raw user agent (which is the cell's tooltip)
      const log = (await card.locator('details table').textContent())!;
      expect(log).toMatch(/Chrome[\w ]* \d+ on Linux/);
      expect(log).not.toContain('Mozilla/5.0');
      // what ends it, in words, with its date (3 views, and the 10-day cap)
      await expect(card.locator('[data-rule]').textContent()).resolves.toMatch(/^3 views, until \S/);
      await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
      await shot(page, '07-document-viewed');

      await card.getByRole('button', { name: 'Expire link now' }).click();
      await page.waitForURL((u) => u.searchParams.get('done') === 'link_expired');
      await expect(page.locator('.link-card .badge').textContent()).resolves.toBe('revoked');
      // an ended link says why and when it ended, and no future date
      await expect(card.locator('[data-rule] [data-ended-reason]').getAttribute('data-ended-reason')).resolves.toBe(
        'revoked',
      );
      const endedAt = await card.locator('[data-rule] time').getAttribute('datetime');
      expect(Date.parse(endedAt!)).toBeLessThanOrEqual(Date.now());
      const gone = await r.goto(url);
      expect(gone?.status()).toBe(404);
    } finally {
      await recipient.close();
    }
  });

  it('shares an existing document with a new Magic Link from the document page', async () => {
    await page.goto(documentUrl);
    const form = page.locator('#share');
    await form.getByLabel('Recipient Email').fill('dana@example.com');
    await form.getByLabel('Authorization Email Address').fill('dana.auth@example.com');
    await form.getByLabel('Expire after', { exact: true }).fill('90');
    await form.getByLabel('Unit').selectOption('minutes');
    await form.getByLabel('Timer starts').selectOption('opened');
    // a watermark with a placeholder that does not exist: the form says which to use, and keeps what was typed
    await form.getByLabel('Watermark', { exact: true }).fill('For {{name}}');
    await form.getByLabel('Watermark position').selectOption('tiled');
    await form.getByLabel('Download').selectOption('off');
    await form.getByLabel('Also allowed').fill('kim@studio.example, @partner.example');
    await form.getByLabel('When it ends').check();
    await form.getByLabel('Remind the recipient').fill('2');
    await form.getByLabel('Message').fill('Your lease, as agreed.');
    await form.getByRole('button', { name: 'Share' }).click();
    await expect(page.locator('#share .err').first().textContent()).resolves.toContain('{{email}}');
    await expect(page.locator('#share').getByLabel('Download').inputValue()).resolves.toBe('off');
    await page.locator('#share').getByLabel('Watermark', { exact: true }).fill('For {{email}}');
    await page.locator('#share').getByRole('button', { name: 'Share' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'shared');
    await expect(page.locator('.notice.secret').textContent()).resolves.toContain('dana@example.com');
    await expect(page.locator('.notice.secret [data-secret]').textContent()).resolves.toMatch(
      /\/l\/[A-Za-z0-9_-]{20,}$/,
    );
    await expect(page.locator('.link-card').count()).resolves.toBe(2);
    await expect(
      page.locator('.link-card', { hasText: 'dana@example.com' }).locator('[data-shown]').textContent(),
    ).resolves.toMatch(/page images only[\s\S]*For \{\{email\}\}/);
    await expect(
      page.locator('.link-card', { hasText: 'dana@example.com' }).locator('[data-allowed]').textContent(),
    ).resolves.toBe('kim@studio.example, @partner.example');
    // what survived the refused first try: the boxes and fields as they were typed
    await expect(
      page.locator('.link-card', { hasText: 'dana@example.com' }).locator('[data-notices]').textContent(),
    ).resolves.toMatch(/end to the sender · reminder 2 hours before the end/);
    const message = await mail.next('dana@example.com');
    expect(linkIn(message)).toContain(`${base}/l/`);
    const links = (await api('GET', `/v1/documents/${documentUrl.split('/').pop()}`)).json().magic_links;
    expect(links.find((l: { recipient_email: string }) => l.recipient_email === 'dana@example.com')).toMatchObject({
      auth_email: 'dana.auth@example.com',
      retain_from_opened: { minutes: 90 },
      expire_after_n_views: null,
      watermark: { text: 'For {{email}}', position: 'tiled' },
      allow_download: false,
      allowed_viewers: ['kim@studio.example', '@partner.example'],
      notify_sender: { on_first_view: false, on_end: true, email: null },
      remind_before: { hours: 2 },
      message: 'Your lease, as agreed.',
    });
  });

  it('lists every Magic Link with what ends it, filters them, and expires several at once', async () => {
    // one more live link, to expire two together
    const docId = documentUrl.split('/').pop()!;
    expect(
      (
        await api('POST', `/v1/documents/${docId}/magic_links`, {
          recipient_email: 'lee@example.com',
          retain_from_created: { days: 2 },
        })
      ).statusCode,
    ).toBe(201);
    await page.goto(`${base}/app/links`);
    await expect(page.getByRole('link', { name: 'Magic Links' }).getAttribute('aria-current')).resolves.toBe('page');
    const row = (who: string) => page.locator('tr', { hasText: who });
    await expect(
      row('robin@example.com').locator('[data-rule] [data-ended-reason]').getAttribute('data-ended-reason'),
    ).resolves.toBe('revoked');
    await expect(row('robin@example.com').locator('[data-rule]').textContent()).resolves.toMatch(
      /^ended .+: it was revoked$/,
    );
    await expect(row('robin@example.com').locator('input[type=checkbox]').count()).resolves.toBe(0);
    await expect(row('robin@example.com').locator('[data-views]').textContent()).resolves.toBe('1 of 3');
    // viewed once: the last view has a time
    await expect(row('robin@example.com').locator('time').count()).resolves.toBeGreaterThan(0);
    await expect(row('dana@example.com').locator('[data-rule]').textContent()).resolves.toMatch(
      /^90 min after opening, open by \S/,
    );
    await expect(row('lee@example.com').locator('[data-rule]').textContent()).resolves.toMatch(/^until \S/);
    await shot(page, '08-magic-links');
    // the table fits a 1280 px window, as the templates table does
    for (const at of ['/app/links', '/app/templates']) {
      await page.goto(`${base}${at}`);
      const overflow = await page
        .locator('.card.scroll')
        .first()
        .evaluate((e) => e.scrollWidth - e.clientWidth);
      expect({ at, overflow }).toEqual({ at, overflow: 0 });
    }
    await page.goto(`${base}/app/links`);

    await page.getByPlaceholder('Recipient e-mail').fill('dana@example.com');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect(page.locator('tbody tr').count()).resolves.toBe(1);
    await page.goto(`${base}/app/links?status=active`);
    await expect(page.locator('tbody tr').count()).resolves.toBe(2);
    await row('dana@example.com').locator('input[type=checkbox]').check();
    await row('lee@example.com').locator('input[type=checkbox]').check();
    await page.getByRole('button', { name: 'Expire selected links' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'links_expired');
    const after = (await api('GET', `/v1/magic_links?document_id=${docId}`)).json().data;
    expect(
      after.map((l: { recipient_email: string; status: string }) => `${l.recipient_email}:${l.status}`).sort(),
    ).toEqual(['dana@example.com:revoked', 'lee@example.com:revoked', 'robin@example.com:revoked']);
  });

  it('lists documents newest first and finds them by name', async () => {
    await page.goto(`${base}/app/documents`);
    const names = await page.locator('tbody tr td:first-child strong').allTextContents();
    expect(names.slice(0, 2)).toEqual(['Welcome for Robin', 'api copy']);
    await page.getByLabel('Search by name').fill('ROBIN');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect(page.locator('tbody tr td:first-child strong').allTextContents()).resolves.toEqual([
      'Welcome for Robin',
    ]);
    await shot(page, '08-documents');
    await page.getByLabel('Search by name').fill('no such 100%');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect(page.locator('tbody .empty').isVisible()).resolves.toBe(true);
  });

  it('creates API keys and postcard tokens (shown once), revokes them, and shows the intake URL', async () => {
    await page.goto(`${base}/app/settings`);
    await expect(page.locator('[data-intake-url]').textContent()).resolves.toBe(`${base}/postcards`);
    await page.locator('#f-name-api').fill('zapier');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const key = (await page.locator('[data-secret]').textContent())!;
    expect(key).toMatch(/^plk_/);
    expect((await api('GET', '/v1/templates')).statusCode).toBe(200);
    const withNew = await t.app.inject({
      method: 'GET',
      url: '/v1/templates',
      headers: { 'x-service-api-token': key },
    });
    expect(withNew.statusCode).toBe(200);
    await shot(page, '09-settings-key-created');
    await page.goto(`${base}/app/settings`);
    expect(await page.content()).not.toContain(key); // shown once

    await page.locator('tr', { hasText: 'zapier' }).getByRole('button', { name: 'Revoke' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'revoked');
    await expect(page.locator('tr', { hasText: 'zapier' }).locator('.badge').textContent()).resolves.toBe('revoked');
    const afterRevoke = await t.app.inject({
      method: 'GET',
      url: '/v1/templates',
      headers: { 'x-service-api-token': key },
    });
    expect(afterRevoke.statusCode).toBe(401);

    await page.locator('#f-name-postcard').fill('website form');
    await page.getByRole('button', { name: 'Create postcard token' }).click();
    const token = (await page.locator('[data-secret]').textContent())!;
    expect(token).toMatch(/^plp_/);
    // the form's POST answered with a redirect: a reload shows the settings, makes no second token
    // and no longer shows the secret
    const tokens = async () => (await t.service.keys.list()).filter((k) => k.kind === 'postcard').length;
    const made = await tokens();
    await page.reload();
    expect(await tokens()).toBe(made);
    expect(await page.content()).not.toContain(token);
    const sent = await t.app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { ...postcard, api_token: token, template_id: EXAMPLE_IDS.postcard, promo: 'WEB26' },
    });
    expect(sent.statusCode).toBe(202);
    const pc = sent.json().id as string;
    await eventually(async () => (await t.service.postcards.get(pc)).status === 'rendered', 'postcard rendered', 30);

    await page.goto(`${base}/app/postcards`);
    await page.getByRole('link', { name: 'Rendered' }).click();
    await page.waitForURL((u) => u.searchParams.get('status') === 'rendered');
    await page.getByRole('link', { name: 'Jordan Alvarez' }).click();
    await page.waitForURL((u) => u.pathname === `/app/postcards/${pc}`);
    await expect(page.locator('main').textContent()).resolves.toContain('WEB26');
    await page.waitForSelector('body[data-rendered="true"]', { timeout: 20_000 });
    await shot(page, '10-postcard');
    await page.goto(`${base}/app/postcards?status=failed`);
    await expect(page.locator('tbody .empty').isVisible()).resolves.toBe(true);

    await page.goto(`${base}/app/settings`);
    await page.locator('tr', { hasText: 'website form' }).getByRole('button', { name: 'Revoke' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'revoked');
    const refused = await t.app.inject({
      method: 'POST',
      url: '/postcards',
      payload: { ...postcard, api_token: token, template_id: EXAMPLE_IDS.postcard },
    });
    expect(refused.statusCode).toBe(401);
    await shot(page, '11-settings');
  });

  it('saves the Magic Link app with the API rules, and adds webhooks with their secret shown once', async () => {
    await page.goto(`${base}/app/settings`);
    await page.getByLabel('Organisation name').fill('Acme Health');
    // the browser takes any URL; the service wants http(s)
    await page.getByLabel('Public URL of this service').fill('ftp://files.example');
    await page.getByRole('button', { name: 'Save Magic Link settings' }).click();
    await expect(page.locator('#magic-link-app .notice.error').textContent()).resolves.toContain('public_url');
    await expect(page.locator('#f-public_url').getAttribute('aria-invalid')).resolves.toBe('true');
    expect((await t.service.apps.magicLink.get())?.organization_name).toBe('Acme Clinic');
    await page.getByLabel('Public URL of this service').fill(base);
    await page.getByLabel('Sender e-mail').fill('docs@acme.example');
    await page.getByRole('button', { name: 'Save Magic Link settings' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'app_saved');
    expect(await t.service.apps.magicLink.get()).toMatchObject({
      organization_name: 'Acme Health',
      sender_email: 'docs@acme.example',
      public_url: base,
    });

    // a social sign-in provider: the API's rules, the secret never shown back, then removed
    await page.getByLabel('Id', { exact: true }).fill('Google!');
    await page.getByLabel('Button name').fill('Google');
    await page.getByLabel('Issuer URL').fill('https://accounts.google.com');
    await page.getByLabel('Client id', { exact: true }).fill('client-123');
    await page.getByLabel('Client secret').fill('very-secret-value');
    await page.getByRole('button', { name: 'Add provider' }).click();
    await expect(page.locator('#magic-link-app .notice.error').textContent()).resolves.toContain('lowercase');
    await page.getByLabel('Id', { exact: true }).fill('google');
    await page.getByLabel('Client secret').fill('very-secret-value');
    await page.getByRole('button', { name: 'Add provider' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'app_saved');
    await expect(page.locator('#magic-link-app tbody').textContent()).resolves.toContain('accounts.google.com');
    expect(await page.content()).not.toContain('very-secret-value');
    expect((await t.service.apps.magicLink.get())?.oidc_providers).toEqual([
      {
        id: 'google',
        name: 'Google',
        issuer: 'https://accounts.google.com',
        client_id: 'client-123',
        client_secret: 'very-secret-value',
      },
    ]);
    await page.locator('tr', { hasText: 'accounts.google.com' }).getByRole('button', { name: 'Remove' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'provider_removed');
    expect((await t.service.apps.magicLink.get())?.oidc_providers).toEqual([]);

    await page.getByLabel('Endpoint URL').fill('http://127.0.0.1:9/hook');
    await page.getByLabel('All events').check();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    // private addresses are refused unless WEBHOOK_ALLOW_PRIVATE: the API's rule
    await expect(page.locator('#webhooks .notice.error').textContent()).resolves.toContain('url');
    await page.getByLabel('Endpoint URL').fill('https://hooks.example.com/paperlink');
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await expect(page.locator('#webhooks [data-secret]').textContent()).resolves.toMatch(/^whsec_/);
    await expect(page.locator('#webhooks tbody').textContent()).resolves.toContain(
      'https://hooks.example.com/paperlink',
    );
  });

  it('sets how long documents are kept, with the API rules, and shows each document its deletion date', async () => {
    await page.goto(`${base}/app/settings`);
    await page.getByLabel('Keep documents for').fill('0');
    await page.getByRole('button', { name: 'Save document retention' }).click();
    await expect(page.locator('#f-retain_amount').getAttribute('aria-invalid')).resolves.toBe('true');
    await page.getByLabel('Keep documents for').fill('90');
    await page.locator('#documents').getByLabel('Unit').selectOption('days');
    await page.getByRole('button', { name: 'Save document retention' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'retention_saved');
    expect((await t.service.apps.storage.get()).retain_for).toEqual({ days: 90 });
    await expect(page.getByLabel('Keep documents for').inputValue()).resolves.toBe('90');
    try {
      // a document made now is deleted in 90 days; its page says when
      const made = (
        await api('POST', '/v1/generate', {
          template_id: EXAMPLE_IDS.postcard,
          merge_parameters: postcard,
          destinations: { inkit_storage: { name: 'Kept for 90 days' } },
        })
      ).json();
      await page.goto(`${base}/app/documents/${made.document_id}`);
      await expect(page.locator('[data-expires] time').getAttribute('datetime')).resolves.toBe(
        made.destinations.inkit_storage.expires_at,
      );
    } finally {
      await page.goto(`${base}/app/settings`);
      await page.getByLabel('Keep documents for').fill('');
      await page.getByRole('button', { name: 'Save document retention' }).click();
      await page.waitForURL((u) => u.searchParams.get('done') === 'retention_saved');
      expect((await t.service.apps.storage.get()).retain_for).toBeNull();
    }
    // with no default, one made only for a link is kept while the link is active, then 30 days; its page says so
    const shared = (
      await api('POST', '/v1/generate', {
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: postcard,
        destinations: { magic_link: { recipient_email: 'only@example.com', expire_after_n_views: 1 } },
      })
    ).json();
    await mail.next('only@example.com');
    await page.goto(`${base}/app/documents/${shared.document_id}`);
    await expect(page.locator('[data-expires]').textContent()).resolves.toMatch(
      /^30 days after its last Magic Link ends/,
    );
    await api('POST', `/v1/magic_links/${shared.magic_link_piece_id}/expire`);
    await page.reload();
    const ends = Date.parse((await page.locator('[data-expires] time').getAttribute('datetime'))!);
    expect(ends - Date.now()).toBeGreaterThan(29 * 24 * 3600 * 1000);
    expect(ends - Date.now()).toBeLessThanOrEqual(30 * 24 * 3600 * 1000);
  });

  it("refuses a form without its CSRF token, or with another session's", async () => {
    const before = (await t.service.keys.list('api')).length;
    const bare = await page.request.post(`${base}/app/settings/credentials`, {
      form: { kind: 'api', name: 'forged' },
      maxRedirects: 0,
    });
    expect(bare.status()).toBe(403);
    const wrong = await page.request.post(`${base}/app/settings/credentials`, {
      form: { kind: 'api', name: 'forged', _csrf: 'a'.repeat(40) },
      maxRedirects: 0,
    });
    expect(wrong.status()).toBe(403);
    const upload = await page.request.post(`${base}/app/templates`, {
      multipart: { file: { name: 'x.xml', mimeType: 'application/xml', buffer: Buffer.from(TEMPLATE) } },
      maxRedirects: 0,
    });
    expect(upload.status()).toBe(403);
    const noSignInToken = await browser.newContext();
    try {
      const r = await noSignInToken.request.post(`${base}/app/signin`, { form: { secret: t.key }, maxRedirects: 0 });
      expect(r.status()).toBe(403);
    } finally {
      await noSignInToken.close();
    }
    expect((await t.service.keys.list('api')).length).toBe(before);
  });

  it('shows every page as designed: nothing on any page of the walk was blocked by its Content-Security-Policy', async () => {
    for (const p of [
      '/app/templates',
      `/app/generate?template_id=${templateId}`,
      '/app/documents',
      new URL(documentUrl).pathname,
      '/app/postcards',
      '/app/settings',
    ]) {
      const res = await page.goto(`${base}${p}`);
      expect(res?.headers()['content-security-policy']).toContain("style-src 'self'");
    }
    expect(blocked).toEqual([]);
  });

  it('is usable on a phone: the navigation stays on screen and nothing scrolls sideways', async () => {
    const phone = await operator.newPage();
    try {
      await phone.setViewportSize({ width: 390, height: 844 });
      for (const [p, name] of [
        ['/app/documents', '12-phone-documents'],
        [new URL(documentUrl).pathname, '13-phone-document'],
        ['/app/settings', '14-phone-settings'],
      ] as const) {
        await phone.goto(`${base}${p}`);
        await expect(phone.getByRole('navigation', { name: 'Sections' }).isVisible()).resolves.toBe(true);
        const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow).toBeLessThanOrEqual(0);
        await shot(phone, name);
      }
      // keyboard: the first Tab reaches the skip link, Enter moves to the content
      await phone.goto(`${base}/app/templates`);
      await phone.keyboard.press('Tab');
      await expect(phone.evaluate(() => document.activeElement?.textContent)).resolves.toBe('Skip to content');
    } finally {
      await closePage(phone);
    }
  });

  it("ends a key's sessions when the key is revoked, and signs out", async () => {
    const { secret, key } = await t.service.keys.create('api', 'temporary');
    const other = await browser.newContext();
    try {
      const p = await other.newPage();
      await signIn(p, secret);
      await t.service.keys.revoke(key.id);
      await p.goto(`${base}/app/templates`);
      expect(new URL(p.url()).pathname).toBe('/app/signin');
    } finally {
      await other.close();
    }
    await page.goto(`${base}/app/templates`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.pathname === '/app/signin');
    await page.goto(`${base}/app/settings`);
    expect(new URL(page.url()).pathname).toBe('/app/signin');
  });

  it('signs the operator in with the password set by `paperlink admin set-password`, and slows down guessing', async () => {
    const short = await cli(['admin', 'set-password', '--data-dir', t.config.dataDir], 'short\n');
    expect(short.code).toBe(2);
    const set = await cli(['admin', 'set-password', '--data-dir', t.config.dataDir], 'correct horse battery staple\n');
    expect(set.code).toBe(0);
    const p = await operator.newPage();
    try {
      await signIn(p, 'correct horse battery staple', '/app/settings');
      await expect(p.locator('.who strong').textContent()).resolves.toBe('Operator');
      await expect(p.locator('#credentials').textContent()).resolves.toContain('Operator password: set');
      await p.getByRole('button', { name: 'Sign out' }).click();
      let status = 0;
      for (let i = 0; i < 11; i++) {
        await p.goto(`${base}/app/signin`);
        await p.getByLabel(/API key/).fill(`wrong password ${i}`);
        const answer = p.waitForResponse((r) => r.url().endsWith('/app/signin') && r.request().method() === 'POST');
        await p.getByRole('button', { name: 'Sign in' }).click();
        status = (await answer).status();
        // the answer's page has loaded before the next step (closing a page mid-navigation can hang Chromium)
        await p.waitForLoadState('load');
      }
      expect(status).toBe(429);
      await expect(p.getByRole('alert').textContent()).resolves.toContain('Too many failed sign-ins');
    } finally {
      await closePage(p);
    }
  }, 60_000);
});
