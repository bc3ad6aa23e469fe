/** The compiled form of an XML layout template: a typed tree, validated once, rendered many times. */
import type { PresetName } from './presets';
import type { SourceLocation } from '../errors';
import type { FontSet } from './fonts';
import type { ImageAsset } from './images';
import type { Box, Rgb } from './units';

/** A piece of text as written: literal text, a merge field, a field of the current list item, or a page number. */
export type Token =
  | { t: 'lit'; text: string }
  | { t: 'var'; name: string }
  | { t: 'item'; alias: string; path: string[]; display: string }
  | { t: 'page' }
  | { t: 'pages' };

/** A text style, fully resolved at compile time (styles inherit lexically). */
export interface TextStyle {
  family: string;
  bold: boolean;
  italic: boolean;
  size: number;
  color: Rgb;
  underline: boolean;
}

export type Align = 'left' | 'right' | 'center' | 'justify';

/** What a condition or a loop reads: a merge field, or a field of the current list item. */
export type Ref = Extract<Token, { t: 'var' } | { t: 'item' }>;

export interface Cond<T> {
  kind: 'if';
  test: Ref;
  negate: boolean;
  children: T[];
}

export interface Loop<T> {
  kind: 'each';
  list: Ref;
  alias: string;
  children: T[];
  loc: SourceLocation;
}

/** Content with `<if>` and `<each>` around it, to any depth. */
export type Tree<L> = L | Cond<Tree<L>> | Loop<Tree<L>>;

export function isCond<L>(n: Tree<L>): n is Cond<Tree<L>> {
  return (n as { kind?: unknown }).kind === 'if';
}

export function isLoop<L>(n: Tree<L>): n is Loop<Tree<L>> {
  return (n as { kind?: unknown }).kind === 'each';
}

export type TextRun = { kind: 'text'; tokens: Token[]; style: TextStyle; loc: SourceLocation };
export type Inline = Tree<TextRun | { kind: 'br' }>;

export interface Placement {
  x: number;
  y: number;
}

export interface Paragraph {
  kind: 'p';
  /** What it is in the tagged PDF's structure: a paragraph or a heading. */
  role: 'P' | 'H1' | 'H2' | 'H3';
  align: Align;
  lineHeight: number;
  spaceBefore: number;
  spaceAfter: number;
  inlines: Inline[];
  /** Width of the text box; in the flow, defaults to the full width. */
  width?: number;
  /** Absolute position from the page's top-left corner; absent = in the flow. */
  at?: Placement;
  /** Placed text's box height; without one, the box ends at the bottom margin. */
  height?: number;
  /** Placed text longer than its box: drawn and warned about, shrunk to fit, or refused. */
  overflow: 'visible' | 'shrink' | 'error';
  /** The smallest font size `shrink` goes down to. */
  minFontSize: number;
  /** In the flow: on the same page as the start of the block after it (headings, a closing and its signature). */
  keepWithNext: boolean;
  /** Whether words break with a hyphen by the document's language; unset: the document's choice, else justified text only. */
  hyphenate?: boolean;
  loc: SourceLocation;
}

export interface ImageBlock {
  kind: 'image';
  image: ImageAsset;
  width?: number;
  height?: number;
  /** Width as a fraction of the available width, from `width="50%"`. */
  widthFraction?: number;
  align: 'left' | 'right' | 'center';
  alt?: Token[];
  spaceBefore: number;
  spaceAfter: number;
  /** In the flow: on the same page as the start of the block after it (a figure and its caption). */
  keepWithNext: boolean;
  at?: Placement;
  loc: SourceLocation;
}

export interface RectBlock {
  kind: 'rect';
  width?: number;
  height: number;
  fill?: Rgb;
  border?: Rgb;
  borderWidth: number;
  spaceBefore: number;
  spaceAfter: number;
  at?: Placement;
}

export interface LineBlock {
  kind: 'line';
  thickness: number;
  color: Rgb;
  spaceBefore: number;
  spaceAfter: number;
  /** Absolute segment; absent = a horizontal rule across the flow. */
  from?: Placement;
  to?: Placement;
}

export interface Spacer {
  kind: 'spacer';
  height: number;
}

export interface PageBreak {
  kind: 'page-break';
}

export interface Column {
  /** Exactly one of these is set. */
  points?: number;
  fraction?: number;
  stars?: number;
  align: 'left' | 'right' | 'center';
}

export interface Cell {
  colspan: number;
  align?: 'left' | 'right' | 'center';
  fill?: Rgb;
  inlines: Inline[];
}

export interface Row {
  kind: 'tr';
  fill?: Rgb;
  cells: Cell[];
}

export type RowNode = Tree<Row>;

export interface Table {
  kind: 'table';
  columns: Column[];
  header: RowNode[];
  rows: RowNode[];
  width?: number;
  border: number;
  borderColor: Rgb;
  rules: 'all' | 'rows' | 'none';
  padding: Box;
  headerFill?: Rgb;
  stripe?: Rgb;
  lineHeight: number;
  /** Moves the whole table to the next page rather than split it, when it fits on one page. */
  keepTogether: boolean;
  spaceBefore: number;
  spaceAfter: number;
  loc: SourceLocation;
}

export type BlockLeaf = Paragraph | ImageBlock | RectBlock | LineBlock | Spacer | PageBreak | Table;
export type Block = Tree<BlockLeaf>;

export interface Region {
  /** Which pages the header or footer is drawn on. */
  on: 'all' | 'first' | 'rest';
  /** Space between the region and the body. */
  gap: number;
  blocks: Block[];
}

export interface XmlTemplate {
  kind: 'xml';
  name: string;
  /** The postcard size it is made for (`<document postcard="4x6">`): the page is its trim and bleed. */
  postcard?: PresetName;
  pageWidth: number;
  pageHeight: number;
  margin: Box;
  metadata: { title?: Token[]; author?: Token[]; subject?: Token[]; keywords?: Token[] };
  fonts: FontSet;
  headers: Region[];
  footers: Region[];
  body: Block[];
  /** The document's language (BCP 47, e.g. en, de-CH): the catalog's /Lang, what screen readers speak it in. */
  lang: string;
  /** Whether text is hyphenated: every paragraph and cell (true), none (false); unset: justified paragraphs only. */
  hyphenate?: boolean;
  /** Whether the PDF is tagged (a structure tree for screen readers; PDF/UA); on unless `tagged="false"`. */
  tagged: boolean;
  /** The fewest lines of a paragraph left alone at the bottom (orphans) or top (widows) of a page; 1 allows any. */
  orphans: number;
  widows: number;
  variables: string[];
  /** The optional variables (written `{{name | default: "text"}}`) and the text used when a value is not given. */
  defaults: Record<string, string>;
}

/** Something drawn that a person should look at; the document is still made. */
export interface RenderWarning {
  /** `resource_blocked`: an HTML template named an address that is not one of its own files; it was not fetched. */
  code: 'text_overflow' | 'resource_blocked';
  /** The variable whose text it is, when the text comes from one. */
  variable?: string;
  message: string;
}

/**
 * An element of a tagged PDF's structure tree (draw.ts writes it). The tree is what the pages'
 * ops name, in the order they first name it: the reading order is the order things were laid out.
 */
export interface StructElem {
  role: 'H1' | 'H2' | 'H3' | 'P' | 'Figure' | 'Table' | 'TR' | 'TH' | 'TD';
  /** A Figure's alternative text. */
  alt?: string;
  parent?: StructElem;
}

/** Page furniture (headers, footers, rules, fills, borders, a repeated table header): no part of the reading order. */
export type Tag = StructElem | 'artifact';
