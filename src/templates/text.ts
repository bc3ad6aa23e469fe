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
import type { Align, TextStyle } from './model';

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
  pieces: Piece[];
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

const SPLIT = /(\n)|([ \t\r\f\v]+)|([^ \t\r\f\v\n]+)/g;

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
    SPLIT.lastIndex = 0;
    for (let m = SPLIT.exec(frag.text); m; m = SPLIT.exec(frag.text)) {
      if (m[1]) {
        finishWord();
        pendingGlue = undefined;
        endLine(true);
      } else if (m[2]) {
        finishWord();
        // a space in the style's own face (the first of its chain), made once per fragment
        if (!glue) {
          const face = fonts.chain(frag.style)[0];
          glue = { style: frag.style, face, width: measure(face, ' ', frag.style.size) };
        }
        pendingGlue = glue;
      } else {
        let text = m[3];
        let soft: number[] | undefined;
        if (text.includes(SOFT_HYPHEN)) {
          soft = [];
          for (const part of text.split(SOFT_HYPHEN).slice(0, -1))
            soft.push((soft.length ? soft[soft.length - 1] : 0) + part.length);
          text = text.replaceAll(SOFT_HYPHEN, '');
          if (!text) continue;
        }
        const pieces = splitByFace(text, frag.style, fonts, frag.source);
        const w = pieces.reduce((s, p) => s + p.width, 0);
        if (!word) {
          word = {
            pieces: [],
            text: '',
            width: 0,
            glue: pendingGlue?.width ?? 0,
            glueStyle: pendingGlue?.style,
            glueFace: pendingGlue?.face,
          };
          pendingGlue = undefined;
        }
        if (soft) {
          const at = word.text.length;
          (word.soft ??= []).push(...soft.map((o) => o + at));
        }
        if (pieces.length === 1) word.pieces.push(pieces[0]);
        else word.pieces.push(...pieces);
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
  const points = [...new Set([...(w.soft ?? []), ...(hyphenate?.(w.text) ?? [])])]
    .filter((p) => p > 0 && p < w.text.length)
    .sort((a, b) => b - a);
  for (const at of points) {
    const split = splitWord(w, at);
    if (split && split.head.glue + split.head.width <= room + 0.01) return split;
  }
  return undefined;
}

/** A word cut at `at` (UTF-16 offset), a hyphen added to the first part in its last piece's face. */
function splitWord(w: Word, at: number): { head: Word; tail: Word } | undefined {
  const head: Word = { ...w, pieces: [], text: w.text.slice(0, at), soft: undefined, width: 0 };
  const tail: Word = { pieces: [], text: w.text.slice(at), width: 0, glue: 0 };
  tail.soft = w.soft?.filter((o) => o > at).map((o) => o - at);
  let start = 0;
  for (const p of w.pieces) {
    const end = start + p.text.length;
    if (end <= at) head.pieces.push(p);
    else if (start >= at) tail.pieces.push(p);
    else {
      const before = p.text.slice(0, at - start);
      const after = p.text.slice(at - start);
      head.pieces.push({ ...p, text: before, width: measure(p.face, before, p.style.size) });
      tail.pieces.push({ ...p, text: after, width: measure(p.face, after, p.style.size) });
    }
    start = end;
  }
  const last = head.pieces[head.pieces.length - 1];
  // an ordinary hyphen, part of the text, as word processors and browsers write it
  if (!last || !hasGlyph(last.face, HYPHEN)) return undefined;
  const text = `${last.text}-`;
  head.pieces[head.pieces.length - 1] = { ...last, text, width: measure(last.face, text, last.style.size) };
  head.width = head.pieces.reduce((s, p) => s + p.width, 0);
  tail.width = tail.pieces.reduce((s, p) => s + p.width, 0);
  return { head, tail };
}

/** Cuts a word too long for any line into parts, character by character. */
function cutWord(w: Word, maxWidth: number, firstWidth: number): Word[] {
  const parts: Word[] = [];
  let cur: Word = { pieces: [], text: '', width: 0, glue: w.glue, glueStyle: w.glueStyle, glueFace: w.glueFace };
  let limit = firstWidth > 0 ? firstWidth : maxWidth;
  for (const piece of w.pieces) {
    let buf = '';
    for (const ch of piece.text) {
      const next = buf + ch;
      const nextWidth = measure(piece.face, next, piece.style.size);
      if (cur.width + nextWidth > limit + 0.01 && (buf || cur.pieces.length)) {
        if (buf) {
          const bw = measure(piece.face, buf, piece.style.size);
          cur.pieces.push({ ...piece, text: buf, width: bw });
          cur.width += bw;
        }
        parts.push(cur);
        cur = { pieces: [], text: '', width: 0, glue: 0 };
        limit = maxWidth;
        buf = ch;
      } else buf = next;
    }
    if (buf) {
      const bw = measure(piece.face, buf, piece.style.size);
      cur.pieces.push({ ...piece, text: buf, width: bw });
      cur.width += bw;
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
}

function sameRun(a: TextOp, p: Piece): boolean {
  return a.face === p.face && a.size === p.style.size && a.underline === p.style.underline && a.color === p.style.color;
}

/** Positions a line's text. `top` is the top of the line box; returns one op per run of equal style. */
export function drawLine(line: Line, left: number, top: number, maxWidth: number, align: Align): TextOp[] {
  const baseline = top + (line.height - (line.ascent + line.descent)) / 2 + line.ascent;
  const free = Math.max(0, maxWidth - line.width);
  const justify = align === 'justify' && !line.last && line.words.length > 1;
  const stretch = justify ? free / (line.words.length - 1) : 0;
  let x = left + (align === 'right' ? free : align === 'center' ? free / 2 : 0);
  const ops: TextOp[] = [];
  for (let i = 0; i < line.words.length; i++) {
    const w = line.words[i];
    const prev = ops[ops.length - 1];
    if (i > 0) {
      const first = w.pieces[0];
      // Keep the space inside the previous run when nothing changes, so text extracts with its spaces.
      if (
        !justify &&
        prev &&
        first &&
        sameRun(prev, first) &&
        w.glueFace === prev.face &&
        w.glueStyle?.size === prev.size
      ) {
        prev.text += ' ';
        prev.width += w.glue;
      }
      x += w.glue + stretch;
    }
    for (const p of w.pieces) {
      const last = ops[ops.length - 1];
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
        });
      }
      x += p.width;
    }
  }
  return ops;
}
