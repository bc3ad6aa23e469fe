/**
 * A value from n8n (a node parameter, a field of an API answer) as text: strings as they are,
 * numbers and booleans written out, anything else (an object, null) as ''.
 */
export function text(value: unknown): string {
  if (typeof value === 'string') return value;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
}
