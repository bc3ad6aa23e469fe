/**
 * `pdf_standard`: every example template, in every format, rendered to each standard its format
 * offers and checked by veraPDF against what the file claims (zero failed rules); the same text as
 * without a standard; and a clear standard_unavailable where a format cannot meet one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, PDFName } from 'pdf-lib';
import { ValidationError } from '../../src/errors';
import { loadTemplate, loadTemplateFile, renderTemplate } from '../../src/templates';
import { mergeParts } from '../../src/templates/merge';
import {
  PDF_STANDARDS,
  unavailableReason,
  type Attachment,
  type PdfMetadata,
  type PdfStandard,
} from '../../src/templates/standards';
import { fillableForm, root } from '../support/fixtures';
import { readAttachments, readPdf } from '../support/pdf';
import { checkFacturx, mustangMissing } from '../support/facturx';
import { validate, verapdfMissing, type Verdict } from '../support/verapdf';

const EXAMPLES = ['letter', 'invoice', 'postcard', 'letter-html', 'invoice-html', 'letter-docx', 'invoice-docx'];

/** The veraPDF profiles a file claiming the standard is checked against. */
function profilesOf(standard: PdfStandard): string[] {
  return standard.split('+').map((s) => `${s.replace(/b$/, 'B')} validation profile`);
}

/** Metadata with what XML escapes and what is not ASCII, as a request may give it. */
const METADATA: PdfMetadata = {
  title: 'Zoë & <Co> "Report"',
  author: 'Ann Ödegaard',
  subject: 'Quarterly figures',
  keywords: 'report, 2026, Zoë',
};

/** The Factur-X invoice of the example (scripts/make-facturx-example.js), as a request attaches it. */
const FACTURX: Attachment = {
  name: 'factur-x.xml',
  bytes: fs.readFileSync(path.join(root, 'examples/invoice/attachments/factur-x.xml')),
  mimeType: 'text/xml',
  relationship: 'Alternative',
};

async function render(folder: string, standard?: PdfStandard, metadata?: PdfMetadata, attachments?: Attachment[]) {
  const t = await loadTemplateFile(path.join(root, 'examples', folder));
  const values = JSON.parse(fs.readFileSync(path.join(root, 'examples', folder, 'sample.json'), 'utf8')) as Record<
    string,
    string
  >;
  return { kind: t.kind, bytes: await renderTemplate(t, values, { standard, metadata, attachments }) };
}

const withVerapdf = verapdfMissing ? describe.skip : describe;
if (verapdfMissing) process.stdout.write(`skipping the veraPDF checks: ${verapdfMissing}\n`);

withVerapdf('PDF standards, checked by veraPDF', () => {
  const made = new Map<string, { folder: string; standard: PdfStandard; bytes: Uint8Array }>();
  const plain = new Map<string, Uint8Array>();
  let verdicts: Record<string, Verdict[]>;

  beforeAll(async () => {
    for (const folder of EXAMPLES) {
      const { kind, bytes } = await render(folder);
      plain.set(folder, bytes);
      for (const standard of PDF_STANDARDS)
        if (!unavailableReason(kind, standard))
          made.set(`${folder} as ${standard}`, { folder, standard, bytes: (await render(folder, standard)).bytes });
    }
    // the request's metadata, in the Info dictionary and the XMP packet alike
    for (const [folder, standard] of [
      ['letter', 'PDF/A-2b+PDF/UA-1'],
      ['letter-html', 'PDF/A-2b'],
      ['letter-docx', 'PDF/A-3b'],
    ] as const)
      made.set(`${folder} with metadata as ${standard}`, {
        folder,
        standard,
        bytes: (await render(folder, standard, METADATA)).bytes,
      });
    // the invoice as Factur-X (PDF/A-3b with factur-x.xml), in every format that meets PDF/A-3b
    for (const folder of ['invoice', 'invoice-html', 'invoice-docx'])
      made.set(`${folder} with factur-x.xml as PDF/A-3b`, {
        folder,
        standard: 'PDF/A-3b',
        bytes: (await render(folder, 'PDF/A-3b', undefined, [FACTURX])).bytes,
      });
    // a merged document (append) of every format, as PDF/A-3b: the parts rendered plain, the whole claimed
    const merged = await mergeParts(
      ['letter', 'letter-html', 'letter-docx'].map((folder) => ({ pdf: plain.get(folder)!, title: folder })),
      { standard: 'PDF/A-3b', now: new Date() },
    );
    made.set('letter, letter-html and letter-docx merged as PDF/A-3b', {
      folder: 'merged',
      standard: 'PDF/A-3b',
      bytes: merged.pdf,
    });
    // PDF/UA is a tagged PDF whatever the template says
    const untagged = await loadTemplate(
      '<document name="Untagged" tagged="false"><body><h1>Notice</h1><p>Hello {{name}}.</p></body></document>',
    );
    made.set('untagged as PDF/UA-1', {
      folder: 'untagged',
      standard: 'PDF/UA-1',
      bytes: await renderTemplate(untagged, { name: 'Ann' }, { standard: 'PDF/UA-1' }),
    });
    plain.set('untagged', await renderTemplate(untagged, { name: 'Ann' }));
    verdicts = await validate(Object.fromEntries([...made].map(([name, m]) => [name, m.bytes])));
  }, 600_000);

  it('every example meets each standard its format offers, with no rule failed', () => {
    // XML: all five; HTML and Word: the two PDF/A levels
    expect([...made.keys()].filter((n) => n.startsWith('letter as '))).toHaveLength(PDF_STANDARDS.length);
    expect([...made.keys()].filter((n) => n.startsWith('letter-html as '))).toHaveLength(2);
    expect([...made.keys()].filter((n) => n.startsWith('letter-docx as '))).toHaveLength(2);
    for (const [name, { standard }] of made)
      expect({ name, verdicts: verdicts[name] }).toEqual({
        name,
        verdicts: profilesOf(standard).map((profile) => ({ profile, compliant: true, failed: [] })),
      });
  });

  it('prints the same text as without a standard, titled and in its language', async () => {
    for (const [name, { folder, bytes }] of made) {
      if (!plain.has(folder)) continue; // a merge: its text is its parts', checked in test/api/merge.test.ts
      const [claimed, unclaimed] = [await readPdf(bytes), await readPdf(plain.get(folder)!)];
      if (name.includes(' with metadata '))
        expect({ name, info: claimed.info }).toMatchObject({
          name,
          info: {
            Title: METADATA.title,
            Author: METADATA.author,
            Subject: METADATA.subject,
            Keywords: METADATA.keywords,
          },
        });
      expect({ name, text: claimed.text }).toEqual({ name, text: unclaimed.text });
      expect({ name, title: claimed.info.Title, lang: claimed.info.Language }).toEqual({
        name,
        title: expect.stringMatching(/\S/),
        lang: expect.stringMatching(/^[a-z]{2}/),
      });
    }
  });

  const withFacturx = mustangMissing ? it.skip : it;
  withFacturx(
    "is a Factur-X invoice with factur-x.xml attached: Mustang's validator passes the file, its XMP and the invoice's XML",
    async () => {
      for (const folder of ['invoice', 'invoice-html', 'invoice-docx']) {
        const { bytes } = made.get(`${folder} with factur-x.xml as PDF/A-3b`)!;
        const verdict = await checkFacturx(bytes);
        expect({ folder, valid: verdict.valid, report: verdict.valid ? '' : verdict.report }).toEqual({
          folder,
          valid: true,
          report: '',
        });
        // the attached file is the one given, byte for byte
        const attached = await readAttachments(bytes);
        expect(Buffer.from(attached['factur-x.xml']).equals(Buffer.from(FACTURX.bytes))).toBe(true);
      }
    },
    120_000,
  );

  it('claims nothing when no standard is asked for: no XMP packet, no output intent', async () => {
    for (const [folder, bytes] of plain) {
      if (folder.endsWith('-docx')) continue; // LibreOffice writes its own XMP packet always
      const doc = await PDFDocument.load(bytes, { updateMetadata: false });
      expect({ folder, intents: doc.catalog.has(PDFName.of('OutputIntents')) }).toEqual({ folder, intents: false });
      const metadata = doc.catalog.lookup(PDFName.of('Metadata'));
      const xmp = metadata ? Buffer.from((metadata as unknown as { contents: Uint8Array }).contents).toString() : '';
      expect({ folder, claims: /pdfaid|pdfuaid/.test(xmp) }).toEqual({ folder, claims: false });
    }
  });
});

describe('pdf_metadata without a standard', () => {
  it("is what every format's PDF says about itself, over the template's own", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meta-'));
    fs.writeFileSync(path.join(dir, 'form.pdf'), await fillableForm());
    const form = await loadTemplateFile(path.join(dir, 'form.pdf'));
    const rendered = {
      xml: (await render('invoice', undefined, METADATA)).bytes,
      html: (await render('invoice-html', undefined, METADATA)).bytes,
      docx: (await render('invoice-docx', undefined, METADATA)).bytes,
      pdf: await renderTemplate(form, { member_name: 'A', member_number: '1' }, { metadata: METADATA }),
    };
    for (const [format, bytes] of Object.entries(rendered))
      expect({ format, info: (await readPdf(bytes)).info }).toMatchObject({
        format,
        info: {
          Title: METADATA.title,
          Author: METADATA.author,
          Subject: METADATA.subject,
          Keywords: METADATA.keywords,
        },
      });
    // a property not given keeps the template's: the XML invoice's title
    const titled = await readPdf((await render('invoice', undefined, { author: 'Someone' })).bytes);
    expect(titled.info).toMatchObject({ Author: 'Someone', Title: expect.stringMatching(/\S/) });
    expect(titled.info.Title).not.toBe(METADATA.title);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('attachments', () => {
  const files: Attachment[] = [
    { name: 'data.json', bytes: Buffer.from('{"a":1}'), mimeType: 'application/json', relationship: 'Data' },
    { name: 'Zoë notes.txt', bytes: Buffer.from('plain text\n'), mimeType: 'text/plain', relationship: 'Supplement' },
  ];

  it('are embedded byte for byte in every format', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attach-'));
    fs.writeFileSync(path.join(dir, 'form.pdf'), await fillableForm());
    const form = await loadTemplateFile(path.join(dir, 'form.pdf'));
    const rendered = {
      xml: (await render('letter', undefined, undefined, files)).bytes,
      html: (await render('letter-html', undefined, undefined, files)).bytes,
      docx: (await render('letter-docx', undefined, undefined, files)).bytes,
      pdf: await renderTemplate(form, { member_name: 'A', member_number: '1' }, { attachments: files }),
    };
    for (const [format, bytes] of Object.entries(rendered)) {
      const attached = await readAttachments(bytes);
      expect({ format, names: Object.keys(attached).sort() }).toEqual({
        format,
        names: ['Zoë notes.txt', 'data.json'],
      });
      for (const f of files) expect(Buffer.from(attached[f.name]).equals(Buffer.from(f.bytes))).toBe(true);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('are refused with PDF/A-2b, which allows none: 422 not_allowed before anything is drawn', async () => {
    const t = await loadTemplateFile(path.join(root, 'examples/letter'));
    const err = await renderTemplate(t, {}, { standard: 'PDF/A-2b', attachments: files }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).details).toEqual([
      expect.objectContaining({ field: 'attachments', code: 'not_allowed' }),
    ]);
  });
});

describe('standards a format cannot meet', () => {
  async function refusal(t: Awaited<ReturnType<typeof loadTemplateFile>>, standard: PdfStandard, values = {}) {
    const err = await renderTemplate(t, values, { standard }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    return { code: (err as ValidationError).code, fields: (err as ValidationError).details.map((d) => d.code) };
  }

  it('a fillable PDF meets none, HTML and Word no PDF/UA: 422 standard_unavailable before anything is drawn', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'std-'));
    fs.writeFileSync(path.join(dir, 'form.pdf'), await fillableForm());
    const form = await loadTemplateFile(path.join(dir, 'form.pdf'));
    for (const standard of PDF_STANDARDS)
      expect(await refusal(form, standard, { member_name: 'A', member_number: '1' })).toEqual({
        code: 'standard_unavailable',
        fields: ['standard_unavailable'],
      });
    for (const folder of ['letter-html', 'letter-docx']) {
      const t = await loadTemplateFile(path.join(root, 'examples', folder));
      for (const standard of PDF_STANDARDS.filter((s) => s.includes('UA')))
        expect(await refusal(t, standard)).toEqual({ code: 'standard_unavailable', fields: ['standard_unavailable'] });
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
