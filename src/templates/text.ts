/**
 * Line breaking: styled text fragments in, positioned lines out. Breaks at spaces; a word that does
 * not fit at the end of a line breaks with a hyphen at a soft hyphen (U+00AD, never drawn) or,
 * with hyphenation on, where its language's patterns allow; a word longer than the line is cut
 * between characters; every character is drawn by the first face of its style's chain that has
 * it, and a character none has is an UnsupportedCharacterError naming where it came from.
 */
import { SourceLocation, UnsupportedCharacterError } from '../errors';
import { FontFace, FontSet, hasGlyph, measure } from './fonts';
import { SOFT_HYPHEN, type Hyphenate } from './hyphenate';
import type { Align, Tag, TextStyle } from './model';

/** Where a piece of text came from, for error messages. */
export type Source = { variable: string } | { location: SourceLocation };

export type Fragment = { text: string; style: TextStyle; source: Source } | { br: true };

export interface Piece {
  text: string;
  face: FontFace;
  style: TextStyle;
  width: number;
}

interface Word {
  /** Shared between occurrences of a word (see shaped): never changed in place. */
  pieces: readonly Piece[];
  /** The pieces' text, joined. */
  text: string;
  /** Offsets in `text` of the soft hyphens written in it (removed from the text). */
  soft?: number[];
  width: number;
  /** Width of the space before this word (0 at the start of a line or after a break). */
  glue: number;
  glueStyle?: TextStyle;
  glueFace?: FontFace;
}

export interface Line {
  words: Word[];
  width: number;
  ascent: number;
  descent: number;
  height: number;
  /** Ends a paragraph or a <br/>: not stretched when justifying. */
  last: boolean;
}

function splitByFace(text: string, style: TextStyle, fonts: FontSet, source: Source): Piece[] {
  const chain = fonts.chain(style);
  const out: Piece[] = [];
  let current: FontFace | undefined;
  // the run drawn by `current` starts here; runs are cut out of `text`, not built a character at a
  // time (this runs for every word of every document)
  let start = 0;
  const push = (end: number) => {
    if (current && end > start) {
      const run = text.slice(start, end);
      out.push({ text: run, face: current, style, width: measure(current, run, style.size) });
    }
  };
  for (let i = 0; i < text.length;) {
    const cp = text.codePointAt(i)!;
    let face = chain[0];
    if (!hasGlyph(face, cp)) {
      const alt = chain.find((f) => hasGlyph(f, cp));
      if (!alt) {
        throw new UnsupportedCharacterError(String.fromCodePoint(cp), {
          ...('variable' in source ? { variable: source.variable } : { location: source.location }),
          font: chain.map((f) => f.label).join(', '),
        });
      }
      face = alt;
    }
    if (face !== current) {
      push(i);
      current = face;
      start = i;
    }
    i += cp > 0xffff ? 2 : 1;
  }
  push(text.length);
  return out;
}

/** A word's text, pieces and width in one style: the same for every occurrence of the word. */
interface Shaped {
  text: string;
  pieces: readonly Piece[];
  width: number;
}

/** Words a table holds before it is emptied: a long-running thread sees every recipient's words. */
const MAX_SHAPED = 4096;
/** Slots a table starts with (a power of two; it doubles when half full, up to twice MAX_SHAPED). */
const FIRST_SLOTS = 32;

/**
 * The words shaped in one face chain, found by their characters where they stand in the text: a
 * word met before is neither cut out of its text nor hashed again (the tokenizer hashes it as it
 * reads it), and nothing is made for it but its place on a line. Open addressing, linear probing;
 * a table grows with the words it holds (a heading's style holds a few, a body's thousands). A full
 * one holds about 1 MB (4,096 words, their pieces and strings); there is one per style of each
 * compiled template a thread keeps (worker.ts), and most hold a few dozen words.
 */
class ShapedWords {
  private hashes = new Int32Array(FIRST_SLOTS);
  private words: (Shaped | undefined)[] = new Array<Shaped | undefined>(FIRST_SLOTS).fill(undefined);
  private size = 0;

  /** The word `all[start, end)` with hash `hash`, if shaped before. */
  find(all: string, start: number, end: number, hash: number): Shaped | undefined {
    const len = end - start;
    const mask = this.words.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const w = this.words[slot];
      if (w === undefined) return undefined;
      if (this.hashes[slot] !== hash || w.text.length !== len) continue;
      let k = 0;
      while (k < len && w.text.charCodeAt(k) === all.charCodeAt(start + k)) k++;
      if (k === len) return w;
    }
  }

  add(word: Shaped, hash: number): Shaped {
    if (this.size >= MAX_SHAPED) {
      this.words.fill(undefined);
      this.size = 0;
    } else if (2 * (this.size + 1) > this.words.length) {
      const old = this.words;
      const oldHashes = this.hashes;
      this.words = new Array<Shaped | undefined>(old.length * 2).fill(undefined);
      this.hashes = new Int32Array(old.length * 2);
      for (let i = 0; i < old.length; i++) if (old[i]) this.put(old[i]!, oldHashes[i]);
    }
    this.put(word, hash);
    this.size++;
    return word;
  }

  private put(word: Shaped, hash: number): void {
    const mask = this.words.length - 1;
    let slot = hash & mask;
    while (this.words[slot] !== undefined) slot = (slot + 1) & mask;
    this.words[slot] = word;
    this.hashes[slot] = hash;
  }
}

/** FNV-1a over UTF-16 code units, one step: what the tokenizer folds each character of a word into. */
const FNV_START = 0x811c9dc5 | 0;
function fnv(hash: number, c: number): number {
  return Math.imul(hash ^ c, 16777619);
}

function hashOf(text: string): number {
  let hash = FNV_START;
  for (let k = 0; k < text.length; k++) hash = fnv(hash, text.charCodeAt(k));
  return hash;
}

/**
 * Tables per face chain. A chain is made once per style and font set (FontSet.chain), so a shaped
 * word's pieces, which carry the style, are shared by every occurrence of the word in that style.
 */
const shapedByChain = new WeakMap<readonly FontFace[], ShapedWords>();

function shapedWords(style: TextStyle, fonts: FontSet): ShapedWords {
  const chain = fonts.chain(style);
  let table = shapedByChain.get(chain);
  if (!table) {
    table = new ShapedWords();
    shapedByChain.set(chain, table);
  }
  return table;
}

/** The word `all[start, end)` in a style, shaped once per table. */
function shaped(
  table: ShapedWords,
  all: string,
  start: number,
  end: number,
  hash: number,
  style: TextStyle,
  fonts: FontSet,
  source: Source,
): Shaped {
  const known = table.find(all, start, end, hash);
  if (known) return known;
  const text = all.slice(start, end);
  const pieces = splitByFace(text, style, fonts, source);
  let width = 0;
  for (const p of pieces) width += p.width;
  return table.add({ text, pieces, width }, hash);
}

/** A word's text without its soft hyphens, and the offsets in that text where they stood. */
function withoutSoftHyphens(raw: string): { text: string; soft: number[] } {
  const soft: number[] = [];
  const parts = raw.split(SOFT_HYPHEN);
  for (const part of parts.slice(0, -1)) soft.push((soft.length ? soft[soft.length - 1] : 0) + part.length);
  return { text: parts.join(''), soft };
}

const SOFT_HYPHEN_CODE = SOFT_HYPHEN.charCodeAt(0);

/** Spaces that separate words (a newline, 10, ends a line; every other character is part of a word). */
function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 13 || c === 12 || c === 11;
}

/**
 * Breaks fragments into lines no wider than maxWidth. `fallback` sizes empty lines; `hyphenate`
 * (the paragraph's language, when hyphenation is on) finds where words may break.
 */
export function breakLines(
  fragments: Fragment[],
  maxWidth: number,
  fonts: FontSet,
  lineHeight: number,
  fallback: TextStyle,
  hyphenate?: Hyphenate,
): Line[] {
  const lines: Line[] = [];
  let words: Word[] = [];
  let width = 0;
  let word: Word | undefined;
  let pendingGlue: { style: TextStyle; face: FontFace; width: number } | undefined;
  let lastStyle = fallback;

  // lines in a row that ended in a hyphen: a third one is not hyphenated by the patterns (soft
  // hyphens still break), and neither is a line already full to within two spaces
  let hyphens = 0;
  const endLine = (last: boolean, hyphenEnd = false) => {
    hyphens = hyphenEnd ? hyphens + 1 : 0;
    let ascent = 0;
    let descent = 0;
    let size = 0;
    for (const w of words) {
      for (const p of w.pieces) {
        ascent = Math.max(ascent, p.face.ascent * p.style.size);
        descent = Math.max(descent, p.face.descent * p.style.size);
        size = Math.max(size, p.style.size);
      }
    }
    if (size === 0) {
      const face = fonts.face(lastStyle.family, lastStyle.bold, lastStyle.italic);
      size = lastStyle.size;
      ascent = face.ascent * size;
      descent = face.descent * size;
    }
    lines.push({ words, width, ascent, descent, height: Math.max(size * lineHeight, ascent + descent), last });
    words = [];
    width = 0;
  };

  const breakAfter = (split: { head: Word; tail: Word }) => {
    words.push(split.head);
    width += split.head.glue + split.head.width;
    endLine(false, true);
    place(split.tail);
  };
  const place = (w: Word): void => {
    if (words.length > 0 && width + w.glue + w.width > maxWidth + 0.01) {
      const room = maxWidth - width - w.glue;
      const patterns = hyphens < 2 && room >= 2 * w.glue ? hyphenate : undefined;
      const split = hyphenated(w, room, patterns);
      if (split) return breakAfter(split);
      endLine(false);
    }
    if (words.length === 0) w.glue = 0;
    if (w.width > maxWidth + 0.01) {
      // longer than a whole line: at a hyphenation point if one fits, else between characters
      const split = hyphenated(w, maxWidth, hyphenate);
      if (split) return breakAfter(split);
      for (const part of cutWord(w, maxWidth, width === 0 ? maxWidth : maxWidth - width - w.glue)) {
        if (words.length > 0 && width + part.glue + part.width > maxWidth + 0.01) endLine(false);
        if (words.length === 0) part.glue = 0;
        words.push(part);
        width += part.glue + part.width;
      }
      return;
    }
    words.push(w);
    width += w.glue + w.width;
  };

  const finishWord = () => {
    if (word) place(word);
    word = undefined;
  };

  for (const frag of fragments) {
    if ('br' in frag) {
      finishWord();
      pendingGlue = undefined;
      endLine(true);
      continue;
    }
    lastStyle = frag.style;
    let glue: typeof pendingGlue;
    const all = frag.text;
    let table: ShapedWords | undefined;
    for (let i = 0; i < all.length;) {
      const c = all.charCodeAt(i);
      if (c === 10) {
        finishWord();
        pendingGlue = undefined;
        endLine(true);
        i++;
      } else if (isSpace(c)) {
        finishWord();
        // a space in the style's own face (the first of its chain), made once per fragment
        if (!glue) {
          const face = fonts.chain(frag.style)[0];
          glue = { style: frag.style, face, width: measure(face, ' ', frag.style.size) };
        }
        pendingGlue = glue;
        while (i < all.length && isSpace(all.charCodeAt(i))) i++;
      } else {
        // the word's end, its hash and whether it has soft hyphens, in one pass over it
        let end = i;
        let hash = FNV_START;
        let hasSoft = false;
        for (; end < all.length; end++) {
          const d = all.charCodeAt(end);
          if (d === 10 || isSpace(d)) break;
          if (d === SOFT_HYPHEN_CODE) hasSoft = true;
          hash = fnv(hash, d);
        }
        table ??= shapedWords(frag.style, fonts);
        let s: Shaped;
        let soft: number[] | undefined;
        if (hasSoft) {
          // soft hyphens are places to break, not characters: the word is shaped without them
          let text: string;
          ({ text, soft } = withoutSoftHyphens(all.slice(i, end)));
          i = end;
          if (!text) continue;
          s = shaped(table, text, 0, text.length, hashOf(text), frag.style, fonts, frag.source);
        } else {
          s = shaped(table, all, i, end, hash, frag.style, fonts, frag.source);
          i = end;
        }
        const { pieces, width: w, text } = s;
        if (!word) {
          // the shaped word's pieces, shared until a piece of another fragment joins them
          word = {
            pieces,
            text,
            soft,
            width: w,
            glue: pendingGlue?.width ?? 0,
            glueStyle: pendingGlue?.style,
            glueFace: pendingGlue?.face,
          };
          pendingGlue = undefined;
          continue;
        }
        if (soft) {
          const at = word.text.length;
          (word.soft ??= []).push(...soft.map((o) => o + at));
        }
        word.pieces = [...word.pieces, ...pieces];
        word.text += text;
        word.width += w;
      }
    }
  }
  finishWord();
  if (words.length > 0) endLine(true);
  else if (lines.length > 0) {
    // a trailing <br/> or newline ends the text; it does not add an empty line
    lines[lines.length - 1].last = true;
  }
  return lines;
}

const HYPHEN = 0x2d;

/**
 * The word broken at its last soft hyphen or hyphenation point whose first part, with a hyphen
 * drawn after it, fits in `room`; undefined when none does.
 */
function hyphenated(w: Word, room: number, hyphenate?: Hyphenate): { head: Word; tail: Word } | undefined {
  if (!w.soft && !hyphenate) return undefined;
  const found = hyphenate?.(w.text) ?? [];
  if (!w.soft && found.length === 0) return undefined;
  const points = [...new Set([...(w.soft ?? []), ...found])]
    .filter((p) => p > 0 && p < w.text.length)
    .sort((a, b) => b - a);
  // a word of one piece (most are): each point's first part measured alone, the word split once
  const only = w.pieces.length === 1 ? w.pieces[0] : undefined;
  if (only && !hasGlyph(only.face, HYPHEN)) return undefined;
  for (const at of points) {
    if (only && w.glue + measure(only.face, `${only.text.slice(0, at)}-`, only.style.size) > room + 0.01) continue;
    const split = splitWord(w, at);
    if (split && split.head.glue + split.head.width <= room + 0.01) return split;
  }
  return undefined;
}

/** A word being made of new pieces. */
type NewWord = Word & { pieces: Piece[] };

/** A word of no pieces yet; every word has its fields in this order (one shape for V8). */
function newWord(text: string, glue: number, glueStyle?: TextStyle, glueFace?: FontFace): NewWord {
  return { pieces: [], text, soft: undefined, width: 0, glue, glueStyle, glueFace };
}

/** Another text of a piece's face and style, measured. */
function pieceOf(p: Piece, text: string): Piece {
  return { text, face: p.face, style: p.style, width: measure(p.face, text, p.style.size) };
}

/** A word cut at `at` (UTF-16 offset), a hyphen added to the first part in its last piece's face. */
function splitWord(w: Word, at: number): { head: Word; tail: Word } | undefined {
  const head = newWord(w.text.slice(0, at), w.glue, w.glueStyle, w.glueFace);
  const tail = newWord(w.text.slice(at), 0);
  tail.soft = w.soft?.filter((o) => o > at).map((o) => o - at);
  let start = 0;
  for (const p of w.pieces) {
    const end = start + p.text.length;
    if (end <= at) head.pieces.push(p);
    else if (start >= at) tail.pieces.push(p);
    else {
      const before = p.text.slice(0, at - start);
      const after = p.text.slice(at - start);
      head.pieces.push(pieceOf(p, before));
      tail.pieces.push(pieceOf(p, after));
    }
    start = end;
  }
  const last = head.pieces[head.pieces.length - 1];
  // an ordinary hyphen, part of the text, as word processors and browsers write it
  if (!last || !hasGlyph(last.face, HYPHEN)) return undefined;
  const text = `${last.text}-`;
  head.pieces[head.pieces.length - 1] = pieceOf(last, text);
  head.width = head.pieces.reduce((s, p) => s + p.width, 0);
  tail.width = tail.pieces.reduce((s, p) => s + p.width, 0);
  return { head, tail };
}

/** Cuts a word too long for any line into parts, character by character. */
function cutWord(w: Word, maxWidth: number, firstWidth: number): Word[] {
  const parts: Word[] = [];
  let cur = newWord('', w.glue, w.glueStyle, w.glueFace);
  let limit = firstWidth > 0 ? firstWidth : maxWidth;
  for (const piece of w.pieces) {
    let buf = '';
    for (const ch of piece.text) {
      const next = buf + ch;
      const nextWidth = measure(piece.face, next, piece.style.size);
      if (cur.width + nextWidth > limit + 0.01 && (buf || cur.pieces.length)) {
        if (buf) {
          const part = pieceOf(piece, buf);
          cur.pieces.push(part);
          cur.width += part.width;
        }
        parts.push(cur);
        cur = newWord('', 0);
        limit = maxWidth;
        buf = ch;
      } else buf = next;
    }
    if (buf) {
      const part = pieceOf(piece, buf);
      cur.pieces.push(part);
      cur.width += part.width;
    }
  }
  if (cur.pieces.length) parts.push(cur);
  return parts;
}

export interface TextOp {
  kind: 'text';
  x: number;
  /** Baseline, measured down from the top of the page. */
  y: number;
  text: string;
  face: FontFace;
  size: number;
  color: TextStyle['color'];
  underline: boolean;
  width: number;
  /** Drawn fully transparent: alternative text that readers and extractors find, eyes do not. */
  invisible?: boolean;
  /** Where it belongs in a tagged PDF, set by the layout (layout.ts); made with the op, so that every op has one shape. */
  tag?: Tag;
}

function sameRun(a: TextOp, p: Piece): boolean {
  return a.face === p.face && a.size === p.style.size && a.underline === p.style.underline && a.color === p.style.color;
}

/** Where a line's ops go: a page's list of ops, or a list of the line's own. */
export interface OpList {
  readonly length: number;
  push(op: TextOp): number;
  readonly [i: number]: object;
}

/**
 * Positions a line's text. `top` is the top of the line box. Adds one op per run of equal style to
 * `ops`, after what it holds.
 */
export function drawLine(line: Line, left: number, top: number, maxWidth: number, align: Align, ops: OpList): void {
  const baseline = top + (line.height - (line.ascent + line.descent)) / 2 + line.ascent;
  const free = Math.max(0, maxWidth - line.width);
  const justify = align === 'justify' && !line.last && line.words.length > 1;
  const stretch = justify ? free / (line.words.length - 1) : 0;
  let x = left + (align === 'right' ? free : align === 'center' ? free / 2 : 0);
  // this line's ops start here: only they are joined into
  const first = ops.length;
  const lastOp = () => (ops.length > first ? (ops[ops.length - 1] as TextOp) : undefined);
  for (let i = 0; i < line.words.length; i++) {
    const w = line.words[i];
    const prev = lastOp();
    if (i > 0) {
      const head = w.pieces[0];
      // Keep the space inside the previous run when nothing changes, so text extracts with its spaces.
      if (
        !justify &&
        prev &&
        head &&
        sameRun(prev, head) &&
        w.glueFace === prev.face &&
        w.glueStyle?.size === prev.size
      ) {
        prev.text += ' ';
        prev.width += w.glue;
      }
      x += w.glue + stretch;
    }
    for (const p of w.pieces) {
      const last = lastOp();
      if (last && sameRun(last, p) && Math.abs(last.x + last.width - x) < 0.01) {
        last.text += p.text;
        last.width += p.width;
      } else {
        ops.push({
          kind: 'text',
          x,
          y: baseline,
          text: p.text,
          face: p.face,
          size: p.style.size,
          color: p.style.color,
          underline: p.style.underline,
          width: p.width,
          tag: undefined,
        });
      }
      x += p.width;
    }
  }
}
