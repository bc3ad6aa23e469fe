/**
 * A postcard as a print shop takes it (src/postcards/presets.ts): checked and marked on a render
 * thread after any template printed it, and drawn as a proof.
 *
 * - `printReady` refuses (422 `not_print_ready`, one detail for each fault) what a printer would
 *   refuse: not two pages (front, back), a page not the size of one preset with its bleed (or not
 *   the preset the template names), a font not embedded. It writes each page's BleedBox (the whole
 *   page) and TrimBox (the finished card), and warns, with where it is, of text outside the safe
 *   zone, ink in the back's address area, and images below print resolution at their placed size.
 * - `proof` draws the front and the back as one PNG (or one side), with the trim, the safe zone
 *   and the address area drawn over it on request.
 */
import { PDFArray, PDFDict, PDFName, PDFRawStream, PDFStream, type PDFDocument } from 'pdf-lib';
import type { Canvas } from '@napi-rs/canvas';
import type { PDFPageProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { ValidationError, type ErrorDetail } from '../errors';
import {
  PRESETS,
  pageOf,
  presetOfPage,
  safeBox,
  trimBox,
  inUnit,
  type Preset,
  type PresetName,
  type Rect,
} from './presets';
import { openUntrusted } from './pdfsafe';
import { encodePng } from './png';
import { drawnPage, withPdfjs } from './pdfjs';

/** The least resolution of an image at its placed size, in pixels an inch: what the partners ask for. */
export const PRINT_DPI = 300;

export type Side = 'front' | 'back';
const SIDES: Side[] = ['front', 'back'];

/** A preflight finding a printer would print anyway, with where it is on its side (points from the page's top left). */
export interface PrintWarning {
  code: 'outside_safe_zone' | 'ink_in_address_area' | 'low_resolution';
  side: Side;
  /** Where, in points from the page's top left corner (bleed included), as a designer measures. */
  box: { x: number; y: number; width: number; height: number };
  message: string;
}

/** A warning as the API shows it (a template's `print_warnings`, a postcard's `warnings`): the side as `field`. */
export interface PrintCheckWarning {
  code: PrintWarning['code'];
  field: Side;
  message: string;
  box: PrintWarning['box'];
}

export const shownWarning = (w: PrintWarning): PrintCheckWarning => ({
  code: w.code,
  field: w.side,
  message: w.message,
  box: w.box,
});

export interface PrintReady {
  pdf: Uint8Array;
  size: PresetName;
  warnings: PrintWarning[];
}

function refuse(details: ErrorDetail[], size?: Preset): never {
  const sizes = Object.values(PRESETS)
    .map((p) => `${p.name} ${inUnit(p, pageOf(p)[0])} × ${inUnit(p, pageOf(p)[1])}`)
    .join(', ');
  throw new ValidationError(
    `The postcard is not print-ready: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}. ${
      size ? '' : `A postcard is two pages (front, back), each a size's page with its bleed: ${sizes}. `
    }See docs/postcards.md for what each size requires.`,
    details,
    'not_print_ready',
  );
}

/** The fonts a page's content uses, with whether each carries its program (FontFile, FontFile2 or FontFile3), by name. */
function fontsOf(doc: PDFDocument, resources: PDFDict | undefined, seen: Set<PDFDict>, out: Map<string, boolean>) {
  if (!resources || seen.has(resources)) return;
  seen.add(resources);
  const fonts = resources.lookupMaybe(PDFName.of('Font'), PDFDict);
  for (const [, ref] of fonts?.entries() ?? []) {
    const font = doc.context.lookup(ref);
    if (!(font instanceof PDFDict)) continue;
    const name = font.lookupMaybe(PDFName.of('BaseFont'), PDFName)?.decodeText() ?? 'unnamed font';
    const subtype = font.lookupMaybe(PDFName.of('Subtype'), PDFName)?.decodeText();
    // a Type 3 font's glyphs are drawn by the PDF itself; a Type 0 font's program is its descendant's
    if (subtype === 'Type3') continue;
    const described =
      subtype === 'Type0' ? font.lookupMaybe(PDFName.of('DescendantFonts'), PDFArray)?.lookup(0, PDFDict) : font;
    const descriptor = described?.lookupMaybe(PDFName.of('FontDescriptor'), PDFDict);
    const embedded = ['FontFile', 'FontFile2', 'FontFile3'].some((k) => descriptor?.get(PDFName.of(k)) !== undefined);
    out.set(name, (out.get(name) ?? true) && embedded);
  }
  // forms drawn on the page have resources of their own
  const xobjects = resources.lookupMaybe(PDFName.of('XObject'), PDFDict);
  for (const [, ref] of xobjects?.entries() ?? []) {
    const x = doc.context.lookup(ref);
    if (!(x instanceof PDFStream || x instanceof PDFRawStream)) continue;
    if (x.dict.lookupMaybe(PDFName.of('Subtype'), PDFName)?.decodeText() !== 'Form') continue;
    fontsOf(doc, x.dict.lookupMaybe(PDFName.of('Resources'), PDFDict), seen, out);
  }
}

type Matrix = [number, number, number, number, number, number];
const multiply = (m: Matrix, n: Matrix): Matrix => [
  m[0] * n[0] + m[2] * n[1],
  m[1] * n[0] + m[3] * n[1],
  m[0] * n[2] + m[2] * n[3],
  m[1] * n[2] + m[3] * n[3],
  m[0] * n[4] + m[2] * n[5] + m[4],
  m[1] * n[4] + m[3] * n[5] + m[5],
];

/** A rectangle in PDF coordinates as a box from the page's top left. */
function fromTop(r: Rect, pageHeight: number): PrintWarning['box'] {
  const round = (v: number) => Math.round(v * 10) / 10;
  return { x: round(r.x), y: round(pageHeight - r.y - r.height), width: round(r.width), height: round(r.height) };
}

const inside = (r: Rect, outer: Rect, slack = 0.5) =>
  r.x >= outer.x - slack &&
  r.y >= outer.y - slack &&
  r.x + r.width <= outer.x + outer.width + slack &&
  r.y + r.height <= outer.y + outer.height + slack;

/**
 * What a page's operators paint that the text check and the resolution check need: each image with
 * where it lands (the unit square under the CTM) and its pixels an inch there, and the strings
 * shown in text rendering mode 3 (invisible: an image's alt text, a scan's OCR layer), which
 * print nothing.
 */
async function paintedOn(
  page: PDFPageProxy,
): Promise<{ images: { rect: Rect; dpi: number }[]; invisible: Set<string> }> {
  const { OPS } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const list = await page.getOperatorList();
  const images: { rect: Rect; dpi: number }[] = [];
  const invisible = new Set<string>();
  let state = { ctm: [1, 0, 0, 1, 0, 0] as Matrix, mode: 0 };
  const stack: (typeof state)[] = [];
  list.fnArray.forEach((fn, i) => {
    const args = list.argsArray[i] as unknown[];
    if (fn === OPS.save) stack.push(state);
    else if (fn === OPS.restore) state = stack.pop() ?? state;
    else if (fn === OPS.transform) state = { ...state, ctm: multiply(state.ctm, args as Matrix) };
    else if (fn === OPS.setTextRenderingMode) state = { ...state, mode: args[0] as number };
    else if (fn === OPS.paintFormXObjectBegin) {
      stack.push(state);
      if (Array.isArray(args[0])) state = { ...state, ctm: multiply(state.ctm, args[0] as Matrix) };
    } else if (fn === OPS.paintFormXObjectEnd) state = stack.pop() ?? state;
    else if (fn === OPS.showText && state.mode === 3) {
      const glyphs = (args[0] ?? []) as ({ unicode?: string } | number | null)[];
      invisible.add(glyphs.map((g) => (g && typeof g === 'object' ? (g.unicode ?? '') : '')).join(''));
    } else if (fn === OPS.paintImageXObject || fn === OPS.paintInlineImageXObject) {
      const img = (fn === OPS.paintImageXObject ? { width: args[1], height: args[2] } : args[0]) as {
        width: number;
        height: number;
      };
      const m = state.ctm;
      const w = Math.hypot(m[0], m[1]);
      const h = Math.hypot(m[2], m[3]);
      if (!w || !h || !img?.width) return;
      const xs = [m[4], m[4] + m[0], m[4] + m[2], m[4] + m[0] + m[2]];
      const ys = [m[5], m[5] + m[1], m[5] + m[3], m[5] + m[1] + m[3]];
      const rect = {
        x: Math.min(...xs),
        y: Math.min(...ys),
        width: Math.max(...xs) - Math.min(...xs),
        height: Math.max(...ys) - Math.min(...ys),
      };
      images.push({ rect, dpi: Math.min(img.width / (w / 72), img.height / (h / 72)) });
    }
  });
  return { images, invisible };
}

/**
 * The text a page prints, each piece with its box: from its font's descent to its ascent around
 * the baseline (horizontal text), not the whole em, so a line set at the edge of the safe zone is
 * inside it. Text in `invisible` prints nothing and is left out.
 */
async function textOf(page: PDFPageProxy, invisible: Set<string>): Promise<{ text: string; rect: Rect }[]> {
  const content = await page.getTextContent();
  const out: { text: string; rect: Rect }[] = [];
  for (const item of content.items) {
    if (!('str' in item) || !item.str.trim() || invisible.has(item.str)) continue;
    const [, , , , x, y] = item.transform as number[];
    const style = content.styles[item.fontName] as { ascent?: number; descent?: number } | undefined;
    const ascent = style?.ascent ?? 0.8;
    const descent = style?.descent ?? -0.2;
    out.push({
      text: item.str,
      rect: { x, y: y + descent * item.height, width: item.width, height: (ascent - descent) * item.height },
    });
  }
  return out;
}

/** The drawing scale of the address check: a pixel is 1/100 in, finer than any ink that matters. */
const CHECK_SCALE = 100 / 72;

/** Where the back puts ink into the address area, if it does: the bounds of what is not white there. */
function inkIn(canvas: Canvas, area: Rect, pageHeight: number): Rect | undefined {
  const data = canvas.data();
  const x0 = Math.ceil(area.x * CHECK_SCALE);
  const x1 = Math.floor((area.x + area.width) * CHECK_SCALE);
  const y0 = Math.ceil((pageHeight - area.y - area.height) * CHECK_SCALE);
  const y1 = Math.floor((pageHeight - area.y) * CHECK_SCALE);
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -1;
  let maxY = -1;
  for (let y = Math.max(0, y0); y < Math.min(canvas.height, y1); y++)
    for (let x = Math.max(0, x0); x < Math.min(canvas.width, x1); x++) {
      const i = (y * canvas.width + x) * 4;
      // anti-aliasing at an edge outside the area leaves a near-white pixel: not ink
      if (data[i] > 245 && data[i + 1] > 245 && data[i + 2] > 245) continue;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
  if (maxX < 0) return undefined;
  return {
    x: minX / CHECK_SCALE,
    y: pageHeight - (maxY + 1) / CHECK_SCALE,
    width: (maxX + 1 - minX) / CHECK_SCALE,
    height: (maxY + 1 - minY) / CHECK_SCALE,
  };
}

/** What a printer would warn of on the two sides. */
async function preflight(pdf: Uint8Array, preset: Preset): Promise<PrintWarning[]> {
  const [, pageHeight] = pageOf(preset);
  const safe = safeBox(preset);
  return withPdfjs(pdf, async (doc) => {
    const warnings: PrintWarning[] = [];
    for (const [i, side] of SIDES.entries()) {
      const page = await doc.getPage(i + 1);
      const { images, invisible } = await paintedOn(page);
      for (const t of await textOf(page, invisible))
        if (!inside(t.rect, safe))
          warnings.push({
            code: 'outside_safe_zone',
            side,
            box: fromTop(t.rect, pageHeight),
            message: `the text ${JSON.stringify(t.text.slice(0, 40))} runs outside the safe zone (${inUnit(preset, preset.safe)} inside the trim) and may be cut off`,
          });
      for (const img of images)
        if (img.dpi < PRINT_DPI - 0.5)
          warnings.push({
            code: 'low_resolution',
            side,
            box: fromTop(img.rect, pageHeight),
            message: `an image is ${Math.floor(img.dpi)} pixels an inch at its placed size; print needs ${PRINT_DPI}`,
          });
      if (side === 'back') {
        const ink = inkIn(await drawnPage(page, CHECK_SCALE), preset.address, pageHeight);
        if (ink)
          warnings.push({
            code: 'ink_in_address_area',
            side,
            box: fromTop(ink, pageHeight),
            message: `the back prints into the address area (${inUnit(preset, preset.address.width)} × ${inUnit(preset, preset.address.height)} at the lower right), which the mail partner covers with the address and postage`,
          });
      }
    }
    return capped(warnings);
  });
}

/** The most warnings of one code on one side: a page of small text outside the safe zone is one fault, not a hundred. */
const MOST_OF_A_KIND = 5;

function capped(warnings: PrintWarning[]): PrintWarning[] {
  const seen = new Map<string, number>();
  const out: PrintWarning[] = [];
  for (const w of warnings) {
    const key = `${w.side} ${w.code}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    if (n <= MOST_OF_A_KIND) out.push(w);
  }
  for (const [key, n] of seen)
    if (n > MOST_OF_A_KIND) {
      const last = [...out].reverse().find((w) => `${w.side} ${w.code}` === key)!;
      last.message += ` (and ${n - MOST_OF_A_KIND} more like it on the ${last.side})`;
    }
  return out;
}

/**
 * Checks a rendered postcard against its size (`expected`, the template's; else whichever size its
 * pages are), refusing what a printer would refuse, and marks its boxes. See the file's comment.
 */
export async function printReady(pdf: Uint8Array, expected?: PresetName): Promise<PrintReady> {
  const doc = await openUntrusted(pdf, (why) =>
    refuse([{ field: 'pdf', message: `cannot be read (${why.reason})`, code: 'unreadable' }]),
  );
  const pages = doc.getPages();
  const details: ErrorDetail[] = [];
  if (pages.length !== 2)
    details.push({
      field: 'pages',
      message: `must be 2 (the front, then the back); it has ${pages.length}`,
      code: 'page_count',
    });
  const preset = expected
    ? PRESETS[expected]
    : pages.length
      ? presetOfPage(pages[0].getWidth(), pages[0].getHeight())
      : undefined;
  pages.slice(0, 2).forEach((page, i) => {
    const [w, h] = [page.getWidth(), page.getHeight()];
    const fits = preset && presetOfPage(w, h) === preset;
    if (!fits)
      details.push({
        field: SIDES[i],
        message: preset
          ? `is ${Math.round(w)} × ${Math.round(h)} pt; the ${preset.name} postcard's page is ${inUnit(preset, pageOf(preset)[0])} × ${inUnit(preset, pageOf(preset)[1])} (the trim and ${inUnit(preset, preset.bleed)} of bleed on every side)`
          : `is ${Math.round(w)} × ${Math.round(h)} pt, not the page of a postcard size with its bleed`,
        code: 'page_size',
      });
  });
  const fonts = new Map<string, boolean>();
  for (const page of pages) fontsOf(doc, page.node.Resources(), new Set(), fonts);
  for (const [name, embedded] of fonts)
    if (!embedded)
      details.push({
        field: 'fonts',
        message: `${name} is not embedded: a printer has not got it. Use a font the template carries`,
        code: 'font_not_embedded',
      });
  if (details.length || !preset) refuse(details, preset);
  const trim = trimBox(preset);
  for (const page of pages) {
    page.setBleedBox(0, 0, page.getWidth(), page.getHeight());
    page.setTrimBox(trim.x, trim.y, trim.width, trim.height);
  }
  const marked = await doc.save({ objectsPerTick: Infinity, updateFieldAppearances: false });
  return { pdf: marked, size: preset.name, warnings: await preflight(marked, preset) };
}

export interface ProofOptions {
  size: PresetName;
  /** One side, or both (the front above the back). */
  side?: Side;
  /** Draw the trim (solid), the safe zone (dashed) and the back's address area (tinted). */
  guides?: boolean;
  /** The image's width in pixels (a thumbnail is small). */
  width?: number;
}

/** The widest and narrowest proof, in pixels. */
export const PROOF_WIDTH = { default: 1200, min: 80, max: 2400 } as const;

/** The front and the back (or one side) of a rendered postcard as a PNG, with its guides on request. */
export async function proof(pdf: Uint8Array, options: ProofOptions): Promise<Uint8Array> {
  const preset = PRESETS[options.size];
  const [pageWidth, pageHeight] = pageOf(preset);
  const width = Math.min(PROOF_WIDTH.max, Math.max(PROOF_WIDTH.min, Math.round(options.width ?? PROOF_WIDTH.default)));
  const scale = width / pageWidth;
  const sides = options.side ? [options.side] : SIDES;
  const { createCanvas } = await import('@napi-rs/canvas');
  return withPdfjs(pdf, async (doc) => {
    const gap = sides.length > 1 ? Math.round(width / 40) : 0;
    const sideHeight = Math.round(pageHeight * scale);
    const sheet = createCanvas(width, sideHeight * sides.length + gap * (sides.length - 1));
    const ctx = sheet.getContext('2d');
    ctx.fillStyle = '#e5e7eb';
    ctx.fillRect(0, 0, sheet.width, sheet.height);
    for (const [n, side] of sides.entries()) {
      const top = n * (sideHeight + gap);
      const page = await drawnPage(await doc.getPage(SIDES.indexOf(side) + 1), scale);
      ctx.drawImage(page, 0, top);
      if (!options.guides) continue;
      const box = (r: Rect) =>
        [r.x * scale, top + (pageHeight - r.y - r.height) * scale, r.width * scale, r.height * scale] as const;
      ctx.lineWidth = Math.max(1, width / 600);
      ctx.setLineDash([]);
      ctx.strokeStyle = '#0891b2';
      ctx.strokeRect(...box(trimBox(preset)));
      ctx.setLineDash([ctx.lineWidth * 4, ctx.lineWidth * 3]);
      ctx.strokeStyle = '#16a34a';
      ctx.strokeRect(...box(safeBox(preset)));
      if (side === 'back') {
        ctx.setLineDash([]);
        ctx.fillStyle = 'rgba(220, 38, 38, 0.18)';
        ctx.fillRect(...box(preset.address));
        ctx.strokeStyle = '#dc2626';
        ctx.strokeRect(...box(preset.address));
      }
    }
    return encodePng(sheet.data(), sheet.width, sheet.height);
  });
}
