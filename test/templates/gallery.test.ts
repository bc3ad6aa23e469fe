/**
 * The starter gallery (issue 71): each template, in the XML layout language and in HTML, filled
 * with its sample values, is rendered and each page drawn to a PNG in test-results/gallery/ for a
 * person to look at; the test reads the PDFs back for the values' text and for the fonts: the
 * gallery's own (never a fallback), embedded as subsets whose every glyph decodes. Then the web
 * app's gallery page: thumbnails, and a copy into the user's templates that opens in the editor.
 */
import fs from 'node:fs';
import path from 'node:path';
import fontkit from '@pdf-lib/fontkit';
import { loadTemplate, renderTemplate, type RenderWarning } from '../../src/templates';
import { GALLERY, GALLERY_FORMATS, galleryTemplate, gallerySample } from '../../src/templates/gallery';
import { viewCopy } from '../../src/templates/viewcopy';
import { root } from '../support/fixtures';
import { fontPrograms, readPdf } from '../support/pdf';
import { webSession, testService, type TestService } from '../support/service';

const ARTIFACTS = path.join(root, 'test-results', 'gallery');

/** The font families each entry is set in (PostScript names' prefixes). */
const FAMILIES: Record<string, string[]> = {
  invoice: ['Inter'],
  letter: ['SourceSerif4', 'Inter'],
  receipt: ['Inter'],
  certificate: ['PlayfairDisplay', 'SourceSerif4', 'Inter'],
  postcard: ['PlayfairDisplay', 'Inter'],
};

/** What of a sample value must be readable in the PDF: each line of a short value, the start of a long one, each list item's description. */
function expectedTexts(sample: Record<string, string>): string[] {
  return Object.values(sample).flatMap((v) => {
    if (v.startsWith('[')) return (JSON.parse(v) as { description: string }[]).map((i) => i.description);
    if (v.length > 120) return [v.slice(0, 30)];
    return v.split('\n');
  });
}

const squeeze = (s: string) => s.replace(/\s+/g, ' ');

describe('the starter gallery, rendered', () => {
  beforeAll(() => fs.mkdirSync(ARTIFACTS, { recursive: true }));

  it.each(GALLERY.flatMap((e) => GALLERY_FORMATS.map((f) => [e.key, f] as const)))(
    '%s (%s): its sample values on its pages, in its own fonts, every glyph drawable',
    async (key, format) => {
      const { source, assets } = await galleryTemplate(key, format);
      const sample = gallerySample(key);
      const warnings: RenderWarning[] = [];
      const pdf = await renderTemplate(await loadTemplate(source, { assets }), sample, { warnings });
      expect(warnings).toEqual([]);

      const read = await readPdf(pdf);
      // a postcard is its front and back; every other fits on one page with its samples
      expect(read.pages).toHaveLength(key === 'postcard' ? 2 : 1);
      for (let page = 1; page <= read.pages.length; page++) {
        const png = (await viewCopy(pdf, { page })).bytes;
        fs.writeFileSync(path.join(ARTIFACTS, `${key}-${format}-${page}.png`), png);
      }
      const text = squeeze(read.text);
      for (const expected of expectedTexts(sample)) expect(text).toContain(squeeze(expected));

      // the text a reader sees is drawn in the gallery's fonts, none in a fallback (a character the
      // font lacks); an image's alt text is drawn unseen in the built-in face. Chromium draws an HTML
      // page's running footer in a system face: it has no web fonts
      const seen = read.pages.flatMap((p) => p.runs.filter((r) => !r.invisible && r.text.trim()));
      const families = new Set(seen.map((r) => r.font.split('-')[0]));
      for (const family of FAMILIES[key]) expect(families).toContain(family);
      if (format === 'xml') expect([...families].sort()).toEqual([...FAMILIES[key]].sort());
      const fonts = await fontPrograms(pdf);
      for (const { name, program } of fonts) {
        expect({ name, embedded: program.length > 0 }).toEqual({ name, embedded: true });
        // a TrueType program (1.0 or 'true'): what Paperlink and Chromium embed for these fonts
        expect({ name, sfnt: [0x00010000, 0x74727565].includes(program.readUInt32BE(0)) }).toEqual({
          name,
          sfnt: true,
        });
        const font = fontkit.create(program);
        let outlined = 0;
        for (let id = 0; id < font.numGlyphs; id++)
          if ((font.getGlyph(id).path as unknown as { commands: unknown[] }).commands.length) outlined++;
        // every glyph decodes (above); in Paperlink's subsets, all but the empty ones (.notdef in
        // some fonts, the space) have an outline (Chromium's keep each glyph's id, the rest blank)
        if (format === 'xml')
          expect({ name, fewBlank: font.numGlyphs - outlined <= 3 }).toEqual({ name, fewBlank: true });
      }
    },
  );

  it.each([...GALLERY_FORMATS])(
    'letter (%s), long: the closing, signature and enclosure stay with the last lines, with page numbers',
    async (format) => {
      const { source, assets } = await galleryTemplate('letter', format);
      const sample = gallerySample('letter');
      const last = sample.body.slice(sample.body.lastIndexOf('. ', sample.body.length - 3) + 2);
      // a body from one page to three, a line or so more each time
      for (const repeat of [1, 2, 5, 9]) {
        const body = [sample.body, ...Array<string>(repeat).fill(sample.body.slice(0, 400))].reverse().join('\n\n');
        const read = await readPdf(await renderTemplate(await loadTemplate(source, { assets }), { ...sample, body }));
        const texts = read.pages.map((p) => squeeze(p.text));
        const closing = texts.findIndex((t) => t.includes('Kind regards'));
        const at = { repeat, pages: texts.length, closing };
        expect({ ...at, lastLines: texts[closing].includes(squeeze(last)) }).toEqual({ ...at, lastLines: true });
        expect({ ...at, signed: texts[closing].includes(`${sample.enclosure}`) }).toEqual({ ...at, signed: true });
        // from page 2 on at least (the XML letter's first page has its letterhead instead)
        texts.forEach((t, i) => i > 0 && expect(t).toContain(`Page ${i + 1} of ${texts.length}`));
      }
    },
  );
});

describe('the web app gallery', () => {
  let t: TestService;
  let cookie: string;
  beforeAll(async () => {
    t = await testService();
    cookie = await webSession(t.app, t.key);
  });
  afterAll(() => t?.stop());
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });

  it('shows each entry with its thumbnail, and copies one into the templates and opens it in the editor', async () => {
    const page = await get('/app/templates/gallery');
    expect(page.statusCode).toBe(200);
    for (const e of GALLERY) expect(page.body).toContain(`/app/templates/gallery/${e.key}/thumbnail.png`);
    const thumb = await get('/app/templates/gallery/certificate/thumbnail.png');
    expect(thumb.statusCode).toBe(200);
    expect(thumb.headers['content-type']).toBe('image/png');
    expect(thumb.rawPayload.subarray(1, 4).toString()).toBe('PNG');
    expect((await get('/app/templates/gallery/brochure/thumbnail.png')).statusCode).toBe(404);

    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1];
    const before = (await t.service.templates.list({ limit: 100 })).data.length;
    const used = await t.app.inject({
      method: 'POST',
      url: '/app/templates/gallery/invoice/use',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(csrf)}&format=xml`,
    });
    expect(used.statusCode).toBe(303);
    const id = /^\/app\/templates\/(tmpl_[a-z0-9]+)\/edit\?done=template_copied$/.exec(
      used.headers.location as string,
    )![1];
    const copy = await t.service.templates.get(id);
    expect(copy).toMatchObject({ name: 'Invoice', format: 'xml', version: 1, sample_values: gallerySample('invoice') });
    expect((await t.service.templates.list({ limit: 100 })).data.length).toBe(before + 1);
    // the copy has the gallery's files: its preview is set in Inter, not a fallback
    const preview = await get(`/app/templates/${id}/preview.pdf`);
    expect(preview.statusCode).toBe(200);
    const runs = (await readPdf(preview.rawPayload)).pages[0].runs.filter((r) => !r.invisible);
    expect(new Set(runs.map((r) => r.font.split('-')[0]))).toEqual(new Set(['Inter']));
    expect((await get(`/app/templates/${id}/edit`)).statusCode).toBe(200);
  });

  it("a template's thumbnail is drawn once however many lists ask, and not shown once the template is deleted", async () => {
    const made = await t.service.templates.create({
      source: '<document><body><p>Thumb {{name}}</p></body></document>',
    });
    const url = `/app/templates/${made.id}/versions/1/thumbnail.png`;
    const render = jest.spyOn(t.service.renderer, 'render');
    try {
      const first = await Promise.all([get(url), get(url), get(url)]);
      expect(first.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect((await get(url)).rawPayload.equals(first[0].rawPayload)).toBe(true);
      expect(render).toHaveBeenCalledTimes(1);
    } finally {
      render.mockRestore();
    }
    await t.service.templates.remove(made.id);
    expect((await get(url)).statusCode).toBe(404);
  });

  it('the API lists the gallery and copies one in HTML; a document generated from the copy is set in Inter', async () => {
    const auth = { 'x-service-api-token': t.key };
    const list = await t.app.inject({ method: 'GET', url: '/v1/templates/gallery', headers: auth });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((e: { key: string }) => e.key)).toEqual(GALLERY.map((e) => e.key));
    expect(list.json().data[0]).toMatchObject({ object: 'gallery_template', formats: ['xml', 'html'] });

    const use = (key: string, body: Record<string, unknown>) =>
      t.app.inject({
        method: 'POST',
        url: `/v1/templates/gallery/${key}/use`,
        headers: { ...auth, 'content-type': 'application/json' },
        payload: body,
      });
    const copied = await use('receipt', { format: 'html', name: 'Our receipt' });
    expect(copied.statusCode).toBe(201);
    expect(copied.json()).toMatchObject({ name: 'Our receipt', format: 'html', version: 1 });
    expect(copied.json().variables).toEqual(expect.arrayContaining(Object.keys(gallerySample('receipt'))));
    const unknown = await use('brochure', {});
    expect([unknown.statusCode, unknown.json().error.code]).toEqual([404, 'not_found']);
    const docx = await use('receipt', { format: 'docx' });
    expect([docx.statusCode, docx.json().error.code]).toEqual([422, 'validation_failed']);
    // an empty object: the XML version, named as in the gallery
    const bare = await use('letter', {});
    expect([bare.statusCode, bare.json().format, bare.json().name]).toEqual([201, 'xml', 'Letter']);

    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: {
        template_id: copied.json().id,
        merge_parameters: gallerySample('receipt'),
        destinations: { inkit_storage: {} },
      },
    });
    expect(made.statusCode).toBe(201);
    const pdf = await t.app.inject({
      method: 'GET',
      url: `/v1/documents/${made.json().document_id}/pdf`,
      headers: auth,
    });
    const read = await readPdf(pdf.rawPayload);
    expect(read.text).toContain(gallerySample('receipt').amount_paid);
    expect(read.pages[0].runs.some((r) => r.font.startsWith('Inter'))).toBe(true);
  });
});
