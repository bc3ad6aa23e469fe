/**
 * PDF standards a document can be asked to meet (`pdf_standard` on a generate request): PDF/A-2b
 * and PDF/A-3b (ISO 19005, archiving: everything needed to show it is inside, colours are
 * defined), PDF/UA-1 (ISO 14289, accessibility: tagged, titled, in a language), or one PDF/A level
 * and PDF/UA-1 together. veraPDF, the PDF Association's validator, checks every one in the tests.
 *
 * What each format can meet is in `unavailableReason`; docs/templates.md ("PDF standards") says why.
 */
import { randomBytes } from 'node:crypto';
import { PDFDocument, PDFHexString, PDFName, PDFString, type AFRelationship } from 'pdf-lib';
import type { ErrorDetail } from '../errors';
import { ValidationError } from '../errors';
import { hasInvisible } from '../guards';

export const PDF_STANDARDS = ['PDF/A-2b', 'PDF/A-3b', 'PDF/UA-1', 'PDF/A-2b+PDF/UA-1', 'PDF/A-3b+PDF/UA-1'] as const;
export type PdfStandard = (typeof PDF_STANDARDS)[number];

/** What a standard asks of the PDF: a PDF/A part (2 or 3, conformance B), PDF/UA-1, or both. */
export interface Conformance {
  pdfa?: 2 | 3;
  ua: boolean;
}

export function conformanceOf(standard: PdfStandard): Conformance {
  return {
    pdfa: standard.includes('PDF/A-2b') ? 2 : standard.includes('PDF/A-3b') ? 3 : undefined,
    ua: standard.includes('PDF/UA-1'),
  };
}

/** `pdf_standard` as given: a standard, or a 422 detail naming the ones there are. */
export function parseStandard(value: unknown, field: string, details: ErrorDetail[]): PdfStandard | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && (PDF_STANDARDS as readonly string[]).includes(value)) return value as PdfStandard;
  details.push({ field, message: `must be one of ${PDF_STANDARDS.join(', ')}`, code: 'enum' });
  return undefined;
}

/**
 * Why a template of this format cannot be made to meet the standard, or undefined when it can.
 * A fillable PDF is the author's own file, filled in place: what it holds (its fonts, colours,
 * structure) is whatever the author's tool wrote, so no standard is claimed for it. Chromium
 * and LibreOffice tag what they print but leave some of it unmarked (veraPDF counts it), so HTML
 * and Word meet the PDF/A levels only.
 */
export function unavailableReason(format: string, standard: PdfStandard): string | undefined {
  const c = conformanceOf(standard);
  if (format === 'pdf')
    return 'a fillable PDF template is the uploaded file filled in place; it cannot be made to meet a standard it was not written to';
  if (format === 'html' && c.ua)
    return 'Chromium leaves page content neither tagged nor marked as an artifact, which PDF/UA-1 forbids; HTML templates meet PDF/A-2b and PDF/A-3b';
  if (format === 'docx' && c.ua)
    return "LibreOffice's PDF/UA export leaves some drawings (a paragraph's border in a footer) neither tagged nor marked as an artifact, which PDF/UA-1 forbids; Word templates meet PDF/A-2b and PDF/A-3b";
  return undefined;
}

/** `422 standard_unavailable`: the template's format cannot meet the standard, for the reason given. */
export function unavailableError(reason: string, field = 'pdf_standard'): ValidationError {
  return new ValidationError(
    `This template cannot make a document of that standard: ${reason}. Leave out ${field}, or use an XML template, which meets them all (docs/templates.md, "PDF standards").`,
    [{ field, message: reason, code: 'standard_unavailable' }],
    'standard_unavailable',
  );
}

/** Throws `422 standard_unavailable` for a template format that cannot meet the standard. */
export function checkAvailable(format: string, standard: PdfStandard | undefined): void {
  const reason = standard && unavailableReason(format, standard);
  if (reason) throw unavailableError(reason);
}

/** What a document says about itself (its Info dictionary), as a generate request's `pdf_metadata` sets it. */
export interface PdfMetadata {
  title?: string;
  author?: string;
  subject?: string;
  keywords?: string;
}

export const METADATA_KEYS = ['title', 'author', 'subject', 'keywords'] as const;
export const MAX_METADATA = 1000;

/** `pdf_metadata` as given: up to four texts, or 422 details for what is wrong. Empty texts are left out. */
export function parseMetadata(value: unknown, field: string, details: ErrorDetail[]): PdfMetadata | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    details.push({ field, message: `must be an object with any of ${METADATA_KEYS.join(', ')}`, code: 'type' });
    return undefined;
  }
  const out: PdfMetadata = {};
  for (const [k, v] of Object.entries(value)) {
    if (!(METADATA_KEYS as readonly string[]).includes(k))
      details.push({
        field: `${field}.${k}`,
        message: `is not one of ${METADATA_KEYS.join(', ')}`,
        code: 'unknown_field',
      });
    else if (typeof v !== 'string' || v.length > MAX_METADATA)
      details.push({
        field: `${field}.${k}`,
        message: `must be text of up to ${MAX_METADATA} characters`,
        code: typeof v === 'string' ? 'invalid' : 'type',
      });
    else if (v.trim()) out[k as keyof PdfMetadata] = v.trim();
  }
  return out;
}

/** A file embedded in the PDF (`attachments` on a generate request), e.g. an e-invoice's XML. */
export interface Attachment {
  name: string;
  bytes: Uint8Array;
  mimeType: string;
  description?: string;
  /** How it relates to the document (ISO 32000-2 AFRelationship): PDF/A-3 asks for one. */
  relationship: (typeof RELATIONSHIPS)[number];
}

export const RELATIONSHIPS = ['Source', 'Data', 'Alternative', 'Supplement', 'Unspecified'] as const;
export const MAX_ATTACHMENTS = 20;
/** The e-invoice a Factur-X (ZUGFeRD 2) PDF carries, under this name (Factur-X 1.0, 6.2.2). */
export const FACTURX_NAME = 'factur-x.xml';

const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;
/**
 * Bytes given in base64 (RFC 4648, padded), or undefined when the text is not that: decoded, and
 * kept only if encoding the bytes again gives the same text. No pattern is matched against it (a
 * pattern over megabytes of text overflowed the stack); the body limit bounds its size.
 */
export function decodeBase64(text: unknown): Uint8Array | undefined {
  if (typeof text !== 'string' || text.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length) : undefined;
}

/** `attachments` as given: files to embed, or 422 details for each one that is wrong. */
export function parseAttachments(value: unknown, field: string, details: ErrorDetail[]): Attachment[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.length > MAX_ATTACHMENTS) {
    details.push({ field, message: `must be a list of up to ${MAX_ATTACHMENTS} files`, code: 'type' });
    return undefined;
  }
  const out: Attachment[] = [];
  const names = new Set<string>();
  value.forEach((a: unknown, i) => {
    const at = `${field}[${i}]`;
    if (typeof a !== 'object' || a === null || Array.isArray(a)) {
      details.push({ field: at, message: 'must be an object with name and content (base64)', code: 'type' });
      return;
    }
    const { name, content, mime_type, description, relationship, ...rest } = a as Record<string, unknown>;
    const before = details.length;
    for (const k of Object.keys(rest))
      details.push({ field: `${at}.${k}`, message: 'is not a field of an attachment', code: 'unknown_field' });
    // a file name, not a path: what a viewer shows and saves it as
    if (
      typeof name !== 'string' ||
      !/^[^/\\\x00-\x1f]{1,255}$/.test(name) ||
      name.trim() !== name ||
      name === '.' ||
      name === '..'
    )
      details.push({
        field: `${at}.name`,
        message: 'must be a file name of 1 to 255 characters, without / or \\',
        code: 'invalid',
      });
    else if (hasInvisible(name))
      details.push({
        field: `${at}.name`,
        message:
          'must not hold control or format characters (such as U+202E, which shows invoice\u202Efdp.exe as invoiceexe.pdf)',
        code: 'invalid_character',
      });
    else if (names.has(name.toLowerCase()))
      details.push({ field: `${at}.name`, message: 'is the name of another attachment', code: 'duplicate' });
    const bytes = decodeBase64(content);
    if (!bytes)
      details.push({ field: `${at}.content`, message: "must be the file's bytes in base64", code: 'invalid' });
    if (mime_type !== undefined && (typeof mime_type !== 'string' || !MIME.test(mime_type)))
      details.push({ field: `${at}.mime_type`, message: 'must be a media type, e.g. text/xml', code: 'invalid' });
    if (description !== undefined && (typeof description !== 'string' || description.length > MAX_METADATA))
      details.push({
        field: `${at}.description`,
        message: `must be text of up to ${MAX_METADATA} characters`,
        code: typeof description === 'string' ? 'invalid' : 'type',
      });
    if (relationship !== undefined && !(RELATIONSHIPS as readonly unknown[]).includes(relationship))
      details.push({
        field: `${at}.relationship`,
        message: `must be one of ${RELATIONSHIPS.join(', ')}`,
        code: 'enum',
      });
    const file = name as string;
    if (details.length === before && file.toLowerCase() === FACTURX_NAME && !facturxLevel(bytes!))
      details.push({
        field: `${at}.content`,
        message:
          'is not a Factur-X invoice: its GuidelineSpecifiedDocumentContextParameter names none of the Factur-X profiles (MINIMUM, BASIC WL, BASIC, EN 16931, EXTENDED)',
        code: 'invalid',
      });
    if (details.length > before) return;
    names.add(file.toLowerCase());
    const facturx = file.toLowerCase() === FACTURX_NAME;
    out.push({
      name: file,
      bytes: bytes!,
      // Factur-X names text/xml whatever a client's guess (application/xml) was
      mimeType: facturx
        ? 'text/xml'
        : ((mime_type as string | undefined) ?? (/\.xml$/i.test(file) ? 'text/xml' : 'application/octet-stream')),
      description: (description as string | undefined) || undefined,
      // Factur-X's own choice for an invoice whose XML says what the PDF shows
      relationship:
        (relationship as Attachment['relationship'] | undefined) ?? (facturx ? 'Alternative' : 'Unspecified'),
    });
  });
  return out;
}

/** Why these attachments cannot go into a PDF of this standard, or undefined when they can. */
export function attachmentsUnavailable(
  standard: PdfStandard | undefined,
  attachments: Attachment[],
): string | undefined {
  if (attachments.length && standard && conformanceOf(standard).pdfa === 2)
    return 'PDF/A-2b allows no attached files but PDF/A ones; ask for PDF/A-3b, which allows any';
  return undefined;
}

/** Embeds the files, each listed in the catalog's /AF (PDF/A-3) with its relationship and dates. */
function attach(doc: PDFDocument, attachments: Attachment[], now: Date): Promise<void> {
  return Promise.all(
    attachments.map((a) =>
      doc.attach(a.bytes, a.name, {
        mimeType: a.mimeType,
        description: a.description ?? a.name,
        creationDate: now,
        modificationDate: now,
        afRelationship: a.relationship as AFRelationship,
      }),
    ),
  ).then(() => undefined);
}

/**
 * What is done to a PDF after its content is drawn or printed: the files attached, the metadata
 * given, the standard claimed (with Factur-X's XMP properties when a PDF/A-3 carries factur-x.xml).
 */
export async function finishDocument(
  doc: PDFDocument,
  o: { standard?: Conformance; props?: DocumentProperties; attachments?: Attachment[]; now: Date },
): Promise<void> {
  if (o.attachments?.length) await attach(doc, o.attachments, o.now);
  const invoice =
    o.standard?.pdfa === 3 ? o.attachments?.find((a) => a.name.toLowerCase() === FACTURX_NAME) : undefined;
  const level = invoice && facturxLevel(invoice.bytes);
  if (o.standard) claimStandard(doc, o.standard, o.props ?? {}, level ? { level } : undefined);
  else if (o.props) setProperties(doc, o.props);
}

/**
 * Factur-X's conformance level, from the guideline the invoice's XML names (its
 * GuidelineSpecifiedDocumentContextParameter), as the XMP packet says it; undefined when it names
 * none Factur-X knows.
 */
function facturxLevel(xml: Uint8Array): string | undefined {
  const text = Buffer.from(xml).toString('utf8');
  const guideline = /GuidelineSpecifiedDocumentContextParameter>\s*<(?:\w+:)?ID>([^<]+)</.exec(text)?.[1].trim();
  const levels: Record<string, string> = {
    'urn:factur-x.eu:1p0:minimum': 'MINIMUM',
    'urn:factur-x.eu:1p0:basicwl': 'BASIC WL',
    'urn:cen.eu:en16931:2017#compliant#urn:factur-x.eu:1p0:basic': 'BASIC',
    'urn:cen.eu:en16931:2017': 'EN 16931',
    'urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:extended': 'EXTENDED',
  };
  return guideline === undefined ? undefined : levels[guideline];
}

/** What the document says about itself: the Info dictionary and the XMP metadata, the same in both. */
export interface DocumentProperties extends PdfMetadata {
  /** The document's language (BCP 47): the catalog's /Lang and the XMP's dc:language. */
  lang?: string;
}

/** Writes what is given into the Info dictionary (and the language into the catalog). */
function setProperties(doc: PDFDocument, props: DocumentProperties, showTitle = false): void {
  if (props.title !== undefined) doc.setTitle(props.title, { showInWindowTitleBar: showTitle });
  if (props.author !== undefined) doc.setAuthor(props.author);
  if (props.subject !== undefined) doc.setSubject(props.subject);
  if (props.keywords !== undefined) doc.setKeywords([props.keywords]);
  if (props.lang !== undefined) doc.setLanguage(props.lang);
}

/**
 * Makes a drawn document claim the standard: its Info dictionary and an XMP metadata stream that
 * say the same (title, author, subject, keywords, dates, the PDF/A and PDF/UA identification), a
 * file identifier, and for PDF/A an output intent (sRGB, so the document's DeviceRGB colours are
 * defined). What the standard asks of the content (embedded fonts, tags) is the drawing's part.
 */
function claimStandard(doc: PDFDocument, c: Conformance, props: DocumentProperties, facturx?: { level: string }): void {
  setProperties(doc, props, c.ua);
  if (c.ua && !doc.getTitle()) throw new Error('a PDF/UA document needs a title');
  const ctx = doc.context;
  const xmp = xmpPacket(doc, c, props.lang, facturx);
  const metadata = ctx.stream(Buffer.from(xmp, 'utf8'), { Type: 'Metadata', Subtype: 'XML' });
  doc.catalog.set(PDFName.of('Metadata'), ctx.register(metadata));
  if (c.pdfa) {
    const profile = ctx.register(ctx.flateStream(srgbProfile(), { N: 3 }));
    doc.catalog.set(
      PDFName.of('OutputIntents'),
      ctx.obj([
        ctx.obj({
          Type: 'OutputIntent',
          S: 'GTS_PDFA1',
          OutputConditionIdentifier: PDFString.of('sRGB IEC61966-2.1'),
          RegistryName: PDFString.of('http://www.color.org'),
          Info: PDFString.of('sRGB IEC61966-2.1'),
          DestOutputProfile: profile,
        }),
      ]),
    );
  }
  // a file identifier (ISO 32000 14.4): PDF/A requires one; both halves alike in a new file
  const id = PDFHexString.of(randomBytes(16).toString('hex'));
  ctx.trailerInfo.ID = ctx.obj([id, id]);
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"]/g, (ch) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[ch]!);
}

/** A date as XMP writes it, to the second, in UTC: the same instant as the Info dictionary's D:…Z (pdf-lib). */
function xmpDate(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The XMP packet (ISO 16684-1) whose properties match the Info dictionary's, as PDF/A 6.6.2.3 requires. */
function xmpPacket(
  doc: PDFDocument,
  c: Conformance,
  lang: string | undefined,
  facturx: { level: string } | undefined,
): string {
  const title = doc.getTitle();
  const author = doc.getAuthor();
  const subject = doc.getSubject();
  const keywords = doc.getKeywords();
  const creator = doc.getCreator();
  const producer = doc.getProducer();
  const created = doc.getCreationDate();
  const modified = doc.getModificationDate();
  const alt = (s: string) => `<rdf:Alt><rdf:li xml:lang="x-default">${escapeXml(s)}</rdf:li></rdf:Alt>`;
  const lines = [
    '<dc:format>application/pdf</dc:format>',
    title !== undefined ? `<dc:title>${alt(title)}</dc:title>` : '',
    author !== undefined ? `<dc:creator><rdf:Seq><rdf:li>${escapeXml(author)}</rdf:li></rdf:Seq></dc:creator>` : '',
    subject !== undefined ? `<dc:description>${alt(subject)}</dc:description>` : '',
    lang ? `<dc:language><rdf:Bag><rdf:li>${escapeXml(lang)}</rdf:li></rdf:Bag></dc:language>` : '',
    keywords !== undefined ? `<pdf:Keywords>${escapeXml(keywords)}</pdf:Keywords>` : '',
    producer !== undefined ? `<pdf:Producer>${escapeXml(producer)}</pdf:Producer>` : '',
    creator !== undefined ? `<xmp:CreatorTool>${escapeXml(creator)}</xmp:CreatorTool>` : '',
    created ? `<xmp:CreateDate>${xmpDate(created)}</xmp:CreateDate>` : '',
    modified ? `<xmp:ModifyDate>${xmpDate(modified)}</xmp:ModifyDate>` : '',
    modified ? `<xmp:MetadataDate>${xmpDate(modified)}</xmp:MetadataDate>` : '',
    c.pdfa ? `<pdfaid:part>${c.pdfa}</pdfaid:part><pdfaid:conformance>B</pdfaid:conformance>` : '',
    c.ua ? '<pdfuaid:part>1</pdfuaid:part>' : '',
  ].filter(Boolean);
  // PDF/A allows only the schemas it predefines unless the packet describes the others (6.6.2.3.2)
  const extensions = [...(c.pdfa && c.ua ? [PDFUA_SCHEMA] : []), ...(facturx ? [FACTURX_SCHEMA] : [])];
  // Factur-X 1.0, 6.2.2: the invoice's file, its type, the schema's version and the profile
  const invoice = facturx
    ? [
        `<rdf:Description rdf:about="" xmlns:fx="${FACTURX_SCHEMA.namespace}">`,
        '<fx:DocumentType>INVOICE</fx:DocumentType>',
        `<fx:DocumentFileName>${FACTURX_NAME}</fx:DocumentFileName>`,
        '<fx:Version>1.0</fx:Version>',
        `<fx:ConformanceLevel>${escapeXml(facturx.level)}</fx:ConformanceLevel>`,
        '</rdf:Description>',
      ]
    : [];
  return [
    '<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>',
    '<x:xmpmeta xmlns:x="adobe:ns:meta/">',
    '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">',
    '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:pdf="http://ns.adobe.com/pdf/1.3/" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/" xmlns:pdfuaid="http://www.aiim.org/pdfua/ns/id/">',
    ...lines,
    '</rdf:Description>',
    ...invoice,
    ...(extensions.length ? [extensionSchemas(extensions)] : []),
    '</rdf:RDF>',
    '</x:xmpmeta>',
    '<?xpacket end="w"?>',
  ].join('\n');
}

/** An XMP schema a PDF/A file uses beyond the predefined ones, described in the packet itself. */
interface ExtensionSchema {
  name: string;
  namespace: string;
  prefix: string;
  properties: { name: string; valueType: string; description: string; category?: 'internal' | 'external' }[];
}

const PDFUA_SCHEMA: ExtensionSchema = {
  name: 'PDF/UA Universal Accessibility Schema',
  namespace: 'http://www.aiim.org/pdfua/ns/id/',
  prefix: 'pdfuaid',
  properties: [{ name: 'part', valueType: 'Integer', description: 'Part of ISO 14289 the document conforms to' }],
};

const FACTURX_SCHEMA: ExtensionSchema = {
  name: 'Factur-X PDFA Extension Schema',
  namespace: 'urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#',
  prefix: 'fx',
  properties: [
    {
      name: 'DocumentFileName',
      valueType: 'Text',
      category: 'external',
      description: 'The name of the embedded XML invoice file',
    },
    { name: 'DocumentType', valueType: 'Text', category: 'external', description: 'INVOICE' },
    { name: 'Version', valueType: 'Text', category: 'external', description: 'The version of the Factur-X XML schema' },
    {
      name: 'ConformanceLevel',
      valueType: 'Text',
      category: 'external',
      description: 'The conformance level of the embedded invoice',
    },
  ],
};

function extensionSchemas(schemas: ExtensionSchema[]): string {
  const schema = (x: ExtensionSchema) =>
    [
      '<rdf:li rdf:parseType="Resource">',
      `<pdfaSchema:schema>${escapeXml(x.name)}</pdfaSchema:schema>`,
      `<pdfaSchema:namespaceURI>${x.namespace}</pdfaSchema:namespaceURI>`,
      `<pdfaSchema:prefix>${x.prefix}</pdfaSchema:prefix>`,
      '<pdfaSchema:property><rdf:Seq>',
      ...x.properties.map(
        (p) =>
          `<rdf:li rdf:parseType="Resource"><pdfaProperty:name>${p.name}</pdfaProperty:name><pdfaProperty:valueType>${p.valueType}</pdfaProperty:valueType><pdfaProperty:category>${p.category ?? 'internal'}</pdfaProperty:category><pdfaProperty:description>${escapeXml(p.description)}</pdfaProperty:description></rdf:li>`,
      ),
      '</rdf:Seq></pdfaSchema:property>',
      '</rdf:li>',
    ].join('\n');
  return [
    '<rdf:Description rdf:about="" xmlns:pdfaExtension="http://www.aiim.org/pdfa/ns/extension/" xmlns:pdfaSchema="http://www.aiim.org/pdfa/ns/schema#" xmlns:pdfaProperty="http://www.aiim.org/pdfa/ns/property#">',
    '<pdfaExtension:schemas><rdf:Bag>',
    ...schemas.map(schema),
    '</rdf:Bag></pdfaExtension:schemas>',
    '</rdf:Description>',
  ].join('\n');
}

let srgb: Uint8Array | undefined;

/**
 * An ICC v2 display profile of sRGB (IEC 61966-2-1): the D50-adapted primaries and the sRGB tone
 * curve as a 1024-entry table, written here rather than shipped as a file. Made once per process.
 */
function srgbProfile(): Uint8Array {
  if (srgb) return srgb;
  const tags: [string, Buffer][] = [];
  const sig = (s: string) => Buffer.from(s, 'latin1');
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n >>> 0);
    return b;
  };
  const s15 = (x: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(Math.round(x * 65536));
    return b;
  };
  const xyz = (x: number, y: number, z: number) => Buffer.concat([sig('XYZ '), u32(0), s15(x), s15(y), s15(z)]);
  const description = 'sRGB IEC61966-2.1';
  // textDescriptionType: ASCII, then empty Unicode and ScriptCode descriptions (67 bytes of the latter)
  tags.push([
    'desc',
    Buffer.concat([
      sig('desc'),
      u32(0),
      u32(description.length + 1),
      sig(`${description}\0`),
      u32(0),
      u32(0),
      Buffer.alloc(2 + 1 + 67),
    ]),
  ]);
  tags.push(['cprt', Buffer.concat([sig('text'), u32(0), sig('No copyright, use freely\0')])]);
  tags.push(['wtpt', xyz(0.9642, 1, 0.8249)]);
  tags.push(['rXYZ', xyz(0.4360747, 0.2225045, 0.0139322)]);
  tags.push(['gXYZ', xyz(0.3850649, 0.7168786, 0.0971045)]);
  tags.push(['bXYZ', xyz(0.1430804, 0.0606169, 0.7141733)]);
  const n = 1024;
  const curve = Buffer.alloc(12 + 2 * n);
  sig('curv').copy(curve, 0);
  curve.writeUInt32BE(n, 8);
  for (let i = 0; i < n; i++) {
    const v = i / (n - 1);
    const linear = v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    curve.writeUInt16BE(Math.round(linear * 65535), 12 + 2 * i);
  }
  for (const t of ['rTRC', 'gTRC', 'bTRC']) tags.push([t, curve]);

  const tableSize = 4 + 12 * tags.length;
  let offset = 128 + tableSize;
  const table: Buffer[] = [u32(tags.length)];
  const data: Buffer[] = [];
  const placed = new Map<Buffer, number>();
  for (const [name, body] of tags) {
    let at = placed.get(body);
    if (at === undefined) {
      at = offset;
      placed.set(body, at);
      const padded = Buffer.concat([body, Buffer.alloc((4 - (body.length % 4)) % 4)]);
      data.push(padded);
      offset += padded.length;
    }
    table.push(sig(name), u32(at), u32(body.length));
  }
  const header = Buffer.alloc(128);
  header.writeUInt32BE(offset, 0);
  header.writeUInt32BE(0x02100000, 8); // version 2.1
  sig('mntr').copy(header, 12);
  sig('RGB ').copy(header, 16);
  sig('XYZ ').copy(header, 20);
  // creation date: fixed, so the profile's bytes are the same in every document
  [2026, 1, 1, 0, 0, 0].forEach((v, i) => header.writeUInt16BE(v, 24 + 2 * i));
  sig('acsp').copy(header, 36);
  header.writeUInt32BE(0, 64); // perceptual
  s15(0.9642).copy(header, 68);
  s15(1).copy(header, 72);
  s15(0.8249).copy(header, 76);
  srgb = new Uint8Array(Buffer.concat([header, ...table, ...data]));
  return srgb;
}
