/**
 * Reads a PDF back the way a viewer does (pdfjs-dist), so tests assert on what a person sees:
 * text with positions, the fonts and colours it is drawn in, images, page sizes, page count.
 */
import path from 'node:path';

/* eslint-disable @typescript-eslint/no-explicit-any -- pdfjs's operator lists are untyped arrays */
type PdfJs = typeof import('pdfjs-dist/legacy/build/pdf.mjs');
let pdfjs: Promise<PdfJs> | undefined;
const load = () => (pdfjs ??= import('pdfjs-dist/legacy/build/pdf.mjs') as Promise<PdfJs>);
const standardFontDataUrl = path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts') + '/';

export interface TextItem {
  str: string;
  /** Left edge, points from the page's left side. */
  x: number;
  /** Baseline, points from the page's top. */
  y: number;
  width: number;
  height: number;
}

export interface TextRun {
  text: string;
  /** PostScript name of the font, without the subset prefix, e.g. DejaVuSans-Bold. */
  font: string;
  size: number;
  /** Fill colour as #rrggbb. */
  color: string;
  /** Fill opacity (1 unless drawn transparent). */
  alpha: number;
  /** Drawn so that it is not seen: fully transparent, or in a text rendering mode that neither fills nor strokes. */
  invisible: boolean;
}

/** A box on the page, in points from the top-left corner. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Shape extends Box {
  /** Filled, stroked, or both. */
  paint: 'fill' | 'stroke' | 'fillStroke';
  fill: string;
  stroke: string;
}

export interface PdfPage {
  width: number;
  height: number;
  items: TextItem[];
  /** All text of the page, items joined in reading order with line breaks where the baseline changes. */
  text: string;
  runs: TextRun[];
  images: Box[];
  shapes: Shape[];
}

export interface PdfRead {
  pages: PdfPage[];
  text: string;
  info: Record<string, unknown>;
}

/** pdf.js and the document it opened from `bytes`, as a viewer opens it. */
async function openPdf(bytes: Uint8Array) {
  const lib = await load();
  const doc = await lib.getDocument({
    data: new Uint8Array(bytes),
    standardFontDataUrl,
    verbosity: 0,
    isEvalSupported: false,
  }).promise;
  return { lib, doc };
}

export async function readPdf(bytes: Uint8Array): Promise<PdfRead> {
  const { lib, doc } = await openPdf(bytes);
  const pages: PdfPage[] = [];
  for (let n = 1; n <= doc.numPages; n++) {
    const page = await doc.getPage(n);
    const [, , w, h] = page.view;
    const content = await page.getTextContent();
    const items: TextItem[] = [];
    for (const it of content.items as any[]) {
      if (typeof it.str !== 'string' || it.str === '') continue;
      items.push({ str: it.str, x: it.transform[4], y: h - it.transform[5], width: it.width, height: it.height });
    }
    let text = '';
    let last: TextItem | undefined;
    for (const it of items) {
      if (last && Math.abs(it.y - last.y) > 1) text += '\n';
      // a visible gap between two pieces on one line is a space; touching pieces are one word
      else if (
        last &&
        !text.endsWith(' ') &&
        !it.str.startsWith(' ') &&
        it.x - (last.x + last.width) > it.height * 0.15
      )
        text += ' ';
      text += it.str;
      last = it;
    }
    const ops = await page.getOperatorList();
    const runs: TextRun[] = [];
    const images: Box[] = [];
    const shapes: Shape[] = [];
    type State = {
      color: string;
      stroke: string;
      alpha: number;
      mode: number;
      font: string;
      size: number;
      ctm: number[];
    };
    let st: State = {
      color: '#000000',
      stroke: '#000000',
      alpha: 1,
      mode: 0,
      font: '',
      size: 0,
      ctm: [1, 0, 0, 1, 0, 0],
    };
    const stack: State[] = [];
    const apply = (m: number[], x: number, y: number) => [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]];
    const box = (x0: number, y0: number, x1: number, y1: number): Box => {
      const a = apply(st.ctm, x0, y0);
      const b = apply(st.ctm, x1, y1);
      return {
        x: Math.min(a[0], b[0]),
        y: h - Math.max(a[1], b[1]),
        width: Math.abs(b[0] - a[0]),
        height: Math.abs(b[1] - a[1]),
      };
    };
    for (let i = 0; i < ops.fnArray.length; i++) {
      const fn = ops.fnArray[i];
      const args = ops.argsArray[i] as any[];
      if (fn === lib.OPS.save) stack.push({ ...st });
      else if (fn === lib.OPS.restore || fn === lib.OPS.paintFormXObjectEnd) st = stack.pop() ?? st;
      else if (fn === lib.OPS.transform || fn === lib.OPS.paintFormXObjectBegin) {
        if (fn === lib.OPS.paintFormXObjectBegin) stack.push({ ...st });
        const [a, b, c, d, e, f] = (fn === lib.OPS.transform ? args : (args[0] ?? [1, 0, 0, 1, 0, 0])) as number[];
        const m = st.ctm;
        st.ctm = [
          m[0] * a + m[2] * b,
          m[1] * a + m[3] * b,
          m[0] * c + m[2] * d,
          m[1] * c + m[3] * d,
          m[0] * e + m[2] * f + m[4],
          m[1] * e + m[3] * f + m[5],
        ];
      } else if (fn === lib.OPS.setFont) {
        const obj = page.commonObjs.get(args[0]);
        st.font = String(obj?.name ?? args[0])
          .replace(/^[A-Z]{6}\+/, '')
          .replace(/-\d+$/, '');
        st.size = args[1];
      } else if (fn === lib.OPS.setFillRGBColor) st.color = typeof args[0] === 'string' ? args[0] : rgbHex(args);
      else if (fn === lib.OPS.setStrokeRGBColor) st.stroke = typeof args[0] === 'string' ? args[0] : rgbHex(args);
      else if (fn === lib.OPS.setTextRenderingMode) st.mode = Number(args[0]);
      else if (fn === lib.OPS.setGState) {
        for (const [k, v] of args[0] as [string, unknown][]) if (k === 'ca') st.alpha = Number(v);
      } else if (fn === lib.OPS.showText) {
        const str = (args[0] as any[]).map((g) => (g && typeof g === 'object' ? (g.unicode ?? '') : '')).join('');
        // modes 3 and 7 neither fill nor stroke (7 only adds the text to the clip)
        const invisible = st.alpha === 0 || st.mode === 3 || st.mode === 7;
        runs.push({ text: str, font: st.font, size: st.size, color: st.color, alpha: st.alpha, invisible });
      } else if (fn === lib.OPS.paintImageXObject || fn === lib.OPS.paintInlineImageXObject) {
        images.push(box(0, 0, 1, 1));
      } else if (fn === lib.OPS.constructPath && args[2]) {
        const paint =
          args[0] === lib.OPS.fill || args[0] === lib.OPS.eoFill
            ? 'fill'
            : args[0] === lib.OPS.stroke || args[0] === lib.OPS.closeStroke
              ? 'stroke'
              : 'fillStroke';
        const [x0, y0, x1, y1] = args[2] as number[];
        shapes.push({ ...box(x0, y0, x1, y1), paint, fill: st.color, stroke: st.stroke });
      }
    }
    pages.push({ width: w, height: h, items, text, runs, images, shapes });
  }
  const meta = await doc.getMetadata();
  await doc.destroy();
  return { pages, text: pages.map((p) => p.text).join('\n\f\n'), info: (meta.info ?? {}) as Record<string, unknown> };
}

function rgbHex(args: number[]): string {
  return (
    '#' +
    args
      .slice(0, 3)
      .map((v) => Math.round(v).toString(16).padStart(2, '0'))
      .join('')
  );
}

/** The first text item containing `needle`; fails the test with the page text when there is none. */
export function find(page: PdfPage, needle: string): TextItem {
  const it = page.items.find((i) => i.str.includes(needle));
  if (!it) throw new Error(`${JSON.stringify(needle)} is not on the page. The page says:\n${page.text}`);
  return it;
}

/** The first run of drawn text containing `needle`. */
export function run(page: PdfPage, needle: string): TextRun {
  const r = page.runs.find((x) => x.text.includes(needle));
  if (!r)
    throw new Error(`no text run draws ${JSON.stringify(needle)}; runs: ${page.runs.map((x) => x.text).join(' | ')}`);
  return r;
}

/** An element of a tagged PDF's structure tree as pdf.js reads it, with the text of its marked content. */
export interface StructNode {
  role: string;
  alt?: string;
  /** The text drawn in this element's own marked content (not its children's), in order. */
  text: string;
  children: StructNode[];
}

export interface PdfStructure {
  /** The catalog's MarkInfo says the document is tagged. */
  marked: boolean;
  lang?: string;
  /** Each page's structure tree below its Document element (empty when untagged), and the text drawn as artifacts. */
  pages: { tree: StructNode[]; artifacts: string[] }[];
}

/** The structure a screen reader gets from a PDF: pdf.js's structure tree, joined to the text of each marked-content id. */
/** The outline's top-level entries as a viewer's bookmarks panel shows them: title and the page (from 0) each opens. */
export async function readOutline(bytes: Uint8Array): Promise<{ title: string; page: number }[]> {
  const { doc } = await openPdf(bytes);
  const outline = ((await doc.getOutline()) ?? []) as { title: string; dest: unknown }[];
  return Promise.all(
    outline.map(async (o) => {
      const dest = (typeof o.dest === 'string' ? await doc.getDestination(o.dest) : o.dest) as [unknown];
      return { title: o.title, page: await doc.getPageIndex(dest[0] as never) };
    }),
  );
}

/** The files embedded in a PDF, by name, as a viewer's attachments panel lists them (pdf.js). */
export async function readAttachments(bytes: Uint8Array): Promise<Record<string, Uint8Array>> {
  const { doc } = await openPdf(bytes);
  const found = ((await doc.getAttachments()) ?? {}) as Record<string, { filename: string; content: Uint8Array }>;
  return Object.fromEntries(Object.values(found).map((a) => [a.filename, a.content]));
}

export async function readStructure(bytes: Uint8Array): Promise<PdfStructure> {
  const { doc } = await openPdf(bytes);
  try {
    const marked = Boolean((await doc.getMarkInfo())?.Marked);
    const info = (await doc.getMetadata()).info as { Language?: string };
    const pages: PdfStructure['pages'] = [];
    for (let i = 1; i <= doc.numPages; i++) {
      const page = await doc.getPage(i);
      const byId = new Map<string, string[]>();
      const artifacts: string[] = [];
      const open: string[] = [];
      for (const item of (await page.getTextContent({ includeMarkedContent: true })).items as any[]) {
        if (item.type === 'beginMarkedContent' || item.type === 'beginMarkedContentProps')
          open.push(item.tag === 'Artifact' ? 'Artifact' : (item.id ?? ''));
        else if (item.type === 'endMarkedContent') open.pop();
        else if (typeof item.str === 'string') {
          const where = open[open.length - 1];
          // a line's end is a word's end
          const str = item.hasEOL ? `${item.str} ` : item.str;
          if (where === 'Artifact') artifacts.push(str);
          else if (where) byId.set(where, [...(byId.get(where) ?? []), str]);
        }
      }
      const node = (n: any): StructNode => ({
        role: n.role,
        ...(n.alt ? { alt: n.alt } : {}),
        text: (n.children ?? [])
          .filter((c: any) => c.type === 'content')
          .map((c: any) => (byId.get(c.id) ?? []).join(''))
          .join('')
          .replace(/\s+/g, ' ')
          .trim(),
        children: (n.children ?? []).filter((c: any) => c.type !== 'content').map(node),
      });
      const root = await page.getStructTree();
      const documentNode = (root as any)?.children?.[0];
      pages.push({
        tree: documentNode ? (documentNode.children ?? []).filter((c: any) => c.type !== 'content').map(node) : [],
        artifacts: artifacts.filter((a) => a.trim()),
      });
    }
    return { marked, lang: info.Language, pages };
  } finally {
    await doc.destroy();
  }
}

/** Each font a PDF describes: its name (without the subset tag) and its embedded program, inflated (none when it is not embedded). */
export async function fontPrograms(bytes: Uint8Array): Promise<{ name: string; program: Buffer }[]> {
  const { PDFDocument, PDFDict, PDFName, PDFRawStream } = await import('pdf-lib');
  const { inflateSync } = await import('node:zlib');
  const pdf = await PDFDocument.load(bytes);
  const out: { name: string; program: Buffer }[] = [];
  for (const [, obj] of pdf.context.enumerateIndirectObjects()) {
    if (!(obj instanceof PDFDict) || obj.get(PDFName.of('Type'))?.toString() !== '/FontDescriptor') continue;
    const name = (obj.get(PDFName.of('FontName'))?.toString() ?? '').replace(/^\/([A-Z]{6}\+)?/, '');
    const file = ['FontFile2', 'FontFile3', 'FontFile'].map((k) => obj.lookup(PDFName.of(k))).find(Boolean);
    const program =
      file instanceof PDFRawStream
        ? file.dict.get(PDFName.of('Filter'))?.toString() === '/FlateDecode'
          ? inflateSync(file.contents)
          : Buffer.from(file.contents)
        : Buffer.alloc(0);
    out.push({ name, program });
  }
  return out;
}
