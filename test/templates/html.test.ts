/**
 * HTML templates with Liquid, printed by headless Chromium (the one inside @sparticuz/chromium, or
 * CHROMIUM_PATH): values filled and escaped, lists from JSON arrays, print CSS, the template's own
 * files used and nothing fetched from elsewhere, scripts off, and the same API as XML templates.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { loadTemplate, renderTemplate, type RenderWarning, type Template } from '../../src/templates';
import { expectClosingWithBody, expectInvoice, expectLetter } from '../support/examples';
import { withEnv } from '../support/env';
import { MEMORY_CHECK_EVERY, printer, withBase } from '../../src/templates/html';
import { readPdf } from '../support/pdf';
import { testService, type TestService } from '../support/service';

const LETTER = `<!doctype html>
<html>
<head>
  <title>Welcome letter</title>
  <link rel="stylesheet" href="style.css">
  <style>@page { size: A5; margin: 15mm }</style>
</head>
<body>
  <h1>Dear {{ name }},</h1>
  <table>
    {% for item in line_items %}<tr><td>{{ item.title }}</td><td>{{ item.price | money: "EUR" }}</td></tr>{% endfor %}
  </table>
  <p class="hidden">This paragraph is hidden by style.css.</p>
  <p>{{ closing | default: "Kind regards" }}</p>
</body>
</html>`;

const assets = async (p: string) =>
  p === 'style.css' ? new TextEncoder().encode('.hidden { display: none }') : undefined;

describe('HTML templates', () => {
  afterAll(() => printer.close());

  it('lists its variables in order of use, and a default makes one optional', async () => {
    const t = await loadTemplate(LETTER, { assets });
    expect(t.kind).toBe('html');
    expect(t.name).toBe('Welcome letter');
    expect(t.variables).toEqual(['name', 'line_items', 'closing']);
    expect(t.defaults).toEqual({ closing: 'Kind regards' });
  });

  it('prints the filled page at its @page size, with its own CSS, values escaped and lists repeated', async () => {
    const t = await loadTemplate(LETTER, { assets });
    const pdf = await renderTemplate(t, {
      name: '<script>alert(1)</script> & Co',
      line_items: JSON.stringify([
        { title: 'Ski rental', price: 120 },
        { title: 'Lift pass', price: 59.5 },
      ]),
    });
    const read = await readPdf(pdf);
    const text = read.text.replace(/\s+/g, ' ');
    expect(read.pages).toHaveLength(1);
    // A5: 148 × 210 mm
    expect([Math.round(read.pages[0].width), Math.round(read.pages[0].height)]).toEqual([420, 595]);
    // printed as text (the heading wraps, so compare without spaces)
    expect(text.replace(/ /g, '')).toContain('Dear<script>alert(1)</script>&Co,');
    expect(text).toContain('Ski rental €120.00');
    expect(text).toContain('Lift pass €59.50');
    expect(text).toContain('Kind regards');
    expect(text).not.toContain('hidden by style.css');
  });

  it('refuses Liquid that does not parse as template_invalid', async () => {
    await expect(
      loadTemplate('<!doctype html><html><body>{% for x in items %}never closed</body></html>'),
    ).rejects.toMatchObject({ code: 'template_invalid' });
  });

  it('refuses a render without a required value, naming it', async () => {
    const t = await loadTemplate(LETTER, { assets });
    await expect(renderTemplate(t, { line_items: '[]' })).rejects.toMatchObject({
      code: 'missing_variables',
      details: [{ field: 'name', code: 'required' }],
    });
  });

  it('fetches nothing from elsewhere: an outside address is left out and warned about', async () => {
    let hits = 0;
    const server = http.createServer((_req, res) => {
      hits++;
      res.end('x');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const t = await loadTemplate(
        `<!doctype html><html><head><link rel="stylesheet" href="${url}/style.css"></head><body><img src="${url}/logo.png"><p>{{ name }}</p></body></html>`,
      );
      const warnings: RenderWarning[] = [];
      const read = await readPdf(await renderTemplate(t, { name: 'Pat' }, { warnings }));
      expect(read.text).toContain('Pat');
      expect(hits).toBe(0);
      expect(warnings.map((w) => w.code)).toEqual(['resource_blocked', 'resource_blocked']);
      expect(warnings.map((w) => w.message).join(' ')).toContain(`${url}/logo.png`);
    } finally {
      server.close();
    }
  });

  it('keeps each template to its own files on a reused page, and prints many at once, each its own', async () => {
    const css = (hide: string) => async (p: string) =>
      p === 'style.css' ? new TextEncoder().encode(`.${hide} { display: none }`) : undefined;
    const source =
      '<!doctype html><html><head><link rel="stylesheet" href="style.css"></head><body><p class="a">shown A</p><p class="b">shown B</p><p>{{ n }}</p></body></html>';
    const hidesA = await loadTemplate(source, { assets: css('a') });
    const hidesB = await loadTemplate(source, { assets: css('b') });
    const texts = await Promise.all(
      Array.from(
        { length: 6 },
        async (_, i) => (await readPdf(await renderTemplate(i % 2 ? hidesB : hidesA, { n: `document ${i}` }))).text,
      ),
    );
    texts.forEach((text, i) => {
      expect(text).toContain(`document ${i}`);
      expect(text).toContain(i % 2 ? 'shown A' : 'shown B');
      expect(text).not.toContain(i % 2 ? 'shown B' : 'shown A');
    });
    // one after the other on the same kept page as well
    for (const [t, shown] of [
      [hidesB, 'shown A'],
      [hidesA, 'shown B'],
    ] as const)
      expect((await readPdf(await renderTemplate(t, { n: 'x' }))).text).toContain(shown);
  });

  it('runs no script the template holds', async () => {
    const t = await loadTemplate(
      `<!doctype html><html><body><p id="p">{{ name }}</p><script>document.getElementById('p').textContent = 'script ran'</script></body></html>`,
    );
    const read = await readPdf(await renderTemplate(t, { name: 'static text' }));
    expect(read.text).toContain('static text');
    expect(read.text).not.toContain('script ran');
  });
});

describe('HTML templates through the API', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService();
  });
  afterAll(() => t?.stop());

  it('stores an HTML upload as format html and generates documents from it like any template', async () => {
    const auth = { 'x-service-api-token': t.key };
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/templates?name=Receipt',
      headers: { ...auth, 'content-type': 'text/html' },
      payload:
        '<!doctype html><html><body><h1>Receipt for {{ customer }}</h1><p>{{ total | number: 2 }}</p></body></html>',
    });
    expect(made.statusCode).toBe(201);
    expect(made.json()).toMatchObject({ format: 'html', name: 'Receipt', variables: ['customer', 'total'] });

    const generate = (values: Record<string, unknown>) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: auth,
        payload: { template_id: made.json().id, merge_parameters: values, destinations: { inkit_storage: {} } },
      });
    const missing = await generate({ customer: 'Pat' });
    expect(missing.statusCode).toBe(422);
    expect(missing.json().error.code).toBe('missing_variables');

    const res = await generate({ customer: 'Pat Doe', total: 1234.5 });
    expect(res.statusCode).toBe(201);
    const pdf = await t.app.inject({
      method: 'GET',
      url: `/v1/documents/${res.json().document_id}/pdf`,
      headers: auth,
    });
    const read = await readPdf(new Uint8Array(pdf.rawPayload));
    expect(read.text).toContain('Receipt for Pat Doe');
    expect(read.text).toContain('1,234.50');
  });

  it('refuses an HTML template where there is no Chromium to print it, saying how to install it', async () => {
    const upload = (type: string, payload: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/templates',
        headers: { 'x-service-api-token': t.key, 'content-type': type },
        payload,
      });
    await withEnv('CHROMIUM_PATH', '/nonexistent/chromium', async () => {
      const res = await upload('text/html', '<!doctype html><html><body>{{ name }}</body></html>');
      expect(res.statusCode).toBe(422);
      expect(res.json().error.code).toBe('format_unavailable');
      expect(res.json().error.message).toContain('apt-get install chromium');
      // an XML template is stored all the same
      expect((await upload('application/xml', '<document><body><p>{{name}}</p></body></document>')).statusCode).toBe(
        201,
      );
    });
  });
});

describe('the HTML examples', () => {
  afterAll(() => printer.close());

  it('letter: the sample of the XML letter fills it, on US Letter, a footer with page numbers on each page', async () => {
    const r = await expectLetter('letter-html', 'html');
    expectClosingWithBody(r);
    // ragged right: Chromium justifies by stretching spaces (it has no hyphenation dictionary), so
    // the body's lines end where their words end, not all at the right margin
    const first = r.pdf.pages[0];
    const bodyLines = first.items.filter((i) => i.str.length > 60);
    expect(bodyLines.length).toBeGreaterThan(5);
    expect(new Set(bodyLines.map((i) => Math.round(i.x + i.width))).size).toBeGreaterThan(bodyLines.length / 2);
  });

  it('invoice: every line item, the header row on each page, and the totals, on A4', async () => {
    await expectInvoice('invoice-html');
  });
});

describe('an HTML template that does not finish', () => {
  afterAll(() => printer.close());

  it('is stopped at its time budget when scripts may run, and the next render works', async () => {
    // (the browser is started by this render: the one before was closed, and HTML_SCRIPTS is read at its start)
    await withEnv('HTML_SCRIPTS', '1', async () => {
      const hang = await loadTemplate(
        '<!doctype html><html><body><p>{{ name }}</p><script>while (true) {}</script></body></html>',
      );
      await expect(renderTemplate(hang, { name: 'x' }, { timeoutMs: 1_000 })).rejects.toMatchObject({
        code: 'render_limit_exceeded',
      });
    });
    const fine = await loadTemplate('<!doctype html><html><body><p>{{ name }}</p></body></html>');
    expect((await readPdf(await renderTemplate(fine, { name: 'after the stop' }))).text).toContain('after the stop');
  });
});

describe('the page a document is printed from', () => {
  afterAll(() => printer.close());

  it("uses the template's own web font and stylesheet", async () => {
    const dejavu = (f: string) =>
      fs.readFileSync(path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf', f));
    const files: Record<string, Uint8Array> = {
      'fonts/serif.ttf': dejavu('DejaVuSerif-Bold.ttf'),
      'style.css': new TextEncoder().encode('h1 { font-family: Own }'),
    };
    const t = await loadTemplate(
      '<!doctype html><html lang="en"><head><style>@font-face { font-family: Own; src: url("fonts/serif.ttf") }</style><link rel="stylesheet" href="style.css"></head><body><h1>{{ title }}</h1></body></html>',
      { assets: async (p) => files[p] },
    );
    const warnings: RenderWarning[] = [];
    const pdf = await readPdf(await renderTemplate(t, { title: 'In its own font' }, { warnings }));
    expect(warnings).toEqual([]);
    expect(pdf.text).toContain('In its own font');
    expect(new Set(pdf.pages[0].runs.map((r) => r.font))).toEqual(new Set(['DejaVuSerif-Bold']));
  });

  it('says where its files are right after the doctype, so the page keeps its mode and its own attributes', () => {
    const base = 'https://template.paperlink.invalid/7/';
    expect(withBase('<!-- a --><!DOCTYPE html><html lang="de"><p>x', base)).toBe(
      `<!-- a --><!DOCTYPE html><base href="${base}"><html lang="de"><p>x`,
    );
    expect(withBase('<html><p>x', base)).toBe(`<base href="${base}"><html><p>x`);
  });
});

describe('a browser that holds more than it may keep between documents', () => {
  afterAll(() => printer.close());
  const page = '<!doctype html><html><body><p>Document {{ n }}</p></body></html>';
  const texts = async (t: Template, ns: number[]) =>
    Promise.all(ns.map(async (n) => (await readPdf(await renderTemplate(t, { n: String(n) }))).text));
  const from = (first: number, count: number) => Array.from({ length: count }, (_, i) => first + i);
  /** Renders documents `first`… one after another, each saying its own number. */
  const inTurn = async (t: Template, first: number, count: number) => {
    for (const n of from(first, count)) expect((await texts(t, [n]))[0]).toContain(`Document ${n}`);
  };

  it('gets a new page once found over the budget, is replaced if still over, and no document is lost', async () => {
    const t = await loadTemplate(page);
    await printer.close();
    const browsers = printer.launched;
    const pages = printer.pagesOpened;
    // a budget below what a browser gains over its first page's footprint in ten documents: found over it at each check
    await withEnv('HTML_BROWSER_MEMORY_MB', '1', async () => {
      await inTurn(t, 1, MEMORY_CHECK_EVERY + 2);
      // the first check renewed the page, in the same browser
      expect([printer.launched - browsers, printer.pagesOpened - pages]).toEqual([1, 2]);
      await inTurn(t, 100, MEMORY_CHECK_EVERY);
      // the second found it over again: a new browser (with its first page)
      expect([printer.launched - browsers, printer.pagesOpened - pages]).toEqual([2, 3]);
      // two at a time (HTML_PAGES): pages and browsers are replaced between documents, none in the middle of one
      for (let k = 0; k < MEMORY_CHECK_EVERY * 2; k++) {
        const pair = [200 + 2 * k, 201 + 2 * k];
        (await texts(t, pair)).forEach((text, i) => expect(text).toContain(`Document ${pair[i]}`));
      }
      expect(printer.pagesOpened - pages).toBeGreaterThan(4);
    });
  }, 120_000);

  it('is kept warm while it holds less', async () => {
    const t = await loadTemplate(page);
    await printer.close();
    const browsers = printer.launched;
    const pages = printer.pagesOpened;
    await withEnv('HTML_BROWSER_MEMORY_MB', '100000', async () => {
      await inTurn(t, 1, MEMORY_CHECK_EVERY * 2 + 1);
    });
    expect([printer.launched - browsers, printer.pagesOpened - pages]).toEqual([1, 1]);
  }, 120_000);
});
