/** Merge values as callers send them: strings, or numbers and booleans that become strings. */
import { ValidationError, type ErrorDetail } from '../errors';

/**
 * Turns a JSON object of merge values into strings. Numbers and booleans become their text;
 * null, objects and arrays are refused, one detail per key. A list for `<each>` is given as a
 * string holding a JSON array.
 */
export function normalizeValues(input: unknown, field = 'merge_parameters'): Record<string, string> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new ValidationError(`${field} must be an object mapping variable names to text.`, [
      { field, message: 'must be an object', code: 'type' },
    ]);
  }
  const out = Object.create(null) as Record<string, string>;
  const details: ErrorDetail[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (typeof value === 'string') out[key] = value;
    else if (typeof value === 'number' && Number.isFinite(value)) out[key] = String(value);
    else if (typeof value === 'boolean') out[key] = String(value);
    else {
      details.push({
        field: `${field}.${key}`,
        message:
          Array.isArray(value) || (value !== null && typeof value === 'object')
            ? 'must be text; a list for <each> is given as a string holding a JSON array'
            : 'must be text, a number or a boolean',
        code: 'type',
      });
    }
  }
  if (details.length) throw new ValidationError(`Some values of ${field} are not text.`, details);
  return out;
}

/**
 * Merge values as a template engine's scope (Liquid, docxtemplater): a value holding a JSON array
 * becomes the list it holds; every other value stays text.
 */
export function scopeOf(values: Record<string, string>): Record<string, unknown> {
  const scope: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) scope[k] = asList(v) ?? v;
  return scope;
}

/** A value holding a JSON array (a list), parsed; otherwise undefined. */
export function asList(value: string): unknown[] | undefined {
  if (!value.startsWith('[')) return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** What a variable with no value shows in a preview: its name, as a mail merge shows a field. */
export const placeholder = (name: string): string => `«${name}»`;
