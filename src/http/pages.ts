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
  main.wide { max-width: 1200px; }
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
  .from strong { font-weight: 600; }
  .message { margin: 0 0 14px; padding: 10px 16px; background: #fff; border-left: 4px solid var(--accent); border-radius: 4px; }
  .doc-head h1 { margin-bottom: 4px; }
  .controls { position: sticky; top: 0; z-index: 2; display: flex; align-items: center; gap: 8px 14px; flex-wrap: wrap; padding: 8px 0; margin-bottom: 8px; background: #f4f5f7; }
  .controls[hidden] { display: none; }
  .controls .group { display: inline-flex; align-items: center; gap: 6px; }
  .controls button, .controls .button { margin: 0; padding: 7px 12px; min-width: 40px; justify-content: center; }
  .controls .button { margin-left: auto; }
  .controls input { width: 4.5em; font: inherit; padding: 6px 8px; border: 1px solid #9aa0a6; border-radius: 6px; text-align: right; }
  .controls output { min-width: 3.5em; text-align: center; font-variant-numeric: tabular-nums; }
  .viewer { display: flex; gap: 16px; align-items: flex-start; }
  #thumbs { flex: none; width: 132px; position: sticky; top: 60px; max-height: calc(100vh - 72px); overflow-y: auto; display: flex; flex-direction: column; gap: 10px; padding: 2px; }
  #thumbs[hidden] { display: none; }
  #thumbs button { display: block; margin: 0; padding: 4px; background: #fff; border: 2px solid transparent; border-radius: 4px; color: #1a1a1a; font-weight: 400; font-size: .8rem; }
  #thumbs button[aria-current="true"] { border-color: var(--accent); }
  #thumbs canvas { display: block; width: 100%; height: auto; margin-bottom: 2px; box-shadow: 0 1px 3px rgba(0,0,0,.2); }
  #pages { flex: 1; min-width: 0; overflow-x: auto; }
  #pages [data-page] { scroll-margin-top: 64px; }
  #pages canvas, #pages img { display: block; width: calc(var(--zoom, 1) * 100%); max-width: none; height: auto; margin: 0 auto 16px; background: #fff; box-shadow: 0 1px 4px rgba(0,0,0,.15); }
  .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  @media (max-width: 700px) {
    /* a toolbar of two rows would hide a third of a phone's screen: it scrolls away with the page */
    .controls { position: static; gap: 8px; }
    .controls .button { margin-left: 0; }
    #pages [data-page] { scroll-margin-top: 8px; }
  }
  @media (max-width: 700px) { #thumbs { position: fixed; inset: 0 auto 0 0; top: 0; max-height: none; width: 150px; background: #f4f5f7; z-index: 3; padding: 12px; box-shadow: 2px 0 8px rgba(0,0,0,.2); } }`);

/** A page in the brand's colours and name; `script`: a wide page that runs it. */
export function page(brand: Brand, title: string, body: Html, script?: Html): string {
  return htmlPage({
    title: `${title} · ${brand.organization_name}`,
    noReferrer: true,
    head: html`<link rel="icon" href="${brand.logo_url ?? '/assets/icon.svg'}" />
      <style>
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
