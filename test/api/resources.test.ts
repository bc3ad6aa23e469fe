import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { PAGE_IMAGE_WIDTH } from '../../src/templates/viewcopy';
import { fillableForm, png, root } from '../support/fixtures';
import { readPdf } from '../support/pdf';
import { BACKENDS, testService, type TestService } from '../support/service';

const postcardValues = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

function multipart(parts: { name: string; filename?: string; type?: string; data: Buffer | string }[]): {
  payload: Buffer;
  headers: Record<string, string>;
} {
  const boundary = `----paperlink${crypto.randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}`;
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`,
      ),
    );
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

describe.each(BACKENDS)('templates and documents on %s', (backend) => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService({ backend, config: { bodyLimit: 64 * 1024 } });
  });
  afterAll(() => t?.stop());
  let letterVariables: string[] = [];
  beforeAll(async () => {
    letterVariables = (await t.service.templates.load(EXAMPLE_IDS.letter)).variables;
  });

  const auth = () => ({ 'x-service-api-token': t.key });
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: auth() });
  const del = (url: string) => t.app.inject({ method: 'DELETE', url, headers: auth() });
  const generate = (template_id: string, merge_parameters: Record<string, string>, name?: string) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: { template_id, merge_parameters, destinations: { inkit_storage: name ? { name } : {} } },
    });

  it('has the example templates from the first start, with their variables', async () => {
    const res = await get(`/v1/templates/${EXAMPLE_IDS.postcard}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: EXAMPLE_IDS.postcard, object: 'template', format: 'xml' });
    expect(res.json().variables.sort()).toEqual(Object.keys(postcardValues).sort());
    // what a postcard request may leave out, with the text it takes then
    expect(res.json().optional_variables).toEqual(
      expect.arrayContaining([
        { name: 'company', default: '' },
        { name: 'message', default: '' },
        { name: 'address_line_2', default: '' },
      ]),
    );
    expect(res.json().optional_variables.map((v: { name: string }) => v.name)).not.toContain('address_line_1');
    const list = await get('/v1/templates');
    expect(list.json().data.map((x: { id: string }) => x.id)).toEqual(
      expect.arrayContaining(Object.values(EXAMPLE_IDS)),
    );
  });

  it('lists templates newest first, the one just uploaded above the examples, page by page', async () => {
    const made: string[] = [];
    for (const n of [1, 2, 3]) {
      await new Promise((r) => setTimeout(r, 2)); // created_at has millisecond precision
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/templates',
        headers: { ...auth(), 'content-type': 'application/xml' },
        payload: `<document name="Order ${n}"><body><p>{{x}}</p></body></document>`,
      });
      made.push(res.json().id);
    }
    const first = (await get('/v1/templates?limit=2')).json();
    expect(first.data.map((x: { id: string }) => x.id)).toEqual([made[2], made[1]]);
    const all: { id: string; created_at: string }[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string; created_at: string }[]; next_cursor: string | null } = (
        await get(`/v1/templates?limit=3${cursor ? `&starting_after=${cursor}` : ''}`)
      ).json();
      all.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    expect(new Set(all.map((x) => x.id)).size).toBe(all.length);
    expect(all.map((x) => x.id)).toEqual(expect.arrayContaining([...made, ...Object.values(EXAMPLE_IDS)]));
    const times = all.map((x) => x.created_at);
    expect(times).toEqual([...times].sort().reverse());
    expect(all.findIndex((x) => x.id === made[0])).toBeLessThan(all.findIndex((x) => x.id === EXAMPLE_IDS.letter));
    const gone = await get('/v1/templates?starting_after=tmpl_nosuch');
    expect(gone.statusCode).toBe(422);
    expect(gone.json().error.details[0]).toMatchObject({ field: 'starting_after', code: 'not_found' });
  });

  it('stores an XML template sent as application/xml and renders it', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/templates?name=Receipt',
      headers: { ...auth(), 'content-type': 'application/xml' },
      payload: '<document><body><p>Received from {{payer}}: {{total}}</p></body></document>',
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ name: 'Receipt', format: 'xml', variables: ['payer', 'total'] });
    expect(res.json().id).toMatch(/^tmpl_/);
    const made = await generate(res.json().id, { payer: 'Ann Lee', total: '$12.00' });
    expect(made.statusCode).toBe(201);
    const pdf = await get(`/v1/documents/${made.json().document_id}/pdf`);
    expect((await readPdf(pdf.rawPayload)).text).toContain('Received from Ann Lee: $12.00');
  });

  it("draws a document's page as a PNG for an API key; a page past the last is not_found", async () => {
    const made = await generate(EXAMPLE_IDS.letter, Object.fromEntries(letterVariables.map((v) => [v, 'x'])));
    expect(made.statusCode).toBe(201);
    const id = made.json().document_id as string;
    const keptBefore = t.service.documents.pageImages.bytes;
    const page = await get(`/v1/documents/${id}/pages/1`);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('image/png');
    const png = page.rawPayload;
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    // IHDR: width then height, big-endian, after the signature and the chunk's length and type
    expect(png.readUInt32BE(16)).toBe(PAGE_IMAGE_WIDTH);
    expect(png.readUInt32BE(20)).toBeGreaterThan(PAGE_IMAGE_WIDTH); // a portrait page
    expect((await get(`/v1/documents/${id}/pages/2`)).json().error.code).toBe('not_found');
    expect((await get(`/v1/documents/${id}/pages/0`)).json().error.code).toBe('validation_failed');
    expect((await get(`/v1/documents/doc_missing/pages/1`)).json().error.code).toBe('not_found');
    // drawn once and kept: asked again, the same image, and a deleted document's page is gone with it
    expect((await get(`/v1/documents/${id}/pages/1`)).rawPayload.equals(png)).toBe(true);
    expect(t.service.documents.pageImages.bytes).toBeGreaterThan(keptBefore);
    expect((await del(`/v1/documents/${id}`)).statusCode).toBe(200);
    expect((await get(`/v1/documents/${id}/pages/1`)).json().error.code).toBe('not_found');
    expect(t.service.documents.pageImages.bytes).toBe(keptBefore);
  });

  it('stores a template sent as JSON source', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: auth(),
      payload: { name: 'Hello', source: '<document><body><p>Hi {{who}}</p></body></document>' },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().variables).toEqual(['who']);
  });

  it('refuses at upload an HTML template without the images and CSS its page loads', async () => {
    const page = (body: string) =>
      `<!doctype html><html><head><link rel="stylesheet" href="style.css"></head><body>${body}<p>{{who}}</p></body></html>`;
    const upload = (source: string, assets?: Record<string, string>) =>
      t.app.inject({ method: 'POST', url: '/v1/templates', headers: auth(), payload: { source, assets } });
    const missing = await upload(page('<img src="logo.png" alt="Logo"><a href="terms.html">Terms</a>'));
    expect(missing.statusCode).toBe(422);
    expect(missing.json().error.code).toBe('template_invalid');
    // what the page loads; a link's target (terms.html) is not loaded
    expect(
      missing
        .json()
        .error.details.map((d: { field: string }) => d.field)
        .sort(),
    ).toEqual(['assets.logo.png', 'assets.style.css']);
    const whole = await upload(page('<img src="logo.png" alt="Logo"><a href="terms.html">Terms</a>'), {
      'logo.png': Buffer.from(png).toString('base64'),
      'style.css': Buffer.from('p { color: #333 }').toString('base64'),
    });
    expect(whole.statusCode).toBe(201);
    expect(whole.json().format).toBe('html');
  });

  it('stores a fillable PDF uploaded as application/pdf; its fields are the variables', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/templates?name=Membership',
      headers: { ...auth(), 'content-type': 'application/pdf' },
      payload: Buffer.from(await fillableForm()),
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      format: 'pdf',
      name: 'Membership',
      variables: ['member_name', 'member_number'],
    });
    const made = await generate(res.json().id, { member_name: 'Zoë Ortiz', member_number: '00417' });
    expect(made.statusCode).toBe(201);
    const pdf = await get(`/v1/documents/${made.json().document_id}/pdf`);
    expect((await readPdf(pdf.rawPayload)).text).toContain('Zoë Ortiz');
  });

  it('stores a multipart upload with the images the template names', async () => {
    const form = multipart([
      { name: 'name', data: 'With logo' },
      {
        name: 'file',
        filename: 'card.xml',
        type: 'application/xml',
        data: '<document><body><image src="logo.png" width="1in"/><p>{{title}}</p></body></document>',
      },
      { name: 'asset', filename: 'logo.png', type: 'image/png', data: png },
    ]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { ...auth(), ...form.headers },
      payload: form.payload,
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ name: 'With logo', variables: ['title'] });
    const made = await generate(res.json().id, { title: 'Card' });
    expect(made.statusCode).toBe(201);
    const pdf = await get(`/v1/documents/${made.json().document_id}/pdf`);
    expect((await readPdf(pdf.rawPayload)).pages[0].images).toHaveLength(1);
  });

  it('refuses a broken template with 422 template_invalid and its location', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { ...auth(), 'content-type': 'application/xml' },
      payload: '<document><body><p>unclosed</body></document>',
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('template_invalid');
    expect(res.json().error.details[0].field).toMatch(/^template:\d+:\d+$/);
    const missingAsset = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: auth(),
      payload: { source: '<document><body><image src="nope.png"/></body></document>' },
    });
    expect(missingAsset.statusCode).toBe(422);
  });

  it('takes the images an XML template names as base64 in a JSON upload', async () => {
    const logo = fs.readFileSync(path.join(root, 'examples/letter/logo.png')).toString('base64');
    const source =
      '<document><body><image src="images/mark.png" width="1in" alt="Mark"/><p>With {{who}}</p></body></document>';
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: auth(),
      payload: { name: 'With asset', source, assets: { 'images/mark.png': logo } },
    });
    expect(res.statusCode).toBe(201);
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: auth(),
      payload: {
        template_id: res.json().id,
        merge_parameters: { who: 'an image' },
        destinations: { inkit_storage: {} },
      },
    });
    expect(made.statusCode).toBe(201);
    const wrong = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: auth(),
      payload: { source, assets: { 'images/mark.png': 7 } },
    });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().error.details[0]).toMatchObject({ field: 'assets.images/mark.png', code: 'type' });
  });

  it('refuses a template body with neither source nor a file', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/templates', headers: auth(), payload: { name: 'x' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details[0].field).toBe('source');
    const text = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { ...auth(), 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(text.statusCode).toBe(415);
  });

  it('answers 413 in the error shape to a body over the limit, JSON or upload', async () => {
    const big = 'x'.repeat(70 * 1024);
    const json = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: JSON.stringify({ template_id: 'x', merge_parameters: { big }, destinations: {} }),
    });
    expect(json.statusCode).toBe(413);
    expect(json.json().error.code).toBe('body_too_large');
    const form = multipart([
      { name: 'file', filename: 'big.xml', data: `<document><body><p>${big}</p></body></document>` },
    ]);
    const upload = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { ...auth(), ...form.headers },
      payload: form.payload,
    });
    expect(upload.statusCode).toBe(413);
    expect(upload.json().error.code).toBe('body_too_large');
  });

  it('deletes a template: 404 afterwards, and generating with it names template_id', async () => {
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: auth(),
      payload: { source: '<document><body><p>{{a}}</p></body></document>' },
    });
    const id = made.json().id;
    expect((await del(`/v1/templates/${id}`)).json()).toEqual({ id, object: 'template', deleted: true });
    expect((await get(`/v1/templates/${id}`)).statusCode).toBe(404);
    expect((await del(`/v1/templates/${id}`)).statusCode).toBe(404);
    const res = await generate(id, { a: 'x' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details).toContainEqual(
      expect.objectContaining({ field: 'template_id', code: 'not_found' }),
    );
  });

  it('pages documents newest first with limit and starting_after', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await generate(EXAMPLE_IDS.postcard, postcardValues, `page ${i}`)).json().document_id);
    const first = await get('/v1/documents?limit=2');
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ object: 'list', has_more: true });
    expect(first.json().data.map((d: { name: string }) => d.name)).toEqual(['page 4', 'page 3']);
    const second = await get(`/v1/documents?limit=2&starting_after=${first.json().next_cursor}`);
    expect(second.json().data.map((d: { name: string }) => d.name)).toEqual(['page 2', 'page 1']);
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; next_cursor: string | null } = (
        await get(`/v1/documents?limit=3${cursor ? `&starting_after=${cursor}` : ''}`)
      ).json();
      all.push(...page.data.map((d) => d.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(new Set(all).size).toBe(all.length);
    expect(all).toEqual(expect.arrayContaining(ids));
    for (const bad of ['limit=0', 'limit=101', 'limit=ten']) {
      const res = await get(`/v1/documents?${bad}`);
      expect(res.statusCode).toBe(422);
      expect(res.json().error.details[0].field).toBe('limit');
    }
  });

  it('finds documents by a part of their name, ignoring case, with % and _ taken literally', async () => {
    for (const name of ['Lease 100% Oak_St', 'lease 1000 oak', 'Invoice March'])
      expect((await generate(EXAMPLE_IDS.postcard, postcardValues, name)).statusCode).toBe(201);
    const names = async (q: string) =>
      (await get(`/v1/documents?search=${encodeURIComponent(q)}`)).json().data.map((d: { name: string }) => d.name);
    await expect(names('LEASE')).resolves.toEqual(['lease 1000 oak', 'Lease 100% Oak_St']);
    await expect(names('100%')).resolves.toEqual(['Lease 100% Oak_St']);
    await expect(names('oak_')).resolves.toEqual(['Lease 100% Oak_St']);
    await expect(names('nothing like it')).resolves.toEqual([]);
    const tooLong = await get(`/v1/documents?search=${'x'.repeat(201)}`);
    expect(tooLong.statusCode).toBe(422);
    expect(tooLong.json().error.details[0].field).toBe('search');
  });

  it('deletes a document and its PDF', async () => {
    const id = (await generate(EXAMPLE_IDS.postcard, postcardValues)).json().document_id;
    expect((await del(`/v1/documents/${id}`)).json()).toEqual({ id, object: 'document', deleted: true });
    expect((await get(`/v1/documents/${id}`)).statusCode).toBe(404);
    expect((await get(`/v1/documents/${id}/pdf`)).statusCode).toBe(404);
    expect(await t.service.storage.get(id)).toBeUndefined();
  });

  it('answers 500 without internals when storage fails, and leaves no record behind', async () => {
    const before = (await get('/v1/documents?limit=100')).json().data.length;
    const put = t.service.storage.put.bind(t.service.storage);
    t.service.storage.put = async () => {
      throw new Error('EIO: disk on fire at /secret/path');
    };
    try {
      const res = await generate(EXAMPLE_IDS.postcard, postcardValues);
      expect(res.statusCode).toBe(500);
      expect(res.json().error.code).toBe('internal_error');
      expect(res.body).not.toContain('/secret/path');
      expect(res.body).not.toContain('at ');
    } finally {
      t.service.storage.put = put;
    }
    expect((await get('/v1/documents?limit=100')).json().data.length).toBe(before);
  });

  it('answers /healthz without a key', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ok', database: backend });
  });

  it('answers /readyz: ready while the database answers, 503 while shutting down or without a database', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', database: backend, engine: 'embedded' });
    const { buildApp } = await import('../../src/app');
    const stopping = await buildApp(t.service, { logger: false, stopping: () => true });
    try {
      const answer = await stopping.inject({ method: 'GET', url: '/readyz' });
      expect(answer.statusCode).toBe(503);
      expect(answer.json().error.code).toBe('stopping');
      // any request read once the server is stopping (on a connection already open): the same, and the connection closes
      const late = await stopping.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: { 'x-service-api-token': t.key },
        payload: {},
      });
      expect(late.statusCode).toBe(503);
      expect(late.json().error.code).toBe('stopping');
      expect(late.headers.connection).toBe('close');
      // the database gone: not ready, and still an answer in the error shape
      const ping = t.service.ping.bind(t.service);
      t.service.ping = async () => {
        throw new Error('connection refused');
      };
      try {
        const down = await t.app.inject({ method: 'GET', url: '/readyz' });
        expect(down.statusCode).toBe(503);
        expect(down.json().error.code).toBe('database_unavailable');
      } finally {
        t.service.ping = ping;
      }
    } finally {
      await stopping.close();
    }
  });

  it('keeps keys, templates, documents and their bytes across a restart', async () => {
    const tmpl = (
      await t.app.inject({
        method: 'POST',
        url: '/v1/templates',
        headers: auth(),
        payload: { name: 'Kept', source: '<document><body><p>{{k}}</p></body></document>' },
      })
    ).json();
    const made = (await generate(tmpl.id, { k: 'kept value' }, 'kept doc')).json();
    t = await t.restart();
    expect((await get(`/v1/templates/${tmpl.id}`)).json().name).toBe('Kept');
    expect((await get(`/v1/documents/${made.document_id}`)).json().name).toBe('kept doc');
    const pdf = await get(`/v1/documents/${made.document_id}/pdf`);
    expect(crypto.createHash('sha256').update(pdf.rawPayload).digest('hex')).toBe(
      made.destinations.inkit_storage.sha256,
    );
    expect((await generate(tmpl.id, { k: 'again' })).statusCode).toBe(201);
  });
});

describe('documents stored in PostgreSQL (STORAGE=database)', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await testService({ backend: 'postgres', config: { storage: 'database' } });
  });
  afterAll(() => t?.stop());

  it('keeps the bytes in the database, not in the data dir, and serves them', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'x-service-api-token': t.key },
      payload: {
        template_id: EXAMPLE_IDS.postcard,
        merge_parameters: postcardValues,
        destinations: { inkit_storage: {} },
      },
    });
    expect(res.statusCode).toBe(201);
    const id = res.json().document_id;
    const blob = await t.service.database.db
      .selectFrom('blobs')
      .select('bytes')
      .where('key', '=', id)
      .executeTakeFirst();
    expect(blob?.bytes.length).toBe(res.json().destinations.inkit_storage.size);
    expect(fs.existsSync(path.join(t.config.dataDir, 'documents'))).toBe(false);
    const pdf = await t.app.inject({
      method: 'GET',
      url: `/v1/documents/${id}/pdf`,
      headers: { 'x-service-api-token': t.key },
    });
    expect(pdf.rawPayload.equals(Buffer.from(blob!.bytes))).toBe(true);
  });

  it('rolls the bytes back when the record cannot be written', async () => {
    const before = Number(
      (
        await t.service.database.db
          .selectFrom('blobs')
          .select((e) => e.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    // make inserts into documents fail: a CHECK that no row passes
    await sql`ALTER TABLE documents ADD CONSTRAINT never CHECK (size < 0) NOT VALID`.execute(t.service.database.db);
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: { 'x-service-api-token': t.key },
        payload: {
          template_id: EXAMPLE_IDS.postcard,
          merge_parameters: postcardValues,
          destinations: { inkit_storage: {} },
        },
      });
      expect(res.statusCode).toBe(500);
    } finally {
      await sql`ALTER TABLE documents DROP CONSTRAINT never`.execute(t.service.database.db);
    }
    expect(
      Number(
        (
          await t.service.database.db
            .selectFrom('blobs')
            .select((e) => e.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      ),
    ).toBe(before);
  });
});
