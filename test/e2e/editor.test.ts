/// <reference lib="dom" />
/**
 * The template editor in headless Chromium, as an operator uses it: change the source and the
 * sample values and watch the preview follow, see an error at its line, save a new version,
 * generate from the old and the new one, compare them, and make the old one current again.
 * Screenshots go to test-results/screenshots.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page, Response } from 'playwright-core';
import { launchChromium, watchBlocked } from '../support/browser';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { readPdf } from '../support/pdf';
import { testService, type TestService } from '../support/service';

const SHOTS = path.join(root, 'test-results', 'screenshots');
const source = (greeting: string) => `<document name="Greeting" size="a5">
  <body>
    <p font-size="16">${greeting}, {{name}}</p>
  </body>
</document>
`;

describe('the template editor in a browser', () => {
  let t: TestService;
  let browser: Browser;
  let base: string;
  let page: Page;
  let blocked: string[];
  let id: string;

  const api = (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
    t.app.inject({ method, url, headers: { 'x-service-api-token': t.key }, ...(payload ? { payload } : {}) });
  /** The text of the PDF the editor's next preview answer carries. */
  const nextPreview = async (answer: Promise<Response>) => {
    const res = await answer;
    const body = (await res.json()) as { pdf?: string; error?: { code: string } };
    return body.pdf ? (await readPdf(Buffer.from(body.pdf, 'base64'))).text : body;
  };
  const previewAnswer = () =>
    page.waitForResponse((r) => r.url().endsWith(`/app/templates/${id}/draft`) && r.request().method() === 'POST');
  const drawnImage = () =>
    page
      .locator('#pages canvas')
      .first()
      .evaluate((c: HTMLCanvasElement) => c.toDataURL());
  const settled = () => page.waitForSelector('#editor[data-state="ready"], #editor[data-state="error"]');

  beforeAll(async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    t = await testService();
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const made = await api('POST', '/v1/templates', { source: source('Hello'), sample_values: { name: 'Sam' } });
    expect(made.json()).toMatchObject({ version: 1 });
    id = made.json().id as string;
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(15_000);
    blocked = await watchBlocked(context);
    page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${base}/app/signin?next=/app/templates/${id}/edit`);
    await page.getByLabel(/API key/).fill(t.key);
    const first = previewAnswer();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => u.pathname === `/app/templates/${id}/edit`);
    await expect(nextPreview(first)).resolves.toContain('Hello, Sam');
    await page.waitForSelector('#editor[data-state="ready"]');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  it('re-renders the preview as the source and the sample values change, and shows an error at its line', async () => {
    const before = await drawnImage();
    let answer = previewAnswer();
    await page.locator('.cm-content').fill(source('Howdy'));
    await expect(nextPreview(answer)).resolves.toContain('Howdy, Sam');
    await settled();
    expect(await drawnImage()).not.toBe(before);

    answer = previewAnswer();
    await page.getByLabel('name', { exact: true }).fill('Ann');
    await expect(nextPreview(answer)).resolves.toContain('Howdy, Ann');
    await settled();

    // a new variable gets its sample field; the one no longer used loses its own
    answer = previewAnswer();
    await page.locator('.cm-content').fill(source('Howdy').replace('{{name}}', '{{name}} of {{town}}'));
    await expect(nextPreview(answer)).resolves.toContain('Howdy, Ann of «town»');
    await settled();
    await expect(page.getByLabel('town', { exact: true }).count()).resolves.toBe(1);

    answer = previewAnswer();
    await page.locator('.cm-content').fill('<document>\n  <body>\n    <p>Hello {{name</p>\n  </body>\n</document>\n');
    await expect(nextPreview(answer)).resolves.toMatchObject({ error: { code: 'template_invalid' } });
    await page.waitForSelector('#editor[data-state="error"]');
    await expect(page.locator('#problems').textContent()).resolves.toMatch(/Line 3, column \d+/);
    await expect(page.locator('.cm-lintRange-error').count()).resolves.toBeGreaterThan(0);
    await page.screenshot({ path: path.join(SHOTS, '20-editor-error.png'), fullPage: true });
    // saving it is refused, and the page comes back with what was typed, not the saved version
    const reloaded = previewAnswer();
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await expect(page.locator('.notice.error').textContent()).resolves.toMatch(/line 3/i);
    await expect(page.locator('#f-source').inputValue()).resolves.toContain('Hello {{name</p>');
    await expect(page.getByLabel('name', { exact: true }).inputValue()).resolves.toBe('Ann');
    await reloaded;
    await settled();
    expect((await api('GET', `/v1/templates/${id}`)).json().version).toBe(1);

    answer = previewAnswer();
    await page.locator('.cm-content').fill(source('Howdy'));
    await expect(nextPreview(answer)).resolves.toContain('Howdy, Ann');
    await settled();
    await expect(page.locator('#problems').isHidden()).resolves.toBe(true);
    await expect(page.getByLabel('town', { exact: true }).count()).resolves.toBe(0);
    await page.screenshot({ path: path.join(SHOTS, '21-editor.png'), fullPage: true });
  });

  it('saves a new version; generate renders the old or the new; the old one is made current again', async () => {
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'version_saved');
    const template = (await api('GET', `/v1/templates/${id}`)).json();
    expect(template).toMatchObject({ version: 2, sample_values: { name: 'Ann' } });

    const generate = async (version?: number) => {
      const res = await api('POST', '/v1/generate', {
        template_id: id,
        ...(version ? { template_version: version } : {}),
        merge_parameters: { name: 'Zoë' },
        destinations: { inkit_storage: {} },
      });
      expect(res.statusCode).toBe(201);
      const pdf = await api('GET', `/v1/documents/${res.json().document_id}/pdf`);
      return (await readPdf(pdf.rawPayload)).text;
    };
    await expect(generate()).resolves.toContain('Howdy, Zoë');
    await expect(generate(1)).resolves.toContain('Hello, Zoë');

    await page.getByRole('link', { name: 'Changes' }).click();
    await expect(page.locator('.diff-removed').textContent()).resolves.toContain('Hello, {{name}}');
    await expect(page.locator('.diff-added').textContent()).resolves.toContain('Howdy, {{name}}');
    await page.screenshot({ path: path.join(SHOTS, '22-editor-changes.png'), fullPage: true });
    await page.getByRole('link', { name: 'Back to the editor' }).click();

    await page.getByRole('button', { name: 'Make current' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'version_made_current');
    expect((await api('GET', `/v1/templates/${id}`)).json().version).toBe(1);
    await expect(generate()).resolves.toContain('Hello, Zoë');
    expect(blocked).toEqual([]);
  });

  it("shows each template's first page in the list, drawn from its current version and kept by the browser", async () => {
    await page.goto(`${base}/app/templates`);
    const thumb = page.locator(`img.thumb[src="/app/templates/${id}/versions/1/thumbnail.png"]`);
    await thumb.scrollIntoViewIfNeeded();
    await page.waitForFunction(
      (el) => (el as HTMLImageElement).complete && (el as HTMLImageElement).naturalWidth > 0,
      await thumb.elementHandle(),
    );
    const res = await page.request.get(`${base}/app/templates/${id}/versions/1/thumbnail.png`);
    expect(res.headers()['content-type']).toBe('image/png');
    expect(res.headers()['cache-control']).toContain('immutable');
    expect((await page.request.get(`${base}/app/templates/${id}/versions/9/thumbnail.png`)).status()).toBe(404);
    // every thumbnail loaded (they load as they come into view), for the screenshot
    for (const img of await page.locator('img.thumb').all()) {
      await img.scrollIntoViewIfNeeded();
      await page.waitForFunction((el) => (el as HTMLImageElement).complete, await img.elementHandle());
    }
    await page.screenshot({ path: path.join(SHOTS, '23-templates-thumbnails.png'), fullPage: true });
  });

  it('re-renders the example invoice as its source is typed (the time is written to test-results, not asserted)', async () => {
    await page.goto(`${base}/app/templates/${EXAMPLE_IDS.invoice}/edit`);
    await page.waitForSelector('#editor[data-state="ready"]');
    const invoice = await page.locator('#f-source').inputValue();
    const times: number[] = [];
    const parts: object[] = [];
    for (let i = 1; i <= 5; i++) {
      const before = await page.locator('#editor').getAttribute('data-rendered');
      const started = Date.now();
      await page.locator('.cm-content').fill(invoice.replace('</document>', `<!-- edit ${i} --></document>`));
      await page.waitForFunction((prev) => {
        const form = document.getElementById('editor')!;
        return form.dataset.state === 'ready' && form.dataset.rendered !== prev;
      }, before);
      times.push(Date.now() - started);
      parts.push(JSON.parse((await page.locator('#editor').getAttribute('data-timing'))!) as object);
    }
    expect(await page.locator('#pages canvas').count()).toBeGreaterThan(0);
    const sorted = [...times].sort((a, b) => a - b);
    fs.writeFileSync(
      path.join(root, 'test-results', 'editor-preview.json'),
      JSON.stringify({
        what: 'example invoice, ms: times (fill to drawn, from outside), parts (fromKeystroke: last change to drawn, in the page)',
        times,
        median: sorted[2],
        parts,
      }) + '\n',
    );
  });
});
