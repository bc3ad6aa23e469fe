/**
 * Fonts: the built-in DejaVu families (Latin, Latin Extended, Greek, Cyrillic and more), fonts
 * shipped with a template, text measurement, and the glyph fallback that turns an uncovered
 * character into a clear error.
 *
 * Each face is parsed once for measuring text, and once more as the base of views: objects that
 * share the base's decoded tables (the costly part: cmap, hmtx, GSUB, GPOS) but have a glyph cache
 * and layout engine of their own. A parsed font caches glyph objects with the code points they
 * were first created for, and subsetting creates composite-part glyphs with none (the "o" in "ó"):
 * a font that texts are laid out with and subsets are made with would lose characters from later
 * text layers. So texts are laid out through one view per face (glyphRun), and each subset is made
 * with a view of its own (embed.ts; a fillable PDF embeds through pdf-lib, one view per document).
 * This relies on fontkit's internals (`_glyphs`, tables decoded into `_tables`), so
 * @pdf-lib/fontkit is pinned to an exact version and test/templates/fonts-shared.test.ts renders
 * many documents, one after another and concurrently, and checks every text layer.
 */
import fs from 'node:fs';
import path from 'node:path';
import fontkit from '@pdf-lib/fontkit';
import type { Fontkit, Font, TypeFeatures } from 'pdf-lib/cjs/types/fontkit';

export interface FontFace {
  /** Unique for the life of the process; keys per-document embedding and width caches. */
  key: string;
  /** Human name, e.g. `sans bold`. */
  label: string;
  bytes: Uint8Array;
  font: Font;
  /** Font units to 1/1000 em. */
  scale: number;
  ascent: number;
  descent: number;
  widths: Map<string, number>;
}

export interface FontFamily {
  name: string;
  regular: FontFace;
  bold?: FontFace;
  italic?: FontFace;
  boldItalic?: FontFace;
}

/**
 * Glyph positioning (GPOS: kerning, mark placement) is switched off when laying text out: pdf-lib
 * draws glyphs at their advance widths and never uses positions, and text is measured the same
 * way, so positioning is work with no effect. Substitution (GSUB: ligatures, contextual forms)
 * stays on: it chooses the glyphs.
 */
export const LAYOUT_FEATURES: TypeFeatures = {
  kern: false,
  mark: false,
  mkmk: false,
  dist: false,
  abvm: false,
  blwm: false,
  curs: false,
};

const facesByBytes = new WeakMap<Uint8Array, FontFace>();
const embedBases = new WeakMap<FontFace, Font>();
/** Laid-out text of a face, by text: what each document's view of the face reuses. */
interface GlyphRuns {
  byText: Map<string, { id: number; codePoints: number[] }[]>;
  /** Glyphs held in all runs: about 80 bytes each. */
  glyphs: number;
}
/**
 * Glyphs a face's runs may hold (about 2 MB) before they are dropped and laid out again: every
 * document with other values adds its own lines (a recipient's name), so a count of lines would
 * let a long-running render thread grow by its lines' lengths. A template's own lines are a few
 * thousand glyphs: laid out again once per some hundred documents, which costs nothing measurable,
 * where 100,000 glyphs per face held ~20 MB more at the bench's peak with two render threads.
 */
const MAX_RUN_GLYPHS = 20_000;
const runsOfFace = new WeakMap<FontFace, GlyphRuns>();

function glyphRuns(face: FontFace): GlyphRuns {
  let runs = runsOfFace.get(face);
  if (!runs) {
    runs = { byText: new Map(), glyphs: 0 };
    runsOfFace.set(face, runs);
  }
  return runs;
}

/**
 * The fontkit pdf-lib embeds fonts with: for a face's own bytes, a fresh view of the face's base
 * font (shared decoded tables, a glyph cache and layout engine of its own); other bytes are parsed.
 */
export const embeddingFontkit: Fontkit = {
  create(bytes: Uint8Array): Font {
    const face = facesByBytes.get(bytes);
    if (!face) return fontkit.create(bytes);
    let base = embedBases.get(face);
    if (!base) {
      base = fontkit.create(bytes);
      embedBases.set(face, base);
    }
    const view = Object.create(base) as Font & { _glyphs: Record<number, unknown> };
    view._glyphs = {};
    view.layout = layoutOnce(view, base, glyphRuns(face));
    return view;
  },
};

/**
 * A view's layout: the glyphs a text lays out to are the same in every document, so laid out once
 * per face. Made here and not as a function literal assigned to `view.layout`: V8 allocates those
 * in the old generation, where it would keep the view and its glyphs past young-generation GCs
 * (see release.ts).
 */
function layoutOnce(view: Font, base: Font, runs: GlyphRuns): Font['layout'] {
  return (text: string, features?: TypeFeatures | (keyof TypeFeatures)[]) => {
    const run = runs.byText.get(text);
    if (run) return { glyphs: run.map((g) => view.getGlyph(g.id, g.codePoints)) } as ReturnType<Font['layout']>;
    const laid = base.layout.call(view, text, features);
    if (runs.glyphs + laid.glyphs.length > MAX_RUN_GLYPHS) {
      runs.byText.clear();
      runs.glyphs = 0;
    }
    runs.byText.set(
      text,
      laid.glyphs.map((g) => ({ id: g.id, codePoints: [...g.codePoints] })),
    );
    runs.glyphs += laid.glyphs.length;
    return laid;
  };
}

/** A glyph a text lays out to, and the characters it stands for. */
export interface RunGlyph {
  id: number;
  codePoints: number[];
}

const layoutViews = new WeakMap<FontFace, Font>();

/**
 * The glyphs `text` lays out to in `face`, laid out once per face and text (through a view of the
 * face kept for laying out: no document's subset is made with it).
 */
export function glyphRun(face: FontFace, text: string): readonly RunGlyph[] {
  const runs = glyphRuns(face);
  let run = runs.byText.get(text);
  if (!run) {
    let view = layoutViews.get(face);
    if (!view) {
      view = embeddingFontkit.create(face.bytes);
      layoutViews.set(face, view);
    }
    view.layout(text, LAYOUT_FEATURES); // laid out by layoutOnce, which keeps the run
    run = runs.byText.get(text)!;
  }
  return run;
}

let faceCounter = 0;

/** Parses font bytes into a face. Throws an Error when the bytes are not a TrueType/OpenType font. */
export function createFace(bytes: Uint8Array, label: string): FontFace {
  let font: Font;
  try {
    font = fontkit.create(bytes);
    // A font without a usable character map cannot be drawn from text; find out now, not mid-render.
    if (!font || typeof font.layout !== 'function' || !font.unitsPerEm) throw new Error('no font tables');
    font.hasGlyphForCodePoint(65);
    font.layout('Aa');
  } catch (err) {
    throw new Error(`is not a usable TrueType or OpenType font (${err instanceof Error ? err.message : String(err)})`);
  }
  const scale = 1000 / font.unitsPerEm;
  const face: FontFace = {
    key: `f${++faceCounter}`,
    label,
    bytes,
    font,
    scale,
    ascent: (font.ascent * scale) / 1000,
    descent: (Math.abs(font.descent) * scale) / 1000,
    widths: new Map(),
  };
  facesByBytes.set(bytes, face);
  return face;
}

const advances = new WeakMap<FontFace, Map<number, number>>();

/** A glyph's advance in 1/1000 em, read once per face and glyph. */
export function advance(face: FontFace, id: number): number {
  let known = advances.get(face);
  if (!known) {
    known = new Map();
    advances.set(face, known);
  }
  let a = known.get(id);
  if (a === undefined) {
    a = face.font.getGlyph(id).advanceWidth * face.scale;
    known.set(id, a);
  }
  return a;
}

/**
 * Width of `text` in points at `size`: the sum of the advances of the glyphs it is drawn with (its
 * glyph run, the same one embed.ts encodes it from, so a text is laid out once for both).
 */
export function measure(face: FontFace, text: string, size: number): number {
  let w = face.widths.get(text);
  if (w === undefined) {
    w = 0;
    for (const g of glyphRun(face, text)) w += advance(face, g.id);
    if (face.widths.size > 50_000) face.widths.clear();
    face.widths.set(text, w);
  }
  return (w * size) / 1000;
}

const coverage = new WeakMap<FontFace, Map<number, boolean>>();

/** Whether the face has a glyph for the character (remembered per face: it is asked for every character laid out). */
export function hasGlyph(face: FontFace, codePoint: number): boolean {
  let known = coverage.get(face);
  if (!known) {
    known = new Map();
    coverage.set(face, known);
  }
  let has = known.get(codePoint);
  if (has === undefined) {
    has = face.font.hasGlyphForCodePoint(codePoint);
    known.set(codePoint, has);
  }
  return has;
}

// ---------------------------------------------------------------------------------------------
// Built-in families

const dejavuDir = path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf');

const BUILTIN_FILES: Record<string, [string, string, string, string]> = {
  sans: ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf', 'DejaVuSans-Oblique.ttf', 'DejaVuSans-BoldOblique.ttf'],
  serif: ['DejaVuSerif.ttf', 'DejaVuSerif-Bold.ttf', 'DejaVuSerif-Italic.ttf', 'DejaVuSerif-BoldItalic.ttf'],
  mono: [
    'DejaVuSansMono.ttf',
    'DejaVuSansMono-Bold.ttf',
    'DejaVuSansMono-Oblique.ttf',
    'DejaVuSansMono-BoldOblique.ttf',
  ],
};

/** Other names people write for the built-in families. */
const BUILTIN_ALIASES: Record<string, string> = {
  'sans-serif': 'sans',
  helvetica: 'sans',
  arial: 'sans',
  dejavusans: 'sans',
  times: 'serif',
  'times new roman': 'serif',
  dejavuserif: 'serif',
  monospace: 'mono',
  courier: 'mono',
  dejavusansmono: 'mono',
};

const builtinFaces = new Map<string, FontFace>();

function builtinFace(file: string, label: string): FontFace {
  let face = builtinFaces.get(file);
  if (!face) {
    face = createFace(new Uint8Array(fs.readFileSync(path.join(dejavuDir, file))), label);
    builtinFaces.set(file, face);
  }
  return face;
}

/** A family of the built-in set, loaded lazily (a face is read from disk the first time it is used). */
class BuiltinFamily implements FontFamily {
  constructor(
    readonly name: string,
    private readonly files: [string, string, string, string],
  ) {}
  get regular() {
    return builtinFace(this.files[0], `${this.name}`);
  }
  get bold() {
    return builtinFace(this.files[1], `${this.name} bold`);
  }
  get italic() {
    return builtinFace(this.files[2], `${this.name} italic`);
  }
  get boldItalic() {
    return builtinFace(this.files[3], `${this.name} bold italic`);
  }
}

const BUILTINS = new Map(Object.entries(BUILTIN_FILES).map(([name, files]) => [name, new BuiltinFamily(name, files)]));

/** The fonts a template can use: the built-in families plus the template's own. */
export class FontSet {
  private readonly custom = new Map<string, FontFamily>();
  private chains = new WeakMap<object, FontFace[]>();

  add(family: FontFamily): void {
    this.custom.set(family.name.toLowerCase(), family);
    this.chains = new WeakMap();
  }

  /** The canonical family name for what a template wrote, or undefined if there is no such family. */
  resolveName(name: string): string | undefined {
    const n = name.trim().toLowerCase();
    if (this.custom.has(n)) return n;
    const builtin = BUILTIN_ALIASES[n] ?? n;
    return BUILTINS.has(builtin) ? builtin : undefined;
  }

  names(): string[] {
    return [...BUILTINS.keys(), ...this.custom.keys()];
  }

  family(name: string): FontFamily {
    const f = this.custom.get(name) ?? BUILTINS.get(name);
    if (!f) throw new Error(`unknown font family ${name}`);
    return f;
  }

  /** The face for a style, falling back to the family's regular face when it lacks bold or italic. */
  face(family: string, bold: boolean, italic: boolean): FontFace {
    const f = this.family(family);
    const pick = bold && italic ? f.boldItalic : bold ? f.bold : italic ? f.italic : f.regular;
    return pick ?? (bold ? f.bold : undefined) ?? (italic ? f.italic : undefined) ?? f.regular;
  }

  /**
   * Faces to try, in order, for a character: the style's own face, then built-in sans in the same
   * style. Made once per style object (it is asked for every word laid out).
   */
  chain(style: { family: string; bold: boolean; italic: boolean }): FontFace[] {
    let chain = this.chains.get(style);
    if (!chain) {
      const { family, bold, italic } = style;
      const own = this.face(family, bold, italic);
      const sans = BUILTINS.get('sans')!;
      const fallback = bold && italic ? sans.boldItalic : bold ? sans.bold : italic ? sans.italic : sans.regular;
      chain = own === fallback ? [own] : [own, fallback];
      this.chains.set(style, chain);
    }
    return chain;
  }
}

/** The built-in sans face in a given style (used by fillable-PDF templates). */
export function builtinSans(bold = false, italic = false): FontFace {
  return new FontSet().face('sans', bold, italic);
}
