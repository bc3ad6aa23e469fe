/**
 * The recipient's pages: signing in, the viewer (pdf.js draws the PDF in the browser, or page
 * images when downloads are off), and the one page for a link that is not available.
 */
import type { MagicLinkApp } from './app';
import { Html, html, lines, raw } from '../html';
import { VIEW_MS } from '.';
import { DEFAULT_BRAND, page, type Brand } from '../http/pages';

export function brandOf(app: MagicLinkApp | undefined): Brand {
  return app
    ? { organization_name: app.organization_name, logo_url: app.logo_url, accent_color: app.accent_color }
    : DEFAULT_BRAND;
}

/** The same page for unknown, expired and revoked links, so it says nothing about which. */
export function unavailablePage(brand: Brand = DEFAULT_BRAND): string {
  return page(
    brand,
    'Link not available',
    html`<div class="card" role="alert">
      <h1>This link is no longer available</h1>
      <p>
        It may have expired, been used up, or been withdrawn. Ask the person who shared the document to send you a new
        link.
      </p>
    </div>`,
  );
}

export function signInPage(o: {
  brand: Brand;
  documentName: string;
  /** Who shared it: "Ann at Acme", or the organisation (mail.ts senderOf). */
  sender: string;
  authType: 'email' | 'social';
  maskedEmail: string;
  /** The link allows several people: the recipient types their own address. */
  askEmail?: boolean;
  action: string;
  providers: { id: string; name: string }[];
  error?: string;
  /** A code was sent to this address: ask for it. */
  sentTo?: string;
  viewsLeft?: number | null;
}): string {
  const error = o.error && html`<p class="error" role="alert">${o.error}</p>`;
  // said before the view is used: what opening it costs
  const cost =
    o.viewsLeft != null &&
    html`<p class="muted" id="views">
      Seeing it uses 1 of the ${o.viewsLeft} view${o.viewsLeft === 1 ? '' : 's'} left; reloading within
      ${VIEW_MS / 60_000} minutes is the same view.
    </p>`;
  let body: Html;
  if (o.authType === 'social') {
    const buttons = o.providers.map(
      (p) =>
        html`<form method="post" action="${o.action}/signin/${p.id}">
          <button type="submit">Sign in with ${p.name}</button>
        </form>`,
    );
    body = html`${
      o.askEmail
        ? html`<p>To see it, sign in with the account of an address it was shared with.</p>`
        : html`<p>To see it, sign in as <strong>${o.maskedEmail}</strong>.</p>`
    }
    ${error}${buttons.length ? buttons : html`<p class="error">No sign-in provider is set up. Ask the sender for help.</p>`}`;
  } else if (o.sentTo) {
    // a typed address is the recipient's own: shown whole; the link's own address masked
    const to = o.askEmail ? o.sentTo : o.maskedEmail;
    const who = o.askEmail && html`<input type="hidden" name="email" value="${o.sentTo}" />`;
    body = html`<p>We e-mailed a 6-digit code to <strong>${to}</strong>. It works for 10 minutes.</p>
      ${error}
      <form method="post" action="${o.action}/verify">
        ${who}
        <label for="code">Code</label>
        <input
          id="code"
          name="code"
          type="text"
          inputmode="numeric"
          autocomplete="one-time-code"
          pattern="[0-9]{6}"
          maxlength="6"
          required
          autofocus
          aria-describedby="code-help"
        />
        <p id="code-help" class="muted">Six digits, from the e-mail.</p>
        <button type="submit">Show the document</button>
      </form>
      <form method="post" action="${o.action}/code">
        ${who}<button type="submit" class="secondary">Send a new code</button>
      </form>`;
  } else if (o.askEmail) {
    body = html`<p>To see it, confirm your e-mail address: we send a 6-digit code there.</p>
      ${error}
      <form method="post" action="${o.action}/code">
        <label for="email">Your e-mail address</label>
        <input id="email" name="email" type="email" autocomplete="email" maxlength="254" required autofocus />
        <button type="submit">E-mail me a code</button>
      </form>`;
  } else {
    body = html`<p>
        To see it, confirm you can read e-mail sent to <strong>${o.maskedEmail}</strong>: we send a 6-digit code there.
      </p>
      ${error}
      <form method="post" action="${o.action}/code"><button type="submit">E-mail me a code</button></form>`;
  }
  return page(
    o.brand,
    o.documentName,
    html`<div class="card">
      <h1>${o.documentName}</h1>
      <p class="from">Shared with you by <strong>${o.sender}</strong>.</p>
      ${cost}${body}
    </div>`,
  );
}

export function viewerPage(o: {
  brand: Brand;
  documentName: string;
  /** Who shared it: "Ann at Acme", or the organisation (mail.ts senderOf). */
  sender: string;
  /** The sender's words to the recipient (the link's `message`). */
  message?: string | null;
  pdfUrl: string;
  /** Where the page reports which page is shown and for how long (page analytics). */
  reportUrl?: string;
  /** Without downloads: the URL of page images (`${pagesUrl}/1`…) and how many pages; no PDF, no download button. */
  images?: { url: string; pages: number };
  viewsUsed: number;
  maxViews: number | null;
  expiresAt: string | null;
}): string {
  const minutes = VIEW_MS / 60_000;
  // the time is a <time> the page's script shows in the reader's zone
  const limits = [
    o.maxViews !== null &&
      html`View ${o.viewsUsed} of ${o.maxViews}${o.viewsUsed >= o.maxViews ? ' (the last)' : ''}; reloading within
      ${minutes} minutes is the same view`,
    o.expiresAt &&
      html`available until <time datetime="${o.expiresAt}">${o.expiresAt.replace('T', ' ').slice(0, 16)} UTC</time>`,
  ].filter((x): x is Html => x instanceof Html);
  const shown = limits.flatMap((l, i) => (i ? [SEPARATOR, l] : [l]));
  const download = !o.images && html`<a class="button" href="${o.pdfUrl}?download=1" download>Download PDF</a>`;
  // without JavaScript: the PDF opens in the browser's own viewer, or the page images load as they are
  const noScript = o.images
    ? html`<noscript
        >${Array.from(
          { length: o.images.pages },
          (_, i) =>
            html`<img
              src="${o.images!.url}/${String(i + 1)}"
              alt="Page ${String(i + 1)} of ${String(o.images!.pages)}"
            />`,
        )}</noscript
      >`
    : html`<noscript
        ><p class="card">
          This page draws the document with JavaScript, which is off in this browser.
          <a href="${o.pdfUrl}">Open the PDF</a> in the browser's own viewer instead.
        </p></noscript
      >`;
  // what the script draws: the server's page images, or the PDF
  const source = o.images
    ? html`data-images="${o.images.url}" data-count="${String(o.images.pages)}"`
    : html`data-pdf="${o.pdfUrl}"`;
  // the controls work only with the script, which shows them
  const controls = html`<div class="controls" role="toolbar" aria-label="Document" hidden>
    <button type="button" class="secondary" id="thumbs-toggle" aria-controls="thumbs" aria-expanded="false">
      Pages
    </button>
    <span class="group">
      <button type="button" class="secondary" id="prev" aria-label="Previous page" aria-keyshortcuts="ArrowLeft">
        &lsaquo;
      </button>
      <label for="page-number" class="sr-only">Page number</label>
      <input id="page-number" type="number" inputmode="numeric" min="1" value="1" />
      <span id="page-count" class="muted">of ?</span>
      <button type="button" class="secondary" id="next" aria-label="Next page" aria-keyshortcuts="ArrowRight">
        &rsaquo;
      </button>
    </span>
    <span class="group">
      <button type="button" class="secondary" id="zoom-out" aria-label="Zoom out" aria-keyshortcuts="-">&minus;</button>
      <output id="zoom" aria-live="polite" aria-label="Zoom">100%</output>
      <button type="button" class="secondary" id="zoom-in" aria-label="Zoom in" aria-keyshortcuts="+">+</button>
      <button type="button" class="secondary" id="fit" aria-keyshortcuts="0">Fit to width</button>
    </span>
    ${download}
  </div>`;
  return page(
    o.brand,
    o.documentName,
    html`<div class="doc-head">
        <h1>${o.documentName}</h1>
        <p class="from">Shared with you by <strong>${o.sender}</strong></p>
        ${o.message && html`<blockquote class="message" aria-label="Message from ${o.sender}">${lines(o.message)}</blockquote>`}
        <p class="muted">
          ${shown}${limits.length ? SEPARATOR : ''}<span id="status" aria-live="polite">Loading&hellip;</span>
        </p>
        <noscript>${download}</noscript>
      </div>
      ${controls}
      <div class="viewer">
        <nav id="thumbs" aria-label="Pages" hidden></nav>
        <div
          id="pages"
          tabindex="0"
          role="region"
          aria-label="The document's pages"
          ${source}
          data-report="${o.reportUrl ?? ''}"
        >
          ${noScript}
        </div>
      </div>`,
    VIEWER_SCRIPT,
  );
}

const SEPARATOR = raw(' · ');
/** The script that draws a PDF with pdf.js (the recipient's viewer, the web app's previews). */
export const VIEWER_SCRIPT = raw('<script type="module" src="/assets/viewer.js"></script>');

/** a***@example.com: enough to recognise one's address, not enough to harvest it. */
export function maskEmail(email: string): string {
  const [user, domain] = email.split('@');
  return `${user.slice(0, 1)}${'*'.repeat(Math.max(1, Math.min(user.length - 1, 5)))}@${domain}`;
}
