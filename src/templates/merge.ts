/**
 * Merging: the documents a generate request renders (its template, then each of `append`: more
 * templates, or PDFs uploaded with it) made into one PDF, in order: their pages, one outline with an
 * entry per part at its first page, and then what the request asks of the whole (metadata,
 * attachments, a PDF/A level). XML parts are numbered across the whole (Documents renders them
 * again with their place: RenderOptions.numbering).
 */
import { PDFDocument, PDFHexString, PDFName, PDFRef, PDFString } from 'pdf-lib';
import { ValidationError } from '../errors';
import { RenderLimitError } from './limits';
import { checkPageContent, checkPageTree, openUntrusted, stripActions } from './pdfsafe';
import { release } from './release';
import { conformanceOf, finishDocument, type Attachment, type PdfMetadata, type PdfStandard } from './standards';

export interface Part {
  pdf: Uint8Array;
  /** Its entry in the outline. */
  title: string;
  /** Where a PDF that cannot be read came from (`append[2].pdf`); a rendered part is always readable. */
  field?: string;
}

export interface MergeOptions {
  standard?: PdfStandard;
  metadata?: PdfMetadata;
  attachments?: Attachment[];
  now: Date;
}

/** A PDF a client uploaded, read with the same guards as a fillable form's (pdfsafe.ts). */
async function readUploadedPdf(bytes: Uint8Array, field: string): Promise<PDFDocument> {
  const refuse = (message: string) =>
    new ValidationError(`${field} is not a PDF that can be merged: ${message}.`, [{ field, message, code: 'invalid' }]);
  const doc = await openUntrusted(bytes, ({ encrypted, reason }) =>
    refuse(encrypted ? 'it is encrypted; send an unencrypted copy' : `it cannot be read (${reason})`),
  );
  try {
    checkPageTree(doc);
    if (doc.getPageCount() === 0) throw refuse('it has no pages');
    checkPageContent(doc);
  } catch (err) {
    // over the page limit stays render_limit_exceeded; anything else about its structure is the file's
    if (err instanceof RenderLimitError || err instanceof ValidationError) throw err;
    throw refuse(`its page tree cannot be read (${err instanceof Error ? err.message : String(err)})`);
  }
  return doc;
}

/** A part as pdf-lib opens it: one uploaded (it has a `field`) with the guards above, one we rendered as it is. */
export async function openPart(pdf: Uint8Array, field?: string): Promise<PDFDocument> {
  return field ? readUploadedPdf(pdf, field) : PDFDocument.load(pdf, { updateMetadata: false });
}

/** The parts as one PDF, and its page count. */
export async function mergeParts(parts: Part[], options: MergeOptions): Promise<{ pdf: Uint8Array; pages: number }> {
  const doc = await PDFDocument.create();
  try {
    const entries: { title: string; page: PDFRef }[] = [];
    let first: PDFDocument | undefined;
    for (const part of parts) {
      const source = await openPart(part.pdf, part.field);
      first ??= source;
      const pages = await doc.copyPages(source, source.getPageIndices());
      for (const page of pages) doc.addPage(page);
      entries.push({ title: part.title, page: pages[0].ref });
      if (source !== first) release(source);
    }
    // what an uploaded PDF could run in a viewer (JavaScript, launch actions) does not come along
    stripActions(doc);
    writeOutline(doc, entries);
    // the whole says what its first part said of itself, unless the request says otherwise
    doc.setTitle(first!.getTitle() ?? parts[0].title, { showInWindowTitleBar: true });
    for (const [get, set] of [
      [() => first!.getAuthor(), (v: string) => doc.setAuthor(v)],
      [() => first!.getSubject(), (v: string) => doc.setSubject(v)],
      [() => first!.getKeywords(), (v: string) => doc.setKeywords([v])],
    ] as const) {
      const v = get();
      if (v) set(v);
    }
    const lang = first!.catalog.lookupMaybe(PDFName.of('Lang'), PDFString, PDFHexString)?.decodeText();
    release(first!);
    doc.setCreator('Paperlink');
    doc.setProducer('Paperlink (pdf-lib)');
    doc.setCreationDate(options.now);
    doc.setModificationDate(options.now);
    await finishDocument(doc, {
      standard: options.standard ? conformanceOf(options.standard) : undefined,
      props: { ...options.metadata, ...(lang ? { lang } : {}) },
      attachments: options.attachments,
      now: options.now,
    });
    return { pdf: await doc.save({ objectsPerTick: Infinity }), pages: doc.getPageCount() };
  } finally {
    release(doc);
  }
}

/** The document outline (bookmarks, ISO 32000 12.3.3): one entry per part, opening at its first page. */
function writeOutline(doc: PDFDocument, entries: { title: string; page: PDFRef }[]): void {
  const ctx = doc.context;
  const root = ctx.nextRef();
  const refs = entries.map(() => ctx.nextRef());
  entries.forEach((e, i) =>
    ctx.assign(
      refs[i],
      ctx.obj({
        Title: PDFHexString.fromText(e.title),
        Parent: root,
        ...(i > 0 ? { Prev: refs[i - 1] } : {}),
        ...(i < refs.length - 1 ? { Next: refs[i + 1] } : {}),
        Dest: [e.page, 'Fit'],
      }),
    ),
  );
  ctx.assign(root, ctx.obj({ Type: 'Outlines', First: refs[0], Last: refs[refs.length - 1], Count: refs.length }));
  doc.catalog.set(PDFName.of('Outlines'), root);
  doc.catalog.set(PDFName.of('PageMode'), PDFName.of('UseOutlines'));
}
