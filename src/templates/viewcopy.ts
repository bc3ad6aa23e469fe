/**
 * What a Magic Link's recipient is shown of a stored document: the PDF with a watermark drawn
 * over every page (the stored document stays clean), or one page of it as a PNG image when the
 * link does not allow downloads. Runs on a render thread (worker.ts): a stored document may hold
 * an uploaded PDF, so it is read with the same guards as one, and drawn by pdf.js with no eval,
 * no fonts from the system and no scripts, within the thread's time and memory budget.
 */
import path from 'node:path';
import { beginMarkedContent, degrees, endMarkedContent, PDFDocument, rgb, type PDFFont } from 'pdf-lib';
import { NotFoundError } from '../errors';
import { builtinSans, embeddingFontkit } from './fonts';
import { openUntrusted } from './pdfsafe';

export const WATERMARK_POSITIONS = ['center', 'top', 'bottom', 'tiled'] as const;
export type WatermarkPosition = (typeof WATERMARK_POSITIONS)[number];

/** A watermark as it is drawn: its text with the placeholders already filled in. */
export interface Stamp {
  text: string;
  position: WatermarkPosition;
  /** 0.05 to 1. */
  opacity: number;
  /** The text's size in points; null: as large as fits the page (center), 10 (top, bottom), 18 (tiled). */
  size: number | null;
  /** Degrees counter-clockwise; null: 45 in the center and tiled, 0 at the top and bottom. */
  rotation: number | null;
}

export interface ViewOptions {
  stamp?: Stamp;
  /** One page (from 1) as a PNG image, instead of the whole PDF. */
  page?: number;
}

/** The width of a page image, in pixels: sharp on a laptop screen, a few hundred KB a page. */
export const PAGE_IMAGE_WIDTH = 1240;
/** The longest side and the most pixels of a page image: a page of odd proportions is drawn smaller. */
const PAGE_IMAGE_SIDE = 8_192;
const PAGE_IMAGE_PIXELS = 4_000_000;

const GREY = rgb(0.35, 0.35, 0.35);

/** A stored document pdf-lib cannot read: ours to fix, not the recipient's (a 500). */
function refuse(why: { reason: string }): Error {
  return new Error(`the stored document could not be read: ${why.reason}`);
}

/** Draws the stamp on every page, as an artifact (screen readers and PDF/UA skip it). */
async function stampPages(doc: PDFDocument, stamp: Stamp): Promise<void> {
  doc.registerFontkit(embeddingFontkit);
  const font: PDFFont = await doc.embedFont(builtinSans().bytes, { subset: true });
  for (const page of doc.getPages()) {
    const { width, height } = page.getSize();
    const draw = (x: number, y: number, size: number, rotation: number) => {
      page.pushOperators(beginMarkedContent('Artifact'));
      page.drawText(stamp.text, { x, y, size, font, color: GREY, opacity: stamp.opacity, rotate: degrees(rotation) });
      page.pushOperators(endMarkedContent());
    };
    const placed = (size: number, rotation: number, cx: number, cy: number) => {
      // (x, y) of the baseline's start, so that the text's middle sits at (cx, cy) when rotated
      const w = font.widthOfTextAtSize(stamp.text, size);
      const h = size * 0.35;
      const r = (rotation * Math.PI) / 180;
      return [cx - (w / 2) * Math.cos(r) + h * Math.sin(r), cy - (w / 2) * Math.sin(r) - h * Math.cos(r)] as const;
    };
    if (stamp.position === 'top' || stamp.position === 'bottom') {
      const size = stamp.size ?? 10;
      const rotation = stamp.rotation ?? 0;
      const [x, y] = placed(size, rotation, width / 2, stamp.position === 'top' ? height - 18 : 18);
      draw(x, y, size, rotation);
    } else if (stamp.position === 'center') {
      const rotation = stamp.rotation ?? 45;
      // as large as fits along the page's diagonal (or its width when not rotated), at most 72 pt
      const r = (Math.abs(rotation) * Math.PI) / 180;
      const room = Math.min(width / Math.max(Math.cos(r), 0.01), height / Math.max(Math.sin(r), 0.01)) * 0.8;
      const size = stamp.size ?? Math.max(8, Math.min(72, room / Math.max(1, font.widthOfTextAtSize(stamp.text, 1))));
      const [x, y] = placed(size, rotation, width / 2, height / 2);
      draw(x, y, size, rotation);
    } else {
      const size = stamp.size ?? 18;
      const rotation = stamp.rotation ?? 45;
      const w = font.widthOfTextAtSize(stamp.text, size);
      const stepX = Math.max(w * 0.9, 120);
      const stepY = Math.max(size * 8, 120);
      for (let row = 0, cy = stepY / 2; cy < height + stepY; row++, cy += stepY)
        for (let cx = row % 2 ? stepX / 2 : 0; cx < width + stepX; cx += stepX) {
          const [x, y] = placed(size, rotation, cx, cy);
          draw(x, y, size, rotation);
        }
    }
  }
}

/** The PDF a recipient is shown: stamped when the link has a watermark; one page as a PNG when `page` is given. */
export async function viewCopy(pdf: Uint8Array, options: ViewOptions): Promise<{ bytes: Uint8Array; pages: number }> {
  const doc = await openUntrusted(pdf, refuse);
  const pages = doc.getPageCount();
  if (options.page !== undefined) {
    if (!Number.isInteger(options.page) || options.page < 1 || options.page > pages)
      throw new NotFoundError('page', String(options.page));
    // only the page asked for is drawn: a copy of it alone
    const one = await PDFDocument.create({ updateMetadata: false });
    const [copied] = await one.copyPages(doc, [options.page - 1]);
    one.addPage(copied);
    if (options.stamp) await stampPages(one, options.stamp);
    return { bytes: await pageImage(await one.save({ objectsPerTick: Infinity })), pages };
  }
  if (!options.stamp) return { bytes: pdf, pages };
  await stampPages(doc, options.stamp);
  return { bytes: await doc.save({ objectsPerTick: Infinity }), pages };
}

const PDFJS = path.dirname(require.resolve('pdfjs-dist/package.json'));

/** The first page of a PDF as a PNG, PAGE_IMAGE_WIDTH pixels wide (or smaller: see below), drawn by pdf.js on a Skia canvas. */
async function pageImage(pdf: Uint8Array): Promise<Uint8Array> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const { createCanvas } = await import('@napi-rs/canvas');
  const doc = await pdfjs.getDocument({
    data: pdf,
    isEvalSupported: false,
    enableXfa: false,
    disableFontFace: true,
    useSystemFonts: false,
    // fonts a PDF names but does not embed (the standard 14) come from pdf.js's own files
    standardFontDataUrl: `${PDFJS}/standard_fonts/`,
    verbosity: 0,
  }).promise;
  try {
    const page = await doc.getPage(1);
    const base = page.getViewport({ scale: 1 });
    // PAGE_IMAGE_WIDTH wide, unless the page is so long (or so small) that the image would be
    // larger than a canvas can be: then as large as fits
    const scale = Math.min(
      PAGE_IMAGE_WIDTH / base.width,
      PAGE_IMAGE_SIDE / base.height,
      Math.sqrt(PAGE_IMAGE_PIXELS / (base.width * base.height)),
    );
    const viewport = page.getViewport({ scale });
    const canvas = createCanvas(Math.max(1, Math.round(viewport.width)), Math.max(1, Math.round(viewport.height)));
    const context = canvas.getContext('2d');
    context.fillStyle = '#ffffff';
    context.fillRect(0, 0, canvas.width, canvas.height);
    await page.render({
      canvas: canvas as never,
      canvasContext: context as never,
      viewport,
    }).promise;
    return new Uint8Array(canvas.toBuffer('image/png'));
  } finally {
    await doc.destroy();
  }
}
