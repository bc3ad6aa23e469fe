/**
 * The frame of every page the server shows a person outside the web app (a recipient's pages, a
 * failure on one): plain HTML with the operator's branding, readable on a phone and a desktop,
 * usable with a keyboard and a screen reader. No framework. The Magic Link pages themselves are
 * src/links/pages.ts.
 */
import { Html, html, htmlPage, raw } from '../html';

export interface Brand {
  organization_name: string;
  logo_url: string | null;
  accent_color: string;
}

export const DEFAULT_BRAND: Brand = { organization_name: 'Paperlink', logo_url: null, accent_color: '#1F6FEB' };

// the recipient pages' own styles; the accent colour is the brand's
const STYLE = raw(`  * { box-sizing: border-box; }
  body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; background: #f4f5f7; }
  header { display: flex; align-items: center; gap: 12px; padding: 14px 20px; background: #fff; border-bottom: 1px solid #e3e5e8; }
  header img { max-height: 32px; }
  header span { font-weight: 600; }
  main { max-width: 560px; margin: 32px auto; padding: 0 16px; }
  main.wide { max-width: 960px; }
  .card { background: #fff; border: 1px solid #e3e5e8; border-radius: 10px; padding: 24px; }
  h1 { font-size: 1.4rem; margin: 0 0 12px; line-height: 1.3; }
  p { margin: 0 0 14px; }
  label { display: block; font-weight: 600; margin-bottom: 6px; }
  input[type=text] { width: 100%; font-size: 1.5rem; letter-spacing: .3em; padding: 10px 12px; border: 1px solid #9aa0a6; border-radius: 6px; }
  button, .button { display: inline-block; font: inherit; font-weight: 600; padding: 11px 18px; border-radius: 6px; border: 0; background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; margin-top: 12px; }
  button.secondary { background: #fff; color: var(--accent); border: 1px solid var(--accent); }
  :focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
  .error { color: #b00020; font-weight: 600; }
  .muted { color: #5f6368; font-size: .9rem; }
  .toolbar { display: flex; justify-content: space-between; align-items: center; gap: 12px; flex-wrap: wrap; margin-bottom: 16px; }
  #pages canvas, #pages img { display: block; width: 100%; height: auto; margin: 0 auto 16px; background: #fff; box-shadow: 0 1px 4px rgba(0,0,0,.15); }`);

/** A page in the brand's colours and name; `script`: a wide page that runs it. */
export function page(brand: Brand, title: string, body: Html, script?: Html): string {
  return htmlPage({
    title: `${title} · ${brand.organization_name}`,
    noReferrer: true,
    head: html`<style>
          :root { --accent: ${brand.accent_color}; color-scheme: light; }
        ${STYLE}
      </style>
      ${script}`,
    body: html`<header>${brand.logo_url ? html`<img src="${brand.logo_url}" alt="" />` : ''}<span>${brand.organization_name}</span></header>
<main${script ? raw(' class="wide"') : ''}>
${body}
</main>`,
  }).text;
}

export function messagePage(
  brand: Brand,
  title: string,
  message: string,
  action?: { url: string; label: string },
): string {
  const button =
    action && html`<form method="post" action="${action.url}"><button type="submit">${action.label}</button></form>`;
  return page(
    brand,
    title,
    html`<div class="card" role="alert">
      <h1>${title}</h1>
      <p>${message}</p>
      ${button}
    </div>`,
  );
}

const ERROR_TITLES: Record<number, string> = {
  400: 'This request could not be read',
  404: 'Not found',
  413: 'That is too large',
  414: 'That address is too long',
  415: 'This page takes a form',
  429: 'Too many tries',
  500: 'Something went wrong',
};

/** A failure on a page (a recipient's, the web app's): what happened and what to do, never a stack. */
export function errorPage(status: number, error: { code: string; message: string; request_id?: string }): string {
  const title = ERROR_TITLES[status] ?? 'That did not work';
  const reference = `Code ${error.code}${error.request_id ? `, request id ${error.request_id}` : ''}.`;
  return page(
    DEFAULT_BRAND,
    title,
    html`<div class="card" role="alert">
      <h1>${title}</h1>
      <p>${error.message}</p>
      <p class="muted">${reference} Go back and try again, or open the link from the e-mail again.</p>
    </div>`,
  );
}
