/**
 * Fonts embedded in a document as subsets, made once per glyph set. Everything a subset's PDF
 * objects hold is a function of the glyphs it holds and the characters each stands for: the
 * subset's font program, its widths, its ToUnicode map (which characters each glyph stands for,
 * for copying and search) and each glyph's code. So a subset is made once per face
 * and glyph set and kept (a bounded number per face), compressed; a document whose glyphs of a face
 * are a set met before embeds it by reference to the kept bytes, and lays out, measures or subsets
 * nothing of that face. Documents of one template mostly are: the recipient's name changes, the
 * letters it uses mostly do not.
 *
 * A subset is made with a view of the face of its own (fonts.ts): subsetting creates glyph objects
 * for the parts of composite glyphs (the "o" in "ó"), which must not enter the glyphs texts are
 * laid out with. Glyphs are put into a subset in glyph-id order, so the subset, and the codes of
 * each text, depend on the glyph set alone. The objects are those pdf-lib writes for a subset
 * (Type0 font, Identity-H, one CIDFont, CIDToGIDMap Identity), and the subset's name is tagged as
 * PDF asks (six capital letters, from the glyph set, a plus, the font's PostScript name).
 */
import { createHash } from 'node:crypto';
import { PDFDocument, PDFRef, PDFString } from 'pdf-lib';
import { createCmap } from 'pdf-lib/cjs/core/embedders/CMap';
import { deriveFontFlags } from 'pdf-lib/cjs/core/embedders/FontFlags';
import type { Font, Glyph } from 'pdf-lib/cjs/types/fontkit';
import { advance, embeddingFontkit, glyphRun, type FontFace } from './fonts';
import { deflate } from './zlib';

interface Subset {
  name: string;
  cff: boolean;
  /** The font program, deflated. */
  program: Uint8Array;
  /** The ToUnicode CMap, deflated. */
  toUnicode: Uint8Array;
  /** The CIDFont's widths: [0 [w0 w1 …]], each glyph's advance in 1/1000 em, in CID order. */
  widths: (number | number[])[];
  /** Each glyph's code (its CID) in the subset, as a literal string's two bytes (escaped where PDF asks), by glyph id. */
  cids: Map<number, string>;
}

/** Subsets kept per face; the least recently used goes first. */
const MAX_SUBSETS_PER_FACE = 256;
const subsets = new WeakMap<FontFace, Map<string, Promise<Subset>>>();

/** What a document draws with a face: its glyphs (the characters each stands for, by glyph id) and its texts. */
interface Noted {
  glyphs: Map<number, readonly number[]>;
  texts: Set<string>;
}

/** A face's subset in a document, and the codes of each text drawn with it. */
interface Embedded {
  ref: PDFRef;
  subset: Subset;
  codes: Map<string, string>;
}

/** The faces and glyphs one document draws with; `embed()` puts their subsets into the document. */
export class DocumentFonts {
  /** What the document draws with each face (most of its texts are words met before). */
  private readonly noted = new Map<FontFace, Noted>();
  private readonly embedded = new Map<FontFace, Embedded>();
  /** The last face noted, and the last drawn, with what is kept for each: most texts are in the last one's face. */
  private lastNoted?: { face: FontFace; noted: Noted };
  private lastDrawn?: { face: FontFace; embedded: Embedded };

  /** Notes the glyphs of a text drawn in a face. Call for every text before embed(). */
  add(face: FontFace, text: string): void {
    if (this.lastNoted?.face !== face) {
      let noted = this.noted.get(face);
      if (!noted) {
        noted = { glyphs: new Map(), texts: new Set() };
        this.noted.set(face, noted);
      }
      this.lastNoted = { face, noted };
    }
    const { glyphs, texts } = this.lastNoted.noted;
    if (texts.has(text)) return;
    texts.add(text);
    for (const g of glyphRun(face, text)) if (!glyphs.has(g.id)) glyphs.set(g.id, g.codePoints);
  }

  /** Embeds each face's subset into the document. */
  async embed(doc: PDFDocument): Promise<void> {
    for (const [face, { glyphs }] of this.noted) {
      const subset = await subsetOf(face, glyphs);
      this.embedded.set(face, { ref: register(doc, face, subset), subset, codes: new Map() });
    }
  }

  /** The font object of an embedded face. */
  ref(face: FontFace): PDFRef {
    return this.embedded.get(face)!.ref;
  }

  /**
   * The codes a text of an embedded face is drawn with, as a literal string of two bytes a glyph
   * (made once per text and document): half the bytes of a hex string, for the content stream to
   * build and deflate.
   */
  codes(face: FontFace, text: string): string {
    if (this.lastDrawn?.face !== face) this.lastDrawn = { face, embedded: this.embedded.get(face)! };
    const { subset, codes } = this.lastDrawn.embedded;
    let literal = codes.get(text);
    if (literal === undefined) {
      literal = '(';
      for (const g of glyphRun(face, text)) literal += subset.cids.get(g.id)!;
      literal += ')';
      codes.set(text, literal);
    }
    return literal;
  }
}

/** The face's subset for a glyph set: kept, or made and kept. */
function subsetOf(face: FontFace, glyphs: Map<number, readonly number[]>): Promise<Subset> {
  const ids = [...glyphs.keys()].sort((a, b) => a - b);
  // the glyphs and the characters each stands for: what the subset's objects are made of
  const key = ids.map((id) => `${id}:${glyphs.get(id)!.join('.')}`).join(',');
  let store = subsets.get(face);
  if (!store) {
    store = new Map();
    subsets.set(face, store);
  }
  let subset = store.get(key);
  if (subset) store.delete(key);
  else {
    subset = makeSubset(face, ids, glyphs, key);
    subset.catch(() => store.delete(key));
  }
  store.set(key, subset);
  if (store.size > MAX_SUBSETS_PER_FACE) store.delete(store.keys().next().value!);
  return subset;
}

/** fontkit's subsets, as far as this uses them (pdf-lib's types leave them out). */
interface FontkitSubset {
  /** Glyph ids, in the subset's order (each one's index is its CID). */
  glyphs: number[];
  includeGlyph(id: number): number;
  encodeStream(): NodeJS.EventEmitter;
  /** TrueType only: copies a glyph's outline into `glyf` and moves `offset` past it. */
  _addGlyph?(id: number): number;
  glyf?: Uint8Array[];
  offset?: number;
}

/**
 * Pads each glyph a TrueType subset copies to a multiple of 4 bytes, as the format asks. fontkit
 * copies outlines as they are and then writes the short `loca` format (offsets halved) whenever
 * the subset is small enough: a font whose glyphs have odd lengths (Inter as Google Fonts ships it,
 * many fontmake builds) got every glyph after the first odd one read from the wrong byte, and
 * drawn blank or broken. fontkit fixed this upstream (foliojs/fontkit#191); @pdf-lib/fontkit 1.1.1
 * predates it.
 */
function padGlyphs(subset: FontkitSubset, cff: boolean): void {
  if (cff) return; // a CFF font has no glyf table
  // fontkit is pinned (fonts.ts): a version without this would draw such fonts blank again
  if (!subset._addGlyph) throw new Error('@pdf-lib/fontkit has no TTFSubset._addGlyph: see padGlyphs in embed.ts');
  const add = subset._addGlyph.bind(subset);
  subset._addGlyph = (id) => {
    const index = add(id);
    const glyph = subset.glyf![index];
    const pad = (4 - (glyph.length % 4)) % 4;
    if (pad) {
      // fontkit's own Buffer class: its stream takes no other
      const padded = (glyph.constructor as typeof Buffer).alloc(glyph.length + pad);
      padded.set(glyph);
      subset.glyf![index] = padded;
      subset.offset! += pad;
    }
    return index;
  };
}

async function makeSubset(
  face: FontFace,
  ids: number[],
  glyphs: Map<number, readonly number[]>,
  key: string,
): Promise<Subset> {
  // a view of the face of its own: subsetting creates glyphs (composite glyphs' parts) in it
  const font = embeddingFontkit.create(face.bytes) as Font & { cff?: unknown };
  const subset = (font as unknown as { createSubset(): FontkitSubset }).createSubset();
  padGlyphs(subset, Boolean(font.cff));
  for (const id of ids) subset.includeGlyph(id);
  const program = await new Promise<Uint8Array>((resolve, reject) => {
    const parts: Uint8Array[] = [];
    subset
      .encodeStream()
      .on('data', (bytes: Uint8Array) => parts.push(bytes))
      .on('end', () => resolve(Buffer.concat(parts)))
      .on('error', reject);
  });
  // after encoding, the subset's glyphs include the parts of its composite glyphs, in CID order
  const cids = new Map(subset.glyphs.map((id, cid) => [id, cid]));
  const widths = subset.glyphs.map((id) => advance(face, id));
  const drawn = ids.map((id) => ({ id, codePoints: [...glyphs.get(id)!] }) as unknown as Glyph);
  const cmap = createCmap(drawn, (g) => (g ? cids.get(g.id)! : -1));
  const bytes = new Map([...cids].map(([id, cid]) => [id, literalByte(cid >> 8) + literalByte(cid & 0xff)]));
  const tag = [...createHash('sha256').update(key).digest().subarray(0, 6)]
    .map((b) => String.fromCharCode(65 + (b % 26)))
    .join('');
  return {
    name: `${tag}+${font.postscriptName || 'Font'}`,
    cff: Boolean(font.cff),
    program: deflate(program),
    toUnicode: deflate(Buffer.from(cmap, 'latin1')),
    widths: [0, widths],
    cids: bytes,
  };
}

/**
 * A byte inside a PDF literal string, as a character of a latin1 string: escaped where the string's
 * syntax would read it otherwise (its parentheses and backslash, and line ends, which a reader
 * may turn into another line end).
 */
function literalByte(b: number): string {
  switch (b) {
    case 0x28:
      return '\\(';
    case 0x29:
      return '\\)';
    case 0x5c:
      return '\\\\';
    case 0x0a:
      return '\\n';
    case 0x0d:
      return '\\r';
    default:
      return String.fromCharCode(b);
  }
}

/** Writes a subset's objects into a document: its Type0 font, as pdf-lib writes one. */
function register(doc: PDFDocument, face: FontFace, subset: Subset): PDFRef {
  const ctx = doc.context;
  const { font, scale } = face;
  const program = ctx.register(
    ctx.stream(subset.program, {
      Filter: 'FlateDecode',
      ...(subset.cff ? { Subtype: 'CIDFontType0C' } : {}),
    }),
  );
  const { minX, minY, maxX, maxY } = font.bbox;
  const descriptor = ctx.register(
    ctx.obj({
      Type: 'FontDescriptor',
      FontName: subset.name,
      Flags: deriveFontFlags(font),
      FontBBox: [minX * scale, minY * scale, maxX * scale, maxY * scale],
      ItalicAngle: font.italicAngle,
      Ascent: font.ascent * scale,
      Descent: font.descent * scale,
      CapHeight: (font.capHeight || font.ascent) * scale,
      XHeight: (font.xHeight || 0) * scale,
      StemV: 0,
      [subset.cff ? 'FontFile3' : 'FontFile2']: program,
    }),
  );
  const cidFont = ctx.register(
    ctx.obj({
      Type: 'Font',
      Subtype: subset.cff ? 'CIDFontType0' : 'CIDFontType2',
      CIDToGIDMap: 'Identity',
      BaseFont: subset.name,
      CIDSystemInfo: { Registry: PDFString.of('Adobe'), Ordering: PDFString.of('Identity'), Supplement: 0 },
      FontDescriptor: descriptor,
      W: subset.widths,
    }),
  );
  const toUnicode = ctx.register(ctx.stream(subset.toUnicode, { Filter: 'FlateDecode' }));
  return ctx.register(
    ctx.obj({
      Type: 'Font',
      Subtype: 'Type0',
      BaseFont: subset.name,
      Encoding: 'Identity-H',
      DescendantFonts: [cidFont],
      ToUnicode: toUnicode,
    }),
  );
}
