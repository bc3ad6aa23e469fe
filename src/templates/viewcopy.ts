/**
 * What a Magic Link's recipient is shown of a stored document: the PDF with a watermark drawn
 * over every page (the stored document stays clean), or one page of it as a PNG image when the
 * link does not allow downloads. Runs on a render thread (worker.ts): a stored document may hold
 * an uploaded PDF, so it is read with the same guards as one, and drawn by pdf.js with no eval,
 * no fonts from the system and no scripts, within the thread's time and memory budget.
 */
import { beginMarkedContent, degrees, endMarkedContent, PDFDocument, rgb, type PDFFont } from 'pdf-lib';
import { NotFoundError } from '../errors';
import { builtinSans, embeddingFontkit } from './fonts';
import { openUntrusted } from './pdfsafe';
import { drawnPage, withPdfjs } from './pdfjs';
import { encodePng } from './png';

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
  /** That page as it was drawn before (a cache's, src/documents/images.ts): only the stamp is laid over it, and the PDF is not read. */
  drawn?: PageImage;
}

/** One page drawn, without a stamp: the PNG, the page's size in points as shown (what a stamp is laid out in) and the document's page count. */
export interface PageImage {
  png: Uint8Array;
  width: number;
  height: number;
  pages: number;
}

/** What the recipient is shown: the PDF or the page's image; with `page`, also the page as drawn without the stamp, to keep. */
export interface ViewCopy {
  bytes: Uint8Array;
  pages: number;
  drawn?: PageImage;
}

/** The width of a page image, in pixels: sharp on a laptop screen, a few hundred KB a page. */
export const PAGE_IMAGE_WIDTH = 1240;
/** The longest side and the most pixels of a page image: a page of odd proportions is drawn smaller. */
const PAGE_IMAGE_SIDE = 8_192;
const PAGE_IMAGE_PIXELS = 4_000_000;

const GREY = rgb(0.35, 0.35, 0.35);
const GREY_BYTE = Math.round(0.35 * 255);

/** A stored document pdf-lib cannot read: ours to fix, not the recipient's (a 500). */
function refuse(why: { reason: string }): Error {
  return new Error(`the stored document could not be read: ${why.reason}`);
}

/** One copy of the stamp's text on a page: its middle (points from the bottom left), size in points and rotation (degrees counter-clockwise). */
interface Placement {
  cx: number;
  cy: number;
  size: number;
  rotation: number;
}

/**
 * Where the stamp's text goes on a page of this size (points): one copy at the top, the bottom or
 * the centre, or copies tiled over the page. `widthAt` measures the text at a size in points. The
 * PDF's stamp and the page image's are laid out by this one function.
 */
function placements(stamp: Stamp, width: number, height: number, widthAt: (size: number) => number): Placement[] {
  if (stamp.position === 'top' || stamp.position === 'bottom')
    return [
      {
        cx: width / 2,
        cy: stamp.position === 'top' ? height - 18 : 18,
        size: stamp.size ?? 10,
        rotation: stamp.rotation ?? 0,
      },
    ];
  const rotation = stamp.rotation ?? 45;
  if (stamp.position === 'center') {
    // as large as fits along the page's diagonal (or its width when not rotated), at most 72 pt
    const r = (Math.abs(rotation) * Math.PI) / 180;
    const room = Math.min(width / Math.max(Math.cos(r), 0.01), height / Math.max(Math.sin(r), 0.01)) * 0.8;
    const size = stamp.size ?? Math.max(8, Math.min(72, room / Math.max(1, widthAt(1))));
    return [{ cx: width / 2, cy: height / 2, size, rotation }];
  }
  const size = stamp.size ?? 18;
  const stepX = Math.max(widthAt(size) * 0.9, 120);
  const stepY = Math.max(size * 8, 120);
  const tiles: Placement[] = [];
  for (let row = 0, cy = stepY / 2; cy < height + stepY; row++, cy += stepY)
    for (let cx = row % 2 ? stepX / 2 : 0; cx < width + stepX; cx += stepX) tiles.push({ cx, cy, size, rotation });
  return tiles;
}

/** Draws the stamp on every page, as an artifact (screen readers and PDF/UA skip it). */
async function stampPages(doc: PDFDocument, stamp: Stamp): Promise<void> {
  doc.registerFontkit(embeddingFontkit);
  const font: PDFFont = await doc.embedFont(builtinSans().bytes, { subset: true });
  const widthAt = (size: number) => font.widthOfTextAtSize(stamp.text, size);
  for (const page of doc.getPages()) {
    const { width, height } = page.getSize();
    for (const placement of placements(stamp, width, height, widthAt)) {
      const { size, rotation } = placement;
      const [x, y] = baselineStart(placement, widthAt(size));
      page.pushOperators(beginMarkedContent('Artifact'));
      page.drawText(stamp.text, { x, y, size, font, color: GREY, opacity: stamp.opacity, rotate: degrees(rotation) });
      page.pushOperators(endMarkedContent());
    }
  }
}

/** Where the text's baseline starts (points, y up) so that its middle sits at the placement's when rotated; `width` is the text's at its size. */
function baselineStart({ cx, cy, size, rotation }: Placement, width: number): [number, number] {
  const h = size * 0.35;
  const r = (rotation * Math.PI) / 180;
  return [cx - (width / 2) * Math.cos(r) + h * Math.sin(r), cy - (width / 2) * Math.sin(r) - h * Math.cos(r)];
}

const STAMP_FONT = 'Paperlink Stamp';
let stampFontRegistered = false;

/**
 * The stamp laid over a page drawn before: the image decoded, the text drawn where the PDF's stamp
 * would be (same font, size, angle, grey and opacity), the image encoded again. No PDF is read and
 * nothing is drawn by pdf.js: what each viewer's own watermark costs once the page is drawn.
 */
async function stampImage(drawn: PageImage, stamp: Stamp): Promise<Uint8Array> {
  const { createCanvas, loadImage, GlobalFonts } = await import('@napi-rs/canvas');
  if (!stampFontRegistered) {
    GlobalFonts.register(Buffer.from(builtinSans().bytes), STAMP_FONT);
    stampFontRegistered = true;
  }
  const image = await loadImage(Buffer.from(drawn.png));
  const canvas = createCanvas(image.width, image.height);
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  // pixels per point, and y from the top
  const k = image.width / drawn.width;
  const widthAt = (size: number) => {
    context.font = `${size * k}px "${STAMP_FONT}"`;
    return context.measureText(stamp.text).width / k;
  };
  context.globalAlpha = stamp.opacity;
  context.fillStyle = `rgb(${GREY_BYTE}, ${GREY_BYTE}, ${GREY_BYTE})`;
  for (const placement of placements(stamp, drawn.width, drawn.height, widthAt)) {
    const { size, rotation } = placement;
    const [x, y] = baselineStart(placement, widthAt(size));
    context.save();
    context.translate(x * k, (drawn.height - y) * k);
    context.rotate((-rotation * Math.PI) / 180);
    context.font = `${size * k}px "${STAMP_FONT}"`;
    context.fillText(stamp.text, 0, 0);
    context.restore();
  }
  return encodePng(canvas.data(), canvas.width, canvas.height);
}

/**
 * The PDF a recipient is shown: stamped when the link has a watermark. With `page`, that page as a
 * PNG instead: drawn (or taken as `drawn`, when it was before), then stamped, and returned with the
 * page as drawn without the stamp, for the caller to keep.
 */
export async function viewCopy(pdf: Uint8Array, options: ViewOptions): Promise<ViewCopy> {
  if (options.page !== undefined) {
    const drawn = options.drawn ?? (await drawPage(pdf, options.page));
    return { bytes: options.stamp ? await stampImage(drawn, options.stamp) : drawn.png, pages: drawn.pages, drawn };
  }
  const doc = await openUntrusted(pdf, refuse);
  const pages = doc.getPageCount();
  if (!options.stamp) return { bytes: pdf, pages };
  await stampPages(doc, options.stamp);
  return { bytes: await doc.save({ objectsPerTick: Infinity }), pages };
}

/** One page (from 1) drawn without a stamp; a page the document does not have is not_found. */
async function drawPage(pdf: Uint8Array, page: number): Promise<PageImage> {
  const doc = await openUntrusted(pdf, refuse);
  const pages = doc.getPageCount();
  if (!Number.isInteger(page) || page < 1 || page > pages) throw new NotFoundError('page', String(page));
  // only the page asked for is drawn: a copy of it alone
  const one = await PDFDocument.create({ updateMetadata: false });
  const [copied] = await one.copyPages(doc, [page - 1]);
  one.addPage(copied);
  return { ...(await pageImage(await one.save({ objectsPerTick: Infinity }))), pages };
}

/** The first page of a PDF as a PNG, PAGE_IMAGE_WIDTH pixels wide (or smaller: see below), drawn by pdf.js on a Skia canvas, with the page's size in points as shown. */
async function pageImage(pdf: Uint8Array): Promise<{ png: Uint8Array; width: number; height: number }> {
  return withPdfjs(pdf, async (doc) => {
    const page = await doc.getPage(1);
    const base = page.getViewport({ scale: 1 });
    // PAGE_IMAGE_WIDTH wide, unless the page is so long (or so small) that the image would be
    // larger than a canvas can be: then as large as fits
    const scale = Math.min(
      PAGE_IMAGE_WIDTH / base.width,
      PAGE_IMAGE_SIDE / base.height,
      Math.sqrt(PAGE_IMAGE_PIXELS / (base.width * base.height)),
    );
    const canvas = await drawnPage(page, scale);
    return {
      png: encodePng(canvas.data(), canvas.width, canvas.height),
      width: base.width,
      height: base.height,
    };
  });
}
