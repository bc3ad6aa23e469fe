/**
 * What a fillable PDF template may not bring into the documents made from it, and the bounds on
 * reading one:
 * - Actions that reach outside the document or run code are stripped from every filled document:
 *   JavaScript (document-level, in fields and annotations), launching programs (Launch), opening
 *   other files (GoToR, GoToE, ImportData), sending the form somewhere (SubmitForm), media and 3D
 *   (Rendition, Movie, Sound, RichMediaExecute), additional actions (/AA), the open action, embedded
 *   files and XFA forms. A link to an http, https or mailto address stays: it is for the reader to
 *   click; a URI action to any other scheme (file:, smb:, javascript:) is stripped.
 * - A compressed stream may unpack to MAX_DECODED bytes at most (a 1 MB file can hold gigabytes),
 *   and what one page draws to MAX_PAGE_CONTENT (checkPageContent).
 * - The page tree must be a tree: one that contains itself, or names a page twice, is refused, and
 *   its pages are counted against RENDER_MAX_PAGES before anything walks it.
 */
import {
  decodePDFRawStream,
  EncryptedPDFError,
  PDFArray,
  PDFDict,
  PDFDocument,
  PDFHexString,
  PDFName,
  PDFNumber,
  PDFRawStream,
  PDFRef,
  PDFStream,
  PDFString,
  type PDFObject,
} from 'pdf-lib';
import { PaperlinkError, TemplateError } from '../errors';
import { checkLimit, RenderLimitError } from './limits';
import { inflateAtMost } from './zlib';

/** The most one stream of a PDF template may unpack to. */
export const MAX_DECODED = 100 * 1024 * 1024;

// pdf-lib (pinned to an exact version, as zlib.ts explains) grows a decoded stream's buffer here
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a file of pdf-lib's, not its entry
const decodeStream = require('pdf-lib/cjs/core/streams/DecodeStream') as {
  default: { prototype: { ensureBuffer: (this: unknown, requested: number) => Uint8Array } };
};
const DecodeStream = decodeStream.default;
const ensureBuffer = DecodeStream.prototype.ensureBuffer;
/** Streams stopped at MAX_DECODED so far in this thread (pdf-lib skips an object that fails to parse). */
let stopped = 0;
const overDecoded = () =>
  new RenderLimitError(
    'decoded_stream_bytes',
    `The PDF holds a compressed stream that unpacks to more than ${MAX_DECODED / 1024 / 1024} MB. Save the form again from the program that made it (or "Reduce file size").`,
  );
DecodeStream.prototype.ensureBuffer = function (this: unknown, requested: number) {
  if (requested > MAX_DECODED) {
    stopped++;
    throw overDecoded();
  }
  return ensureBuffer.call(this, requested);
};

/**
 * Opens a PDF from outside (a fillable form, a PDF to merge) with its decoding bounded. One that is
 * encrypted or cannot be read is refused through `refuse`, which says it in the caller's words;
 * our own errors (a stream over MAX_DECODED) pass as they are.
 */
export async function openUntrusted(
  bytes: Uint8Array,
  refuse: (why: { encrypted: boolean; reason: string; cause: unknown }) => Error,
): Promise<PDFDocument> {
  try {
    return await boundedDecoding(() => PDFDocument.load(bytes, { updateMetadata: false }));
  } catch (err) {
    if (err instanceof PaperlinkError) throw err;
    throw refuse({
      encrypted: err instanceof EncryptedPDFError,
      reason: err instanceof Error ? err.message : String(err),
      cause: err,
    });
  }
}

/**
 * Runs `read` (pdf-lib opening or filling a PDF) and refuses the PDF when a stream was stopped at
 * MAX_DECODED meanwhile, even where pdf-lib skipped the object instead of failing.
 */
export async function boundedDecoding<T>(read: () => Promise<T>): Promise<T> {
  const before = stopped;
  const result = await read();
  if (stopped !== before) throw overDecoded();
  return result;
}

const FORBIDDEN_ACTIONS = new Set([
  'JavaScript',
  'Launch',
  'GoToR',
  'GoToE',
  'ImportData',
  'SubmitForm',
  'Rendition',
  'Movie',
  'Sound',
  'RichMediaExecute',
  'GoTo3DView',
  'SetOCGState',
  'Trans',
]);
const LINKABLE = /^(https?:|mailto:)/i;

const name = (n: string) => PDFName.of(n);

/** Whether an action must go. */
function forbidden(action: PDFDict): boolean {
  const type = action.lookup(name('S'));
  const s = type instanceof PDFName ? type.decodeText() : '';
  if (FORBIDDEN_ACTIONS.has(s)) return true;
  if (s === 'URI') {
    const uri = action.lookup(name('URI'));
    const text = uri instanceof PDFString || uri instanceof PDFHexString ? uri.decodeText() : '';
    return !LINKABLE.test(text.trim());
  }
  return false;
}

/** Removes every forbidden action, additional action, the open action, embedded files, scripts and XFA. */
export function stripActions(doc: PDFDocument): void {
  const { context } = doc;
  const catalog = doc.catalog;
  catalog.delete(name('OpenAction'));
  catalog.delete(name('AA'));
  const names = catalog.lookup(name('Names'));
  if (names instanceof PDFDict) {
    names.delete(name('JavaScript'));
    names.delete(name('EmbeddedFiles'));
  }
  const acroForm = catalog.lookup(name('AcroForm'));
  if (acroForm instanceof PDFDict) acroForm.delete(name('XFA'));
  const seen = new Set<PDFObject>();
  const clean = (object: PDFObject | undefined, depth: number): void => {
    if (!object || seen.has(object) || depth > 64) return;
    seen.add(object);
    if (object instanceof PDFArray) {
      for (let i = 0; i < object.size(); i++) clean(object.get(i), depth + 1);
      return;
    }
    if (!(object instanceof PDFDict)) return;
    object.delete(name('AA'));
    object.delete(name('JS'));
    for (const key of ['A', 'Next', 'PA']) {
      const raw = object.get(name(key));
      const action = raw instanceof PDFRef ? context.lookup(raw) : raw;
      if (action instanceof PDFDict && forbidden(action)) {
        object.delete(name(key));
        if (raw instanceof PDFRef) context.delete(raw);
      } else if (action instanceof PDFArray) {
        // a /Next may be an array of actions
        for (let i = action.size() - 1; i >= 0; i--) {
          const each = action.lookup(i);
          if (each instanceof PDFDict && forbidden(each)) action.remove(i);
        }
      }
    }
    // walk only direct children: indirect objects are walked from the list below
    for (const [, value] of object.entries()) if (!(value instanceof PDFRef)) clean(value, depth + 1);
  };
  for (const [, object] of context.enumerateIndirectObjects()) {
    clean(object instanceof PDFStream ? object.dict : object, 0);
  }
  dropUnreachable(doc);
}

/**
 * Deletes every object nothing reaches from the document's root or its information dictionary:
 * pdf-lib writes every object it holds, so what was stripped above (and whatever the template
 * carried unreferenced) would otherwise still be in the file.
 */
function dropUnreachable(doc: PDFDocument): void {
  const { context } = doc;
  const reached = new Set<string>();
  const stack: PDFObject[] = [context.trailerInfo.Root, context.trailerInfo.Info].filter(
    (o): o is PDFObject => o !== undefined,
  );
  while (stack.length) {
    const object = stack.pop()!;
    if (object instanceof PDFRef) {
      if (reached.has(object.tag)) continue;
      reached.add(object.tag);
      const target = context.lookup(object);
      if (target) stack.push(target);
    } else if (object instanceof PDFArray) {
      for (let i = 0; i < object.size(); i++) stack.push(object.get(i));
    } else if (object instanceof PDFDict) {
      for (const [, value] of object.entries()) stack.push(value);
    } else if (object instanceof PDFStream) {
      stack.push(object.dict);
    }
  }
  for (const [ref] of context.enumerateIndirectObjects()) if (!reached.has(ref.tag)) context.delete(ref);
}

/** The most the content of one page from outside may unpack to: its content streams and the forms it draws. */
export const MAX_PAGE_CONTENT = 32 * 1024 * 1024;

/** What a stream unpacks to, in bytes, or more than `most` (then `most + 1`): never holding more than that. */
function unpackedSize(stream: PDFRawStream, most: number): number {
  const filter = stream.dict.lookup(name('Filter'));
  const filters = filter instanceof PDFArray ? filter.asArray() : filter ? [filter] : [];
  if (filters.length === 0) return stream.contents.length;
  if (filters.length === 1 && filters[0] instanceof PDFName && filters[0].decodeText() === 'FlateDecode')
    return inflateAtMost(stream.contents, most)?.length ?? most + 1;
  // another filter, or a chain: pdf-lib's decoders, each stream stopped at MAX_DECODED (above)
  try {
    return decodePDFRawStream(stream).decode().length;
  } catch (err) {
    if (err instanceof RenderLimitError) return most + 1;
    throw err;
  }
}

/**
 * Checks each page of a PDF from outside (a form uploaded as a template, a PDF appended to a
 * document) before anything draws it: what its content streams and the forms they draw unpack to,
 * within MAX_PAGE_CONTENT (a 1 MB file can hold a page of a gigabyte, which each page image or
 * print would then unpack again), and each image it draws within RENDER_MAX_IMAGE_PIXELS by what
 * the image declares. A page over either is refused with `422 render_limit_exceeded`.
 */
export function checkPageContent(doc: PDFDocument): void {
  const { context } = doc;
  doc.getPages().forEach((page, i) => {
    let left = MAX_PAGE_CONTENT;
    const seen = new Set<PDFObject>();
    const measure = (object: PDFObject | undefined): void => {
      const target = object instanceof PDFRef ? context.lookup(object) : object;
      if (!target || seen.has(target)) return;
      seen.add(target);
      if (target instanceof PDFArray) return target.asArray().forEach(measure);
      if (!(target instanceof PDFRawStream)) return;
      const subtype = target.dict.lookup(name('Subtype'));
      if (subtype === name('Image')) {
        const width = target.dict.lookup(name('Width'));
        const height = target.dict.lookup(name('Height'));
        const pixels =
          (width instanceof PDFNumber ? width.asNumber() : 0) * (height instanceof PDFNumber ? height.asNumber() : 0);
        checkLimit('imagePixels', pixels, `An image on page ${i + 1} of the PDF`);
        return;
      }
      left -= unpackedSize(target, left);
      if (left < 0)
        throw new RenderLimitError(
          'page_content_bytes',
          `Page ${i + 1} of the PDF unpacks to more than ${MAX_PAGE_CONTENT / 1024 / 1024} MB of drawing instructions. Save it again from the program that made it (or "Reduce file size"), or send it as an image.`,
        );
      // a form draws what its own resources hold
      resources(target.dict.lookup(name('Resources')));
    };
    const resources = (dict: PDFObject | undefined): void => {
      if (!(dict instanceof PDFDict)) return;
      const xobjects = dict.lookup(name('XObject'));
      if (xobjects instanceof PDFDict) for (const [, value] of xobjects.entries()) measure(value);
    };
    measure(page.node.get(name('Contents')));
    resources(page.node.Resources());
  });
}

/**
 * Counts the pages of the page tree without trusting it: a node met twice (a tree that contains
 * itself, or a page named twice) is refused, and so are more pages than RENDER_MAX_PAGES.
 */
export function checkPageTree(doc: PDFDocument): number {
  const { context } = doc;
  const root = doc.catalog.get(name('Pages'));
  const seen = new Set<string>();
  const stack: PDFObject[] = root ? [root] : [];
  let pages = 0;
  while (stack.length) {
    const entry = stack.pop()!;
    if (entry instanceof PDFRef) {
      if (seen.has(entry.tag))
        throw new TemplateError(
          'The PDF\'s page tree names one of its parts twice (or contains itself). Save the form again from the program that made it ("Save As" rewrites the tree).',
        );
      seen.add(entry.tag);
    }
    const node = entry instanceof PDFRef ? context.lookup(entry) : entry;
    if (!(node instanceof PDFDict)) continue;
    const kids = node.lookup(name('Kids'));
    if (kids instanceof PDFArray) {
      for (let i = 0; i < kids.size(); i++) stack.push(kids.get(i));
    } else {
      pages++;
      checkLimit('pages', pages, 'The number of pages of the form');
    }
  }
  return pages;
}
