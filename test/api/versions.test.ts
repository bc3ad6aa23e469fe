import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { png, root } from '../support/fixtures';
import { readPdf } from '../support/pdf';
import { BACKENDS, testService, type TestService } from '../support/service';

const xml = (words: string) =>
  `<document name="Versioned"><body><image src="mark.png" width="1in" alt="mark"/><p>${words} {{name}}</p></body></document>`;

describe.each(BACKENDS)('template versions on %s', (backend) => {
  let t: TestService;
  let postcardToken: string;
  beforeAll(async () => {
    // flows are run by the test (postcards.render), so a received postcard waits for a change of template
    t = await testService({ backend, service: { runFlows: false } });
    postcardToken = (await t.service.keys.create('postcard', 'form')).secret;
  });
  afterAll(() => t?.stop());

  const auth = () => ({ 'x-service-api-token': t.key });
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: auth() });
  const post = (url: string, payload?: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url, headers: { ...auth(), 'content-type': 'application/json' }, payload });
  const generate = (template_id: string, extra: Record<string, unknown> = {}) =>
    post('/v1/generate', {
      template_id,
      merge_parameters: { name: 'Ann' },
      destinations: { inkit_storage: {} },
      ...extra,
    });
  const textOf = async (documentId: string) =>
    (await readPdf((await get(`/v1/documents/${documentId}/pdf`)).rawPayload)).text;

  async function newTemplate(words = 'First'): Promise<string> {
    const res = await post('/v1/templates', {
      source: xml(words),
      assets: { 'mark.png': png.toString('base64') },
      sample_values: { name: 'Sam Sample' },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ version: 1, sample_values: { name: 'Sam Sample' } });
    return res.json().id as string;
  }

  it('saves each change as a new current version; a generate names one or takes the current, and says which', async () => {
    const id = await newTemplate();
    // the image is not sent again: the new version takes it from the current one
    const saved = await post(`/v1/templates/${id}/versions`, { source: xml('Second') });
    expect(saved.statusCode).toBe(201);
    expect(saved.json()).toMatchObject({ id: `${id}@2`, object: 'template_version', version: 2, current: true });
    expect((await get(`/v1/templates/${id}`)).json().version).toBe(2);

    const current = await generate(id);
    expect(current.statusCode).toBe(201);
    expect(current.json().template_version).toBe(2);
    expect(await textOf(current.json().document_id)).toContain('Second Ann');

    const older = await generate(id, { template_version: 1 });
    expect(older.json().template_version).toBe(1);
    expect(await textOf(older.json().document_id)).toContain('First Ann');
    expect((await get(`/v1/documents/${older.json().document_id}`)).json().template_version).toBe(1);

    const missing = await generate(id, { template_version: 9 });
    expect(missing.statusCode).toBe(422);
    expect(missing.json().error.details).toEqual([
      expect.objectContaining({ field: 'template_version', code: 'not_found' }),
    ]);
  });

  it('renders the version current when the request came, though the template changes before the engine runs it', async () => {
    const id = await newTemplate('Asked');
    const { documents } = t.service;
    const render = documents.generate.bind(documents);
    // the template changes between the request and the render (a Temporal activity run later, or again)
    const spy = jest.spyOn(documents, 'generate').mockImplementationOnce(async (...args) => {
      expect((await post(`/v1/templates/${id}/versions`, { source: xml('Changed') })).statusCode).toBe(201);
      return render(...args);
    });
    try {
      const res = await post('/v1/generate', {
        template_id: id,
        merge_parameters: { name: 'Ann' },
        destinations: { inkit_storage: {} },
        append: [{ template_id: id, merge_parameters: { name: 'Bo' } }],
      });
      expect(res.statusCode).toBe(201);
      expect(res.json().template_version).toBe(1);
      const text = await textOf(res.json().document_id);
      expect(text).toContain('Asked Ann');
      expect(text).toContain('Asked Bo');
    } finally {
      spy.mockRestore();
    }
  });

  it('lists versions newest first, page by page, and gives back each source as it was saved', async () => {
    const id = await newTemplate('One');
    for (const w of ['Two', 'Three'])
      expect((await post(`/v1/templates/${id}/versions`, { source: xml(w) })).statusCode).toBe(201);
    const first = await get(`/v1/templates/${id}/versions?limit=2`);
    expect(first.json().data.map((v: { version: number; current: boolean }) => [v.version, v.current])).toEqual([
      [3, true],
      [2, false],
    ]);
    expect(first.json().has_more).toBe(true);
    const rest = await get(`/v1/templates/${id}/versions?limit=2&starting_after=${first.json().next_cursor}`);
    expect(rest.json().data.map((v: { version: number }) => v.version)).toEqual([1]);
    expect(rest.json().has_more).toBe(false);

    const source = await get(`/v1/templates/${id}/versions/1/source`);
    expect(source.headers['content-type']).toContain('application/xml');
    // saved, never shown as a page of ours: an HTML template is the customer's code
    expect(source.headers['content-disposition']).toMatch(/^attachment;/);
    expect(source.headers['content-security-policy']).toBe('sandbox');
    expect(source.body).toBe(xml('One'));
    expect((await get(`/v1/templates/${id}/versions/2`)).json()).toMatchObject({ version: 2, current: false });
    expect((await get(`/v1/templates/${id}/versions/7`)).json().error.code).toBe('not_found');
    expect((await get(`/v1/templates/${id}/versions?starting_after=tmpl_other@2`)).statusCode).toBe(422);
  });

  it('makes an older version current again', async () => {
    const id = await newTemplate('Old');
    await post(`/v1/templates/${id}/versions`, { source: xml('New') });
    const back = await post(`/v1/templates/${id}/versions/1/make_current`);
    expect(back.statusCode).toBe(200);
    expect(back.json().version).toBe(1);
    const res = await generate(id);
    expect(res.json().template_version).toBe(1);
    expect(await textOf(res.json().document_id)).toContain('Old Ann');
    expect((await post(`/v1/templates/${id}/versions/5/make_current`)).json().error.code).toBe('not_found');
    expect((await post(`/v1/templates/tmpl_nosuch/versions/1/make_current`)).json().error.code).toBe('not_found');
  });

  it('keeps the sample values of the current version when a new version sends none', async () => {
    const id = await newTemplate();
    const saved = await post(`/v1/templates/${id}/versions`, { source: xml('Kept') });
    expect(saved.json().sample_values).toEqual({ name: 'Sam Sample' });
  });

  it('numbers two saves at once one after the other', async () => {
    const id = await newTemplate();
    const both = await Promise.all(['A', 'B'].map((w) => post(`/v1/templates/${id}/versions`, { source: xml(w) })));
    expect(both.map((r) => r.statusCode)).toEqual([201, 201]);
    expect(both.map((r) => r.json().version as number).sort()).toEqual([2, 3]);
  });

  it('two editors from the same version: the second save, naming its base_version, is a conflict and saves nothing', async () => {
    const id = await newTemplate();
    const both = await Promise.all(
      ['A', 'B'].map((w) => post(`/v1/templates/${id}/versions?base_version=1`, { source: xml(w) })),
    );
    expect(both.map((r) => r.statusCode).sort()).toEqual([201, 409]);
    expect(both.find((r) => r.statusCode === 409)!.json().error.code).toBe('version_conflict');
    expect((await get(`/v1/templates/${id}/versions`)).json().data).toHaveLength(2);
    // going back to version 1 moves the current version too: a change made from 2 conflicts with it
    await post(`/v1/templates/${id}/versions/1/make_current`);
    const stale = await post(`/v1/templates/${id}/versions?base_version=2`, { source: xml('C') });
    expect(stale.json().error.code).toBe('version_conflict');
    const fresh = await post(`/v1/templates/${id}/versions?base_version=1`, { source: xml('C') });
    expect(fresh.json()).toMatchObject({ version: 3, current: true });
  });

  it('stores a file that versions share once: text changes to a template with a font hold the font once', async () => {
    const font = fs.readFileSync(path.join(root, 'examples/gallery/fonts/PlayfairDisplay-SemiBold.ttf'));
    const other = fs.readFileSync(path.join(root, 'examples/gallery/fonts/SourceSerif4-Italic.ttf'));
    const source = (words: string) =>
      `<document><fonts><font family="F" src="f.ttf"/></fonts><body><p font="F">${words} {{name}}</p></body></document>`;
    const made = await post('/v1/templates', { source: source('v1'), assets: { 'f.ttf': font.toString('base64') } });
    const id = made.json().id as string;
    for (let v = 2; v <= 6; v++) await post(`/v1/templates/${id}/versions`, { source: source(`v${v}`) });
    // a new font at the same path is stored; going back to the first font again is not
    await post(`/v1/templates/${id}/versions`, { source: source('v7'), assets: { 'f.ttf': other.toString('base64') } });
    await post(`/v1/templates/${id}/versions`, { source: source('v8'), assets: { 'f.ttf': font.toString('base64') } });
    const held = await sql<{ n: number; bytes: number }>`select count(*) as n, sum(length(bytes)) as bytes
      from template_version_assets where template_id = ${id}`.execute(t.service.database.db);
    expect(Number(held.rows[0].n)).toBe(8);
    expect(Number(held.rows[0].bytes)).toBe(font.length + other.length);
    // every version renders with its own font
    for (const [version, face] of [
      [1, 'PlayfairDisplay'],
      [4, 'PlayfairDisplay'],
      [7, 'SourceSerif4'],
      [8, 'PlayfairDisplay'],
    ] as const) {
      const res = await generate(id, { template_version: version });
      const read = await readPdf((await get(`/v1/documents/${res.json().document_id}/pdf`)).rawPayload);
      expect(read.text).toContain(`v${version} Ann`);
      expect(read.pages[0].runs.filter((r) => r.text.includes('Ann')).map((r) => r.font.split('-')[0])).toEqual([face]);
    }
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/templates/${id}`, headers: auth() })).statusCode).toBe(
      200,
    );
    const left = await sql<{
      n: number;
    }>`select count(*) as n from template_version_assets where template_id = ${id}`.execute(t.service.database.db);
    expect(Number(left.rows[0].n)).toBe(0);
  });

  it('refuses a version that does not compile, and keeps the current one', async () => {
    const id = await newTemplate();
    const bad = await post(`/v1/templates/${id}/versions`, { source: '<document><body><p>{{name</p></body>' });
    expect(bad.statusCode).toBe(422);
    expect((await get(`/v1/templates/${id}`)).json().version).toBe(1);
    expect((await get(`/v1/templates/${id}/versions`)).json().data).toHaveLength(1);
  });

  it('renders a received postcard from the version current when it was received', async () => {
    const made = await post('/v1/templates', {
      source: '<document size="4in 6in"><body><p>Version one for {{first_name}}</p></body></document>',
    });
    const id = made.json().id as string;
    const intake = await t.app.inject({
      method: 'POST',
      url: '/postcards',
      headers: { 'content-type': 'application/json' },
      payload: {
        api_token: postcardToken,
        template_id: id,
        first_name: 'Jo',
        address_line_1: '1 Main St',
        address_city: 'Portland',
        address_state: 'OR',
        address_zip: '97201',
        address_country: 'US',
      },
    });
    expect(intake.statusCode).toBe(202);
    await post(`/v1/templates/${id}/versions`, {
      source: '<document size="4in 6in"><body><p>Version two for {{first_name}}</p></body></document>',
    });
    const pc = intake.json().id as string;
    expect(await t.service.postcards.render(pc)).toBe('rendered');
    const card = (await get(`/v1/postcards/${pc}`)).json();
    expect(card.template_version).toBe(1);
    expect(await textOf(card.document_id)).toContain('Version one for Jo');
  });

  describe('previews', () => {
    const documents = async () => (await get('/v1/documents?limit=100')).json().data.length as number;

    it('renders a source being edited with the template’s files and sample values, and stores nothing', async () => {
      const id = await newTemplate();
      const before = await documents();
      const res = await post('/v1/templates/preview', { template_id: id, source: xml('Draft') });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/pdf');
      expect((await readPdf(res.rawPayload)).text).toContain('Draft Sam Sample');
      // a value given wins over the sample; the template is unchanged
      const given = await post('/v1/templates/preview', { template_id: id, merge_parameters: { name: 'Zoë' } });
      expect((await readPdf(given.rawPayload)).text).toContain('First Zoë');
      expect(await documents()).toBe(before);
      expect((await get(`/v1/templates/${id}`)).json().version).toBe(1);
    });

    it('shows a variable with no value by its name, and answers one page as a PNG', async () => {
      const res = await post('/v1/templates/preview', {
        source: '<document><body><p>Dear {{customer}},</p></body></document>',
        page: 1,
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('image/png');
      expect(res.headers['paperlink-page-count']).toBe('1');
      expect(res.rawPayload.subarray(1, 4).toString()).toBe('PNG');
      const pdf = await post('/v1/templates/preview', {
        source: '<document><body><p>Dear {{customer}},</p></body></document>',
      });
      expect((await readPdf(pdf.rawPayload)).text).toContain('Dear «customer»,');
    });

    it('leaves a list empty when it has no value, as its mark cannot be a list', async () => {
      const res = await post('/v1/templates/preview', {
        source:
          '<document><body><p>To {{who}}</p><each var="items" as="item"><p>- {{item.name}}</p></each></body></document>',
      });
      expect(res.statusCode).toBe(200);
      expect((await readPdf(res.rawPayload)).text).toContain('To «who»');
    });

    it('answers a broken source or request with the error shape, and needs templates:write', async () => {
      const broken = await post('/v1/templates/preview', { source: '<document><body><p>{{x</p></body>' });
      expect(broken.statusCode).toBe(422);
      expect(broken.json().error.code).toBeDefined();
      const empty = await post('/v1/templates/preview', {});
      expect(empty.statusCode).toBe(422);
      expect(empty.json().error.details[0]).toMatchObject({ field: 'template_id', code: 'required' });
      expect((await post('/v1/templates/preview', { template_id: 'tmpl_nosuch' })).statusCode).toBe(404);
      // a preview by a key with only some of the scopes: it needs templates:write and templates:read
      const previewWith = async (scopes: string[]) => {
        const key = (await t.service.keys.create('api', scopes.join(' '), scopes)).secret;
        return t.app.inject({
          method: 'POST',
          url: '/v1/templates/preview',
          headers: { 'x-service-api-token': key, 'content-type': 'application/json' },
          payload: { template_id: EXAMPLE_IDS.letter },
        });
      };
      const res = await previewWith(['templates:read']);
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe('insufficient_scope');
      // a key that may write templates but not read them cannot see a stored one through a preview
      const blind = await previewWith(['templates:write']);
      expect(blind.statusCode).toBe(403);
      expect(blind.json().error.code).toBe('insufficient_scope');
      // a version number past the database's integer is refused, not a database error
      const huge = await post('/v1/generate', {
        template_id: EXAMPLE_IDS.letter,
        template_version: 3_000_000_000,
        merge_parameters: {},
        destinations: { inkit_storage: {} },
      });
      expect(huge.statusCode).toBe(422);
      expect(huge.json().error.details).toContainEqual(expect.objectContaining({ field: 'template_version' }));
    });
  });
});
