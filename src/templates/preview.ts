/**
 * A template rendered to look at, never stored (POST /v1/templates/preview): a source being
 * edited, or a saved version, filled with the values given, then its saved sample values, then a
 * mark that shows where each variable goes. Rendered as generate renders, on the render threads
 * under the same time and memory budget and, for HTML and Word, in the same sandbox.
 */
import { ValidationError, type ErrorDetail } from '../errors';
import { isObject } from '../guards';
import type { TemplateSummary } from './index';
import type { Renderer } from './pool';
import { isVersion, type TemplateStore } from './store';
import { normalizeValues, placeholder } from './values';
import type { RenderWarning } from './index';

export interface PreviewResult {
  bytes: Uint8Array;
  type: 'application/pdf' | 'image/png';
  /** The page count, when a page was asked for. */
  pages?: number;
  /** The variables of what was rendered (of the source being edited, as found now). */
  variables: string[];
  /** What the render warned about (text that does not fit its box). */
  warnings: RenderWarning[];
}

function base64(value: unknown): Uint8Array | undefined {
  return typeof value === 'string' ? new Uint8Array(Buffer.from(value, 'base64')) : undefined;
}

export async function preview(
  store: TemplateStore,
  renderer: Renderer,
  body: unknown,
  now: Date,
): Promise<PreviewResult> {
  if (!isObject(body))
    throw new ValidationError('The body must be a JSON object: a template_id or a source, and merge_parameters.', [
      { field: 'body', message: 'must be an object', code: 'type' },
    ]);
  const details: ErrorDetail[] = [];
  const id = typeof body.template_id === 'string' && body.template_id !== '' ? body.template_id : undefined;
  const asked = body.template_version;
  if (asked !== undefined && !isVersion(asked))
    details.push({ field: 'template_version', message: 'must be a version number (1, 2, …)', code: 'type' });
  const sources = ['source', 'source_base64'].filter((f) => typeof body[f] === 'string');
  if (sources.length > 1)
    details.push({ field: 'source', message: 'give one of source or source_base64', code: 'invalid' });
  if (!sources.length && !id)
    details.push({ field: 'template_id', message: 'give a template_id, a source, or both', code: 'required' });
  const page = body.page;
  if (page !== undefined && !(Number.isInteger(page) && (page as number) >= 1))
    details.push({ field: 'page', message: 'must be a page number (1, 2, …)', code: 'type' });
  const assets = body.assets ?? {};
  if (!isObject(assets) || Object.values(assets).some((v) => typeof v !== 'string'))
    details.push({ field: 'assets', message: 'must be an object of base64 strings', code: 'type' });
  let values: Record<string, string> = {};
  try {
    values = body.merge_parameters === undefined ? {} : normalizeValues(body.merge_parameters);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    details.push(...err.details);
  }
  if (details.length) throw new ValidationError('The preview request is not valid; see details.', details);

  // a saved version gives its files (to a source being edited too) and its sample values
  const saved = id === undefined ? undefined : await store.version(id, asked as number | undefined);
  let template: TemplateSummary;
  if (sources.length) {
    const given = assets as Record<string, string>;
    const source = typeof body.source === 'string' ? body.source : base64(body.source_base64)!;
    template = await renderer.load(source, {
      assets: async (p) => (Object.hasOwn(given, p) ? base64(given[p]) : await saved?.asset(p)),
    });
  } else template = await store.load(id!, saved!.version);

  const filled: Record<string, string> = {};
  const marked = new Set<string>();
  for (const v of template.variables) {
    filled[v] = values[v] ?? saved?.sample_values?.[v] ?? template.defaults[v] ?? placeholder(v);
    if (filled[v] === placeholder(v)) marked.add(v);
  }
  const warnings: RenderWarning[] = [];
  const pdf = await renderMarked(renderer, template, filled, marked, { now, warnings });
  const { variables } = template;
  if (page === undefined) return { bytes: pdf, type: 'application/pdf', variables, warnings };
  const image = await renderer.view(pdf, { page: page as number });
  return { bytes: image.bytes, type: 'image/png', pages: image.pages, variables, warnings };
}

/**
 * Renders with each variable's mark; a mark the template cannot take as text (a list for `<each>`,
 * a checkbox of a PDF form) is tried empty instead, one at a time.
 */
async function renderMarked(
  renderer: Renderer,
  template: TemplateSummary,
  values: Record<string, string>,
  marked: Set<string>,
  options: { now: Date; warnings: RenderWarning[] },
): Promise<Uint8Array> {
  for (;;) {
    try {
      return await renderer.render(template, values, options);
    } catch (err) {
      const variable =
        err instanceof ValidationError
          ? err.details.map((d) => d.field.split(/[.[]/)[0]).find((f) => marked.has(f))
          : undefined;
      if (!variable) throw err;
      marked.delete(variable);
      values[variable] = '';
      options.warnings.length = 0;
    }
  }
}
