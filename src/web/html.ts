/**
 * The web app's HTML: one shell (navigation, who is signed in, sign-out) and the small parts
 * every page uses, written with the escaping template of src/html.ts: nothing the browser sent is
 * written back unescaped.
 */
import type { ErrorDetail } from '../errors';
import { LOGO_SVG } from '../http/assets';
import { VIEWER_SCRIPT } from '../links/pages';
import { Html, html, htmlPage, raw, type HtmlValue } from '../html';

export { html, raw, type Html };

export type Section = 'templates' | 'generate' | 'documents' | 'links' | 'postcards' | 'settings';

const NAV: [Section, string][] = [
  ['templates', 'Templates'],
  ['generate', 'Generate'],
  ['documents', 'Documents'],
  ['links', 'Magic Links'],
  ['postcards', 'Postcards'],
  ['settings', 'Settings'],
];

const LOGO = raw(LOGO_SVG.replace('<svg ', '<svg width="26" height="26" aria-hidden="true" '));
const APP_HEAD = raw(`<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>`);

export interface Viewer {
  name: string;
  csrf: string;
}

/** A signed-in page. */
export function layout(o: { title: string; section: Section; viewer: Viewer; body: Html; scripts?: Html }): string {
  const nav = NAV.map(
    ([id, label]) => html`<a href="/app/${id}" ${id === o.section ? raw(' aria-current="page"') : ''}>${label}</a>`,
  );
  return htmlPage({
    title: `${o.title} · Paperlink`,
    head: APP_HEAD,
    body: html`<a class="skip" href="#main">Skip to content</a>
      <div class="shell">
        <aside class="side">
          <a class="brand" href="/app">${LOGO}<span>Paperlink</span></a>
          <nav aria-label="Sections">${nav}</nav>
          <div class="who">
            <span class="muted small hide-sm">Signed in as</span><strong>${o.viewer.name}</strong>
            <form method="post" action="/app/signout">
              ${csrfField(o.viewer.csrf)}<button type="submit">Sign out</button>
            </form>
          </div>
        </aside>
        <main id="main" tabindex="-1">
          <div id="live" class="skip" aria-live="polite"></div>
          ${o.body}
        </main>
      </div>
      ${o.scripts}`,
  }).text;
}

/** A page outside the shell (sign-in, errors before sign-in). */
export function bare(title: string, body: Html): string {
  return htmlPage({
    title: `${title} · Paperlink`,
    head: APP_HEAD,
    body: html`<main class="signin" id="main">
      <div class="card">
        <a class="brand" href="/app">${LOGO}<span>Paperlink</span></a>
        ${body}
      </div>
    </main>`,
  }).text;
}

export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}" />`;
}

/** A POST button in its own form (revoke, delete, expire), with an optional confirmation. */
export function actionButton(o: {
  action: string;
  label: string;
  csrf: string;
  confirm?: string;
  style?: 'danger' | 'secondary';
  hidden?: Record<string, string>;
}): Html {
  const extra = Object.entries(o.hidden ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`);
  return html`<form
    class="inline"
    method="post"
    action="${o.action}"
    ${o.confirm ? html` data-confirm="${o.confirm}"` : ''}
  >
    ${csrfField(o.csrf)}${extra}<button type="submit" class="${o.style ?? 'secondary'}">${o.label}</button>
  </form>`;
}

export function copyButton(value: string, label = 'Copy'): Html {
  return html`<button type="button" class="copy" data-copy="${value}" aria-label="${`${label} ${value}`}">
    ${label}
  </button>`;
}

/** An id in monospace with a copy button. */
export function idWithCopy(id: string): Html {
  return html`<span class="id"><code>${id}</code>${copyButton(id)}</span>`;
}

/** What a print check warned of (a template's `print_warnings`, a postcard's `warnings`): the side or variable, and where. */
export function printWarnings(warnings: { field: string; message: string; box?: { x: number; y: number } }[]): Html {
  const at = (box?: { x: number; y: number }) => (box ? ` (at ${Math.round(box.x)}, ${Math.round(box.y)} pt)` : '');
  return html`<ul class="warnings">
    ${warnings.map((w) => html`<li><strong>${w.field}</strong>: ${w.message}${at(w.box)}</li>`)}
  </ul>`;
}

export function badge(status: string): Html {
  return html`<span class="badge ${status}">${status.replace(/_/g, ' ')}</span>`;
}

export function when(isoTime: string | null | undefined, empty = '—'): Html {
  if (!isoTime) return html`<span class="muted">${empty}</span>`;
  return html`<time datetime="${isoTime}">${isoTime.replace('T', ' ').slice(0, 16)} UTC</time>`;
}

export function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The API's error, as a notice: its message and one line per detail. */
export function errorNotice(
  e: { message: string; details: ErrorDetail[] } | undefined,
  label: (field: string) => string = (f) => f,
): Html | '' {
  if (!e) return '';
  const lines = e.details
    // a detail the headline already says (a template error names its line in both) is not said twice
    .filter((d) => !e.message.includes(d.message))
    .map((d) => html`<li><strong>${label(d.field)}</strong> ${d.message}</li>`);
  return html`<div class="notice error" role="alert">
    <strong>${e.message}</strong>${
      lines.length
        ? html`<ul>
            ${lines}
          </ul>`
        : ''
    }
  </div>`;
}

export function notice(text: string | undefined): Html | '' {
  return text ? html`<div class="notice ok" role="status">${text}</div>` : '';
}

/** Shown once, right after a key, token or webhook secret is made. */
export function secretNotice(title: string, secret: string, hint: string): Html {
  return html`<div class="notice secret" role="status">
    <strong>${title}</strong>
    <div class="secret-value"><code data-secret>${secret}</code>${copyButton(secret)}</div>
    <p class="small gap-above">${hint}</p>
  </div>`;
}

/** A labelled input. `errors` maps a form field name to its message; `id` is f-<name> unless given. */
export function field(o: {
  name: string;
  label: string;
  value?: string;
  type?: string;
  hint?: string;
  errors?: Map<string, string>;
  required?: boolean;
  textarea?: boolean;
  id?: string;
  /** Further attributes, written here (never from input). */
  attrs?: Html;
}): Html {
  const id = o.id ?? `f-${o.name.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  const error = o.errors?.get(o.name);
  const describe = [o.hint ? `${id}-hint` : '', error ? `${id}-err` : ''].filter(Boolean).join(' ');
  const common = html`id="${id}"
  name="${o.name}"${o.required ? raw(' required') : ''}${error ? raw(' aria-invalid="true"') : ''}${describe ? html` aria-describedby="${describe}"` : ''}${o.attrs ? html` ${o.attrs}` : ''}`;
  const control = o.textarea
    ? html`<textarea ${common} rows="2">${o.value ?? ''}</textarea>`
    : html`<input ${common} type="${o.type ?? 'text'}" value="${o.value ?? ''}" />`;
  return html`<div class="field">
    <label for="${id}">${o.label}</label
    >${control}${o.hint ? html`<div class="hint" id="${id}-hint">${o.hint}</div>` : ''}${error ? html`<div class="err" id="${id}-err">${error}</div>` : ''}
  </div>`;
}

export function select(o: {
  name: string;
  label: string;
  options: [string, string][];
  value?: string;
  errors?: Map<string, string>;
  attrs?: Html;
}): Html {
  const id = `f-${o.name}`;
  const error = o.errors?.get(o.name);
  const opts = o.options.map(
    ([v, l]) => html`<option value="${v}" ${v === o.value ? raw(' selected') : ''}>${l}</option>`,
  );
  return html`<div class="field">
    <label for="${id}">${o.label}</label
    ><select id="${id}" name="${o.name}" ${error ? raw(' aria-invalid="true"') : ''}${o.attrs ? html` ${o.attrs}` : ''}>
      ${opts}</select
    >${error ? html`<div class="err">${error}</div>` : ''}
  </div>`;
}

/** A choice of one: each option's value and label, and whether it is offered but not available yet (`off`: the id of what says why). */
export function radios(o: {
  name: string;
  legend: string;
  options: [value: string, label: string, off?: string][];
  value?: string;
  errors?: Map<string, string>;
  /** Under the choices, e.g. how to make an option available. */
  hint?: Html;
}): Html {
  const error = o.errors?.get(o.name);
  const opts = o.options.map(
    ([v, l, off]) =>
      html`<label
        ><input
          type="radio"
          name="${o.name}"
          value="${v}"
          ${!off && v === o.value ? raw(' checked') : ''}${off ? html` disabled aria-describedby="${off}"` : ''}
        />
        ${l}</label
      >`,
  );
  return html`<div class="field" role="radiogroup" aria-labelledby="rg-${o.name}">
    <div class="label" id="rg-${o.name}"><strong class="small">${o.legend}</strong></div>
    <div class="choices">${opts}</div>
    ${o.hint}${error ? html`<div class="err">${error}</div>` : ''}
  </div>`;
}

/** A PDF drawn by pdf.js (the same viewer as the recipient's page). */
export function pdfPreview(pdfUrl: string): { body: Html; scripts: Html } {
  return {
    body: html`<p class="muted small"><span id="status" aria-live="polite">Loading preview…</span></p>
      <div id="pages" data-pdf="${pdfUrl}"></div>`,
    scripts: VIEWER_SCRIPT,
  };
}

/**
 * A table: its header cells (text, or a whole `<th>` with its attributes), its rows, and what
 * it says when it has none, in one cell across every column.
 */
export function table(
  head: (string | Html)[],
  rows: Html[],
  empty: HtmlValue,
  emptyClass: 'empty' | 'muted' = 'empty',
): Html {
  const cells = head.map((h) => (h instanceof Html ? h : html`<th>${h}</th>`));
  const body = rows.length
    ? rows
    : html`<tr>
        <td colspan="${head.length}" class="${emptyClass}">${empty}</td>
      </tr>`;
  return html`<table>
    <thead>
      <tr>
        ${cells}
      </tr>
    </thead>
    <tbody>
      ${body}
    </tbody>
  </table>`;
}

/** The link to a list's next page. */
export function pager(href: string, label: string): Html {
  return html`<div class="pager"><a class="button secondary" href="${href}">${label}</a></div>`;
}

/** Tabs that filter a list by status: "All" first, the one shown marked as the current page. */
export function statusTabs(
  statuses: readonly string[],
  current: string | undefined,
  href: (status: string) => string,
): Html {
  const tabs = [['', 'All'], ...statuses.map((s) => [s, s[0].toUpperCase() + s.slice(1).replace(/_/g, ' ')])].map(
    ([s, label]) => html`<a href="${href(s)}" ${(current ?? '') === s ? raw(' aria-current="page"') : ''}>${label}</a>`,
  );
  return html`<nav class="tabs" aria-label="Filter by status">${tabs}</nav>`;
}
