/**
 * `append` on POST /v1/generate: the request's template, then more templates and uploaded PDFs,
 * merged into one stored document in order, with one outline and the XML parts' page numbers
 * running across the whole; broken parts are named where they are, and nothing is stored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PDFDocument } from 'pdf-lib';
import { DEFAULT_LIMITS } from '../../src/config';
import { setRenderLimits } from '../../src/templates/limits';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { root } from '../support/fixtures';
import { readOutline, readPdf } from '../support/pdf';
import { rowCount } from '../support/rows';
import { BACKENDS, testService, type TestService } from '../support/service';

const sample = (folder: string) =>
  JSON.parse(fs.readFileSync(path.join(root, 'examples', folder, 'sample.json'), 'utf8')) as Record<string, string>;

describe.each(BACKENDS)('merging with append on %s', (backend) => {
  let t: TestService;
  let upload: Buffer;
  beforeAll(async () => {
    t = await testService({ backend });
    // a PDF from elsewhere: two pages, with a JavaScript action a viewer would run on opening
    const doc = await PDFDocument.create();
    for (const text of ['Terms one', 'Terms two']) doc.addPage([300, 300]).drawText(text, { x: 20, y: 150 });
    doc.addJavaScript('hello', 'app.alert("from the upload")');
    upload = Buffer.from(await doc.save());
  });
  afterAll(() => t.stop());

  const generate = (body: unknown) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'content-type': 'application/json', 'x-service-api-token': t.key },
      payload: JSON.stringify(body),
    });
  const count = () => rowCount(t.service.database.db, 'documents');

  it('stores one document: the parts in order, one outline, the XML parts numbered across the whole', async () => {
    const res = await generate({
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: sample('letter'),
      destinations: { inkit_storage: { name: 'Proposal pack' } },
      append: [
        { template_id: EXAMPLE_IDS.invoice, merge_parameters: sample('invoice') },
        { pdf: upload.toString('base64'), title: 'Terms' },
      ],
    });
    expect(res.statusCode).toBe(201);
    const bytes = (
      await t.app.inject({
        method: 'GET',
        url: `/v1/documents/${res.json().document_id}/pdf`,
        headers: { 'x-service-api-token': t.key },
      })
    ).rawPayload;
    const pdf = await readPdf(bytes);
    const letter = (
      await readPdf(
        await t.service.renderer.render(await t.service.templates.load(EXAMPLE_IDS.letter), sample('letter')),
      )
    ).pages.length;
    const invoice = pdf.pages.findIndex((p) => p.text.includes('INVOICE'));
    expect(invoice).toBe(letter);
    const total = pdf.pages.length;
    expect(pdf.pages.slice(-2).map((p) => p.text)).toEqual(['Terms one', 'Terms two']);
    // the invoice's footer counts the whole document
    expect(pdf.pages[invoice].text).toContain(`Page ${invoice + 1} of ${total}`);
    expect(pdf.pages[total - 3].text).toContain(`Page ${total - 2} of ${total}`);
    expect(await readOutline(bytes)).toEqual([
      { title: 'Business letter', page: 0 },
      { title: 'Invoice', page: invoice },
      { title: 'Terms', page: total - 2 },
    ]);
    // the upload's JavaScript did not come along
    expect(Buffer.from(bytes).toString('latin1')).not.toMatch(/\/JavaScript|app\.alert/);
  });

  it('refuses parts that add up to more pages than a document may have, before merging any', async () => {
    setRenderLimits({ ...DEFAULT_LIMITS, pages: 4 });
    const merge = jest.spyOn(t.service.renderer, 'merge');
    try {
      const before = await count();
      const res = await generate({
        template_id: EXAMPLE_IDS.letter,
        merge_parameters: sample('letter'),
        destinations: { inkit_storage: {} },
        append: [{ pdf: upload.toString('base64') }, { pdf: upload.toString('base64') }],
      });
      expect(res.statusCode).toBe(422);
      expect(res.json().error.code).toBe('render_limit_exceeded');
      expect(merge).not.toHaveBeenCalled();
      expect(await count()).toBe(before);
    } finally {
      merge.mockRestore();
      setRenderLimits(DEFAULT_LIMITS);
    }
  });

  it('names each broken part where it is, stores nothing, and refuses a standard the merge cannot meet', async () => {
    const before = await count();
    const broken = await generate({
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: sample('letter'),
      destinations: { inkit_storage: {} },
      append: [
        { template_id: 'tmpl_nope', merge_parameters: {} },
        { template_id: EXAMPLE_IDS.invoice, merge_parameters: { invoice_number: 'x' } },
        { pdf: 'not base64!' },
        { template_id: EXAMPLE_IDS.invoice, pdf: upload.toString('base64') },
      ],
    });
    expect(broken.statusCode).toBe(422);
    const fields = broken.json().error.details.map((d: { field: string; code: string }) => `${d.field} ${d.code}`);
    expect(fields).toEqual(
      expect.arrayContaining([
        'append[0].template_id not_found',
        'append[1].merge_parameters.client_name required',
        'append[2].pdf invalid',
        'append[3] required',
      ]),
    );
    // a part of the wrong shape is refused by the schema, before any part is read
    const shape = await generate({
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: sample('letter'),
      destinations: { inkit_storage: {} },
      append: [{ template_id: 'tmpl_nope' }, { pdf: upload.toString('base64'), colour: 'red' }],
    });
    expect(shape.statusCode).toBe(422);
    expect(shape.json().error.details.map((d: { field: string; code: string }) => `${d.field} ${d.code}`)).toEqual([
      'append[1].colour unknown_field',
    ]);
    const unreadable = await generate({
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: sample('letter'),
      destinations: { inkit_storage: {} },
      append: [{ pdf: Buffer.from('%PDF-1.7\nthis is not a PDF').toString('base64') }],
    });
    expect(unreadable.statusCode).toBe(422);
    expect(unreadable.json().error.details).toEqual([
      expect.objectContaining({ field: 'append[0].pdf', code: 'invalid' }),
    ]);
    for (const [standard, append] of [
      ['PDF/UA-1', [{ template_id: EXAMPLE_IDS.invoice, merge_parameters: sample('invoice') }]],
      ['PDF/A-2b', [{ pdf: upload.toString('base64') }]],
    ] as const) {
      const refused = await generate({
        template_id: EXAMPLE_IDS.letter,
        merge_parameters: sample('letter'),
        destinations: { inkit_storage: {} },
        pdf_standard: standard,
        append,
      });
      expect(refused.statusCode).toBe(422);
      expect(refused.json().error.code).toBe('standard_unavailable');
    }
    expect(await count()).toBe(before);
  });
});
