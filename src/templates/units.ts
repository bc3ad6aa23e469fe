/** Lengths, colours and page sizes as template authors write them. All lengths end up in PDF points. */

export const POINTS_PER = { pt: 1, in: 72, mm: 72 / 25.4, cm: 72 / 2.54, px: 0.75 } as const;

const LENGTH = /^\s*(-?\d+(?:\.\d+)?|-?\.\d+)\s*(pt|in|mm|cm|px)?\s*$/;

/** Parses `12`, `12pt`, `1in`, `25.4mm`, `2.5cm`, `16px`. Returns undefined when it is not a length. */
export function parseLength(text: string): number | undefined {
  const m = LENGTH.exec(text);
  if (!m) return undefined;
  const unit = (m[2] ?? 'pt') as keyof typeof POINTS_PER;
  return Number(m[1]) * POINTS_PER[unit];
}

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

const NAMED: Record<string, string> = {
  black: '#000000',
  white: '#ffffff',
  gray: '#808080',
  grey: '#808080',
  silver: '#c0c0c0',
  red: '#ff0000',
  maroon: '#800000',
  green: '#008000',
  lime: '#00ff00',
  blue: '#0000ff',
  navy: '#000080',
  teal: '#008080',
  aqua: '#00ffff',
  purple: '#800080',
  fuchsia: '#ff00ff',
  olive: '#808000',
  yellow: '#ffff00',
  orange: '#ffa500',
};

/** Parses `#rgb`, `#rrggbb` or one of the 16 HTML colour names (plus orange and grey). */
export function parseColor(text: string): Rgb | undefined {
  const t = text.trim().toLowerCase();
  const hex = NAMED[t] ?? t;
  let m = /^#([0-9a-f])([0-9a-f])([0-9a-f])$/.exec(hex);
  if (m)
    return {
      r: parseInt(m[1] + m[1], 16) / 255,
      g: parseInt(m[2] + m[2], 16) / 255,
      b: parseInt(m[3] + m[3], 16) / 255,
    };
  m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/.exec(hex);
  if (m) return { r: parseInt(m[1], 16) / 255, g: parseInt(m[2], 16) / 255, b: parseInt(m[3], 16) / 255 };
  return undefined;
}

/** Named page sizes, portrait width x height in points. Postcards are named as printers name them (6x4 is 6 in wide). */
export const PAGE_SIZES: Record<string, [number, number]> = {
  letter: [612, 792],
  legal: [612, 1008],
  a4: [595.28, 841.89],
  a5: [419.53, 595.28],
  'postcard-6x4': [432, 288],
  'postcard-9x6': [648, 432],
  'postcard-11x6': [792, 432],
};

/**
 * Parses a page size: a name from PAGE_SIZES, or two lengths `"5in 7in"` / `"5in x 7in"`.
 * Returns [width, height] in points.
 */
export function parsePageSize(text: string): [number, number] | undefined {
  const t = text.trim().toLowerCase();
  const named = PAGE_SIZES[t];
  if (named) return [named[0], named[1]];
  const parts = t.split(/\s*(?:x|\s)\s*/).filter(Boolean);
  if (parts.length !== 2) return undefined;
  const w = parseLength(parts[0]);
  const h = parseLength(parts[1]);
  if (w === undefined || h === undefined || w <= 0 || h <= 0) return undefined;
  return [w, h];
}

export interface Box {
  top: number;
  right: number;
  bottom: number;
  left: number;
}

/** CSS-style shorthand: one value (all sides), two (vertical horizontal), or four (top right bottom left). */
export function parseBox(text: string): Box | undefined {
  const parts = text.trim().split(/\s+/).map(parseLength);
  if (parts.some((p) => p === undefined || p < 0)) return undefined;
  const v = parts as number[];
  if (v.length === 1) return { top: v[0], right: v[0], bottom: v[0], left: v[0] };
  if (v.length === 2) return { top: v[0], right: v[1], bottom: v[0], left: v[1] };
  if (v.length === 4) return { top: v[0], right: v[1], bottom: v[2], left: v[3] };
  return undefined;
}
