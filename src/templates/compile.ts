/**
 * Compiles template XML into the typed model of model.ts. Every element and attribute is checked
 * here, once, with its source location, so rendering never meets a surprise in the template itself.
 */
import { pageOf, presetNamed, PRESETS } from './presets';
import { SourceLocation, TemplateError, UnsupportedCharacterError } from '../errors';
import { createFace, FontSet, hasGlyph, type FontFace } from './fonts';
import { decodeDataUri, imageSize, readImage, type ImageAsset } from './images';
import { checkLimit } from './limits';
import type {
  Block,
  Cell,
  Column,
  Inline,
  Ref,
  Region,
  Row,
  RowNode,
  Table,
  TextStyle,
  Token,
  XmlTemplate,
} from './model';
import { tokenize, VARIABLE_NAME, type TokenContext } from './tokens';
import { parseBox, parseColor, parseLength, parsePageSize, type Box, type Rgb } from './units';
import { readXml, type XmlElement, type XmlNode } from './xml';

/** Reads an asset shipped beside a template, by its relative path. Undefined when there is none. */
export type AssetResolver = (relativePath: string) => Promise<Uint8Array | undefined>;

const FLOW = ['p', 'h1', 'h2', 'h3', 'image', 'rect', 'line', 'spacer', 'page-break', 'table', 'if', 'each'];
const INLINE = ['b', 'i', 'u', 'span', 'br', 'if', 'each'];

const HEADINGS: Record<string, { size: number; before: number; after: number }> = {
  h1: { size: 2, before: 6, after: 10 },
  h2: { size: 1.5, before: 10, after: 6 },
  h3: { size: 1.2, before: 8, after: 4 },
};

/** Reads an element's attributes; whatever was never asked for is an unknown attribute. */
class Attrs {
  private readonly asked = new Set<string>();
  constructor(private readonly el: XmlElement) {}

  private raw(name: string): string | undefined {
    this.asked.add(name);
    const v = this.el.attrs[name];
    if (v !== undefined && v.includes('{{')) {
      throw new TemplateError(
        `Merge fields are not allowed in the "${name}" attribute of <${this.el.name}>.`,
        this.el.loc,
      );
    }
    return v;
  }

  private bad(name: string, value: string, expected: string): never {
    throw new TemplateError(`<${this.el.name} ${name}="${value}">: ${name} must be ${expected}.`, this.el.loc);
  }

  text(name: string): string | undefined {
    return this.raw(name);
  }

  required(name: string): string {
    const v = this.raw(name);
    if (v === undefined || v.trim() === '')
      throw new TemplateError(`<${this.el.name}> needs a "${name}" attribute.`, this.el.loc);
    return v.trim();
  }

  /** An attribute whose value may carry merge fields. */
  tokens(name: string, ctx: TokenContext): Token[] | undefined {
    this.asked.add(name);
    const v = this.el.attrs[name];
    return v === undefined ? undefined : tokenize(v, this.el.loc, ctx);
  }

  length(name: string, opts: { min?: number } = {}): number | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const n = parseLength(v);
    if (n === undefined || n < (opts.min ?? 0))
      this.bad(
        name,
        v,
        `a length like 12, 12pt, 0.5in, 10mm or 1cm${opts.min !== undefined ? ` of at least ${opts.min}pt` : ''}`,
      );
    return n;
  }

  positive(name: string): number | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const n = parseLength(v);
    if (n === undefined || n <= 0) this.bad(name, v, 'a length greater than zero, like 12, 12pt, 0.5in, 10mm or 1cm');
    return n;
  }

  number(name: string, min: number, max: number): number | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max)
      this.bad(name, v, `a number from ${min} to ${max}`);
    return n;
  }

  integer(name: string, min: number, max: number): number | undefined {
    const n = this.number(name, min, max);
    if (n !== undefined && !Number.isInteger(n)) this.bad(name, String(n), `a whole number from ${min} to ${max}`);
    return n;
  }

  color(name: string): Rgb | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    if (v.trim().toLowerCase() === 'none') return undefined;
    return parseColor(v) ?? this.bad(name, v, 'a colour like #1a73e8, #333 or a name like black');
  }

  bool(name: string): boolean | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const t = v.trim().toLowerCase();
    if (t === 'true' || t === 'yes' || t === '1') return true;
    if (t === 'false' || t === 'no' || t === '0') return false;
    return this.bad(name, v, 'true or false');
  }

  oneOf<T extends string>(name: string, values: readonly T[]): T | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const t = v.trim().toLowerCase() as T;
    if (!values.includes(t)) this.bad(name, v, `one of ${values.join(', ')}`);
    return t;
  }

  box(name: string): Box | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    return parseBox(v) ?? this.bad(name, v, 'one, two or four lengths, like "1in" or "72 54 72 54"');
  }

  /** Call after reading every attribute the element knows. */
  done(): void {
    for (const name of Object.keys(this.el.attrs)) {
      if (!this.asked.has(name)) {
        const known = [...this.asked].sort();
        throw new TemplateError(
          `<${this.el.name}> has no attribute "${name}".${known.length ? ` It knows: ${known.join(', ')}.` : ' It takes no attributes.'}`,
          this.el.loc,
        );
      }
    }
  }
}

interface Scope extends TokenContext {
  style: TextStyle;
  lineHeight: number;
}

class Compiler {
  readonly variables: string[] = [];
  private readonly seen = new Set<string>();
  readonly fonts = new FontSet();

  constructor(private readonly assets: AssetResolver | undefined) {}

  /** Optional variables and the text that stands in for each (one default per variable). */
  readonly defaults = new Map<string, string>();

  use = (name: string, fallback?: string): string | undefined => {
    if (!this.seen.has(name)) {
      this.seen.add(name);
      this.variables.push(name);
    }
    if (fallback === undefined) return undefined;
    const before = this.defaults.get(name);
    if (before !== undefined && before !== fallback) {
      return `{{${name}}} has two defaults, ${JSON.stringify(before)} and ${JSON.stringify(fallback)}. Give a variable one default (it applies wherever the variable is used).`;
    }
    this.defaults.set(name, fallback);
    return undefined;
  };

  elements(node: XmlElement, allowed: string[], where: string): XmlElement[] {
    const out: XmlElement[] = [];
    for (const child of node.children) {
      if (child.kind === 'text') {
        if (child.text.trim() !== '') {
          throw new TemplateError(
            `Text ${JSON.stringify(child.text.trim().slice(0, 30))} cannot stand directly in <${node.name}>; put it in a <p>${where === 'table' ? ' inside a <td>' : ''}.`,
            child.loc,
          );
        }
        continue;
      }
      if (!allowed.includes(child.name)) {
        throw new TemplateError(
          `<${child.name}> is not allowed in <${node.name}>. Allowed here: ${allowed.map((a) => `<${a}>`).join(' ')}.`,
          child.loc,
        );
      }
      out.push(child);
    }
    return out;
  }

  async asset(src: string, el: XmlElement, what: string): Promise<Uint8Array> {
    const data = decodeDataUri(src);
    if (data) return data;
    if (src.startsWith('data:'))
      throw new TemplateError(
        `The ${what} data URI in <${el.name}> must be base64-encoded ("data:image/png;base64,...").`,
        el.loc,
      );
    const normalized = src.replace(/\\/g, '/');
    if (/^[a-z][a-z0-9+.-]*:/i.test(normalized) || normalized.startsWith('/') || normalized.split('/').includes('..')) {
      throw new TemplateError(
        `${what} "${src}" must be a data URI or a path relative to the template, inside its folder (no "..", no absolute paths, no URLs).`,
        el.loc,
      );
    }
    const bytes = this.assets ? await this.assets(normalized) : undefined;
    if (!bytes) {
      throw new TemplateError(
        `${what} "${src}" was not found beside the template. Ship the file with the template or use a data URI.`,
        el.loc,
      );
    }
    return bytes;
  }

  async loadFonts(el: XmlElement): Promise<void> {
    new Attrs(el).done();
    for (const f of this.elements(el, ['font'], 'fonts')) {
      const a = new Attrs(f);
      const family = a.required('family');
      const files = {
        regular: a.required('src'),
        bold: a.text('bold'),
        italic: a.text('italic'),
        boldItalic: a.text('bold-italic'),
      };
      a.done();
      if (!/^[A-Za-z][\w -]*$/.test(family))
        throw new TemplateError(
          `Font family "${family}" must start with a letter and use letters, digits, spaces, "_" and "-".`,
          f.loc,
        );
      const face = async (src: string | undefined, style: string): Promise<FontFace | undefined> => {
        if (src === undefined) return undefined;
        const bytes = await this.asset(src, f, 'Font');
        try {
          return createFace(bytes, `${family} ${style}`.trim());
        } catch (err) {
          throw new TemplateError(`Font "${src}" ${(err as Error).message}.`, f.loc);
        }
      };
      this.fonts.add({
        name: family,
        regular: (await face(files.regular, ''))!,
        bold: await face(files.bold, 'bold'),
        italic: await face(files.italic, 'italic'),
        boldItalic: await face(files.boldItalic, 'bold italic'),
      });
    }
  }

  /** Reads the style attributes of an element on top of the inherited style. */
  style(a: Attrs, base: TextStyle, el: XmlElement): TextStyle {
    const fontName = a.text('font');
    let family = base.family;
    if (fontName !== undefined) {
      const resolved = this.fonts.resolveName(fontName);
      if (!resolved)
        throw new TemplateError(
          `Unknown font "${fontName}". Available: ${this.fonts.names().join(', ')}; declare others in <fonts>.`,
          el.loc,
        );
      family = resolved;
    }
    const size = a.number('font-size', 1, 500) ?? base.size;
    return {
      family,
      size,
      color: a.color('color') ?? base.color,
      bold: a.bool('bold') ?? base.bold,
      italic: a.bool('italic') ?? base.italic,
      underline: a.bool('underline') ?? base.underline,
    };
  }

  ref(text: string, el: XmlElement, scope: Scope): Ref {
    const tokens = tokenize(`{{${text}}}`, el.loc, scope);
    const t = tokens[0];
    if (tokens.length !== 1 || (t.t !== 'var' && t.t !== 'item')) {
      throw new TemplateError(`"${text}" is not a variable name.`, el.loc);
    }
    return t;
  }

  cond<T>(
    el: XmlElement,
    scope: Scope,
    children: (s: Scope) => Promise<T[]>,
  ): Promise<{ kind: 'if'; test: Ref; negate: boolean; children: T[] }> {
    const a = new Attrs(el);
    const pos = a.text('var');
    const neg = a.text('not');
    a.done();
    if ((pos === undefined) === (neg === undefined)) {
      throw new TemplateError(
        '<if> needs exactly one of var="name" (shown when the value is not empty) or not="name" (shown when it is empty).',
        el.loc,
      );
    }
    const test = this.ref((pos ?? neg)!.trim(), el, scope);
    return children(scope).then((c) => ({ kind: 'if' as const, test, negate: neg !== undefined, children: c }));
  }

  async loop<T>(
    el: XmlElement,
    scope: Scope,
    children: (s: Scope) => Promise<T[]>,
  ): Promise<{ kind: 'each'; list: Ref; alias: string; children: T[]; loc: SourceLocation }> {
    const a = new Attrs(el);
    const list = this.ref(a.required('var'), el, scope);
    const alias = (a.text('as') ?? 'item').trim();
    a.done();
    if (!VARIABLE_NAME.test(alias) || alias === 'page' || alias === 'pages') {
      throw new TemplateError(`<each as="${alias}">: the alias must be a plain name like "item".`, el.loc);
    }
    const inner: Scope = { ...scope, aliases: [...scope.aliases, alias] };
    return { kind: 'each', list, alias, children: await children(inner), loc: el.loc };
  }

  checkGlyphs(text: string, style: TextStyle, loc: SourceLocation): void {
    const chain = this.fonts.chain(style);
    for (const ch of text) {
      const cp = ch.codePointAt(0)!;
      if (cp <= 32) continue;
      if (!chain.some((f) => hasGlyph(f, cp))) {
        throw new UnsupportedCharacterError(ch, { location: loc, font: chain.map((f) => f.label).join(', ') });
      }
    }
  }

  async inlines(el: XmlElement, scope: Scope): Promise<Inline[]> {
    const out: Inline[] = [];
    for (const child of el.children) {
      if (child.kind === 'text') {
        // XML's white space collapses (space, tab, CR, LF), not JavaScript's \s: a no-break space
        // (&#160;) written in a template stays one, so the words beside it stay on one line
        const tokens = tokenize(child.text.replace(/[ \t\r\n]+/g, ' '), child.loc, scope);
        for (const t of tokens) if (t.t === 'lit') this.checkGlyphs(t.text, scope.style, child.loc);
        if (tokens.length) out.push({ kind: 'text', tokens, style: scope.style, loc: child.loc });
        continue;
      }
      if (!INLINE.includes(child.name)) {
        throw new TemplateError(
          `<${child.name}> is not allowed inside text. Allowed: ${INLINE.map((a) => `<${a}>`).join(' ')}.`,
          child.loc,
        );
      }
      if (child.name === 'br') {
        new Attrs(child).done();
        if (child.children.length) throw new TemplateError('<br/> has no content.', child.loc);
        out.push({ kind: 'br' });
        continue;
      }
      if (child.name === 'if') {
        out.push(await this.cond(child, scope, (s) => this.inlines(child, s)));
        continue;
      }
      if (child.name === 'each') {
        out.push(await this.loop(child, scope, (s) => this.inlines(child, s)));
        continue;
      }
      const a = new Attrs(child);
      let style: TextStyle;
      if (child.name === 'span') style = this.style(a, scope.style, child);
      else {
        style = { ...scope.style };
        if (child.name === 'b') style.bold = true;
        if (child.name === 'i') style.italic = true;
        if (child.name === 'u') style.underline = true;
      }
      a.done();
      out.push(...(await this.inlines(child, { ...scope, style })));
    }
    return out;
  }

  async flow(el: XmlElement, scope: Scope): Promise<Block[]> {
    const out: Block[] = [];
    for (const child of this.elements(el, FLOW, 'flow')) out.push(await this.block(child, scope));
    return out;
  }

  at(a: Attrs, el: XmlElement): { x: number; y: number } | undefined {
    const x = a.length('x');
    const y = a.length('y');
    if ((x === undefined) !== (y === undefined))
      throw new TemplateError(`<${el.name}> needs both x and y to be placed on the page, or neither to flow.`, el.loc);
    return x === undefined ? undefined : { x, y: y! };
  }

  noChildren(el: XmlElement): void {
    if (el.children.some((c) => c.kind === 'element' || c.text.trim() !== ''))
      throw new TemplateError(`<${el.name}> has no content; write <${el.name} ... />.`, el.loc);
  }

  // one case per element of the layout language, each its own few lines: split, it would be read
  // by jumping between functions that each hold one case
  // eslint-disable-next-line max-lines-per-function
  async block(el: XmlElement, scope: Scope): Promise<Block> {
    switch (el.name) {
      case 'p':
      case 'h1':
      case 'h2':
      case 'h3': {
        const a = new Attrs(el);
        const heading = HEADINGS[el.name];
        const base = heading
          ? { ...scope.style, bold: true, size: Math.round(scope.style.size * heading.size * 10) / 10 }
          : scope.style;
        const style = this.style(a, base, el);
        const align = a.oneOf('align', ['left', 'right', 'center', 'justify'] as const) ?? 'left';
        const lineHeight = a.number('line-height', 0.5, 5) ?? scope.lineHeight;
        const spaceBefore = a.length('space-before') ?? heading?.before ?? 0;
        const spaceAfter = a.length('space-after') ?? heading?.after ?? 6;
        const pos = this.at(a, el);
        const width = a.positive('width');
        const height = a.positive('height');
        const overflow = a.oneOf('overflow', ['visible', 'shrink', 'error'] as const) ?? 'visible';
        const minFontSize = a.number('min-font-size', 1, 100) ?? 6;
        const keepWithNext = a.bool('keep-with-next') ?? heading !== undefined;
        const hyphenate = a.bool('hyphenate');
        a.done();
        if (pos && width === undefined)
          throw new TemplateError(`<${el.name}> placed with x and y also needs a width.`, el.loc);
        if (!pos && (height !== undefined || overflow !== 'visible'))
          throw new TemplateError(
            `<${el.name}>: height and overflow are for text placed with x and y (text in the flow goes on to the next page).`,
            el.loc,
          );
        const inlines = await this.inlines(el, { ...scope, style });
        return {
          kind: 'p',
          role: heading ? (el.name.toUpperCase() as 'H1' | 'H2' | 'H3') : 'P',
          align: align,
          lineHeight,
          spaceBefore,
          spaceAfter,
          inlines,
          width,
          at: pos,
          height,
          overflow,
          minFontSize,
          keepWithNext,
          hyphenate,
          loc: el.loc,
        };
      }
      case 'image': {
        const a = new Attrs(el);
        const src = a.required('src');
        const widthText = a.text('width');
        const height = a.positive('height');
        const align = a.oneOf('align', ['left', 'right', 'center'] as const) ?? 'left';
        const alt = a.tokens('alt', scope);
        const spaceBefore = a.length('space-before') ?? 0;
        const spaceAfter = a.length('space-after') ?? 6;
        const pos = this.at(a, el);
        const keepWithNext = a.bool('keep-with-next') ?? false;
        a.done();
        this.noChildren(el);
        let width: number | undefined;
        let widthFraction: number | undefined;
        if (widthText !== undefined) {
          const pct = /^\s*(\d+(?:\.\d+)?)%\s*$/.exec(widthText);
          if (pct && Number(pct[1]) > 0 && Number(pct[1]) <= 100) widthFraction = Number(pct[1]) / 100;
          else {
            width = parseLength(widthText);
            if (width === undefined || width <= 0)
              throw new TemplateError(
                `<image width="${widthText}">: width must be a length like 2in or a percentage like 50%.`,
                el.loc,
              );
          }
        }
        const bytes = await this.asset(src, el, 'Image');
        const size = imageSize(bytes);
        // before anything decodes it: a small file can hold an image of billions of pixels
        if (size)
          checkLimit(
            'imagePixels',
            size.width * size.height,
            `Image "${src.startsWith('data:') ? 'data URI' : src}" (${size.width} × ${size.height} pixels)`,
          );
        let image: ImageAsset;
        try {
          image = await readImage(bytes);
        } catch (err) {
          throw new TemplateError(
            `Image "${src.startsWith('data:') ? 'data URI' : src}" ${(err as Error).message}.`,
            el.loc,
          );
        }
        return {
          kind: 'image',
          image,
          width,
          widthFraction,
          height,
          align,
          alt,
          spaceBefore,
          spaceAfter,
          keepWithNext,
          at: pos,
          loc: el.loc,
        };
      }
      case 'rect': {
        const a = new Attrs(el);
        const width = a.positive('width');
        const height = a.positive('height');
        const fill = a.color('fill');
        const border = a.color('border');
        const borderWidth = a.length('border-width') ?? 1;
        const spaceBefore = a.length('space-before') ?? 0;
        const spaceAfter = a.length('space-after') ?? 6;
        const pos = this.at(a, el);
        a.done();
        this.noChildren(el);
        if (height === undefined) throw new TemplateError('<rect> needs a height.', el.loc);
        if (pos && width === undefined)
          throw new TemplateError('<rect> placed with x and y also needs a width.', el.loc);
        return { kind: 'rect', width, height, fill, border, borderWidth, spaceBefore, spaceAfter, at: pos };
      }
      case 'line': {
        const a = new Attrs(el);
        const thickness = a.positive('thickness') ?? 0.75;
        const color = a.color('color') ?? { r: 0.6, g: 0.6, b: 0.6 };
        const spaceBefore = a.length('space-before') ?? 4;
        const spaceAfter = a.length('space-after') ?? 8;
        const coords = ['x1', 'y1', 'x2', 'y2'].map((n) => a.length(n));
        a.done();
        this.noChildren(el);
        const given = coords.filter((c) => c !== undefined).length;
        if (given !== 0 && given !== 4)
          throw new TemplateError(
            '<line> takes all of x1, y1, x2, y2 (placed on the page) or none (a rule across the flow).',
            el.loc,
          );
        return given
          ? {
              kind: 'line',
              thickness,
              color,
              spaceBefore,
              spaceAfter,
              from: { x: coords[0]!, y: coords[1]! },
              to: { x: coords[2]!, y: coords[3]! },
            }
          : { kind: 'line', thickness, color, spaceBefore, spaceAfter };
      }
      case 'spacer': {
        const a = new Attrs(el);
        const height = a.length('height');
        a.done();
        this.noChildren(el);
        if (height === undefined) throw new TemplateError('<spacer> needs a height.', el.loc);
        return { kind: 'spacer', height };
      }
      case 'page-break':
        new Attrs(el).done();
        this.noChildren(el);
        return { kind: 'page-break' };
      case 'table':
        return this.table(el, scope);
      case 'if':
        return this.cond(el, scope, (s) => this.flow(el, s));
      case 'each':
        return this.loop(el, scope, (s) => this.flow(el, s));
      default:
        throw new TemplateError(`Unknown element <${el.name}>.`, el.loc);
    }
  }

  async table(el: XmlElement, outer: Scope): Promise<Table> {
    const a = new Attrs(el);
    const style = this.style(a, outer.style, el);
    const width = a.positive('width');
    const border = a.length('border') ?? 0.5;
    const borderColor = a.color('border-color') ?? { r: 0.55, g: 0.55, b: 0.55 };
    const rules = a.oneOf('rules', ['all', 'rows', 'none'] as const) ?? 'all';
    const padding = a.box('padding') ?? { top: 4, right: 5, bottom: 4, left: 5 };
    const headerFill = a.color('header-fill');
    const stripe = a.color('stripe');
    const lineHeight = a.number('line-height', 0.5, 5) ?? outer.lineHeight;
    const keepTogether = a.bool('keep-together') ?? false;
    const spaceBefore = a.length('space-before') ?? 4;
    const spaceAfter = a.length('space-after') ?? 10;
    a.done();
    const scope: Scope = { ...outer, style };
    const columns: Column[] = [];
    const header: RowNode[] = [];
    const rows: RowNode[] = [];
    for (const child of this.elements(el, ['col', 'thead', 'tr', 'if', 'each'], 'table')) {
      if (child.name === 'col') {
        if (rows.length || header.length) throw new TemplateError('<col> elements come first in a <table>.', child.loc);
        columns.push(this.column(child));
      } else if (child.name === 'thead') {
        new Attrs(child).done();
        if (rows.length) throw new TemplateError('<thead> comes before the rows of a <table>.', child.loc);
        for (const r of this.elements(child, ['tr', 'if'], 'table'))
          header.push(await this.rowNode(r, { ...scope, style: { ...style, bold: true } }, columns.length));
      } else {
        rows.push(await this.rowNode(child, scope, columns.length));
      }
    }
    if (columns.length === 0)
      throw new TemplateError(
        'A <table> declares its columns first: <col width="2*"/> <col width="1in" align="right"/> …',
        el.loc,
      );
    return {
      kind: 'table',
      columns,
      header,
      rows,
      width,
      border,
      borderColor,
      rules,
      padding,
      headerFill,
      stripe,
      lineHeight,
      keepTogether,
      spaceBefore,
      spaceAfter,
      loc: el.loc,
    };
  }

  column(el: XmlElement): Column {
    const a = new Attrs(el);
    const w = (a.text('width') ?? '*').trim();
    const align = a.oneOf('align', ['left', 'right', 'center'] as const) ?? 'left';
    a.done();
    this.noChildren(el);
    const star = /^(\d+(?:\.\d+)?)?\*$/.exec(w);
    if (star) return { stars: star[1] ? Number(star[1]) : 1, align };
    const pct = /^(\d+(?:\.\d+)?)%$/.exec(w);
    if (pct && Number(pct[1]) > 0 && Number(pct[1]) <= 100) return { fraction: Number(pct[1]) / 100, align };
    const pts = parseLength(w);
    if (pts !== undefined && pts > 0) return { points: pts, align };
    throw new TemplateError(
      `<col width="${w}">: width must be a length (1.5in), a percentage (20%) or a share of what is left (*, 2*).`,
      el.loc,
    );
  }

  async rowNode(el: XmlElement, scope: Scope, columnCount: number): Promise<RowNode> {
    if (el.name === 'if')
      return this.cond(el, scope, async (s) =>
        Promise.all(this.elements(el, ['tr', 'if', 'each'], 'table').map((c) => this.rowNode(c, s, columnCount))),
      );
    if (el.name === 'each')
      return this.loop(el, scope, async (s) =>
        Promise.all(this.elements(el, ['tr', 'if', 'each'], 'table').map((c) => this.rowNode(c, s, columnCount))),
      );
    const a = new Attrs(el);
    const fill = a.color('fill');
    a.done();
    const cells: Cell[] = [];
    for (const td of this.elements(el, ['td', 'th'], 'table')) {
      const ca = new Attrs(td);
      const base = td.name === 'th' ? { ...scope.style, bold: true } : scope.style;
      const style = this.style(ca, base, td);
      const colspan = ca.integer('colspan', 1, 100) ?? 1;
      const align = ca.oneOf('align', ['left', 'right', 'center'] as const);
      const cellFill = ca.color('fill');
      ca.done();
      cells.push({ colspan, align, fill: cellFill, inlines: await this.inlines(td, { ...scope, style }) });
    }
    const span = cells.reduce((n, c) => n + c.colspan, 0);
    if (span !== columnCount) {
      throw new TemplateError(
        `This row spans ${span} column${span === 1 ? '' : 's'} but the table has ${columnCount}. Add cells or use colspan.`,
        el.loc,
      );
    }
    return { kind: 'tr', fill, cells } satisfies Row;
  }

  async region(el: XmlElement, scope: Scope): Promise<Region> {
    const a = new Attrs(el);
    const on = a.oneOf('on', ['all', 'first', 'rest'] as const) ?? 'all';
    const gap = a.length('gap') ?? 12;
    a.done();
    return { on, gap, blocks: await this.flow(el, { ...scope, pageNumbers: true }) };
  }
}

export interface CompileOptions {
  assets?: AssetResolver;
  /** Used when the template does not name itself. */
  name?: string;
}

export async function compileXml(source: string, options: CompileOptions = {}): Promise<XmlTemplate> {
  const root = readXml(source.replace(/^\uFEFF/, ''));
  if (root.name !== 'document')
    throw new TemplateError(`The root element must be <document>, not <${root.name}>.`, root.loc);
  const c = new Compiler(options.assets);
  const a = new Attrs(root);
  const name = a.text('name')?.trim() || options.name || 'Untitled template';
  const sizeText = a.text('size') ?? 'letter';
  let size = parsePageSize(sizeText);
  if (!size) {
    throw new TemplateError(
      `<document size="${sizeText}">: use letter, legal, a4, a5, postcard-6x4, postcard-9x6, postcard-11x6, or two lengths like "5in 7in".`,
      root.loc,
    );
  }
  const orientation = a.oneOf('orientation', ['portrait', 'landscape'] as const);
  if (orientation && (orientation === 'landscape') !== size[0] > size[1]) size = [size[1], size[0]];
  // a postcard size is the page: its trim and the bleed around it (src/postcards/presets.ts)
  const postcardText = a.text('postcard');
  const postcard =
    postcardText === undefined
      ? undefined
      : presetNamed(postcardText, `<document postcard="${postcardText}">`, root.loc);
  if (postcard) size = pageOf(PRESETS[postcard]);
  const margin = a.box('margin') ?? { top: 72, right: 72, bottom: 72, left: 72 };
  const orphans = a.integer('orphans', 1, 10) ?? 2;
  const widows = a.integer('widows', 1, 10) ?? 2;
  const lang = a.text('lang') ?? 'en';
  if (!/^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/.test(lang))
    throw new TemplateError(
      `<document lang="${lang}">: write a language tag such as en, en-US, de or fr-CA (BCP 47).`,
      root.loc,
    );
  const tagged = a.bool('tagged') ?? true;
  const hyphenate = a.bool('hyphenate');

  // Fonts first, wherever <fonts> stands, so every style can name them.
  for (const el of root.children) if (el.kind === 'element' && el.name === 'fonts') await c.loadFonts(el);

  const scope: Scope = {
    aliases: [],
    pageNumbers: false,
    use: c.use,
    lineHeight: 1.3,
    style: {
      family: 'sans',
      size: 11,
      color: { r: 0.1, g: 0.1, b: 0.1 },
      bold: false,
      italic: false,
      underline: false,
    },
  };
  scope.style = c.style(a, scope.style, root);
  scope.lineHeight = a.number('line-height', 0.5, 5) ?? scope.lineHeight;
  const metadata = {
    title: a.tokens('title', scope),
    author: a.tokens('author', scope),
    subject: a.tokens('subject', scope),
    keywords: a.tokens('keywords', scope),
  };
  a.done();

  if (size[0] - margin.left - margin.right < 36 || size[1] - margin.top - margin.bottom < 36) {
    throw new TemplateError('The margins leave less than half an inch for content. Make them smaller.', root.loc);
  }

  const headers: Region[] = [];
  const footers: Region[] = [];
  let body: Block[] | undefined;
  for (const el of c.elements(root, ['fonts', 'header', 'footer', 'body'], 'document')) {
    if (el.name === 'header') headers.push(await c.region(el, scope));
    else if (el.name === 'footer') footers.push(await c.region(el, scope));
    else if (el.name === 'body') {
      if (body) throw new TemplateError('A document has one <body>.', el.loc);
      new Attrs(el).done();
      body = await c.flow(el, scope);
    }
  }
  if (!body) throw new TemplateError('The document has no <body>. Put its content in <body>…</body>.', root.loc);

  return {
    kind: 'xml',
    name,
    ...(postcard && { postcard }),
    pageWidth: size[0],
    pageHeight: size[1],
    margin,
    metadata,
    fonts: c.fonts,
    headers,
    footers,
    body,
    lang,
    hyphenate,
    tagged,
    orphans,
    widows,
    variables: c.variables,
    defaults: Object.fromEntries(c.defaults),
  };
}

export type { XmlNode };
