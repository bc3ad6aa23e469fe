/**
 * Our n8n nodes in n8n's own engine (n8n-core 2.11) against a real Paperlink service listening on
 * a port: every operation, Continue On Fail, a bad API key, the trigger's subscription lifecycle
 * and signature check, and the postcard trigger's 202 and each 4xx.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { PDFDocument } from 'pdf-lib';
import { Expression, NodeHelpers, type ICredentialDataDecryptedObject } from 'n8n-workflow';
import { PaperlinkApi } from '../../credentials/PaperlinkApi.credentials';
import { PaperlinkPostcardTokenApi } from '../../credentials/PaperlinkPostcardTokenApi.credentials';
import { templateLabel } from '../../nodes/Paperlink/methods/listSearch';
import { ALL_SCOPES } from '../../src/keys';
import { EXAMPLE_IDS } from '../../src/templates/store';
import { PAGE_IMAGE_WIDTH } from '../../src/templates/viewcopy';
import { makeDocx } from '../support/docx';
import { sign } from '../../src/webhooks/signature';
import { eventually } from '../support/eventually';
import { root } from '../support/fixtures';
import { binaryBytes, loadOptionsContext, runPaperlink, serveTrigger } from '../support/n8n';
import { readAttachments, readOutline, readPdf } from '../support/pdf';
import { testService, type TestService } from '../support/service';
import { linkIn, startSmtp, type Mailbox } from '../support/smtp';
import { text } from '../../nodes/Paperlink/text';

const sample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8')) as Record<
  string,
  string
>;

let t: TestService;
let mail: Mailbox;
let base: string;
let creds: Record<string, ICredentialDataDecryptedObject>;
let postcardToken: string;

beforeAll(async () => {
  mail = await startSmtp();
  t = await testService({ config: { smtpUrl: mail.url, webhookAllowPrivate: true } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  await t.service.apps.magicLink.put({ public_url: base });
  postcardToken = (await t.service.keys.create('postcard', 'n8n')).secret;
  creds = {
    paperlinkApi: { baseUrl: `${base}/`, apiKey: t.key },
    paperlinkPostcardTokenApi: { token: postcardToken, intakeUrl: `${base}/postcards` },
  };
}, 30_000);
afterAll(async () => {
  await t?.stop();
  await mail?.close();
});

const postcardValues = () => Object.fromEntries(Object.entries(sample).map(([k, v]) => [k, v]));
/** A stored document made the ordinary way; returns its id. */
async function makeDocument(name: string): Promise<string> {
  const variables = (await t.service.templates.load(EXAMPLE_IDS.letter)).variables;
  const r = await t.service.documents.generate(
    {
      template_id: EXAMPLE_IDS.letter,
      merge_parameters: Object.fromEntries(variables.map((v) => [v, 'x'])),
      destinations: { inkit_storage: { name } },
    },
    { keyId: null, name: null },
  );
  return r.document_id;
}

const letterSample = JSON.parse(fs.readFileSync(path.join(root, 'examples/letter-html/sample.json'), 'utf8')) as Record<
  string,
  string
>;

describe('Paperlink node: Document', () => {
  it('generates with a Magic Link from mapped merge fields and returns the PDF as binary', async () => {
    const variables = (await t.service.templates.load(EXAMPLE_IDS.postcard)).variables;
    const values = postcardValues();
    const { items, error } = await runPaperlink(
      {
        resource: 'document',
        operation: 'generate',
        templateId: { __rl: true, mode: 'list', value: EXAMPLE_IDS.postcard },
        mergeFields: {
          mappingMode: 'defineBelow',
          value: Object.fromEntries(variables.map((v) => [v, values[v] ?? `value of ${v}`])),
        },
        store: true,
        documentName: 'From n8n',
        shareByMagicLink: true,
        recipientEmail: 'ada@example.com',
        authEmail: '',
        authType: 'email',
        expireAfter: 2,
        expireUnit: 'days',
        timerStarts: 'opened',
        expireAfterViews: 3,
        options: {
          returnBinary: true,
          binaryPropertyName: 'pdf',
          returnPageImage: true,
          retainFor: { span: { amount: 2, unit: 'days' } },
        },
      },
      [{ row: 1 }],
      creds,
    );
    expect(error).toBeUndefined();
    expect(items).toHaveLength(1);
    const [item] = items;
    expect(item.json).toMatchObject({
      object: 'render',
      status: 'completed',
      destinations: {
        inkit_storage: { name: 'From n8n' },
        magic_link: { recipient_email: 'ada@example.com', views_left: 3 },
      },
    });
    expect(item.pairedItem).toEqual({ item: 0 });
    // kept for the two days its options say
    const kept = item.json.destinations as { inkit_storage: { expires_at: string } };
    expect(Date.parse(kept.inkit_storage.expires_at) - Date.parse(item.json.created_at as string)).toBe(
      2 * 24 * 3600 * 1000,
    );
    const link = await t.service.links.get(item.json.magic_link_piece_id as string);
    expect(link).toMatchObject({
      retain_from_opened: { days: 2 },
      retain_from_created: null,
      expire_after_n_views: 3,
      auth_email: 'ada@example.com',
      // no sharing options: no watermark, downloads allowed
      watermark: null,
      allow_download: true,
    });
    expect(linkIn(await mail.next('ada@example.com'))).toContain('/l/');
    const binary = item.binary!.pdf;
    // the file is named after the document, not its id
    expect(binary).toMatchObject({ mimeType: 'application/pdf', fileName: 'From n8n.pdf' });
    const text = (await readPdf(await binaryBytes(binary))).text;
    expect(text).toContain(values.first_name);
    // and its first page as an image, beside the PDF, for a chat or e-mail step
    expect(item.binary!.page).toMatchObject({ mimeType: 'image/png' });
    const image = await binaryBytes(item.binary!.page);
    expect(image.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(image.readUInt32BE(16)).toBe(PAGE_IMAGE_WIDTH);
  });

  it('generates to the PDF standard chosen in its options, and shows standard_unavailable as the service says it', async () => {
    const base = {
      resource: 'document',
      operation: 'generate',
      mergeFields: { mappingMode: 'defineBelow', value: postcardValues() },
      store: true,
      documentName: '',
      shareByMagicLink: false,
    };
    const { items, error } = await runPaperlink(
      {
        ...base,
        templateId: { __rl: true, mode: 'list', value: EXAMPLE_IDS.postcard },
        options: {
          pdfStandard: 'PDF/A-2b',
          pdfMetadata: { properties: { title: 'From n8n', author: '' } },
          returnBinary: true,
        },
      },
      [{}],
      creds,
    );
    expect(error).toBeUndefined();
    const xmp = (await binaryBytes(items[0].binary!.data)).toString('latin1');
    expect(xmp).toContain('<pdfaid:part>2</pdfaid:part>');
    // the title given; the author left empty is not sent
    expect((await readPdf(await binaryBytes(items[0].binary!.data))).info).toMatchObject({ Title: 'From n8n' });
    const html = await runPaperlink(
      {
        ...base,
        templateId: { __rl: true, mode: 'list', value: EXAMPLE_IDS.letter_html },
        mergeFields: { mappingMode: 'defineBelow', value: letterSample },
        options: { pdfStandard: 'PDF/UA-1' },
      },
      [{}],
      creds,
    );
    expect(html.error?.message).toMatch(/standard_unavailable/);
    expect((html.error as unknown as { description: string }).description).toMatch(/pdf_standard: /);
  });

  it('renders the template version chosen in its options, else the current one', async () => {
    const xml = (w: string) => `<document><body><p>${w} {{name}}</p></body></document>`;
    const { id } = await t.service.templates.create({ source: xml('Old') });
    await t.service.templates.addVersion(id, { source: xml('New') });
    const textOf = async (options: object) => {
      const { items, error } = await runPaperlink(
        {
          resource: 'document',
          operation: 'generate',
          templateId: { __rl: true, mode: 'id', value: id },
          mergeFields: { mappingMode: 'defineBelow', value: { name: 'Ann' } },
          store: true,
          documentName: '',
          shareByMagicLink: false,
          options: { returnBinary: true, ...options },
        },
        [{}],
        creds,
      );
      expect(error).toBeUndefined();
      expect(items[0].json.template_version).toBe('templateVersion' in options ? options.templateVersion : 2);
      return (await readPdf(await binaryBytes(items[0].binary!.data))).text;
    };
    await expect(textOf({ templateVersion: 1 })).resolves.toContain('Old Ann');
    await expect(textOf({})).resolves.toContain('New Ann');
  });

  it('attaches the binary fields named in its options: the example invoice as a Factur-X e-invoice', async () => {
    const facturx = fs.readFileSync(path.join(root, 'examples/invoice/attachments/factur-x.xml'));
    const invoice = JSON.parse(fs.readFileSync(path.join(root, 'examples/invoice/sample.json'), 'utf8')) as Record<
      string,
      string
    >;
    const { items, error } = await runPaperlink(
      {
        resource: 'document',
        operation: 'generate',
        templateId: { __rl: true, mode: 'list', value: EXAMPLE_IDS.invoice },
        mergeFields: { mappingMode: 'defineBelow', value: invoice },
        store: true,
        documentName: '',
        shareByMagicLink: false,
        options: { pdfStandard: 'PDF/A-3b', attachBinary: ' invoiceXml ', returnBinary: true },
      },
      [
        {
          $binary: {
            invoiceXml: { base64: facturx.toString('base64'), fileName: 'factur-x.xml', mimeType: 'application/xml' },
          },
        },
      ],
      creds,
    );
    expect(error).toBeUndefined();
    const pdf = await binaryBytes(items[0].binary!.data);
    expect(Buffer.from((await readAttachments(pdf))['factur-x.xml']).equals(facturx)).toBe(true);
    expect(pdf.toString('latin1')).toContain('<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>');
  });

  it('merges the parts of its Append Parts option: a template with JSON parameters, then a PDF from a binary field', async () => {
    const invoice = JSON.parse(fs.readFileSync(path.join(root, 'examples/invoice/sample.json'), 'utf8')) as Record<
      string,
      string
    >;
    const terms = await PDFDocument.create();
    terms.addPage([300, 300]).drawText('Terms and conditions', { x: 20, y: 150 });
    const base = {
      resource: 'document',
      operation: 'generate',
      templateId: { __rl: true, mode: 'list', value: EXAMPLE_IDS.postcard },
      mergeFields: { mappingMode: 'defineBelow', value: postcardValues() },
      store: true,
      documentName: '',
      shareByMagicLink: false,
    };
    const input = [
      {
        $binary: {
          terms: {
            base64: Buffer.from(await terms.save()).toString('base64'),
            fileName: 't.pdf',
            mimeType: 'application/pdf',
          },
        },
      },
    ];
    const { items, error } = await runPaperlink(
      {
        ...base,
        options: {
          returnBinary: true,
          append: {
            part: [
              {
                templateId: EXAMPLE_IDS.invoice,
                mergeParameters: JSON.stringify(invoice),
                binaryPropertyName: '',
                title: '',
              },
              { templateId: '', mergeParameters: '{}', binaryPropertyName: 'terms', title: 'Terms' },
            ],
          },
        },
      },
      input,
      creds,
    );
    expect(error).toBeUndefined();
    const bytes = await binaryBytes(items[0].binary!.data);
    const outline = await readOutline(bytes);
    expect(outline.map((o) => o.title)).toEqual(['Postcard 6x4', 'Invoice', 'Terms']);
    expect((await readPdf(bytes)).pages.at(-1)!.text).toBe('Terms and conditions');
    const broken = await runPaperlink(
      { ...base, options: { append: { part: [{ templateId: EXAMPLE_IDS.invoice, mergeParameters: '{oops' }] } } },
      input,
      creds,
    );
    expect(broken.error?.message).toMatch(/Merge Parameters of part 1/);
  });

  it('gets, downloads, lists and deletes documents', async () => {
    const made = await makeDocument('n8n: letter');
    const got = await runPaperlink({ resource: 'document', operation: 'get', documentId: made }, [{}], creds);
    expect(got.items[0].json).toMatchObject({ id: made, name: 'n8n: letter', magic_links: [] });
    const down = await runPaperlink(
      { resource: 'document', operation: 'download', documentId: made, binaryPropertyName: 'data' },
      [{}],
      creds,
    );
    expect(down.items[0].binary!.data).toMatchObject({ mimeType: 'application/pdf', fileName: 'n8n_ letter.pdf' });
    const bytes = await binaryBytes(down.items[0].binary!.data);
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
    expect(bytes.length).toBe(got.items[0].json.size);
    const list = await runPaperlink(
      { resource: 'document', operation: 'list', returnAll: false, limit: 1 },
      [{}],
      creds,
    );
    expect(list.items).toHaveLength(1);
    const all = await runPaperlink({ resource: 'document', operation: 'list', returnAll: true }, [{}], creds);
    expect(all.items.map((i) => i.json.id)).toContain(made);
    expect(all.items.every((i) => (i.pairedItem as { item: number }).item === 0)).toBe(true);
    const del = await runPaperlink({ resource: 'document', operation: 'delete', documentId: made }, [{}], creds);
    expect(del.items[0].json).toEqual({ id: made, object: 'document', deleted: true });
  });

  it('fails with the service message and field details, or outputs them under Continue On Fail', async () => {
    const params = {
      resource: 'document',
      operation: 'generate',
      templateId: EXAMPLE_IDS.letter,
      mergeFields: { mappingMode: 'defineBelow', value: {} },
      store: true,
      shareByMagicLink: false,
      options: {},
    };
    const failed = await runPaperlink(params, [{}], creds);
    expect(failed.error?.name).toBe('NodeApiError');
    expect(failed.error?.message).toMatch(/missing_variables/);
    expect((failed.error as unknown as { description: string }).description).toMatch(
      /merge_parameters\.\w+: is required/,
    );
    const tolerated = await runPaperlink(params, [{ a: 1 }, { a: 2 }], creds, { continueOnFail: true });
    expect(tolerated.error).toBeUndefined();
    expect(tolerated.items).toHaveLength(2);
    expect(tolerated.items.map((i) => i.pairedItem)).toEqual([{ item: 0 }, { item: 1 }]);
    expect(tolerated.items[0].json).toMatchObject({
      error: expect.stringMatching(/missing_variables/),
      httpCode: '422',
    });
  });

  it('refuses a bad API key with the service error', async () => {
    const bad = await runPaperlink({ resource: 'template', operation: 'list', returnAll: true }, [{}], {
      ...creds,
      paperlinkApi: { baseUrl: base, apiKey: 'plk_wrong' },
    });
    expect(bad.error?.name).toBe('NodeApiError');
    expect((bad.error as unknown as { httpCode: string }).httpCode).toBe('401');
    expect(bad.error?.message).toMatch(/unauthorized/);
  });
});

describe('Paperlink node: Magic Link, Template, Postcard', () => {
  it('creates a link for an existing document, gets it, expires it', async () => {
    const doc = await makeDocument('shared');
    const made = await runPaperlink(
      {
        resource: 'magicLink',
        operation: 'create',
        documentId: doc,
        recipientEmail: 'bo@example.com',
        authEmail: 'boss@example.com',
        authType: 'email',
        expireAfter: 30,
        expireUnit: 'minutes',
        timerStarts: 'created',
        expireAfterViews: 0,
        sharing: {
          watermarkText: 'For {{email}}',
          watermarkPosition: 'bottom',
          allowDownload: false,
          allowedViewers: 'ann@example.com, @partner.example',
          notifyEnd: true,
          notifyEmail: 'owner@example.com',
          remindHours: 0,
          message: '  Your proof, as agreed.  ',
        },
      },
      [{}],
      creds,
    );
    expect(made.error).toBeUndefined();
    const id = made.items[0].json.id as string;
    expect(made.items[0].json).toMatchObject({ recipient_email: 'bo@example.com' });
    expect(await t.service.links.get(id)).toMatchObject({
      auth_email: 'boss@example.com',
      retain_from_created: { minutes: 30 },
      expire_after_n_views: null,
      watermark: { text: 'For {{email}}', position: 'bottom' },
      allow_download: false,
      allowed_viewers: ['ann@example.com', '@partner.example'],
      notify_sender: { on_first_view: false, on_end: true, email: 'owner@example.com' },
      remind_before: null,
      message: 'Your proof, as agreed.',
    });
    const got = await runPaperlink({ resource: 'magicLink', operation: 'get', magicLinkId: id }, [{}], creds);
    expect(got.items[0].json).toMatchObject({ id, status: 'active', access_log: [], ended_reason: null });
    const ended = await runPaperlink({ resource: 'magicLink', operation: 'expire', magicLinkId: id }, [{}], creds);
    // the node's output says why the link ended, as the API does
    expect(ended.items[0].json).toMatchObject({ id, status: 'revoked', ended_reason: 'revoked' });
    expect(typeof ended.items[0].json.ended_at).toBe('string');
  });

  it('lists templates, gets one with its variables, and offers them to the editor', async () => {
    const list = await runPaperlink({ resource: 'template', operation: 'list', returnAll: true }, [{}], creds);
    expect(list.items.map((i) => i.json.id)).toEqual(expect.arrayContaining(Object.values(EXAMPLE_IDS)));
    const got = await runPaperlink(
      { resource: 'template', operation: 'get', templateId: EXAMPLE_IDS.letter },
      [{}],
      creds,
    );
    expect(got.items[0].json.variables).toEqual((await t.service.templates.load(EXAMPLE_IDS.letter)).variables);

    const ctx = loadOptionsContext(
      {
        resource: 'document',
        operation: 'generate',
        templateId: { __rl: true, mode: 'list', value: EXAMPLE_IDS.postcard },
      },
      creds,
    );
    const node = new (await import('../../nodes/Paperlink/Paperlink.node')).Paperlink();
    const options = await node.methods.listSearch.searchTemplates.call(ctx);
    expect(options.results.map((o) => o.value)).toEqual(expect.arrayContaining(Object.values(EXAMPLE_IDS)));
    // the invoice as an XML, an HTML and a Word template: the picker offers every format
    const found = await node.methods.listSearch.searchTemplates.call(ctx, 'invoice');
    expect(found.results.map((o) => o.value).sort()).toEqual([
      EXAMPLE_IDS.invoice,
      EXAMPLE_IDS.invoice_docx,
      EXAMPLE_IDS.invoice_html,
    ]);
    const fields = await node.methods.resourceMapping.getMergeFields.call(ctx);
    expect(fields.fields.map((f) => f.id)).toEqual((await t.service.templates.load(EXAMPLE_IDS.postcard)).variables);
    // the field mapper lists every format's fields, lists included
    for (const id of [EXAMPLE_IDS.invoice_html, EXAMPLE_IDS.invoice_docx]) {
      const mapped = await node.methods.resourceMapping.getMergeFields.call(
        loadOptionsContext(
          { resource: 'document', operation: 'generate', templateId: { __rl: true, mode: 'list', value: id } },
          creds,
        ),
      );
      expect(mapped.fields.map((f) => f.id)).toEqual((await t.service.templates.load(id)).variables);
      expect(mapped.fields.map((f) => f.id)).toContain('line_items');
    }
    // required in the editor as the template declares them: the postcard's address is, its message is not
    const postcard = await t.service.templates.load(EXAMPLE_IDS.postcard);
    expect(fields.fields.filter((f) => f.required).map((f) => f.id)).toEqual(
      postcard.variables.filter((v) => !Object.hasOwn(postcard.defaults, v)),
    );
    expect(fields.fields.find((f) => f.id === 'message')?.required).toBe(false);
    expect(fields.fields.find((f) => f.id === 'address_line_1')?.required).toBe(true);
  });

  it('submits a postcard with custom data through the intake and gets it back rendered', async () => {
    const submitted = await runPaperlink(
      {
        resource: 'postcard',
        operation: 'submit',
        templateId: EXAMPLE_IDS.postcard,
        firstName: sample.first_name,
        lastName: sample.last_name,
        addressLine1: sample.address_line_1,
        addressLine2: '',
        addressCity: sample.address_city,
        addressState: sample.address_state,
        addressZip: sample.address_zip,
        addressCountry: 'us',
        contact: { email: 'jordan@example.com' },
        customData: {
          field: Object.entries(sample)
            .filter(([k]) => !k.startsWith('address_') && !['first_name', 'last_name'].includes(k))
            .map(([name, value]) => ({ name, value })),
        },
      },
      [{}],
      creds,
    );
    expect(submitted.error).toBeUndefined();
    const id = submitted.items[0].json.id as string;
    expect(submitted.items[0].json).toEqual({ id, status: 'received' });
    await eventually(async () => (await t.service.postcards.get(id)).status === 'rendered', 'rendered');
    const got = await runPaperlink({ resource: 'postcard', operation: 'get', postcardId: id }, [{}], creds);
    expect(got.items[0].json).toMatchObject({ id, status: 'rendered', address: { address_country: 'US' } });

    const refused = await runPaperlink(
      {
        resource: 'postcard',
        operation: 'submit',
        templateId: EXAMPLE_IDS.postcard,
        firstName: '',
        lastName: ' ',
        addressLine1: 'x'.repeat(65),
        addressCity: 'A',
        addressState: 'ZZ',
        addressZip: '1',
        addressCountry: 'US',
      },
      [{}],
      creds,
    );
    // checked with the service's rules before anything is sent
    expect(refused.error?.name).toBe('NodeOperationError');
    expect((refused.error as unknown as { description: string }).description).toMatch(/address_line_1/);
  });

  it('refuses a postcard before sending when the template needs a field it lacks (nothing is stored), but not an optional one', async () => {
    const before = (await t.service.postcards.list({ limit: 100 })).data.length;
    const tmpl = await t.service.templates.create({
      source:
        '<document size="postcard-6x4"><body><p>{{last_name}}: use {{promo_code}} by {{deadline | default: "Friday"}}</p></body></document>',
    });
    const refused = await runPaperlink(
      {
        resource: 'postcard',
        operation: 'submit',
        templateId: tmpl.id,
        firstName: '',
        lastName: sample.last_name,
        addressLine1: sample.address_line_1,
        addressCity: sample.address_city,
        addressState: sample.address_state,
        addressZip: sample.address_zip,
        addressCountry: 'US',
      },
      [{}],
      creds,
    );
    expect(refused.error?.name).toBe('NodeOperationError');
    expect((refused.error as unknown as { description: string }).description).toMatch(
      /^promo_code: is required by the template$/,
    );
    expect((refused.error as unknown as { context: { itemIndex: number } }).context.itemIndex).toBe(0);
    expect((await t.service.postcards.list({ limit: 100 })).data.length).toBe(before);
  });
});

describe('Paperlink Trigger', () => {
  it('subscribes on activation, takes signed deliveries, refuses forged ones, unsubscribes', async () => {
    const trigger = await serveTrigger('paperlinkTrigger', { events: ['document.generated'] }, creds);
    try {
      expect(await trigger.hook('checkExists')).toBe(false);
      expect(await trigger.hook('create')).toBe(true);
      const id = trigger.staticData.webhookId as string;
      expect(id).toMatch(/^wh_/);
      expect(trigger.staticData.webhookSecret).toMatch(/^whsec_/);
      expect(await t.service.webhooks.get(id)).toMatchObject({ url: trigger.url, events: ['document.generated'] });
      expect(await trigger.hook('checkExists')).toBe(true);

      await makeDocument('triggered');
      await eventually(async () => trigger.started.length === 1, 'the workflow started');
      expect(trigger.started[0][0].json).toMatchObject({
        type: 'document.generated',
        data: { object: { name: 'triggered' } },
      });

      const body = JSON.stringify({ id: 'evt_forged', type: 'document.generated', data: {} });
      const forged = await fetch(trigger.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'paperlink-signature': sign('whsec_not_the_secret', body, Math.floor(Date.now() / 1000)),
        },
        body,
      });
      expect(forged.status).toBe(401);
      expect((await forged.json()).error.code).toBe('invalid_signature');
      const unsigned = await fetch(trigger.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(unsigned.status).toBe(401);
      expect(trigger.started).toHaveLength(1);

      expect(await trigger.hook('delete')).toBe(true);
      await expect(t.service.webhooks.get(id)).rejects.toMatchObject({ code: 'not_found' });
      expect(trigger.staticData.webhookId).toBeUndefined();
      // a subscription deleted behind n8n's back is made again
      expect(await trigger.hook('create')).toBe(true);
      await t.service.webhooks.remove(trigger.staticData.webhookId as string);
      expect(await trigger.hook('checkExists')).toBe(false);
    } finally {
      await trigger.close();
    }
  });
});

describe('Postcard Intake Trigger', () => {
  const post = (url: string, body: unknown, type = 'application/json') =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': type },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('answers 202 with no body and starts the workflow with the normalised postcard', async () => {
    const trigger = await serveTrigger(
      'postcardIntakeTrigger',
      { path: 'postcards', templateIds: `${EXAMPLE_IDS.postcard}, tmpl_other` },
      creds,
    );
    try {
      const res = await post(trigger.url, {
        api_token: postcardToken,
        template_id: EXAMPLE_IDS.postcard,
        ...sample,
        address_country: 'us',
        favourite_colour: 'green',
      });
      expect(res.status).toBe(202);
      expect(await res.text()).toBe('');
      expect(trigger.started).toHaveLength(1);
      expect(trigger.started[0][0].json).toMatchObject({
        template_id: EXAMPLE_IDS.postcard,
        address: { address_country: 'US' },
        custom: { favourite_colour: 'green' },
        contact: { first_name: sample.first_name },
      });
    } finally {
      await trigger.close();
    }
  });

  it.each([
    [
      'a wrong token',
      () => ({ api_token: 'plp_wrong', template_id: EXAMPLE_IDS.postcard, ...sample }),
      401,
      'unauthorized',
      [],
    ],
    ['no token', () => ({ template_id: EXAMPLE_IDS.postcard, ...sample }), 401, 'unauthorized', []],
    [
      'broken rules',
      () => ({
        api_token: postcardToken,
        template_id: EXAMPLE_IDS.postcard,
        ...sample,
        first_name: ' ',
        last_name: '',
        address_line_1: 'x'.repeat(65),
        address_country: 'XX',
      }),
      422,
      'validation_failed',
      ['address_country', 'address_line_1', 'first_name'],
    ],
    [
      'a template not on the list',
      () => ({ api_token: postcardToken, template_id: 'tmpl_elsewhere', ...sample }),
      422,
      'template_not_allowed',
      ['template_id'],
    ],
  ] as [string, () => object, number, string, string[]][])(
    'refuses %s as the service would',
    async (_what, body, status, code, fields) => {
      const trigger = await serveTrigger(
        'postcardIntakeTrigger',
        { path: 'postcards', templateIds: EXAMPLE_IDS.postcard },
        creds,
      );
      try {
        const res = await post(trigger.url, body());
        expect(res.status).toBe(status);
        const answer = (await res.json()) as { error: { code: string; details: { field: string }[] } };
        expect(answer.error.code).toBe(code);
        expect([...new Set(answer.error.details.map((d) => d.field))].sort()).toEqual(fields);
        expect(trigger.started).toHaveLength(0);
        // the service answers the same request the same way
        const service = await fetch(`${base}/postcards`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body()),
        });
        // the service knows no allow-list: the trigger's own refusal has no counterpart there
        if (code !== 'template_not_allowed') {
          expect(service.status).toBe(status);
          expect(((await service.json()) as { error: { code: string } }).error.code).toBe(code);
        }
      } finally {
        await trigger.close();
      }
    },
  );

  it('refuses a body that is not JSON with 415', async () => {
    const trigger = await serveTrigger('postcardIntakeTrigger', { path: 'postcards', templateIds: '' }, creds);
    try {
      const res = await post(trigger.url, 'first_name=Ada', 'application/x-www-form-urlencoded');
      expect(res.status).toBe(415);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unsupported_media_type');
    } finally {
      await trigger.close();
    }
  });
});

describe('Paperlink node: as builders expect it (issue 23)', () => {
  const letterValues = async () =>
    Object.fromEntries((await t.service.templates.load(EXAMPLE_IDS.letter)).variables.map((v) => [v, `auto ${v}`]));
  const generate = (mergeFields: object, extra: object = {}) => ({
    resource: 'document',
    operation: 'generate',
    templateId: EXAMPLE_IDS.letter,
    mergeFields,
    store: true,
    documentName: 'auto',
    shareByMagicLink: false,
    options: {},
    ...extra,
  });

  it('"Map Automatically" sends the item fields that carry a variable name, and nothing else', async () => {
    const item = { ...(await letterValues()), not_a_variable: 'ignored' };
    const { items, error } = await runPaperlink(
      generate({ mappingMode: 'autoMapInputData', value: null }),
      [item],
      creds,
    );
    expect(error).toBeUndefined();
    expect(items[0].json).toMatchObject({ status: 'completed', warnings: [] });
    const text = (await readPdf((await t.service.storage.get(items[0].json.document_id as string))!)).text;
    expect(text).toContain('auto recipient_name');
  });

  it('leaves an empty merge field out so the service names it, and sends n8n lists as the JSON the template reads', async () => {
    const values = await letterValues();
    const { recipient_name: _left, ...rest } = values;
    const missing = await runPaperlink(
      generate({ mappingMode: 'defineBelow', value: { ...rest, recipient_name: null } }),
      [{}],
      creds,
    );
    expect(missing.error?.name).toBe('NodeApiError');
    expect((missing.error as unknown as { description: string }).description).toBe(
      'merge_parameters.recipient_name: is required by the template',
    );

    const invoice = JSON.parse(fs.readFileSync(path.join(root, 'examples/invoice/sample.json'), 'utf8')) as Record<
      string,
      string
    >;
    const lines = [
      {
        number: '1',
        description: 'Mapped as an n8n array',
        detail: '',
        quantity: '1',
        unit_price: '$1.00',
        amount: '$1.00',
      },
    ];
    const listed = await runPaperlink(
      {
        ...generate({ mappingMode: 'defineBelow', value: { ...invoice, line_items: lines } }),
        templateId: EXAMPLE_IDS.invoice,
      },
      [{}],
      creds,
    );
    expect(listed.error).toBeUndefined();
    expect((await readPdf((await t.service.storage.get(listed.items[0].json.document_id as string))!)).text).toContain(
      'Mapped as an n8n array',
    );
  });

  it('keeps the failing item on the error', async () => {
    const good = await letterValues();
    const { error } = await runPaperlink(
      generate({ mappingMode: 'autoMapInputData', value: null }),
      [good, { nothing: 'here' }],
      creds,
    );
    expect(error?.name).toBe('NodeApiError');
    expect((error as unknown as { context: { itemIndex: number } }).context.itemIndex).toBe(1);
  });

  it('never makes a second document when n8n retries a Generate whose answer was lost', async () => {
    // a proxy that forwards the first generate to the service and then drops the connection, as a network would
    let dropped = 0;
    const proxy = http.createServer((req, res) => {
      const upstream = http.request(`${base}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        if (req.url === '/v1/generate' && dropped++ === 0) {
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const before = new Set((await t.service.documents.list({ limit: 100 })).data.map((d) => d.id));
      const viaProxy = {
        ...creds,
        paperlinkApi: { baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, apiKey: t.key },
      };
      const { items, error } = await runPaperlink(
        generate({ mappingMode: 'autoMapInputData', value: null }),
        [await letterValues()],
        viaProxy,
        { retryOnFail: true },
      );
      expect(dropped).toBe(2);
      expect(error).toBeUndefined();
      const made = (await t.service.documents.list({ limit: 100 })).data
        .map((d) => d.id)
        .filter((id) => !before.has(id));
      expect(made).toEqual([items[0].json.document_id]);
    } finally {
      proxy.close();
    }
  });

  it('picks documents, links and postcards from a searchable list, by URL or by id', async () => {
    const doc = await makeDocument('Locator target 7f3');
    const ctx = loadOptionsContext({ resource: 'document', operation: 'get' }, creds);
    const node = new (await import('../../nodes/Paperlink/Paperlink.node')).Paperlink();
    const found = await node.methods.listSearch.searchDocuments.call(ctx, 'target 7f3');
    expect(found.results).toEqual([expect.objectContaining({ value: doc, url: `${base}/app/documents/${doc}` })]);
    const byUrl = await runPaperlink(
      {
        resource: 'document',
        operation: 'get',
        documentId: { __rl: true, mode: 'url', value: `${base}/app/documents/${doc}` },
      },
      [{}],
      creds,
    );
    expect(byUrl.items[0].json).toMatchObject({ id: doc });
    const byId = await runPaperlink(
      { resource: 'document', operation: 'get', documentId: { __rl: true, mode: 'id', value: doc } },
      [{}],
      creds,
    );
    expect(byId.items[0].json).toMatchObject({ id: doc });

    const shared = await t.service.documents.share(
      doc,
      { recipient_email: 'locator@example.com', expire_after_n_views: 1 },
      null,
    );
    const links = await node.methods.listSearch.searchMagicLinks.call(ctx, 'locator@');
    expect(links.results.map((r) => r.value)).toEqual([shared.link.id]);
    const listed = await runPaperlink(
      { resource: 'magicLink', operation: 'list', returnAll: true, filters: { document_id: doc } },
      [{}],
      creds,
    );
    expect(listed.items.map((i) => i.json.id)).toEqual([shared.link.id]);
    const none = await runPaperlink(
      { resource: 'magicLink', operation: 'list', returnAll: true, filters: { document_id: doc, status: 'revoked' } },
      [{}],
      creds,
    );
    expect(none.items).toEqual([]);
    // by creation time, as n8n's date fields send it (no zone: UTC)
    const made = Date.parse(shared.link.created_at);
    const at = (ms: number) => new Date(ms).toISOString().slice(0, 19);
    const inTime = await runPaperlink(
      {
        resource: 'magicLink',
        operation: 'list',
        returnAll: true,
        filters: { document_id: doc, created_after: at(made - 1000), created_before: at(made + 1000) },
      },
      [{}],
      creds,
    );
    expect(inTime.items.map((i) => i.json.id)).toEqual([shared.link.id]);
    const later = await runPaperlink(
      {
        resource: 'magicLink',
        operation: 'list',
        returnAll: true,
        filters: { document_id: doc, created_after: at(made + 1000) },
      },
      [{}],
      creds,
    );
    expect(later.items).toEqual([]);
    const postcards = await node.methods.listSearch.searchPostcards.call(ctx);
    expect(Array.isArray(postcards.results)).toBe(true);
  });

  it('lists documents by name', async () => {
    const doc = await makeDocument('Findable 91c');
    await makeDocument('Other 91c');
    const { items } = await runPaperlink(
      { resource: 'document', operation: 'list', returnAll: true, filters: { search: 'findable 91' } },
      [{}],
      creds,
    );
    expect(items.map((i) => i.json.id)).toEqual([doc]);
  });

  it('creates a template from a binary field with its image, then deletes it', async () => {
    const xml =
      '<document size="a5"><body><image src="images/mark.png" width="1in" alt="Mark"/><p>Made in n8n for {{who}}</p></body></document>';
    const png = fs.readFileSync(path.join(root, 'examples/letter/logo.png')).toString('base64');
    const input = [
      {
        $binary: {
          data: { base64: Buffer.from(xml).toString('base64'), fileName: 'n8n-note.xml', mimeType: 'application/xml' },
          logo: { base64: png, fileName: 'logo.png', mimeType: 'image/png' },
        },
      },
    ];
    const made = await runPaperlink(
      {
        resource: 'template',
        operation: 'create',
        binaryPropertyName: 'data',
        name: '',
        assets: { asset: [{ binaryPropertyName: 'logo', path: 'images/mark.png' }] },
      },
      input,
      creds,
    );
    expect(made.error).toBeUndefined();
    expect(made.items[0].json).toMatchObject({ name: 'n8n-note', format: 'xml', variables: ['who'] });
    const id = made.items[0].json.id as string;
    const rendered = await t.service.documents.generate(
      { template_id: id, merge_parameters: { who: 'Ada' }, destinations: { inkit_storage: {} } },
      { keyId: null, name: null },
    );
    expect((await readPdf((await t.service.storage.get(rendered.document_id))!)).text).toContain('Made in n8n for Ada');

    const withoutAsset = await runPaperlink(
      { resource: 'template', operation: 'create', binaryPropertyName: 'data', name: 'no image' },
      input,
      creds,
    );
    expect(withoutAsset.error?.name).toBe('NodeApiError');
    expect(withoutAsset.error?.message).toMatch(/template_invalid/);

    const del = await runPaperlink(
      { resource: 'template', operation: 'delete', templateId: { __rl: true, mode: 'id', value: id } },
      [{}],
      creds,
    );
    expect(del.items[0].json).toEqual({ id, object: 'template', deleted: true });
    await expect(t.service.templates.get(id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('creates a Word template from a .docx in a binary field, and generates from it', async () => {
    const docx = makeDocx(['Made in Word for {who}']);
    const made = await runPaperlink(
      { resource: 'template', operation: 'create', binaryPropertyName: 'data', name: '' },
      [
        {
          $binary: {
            data: {
              base64: Buffer.from(docx).toString('base64'),
              fileName: 'word-note.docx',
              mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
            },
          },
        },
      ],
      creds,
    );
    expect(made.error).toBeUndefined();
    expect(made.items[0].json).toMatchObject({ name: 'word-note', format: 'docx', variables: ['who'] });
    const rendered = await t.service.documents.generate(
      {
        template_id: made.items[0].json.id as string,
        merge_parameters: { who: 'Ada' },
        destinations: { inkit_storage: {} },
      },
      { keyId: null, name: null },
    );
    expect((await readPdf((await t.service.storage.get(rendered.document_id))!)).text).toContain(
      'Made in Word for Ada',
    );
  });

  it('shows no merge fields (and no notice) until a template is chosen', async () => {
    const node = new (await import('../../nodes/Paperlink/Paperlink.node')).Paperlink();
    const mapper = node.description.properties.find((p) => p.name === 'mergeFields')!;
    const shown = (templateId: unknown) =>
      NodeHelpers.displayParameter(
        { resource: 'document', operation: 'generate', templateId } as never,
        mapper,
        null,
        node.description,
      );
    expect(shown({ __rl: true, mode: 'list', value: '' })).toBe(false);
    expect(shown({ __rl: true, mode: 'list', value: EXAMPLE_IDS.letter })).toBe(true);
    const ctx = loadOptionsContext(
      { resource: 'document', operation: 'generate', templateId: { __rl: true, mode: 'list', value: '' } },
      creds,
    );
    expect(await node.methods.resourceMapping.getMergeFields.call(ctx)).toEqual({ fields: [] });
  });
});

describe('Paperlink Trigger: options and refusals (issue 23)', () => {
  it('attaches the PDF of a generated document, named after it', async () => {
    const trigger = await serveTrigger(
      'paperlinkTrigger',
      { events: ['document.generated'], options: { attachPdf: true, binaryPropertyName: 'pdf' } },
      creds,
    );
    try {
      await trigger.hook('create');
      const doc = await makeDocument('With PDF');
      await eventually(async () => trigger.started.length === 1, 'the workflow started');
      const [item] = trigger.started[0];
      expect(item.json).toMatchObject({ type: 'document.generated', data: { object: { id: doc } } });
      expect(item.binary!.pdf).toMatchObject({ mimeType: 'application/pdf', fileName: 'With PDF.pdf' });
      expect((await binaryBytes(item.binary!.pdf)).subarray(0, 5).toString()).toBe('%PDF-');
      await trigger.hook('delete');
    } finally {
      await trigger.close();
    }
  });

  it('refuses "Any Event" together with other events', async () => {
    const trigger = await serveTrigger('paperlinkTrigger', { events: ['*', 'document.generated'] }, creds);
    try {
      await expect(trigger.hook('create')).rejects.toMatchObject({ name: 'NodeOperationError' });
      expect(trigger.staticData.webhookId).toBeUndefined();
    } finally {
      await trigger.close();
    }
  });

  it('fails activation with the service reason when the service refuses the address', async () => {
    const strict = await testService({ config: { webhookAllowPrivate: false } });
    await strict.app.listen({ port: 0, host: '127.0.0.1' });
    const strictBase = `http://127.0.0.1:${(strict.app.server.address() as AddressInfo).port}`;
    const trigger = await serveTrigger(
      'paperlinkTrigger',
      { events: ['*'] },
      { ...creds, paperlinkApi: { baseUrl: strictBase, apiKey: strict.key } },
    );
    try {
      const refusal = await trigger.hook('create').then(
        () => undefined,
        (e: unknown) => e as { name: string; message: string; httpCode: string },
      );
      expect(refusal).toMatchObject({ name: 'NodeApiError', httpCode: '422' });
      expect(refusal!.message).toContain(trigger.url);
      expect(refusal!.message).toMatch(/url: /);
    } finally {
      await trigger.close();
      await strict.stop();
    }
  });
});

describe('Paperlink Trigger: every failure of its lifecycle says the service reason (issue 48)', () => {
  it('fails checkExists and delete with the service message and code, not a generic text', async () => {
    const trigger = await serveTrigger('paperlinkTrigger', { events: ['*'] }, creds);
    try {
      expect(await trigger.hook('create')).toBe(true);
      const subscription = trigger.staticData.webhookId as string;
      // the key is revoked while the workflow is published: n8n's next check and the removal both fail
      const revoked = await t.service.keys.create('api', 'revoked while published');
      const withRevoked = await serveTrigger(
        'paperlinkTrigger',
        { events: ['*'] },
        { ...creds, paperlinkApi: { baseUrl: `${base}/`, apiKey: revoked.secret } },
      );
      try {
        // the node's static data exists once a hook has run; then it holds the live subscription
        expect(await withRevoked.hook('checkExists')).toBe(false);
        Object.assign(withRevoked.staticData, { webhookId: subscription, webhookSecret: 'x' });
        await t.service.keys.revoke(revoked.key.id);
        for (const method of ['checkExists', 'delete'] as const) {
          const failure = await withRevoked.hook(method).then(
            () => undefined,
            (e: unknown) => e as { name: string; message: string; httpCode: string },
          );
          expect({ method, name: failure?.name, httpCode: failure?.httpCode }).toEqual({
            method,
            name: 'NodeApiError',
            httpCode: '401',
          });
          expect(failure!.message).toContain('(unauthorized)');
        }
      } finally {
        await withRevoked.close();
      }
      expect(await trigger.hook('delete')).toBe(true);
    } finally {
      await trigger.close();
    }
  });
});

describe('Postcard Intake Trigger: malformed JSON (issue 23)', () => {
  it('answers malformed JSON in the service error shape', async () => {
    const trigger = await serveTrigger('postcardIntakeTrigger', { path: 'postcards', templateIds: '' }, creds);
    try {
      for (const body of ['{"first_name": ', '']) {
        const res = await fetch(trigger.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: { code: string; details: unknown[] } }).error).toMatchObject({
          code: 'malformed_json',
          details: [],
        });
      }
      expect(trigger.started).toHaveLength(0);
    } finally {
      await trigger.close();
    }
  });
});

describe('what a builder learns before a run, and what Generate gives them (issue 70)', () => {
  const paperlink = async () => new (await import('../../nodes/Paperlink/Paperlink.node')).Paperlink();

  it('describes the action node by what it does when the workflow reaches it, not as a trigger', async () => {
    const { description } = await paperlink();
    expect(description.group).not.toContain('trigger');
    // taking requests in and starting workflows is the triggers' work
    expect(description.description).not.toMatch(/\b(takes?|receives?|starts?|when)\b/i);
    expect(description.description).toMatch(/submit postcards/i);
  });

  it('marks the required merge fields left empty before a run, and never an optional one', async () => {
    const node = await paperlink();
    const letter = await t.service.templates.load(EXAMPLE_IDS.letter);
    const required = letter.variables.filter((v) => !Object.hasOwn(letter.defaults, v));
    expect(required.length).toBeGreaterThan(1);
    expect(required.length).toBeLessThan(letter.variables.length);
    const parameters = {
      resource: 'document',
      operation: 'generate',
      templateId: { __rl: true, mode: 'list', value: EXAMPLE_IDS.letter },
      mergeInput: 'mapper',
    };
    const { fields } = await node.methods.resourceMapping.getMergeFields.call(loadOptionsContext(parameters, creds));
    // what the editor keeps: the schema it loaded, and the values given (the first required one and every optional one left out)
    const value = Object.fromEntries(required.slice(1).map((v) => [v, 'x']));
    const issues = NodeHelpers.getNodeParametersIssues(
      node.description.properties,
      {
        id: 'p',
        name: 'Paperlink',
        type: 'n8n-nodes-paperlink.paperlink',
        typeVersion: 1,
        position: [0, 0],
        parameters: { ...parameters, mergeFields: { mappingMode: 'defineBelow', value, schema: fields } },
      } as never,
      node.description,
    );
    const flagged = Object.entries(issues?.parameters ?? {})
      .filter(([, found]) => found.length)
      .map(([field]) => field);
    expect(flagged).toEqual([`mergeFields.${required[0]}`]);
  });

  it("refuses a template that exists but is not on the intake's list with template_not_allowed, naming the list", async () => {
    const allowed = [EXAMPLE_IDS.postcard, 'tmpl_other'];
    const trigger = await serveTrigger(
      'postcardIntakeTrigger',
      { path: 'postcards', templateIds: allowed.join(', ') },
      creds,
    );
    try {
      // the letter template exists in Paperlink: only the list keeps it out
      await t.service.templates.load(EXAMPLE_IDS.letter);
      const res = await fetch(trigger.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ api_token: postcardToken, template_id: EXAMPLE_IDS.letter, ...sample }),
      });
      expect(res.status).toBe(422);
      const { error } = (await res.json()) as {
        error: { code: string; message: string; details: { field: string; code: string; message: string }[] };
      };
      expect(error.code).toBe('template_not_allowed');
      expect(error.details.map((d) => [d.field, d.code])).toEqual([['template_id', 'not_allowed']]);
      for (const id of allowed) expect(error.details[0].message).toContain(id);
      expect(trigger.started).toHaveLength(0);
    } finally {
      await trigger.close();
    }
  });

  const jsonGenerate = (mergeParametersJson: string, extra: object = {}) => ({
    resource: 'document',
    operation: 'generate',
    templateId: { __rl: true, mode: 'id', value: EXAMPLE_IDS.letter },
    mergeInput: 'json',
    mergeParametersJson,
    store: true,
    documentName: 'JSON mode',
    shareByMagicLink: false,
    options: {},
    ...extra,
  });

  it('takes the merge parameters whole in JSON mode, as JSON text or as the object an expression gives', async () => {
    const letter = await t.service.templates.load(EXAMPLE_IDS.letter);
    const values = Object.fromEntries(letter.variables.map((v) => [v, `json ${v}`]));
    for (const [parameter, input] of [
      [JSON.stringify(values), {}],
      ['={{ $json.letter }}', { letter: values }],
    ] as const) {
      const { items, error } = await runPaperlink(jsonGenerate(parameter), [input], creds);
      expect(error).toBeUndefined();
      expect(items[0].json.status).toBe('completed');
      const pdf = (await readPdf((await t.service.storage.get(items[0].json.document_id as string))!)).text;
      expect(pdf).toContain('json recipient_name');
    }
  });

  it('refuses JSON mode given something other than one object, before anything is generated', async () => {
    const before = (await t.service.documents.list({ limit: 100 })).data.length;
    for (const bad of ['[1, 2]', '{"date": ', '"text"']) {
      const { error } = await runPaperlink(jsonGenerate(bad), [{}], creds);
      expect(error?.name).toBe('NodeOperationError');
    }
    expect((await t.service.documents.list({ limit: 100 })).data.length).toBe(before);
  });

  it("outputs the document's download URL, and the link's URL when it shares one", async () => {
    const letter = await t.service.templates.load(EXAMPLE_IDS.letter);
    const values = Object.fromEntries(letter.variables.map((v) => [v, 'x']));
    const stored = await runPaperlink(jsonGenerate(JSON.stringify(values)), [{}], creds);
    expect(stored.error).toBeUndefined();
    expect(stored.items[0].json).not.toHaveProperty('magic_link_url');
    const shared = await runPaperlink(
      jsonGenerate(JSON.stringify(values), {
        store: false,
        shareByMagicLink: true,
        recipientEmail: 'cy@example.com',
        authEmail: '',
        authType: 'email',
        expireAfter: 1,
        expireUnit: 'days',
        timerStarts: 'created',
        expireAfterViews: 0,
      }),
      [{}],
      creds,
    );
    expect(shared.error).toBeUndefined();
    const link = (shared.items[0].json.destinations as { magic_link: { url: string } }).magic_link;
    expect(shared.items[0].json.magic_link_url).toBe(link.url);
    expect((await fetch(link.url)).status).toBe(200);
    // the download URL gives the PDF to whoever holds an API key, whatever the destinations were
    for (const { items } of [stored, shared]) {
      const url = items[0].json.download_url as string;
      expect(url.startsWith(`${base}/v1/documents/`)).toBe(true);
      const res = await fetch(url, { headers: { 'X-Service-API-Token': t.key } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/pdf/);
      expect(
        Buffer.from(await res.arrayBuffer())
          .subarray(0, 5)
          .toString(),
      ).toBe('%PDF-');
      expect((await fetch(url)).status).toBe(401);
    }
  });
});

describe('Paperlink API credential: Test', () => {
  /** What n8n does when a user clicks Test: the credential's test request, its expressions resolved, authenticated as the nodes are. */
  async function credentialTest(
    apiKey: string,
  ): Promise<{ status: number; statusText: string; body: { error?: { code: string } } }> {
    const { request } = new PaperlinkApi().test;
    // an n8n expression is its text after the leading '='
    const baseUrl = Expression.resolveWithoutWorkflow(request.baseURL!.replace(/^=/, ''), {
      $credentials: { baseUrl: `${base}/` },
    });
    const url = new URL(`${String(baseUrl)}${request.url}`);
    for (const [k, v] of Object.entries(request.qs ?? {})) url.searchParams.set(k, text(v));
    const res = await fetch(url, { headers: { 'X-Service-API-Token': apiKey } });
    return {
      status: res.status,
      statusText: res.statusText,
      body: (await res.json()) as { error?: { code: string } },
    };
  }

  it('passes for a key with every scope the nodes use, and names what a narrower key lacks', async () => {
    expect((await credentialTest(t.key)).status).toBe(200);
    // the nodes' list is the service's list of scopes
    const { request } = new PaperlinkApi().test;
    expect(text(request.qs?.require).split(',')).toEqual(ALL_SCOPES);
    const narrow = (await t.service.keys.create('api', 'generate only', ['generate'])).secret;
    const failed = await credentialTest(narrow);
    expect(failed.status).toBe(403);
    // n8n's Test shows the answer's reason phrase (its statusText), never the body: it names every scope missing
    const missing = ALL_SCOPES.filter((s) => s !== 'generate');
    expect(failed.statusText.replace(/^.*lacks /, '').split(', ')).toEqual(missing);
    expect(failed.body.error?.code).toBe('insufficient_scope');
    expect((failed.body.error as unknown as { details: { code: string }[] }).details).toHaveLength(
      ALL_SCOPES.length - 1,
    );
    expect((await credentialTest('plk_not_a_key_at_all_0000000000')).status).toBe(401);
  });
});

describe('Paperlink Postcard Token API credential: Test, and the intake trigger on activation', () => {
  /** n8n's Test: the test request, its expressions resolved, the body the authenticate block makes. */
  async function credentialTest(token: string): Promise<{ status: number; body: { error?: { code: string } } }> {
    const credential = new PaperlinkPostcardTokenApi();
    const { request } = credential.test;
    const url = Expression.resolveWithoutWorkflow(request.url!.replace(/^=/, ''), {
      $credentials: { intakeUrl: `${base}/postcards/` },
    });
    expect(credential.authenticate.properties.body).toEqual({ api_token: '={{$credentials.token}}' });
    const res = await fetch(String(url), {
      method: request.method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...(request.body as object), api_token: token }),
    });
    return { status: res.status, body: (await res.json()) as { error?: { code: string } } };
  }

  it('passes for a live postcard token and fails for a revoked one, an API key or anything else', async () => {
    const before = (await t.service.postcards.list({ limit: 100 })).data.length;
    const live = await credentialTest(postcardToken);
    expect(live).toMatchObject({ status: 200, body: { object: 'postcard_token', name: 'n8n' } });
    const revoked = await t.service.keys.create('postcard', 'revoked');
    await t.service.keys.revoke(revoked.key.id);
    for (const token of [revoked.secret, t.key, 'plp_nothing_like_a_token_000000000']) {
      const failed = await credentialTest(token);
      expect({ status: failed.status, code: failed.body.error?.code }).toEqual({ status: 401, code: 'unauthorized' });
    }
    // no postcard was made by any of it
    expect((await t.service.postcards.list({ limit: 100 })).data.length).toBe(before);
  });

  it('activates with a live token, and refuses activation with the service reason for a revoked one', async () => {
    const ok = await serveTrigger('postcardIntakeTrigger', { path: 'postcards', templateIds: '' }, creds);
    try {
      expect(await ok.hook('checkExists')).toBe(false);
      expect(await ok.hook('create')).toBe(true);
      expect(await ok.hook('delete')).toBe(true);
    } finally {
      await ok.close();
    }
    const revoked = await t.service.keys.create('postcard', 'revoked at activation');
    await t.service.keys.revoke(revoked.key.id);
    const bad = await serveTrigger(
      'postcardIntakeTrigger',
      { path: 'postcards', templateIds: '' },
      { ...creds, paperlinkPostcardTokenApi: { token: revoked.secret, intakeUrl: `${base}/postcards` } },
    );
    try {
      const refusal = await bad.hook('create').then(
        () => undefined,
        (e: unknown) => e as { name: string; message: string; httpCode: string },
      );
      expect(refusal).toMatchObject({ name: 'NodeApiError', httpCode: '401' });
      expect(refusal!.message).toContain(`${base}/postcards/token`);
    } finally {
      await bad.close();
    }
  });
});

describe('the n8n package as the node panel and the Docs links show it', () => {
  const pkgDir = path.join(root, 'packages/n8n-nodes-paperlink');
  const manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as {
    n8n: { nodes: string[]; credentials: string[] };
  };

  it('has a codex file beside every node, found by searching "Paperlink", its docs linked without a fragment', async () => {
    for (const file of manifest.n8n.nodes) {
      const codexFile = path.join(pkgDir, file.replace(/\.js$/, '.json'));
      expect(fs.existsSync(codexFile)).toBe(true);
      const codex = JSON.parse(fs.readFileSync(codexFile, 'utf8')) as {
        node: string;
        alias: string[];
        resources: Record<string, { url: string }[]>;
      };
      const loaded = (await import(path.join(pkgDir, file))) as Record<
        string,
        new () => { description: { name: string } }
      >;
      const name = Object.values(loaded)[0] ? new (Object.values(loaded)[0])().description.name : '';
      expect(codex.node).toBe(`n8n-nodes-paperlink.${name}`);
      expect(codex.alias).toContain('Paperlink');
      const urls = Object.values(codex.resources)
        .flat()
        .map((r) => r.url);
      expect(urls.length).toBeGreaterThan(0);
      // n8n appends its tracking after '#': a fragment would be lost
      for (const url of urls) {
        expect(url).not.toContain('#');
        const doc = url.replace('https://github.com/paperlink/n8n-nodes-paperlink/blob/main/', '');
        expect(fs.existsSync(path.join(root, doc))).toBe(true);
      }
    }
    for (const credential of [new PaperlinkApi(), new PaperlinkPostcardTokenApi()]) {
      expect(credential.documentationUrl).not.toContain('#');
      expect(fs.existsSync(path.join(root, credential.documentationUrl.replace(/^.*\/blob\/main\//, '')))).toBe(true);
    }
  });

  it('ships a README whose links work on npm (absolute) and a LICENSE', () => {
    const readme = fs.readFileSync(path.join(pkgDir, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(3);
    expect(links.filter((l) => !/^(https:\/\/|#|mailto:)/.test(l))).toEqual([]);
    expect(fs.readFileSync(path.join(pkgDir, 'LICENSE'), 'utf8')).toContain('MIT License');
  });

  it('names a template once with its format, unless its name already says it', () => {
    expect(templateLabel({ name: 'Business letter (HTML)', format: 'html' })).toBe('Business letter (HTML)');
    expect(templateLabel({ name: 'Business letter (Word)', format: 'docx' })).toBe('Business letter (Word)');
    expect(templateLabel({ name: 'Business letter', format: 'xml' })).toBe('Business letter (XML)');
    expect(templateLabel({ name: 'Membership', format: 'pdf' })).toBe('Membership (PDF form)');
  });
});
