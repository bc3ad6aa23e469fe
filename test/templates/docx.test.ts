/**
 * Word templates: docxtemplater fields filled in memory, converted by a real LibreOffice (Debian's
 * libreoffice-writer-nogui with python3-uno, as .ci/run installs): values, loops and conditions,
 * page size, errors, the time budget, and the same API as every other template.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadTemplate, renderTemplate } from '../../src/templates';
import { converter, LIBREOFFICE_MISSING, MAX_UNPACKED, officePaths } from '../../src/templates/docx';
import { processTree } from '../../src/templates/watch';
import { setRenderLimits } from '../../src/templates/limits';
import { DOCX_TYPE } from '../../src/http/schemas';
import { makeDocx } from '../support/docx';
import { root } from '../support/fixtures';
import { expectInvoice, expectLetter } from '../support/examples';
import { withEnv } from '../support/env';
import { find, readPdf } from '../support/pdf';
import { cli } from '../support/cli';
import { tempDir } from '../support/tmp';
import { webSession, testService, type TestService } from '../support/service';
import { EXAMPLE_IDS } from '../../src/templates/store';

// without LibreOffice every test here fails with how to install it, rather than passing untested
beforeAll(() => {
  if (!officePaths()) throw new Error(LIBREOFFICE_MISSING);
});

const LETTER = makeDocx(
  [
    'Dear {name},',
    { table: [['{#items}{title}', '{price}{/items}']] },
    '{#paid}Paid in full.{/paid}{^paid}Payment is due.{/paid}',
    'Kind regards',
  ],
  { title: 'Welcome letter' },
);

describe('Word templates', () => {
  afterAll(() => converter.close());

  it('lists the fields outside loops in order of use, and takes its name from the document title', async () => {
    const t = await loadTemplate(LETTER);
    expect(t.kind).toBe('docx');
    expect(t.name).toBe('Welcome letter');
    expect(t.variables).toEqual(['name', 'items', 'paid']);
    expect(t.defaults).toEqual({});
  });

  it('prints the filled document at its page size: values as text, a table row per list item, conditions', async () => {
    const t = await loadTemplate(LETTER);
    const items = [
      { title: 'Ski rental', price: '€120.00' },
      { title: 'Lift pass', price: '€59.50' },
      { title: 'Lessons', price: '€80.00' },
    ];
    const read = await readPdf(
      await renderTemplate(t, { name: '<script>alert(1)</script> & Co', items: JSON.stringify(items), paid: 'false' }),
    );
    const text = read.text.replace(/\s+/g, ' ');
    expect(read.pages).toHaveLength(1);
    // A5: 148 × 210 mm
    expect([Math.round(read.pages[0].width), Math.round(read.pages[0].height)]).toEqual([420, 595]);
    expect(text).toContain('Dear <script>alert(1)</script> & Co,');
    for (const item of items) expect(text).toContain(`${item.title} ${item.price}`);
    expect(text).toContain('Payment is due.');
    expect(text).not.toContain('Paid in full.');
    const paid = await readPdf(await renderTemplate(t, { name: 'Pat', items: '[]', paid: 'yes' }));
    expect(paid.text).toContain('Paid in full.');
    expect(paid.text).not.toContain('Ski rental');
  });

  it('refuses fields that do not parse as template_invalid, and a ZIP that is not a Word document', async () => {
    await expect(loadTemplate(makeDocx(['Dear {name,', '{#items}never closed']))).rejects.toMatchObject({
      code: 'template_invalid',
    });
    const zip = new (await import('pizzip')).default();
    zip.file('content.xml', '<x/>');
    await expect(loadTemplate(zip.generate({ type: 'uint8array' }))).rejects.toMatchObject({
      code: 'template_invalid',
    });
  });

  it('refuses an archive that unpacks to more than it may (a zip bomb) before reading it', async () => {
    const zip = new (await import('pizzip')).default(makeDocx(['{name}']));
    // 101 MB of zeros, about 100 KB packed
    zip.file('word/media/padding.bin', new Uint8Array(MAX_UNPACKED + 1024 * 1024));
    const bomb = zip.generate({ type: 'uint8array', compression: 'DEFLATE' });
    expect(bomb.length).toBeLessThan(1024 * 1024);
    await expect(loadTemplate(bomb)).rejects.toMatchObject({ code: 'template_invalid' });
  });

  it('names the value that holds a character a Word document cannot, and holds the text limit', async () => {
    const t = await loadTemplate(LETTER);
    await expect(renderTemplate(t, { name: 'Pat\u0001', items: '[]', paid: 'no' })).rejects.toMatchObject({
      code: 'invalid_value',
      details: [{ field: 'name', code: 'invalid' }],
    });
    setRenderLimits({ text: 100 });
    try {
      await expect(renderTemplate(t, { name: 'x'.repeat(101), items: '[]', paid: 'no' })).rejects.toMatchObject({
        code: 'render_limit_exceeded',
        details: [{ field: 'text_length' }],
      });
    } finally {
      setRenderLimits({});
    }
  });

  it('refuses a render without a required value, naming each missing one', async () => {
    const t = await loadTemplate(LETTER);
    await expect(renderTemplate(t, { items: '[]' })).rejects.toMatchObject({
      code: 'missing_variables',
      details: [
        { field: 'name', code: 'required' },
        { field: 'paid', code: 'required' },
      ],
    });
  });

  it('converts many at once, each its own document', async () => {
    const t = await loadTemplate(makeDocx(['Document {n}']));
    const texts = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => (await readPdf(await renderTemplate(t, { n: `number ${i}` }))).text),
    );
    texts.forEach((text, i) => expect(text).toContain(`Document number ${i}`));
  });
});

describe('a LibreOffice that does not answer', () => {
  afterAll(() => converter.close());

  it('is stopped at the time budget, its processes with it, and the next render starts a working one', async () => {
    // a "LibreOffice" that never opens its pipe: the conversion cannot finish, whatever the machine's speed
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-fake-office-'));
    const fake = path.join(dir, 'soffice');
    fs.writeFileSync(fake, '#!/bin/sh\nsleep 600\n', { mode: 0o755 });
    const t = await loadTemplate(makeDocx(['Hello {name}']));
    await withEnv('LIBREOFFICE_PATH', fake, async () => {
      await converter.close();
      await expect(renderTemplate(t, { name: 'x' }, { timeoutMs: 1_000 })).rejects.toMatchObject({
        code: 'render_limit_exceeded',
      });
    });
    expect(spawnSync('pgrep', ['-f', fake]).status).toBe(1); // none left
    fs.rmSync(dir, { recursive: true, force: true });
    expect((await readPdf(await renderTemplate(t, { name: 'after the stop' }))).text).toContain('Hello after the stop');
  });
});

describe('a LibreOffice that ends while it converts', () => {
  afterAll(() => converter.close());

  /**
   * This process's running LibreOffice's pid (its soffice.bin, as the host sees it, sandbox or not),
   * looked for under this process only: suites beside this one start LibreOffices of their own.
   */
  const office = () =>
    processTree(process.pid)
      .map(String)
      .find((p) => {
        try {
          const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'latin1');
          return cmd.includes('soffice.bin') && cmd.includes('paperlink-office-');
        } catch {
          return false;
        }
      });

  /** Kills LibreOffice as each of the next `times` documents is handed to it. */
  const killAtHandOver = (times: number) => {
    const write = fs.writeFileSync;
    let left = times;
    return jest.spyOn(fs, 'writeFileSync').mockImplementation((file, ...rest) => {
      if (left > 0 && /paperlink-office-.*\.docx$/.test(String(file))) {
        left--;
        const pid = office();
        if (pid) process.kill(Number(pid), 'SIGKILL');
      }
      return write(file, ...rest);
    });
  };

  it('is replaced, the document in flight converted on the new one, and the ones queued behind it too', async () => {
    const t = await loadTemplate(makeDocx(['Hello {name}']));
    await renderTemplate(t, { name: 'warm' });
    const first = office();
    const spy = killAtHandOver(1);
    try {
      const texts = await Promise.all(
        ['in flight', 'queued'].map(async (name) => (await readPdf(await renderTemplate(t, { name }))).text),
      );
      expect(texts[0]).toContain('Hello in flight');
      expect(texts[1]).toContain('Hello queued');
    } finally {
      spy.mockRestore();
    }
    expect(office()).not.toBe(first);
  });

  it('fails the document cleanly when the new one ends too, and the next document converts', async () => {
    const t = await loadTemplate(makeDocx(['Hello {name}']));
    await renderTemplate(t, { name: 'warm' });
    const spy = killAtHandOver(2);
    try {
      await expect(renderTemplate(t, { name: 'twice' })).rejects.toMatchObject({ code: 'template_invalid' });
    } finally {
      spy.mockRestore();
    }
    expect((await readPdf(await renderTemplate(t, { name: 'after' }))).text).toContain('Hello after');
  });
});

describe('Word templates through the API', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService();
  });
  afterAll(() => t?.stop());

  const auth = () => ({ 'x-service-api-token': t.key });

  it('stores a .docx sent as itself, as base64 JSON or as a form file, as format docx, and generates from it', async () => {
    const source = makeDocx(['Receipt for {customer}', 'Total: {total}']);
    const raw = await t.app.inject({
      method: 'POST',
      url: '/v1/templates?name=Receipt',
      headers: { ...auth(), 'content-type': DOCX_TYPE },
      payload: Buffer.from(source),
    });
    expect(raw.statusCode).toBe(201);
    expect(raw.json()).toMatchObject({ format: 'docx', name: 'Receipt', variables: ['customer', 'total'] });

    const json = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: auth(),
      payload: { name: 'Receipt (JSON)', source_base64: Buffer.from(source).toString('base64') },
    });
    expect(json.statusCode).toBe(201);
    expect(json.json().format).toBe('docx');

    const boundary = 'paperlinkdocx';
    const form = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="receipt.docx"\r\nContent-Type: ${DOCX_TYPE}\r\n\r\n`,
      ),
      Buffer.from(source),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const multipart = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: form,
    });
    expect(multipart.statusCode).toBe(201);
    expect(multipart.json().format).toBe('docx');

    const generate = (values: Record<string, unknown>) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: auth(),
        payload: { template_id: raw.json().id, merge_parameters: values, destinations: { inkit_storage: {} } },
      });
    const missing = await generate({ customer: 'Pat' });
    expect(missing.statusCode).toBe(422);
    expect(missing.json().error.code).toBe('missing_variables');
    expect(missing.json().error.details).toEqual([
      expect.objectContaining({ field: 'merge_parameters.total', code: 'required' }),
    ]);

    const res = await generate({ customer: 'Pat Doe', total: 1234.5 });
    expect(res.statusCode).toBe(201);
    const pdf = await t.app.inject({
      method: 'GET',
      url: `/v1/documents/${res.json().document_id}/pdf`,
      headers: auth(),
    });
    const read = await readPdf(new Uint8Array(pdf.rawPayload));
    expect(read.text).toContain('Receipt for Pat Doe');
    expect(read.text).toContain('Total: 1234.5');
  });

  it('has the Word examples loaded, and the web app previews them with their sample values', async () => {
    const cookie = await webSession(t.app, t.key);
    for (const id of [EXAMPLE_IDS.letter_docx, EXAMPLE_IDS.invoice_docx]) {
      const res = await t.app.inject({ method: 'GET', url: `/app/templates/${id}/preview.pdf`, headers: { cookie } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/pdf');
      const read = await readPdf(new Uint8Array(res.rawPayload));
      // each example is stored with its sample.json as its version's sample values
      expect(read.text).toContain(
        id === EXAMPLE_IDS.letter_docx ? 'Re: Design proposal for the new visitor centre' : 'No. NW-2026-0142',
      );
    }
  });

  it('refuses a Word template where there is no LibreOffice to convert it, saying how to install it', async () => {
    await withEnv('LIBREOFFICE_PATH', '/nonexistent/soffice', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/templates',
        headers: { ...auth(), 'content-type': DOCX_TYPE },
        payload: Buffer.from(makeDocx(['{name}'])),
      });
      expect(res.statusCode).toBe(422);
      expect(res.json().error.code).toBe('format_unavailable');
      expect(res.json().error.message).toContain('apt-get install libreoffice-writer-nogui python3-uno');
    });
  });
});

describe('the Word examples', () => {
  afterAll(() => converter.close());

  it('letter: the sample of the other letters fills it, on US Letter, with its logo and page numbers', async () => {
    const { t, values, pdf } = await expectLetter('letter-docx', 'docx');
    expect(pdf.text).toContain(`Enclosure: ${values.enclosure}`);
    // a condition leaves its lines out when the value is empty
    const bare = await readPdf(await renderTemplate(t, { ...values, enclosure: '', recipient_title: '' }));
    expect(bare.text).not.toContain('Enclosure');
    expect(bare.text).not.toContain(values.recipient_title);
  });

  it('invoice: a table row per line item, the header row on each page, and the totals, on A4 as the others', async () => {
    const { values, pdf } = await expectInvoice('invoice-docx');
    expect(pdf.text.replace(/\s+/g, ' ')).toContain(values.notes);
    // the page number ends where the amounts and the totals end (it stood past them, on the page's margin)
    const right = (i: { x: number; width: number }) => Math.round(i.x + i.width);
    for (const [n, page] of pdf.pages.entries()) {
      const number = page.items.filter((i) => /\S/.test(i.str) && Math.abs(i.y - find(page, 'Page').y) < 1).pop()!;
      expect(`${n + 1}: ${Math.abs(right(number) - right(find(page, 'Amount')))}`).toMatch(
        new RegExp(`^${n + 1}: [0-2]$`),
      );
    }
    const last = pdf.pages[pdf.pages.length - 1];
    expect(Math.abs(right(find(last, values.total)) - right(find(last, 'Amount')))).toBeLessThanOrEqual(2);
  });
});

describe('Word templates from the CLI', () => {
  const dir = tempDir();
  it('renders a .docx with a JSON data file, and `paperlink examples` makes the Word examples too', async () => {
    const folder = path.join(root, 'examples/letter-docx');
    const out = path.join(dir, 'letter.pdf');
    const r = await cli([
      'render',
      path.join(folder, 'letter.docx'),
      '--data',
      path.join(folder, 'sample.json'),
      '--out',
      out,
    ]);
    expect(r.code).toBe(0);
    expect((await readPdf(fs.readFileSync(out))).text).toContain('Dr. Eleanor Vance');

    const all = await cli(['examples', '--out', dir]);
    expect(all.code).toBe(0);
    for (const name of ['letter-docx', 'invoice-docx'])
      expect((await readPdf(fs.readFileSync(path.join(dir, `${name}.pdf`)))).text).toContain('Northwind');
    // and the gallery, each template in XML and HTML
    for (const name of ['gallery-invoice-xml', 'gallery-receipt-html'])
      expect((await readPdf(fs.readFileSync(path.join(dir, `${name}.pdf`)))).text).toContain('Northwind');
  });
});
