/**
 * Fonts: the built-in DejaVu families (Latin, Latin Extended, Greek, Cyrillic and more), fonts
 * shipped with a template, text measurement, and the glyph fallback that turns an uncovered
 * character into a clear error.
 *
 * Each face is parsed once for measuring text. Documents embed from the bytes with their own
 * fontkit instance: a parsed font caches glyph objects with the code points they were first
 * created for, and a glyph first met as part of another (the "o" in "ó") has none, which would
 * leave it out of a later document's text layer if the parsed font were shared.
 */
import fs from 'node:fs';
import path from 'node:path';
import fontkit from '@pdf-lib/fontkit';
import type { Fontkit, Font } from 'pdf-lib/cjs/types/fontkit';

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

/** The fontkit pdf-lib embeds fonts with. */
export const embeddingFontkit: Fontkit = fontkit;
let faceCounter = 0;

/** Parses font bytes into a face. Throws an Error when the bytes are not a TrueType/OpenType font. */
export function createFace(bytes: Uint8Array, label: string): FontFace {
  let font: Font;
  try {
    font = embeddingFontkit.create(bytes);
    // A font without a usable character map cannot be drawn from text; find out now, not mid-render.
    if (!font || typeof font.layout !== 'function' || !font.unitsPerEm) throw new Error('no font tables');
    font.hasGlyphForCodePoint(65);
    font.layout('Aa');
  } catch (err) {
    throw new Error(`is not a usable TrueType or OpenType font (${err instanceof Error ? err.message : String(err)})`);
  }
  const scale = 1000 / font.unitsPerEm;
  return {
    key: `f${++faceCounter}`,
    label,
    bytes,
    font,
    scale,
    ascent: (font.ascent * scale) / 1000,
    descent: (Math.abs(font.descent) * scale) / 1000,
    widths: new Map(),
  };
}

/** Width of `text` in points at `size`, the same sum of glyph advances pdf-lib draws with. */
export function measure(face: FontFace, text: string, size: number): number {
  let w = face.widths.get(text);
  if (w === undefined) {
    w = 0;
    const { glyphs } = face.font.layout(text);
    for (const g of glyphs) w += g.advanceWidth * face.scale;
    if (face.widths.size > 50_000) face.widths.clear();
    face.widths.set(text, w);
  }
  return (w * size) / 1000;
}

export function hasGlyph(face: FontFace, codePoint: number): boolean {
  return face.font.hasGlyphForCodePoint(codePoint);
}

// ---------------------------------------------------------------------------------------------
// Built-in families

const dejavuDir = path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf');

const BUILTIN_FILES: Record<string, [string, string, string, string]> = {
  sans: ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf', 'DejaVuSans-Oblique.ttf', 'DejaVuSans-BoldOblique.ttf'],
  serif: ['DejaVuSerif.ttf', 'DejaVuSerif-Bold.ttf', 'DejaVuSerif-Italic.ttf', 'DejaVuSerif-BoldItalic.ttf'],
  mono: ['DejaVuSansMono.ttf', 'DejaVuSansMono-Bold.ttf', 'DejaVuSansMono-Oblique.ttf', 'DejaVuSansMono-BoldOblique.ttf'],
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

export const BUILTIN_FAMILY_NAMES = [...BUILTINS.keys()];

/** The fonts a template can use: the built-in families plus the template's own. */
export class FontSet {
  private readonly custom = new Map<string, FontFamily>();

  add(family: FontFamily): void {
    this.custom.set(family.name.toLowerCase(), family);
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

  /** Faces to try, in order, for a character: the style's own face, then built-in sans in the same style. */
  chain(family: string, bold: boolean, italic: boolean): FontFace[] {
    const own = this.face(family, bold, italic);
    const sans = BUILTINS.get('sans')!;
    const fallback = bold && italic ? sans.boldItalic : bold ? sans.bold : italic ? sans.italic : sans.regular;
    return own === fallback ? [own] : [own, fallback];
  }
}

/** The built-in sans face in a given style (used by fillable-PDF templates). */
export function builtinSans(bold = false, italic = false): FontFace {
  return new FontSet().face('sans', bold, italic);
}
