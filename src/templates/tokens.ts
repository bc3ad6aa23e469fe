/** Merge fields: `{{name}}` in text and in the attributes that carry text. */
import { SourceLocation, TemplateError } from '../errors';
import type { Token } from './model';

export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_\-]*$/;
const FIELD = /\{\{([\s\S]*?)\}\}/g;

export interface TokenContext {
  /** Aliases of the enclosing `<each>` loops, innermost last. */
  aliases: string[];
  /** Whether `{{page}}` and `{{pages}}` may be used (headers and footers). */
  pageNumbers: boolean;
  /**
   * Records a variable the first time it is used; `fallback` makes it optional (`| default: "…"`).
   * Says what is wrong when the variable was given a different default before.
   */
  use(name: string, fallback?: string): string | undefined;
}

/** Splits text into literal pieces and merge fields. A `{{` without its `}}` is an error, not text. */
export function tokenize(text: string, loc: SourceLocation, ctx: TokenContext): Token[] {
  const out: Token[] = [];
  let last = 0;
  FIELD.lastIndex = 0;
  for (let m = FIELD.exec(text); m; m = FIELD.exec(text)) {
    if (m.index > last) out.push({ t: 'lit', text: text.slice(last, m.index) });
    out.push(field(m[1].trim(), loc, ctx));
    last = m.index + m[0].length;
  }
  const rest = text.slice(last);
  if (rest.includes('{{')) {
    throw new TemplateError(
      `A merge field is opened with "{{" but never closed with "}}" in ${JSON.stringify(rest.trim().slice(0, 40))}.`,
      loc,
    );
  }
  if (rest) out.push({ t: 'lit', text: rest });
  return out;
}

/** `name | default: "text"` (or 'text'): the variable is optional, and the text stands in for it. */
const DEFAULT_FILTER = /^([^|]*?)\s*\|\s*default\s*:\s*(?:"([^"]*)"|'([^']*)')\s*$/;

function field(raw: string, loc: SourceLocation, ctx: TokenContext): Token {
  let expr = raw;
  let fallback: string | undefined;
  if (raw.includes('|')) {
    const m = DEFAULT_FILTER.exec(raw);
    if (!m) {
      throw new TemplateError(
        `{{${raw}}} has a filter this template language does not know. The one filter is a default for an optional variable: {{name | default: "text"}}.`,
        loc,
      );
    }
    expr = m[1].trim();
    fallback = m[2] ?? m[3];
  }
  const [head, ...path] = expr.split('.');
  if (ctx.aliases.includes(head)) {
    if (!path.every((p) => VARIABLE_NAME.test(p))) {
      throw new TemplateError(`{{${expr}}} is not a valid list item field. Write {{${head}.field_name}}.`, loc);
    }
    if (fallback !== undefined)
      throw new TemplateError(
        `{{${raw}}}: a default is for a template variable, not a list item field; every item gives every field it uses.`,
        loc,
      );
    return { t: 'item', alias: head, path, display: expr };
  }
  if (!VARIABLE_NAME.test(expr)) {
    throw new TemplateError(
      `{{${expr}}} is not a valid merge field. Names start with a letter or "_" and use letters, digits, "_" and "-".`,
      loc,
    );
  }
  if (expr === 'page' || expr === 'pages') {
    if (!ctx.pageNumbers) throw new TemplateError(`{{${expr}}} can only be used in a <header> or <footer>.`, loc);
    if (fallback !== undefined)
      throw new TemplateError(`{{${raw}}}: {{${expr}}} always has a value; it takes no default.`, loc);
    return { t: expr };
  }
  const conflict = ctx.use(expr, fallback);
  if (conflict) throw new TemplateError(conflict, loc);
  return { t: 'var', name: expr };
}
