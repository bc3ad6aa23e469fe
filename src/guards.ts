/** Narrowing checks for JSON bodies. Pure (no imports): the n8n nodes bundle them. */

/** A JSON object (not null, not an array). */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

/**
 * Control and format characters: bidirectional overrides (U+202E shows `invoice‮fdp.exe` as
 * "invoiceexe.pdf"), zero-width joiners and marks, line breaks. Never in an address or a name.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

/** Whether text holds a control or format character (INVISIBLE). */
export const hasInvisible = (v: string): boolean => INVISIBLE.test(v);

/** An e-mail address as the service accepts it (one @, a dot in the domain, at most 254 characters, nothing invisible). */
export function isEmail(v: unknown): v is string {
  return typeof v === 'string' && v.length <= 254 && EMAIL.test(v) && !INVISIBLE.test(v);
}
