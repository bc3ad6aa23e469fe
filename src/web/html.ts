/**
 * The web app's HTML: one shell (navigation, who is signed in, sign-out) and the small parts
 * every page uses. Everything interpolated goes through `esc`; nothing the browser sent is
 * written back unescaped.
 */
import type { ErrorDetail } from '../errors';
import { LOGO_SVG } from '../http/assets';
import { html as esc } from '../mail';

export { esc };

export type Section = 'templates' | 'generate' | 'documents' | 'links' | 'postcards' | 'settings';

const NAV: [Section, string][] = [
  ['templates', 'Templates'],
  ['generate', 'Generate'],
  ['documents', 'Documents'],
  ['links', 'Magic Links'],
  ['postcards', 'Postcards'],
  ['settings', 'Settings'],
];

const LOGO = LOGO_SVG.replace('<svg ', '<svg width="26" height="26" aria-hidden="true" ');

function head(title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${esc(title)} · Paperlink</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>
</head>`;
}

export interface Viewer {
  name: string;
  csrf: string;
}

/** A signed-in page. */
export function layout(o: { title: string; section: Section; viewer: Viewer; body: string; scripts?: string }): string {
  const nav = NAV.map(
    ([id, label]) => `<a href="/app/${id}"${id === o.section ? ' aria-current="page"' : ''}>${label}</a>`,
  ).join('');
  return `${head(o.title)}
<body>
<a class="skip" href="#main">Skip to content</a>
<div class="shell">
<aside class="side">
<a class="brand" href="/app">${LOGO}<span>Paperlink</span></a>
<nav aria-label="Sections">${nav}</nav>
<div class="who"><span class="muted small hide-sm">Signed in as</span><strong>${esc(o.viewer.name)}</strong>
<form method="post" action="/app/signout">${csrfField(o.viewer.csrf)}<button type="submit">Sign out</button></form></div>
</aside>
<main id="main" tabindex="-1">
<div id="live" class="skip" aria-live="polite"></div>
${o.body}
</main>
</div>
${o.scripts ?? ''}
</body>
</html>`;
}

/** A page outside the shell (sign-in, errors before sign-in). */
export function bare(title: string, body: string): string {
  return `${head(title)}
<body>
<main class="signin" id="main">
<div class="card">
<a class="brand" href="/app">${LOGO}<span>Paperlink</span></a>
${body}
</div>
</main>
</body>
</html>`;
}

export function csrfField(token: string): string {
  return `<input type="hidden" name="_csrf" value="${esc(token)}">`;
}

/** A POST button in its own form (revoke, delete, expire), with an optional confirmation. */
export function actionButton(o: {
  action: string;
  label: string;
  csrf: string;
  confirm?: string;
  style?: 'danger' | 'secondary';
  hidden?: Record<string, string>;
}): string {
  const extra = Object.entries(o.hidden ?? {})
    .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}">`)
    .join('');
  return `<form class="inline" method="post" action="${esc(o.action)}"${o.confirm ? ` data-confirm="${esc(o.confirm)}"` : ''}>${csrfField(o.csrf)}${extra}<button type="submit" class="${o.style ?? 'secondary'}">${esc(o.label)}</button></form>`;
}

export function copyButton(value: string, label = 'Copy'): string {
  return `<button type="button" class="copy" data-copy="${esc(value)}" aria-label="${esc(`${label} ${value}`)}">${esc(label)}</button>`;
}

/** An id in monospace with a copy button. */
export function idWithCopy(id: string): string {
  return `<span class="id"><code>${esc(id)}</code>${copyButton(id)}</span>`;
}

export function badge(status: string): string {
  return `<span class="badge ${esc(status)}">${esc(status.replace(/_/g, ' '))}</span>`;
}

export function when(isoTime: string | null | undefined, empty = '—'): string {
  if (!isoTime) return `<span class="muted">${empty}</span>`;
  return `<time datetime="${esc(isoTime)}">${esc(isoTime.replace('T', ' ').slice(0, 16))} UTC</time>`;
}

export function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The API's error, as a notice: its message and one line per detail. */
export function errorNotice(
  e: { message: string; details: ErrorDetail[] } | undefined,
  label: (field: string) => string = (f) => f,
): string {
  if (!e) return '';
  const lines = e.details
    .filter((d) => d.message !== e.message)
    .map((d) => `<li><strong>${esc(label(d.field))}</strong> ${esc(d.message)}</li>`);
  return `<div class="notice error" role="alert"><strong>${esc(e.message)}</strong>${lines.length ? `<ul>${lines.join('')}</ul>` : ''}</div>`;
}

export function notice(text: string | undefined): string {
  return text ? `<div class="notice ok" role="status">${esc(text)}</div>` : '';
}

/** Shown once, right after a key, token or webhook secret is made. */
export function secretNotice(title: string, secret: string, hint: string): string {
  return `<div class="notice secret" role="status"><strong>${esc(title)}</strong><div class="secret-value"><code data-secret>${esc(secret)}</code>${copyButton(secret)}</div><p class="small gap-above">${esc(hint)}</p></div>`;
}

/** A labelled input. `errors` maps a form field name to its message. */
export function field(o: {
  name: string;
  label: string;
  value?: string;
  type?: string;
  hint?: string;
  errors?: Map<string, string>;
  required?: boolean;
  textarea?: boolean;
  attrs?: string;
}): string {
  const id = `f-${o.name.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  const error = o.errors?.get(o.name);
  const describe = [o.hint ? `${id}-hint` : '', error ? `${id}-err` : ''].filter(Boolean).join(' ');
  const common = `id="${id}" name="${esc(o.name)}"${o.required ? ' required' : ''}${error ? ' aria-invalid="true"' : ''}${describe ? ` aria-describedby="${describe}"` : ''}${o.attrs ? ` ${o.attrs}` : ''}`;
  const control = o.textarea
    ? `<textarea ${common} rows="2">${esc(o.value ?? '')}</textarea>`
    : `<input ${common} type="${o.type ?? 'text'}" value="${esc(o.value ?? '')}">`;
  return `<div class="field"><label for="${id}">${esc(o.label)}</label>${control}${o.hint ? `<div class="hint" id="${id}-hint">${esc(o.hint)}</div>` : ''}${error ? `<div class="err" id="${id}-err">${esc(error)}</div>` : ''}</div>`;
}

export function select(o: {
  name: string;
  label: string;
  options: [string, string][];
  value?: string;
  errors?: Map<string, string>;
  attrs?: string;
}): string {
  const id = `f-${o.name}`;
  const error = o.errors?.get(o.name);
  const opts = o.options
    .map(([v, l]) => `<option value="${esc(v)}"${v === o.value ? ' selected' : ''}>${esc(l)}</option>`)
    .join('');
  return `<div class="field"><label for="${id}">${esc(o.label)}</label><select id="${id}" name="${esc(o.name)}"${error ? ' aria-invalid="true"' : ''}${o.attrs ? ` ${o.attrs}` : ''}>${opts}</select>${error ? `<div class="err">${esc(error)}</div>` : ''}</div>`;
}

export function radios(o: {
  name: string;
  legend: string;
  options: [string, string][];
  value?: string;
  errors?: Map<string, string>;
}): string {
  const error = o.errors?.get(o.name);
  const opts = o.options
    .map(
      ([v, l]) =>
        `<label><input type="radio" name="${esc(o.name)}" value="${esc(v)}"${v === o.value ? ' checked' : ''}> ${esc(l)}</label>`,
    )
    .join('');
  return `<div class="field" role="radiogroup" aria-labelledby="rg-${esc(o.name)}"><div class="label" id="rg-${esc(o.name)}"><strong class="small">${esc(o.legend)}</strong></div><div class="choices">${opts}</div>${error ? `<div class="err">${esc(error)}</div>` : ''}</div>`;
}

/** A PDF drawn by pdf.js (the same viewer as the recipient's page). */
export function pdfPreview(pdfUrl: string): { body: string; scripts: string } {
  return {
    body: `<p class="muted small"><span id="status" aria-live="polite">Loading preview…</span></p><div id="pages" data-pdf="${esc(pdfUrl)}"></div>`,
    scripts: '<script type="module" src="/assets/viewer.js"></script>',
  };
}
