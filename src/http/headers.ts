/** Response headers used by more than one route. */

/** `attachment; filename="…"` (or `inline`) with an ASCII fallback and the exact UTF-8 name (RFC 6266). */
export function contentDisposition(name: string, disposition: 'attachment' | 'inline' = 'attachment'): string {
  const file = /\.pdf$/i.test(name) ? name : `${name}.pdf`;
  const ascii = file.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(file).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
