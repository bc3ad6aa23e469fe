/**
 * Layout: binds values to a compiled template and flows its blocks onto pages. The result is a
 * list of pages, each a display list of text, lines, rectangles and images in page coordinates
 * (points, origin at the top-left). draw.ts turns it into a PDF.
 */
import { InvalidValueError, ValidationError } from '../errors';
import type { FontSet } from './fonts';
import type { ImageAsset } from './images';
import {
  isCond,
  isLoop,
  type Block,
  type BlockLeaf,
  type Cell,
  type Inline,
  type Ref,
  type Region,
  type Row,
  type RowNode,
  type Table,
  type TextStyle,
  type Token,
  type Tree,
  type XmlTemplate,
} from './model';
import { checkLimit } from './limits';
import { hyphenationFor } from './hyphenate';
import { breakLines, drawLine, type Fragment, type Line, type TextOp } from './text';
import type { Rgb } from './units';
import type { Align, RenderWarning, StructElem, Tag } from './model';

export type Op = (
  | TextOp
  | { kind: 'line'; x1: number; y1: number; x2: number; y2: number; thickness: number; color: Rgb }
  | { kind: 'rect'; x: number; y: number; width: number; height: number; fill?: Rgb; border?: Rgb; borderWidth: number }
  | { kind: 'image'; image: ImageAsset; x: number; y: number; width: number; height: number }
) & {
  /** Where it belongs in a tagged PDF: content of a structure element, or an artifact (untagged: an artifact). */
  tag?: Tag;
};

/** What an element says: its text and images; lines, rectangles (an underline, a cell's fill) are artifacts. */
function isContent(op: Op): boolean {
  return op.kind === 'text' || op.kind === 'image';
}

export interface PageLayout {
  width: number;
  height: number;
  ops: Op[];
}

/** The most items one list may hold; a guard against a value that would take minutes to lay out. */
export const MAX_LIST_ITEMS = 10_000;

// ---------------------------------------------------------------------------------------------
// Binding values

interface Bound {
  /** List items expanded so far in this document (shared by every scope of one render). */
  expanded: { n: number };
  values: Record<string, string>;
  items: Map<string, { value: unknown; label: string }>;
  page?: number;
  pages?: number;
  lists: Map<string, unknown[]>;
}

function lookup(ref: Ref, b: Bound): { value: unknown; label: string } {
  if (ref.t === 'var') return { value: b.values[ref.name], label: ref.name };
  const item = b.items.get(ref.alias)!;
  let value = item.value;
  let label = item.label;
  for (const key of ref.path) {
    label += `.${key}`;
    if (
      value === null ||
      typeof value !== 'object' ||
      Array.isArray(value) ||
      !Object.prototype.hasOwnProperty.call(value, key)
    ) {
      throw new InvalidValueError(label, `has no field "${key}". Give every list item the fields the template uses.`);
    }
    value = (value as Record<string, unknown>)[key];
  }
  return { value, label };
}

function asText(value: unknown, label: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new InvalidValueError(label, 'is a list or an object where text is expected.');
}

function resolveToken(t: Token, b: Bound): { text: string; variable?: string } {
  switch (t.t) {
    case 'lit':
      return { text: t.text };
    case 'page':
      return { text: String(b.page ?? '') };
    case 'pages':
      return { text: String(b.pages ?? '') };
    default: {
      const { value, label } = lookup(t, b);
      return { text: asText(value, label), variable: label };
    }
  }
}

export function resolveText(tokens: Token[], b: Bound): string {
  return tokens.map((t) => resolveToken(t, b).text).join('');
}

function truthy(ref: Ref, b: Bound): boolean {
  const { value } = lookup(ref, b);
  if (value === undefined || value === null || value === false) return false;
  if (typeof value === 'string') return value.trim() !== '';
  if (Array.isArray(value)) return value.length > 0;
  return true;
}

function listOf(ref: Ref, b: Bound): { items: unknown[]; label: string } {
  if (ref.t === 'var') {
    let list = b.lists.get(ref.name);
    if (!list) {
      const raw = b.values[ref.name] ?? '';
      let parsed: unknown;
      try {
        parsed = raw.trim() === '' ? [] : JSON.parse(raw);
      } catch {
        throw new InvalidValueError(
          ref.name,
          'must be a JSON array, like [{"description":"Design","amount":"400.00"}].',
        );
      }
      if (!Array.isArray(parsed))
        throw new InvalidValueError(
          ref.name,
          'must be a JSON array, like [{"description":"Design","amount":"400.00"}].',
        );
      list = parsed;
      b.lists.set(ref.name, list);
    }
    if (list.length > MAX_LIST_ITEMS)
      throw new InvalidValueError(ref.name, `has ${list.length} items; a list holds at most ${MAX_LIST_ITEMS}.`);
    return { items: list, label: ref.name };
  }
  const { value, label } = lookup(ref, b);
  if (!Array.isArray(value)) throw new InvalidValueError(label, 'must be a list.');
  return { items: value, label };
}

/** Expands `<if>` and `<each>` into the nodes they stand for. */
function expand<L>(nodes: Tree<L>[], b: Bound, visit: (node: L, b: Bound) => void): void {
  for (const node of nodes) {
    if (isCond(node)) {
      if (truthy(node.test, b) !== node.negate) expand(node.children, b, visit);
    } else if (isLoop(node)) {
      const { items, label } = listOf(node.list, b);
      b.expanded.n += items.length;
      checkLimit('items', b.expanded.n, 'The list items this document expands (all lists, nested ones multiplied)');
      items.forEach((item, i) => {
        const inner: Bound = {
          ...b,
          items: new Map(b.items).set(node.alias, { value: item, label: `${label}[${i}]` }),
        };
        expand(node.children, inner, visit);
      });
    } else visit(node, b);
  }
}

function fragments(inlines: Inline[], b: Bound): Fragment[] {
  const out: Fragment[] = [];
  expand(inlines, b, (node, nb) => {
    if (node.kind === 'br') out.push({ br: true });
    else if (node.kind === 'text') {
      for (const t of node.tokens) {
        const r = resolveToken(t, nb);
        if (!r.text) continue;
        // Values keep their line breaks; template text was already folded to single spaces.
        const text = r.variable ? r.text.replace(/\r\n?/g, '\n') : r.text;
        out.push({ text, style: node.style, source: r.variable ? { variable: r.variable } : { location: node.loc } });
      }
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Flowing blocks onto pages

interface Area {
  left: number;
  width: number;
  top: number;
  bottom: number;
}

class Flow {
  readonly pages: PageLayout[] = [];
  page!: PageLayout;
  area!: Area;
  y = 0;
  /** Whether anything has been placed in the body of the current page. */
  used = false;
  /** The current page was started because content overflowed (not by <page-break/>). */
  overflowed = false;
  private pendingSpace = 0;

  constructor(
    readonly t: XmlTemplate,
    private readonly areaFor: (pageIndex: number) => Area,
    /** A region (header, footer) draws onto one given page and never breaks. */
    readonly fixed?: PageLayout,
  ) {
    this.newPage(false);
  }

  newPage(overflow: boolean): void {
    if (this.fixed) {
      this.page = this.fixed;
      if (this.pages.length === 0) this.pages.push(this.fixed);
    } else {
      checkLimit('pages', this.pages.length + 1, 'The number of pages of this document');
      this.page = { width: this.t.pageWidth, height: this.t.pageHeight, ops: [] };
      this.pages.push(this.page);
    }
    this.area = this.areaFor(this.pages.length - 1);
    this.y = this.area.top;
    this.used = false;
    this.overflowed = overflow;
    this.pendingSpace = 0;
  }

  space(before: number): void {
    this.pendingSpace = Math.max(this.pendingSpace, before);
  }

  /** Where the flow is now, to come back to (layoutBlocks). */
  mark(): Mark {
    const { y, used, overflowed, pendingSpace } = this;
    return { pages: this.pages.length, ops: this.page.ops.length, y, used, overflowed, pendingSpace };
  }

  /** Undoes everything placed since `m`. */
  restore(m: Mark): void {
    this.pages.length = m.pages;
    this.page = this.pages[m.pages - 1];
    this.page.ops.length = m.ops;
    this.area = this.areaFor(m.pages - 1);
    ({ y: this.y, used: this.used, overflowed: this.overflowed, pendingSpace: this.pendingSpace } = m);
  }

  /** Whether what was placed since `m` all went onto later pages than the one current at `m`. */
  movedOn(m: Mark): boolean {
    return this.pages.length > m.pages && this.pages[m.pages - 1].ops.length === m.ops;
  }

  /** Tags what was placed since `m` and has no tag yet: text and images with `content`, the rest as artifacts. */
  tagSince(m: Mark, content: Tag): void {
    for (let p = m.pages - 1; p < this.pages.length; p++) {
      const ops = this.pages[p].ops;
      for (let i = p === m.pages - 1 ? m.ops : 0; i < ops.length; i++)
        ops[i].tag ??= isContent(ops[i]) ? content : 'artifact';
    }
  }

  /** Whether anything was placed (or space taken) since `m`. */
  placedSince(m: Mark): boolean {
    return this.pages.length !== m.pages || this.page.ops.length !== m.ops || this.y !== m.y;
  }

  /** Applies pending space, unless at the top of a page. */
  private settle(): void {
    if (this.used) this.y += this.pendingSpace;
    this.pendingSpace = 0;
  }

  /** Makes room for `height`: moves to a new page if it does not fit here and this page has content. */
  room(height: number): void {
    const spaced = this.used ? this.pendingSpace : 0;
    if (!this.fixed && this.used && this.y + spaced + height > this.area.bottom + 0.01) this.newPage(true);
    this.settle();
  }

  /** How many of `lines` from `from` on, one under the other, fit on this page from here (all of them in a region). */
  linesFitting(lines: readonly { height: number }[], from: number): number {
    if (this.fixed) return lines.length - from;
    let y = this.y + (this.used ? this.pendingSpace : 0);
    let i = from;
    for (; i < lines.length && y + lines[i].height <= this.area.bottom + 0.01; i++) y += lines[i].height;
    return i - from;
  }

  fits(height: number): boolean {
    return this.fixed !== undefined || this.y + height <= this.area.bottom + 0.01;
  }

  take(height: number, after: number): void {
    this.y += height;
    this.used = true;
    this.pendingSpace = after;
  }
}

interface Mark {
  pages: number;
  ops: number;
  y: number;
  used: boolean;
  overflowed: boolean;
  pendingSpace: number;
}

interface Ctx {
  t: XmlTemplate;
  b: Bound;
  warnings?: RenderWarning[];
  /** A paragraph's last this many lines start a new page (a paragraph kept with what follows it). */
  holdBack?: number;
}

/**
 * Lays blocks out one after another. Paragraphs and images kept with the next block
 * (`keep-with-next`, on by default for headings) are remembered; when the block after them starts on a later page than they
 * end, they are taken back and laid out again from the top of a new page with it, unless they
 * already started at the top of one. A kept paragraph of many lines is not moved whole: its last
 * `widows` lines go to the new page, as a typesetter keeps a letter's closing with the end of its
 * body, so no page holds the closing alone.
 */
function layoutBlocks(blocks: Block[], flow: Flow, ctx: Ctx): void {
  let kept: { start: Mark; warnings: number; items: number; blocks: [BlockLeaf, Bound][] } | undefined;
  expand(blocks, ctx.b, (block, b) => {
    const before = flow.mark();
    const items = b.expanded.n;
    const warned = ctx.warnings?.length ?? 0;
    layoutBlock(block, flow, { ...ctx, b });
    if (!flow.placedSince(before)) return; // an empty paragraph leaves what is kept as it was
    if (block.kind === 'page-break') {
      kept = undefined;
      return;
    }
    if (kept && !flow.fixed && kept.start.used && flow.movedOn(before)) {
      flow.restore(kept.start);
      if (ctx.warnings) ctx.warnings.length = kept.warnings;
      b.expanded.n = kept.items;
      const [[head, hb], ...rest] = kept.blocks;
      // a paragraph splits where its page would end, less its last lines (or moves whole when too short)
      if (head.kind === 'p') layoutBlock(head, flow, { ...ctx, b: hb, holdBack: ctx.t.widows });
      else {
        flow.newPage(true);
        layoutBlock(head, flow, { ...ctx, b: hb });
      }
      for (const [k, kb] of rest) layoutBlock(k, flow, { ...ctx, b: kb });
      layoutBlock(block, flow, { ...ctx, b });
    }
    if ((block.kind === 'p' || block.kind === 'image') && block.keepWithNext && !block.at) {
      kept ??= { start: before, warnings: warned, items, blocks: [] };
      kept.blocks.push([block, b]);
    } else kept = undefined;
  });
}

const PLAIN: TextStyle = {
  family: 'sans',
  size: 11,
  bold: false,
  italic: false,
  underline: false,
  color: { r: 0, g: 0, b: 0 },
};

/** The style of the first text in some inline content: it sizes lines that hold no text. */
function firstStyle(inlines: Inline[]): TextStyle {
  for (const i of inlines) {
    if (i.kind === 'text') return i.style;
    if (isCond(i)) {
      const inner = firstStyle(i.children);
      if (inner !== PLAIN) return inner;
    }
  }
  return PLAIN;
}

/** Lays a block out and tags what it drew: a paragraph or heading, a figure with its alt text, a table (its own), or an artifact. */
function layoutBlock(block: BlockLeaf, flow: Flow, ctx: Ctx): void {
  const m = flow.mark();
  placeBlock(block, flow, ctx);
  if (block.kind === 'p') flow.tagSince(m, { role: block.role });
  else if (block.kind === 'image')
    flow.tagSince(m, { role: 'Figure', alt: block.alt ? resolveText(block.alt, ctx.b).trim() : undefined });
  else flow.tagSince(m, 'artifact');
}

// a layout algorithm: one pass over a block that breaks it across pages (orphans and widows, text
// that shrinks to fit) with its state in locals; split, that state would be passed around
// eslint-disable-next-line max-lines-per-function
function placeBlock(block: BlockLeaf, flow: Flow, ctx: Ctx): void {
  const { t, b } = ctx;
  switch (block.kind) {
    case 'p': {
      const frags = fragments(block.inlines, b);
      if (frags.length === 0) return;
      const width = block.at ? block.width! : Math.min(block.width ?? flow.area.width, flow.area.width);
      const hyphenate =
        (block.hyphenate ?? t.hyphenate ?? block.align === 'justify') ? hyphenationFor(t.lang) : undefined;
      const lines = breakLines(frags, width, t.fonts, block.lineHeight, firstStyle(block.inlines), hyphenate);
      if (block.at) {
        const room = (block.height ?? t.pageHeight - t.margin.bottom - block.at.y) + 0.01;
        let fitted = lines;
        const tall = (ls: Line[]) => ls.reduce((h, l) => h + l.height, 0);
        if (tall(fitted) > room && block.overflow === 'shrink') {
          // smaller by steps of 5 % until it fits, down to the smallest size allowed
          const largest = Math.max(...frags.map((f) => ('br' in f ? 0 : f.style.size)));
          for (let scale = 0.95; largest * scale >= block.minFontSize - 1e-9 && tall(fitted) > room; scale *= 0.95) {
            const smaller = frags.map((f) =>
              'br' in f ? f : { ...f, style: { ...f.style, size: f.style.size * scale } },
            );
            fitted = breakLines(smaller, width, t.fonts, block.lineHeight, firstStyle(block.inlines), hyphenate);
          }
        }
        if (tall(fitted) > room) overflowed(block, frags, fitted, room, ctx);
        let y = block.at.y;
        for (const line of fitted) {
          drawUnderlined(flow.page.ops, line, block.at.x, y, width, block.align);
          y += line.height;
        }
        return;
      }
      // kept with what follows (see layoutBlocks): its last `hold` lines start a new page; one too
      // short to leave `orphans` lines behind moves whole
      let hold = ctx.holdBack ?? 0;
      if (hold && lines.length - hold < Math.max(1, t.orphans)) {
        if (flow.used) flow.newPage(true);
        hold = 0;
      }
      flow.space(block.spaceBefore);
      // page by page: as many lines as fit, less where that would leave fewer than `orphans` lines of
      // the paragraph at the bottom of its first page or fewer than `widows` at the top of its last
      for (let i = 0; i < lines.length;) {
        const left = lines.length - i;
        let take = flow.linesFitting(lines, i);
        // the page the held lines would have ended on stops before them
        if (hold && i < lines.length - hold && i + take > lines.length - hold) {
          take = lines.length - hold - i;
          hold = 0;
        }
        if (take < left) {
          const first = i === 0;
          const short = t.widows - (left - take); // lines the next page lacks to hold no widow
          if (first && take < Math.min(t.orphans, left) && flow.used) take = 0;
          else if (short > 0 && take - short >= (first ? t.orphans : 1)) take -= short;
        }
        if (take === 0 && !flow.used) take = 1; // nothing fits even on an empty page: one line goes anyway
        for (const line of lines.slice(i, i + take)) {
          flow.room(line.height);
          drawUnderlined(flow.page.ops, line, flow.area.left, flow.y, width, block.align);
          flow.take(line.height, 0);
        }
        i += take;
        if (i < lines.length) flow.newPage(true);
      }
      flow.space(block.spaceAfter);
      return;
    }
    case 'image': {
      const avail = flow.area.width;
      let w = block.width ?? (block.widthFraction !== undefined ? avail * block.widthFraction : undefined);
      let h = block.height;
      const ratio = block.image.height / block.image.width;
      if (w === undefined && h === undefined) {
        w = Math.min(block.image.width, avail);
        h = w * ratio;
      } else if (w === undefined) w = h! / ratio;
      else if (h === undefined) h = w * ratio;
      if (block.at) {
        placeImage(flow.page, block, block.at.x, block.at.y, w, h!, b, t.fonts);
        return;
      }
      const maxH = flow.area.bottom - flow.area.top;
      if (w > avail) {
        h = (h! * avail) / w;
        w = avail;
      }
      if (h! > maxH) {
        w = (w * maxH) / h!;
        h = maxH;
      }
      flow.space(block.spaceBefore);
      flow.room(h!);
      const x = flow.area.left + (block.align === 'center' ? (avail - w) / 2 : block.align === 'right' ? avail - w : 0);
      placeImage(flow.page, block, x, flow.y, w, h!, b, t.fonts);
      flow.take(h!, block.spaceAfter);
      return;
    }
    case 'rect': {
      if (block.at) {
        flow.page.ops.push({
          kind: 'rect',
          x: block.at.x,
          y: block.at.y,
          width: block.width!,
          height: block.height,
          fill: block.fill,
          border: block.border,
          borderWidth: block.borderWidth,
        });
        return;
      }
      const w = Math.min(block.width ?? flow.area.width, flow.area.width);
      flow.space(block.spaceBefore);
      flow.room(block.height);
      flow.page.ops.push({
        kind: 'rect',
        x: flow.area.left,
        y: flow.y,
        width: w,
        height: block.height,
        fill: block.fill,
        border: block.border,
        borderWidth: block.borderWidth,
      });
      flow.take(block.height, block.spaceAfter);
      return;
    }
    case 'line': {
      if (block.from && block.to) {
        flow.page.ops.push({
          kind: 'line',
          x1: block.from.x,
          y1: block.from.y,
          x2: block.to.x,
          y2: block.to.y,
          thickness: block.thickness,
          color: block.color,
        });
        return;
      }
      flow.space(block.spaceBefore);
      flow.room(block.thickness);
      const y = flow.y + block.thickness / 2;
      flow.page.ops.push({
        kind: 'line',
        x1: flow.area.left,
        y1: y,
        x2: flow.area.left + flow.area.width,
        y2: y,
        thickness: block.thickness,
        color: block.color,
      });
      flow.take(block.thickness, block.spaceAfter);
      return;
    }
    case 'spacer':
      flow.room(0);
      flow.y = Math.min(flow.y + block.height, flow.area.bottom);
      flow.used = true;
      return;
    case 'page-break':
      if (!flow.fixed && (flow.used || !flow.overflowed)) flow.newPage(false);
      return;
    case 'table':
      layoutTable(block, flow, ctx);
      return;
  }
}

/** Adds underlines under the text runs from `from` on that carry one. */
function underline(ops: Op[], from: number): void {
  for (let i = from, end = ops.length; i < end; i++) {
    const op = ops[i];
    if (op.kind !== 'text' || !op.underline) continue;
    const y = op.y + op.size * 0.12;
    ops.push({
      kind: 'line',
      x1: op.x,
      y1: y,
      x2: op.x + op.width,
      y2: y,
      thickness: Math.max(0.5, op.size * 0.06),
      color: op.color,
    });
  }
}

/** Draws a line onto `ops` (after what they hold), with its underlines. */
function drawUnderlined(ops: Op[], line: Line, left: number, top: number, width: number, align: Align): void {
  const from = ops.length;
  drawLine(line, left, top, width, align, ops);
  underline(ops, from);
}

function placeImage(
  page: PageLayout,
  block: Extract<BlockLeaf, { kind: 'image' }>,
  x: number,
  y: number,
  width: number,
  height: number,
  b: Bound,
  fonts: FontSet,
): void {
  page.ops.push({ kind: 'image', image: block.image, x, y, width, height });
  const alt = block.alt ? resolveText(block.alt, b).trim() : '';
  if (!alt) return;
  // Alternative text: transparent text over the image, so it can be searched, copied and read aloud.
  const style: TextStyle = {
    family: 'sans',
    size: Math.max(1, Math.min(10, height)),
    bold: false,
    italic: false,
    underline: false,
    color: { r: 0, g: 0, b: 0 },
  };
  const source = block.alt!.find((tok) => tok.t === 'var' || tok.t === 'item');
  const lines = breakLines(
    [{ text: alt, style, source: source && source.t === 'var' ? { variable: source.name } : { location: block.loc } }],
    Math.max(width, 1),
    fonts,
    1,
    style,
  );
  for (const line of lines.slice(0, 1)) {
    const ops: TextOp[] = [];
    drawLine(line, x, y, width, 'left', ops);
    for (const op of ops) page.ops.push({ ...op, invisible: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Tables

interface CellBox {
  cell: Cell;
  /** Its TH or TD in the structure tree. */
  tag: StructElem;
  x: number;
  width: number;
  lines: Line[];
  align: 'left' | 'right' | 'center';
}

interface RowBox {
  row: Row;
  cells: CellBox[];
  header: boolean;
  index: number;
}

function columnWidths(table: Table, available: number): number[] {
  const total = Math.min(table.width ?? available, available);
  const fixed = table.columns.reduce((s, c) => s + (c.points ?? 0) + (c.fraction ?? 0) * total, 0);
  const stars = table.columns.reduce((s, c) => s + (c.stars ?? 0), 0);
  const rest = Math.max(0, total - fixed);
  const widths = table.columns.map(
    (c) => c.points ?? (c.fraction !== undefined ? c.fraction * total : ((c.stars ?? 0) / stars) * rest),
  );
  const sum = widths.reduce((s, w) => s + w, 0);
  // Fixed widths that add up to more than the page are scaled down to fit.
  return sum > total ? widths.map((w) => (w * total) / sum) : widths;
}

function rowHeight(r: RowBox, table: Table, from: number[]): number {
  let h = 0;
  r.cells.forEach((c, i) => {
    let ch = 0;
    for (let k = from[i]; k < c.lines.length; k++) ch += c.lines[k].height;
    h = Math.max(h, ch);
  });
  return h + table.padding.top + table.padding.bottom;
}

// a layout algorithm: rows placed one after another, split across pages with the header repeated,
// its state in locals; split, that state would be passed around
// eslint-disable-next-line max-lines-per-function
function layoutTable(table: Table, flow: Flow, ctx: Ctx): void {
  const widths = columnWidths(table, flow.area.width);
  const left = flow.area.left;
  const tableTag: StructElem = { role: 'Table' };
  const hyphenate = ctx.t.hyphenate ? hyphenationFor(ctx.t.lang) : undefined;
  const boxes = (nodes: RowNode[], header: boolean): RowBox[] => {
    const out: RowBox[] = [];
    expand(nodes, ctx.b, (row, b) => {
      let col = 0;
      let x = left;
      const tr: StructElem = { role: 'TR', parent: tableTag };
      const cells: CellBox[] = row.cells.map((cell) => {
        const w = widths.slice(col, col + cell.colspan).reduce((s, v) => s + v, 0);
        const align = cell.align ?? table.columns[col].align;
        col += cell.colspan;
        const inner = Math.max(1, w - table.padding.left - table.padding.right);
        const frags = fragments(cell.inlines, b);
        const box: CellBox = {
          cell,
          tag: { role: header ? 'TH' : 'TD', parent: tr },
          x,
          width: w,
          lines: breakLines(frags, inner, ctx.t.fonts, table.lineHeight, firstStyle(cell.inlines), hyphenate),
          align,
        };
        x += w;
        return box;
      });
      out.push({ row, cells, header, index: out.length });
    });
    return out;
  };
  const header = boxes(table.header, true);
  const rows = boxes(table.rows, false);
  const headerHeight = header.reduce(
    (s, r) =>
      s +
      rowHeight(
        r,
        table,
        r.cells.map(() => 0),
      ),
    0,
  );

  flow.space(table.spaceBefore);
  let headerOnPage = false;
  let firstOnPage = true;

  // a header repeated on a later page is page furniture: its cells are read once, on the first
  let headerPlaced = false;
  const drawRow = (r: RowBox, from: number[], to: number[], height: number) => {
    const ops = flow.page.ops;
    const start = ops.length;
    const y = flow.y;
    const fill = r.row.fill ?? (r.header ? table.headerFill : r.index % 2 === 1 ? table.stripe : undefined);
    for (const c of r.cells) {
      const f = c.cell.fill ?? fill;
      if (f) ops.push({ kind: 'rect', x: c.x, y, width: c.width, height, fill: f, borderWidth: 0 });
    }
    r.cells.forEach((c, i) => {
      let ly = y + table.padding.top;
      for (let k = from[i]; k < to[i]; k++) {
        const line = c.lines[k];
        const drawn: Op[] = [];
        drawUnderlined(
          drawn,
          line,
          c.x + table.padding.left,
          ly,
          c.width - table.padding.left - table.padding.right,
          c.align,
        );
        const tag = r.header && headerPlaced ? 'artifact' : c.tag;
        for (const op of drawn) op.tag = isContent(op) ? tag : 'artifact';
        ops.push(...drawn);
        ly += line.height;
      }
    });
    if (table.border > 0 && table.rules === 'all') {
      for (const c of r.cells)
        ops.push({
          kind: 'rect',
          x: c.x,
          y,
          width: c.width,
          height,
          border: table.borderColor,
          borderWidth: table.border,
        });
    } else if (table.border > 0 && table.rules === 'rows') {
      const x2 = r.cells[r.cells.length - 1].x + r.cells[r.cells.length - 1].width;
      if (firstOnPage)
        ops.push({ kind: 'line', x1: left, y1: y, x2, y2: y, thickness: table.border, color: table.borderColor });
      ops.push({
        kind: 'line',
        x1: left,
        y1: y + height,
        x2,
        y2: y + height,
        thickness: table.border,
        color: table.borderColor,
      });
    }
    for (let i = start; i < ops.length; i++) ops[i].tag ??= 'artifact';
    firstOnPage = false;
    flow.take(height, 0);
  };

  const placeHeader = () => {
    for (const h of header)
      drawRow(
        h,
        h.cells.map(() => 0),
        h.cells.map((c) => c.lines.length),
        rowHeight(
          h,
          table,
          h.cells.map(() => 0),
        ),
      );
    headerOnPage = true;
    headerPlaced = true;
  };

  const nextPage = () => {
    flow.newPage(true);
    headerOnPage = false;
    firstOnPage = true;
  };

  const zeros = (r: RowBox) => r.cells.map(() => 0);
  let rowsOnPage = 0;
  // Start on a new page when the header and the first row (or, kept together, the whole table) do not fit on this one.
  const whole = headerHeight + rows.reduce((s, r) => s + rowHeight(r, table, zeros(r)), 0);
  const keep = table.keepTogether && whole <= flow.area.bottom - flow.area.top;
  flow.room(keep ? whole : headerHeight + (rows[0] ? rowHeight(rows[0], table, zeros(rows[0])) : 0));
  if (rows.length === 0) placeHeader();
  for (const r of rows) {
    let from = zeros(r);
    for (;;) {
      const h = rowHeight(r, table, from);
      const before = headerOnPage ? 0 : headerHeight;
      // Other content on this page: move the row to the next one rather than split it.
      const pageHasOther = headerOnPage ? rowsOnPage > 0 : flow.used;
      if (!flow.fits(before + h) && pageHasOther) {
        nextPage();
        rowsOnPage = 0;
        continue;
      }
      if (!headerOnPage) placeHeader();
      rowsOnPage++;
      if (flow.fits(h)) {
        drawRow(
          r,
          from,
          r.cells.map((c) => c.lines.length),
          h,
        );
        break;
      }
      // Taller than a whole page: split it between lines.
      const avail = flow.area.bottom - flow.y - table.padding.top - table.padding.bottom;
      const to = r.cells.map((c, i) => {
        let k = from[i];
        let used = 0;
        while (k < c.lines.length && used + c.lines[k].height <= avail) used += c.lines[k++].height;
        return k;
      });
      if (to.every((k, i) => k === from[i]))
        to.forEach((_, i) => (to[i] = Math.min(r.cells[i].lines.length, from[i] + 1)));
      const part = { ...r, cells: r.cells.map((c, i) => ({ ...c, lines: c.lines.slice(0, to[i]) })) };
      drawRow(r, from, to, rowHeight(part, table, from));
      from = to;
      if (r.cells.every((c, i) => from[i] >= c.lines.length)) break;
      nextPage();
      rowsOnPage = 0;
    }
  }
  flow.space(table.spaceAfter);
}

// ---------------------------------------------------------------------------------------------
// The document

function regionFor(regions: Region[], pageIndex: number): Region | undefined {
  // The last matching declaration wins, so a first-page header can follow a general one.
  let found: Region | undefined;
  for (const r of regions) if (r.on === 'all' || (r.on === 'first') === (pageIndex === 0)) found = r;
  return found;
}

/**
 * Lays a header or footer out from `top` down; returns what it draws and where it ends. One that
 * repeats is page furniture (artifacts in a tagged PDF); a first page's own (`on="first"`, a
 * letterhead) is read once, as part of the document, before the body (a header) or after it.
 */
function placeRegion(t: XmlTemplate, region: Region, top: number, b: Bound): { ops: Op[]; bottom: number } {
  const scratch: PageLayout = { width: t.pageWidth, height: t.pageHeight, ops: [] };
  const width = t.pageWidth - t.margin.left - t.margin.right;
  const flow = new Flow(t, () => ({ left: t.margin.left, width, top, bottom: Infinity }), scratch);
  layoutBlocks(region.blocks, flow, { t, b });
  if (region.on !== 'first') for (const op of scratch.ops) op.tag = 'artifact';
  return { ops: scratch.ops, bottom: flow.y };
}

/** Placed text taller than its box: refused (`overflow="error"`), or drawn whole and reported. */
function overflowed(
  block: Extract<BlockLeaf, { kind: 'p' }>,
  frags: Fragment[],
  lines: Line[],
  room: number,
  ctx: Ctx,
): void {
  const variable = frags
    .map((f) => ('br' in f ? undefined : f.source))
    .find((s): s is { variable: string } => s !== undefined && 'variable' in s);
  let fit = 0;
  for (let h = 0; fit < lines.length && h + lines[fit].height <= room; fit++) h += lines[fit].height;
  const where = `<${block.kind}> at line ${block.loc.line}`;
  const what = `${variable ? `The text of ${variable.variable}` : `The text of ${where}`} needs ${lines.length} lines; its box has room for ${fit}`;
  if (block.overflow === 'error') {
    throw new ValidationError(
      `${what}. Shorten it, or let the template shrink it (overflow="shrink").`,
      [
        {
          field: variable?.variable ?? where,
          message: `needs ${lines.length} lines, room for ${fit}`,
          code: 'text_overflow',
        },
      ],
      'text_overflow',
    );
  }
  ctx.warnings?.push({
    code: 'text_overflow',
    variable: variable?.variable,
    message: `${what}${block.overflow === 'shrink' ? ` even at ${block.minFontSize} pt` : ''}; the rest runs outside it (${where}).`,
  });
}

/** Page numbers of a document that is part of a larger one (a merge): its first page's number and the whole's count. */
export interface Numbering {
  first: number;
  total: number;
}

/** Lays out a template with values already checked for presence. */
export function layoutTemplate(
  t: XmlTemplate,
  values: Record<string, string>,
  warnings?: RenderWarning[],
  numbering?: Numbering,
): PageLayout[] {
  const b: Bound = { expanded: { n: 0 }, values, items: new Map(), lists: new Map() };
  const width = t.pageWidth - t.margin.left - t.margin.right;
  const heights = new Map<Region, number>();
  const height = (r: Region | undefined) => {
    if (!r) return 0;
    let h = heights.get(r);
    // measured with wide page numbers, so the real ones always fit
    if (h === undefined) heights.set(r, (h = placeRegion(t, r, 0, { ...b, page: 8888, pages: 8888 }).bottom + r.gap));
    return h;
  };
  const area = (i: number): Area => ({
    left: t.margin.left,
    width,
    top: t.margin.top + height(regionFor(t.headers, i)),
    bottom: t.pageHeight - t.margin.bottom - height(regionFor(t.footers, i)),
  });
  const body = new Flow(t, area, undefined);
  layoutBlocks(t.body, body, { t, b, warnings });
  const pages = body.pages;
  // Headers are drawn before the body and footers after it, so the text reads in page order.
  pages.forEach((page, i) => {
    const pb: Bound = { ...b, page: (numbering?.first ?? 1) + i, pages: numbering?.total ?? pages.length };
    const header = regionFor(t.headers, i);
    const footer = regionFor(t.footers, i);
    page.ops = [
      ...(header ? placeRegion(t, header, t.margin.top, pb).ops : []),
      ...page.ops,
      ...(footer ? placeRegion(t, footer, t.pageHeight - t.margin.bottom - height(footer) + footer.gap, pb).ops : []),
    ];
  });
  return pages;
}

export function metadataText(tokens: Token[] | undefined, values: Record<string, string>): string | undefined {
  if (!tokens) return undefined;
  const text = resolveText(tokens, { expanded: { n: 0 }, values, items: new Map(), lists: new Map() }).trim();
  return text || undefined;
}
