import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { FakeClock } from '../../src/clock';
import { MAX_WARNINGS } from '../../src/documents';
import { canonicalJson, renderIdFor, TAKEOVER_MS } from '../../src/idempotency';
import { sha256 } from '../../src/secrets';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { eventually } from '../support/eventually';
import { readAttachments, readPdf } from '../support/pdf';
import { rowCount } from '../support/rows';
import { fillableForm, root } from '../support/fixtures';
import { PDFDocument, PDFName, PDFRawStream } from 'pdf-lib';
import { BACKENDS, testService, type TestService } from '../support/service';

const letterValues = JSON.parse(fs.readFileSync(path.join(root, 'examples/letter/sample.json'), 'utf8')) as Record<
  string,
  string
>;
const NOTE =
  '<document name="Note" size="a5"><body><p>Dear {{name}}, you owe {{amount}} (paid: {{paid}}).</p></body></document>';

describe.each(BACKENDS)('POST /v1/generate on %s', (backend) => {
  let t: TestService;
  const clock = new FakeClock('2026-11-22T10:00:00Z');
  let noteId: string;

  beforeAll(async () => {
    t = await testService({ backend, clock });
    noteId = (await t.service.templates.create({ source: NOTE })).id;
  });
  afterAll(() => t.stop());

  const generate = (body: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'content-type': 'application/json', 'x-service-api-token': t.key, ...headers },
      payload: JSON.stringify(body),
    });
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { 'x-service-api-token': t.key } });
  const countDocuments = () => rowCount(t.service.database.db, 'documents');

  it('renders the example letter, stores it and answers 201 with the render and the stored document', async () => {
    const res = await generate({
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: letterValues,
      destinations: { inkit_storage: { name: 'Proposal for Dr. Vance' } },
      description: 'first contact',
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      object: 'render',
      status: 'completed',
      template_id: EXAMPLE_IDS.letter,
      warnings: [],
      created_at: '2026-11-22T10:00:00.000Z',
    });
    expect(body.id).toMatch(/^rnd_/);
    expect(body.document_id).toMatch(/^doc_/);
    expect(body.destinations.inkit_storage).toMatchObject({
      document_id: body.document_id,
      name: 'Proposal for Dr. Vance',
    });

    const doc = await get(`/v1/documents/${body.document_id}`);
    expect(doc.statusCode).toBe(200);
    expect(doc.json()).toMatchObject({
      id: body.document_id,
      name: 'Proposal for Dr. Vance',
      description: 'first contact',
      status: 'generated',
      template_id: EXAMPLE_IDS.letter,
      created_by: { name: 'test key' },
    });

    const pdf = await get(`/v1/documents/${body.document_id}/pdf`);
    expect(pdf.statusCode).toBe(200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.headers['content-disposition']).toContain('filename="Proposal for Dr. Vance.pdf"');
    expect(pdf.rawPayload.length).toBe(body.destinations.inkit_storage.size);
    expect(createHash('sha256').update(pdf.rawPayload).digest('hex')).toBe(body.destinations.inkit_storage.sha256);
    const text = (await readPdf(pdf.rawPayload)).text;
    expect(text).toContain('Dr. Eleanor Vance');
    expect(text).toContain('Marta Kowalczyk');
  });

  it('names the document after its template when no name is given (the date is created_at)', async () => {
    const res = await generate({
      template_id: noteId,
      merge_parameters: { name: 'Ann', amount: '5', paid: 'no' },
      destinations: { inkit_storage: {} },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().destinations.inkit_storage.name).toBe('Note');
  });

  it('turns numbers and booleans into text and warns about keys the template does not use', async () => {
    const res = await generate({
      template_id: noteId,
      merge_parameters: { name: 'Ann', amount: 12.5, paid: false, colour: 'red' },
      destinations: { inkit_storage: {} },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().warnings).toEqual([
      expect.objectContaining({ code: 'unused_parameter', field: 'merge_parameters.colour' }),
    ]);
    const pdf = await get(`/v1/documents/${res.json().document_id}/pdf`);
    expect((await readPdf(pdf.rawPayload)).text).toContain('Dear Ann, you owe 12.5 (paid: false).');
  });

  it('lists the first 20 warnings and counts the rest, so 10,000 unused keys make a small answer', async () => {
    const extra = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`unused_${i}`, 'x']));
    const res = await generate({
      template_id: noteId,
      merge_parameters: { name: 'Ann', amount: '5', paid: 'no', ...extra },
      destinations: { inkit_storage: {} },
    });
    expect(res.statusCode).toBe(201);
    const warnings = res.json<{ warnings: { code: string; field: string; message: string }[] }>().warnings;
    expect(warnings).toHaveLength(MAX_WARNINGS + 1);
    expect(warnings.slice(0, MAX_WARNINGS).every((w) => w.code === 'unused_parameter')).toBe(true);
    expect(warnings[MAX_WARNINGS]).toMatchObject({ code: 'unused_parameter', field: 'merge_parameters' });
    expect(warnings[MAX_WARNINGS].message).toContain(String(10_000 - MAX_WARNINGS));
    expect(res.body.length).toBeLessThan(10_000);
  });

  it('warns about text that does not fit its box, and refuses it where the template says so', async () => {
    const box = (overflow: string) =>
      t.service.templates.create({
        source: `<document><body><p x="36" y="36" width="150" height="40" overflow="${overflow}">{{message}}</p></body></document>`,
      });
    const message = 'A long message. '.repeat(80);
    const visible = await generate({
      template_id: (await box('visible')).id,
      merge_parameters: { message },
      destinations: { inkit_storage: {} },
    });
    expect(visible.statusCode).toBe(201);
    expect(visible.json().warnings).toEqual([
      { code: 'text_overflow', field: 'merge_parameters.message', message: expect.any(String) },
    ]);
    const refused = await generate({
      template_id: (await box('error')).id,
      merge_parameters: { message },
      destinations: { inkit_storage: {} },
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error).toMatchObject({
      code: 'text_overflow',
      details: [{ field: 'merge_parameters.message', code: 'text_overflow' }],
    });
  });

  it('lists every missing variable in one 422 and stores nothing', async () => {
    const before = await countDocuments();
    const res = await generate({
      template_id: noteId,
      merge_parameters: { name: 'Ann' },
      destinations: { inkit_storage: {} },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('missing_variables');
    expect(
      res
        .json()
        .error.details.map((d: { field: string }) => d.field)
        .sort(),
    ).toEqual(['merge_parameters.amount', 'merge_parameters.paid']);
    expect(await countDocuments()).toBe(before);
  });

  it('lets optional variables be left out: they take their defaults, and only the required are missing', async () => {
    const greeting = (
      await t.service.templates.create({
        source:
          '<document name="Greeting" size="a5"><body><p>{{salutation | default: "Welcome"}}, {{name}}!</p></body></document>',
      })
    ).id;
    const listed = (await get(`/v1/templates/${greeting}`)).json();
    expect(listed.optional_variables).toEqual([{ name: 'salutation', default: 'Welcome' }]);
    const res = await generate({
      template_id: greeting,
      merge_parameters: { name: 'Ann' },
      destinations: { inkit_storage: {} },
    });
    expect(res.statusCode).toBe(201);
    const pdf = await get(`/v1/documents/${res.json().document_id}/pdf`);
    expect((await readPdf(pdf.rawPayload)).text).toContain('Welcome, Ann!');
    const none = await generate({ template_id: greeting, merge_parameters: {}, destinations: { inkit_storage: {} } });
    expect(none.statusCode).toBe(422);
    expect(none.json().error.code).toBe('missing_variables');
    expect(none.json().error.details.map((d: { field: string }) => d.field)).toEqual(['merge_parameters.name']);

    // the example postcard: what its optional_variables list may be left out
    const postcard = (await get(`/v1/templates/${EXAMPLE_IDS.postcard}`)).json<{
      variables: string[];
      optional_variables: { name: string }[];
    }>();
    const optional = new Set(postcard.optional_variables.map((o) => o.name));
    const required = postcard.variables.filter((v) => !optional.has(v));
    expect(optional.size).toBeGreaterThan(0);
    const bare = await generate({
      template_id: EXAMPLE_IDS.postcard,
      merge_parameters: Object.fromEntries(required.map((v) => [v, 'x'])),
      destinations: { inkit_storage: {} },
    });
    expect(bare.statusCode).toBe(201);
  });

  it('takes an empty body sent with Content-Type: application/json as no body', async () => {
    const made = await generate({
      template_id: noteId,
      merge_parameters: { name: 'A', amount: '1', paid: 'no' },
      destinations: { inkit_storage: {} },
    });
    const id = made.json().document_id as string;
    const del = await t.app.inject({
      method: 'DELETE',
      url: `/v1/documents/${id}`,
      headers: { 'content-type': 'application/json', 'x-service-api-token': t.key },
    });
    expect(del.statusCode).toBeLessThan(300);
    expect((await get(`/v1/documents/${id}`)).statusCode).toBe(404);
    // a POST without its body is told what the body lacks, not that it is broken JSON
    const empty = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'content-type': 'application/json', 'x-service-api-token': t.key },
      payload: '',
    });
    expect(empty.statusCode).toBe(422);
    expect(empty.json().error.code).toBe('validation_failed');
  });

  it('refuses objects, arrays and null as values, one detail each', async () => {
    const res = await generate({
      template_id: noteId,
      merge_parameters: { name: { first: 'Ann' }, amount: [1], paid: null },
      destinations: { inkit_storage: {} },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('validation_failed');
    const fields = res
      .json()
      .error.details.filter((d: { code: string }) => d.code === 'type')
      .map((d: { field: string }) => d.field)
      .sort();
    expect(fields).toEqual(['merge_parameters.amount', 'merge_parameters.name', 'merge_parameters.paid']);
  });

  it('reports every broken field of a bad request at once: first its shape, then what it names', async () => {
    const byField = (res: { json(): { error: { details: { field: string; code: string }[] } } }) =>
      Object.fromEntries(res.json().error.details.map((d) => [d.field, d.code]));
    // the schema's answer: every field of the wrong shape, before anything is looked up
    const shape = await generate({
      template_id: 'tmpl_nope',
      merge_parameters: 'x',
      destinations: { fax: {} },
      name: 7,
    });
    expect(shape.statusCode).toBe(422);
    expect(byField(shape)).toEqual({
      merge_parameters: 'type',
      'destinations.fax': 'unknown_destination',
      name: 'type',
    });
    // a request of the right shape: what it names is looked up
    const named = await generate({
      template_id: 'tmpl_nope',
      merge_parameters: {},
      destinations: { inkit_storage: {} },
    });
    expect(named.statusCode).toBe(422);
    expect(byField(named)).toEqual({ template_id: 'not_found' });
  });

  it.each([
    ['no destinations', { template_id: 'x', merge_parameters: {} }, 'destinations', 'required'],
    ['empty destinations', { template_id: 'x', merge_parameters: {}, destinations: {} }, 'destinations', 'required'],
    ['no template_id', { merge_parameters: {}, destinations: { inkit_storage: {} } }, 'template_id', 'required'],
    ['no merge_parameters', { template_id: 'x', destinations: { inkit_storage: {} } }, 'merge_parameters', 'required'],
  ])('answers 422 for %s', async (_name, body, field, code) => {
    const res = await generate(body);
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details).toContainEqual(expect.objectContaining({ field, code }));
  });

  it('makes a document that claims the pdf_standard asked for: its output intent and its XMP packet say so', async () => {
    const res = await generate({
      template_id: noteId,
      merge_parameters: { name: 'A', amount: '1', paid: 'y' },
      destinations: { inkit_storage: {} },
      pdf_standard: 'PDF/A-3b+PDF/UA-1',
      pdf_metadata: { title: 'Note for A', keywords: 'note, a', subject: '' },
    });
    expect(res.statusCode).toBe(201);
    const pdf = (await get(`/v1/documents/${res.json().document_id}/pdf`)).rawPayload;
    const doc = await PDFDocument.load(pdf, { updateMetadata: false });
    expect(doc.catalog.has(PDFName.of('OutputIntents'))).toBe(true);
    const xmp = Buffer.from((doc.catalog.lookup(PDFName.of('Metadata')) as PDFRawStream).contents).toString();
    expect(xmp).toContain('<pdfaid:part>3</pdfaid:part>');
    expect(xmp).toContain('<pdfuaid:part>1</pdfuaid:part>');
    expect([doc.getTitle(), doc.getKeywords(), doc.getSubject()]).toEqual(['Note for A', 'note, a', undefined]);
    // veraPDF checks the same renders in test/templates/standards.test.ts
  });

  it('refuses a pdf_standard the template cannot meet with 422 standard_unavailable, and an unknown one, storing nothing', async () => {
    const form = await t.service.templates.create({ source: await fillableForm() });
    const before = await countDocuments();
    const unavailable = await generate({
      template_id: form.id,
      merge_parameters: { member_name: 'A', member_number: '1' },
      destinations: { inkit_storage: {} },
      pdf_standard: 'PDF/A-2b',
    });
    expect(unavailable.statusCode).toBe(422);
    expect(unavailable.json().error).toMatchObject({
      code: 'standard_unavailable',
      details: [{ field: 'pdf_standard', code: 'standard_unavailable' }],
    });
    const unknown = await generate({
      template_id: noteId,
      merge_parameters: { name: 'A', amount: '1', paid: 'y' },
      destinations: { inkit_storage: {} },
      pdf_standard: 'PDF/A-1b',
    });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error.details).toContainEqual(expect.objectContaining({ field: 'pdf_standard' }));
    const badMetadata = await generate({
      template_id: noteId,
      merge_parameters: { name: 'A', amount: '1', paid: 'y' },
      destinations: { inkit_storage: {} },
      pdf_metadata: { title: 7, creator: 'x' },
    });
    expect(badMetadata.statusCode).toBe(422);
    expect(
      Object.fromEntries(
        badMetadata.json().error.details.map((d: { field: string; code: string }) => [d.field, d.code]),
      ),
    ).toEqual({ 'pdf_metadata.title': 'type', 'pdf_metadata.creator': 'unknown_field' });
    expect(await countDocuments()).toBe(before);
  });

  it('embeds attachments, and makes a Factur-X invoice of the example with factur-x.xml as PDF/A-3b', async () => {
    const facturx = fs.readFileSync(path.join(root, 'examples/invoice/attachments/factur-x.xml'));
    const invoice = JSON.parse(fs.readFileSync(path.join(root, 'examples/invoice/sample.json'), 'utf8')) as Record<
      string,
      string
    >;
    const res = await generate({
      template_id: EXAMPLE_IDS.invoice,
      merge_parameters: invoice,
      destinations: { inkit_storage: {} },
      pdf_standard: 'PDF/A-3b',
      // a client's guess of the media type: Factur-X's own (text/xml) is written
      attachments: [{ name: 'factur-x.xml', content: facturx.toString('base64'), mime_type: 'application/xml' }],
    });
    expect(res.statusCode).toBe(201);
    const pdf = (await get(`/v1/documents/${res.json().document_id}/pdf`)).rawPayload;
    expect(Buffer.from((await readAttachments(pdf))['factur-x.xml']).equals(facturx)).toBe(true);
    const doc = await PDFDocument.load(pdf, { updateMetadata: false });
    const xmp = Buffer.from((doc.catalog.lookup(PDFName.of('Metadata')) as PDFRawStream).contents).toString();
    expect(xmp).toContain('<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>');
    expect(pdf.toString('latin1')).toMatch(/\/Subtype\s*\/text#2Fxml/);
    // Mustang's validator and veraPDF check the same render in test/templates/standards.test.ts
  });

  it('refuses attachments that are broken, and any with PDF/A-2b, one detail each, storing nothing', async () => {
    const before = await countDocuments();
    const note = { template_id: noteId, merge_parameters: { name: 'A', amount: '1', paid: 'y' } };
    const broken = await generate({
      ...note,
      destinations: { inkit_storage: {} },
      attachments: [
        { name: '../etc/passwd', content: 'aGk=' },
        { name: 'a.txt', content: 'not base64!' },
        { name: 'b.txt', content: 'aGk=' },
        { name: 'factur-x.xml', content: Buffer.from('<invoice/>').toString('base64') },
      ],
    });
    expect(broken.statusCode).toBe(422);
    expect(
      Object.fromEntries(broken.json().error.details.map((d: { field: string; code: string }) => [d.field, d.code])),
    ).toEqual({
      'attachments[0].name': 'invalid',
      'attachments[1].content': 'invalid',
      'attachments[3].content': 'invalid',
    });
    // the schema's own refusals come first, before any content is read
    const shape = await generate({
      ...note,
      destinations: { inkit_storage: {} },
      attachments: [{ name: 'b.txt', content: 'aGk=', relationship: 'Friend', color: 'red' }],
    });
    expect(shape.statusCode).toBe(422);
    expect(
      Object.fromEntries(shape.json().error.details.map((d: { field: string; code: string }) => [d.field, d.code])),
    ).toEqual({ 'attachments[0].relationship': 'enum', 'attachments[0].color': 'unknown_field' });
    const archived = await generate({
      ...note,
      destinations: { inkit_storage: {} },
      pdf_standard: 'PDF/A-2b',
      attachments: [{ name: 'a.txt', content: 'aGk=' }],
    });
    expect(archived.statusCode).toBe(422);
    expect(archived.json().error.details).toEqual([
      expect.objectContaining({ field: 'attachments', code: 'not_allowed' }),
    ]);
    expect(await countDocuments()).toBe(before);
  });

  it('refuses magic_link with 409 app_not_configured before the Magic Link app is set up, and stores nothing', async () => {
    const before = await countDocuments();
    const res = await generate({
      template_id: noteId,
      merge_parameters: { name: 'A', amount: '1', paid: 'y' },
      destinations: { inkit_storage: {}, magic_link: { recipient_email: 'a@example.com', expire_after_n_views: 1 } },
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('app_not_configured');
    expect(await countDocuments()).toBe(before);
  });

  it('answers 401 the same way for a missing, a wrong and a revoked key', async () => {
    const { secret, key } = await t.service.keys.create('api', 'to revoke');
    await t.service.keys.revoke(key.id);
    const body = { template_id: noteId, merge_parameters: {}, destinations: { inkit_storage: {} } };
    const answers: { error: { code: string } }[] = [];
    for (const headers of [
      { 'x-service-api-token': '' },
      { 'x-service-api-token': `${t.key.slice(0, -1)}${t.key.endsWith('x') ? 'y' : 'x'}` },
      { 'x-service-api-token': secret },
      { 'x-service-api-token': 'nonsense' },
    ]) {
      const res = await generate(body, headers);
      expect(res.statusCode).toBe(401);
      answers.push(res.json());
    }
    expect(answers.every((a) => JSON.stringify(a) === JSON.stringify(answers[0]))).toBe(true);
    expect(answers[0].error.code).toBe('unauthorized');
  });

  it('answers 400 to broken JSON and 415 to a body that is not JSON', async () => {
    const broken = await t.app.inject({
      method: 'POST',
      url: '/v1/generate',
      headers: { 'content-type': 'application/json', 'x-service-api-token': t.key },
      payload: '{"template_id": ',
    });
    expect(broken.statusCode).toBe(400);
    expect(broken.json().error.code).toBe('malformed_json');
    // said once, with where it broke
    expect(broken.json().error.message.match(/not valid JSON/g)).toHaveLength(1);
    expect(broken.json().error.message).toMatch(/position|end of/i);
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: { 'content-type': type, 'x-service-api-token': t.key },
        payload: 'template_id=x',
      });
      expect(res.statusCode).toBe(415);
      expect(res.json().error.code).toBe('unsupported_media_type');
    }
    const none = await t.app.inject({ method: 'POST', url: '/v1/generate', headers: { 'x-service-api-token': t.key } });
    expect(none.statusCode).toBe(415);
  });

  it('answers 404 in the error shape for unknown ids and routes', async () => {
    for (const url of [
      '/v1/documents/doc_nope',
      '/v1/documents/doc_nope/pdf',
      '/v1/templates/tmpl_nope',
      '/v1/nothing-here',
    ]) {
      const res = await get(url);
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('not_found');
    }
  });

  describe('Idempotency-Key', () => {
    const body = {
      template_id: EXAMPLE_IDS.postcard,
      merge_parameters: {},
      destinations: { inkit_storage: { name: 'idem' } },
    };
    beforeAll(async () => {
      body.merge_parameters = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8'));
    });

    it('returns the first answer again for the same key and body, and stores one document', async () => {
      const before = await countDocuments();
      const first = await generate(body, { 'idempotency-key': 'order-1' });
      clock.advance(60_000);
      const again = await generate(body, { 'idempotency-key': 'order-1' });
      expect(first.statusCode).toBe(201);
      expect(again.statusCode).toBe(201);
      expect(again.json()).toEqual(first.json());
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(await countDocuments()).toBe(Number(before) + 1);
    });

    it('answers 409 when the key comes back with another body', async () => {
      await generate(body, { 'idempotency-key': 'order-2' });
      const res = await generate(
        { ...body, destinations: { inkit_storage: { name: 'other' } } },
        { 'idempotency-key': 'order-2' },
      );
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('idempotency_key_reused');
    });

    it('runs concurrent duplicates once and gives them all the same answer', async () => {
      const before = await countDocuments();
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => generate(body, { 'idempotency-key': 'order-3' })),
      );
      expect(answers.map((a) => a.statusCode)).toEqual(Array(6).fill(201));
      expect(new Set(answers.map((a) => a.json().document_id)).size).toBe(1);
      expect(await countDocuments()).toBe(Number(before) + 1);
    });

    it('starts a new request with a key used again after its 24 hours, whatever the body (issue 44, case 3)', async () => {
      const first = await generate(body, { 'idempotency-key': 'order-4' });
      const before = await countDocuments();
      clock.advance(24 * 60 * 60 * 1000 + 1000);
      const later = await generate(
        { ...body, destinations: { inkit_storage: { name: 'the next order' } } },
        { 'idempotency-key': 'order-4' },
      );
      expect(later.statusCode).toBe(201);
      expect(later.headers['idempotent-replayed']).toBeUndefined();
      expect(later.json().id).not.toBe(first.json().id);
      expect(later.json().document_id).not.toBe(first.json().document_id);
      expect(later.json().destinations.inkit_storage.name).toBe('the next order');
      expect(await countDocuments()).toBe(before + 1);
    });

    it('keeps the key of a request that failed on the way, and its retry finishes the same render', async () => {
      const put = t.service.storage.put.bind(t.service.storage);
      let failures = 1;
      t.service.storage.put = async (...args: Parameters<typeof put>) => {
        if (failures-- > 0) throw new Error('disk full');
        return put(...args);
      };
      try {
        const failed = await generate(body, { 'idempotency-key': 'order-7' });
        expect(failed.statusCode).toBe(500);
        // the same key with another body is still refused: the key was not let go
        const other = await generate(
          { ...body, destinations: { inkit_storage: { name: 'other' } } },
          { 'idempotency-key': 'order-7' },
        );
        expect(other.statusCode).toBe(409);
        const before = await countDocuments();
        const retried = await generate(body, { 'idempotency-key': 'order-7' });
        expect(retried.statusCode).toBe(201);
        expect(await countDocuments()).toBe(before + 1);
        const again = await generate(body, { 'idempotency-key': 'order-7' });
        expect(again.headers['idempotent-replayed']).toBe('true');
        expect(again.json().document_id).toBe(retried.json().document_id);
      } finally {
        t.service.storage.put = put;
      }
    });

    it('takes over from a request whose process died: the same render, answered once the wait is over', async () => {
      const keyId = (await t.service.keys.authenticate('api', t.key))!.id;
      // a process that died right after storing the document left its key `running`
      const since = clock.now().toISOString();
      const renderId = renderIdFor(keyId, 'order-6', since);
      const stored = await t.service.documents.generate(body, { keyId, name: 'test key' }, renderId);
      await t.service.database.db
        .insertInto('idempotency')
        .values({
          scope: `${keyId}:POST /v1/generate`,
          key: 'order-6',
          request_hash: sha256(canonicalJson(body)),
          state: 'running',
          status: null,
          body: null,
          created_at: since,
          expires_at: new Date(clock.now().getTime() + 86_400_000).toISOString(),
        })
        .execute();
      const before = await countDocuments();
      let answered = false;
      const retry = generate(body, { 'idempotency-key': 'order-6' }).finally(() => (answered = true));
      // the retry waits for the first answer by the service's clock; move it until it takes over
      await eventually(async () => {
        clock.advance(TAKEOVER_MS);
        return answered;
      }, 'the retry took over');
      const res = await retry;
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ id: renderId, document_id: stored.document_id });
      expect(await countDocuments()).toBe(before);
      // and the next retry gets the stored answer
      const again = await generate(body, { 'idempotency-key': 'order-6' });
      expect(again.headers['idempotent-replayed']).toBe('true');
    });

    it('does not remember a failed request, so the fixed request can reuse the key', async () => {
      const bad = await generate({ ...body, merge_parameters: {} }, { 'idempotency-key': 'order-5' });
      expect(bad.statusCode).toBe(422);
      const good = await generate(body, { 'idempotency-key': 'order-5' });
      expect(good.statusCode).toBe(201);
    });

    it('keeps keys of different API keys apart', async () => {
      const other = await t.service.keys.create('api', 'other client');
      const mine = await generate(body, { 'idempotency-key': 'shared' });
      const theirs = await generate(
        { ...body, destinations: { inkit_storage: { name: 'theirs' } } },
        { 'idempotency-key': 'shared', 'x-service-api-token': other.secret },
      );
      expect(theirs.statusCode).toBe(201);
      expect(theirs.json().document_id).not.toBe(mine.json().document_id);
    });

    it('refuses an empty or overlong key', async () => {
      const res = await generate(body, { 'idempotency-key': 'x'.repeat(256) });
      expect(res.statusCode).toBe(422);
      expect(res.json().error.details[0].field).toBe('Idempotency-Key');
    });
  });
});
