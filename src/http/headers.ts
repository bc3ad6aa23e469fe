/** Response headers used by more than one route. */

/** `attachment; filename="…"` (or `inline`) with an ASCII fallback and the exact UTF-8 name (RFC 6266). */
export function contentDisposition(name: string, disposition: 'attachment' | 'inline' = 'attachment'): string {
  const file = /\.pdf$/i.test(name) ? name : `${name}.pdf`;
  const ascii = file.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(file).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/**
 * Security headers of our HTML pages: no framing, no sniffing, nothing loaded from elsewhere but
 * images (an operator's logo may be an https URL). The operator's app has no inline styles and
 * may only post forms to itself; a recipient's page carries its brand colour in an inline style
 * and its social sign-in form redirects to the provider, and its URL holds the link's token, so
 * it sends no referrer at all.
 */
export function pageHeaders(kind: 'operator' | 'recipient'): Readonly<Record<string, string>> {
  return PAGE_HEADERS[kind];
}

function headersOf(kind: 'operator' | 'recipient'): Readonly<Record<string, string>> {
  const operator = kind === 'operator';
  return {
    'Cache-Control': 'no-store',
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': operator ? 'same-origin' : 'no-referrer',
    'Content-Security-Policy': [
      "default-src 'self'",
      "img-src 'self' data: https:",
      operator ? "style-src 'self'" : "style-src 'self' 'unsafe-inline'",
      "script-src 'self'",
      "object-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      ...(operator ? ["form-action 'self'"] : []),
    ].join('; '),
  };
}

// built once: every recipient view sends them
const PAGE_HEADERS = {
  operator: Object.freeze(headersOf('operator')),
  recipient: Object.freeze(headersOf('recipient')),
};
