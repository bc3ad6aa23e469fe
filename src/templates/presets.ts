/**
 * The postcard sizes a print shop and a mail partner take, each as the PDF must be made for it:
 * the page is the trim size plus the bleed on every side (backgrounds run into it and are cut
 * off), critical content stays inside the safe zone, and the back leaves the partner's address
 * area without ink (the partner prints the address, postage and barcode there). Two pages: the
 * front, then the back. Landscape, as the partners take them. Pure data and geometry: the render
 * threads (print.ts), the docs' table and src/postcards read it.
 *
 * The US sizes follow Lob's published specification (and PostGrid's, which is the same): 1/8 in
 * bleed, safe zone 1/8 in inside the trim, the ink-free area 3.2835 × 2.375 in on a 4×6 and
 * 4 × 2.375 in on the larger sizes, 0.275 in from the right and 0.25 in from the bottom edge of
 * the page (bleed included). A6 and A5 follow the European printers' common rule (3 mm bleed,
 * 5 mm safe zone); their address areas are Paperlink's choice, sized for a four-line address in
 * 10 pt, as no partner publishes one for them that we could check against.
 */

import { TemplateError, type SourceLocation } from '../errors';

const IN = 72;
const MM = 72 / 25.4;

/** A rectangle in PDF points, from the page's lower left corner (PDF's own coordinates). */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Preset {
  /** Its name, as the partners name it (`4x6` is 4 in high and 6 in wide). */
  name: PresetName;
  /** What the docs call it. */
  label: string;
  /** The finished card, in points (width, height). */
  trim: [number, number];
  /** Added on every side of the trim: the PDF's page is the trim plus twice this. */
  bleed: number;
  /** How far inside the trim critical content (text, logos) must stay. */
  safe: number;
  /** On the back: the area the partner prints the address and postage into, kept free of ink. */
  address: Rect;
  /** The sizes' own unit, for the docs and messages. */
  unit: 'in' | 'mm';
}

export const PRESET_NAMES = ['4x6', '6x9', '6x11', 'A6', 'A5'] as const;
export type PresetName = (typeof PRESET_NAMES)[number];

/** The address area `width` × `height`, `right` and `bottom` from the page's edges (bleed included). */
function addressArea(page: [number, number], width: number, height: number, right: number, bottom: number): Rect {
  return { x: page[0] - right - width, y: bottom, width, height };
}

function preset(
  name: PresetName,
  label: string,
  trim: [number, number],
  bleed: number,
  safe: number,
  unit: 'in' | 'mm',
  address: (page: [number, number]) => Rect,
): Preset {
  const page: [number, number] = [trim[0] + 2 * bleed, trim[1] + 2 * bleed];
  return { name, label, trim, bleed, safe, unit, address: address(page) };
}

export const PRESETS: Record<PresetName, Preset> = {
  '4x6': preset('4x6', '4 × 6 in', [6 * IN, 4 * IN], IN / 8, IN / 8, 'in', (p) =>
    addressArea(p, 3.2835 * IN, 2.375 * IN, 0.275 * IN, 0.25 * IN),
  ),
  '6x9': preset('6x9', '6 × 9 in', [9 * IN, 6 * IN], IN / 8, IN / 8, 'in', (p) =>
    addressArea(p, 4 * IN, 2.375 * IN, 0.275 * IN, 0.25 * IN),
  ),
  '6x11': preset('6x11', '6 × 11 in', [11 * IN, 6 * IN], IN / 8, IN / 8, 'in', (p) =>
    addressArea(p, 4 * IN, 2.375 * IN, 0.275 * IN, 0.25 * IN),
  ),
  A6: preset('A6', 'A6 (148 × 105 mm)', [148 * MM, 105 * MM], 3 * MM, 5 * MM, 'mm', (p) =>
    addressArea(p, 70 * MM, 38 * MM, 8 * MM, 8 * MM),
  ),
  A5: preset('A5', 'A5 (210 × 148 mm)', [210 * MM, 148 * MM], 3 * MM, 5 * MM, 'mm', (p) =>
    addressArea(p, 90 * MM, 45 * MM, 8 * MM, 8 * MM),
  ),
};

/** The PDF page a preset takes: its trim plus the bleed on every side, in points. */
export function pageOf(p: Preset): [number, number] {
  return [p.trim[0] + 2 * p.bleed, p.trim[1] + 2 * p.bleed];
}

/** The finished card on the page (the TrimBox). */
export function trimBox(p: Preset): Rect {
  return { x: p.bleed, y: p.bleed, width: p.trim[0], height: p.trim[1] };
}

/** Where critical content must stay. */
export function safeBox(p: Preset): Rect {
  const d = p.bleed + p.safe;
  return { x: d, y: d, width: p.trim[0] - 2 * p.safe, height: p.trim[1] - 2 * p.safe };
}

/** How far a page may be off a preset's size and still be it: a point, for rounding in a renderer's units. */
const TOLERANCE = 1;

/** The preset whose page this is (width and height in points), if any. */
export function presetOfPage(width: number, height: number): Preset | undefined {
  return Object.values(PRESETS).find((p) => {
    const [w, h] = pageOf(p);
    return Math.abs(w - width) <= TOLERANCE && Math.abs(h - height) <= TOLERANCE;
  });
}

/**
 * The size a template names, in any case (`4x6`, `a6`), or template_invalid saying where it was
 * named (`how`) and which sizes there are. Every kind of template names its size through here.
 */
export function presetNamed(text: string, how: string, location?: SourceLocation): PresetName {
  const found = PRESET_NAMES.find((n) => n.toLowerCase() === text.trim().toLowerCase());
  if (!found) throw new TemplateError(`${how}: name one of the postcard sizes ${PRESET_NAMES.join(', ')}.`, location);
  return found;
}

/**
 * The size a Word document or a PDF form names in its Keywords (File → Properties in Word and in
 * Acrobat): `paperlink-postcard:4x6` among them, `=` taken as well as `:`.
 */
export function postcardOfKeywords(keywords: string | undefined): PresetName | undefined {
  const named = /(?:^|[\s,;])(paperlink-postcard\s*[:=]\s*([^\s,;]*))/i.exec(keywords ?? '');
  return named ? presetNamed(named[2], `Keywords "${named[1]}"`) : undefined;
}

/** A length in a preset's own unit, as the docs write it: 6.25 in, 154 mm. */
export function inUnit(p: Preset, points: number): string {
  const v = p.unit === 'in' ? points / IN : points / MM;
  return `${Number(v.toFixed(p.unit === 'in' ? 4 : 1))} ${p.unit}`;
}

/** docs/postcards.md's table of sizes, as the presets declare them (test/postcards/print.test.ts checks the docs hold it). */
export function presetTable(): string {
  const rows = Object.values(PRESETS).map((p) => {
    const [w, h] = pageOf(p);
    const a = p.address;
    const size = (x: number, y: number) => `${inUnit(p, x)} × ${inUnit(p, y)}`;
    return `| \`${p.name}\` | ${size(p.trim[0], p.trim[1])} | ${size(w, h)} | ${inUnit(p, p.bleed)} | ${inUnit(p, p.safe)} | ${size(a.width, a.height)}, ${inUnit(p, w - a.x - a.width)} from the right edge, ${inUnit(p, a.y)} from the bottom edge |`;
  });
  return [
    '| size | card (trim) | PDF page (with bleed) | bleed | safe zone inside the trim | address area on the back |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
