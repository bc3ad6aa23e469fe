import type { PDFDocument, PDFFont } from 'pdf-lib';

/**
 * Lets the young-generation GC free a finished document. pdf-lib gives many per-document objects
 * a function assigned to a property in their constructor (the document's `computePages`, every
 * content stream's `computeContents`, the font embedders', the writer's, the object copier's), and
 * V8 allocates a function literal assigned to a property straight in the old generation. Each such
 * function holds the object it belongs to, and through it the whole document, alive through every
 * young-generation GC until the next full one: every document was copied into the old generation
 * (~110 KB per letter) and a busy render thread ran a full GC every few dozen letters. Emptying
 * the document's own objects once it is saved cuts them off; the functions alone are small.
 */
export function release(doc: PDFDocument): void {
  for (const [, object] of doc.context.enumerateIndirectObjects()) empty(object);
  for (const font of (doc as unknown as { fonts: PDFFont[] }).fonts) {
    empty((font as unknown as { embedder: object }).embedder);
    empty(font);
  }
  empty(doc.context);
  empty(doc);
}

function empty(object: object): void {
  for (const key of Object.keys(object)) (object as Record<string, unknown>)[key] = undefined;
}
