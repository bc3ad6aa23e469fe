/**
 * Postcards a print shop accepts: the PDF of a template made for a postcard size carries the boxes
 * a printer reads (TrimBox, BleedBox), is refused where a printer would refuse it, warns with where
 * of what a printer would print anyway, and is proofed as a PNG. Test tokens' postcards say so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PDFDocument, PDFName, StandardFonts, type PDFPage } from 'pdf-lib';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { PaperlinkError } from '../../src/errors';
import { pageOf, presetTable, PRESETS, PRESET_NAMES, trimBox } from '../../src/templates/presets';
import { inProcessRenderer } from '../../src/templates/pool';
import { printReady } from '../../src/templates/print';
import { converter } from '../../src/templates/docx';
import { makeDocx } from '../support/docx';
import { root } from '../support/fixtures';
import { eventually } from '../support/eventually';
import { sendPostcard, testService, webSession, type TestService } from '../support/service';

const example = path.join(root, 'examples/postcard-4x6');
const sample = JSON.parse(fs.readFileSync(path.join(example, 'sample.json'), 'utf8')) as Record<string, string>;
const assets = async (p: string) => new Uint8Array(fs.readFileSync(path.join(example, p)));

async function render(source: string, values: Record<string, string> = {}): Promise<Uint8Array> {
  const t = await inProcessRenderer.load(source, { assets });
  return inProcessRenderer.render(t, values);
}

/** A page's box as [left, bottom, right, top], read from the PDF's own dictionary. */
function box(page: PDFPage, name: 'TrimBox' | 'BleedBox'): number[] | undefined {
  const value = page.node.get(PDFName.of(name));
  const array = value && (page.doc.context.lookup(value) as unknown as { asArray(): { asNumber(): number }[] });
  return array ? array.asArray().map((n) => n.asNumber()) : undefined;
}

async function refusal(work: Promise<unknown>): Promise<{ code: string; details: string[] }> {
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof PaperlinkError)) throw new Error(`expected a refusal, got ${String(err)}`);
  return { code: err.code, details: err.details.map((d) => `${d.field}:${d.code}`) };
}

describe('print-ready postcards', () => {
  it('marks every preset: a two-page PDF its size with bleed, with TrimBox and BleedBox a printer reads back', async () => {
    for (const name of PRESET_NAMES) {
      const preset = PRESETS[name];
      const pdf = await render(
        `<document postcard="${name.toLowerCase()}" margin="0.5in"><body><p>Front</p><page-break/><p>Back</p></body></document>`,
      );
      const printed = await printReady(pdf);
      expect([printed.size, printed.warnings]).toEqual([name, []]);
      const doc = await PDFDocument.load(printed.pdf);
      expect(doc.getPageCount()).toBe(2);
      const [w, h] = pageOf(preset);
      const trim = trimBox(preset);
      for (const page of doc.getPages()) {
        expect([page.getWidth(), page.getHeight()].map((v) => v.toFixed(2))).toEqual([w, h].map((v) => v.toFixed(2)));
        expect(box(page, 'BleedBox')!.map((v) => v.toFixed(2))).toEqual([0, 0, w, h].map((v) => v.toFixed(2)));
        expect(box(page, 'TrimBox')!.map((v) => v.toFixed(2))).toEqual(
          [trim.x, trim.y, trim.x + trim.width, trim.y + trim.height].map((v) => v.toFixed(2)),
        );
      }
    }
    // the 4x6 is Lob's artboard: 6.25 × 4.25 in, trimmed 1/8 in on every side
    expect(pageOf(PRESETS['4x6'])).toEqual([450, 306]);
    // and the docs say what each size requires, as the presets declare it
    expect(fs.readFileSync(path.join(root, 'docs/postcards.md'), 'utf8')).toContain(presetTable());
  });

  it('the print-ready example postcard is print-ready with no warning: full bleed at 300 pixels an inch, the address area empty', async () => {
    const t = await inProcessRenderer.load(fs.readFileSync(path.join(example, 'postcard.xml'), 'utf8'), { assets });
    expect(t.postcard).toBe('4x6');
    const printed = await printReady(await inProcessRenderer.render(t, sample), t.postcard);
    expect(printed.warnings).toEqual([]);
  });

  it('warns, with the side and where, of text outside the safe zone, ink in the address area and a low-resolution image', async () => {
    // a 150 × 100 pixel image placed 2 × 1.33 in: 75 pixels an inch
    const canvas = createCanvas(150, 100);
    canvas.getContext('2d').fillRect(0, 0, 150, 100);
    const small = new Uint8Array(await canvas.encode('png'));
    const t = await inProcessRenderer.load(
      `<document postcard="4x6" margin="0.25in"><body>
        <p x="4" y="100" width="200">Too close to the edge</p>
        <image src="small.png" x="1in" y="2in" width="2in" height="1.3333in"/>
        <page-break/>
        <p>Safe text</p>
        <rect x="5in" y="3in" width="0.5in" height="0.5in" fill="#000000"/>
      </body></document>`,
      { assets: async (p) => (p === 'small.png' ? small : undefined) },
    );
    const { warnings } = await printReady(await inProcessRenderer.render(t, {}), t.postcard);
    expect(warnings.map((w) => [w.code, w.side]).sort()).toEqual([
      ['ink_in_address_area', 'back'],
      ['low_resolution', 'front'],
      ['outside_safe_zone', 'front'],
    ]);
    const where = Object.fromEntries(warnings.map((w) => [w.code, w.box]));
    // the square drawn at 5in, 3in (points from the top left), half an inch wide
    expect(where.ink_in_address_area.x).toBeCloseTo(360, 0);
    expect(where.ink_in_address_area.y).toBeCloseTo(216, 0);
    expect(where.ink_in_address_area.width).toBeCloseTo(36, 0);
    expect(where.low_resolution).toMatchObject({ x: 72, y: 144, width: 144 });
    expect(where.outside_safe_zone.x).toBeCloseTo(4, 0);
    expect(warnings.find((w) => w.code === 'low_resolution')!.message).toMatch(/\b75\b/);
  });

  it('refuses what a printer refuses: one page, the wrong size, the size the template does not name, a font not embedded', async () => {
    const onePage = await render('<document postcard="6x9"><body><p>Only a front</p></body></document>');
    expect(await refusal(printReady(onePage))).toEqual({ code: 'not_print_ready', details: ['pages:page_count'] });
    const letter = await render('<document><body><p>A</p><page-break/><p>B</p></body></document>');
    expect(await refusal(printReady(letter))).toEqual({
      code: 'not_print_ready',
      details: ['front:page_size', 'back:page_size'],
    });
    const a6 = await render('<document postcard="A6"><body><p>A</p><page-break/><p>B</p></body></document>');
    expect((await refusal(printReady(a6, '4x6'))).details).toEqual(['front:page_size', 'back:page_size']);
    // a PDF that names Helvetica without carrying it, at the right size
    const doc = await PDFDocument.create();
    const font = await doc.embedFont(StandardFonts.Helvetica);
    for (const side of ['Front', 'Back']) doc.addPage(pageOf(PRESETS['4x6'])).drawText(side, { x: 40, y: 40, font });
    expect(await refusal(printReady(await doc.save(), '4x6'))).toEqual({
      code: 'not_print_ready',
      details: ['fonts:font_not_embedded'],
    });
  });

  it('refuses a postcard template at upload when a printer would refuse what it prints', async () => {
    const t = await testService();
    try {
      const refused = await refusal(
        t.service.templates.create({ source: '<document postcard="4x6"><body><p>{{name}}</p></body></document>' }),
      );
      expect(refused).toEqual({ code: 'not_print_ready', details: ['pages:page_count'] });
      expect(
        await refusal(
          t.service.templates.create({ source: '<document postcard="5x7"><body><p>x</p></body></document>' }),
        ),
      ).toMatchObject({ code: 'template_invalid' });

      // one a printer would print, with what it warns of, where: in the answer, and kept with the version
      const upload = await t.app.inject({
        method: 'POST',
        url: '/v1/templates',
        headers: { 'x-service-api-token': t.key, 'content-type': 'application/xml' },
        payload:
          '<document postcard="4x6" margin="0.5in"><body><p>Hello {{name}}</p><page-break/><rect x="5in" y="3in" width="0.5in" height="0.5in" fill="#000000"/></body></document>',
      });
      expect(upload.statusCode).toBe(201);
      const made = upload.json();
      expect([
        made.postcard,
        made.print_warnings.map((w: { code: string; field: string }) => [w.code, w.field]),
      ]).toEqual(['4x6', [['ink_in_address_area', 'back']]]);
      expect(made.print_warnings[0].box.x).toBeCloseTo(360, 0);
      const read = await t.app.inject({
        method: 'GET',
        url: `/v1/templates/${made.id}/versions/1`,
        headers: { 'x-service-api-token': t.key },
      });
      expect(read.json()).toMatchObject({ postcard: '4x6', print_warnings: made.print_warnings });
      // and on the template's page in the web app
      const cookie = await webSession(t.app, t.key);
      const page = await t.app.inject({ method: 'GET', url: `/app/templates/${made.id}/preview`, headers: { cookie } });
      expect(page.body).toContain('Print check (4x6 postcard)');
      expect(page.body).toContain(`<strong>back</strong>: ${made.print_warnings[0].message}`);
      // a template that is not a postcard has neither
      const letter = await t.app.inject({
        method: 'GET',
        url: '/v1/templates/tmpl_example_letter',
        headers: { 'x-service-api-token': t.key },
      });
      expect(letter.json()).toMatchObject({ postcard: null, print_warnings: [] });
    } finally {
      await t.stop();
    }
  });
});

describe('postcard templates in Word and as PDF forms', () => {
  afterAll(() => converter.close());

  it('name their size in their Keywords and are checked at upload as any postcard template', async () => {
    const t = await testService();
    try {
      const [w, h] = pageOf(PRESETS['4x6']);
      const docx = (keywords: string, size: { width?: number; height?: number } = { width: w, height: h }) =>
        makeDocx(['Hello {name}', { pageBreak: true }, 'The back'], { ...size, keywords, margin: 27 });
      const word = await t.service.templates.create({ source: docx('greetings, paperlink-postcard:4x6') });
      expect(word).toMatchObject({ format: 'docx', postcard: '4x6', variables: ['name'] });

      // a PDF form: each page the 4x6 page, a text field on the front
      const doc = await PDFDocument.create();
      const front = doc.addPage([w, h]);
      doc.addPage([w, h]);
      doc.getForm().createTextField('name').addToPage(front, { x: 40, y: 200, width: 200, height: 24 });
      doc.setKeywords(['paperlink-postcard=4x6']);
      const form = await t.service.templates.create({ source: await doc.save() });
      expect(form).toMatchObject({ format: 'pdf', postcard: '4x6', variables: ['name'] });

      // a size there is not, and a page that is not the size named: refused
      expect(await refusal(t.service.templates.create({ source: docx('paperlink-postcard:5x7') }))).toMatchObject({
        code: 'template_invalid',
      });
      expect(await refusal(t.service.templates.create({ source: docx('paperlink-postcard:4x6', {}) }))).toEqual({
        code: 'not_print_ready',
        details: ['front:page_size', 'back:page_size'],
      });
    } finally {
      await t.stop();
    }
  });
});

describe('proofs and test tokens', () => {
  let t: TestService;
  let templateId: string;
  beforeAll(async () => {
    t = await testService();
    templateId = (
      await t.service.templates.create({ source: fs.readFileSync(path.join(example, 'postcard.xml'), 'utf8'), assets })
    ).id;
  });
  afterAll(() => t?.stop());

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { 'x-service-api-token': t.key } });
  const send = (token: string, extra: Record<string, string> = {}) =>
    sendPostcard(t.app, token, { template_id: templateId, ...sample, ...extra });
  const rendered = async (id: string) => {
    await (t.service.engine as { drain?: () => Promise<void> }).drain?.();
    await eventually(async () => (await get(`/v1/postcards/${id}`)).json().status !== 'received', `${id} settled`, 20);
    return (await get(`/v1/postcards/${id}`)).json();
  };

  it("a test token's postcard is rendered for its size, marked test in the API and its events, and proofed", async () => {
    const { secret, key } = await t.service.keys.create('postcard', 'staging form', undefined, { test: true });
    expect([secret.startsWith('plp_test_'), key.test]).toEqual([true, true]);
    // events are kept for a subscriber (never delivered here: the test reads them where they are written)
    await t.service.webhooks.create({
      url: 'https://hooks.example.com/paperlink',
      events: ['postcard.received', 'postcard.rendered'],
    });
    const id = await send(secret);
    const p = await rendered(id);
    expect(p).toMatchObject({ status: 'rendered', test: true, size: '4x6', warnings: [] });
    const events = await t.service.database.db
      .selectFrom('events')
      .select(['type', 'data'])
      .where('resource_id', '=', id)
      .execute();
    expect(events.map((e) => [e.type, (JSON.parse(e.data) as { object: { test: boolean } }).object.test])).toEqual([
      ['postcard.received', true],
      ['postcard.rendered', true],
    ]);

    const proof = await get(`/v1/postcards/${id}/proof`);
    expect([proof.statusCode, proof.headers['content-type']]).toEqual([200, 'image/png']);
    const both = await loadImage(proof.rawPayload);
    // the front above the back, each 1200 pixels wide at the page's proportions, a gap between
    expect(both.width).toBe(1200);
    const side = Math.round(306 * (1200 / 450));
    expect(both.height).toBe(2 * side + 30);
    const back = await loadImage((await get(`/v1/postcards/${id}/proof?side=back&width=450`)).rawPayload);
    expect([back.width, back.height]).toEqual([450, 306]);
    // the guides are drawn over the page: the trim line 9 points in, and the tinted address area
    const pixel = async (url: string, x: number, y: number) => {
      const img = await loadImage((await get(url)).rawPayload);
      const c = createCanvas(img.width, img.height);
      c.getContext('2d').drawImage(img, 0, 0);
      return [...c.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3)];
    };
    const plain = `/v1/postcards/${id}/proof?side=back&width=450`;
    const guided = `${plain}&guides=true`;
    expect(await pixel(plain, 100, 9)).toEqual([255, 255, 255]);
    expect(await pixel(guided, 100, 9)).not.toEqual([255, 255, 255]);
    const inAddress = [430 - 30, 306 - 40] as const;
    expect(await pixel(plain, ...inAddress)).toEqual([255, 255, 255]);
    const tinted = await pixel(guided, ...inAddress);
    expect(tinted[0]).toBeGreaterThan(tinted[1]);

    expect((await get(`/v1/postcards/${id}/proof?width=5`)).statusCode).toBe(422);
    // the web app's list shows it as test, with a thumbnail of its front that loads
    const cookie = await webSession(t.app, t.key);
    const list = await t.app.inject({ method: 'GET', url: '/app/postcards', headers: { cookie } });
    const row = list.body.slice(list.body.indexOf(`/app/postcards/${id}/proof`) - 200, list.body.indexOf(id) + 2000);
    expect(row).toContain('badge test');
    const thumb = /src="(\/app\/postcards\/[^"]+\/proof[^"]*)"/.exec(list.body)![1].replace(/&amp;/g, '&');
    const small = await t.app.inject({ method: 'GET', url: thumb, headers: { cookie } });
    expect([small.statusCode, (await loadImage(small.rawPayload)).width]).toEqual([200, 96]);
    expect((await get('/v1/postcards/pc_nope/proof')).statusCode).toBe(404);
  });

  it('a live token makes live postcards; a postcard of a template with no size has no proof (409)', async () => {
    const live = (await t.service.keys.create('postcard', 'website')).secret;
    expect(live.startsWith('plp_test_')).toBe(false);
    expect(await rendered(await send(live))).toMatchObject({ test: false, size: '4x6' });
    const plain = await t.service.templates.create({
      source: '<document size="postcard-6x4"><body><p>{{first_name}}</p></body></document>',
    });
    const res = await t.app.inject({
      method: 'POST',
      url: '/postcards',
      headers: { 'content-type': 'application/json' },
      payload: { api_token: live, ...sample, template_id: plain.id },
    });
    const p = await rendered(res.json().id);
    expect([p.status, p.size]).toEqual(['rendered', null]);
    const proof = await get(`/v1/postcards/${p.id}/proof`);
    expect([proof.statusCode, proof.json().error.code]).toEqual([409, 'proof_unavailable']);
    await expect(t.service.keys.create('api', 'x', undefined, { test: true })).rejects.toMatchObject({
      code: 'validation_failed',
    });
  });
});
