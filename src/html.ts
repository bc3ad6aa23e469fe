/**
 * HTML written with one template tag that escapes by default: in html`<p>${name}</p>` the name is
 * text, whatever it holds. Markup goes in only as `Html`: what `html` itself made (so parts nest),
 * or what `raw` marks, for the few constants written in this repository (an SVG, a stylesheet).
 * A missed escape cannot happen by forgetting a call; it takes a `raw(...)` that review can see.
 */

/** Markup, safe to write as it is. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** What may go into a template: text (escaped), numbers, markup, lists of these; nothing for null, undefined and false. */
export type HtmlValue = Html | string | number | null | undefined | false | readonly HtmlValue[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

const SPECIAL = /[&<>"']/;
const SPECIALS = /[&<>"']/g;

/** Text as HTML text or attribute value (both quotes escaped). */
export function escapeHtml(text: string): string {
  // most text has nothing to escape: tested once, returned as it is
  return SPECIAL.test(text) ? text.replace(SPECIALS, (c) => ENTITIES[c]) : text;
}

function write(value: HtmlValue): string {
  if (typeof value === 'string') return escapeHtml(value);
  if (value instanceof Html) return value.text;
  if (typeof value === 'number') return String(value);
  if (value === null || value === undefined || value === false) return '';
  let out = '';
  for (const v of value) out += write(v);
  return out;
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += write(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Plain text of several lines as HTML: each line escaped, the line breaks as <br> (an e-mail program may ignore white-space). */
export function lines(text: string): Html {
  return html`${text.split('\n').map((line, i) => (i ? [raw('<br />'), line] : line))}`;
}

/** Markup written in this repository, taken as it is. Never for anything that came from outside. */
export function raw(markup: string): Html {
  return new Html(markup);
}

/**
 * The one page head of every page we serve (the recipient's pages, the web app): language,
 * character set, viewport, not indexed; then the page's own title, styles and scripts.
 */
export function htmlPage(o: { title: string; head?: Html; body: Html; noReferrer?: boolean }): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${o.noReferrer ? raw('<meta name="referrer" content="no-referrer">\n') : ''}
        <meta name="robots" content="noindex" />
        <title>${o.title}</title>
        ${o.head}
      </head>
      <body>
        ${o.body}
      </body>
    </html>`;
}
