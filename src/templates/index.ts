/**
 * Templates: XML layout templates, HTML documents with Liquid (html.ts), Word documents with
 * docxtemplater fields (docx.ts) and fillable PDF forms, loaded once and rendered to PDF many times.
 *
 *   const t = await loadTemplateFile('examples/letter/letter.xml');
 *   variables(t);                         // ['sender_name', 'recipient_name', …]
 *   const pdf = await renderTemplate(t, values);
 */
import type { PresetName } from './presets';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PDFDocument } from 'pdf-lib';
import { MissingVariablesError, TemplateError, ValidationError } from '../errors';
import { compileXml, type AssetResolver } from './compile';
import { drawPages } from './draw';
import { loadPdfTemplate, renderPdfTemplate, type PdfTemplate } from './fillable';
import { layoutTemplate, metadataText, type Numbering } from './layout';
import type { RenderWarning, XmlTemplate } from './model';
import { compileHtml, fillHtml, isHtml, printHtml, type FilledHtml, type HtmlTemplate } from './html';
import { compileDocx, convertDocx, fillDocx, isZip, type DocxTemplate } from './docx';
import { DEFAULT_RENDER_TIMEOUT_MS } from '../config';
import { checkLimit } from './limits';
import {
  attachmentsUnavailable,
  checkAvailable,
  conformanceOf,
  finishDocument,
  type Attachment,
  type PdfMetadata,
  type PdfStandard,
} from './standards';

export type Template = XmlTemplate | PdfTemplate | HtmlTemplate | DocxTemplate;
export type { AssetResolver, DocxTemplate, FilledHtml, HtmlTemplate, PdfTemplate, XmlTemplate };
export type TemplateFormat = Template['kind'];

/**
 * What a process needs to know of a loaded template to check values and have it rendered: its
 * format, name and variables. Every loaded template is one; a render pool hands out only this
 * (the compiled template lives in its threads), so the HTTP thread never parses a template.
 */
export interface TemplateSummary {
  kind: TemplateFormat;
  name: string;
  variables: string[];
  defaults: Record<string, string>;
  /** The postcard size it is made for (src/postcards/presets.ts), when it names one: its renders are checked and marked for print. */
  postcard?: PresetName;
}

export interface LoadOptions {
  /** Reads assets (images, fonts) named by relative paths in the template. */
  assets?: AssetResolver;
  /** A name for templates that do not carry one. */
  name?: string;
}

export interface RenderOptions {
  /** The creation date written into the PDF; defaults to the current time. */
  now?: Date;
  /** Gets what the document was drawn with but should be looked at (text that does not fit its box). */
  warnings?: RenderWarning[];
  /** HTML and Word templates: the longest the browser or LibreOffice may take to print one (the render pool's budget). */
  timeoutMs?: number;
  /** The PDF standard the document must meet (standards.ts); none by default. */
  standard?: PdfStandard;
  /** Title, author, subject and keywords of the document, over the template's own. */
  metadata?: PdfMetadata;
  /** Files embedded in the document (standards.ts). */
  attachments?: Attachment[];
  /** XML templates: page numbers as a part of a merged document ({{page}} from `first`, {{pages}} the whole's). */
  numbering?: Numbering;
}

export type { RenderWarning } from './model';

const PDF_MAGIC = '%PDF-';

export function isPdf(bytes: Uint8Array): boolean {
  // a PDF may start with a few bytes of junk before its header; readers allow 1024
  return Buffer.from(bytes.subarray(0, 1024)).toString('latin1').includes(PDF_MAGIC);
}

/** What a template was made from: enough for a render thread to make it again. */
export interface TemplateOrigin {
  source: string | Uint8Array;
  /** The assets the template named, by path, as they were found when it was loaded. */
  assets: [string, Uint8Array][];
  name?: string;
}

const origins = new WeakMap<TemplateSummary, TemplateOrigin>();
/** Every template compiled in this thread, by itself: a summary that is one renders without compiling again. */
const compiledHere = new WeakMap<TemplateSummary, Template>();

/** The source and assets a loaded template was made from. */
export function originOf(template: TemplateSummary): TemplateOrigin | undefined {
  return origins.get(template);
}

/** Remembers what a summary made elsewhere (in a render thread) was loaded from. */
export function setOrigin(template: TemplateSummary, origin: TemplateOrigin): void {
  origins.set(template, origin);
}

/** The summary of a template: the plain data that travels between threads. */
export function summaryOf(template: TemplateSummary): TemplateSummary {
  return {
    kind: template.kind,
    name: template.name,
    variables: template.variables,
    defaults: template.defaults,
    ...(template.postcard && { postcard: template.postcard }),
  };
}

/** The compiled template behind a summary: itself when it was compiled in this thread, else compiled from its origin. */
export async function compiledOf(template: TemplateSummary): Promise<Template> {
  const here = compiledHere.get(template);
  if (here) return here;
  const origin = originOf(template);
  if (!origin) throw new Error('this template was not made by loadTemplate or a renderer');
  const assets = new Map(origin.assets);
  const compiled = await loadTemplate(origin.source, { assets: async (p) => assets.get(p), name: origin.name });
  compiledHere.set(template, compiled);
  return compiled;
}

/** Loads a template from its source: XML or HTML text, or the bytes of such a file, a .docx or a fillable PDF. */
export async function loadTemplate(source: string | Uint8Array, options: LoadOptions = {}): Promise<Template> {
  const found = new Map<string, Uint8Array>();
  const resolve = options.assets;
  const assets: AssetResolver | undefined = resolve
    ? async (p) => {
        const bytes = await resolve(p);
        if (bytes) found.set(p, bytes);
        return bytes;
      }
    : undefined;
  const template = await compile(source, { ...options, assets });
  origins.set(template, { source, assets: [...found], name: options.name });
  compiledHere.set(template, template);
  return template;
}

async function compile(source: string | Uint8Array, options: LoadOptions): Promise<Template> {
  if (typeof source !== 'string' && isPdf(source)) return loadPdfTemplate(source, options.name);
  if (typeof source !== 'string' && isZip(source)) return compileDocx(source, options);
  const text = typeof source === 'string' ? source : new TextDecoder('utf-8', { fatal: false }).decode(source);
  if (typeof source !== 'string' && text.includes('\uFFFD')) {
    throw new TemplateError(
      'The template is neither a PDF, a Word document (.docx) nor UTF-8 text. Save XML and HTML templates as UTF-8.',
    );
  }
  if (isHtml(text)) return compileHtml(text, options);
  const start = /^[\s\uFEFF]*(.)/u.exec(text)?.[1];
  if (start !== '<') {
    throw new TemplateError(
      `This is not a template: it starts with ${start ? JSON.stringify(start) : 'nothing'}. A template is an XML layout (<document …>), an HTML page (<!doctype html>), a Word document (.docx) or a fillable PDF form; docs/templates.md shows each.`,
    );
  }
  return compileXml(text, options);
}

/** Reads assets from a folder, refusing paths that leave it. */
export function folderAssets(folder: string): AssetResolver {
  const root = path.resolve(folder);
  return async (relative) => {
    const full = path.resolve(root, relative);
    if (full !== root && !full.startsWith(root + path.sep)) return undefined;
    try {
      return new Uint8Array(await fs.readFile(full));
    } catch {
      return undefined;
    }
  };
}

/** Loads a template file; its assets are read from the folder it is in. */
export async function loadTemplateFile(given: string): Promise<Template> {
  const file = await templateIn(given);
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await fs.readFile(file));
  } catch (err) {
    throw new TemplateError(
      `Cannot read the template file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}.`,
    );
  }
  return loadTemplate(bytes, {
    assets: folderAssets(path.dirname(file)),
    name: path.basename(file).replace(/\.[^.]+$/, ''),
  });
}

/** The file names a template can have: an XML or HTML template, a Word document, a fillable PDF. */
export const TEMPLATE_FILE = /\.(xml|pdf|html?|docx)$/i;

/** A template file as given, or the one XML template or PDF form in a folder given instead (as the examples are laid out). */
async function templateIn(given: string): Promise<string> {
  const stat = await fs.stat(given).catch(() => undefined);
  if (!stat?.isDirectory()) return given;
  const found = (await fs.readdir(given)).filter((f) => TEMPLATE_FILE.test(f)).sort();
  if (found.length === 1) return path.join(given, found[0]);
  throw new TemplateError(
    found.length === 0
      ? `The folder ${given} holds no template (an .xml layout template, an .html template, a Word .docx or a fillable .pdf form). Give the template file itself.`
      : `The folder ${given} holds several templates (${found.join(', ')}). Give the one you mean, e.g. ${path.join(given, found[0])}.`,
  );
}

/** The template's variables, in order of first use. */
export function variables(template: TemplateSummary): string[] {
  return [...template.variables];
}

/** Names of the template's required variables (those without a default) that `values` does not give. */
export function missingVariables(template: TemplateSummary, values: Record<string, unknown>): string[] {
  return template.variables.filter((v) => !Object.hasOwn(values, v) && !Object.hasOwn(template.defaults, v));
}

/**
 * A template filled with its values: a finished PDF (XML and fillable PDF templates), or what
 * Chromium (an HTML page) or LibreOffice (a Word document) prints next. Filling runs the
 * template's own code (Liquid, docxtemplater, the layout), so a render pool does it on a render
 * thread; printing happens in the browser's or LibreOffice's own processes.
 */
export type Filled = { pdf: Uint8Array } | { html: FilledHtml } | { docx: Uint8Array };

/**
 * Checks the values and fills the template. Every required variable needs a value (an empty
 * string is a value), an optional one takes its default; the missing ones are reported together
 * in one MissingVariablesError. Errors about values name the variable in `details[].field`.
 */
export async function fillTemplate(
  template: Template,
  given: Record<string, string>,
  options: RenderOptions = {},
): Promise<Filled> {
  checkAvailable(template.kind, options.standard);
  const cannotAttach = attachmentsUnavailable(options.standard, options.attachments ?? []);
  if (cannotAttach)
    throw new ValidationError(`These attachments cannot go into this document: ${cannotAttach}.`, [
      { field: 'attachments', message: cannotAttach, code: 'not_allowed' },
    ]);
  const missing = missingVariables(template, given);
  // an optional variable without a value takes its default
  const values = { ...template.defaults, ...given };
  if (missing.length) throw new MissingVariablesError(missing);
  const bad = template.variables.filter((v) => typeof values[v] !== 'string');
  if (bad.length) {
    throw new ValidationError(
      'Values must be text.',
      bad.map((v) => ({ field: v, message: 'must be a string', code: 'type' })),
    );
  }
  let text = 0;
  for (const v of template.variables) text += values[v].length;
  checkLimit('text', text, 'The text of all merge values of this document');
  const now = options.now ?? new Date();
  const timeoutMs = options.timeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS;
  if (template.kind === 'pdf') return { pdf: await renderPdfTemplate(template, values, now, options) };
  if (template.kind === 'html') return { html: await fillHtml(template, values, { timeoutMs }) };
  if (template.kind === 'docx') return { docx: fillDocx(template, values) };
  const standard = options.standard && conformanceOf(options.standard);
  const pages = layoutTemplate(template, values, options.warnings, options.numbering);
  const pdf = await drawPages(pages, {
    now,
    title: options.metadata?.title ?? metadataText(template.metadata.title, values) ?? template.name,
    author: options.metadata?.author ?? metadataText(template.metadata.author, values),
    subject: options.metadata?.subject ?? metadataText(template.metadata.subject, values),
    keywords: options.metadata?.keywords ?? metadataText(template.metadata.keywords, values),
    lang: template.lang,
    // PDF/UA is a tagged PDF whatever the template says
    tagged: template.tagged || standard?.ua,
    standard,
    attachments: options.attachments,
  });
  return { pdf };
}

/**
 * Prints a filled HTML page or Word document (out of this process: Chromium, LibreOffice), with
 * the template's assets (an HTML template's images, CSS and fonts). A finished PDF is returned as
 * it is. The page count is not checked here: see checkPages.
 */
export async function printFilled(
  filled: Filled,
  assets: Map<string, Uint8Array>,
  options: RenderOptions = {},
): Promise<Uint8Array> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS;
  if ('pdf' in filled) return filled.pdf;
  if ('html' in filled) return printHtml(filled.html, assets, { timeoutMs, warnings: options.warnings });
  return convertDocx(filled.docx, {
    timeoutMs,
    pdfa: options.standard && conformanceOf(options.standard).pdfa,
    metadata: options.metadata,
  });
}

/**
 * A printed PDF's page count, and the PDF as it is stored: Chromium's, with the metadata given and
 * made to claim the PDF/A level asked for (standards.ts; LibreOffice does both itself). Runs on a
 * render thread in a pool.
 */
export async function finishPrinted(pdf: Uint8Array, finish: Finish = {}): Promise<{ pdf: Uint8Array; pages: number }> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  const pages = doc.getPageCount();
  if (!finish.standard && !finish.metadata && !finish.attachments?.length) return { pdf, pages };
  await finishDocument(doc, {
    standard: finish.standard ? conformanceOf(finish.standard) : undefined,
    props: finish.metadata,
    attachments: finish.attachments,
    now: doc.getModificationDate() ?? new Date(),
  });
  return { pdf: await doc.save({ objectsPerTick: Infinity }), pages };
}

/** What finishPrinted adds to a printed PDF. */
export type Finish = Pick<RenderOptions, 'standard' | 'metadata' | 'attachments'>;

/**
 * What is left to add to a printed PDF, by format: Chromium's gets the standard, the metadata and
 * the attachments; LibreOffice's only the attachments (it writes the rest itself), and with them
 * the standard again, so its XMP packet says what was attached (Factur-X).
 */
export function finishOf(kind: string, options: RenderOptions): Finish {
  if (kind === 'html')
    return { standard: options.standard, metadata: options.metadata, attachments: options.attachments };
  if (kind === 'docx' && options.attachments?.length)
    return { standard: options.standard, attachments: options.attachments };
  return {};
}

/** Refuses a document over the page limit (RENDER_MAX_PAGES). */
export function checkPages(pages: number): void {
  checkLimit('pages', pages, `The document (${pages} pages)`);
}

/**
 * Renders a template to PDF bytes on the calling thread: fills it (see fillTemplate) and prints
 * it where it is an HTML page or a Word document.
 */
export async function renderTemplate(
  template: TemplateSummary,
  given: Record<string, string>,
  options: RenderOptions = {},
): Promise<Uint8Array> {
  const compiled = await compiledOf(template);
  const filled = await fillTemplate(compiled, given, options);
  if ('pdf' in filled) return filled.pdf;
  const printed = await printFilled(
    filled,
    compiled.kind === 'html' ? compiled.assets : new Map<string, Uint8Array>(),
    options,
  );
  const { pdf, pages } = await finishPrinted(printed, finishOf(compiled.kind, options));
  checkPages(pages);
  return pdf;
}

export { layoutTemplate } from './layout';
export type { PageLayout, Op } from './layout';
