/**
 * pdf.js as this project reads untrusted PDFs with it (the recipient's page images, viewcopy.ts;
 * the postcard checks and proofs, print.ts). Kept apart from the modules whose declarations the
 * package publishes: pdf.js and the Skia canvas are ES-module and newer-lib types that a user's
 * own TypeScript project should not have to compile.
 */
import path from 'node:path';
import type { Canvas } from '@napi-rs/canvas';
import type { PDFDocumentProxy, PDFPageProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';

const PDFJS = path.dirname(require.resolve('pdfjs-dist/package.json'));

/**
 * Reads a PDF with pdf.js as the recipient's page images and the postcard checks do (print.ts):
 * no eval, no fonts from the system; `use` gets the document, destroyed after.
 */
export async function withPdfjs<T>(pdf: Uint8Array, use: (doc: PDFDocumentProxy) => Promise<T>): Promise<T> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const doc = await pdfjs.getDocument({
    // pdf.js takes the bytes it is given (their buffer is detached): a copy, so the caller keeps its own
    data: pdf.slice(),
    isEvalSupported: false,
    enableXfa: false,
    disableFontFace: true,
    useSystemFonts: false,
    // fonts a PDF names but does not embed (the standard 14) come from pdf.js's own files
    standardFontDataUrl: `${PDFJS}/standard_fonts/`,
    verbosity: 0,
  }).promise;
  try {
    return await use(doc);
  } finally {
    await doc.destroy();
  }
}

/** A page drawn by pdf.js on a white Skia canvas at `scale` pixels a point. */
export async function drawnPage(page: PDFPageProxy, scale: number): Promise<Canvas> {
  const { createCanvas } = await import('@napi-rs/canvas');
  const viewport = page.getViewport({ scale });
  const canvas = createCanvas(Math.max(1, Math.round(viewport.width)), Math.max(1, Math.round(viewport.height)));
  const context = canvas.getContext('2d');
  context.fillStyle = '#ffffff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  await page.render({ canvas: canvas as never, canvasContext: context as never, viewport }).promise;
  return canvas;
}
