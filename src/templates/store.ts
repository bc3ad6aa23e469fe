/**
 * Stored templates: the source (XML text or a fillable PDF) and its assets live in the database,
 * so every process that shares the database renders the same template. Compiled templates are
 * kept in memory, by id, the first time they are used.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../clock';
import { iso } from '../clock';
import { isUniqueViolation, PreparedQuery, type Db } from '../db';
import type { TemplateRow } from '../db/schema';
import { NotFoundError, TemplateError, ValidationError } from '../errors';
import { hasInvisible } from '../guards';
import { newId } from '../ids';
import { toPage, type Page, type PageQuery } from '../pagination';
import { packageRoot } from '../paths';
import { folderAssets, type AssetResolver, type TemplateSummary } from './index';
import { RenderPool, type Renderer } from './pool';
import { requireChromium } from './chromium';
import { requireOffice } from './docx';
import { sandboxInUse } from './sandbox';

export interface TemplateInfo {
  id: string;
  object: 'template';
  name: string;
  /** `xml` for layout templates, `html` for HTML with Liquid, `docx` for Word documents, `pdf` for fillable PDF forms. */
  format: 'xml' | 'html' | 'docx' | 'pdf';
  /** The merge fields, in order of first use. Each needs a value in `merge_parameters`, but the optional ones. */
  variables: string[];
  /** The variables that may be left out (`{{name | default: "…"}}`), each with the text it takes then. */
  optional_variables: { name: string; default: string }[];
  size: number;
  created_at: string;
  updated_at: string;
}

export interface NewTemplate {
  /** XML or HTML text, or the bytes of such a file, a Word .docx or a fillable PDF. */
  source: string | Uint8Array;
  /** Defaults to the name the template gives itself (`<document name>`) or the file name. */
  name?: string;
  /** Finds images and fonts the XML names by relative path, e.g. `logo.png`; the ones used are stored with it. */
  assets?: AssetResolver;
  /** Only for the bundled examples, which have stable ids. */
  id?: string;
}

export const EXAMPLE_IDS = {
  letter: 'tmpl_example_letter',
  invoice: 'tmpl_example_invoice',
  postcard: 'tmpl_example_postcard',
  letter_html: 'tmpl_example_letter_html',
  invoice_html: 'tmpl_example_invoice_html',
  letter_docx: 'tmpl_example_letter_docx',
  invoice_docx: 'tmpl_example_invoice_docx',
} as const;

/** Where each example is, under examples/: its folder and file (with its images and sample.json). */
const EXAMPLE_FILES: Record<keyof typeof EXAMPLE_IDS, string> = {
  letter: 'letter/letter.xml',
  invoice: 'invoice/invoice.xml',
  postcard: 'postcard/postcard.xml',
  letter_html: 'letter-html/letter.html',
  invoice_html: 'invoice-html/invoice.html',
  letter_docx: 'letter-docx/letter.docx',
  invoice_docx: 'invoice-docx/invoice.docx',
};
const MAX_NAME = 200;

/** An example's template file, under the package's examples/ (its images beside it). */
export function exampleFile(name: keyof typeof EXAMPLE_IDS): string {
  return path.join(packageRoot(), 'examples', EXAMPLE_FILES[name]);
}

/** The sample values an example is filled with (sample.json beside it). */
export function exampleSample(name: keyof typeof EXAMPLE_IDS): Record<string, string> {
  return JSON.parse(readFileSync(path.join(path.dirname(exampleFile(name)), 'sample.json'), 'utf8')) as Record<
    string,
    string
  >;
}

function info(row: TemplateRow): TemplateInfo {
  const defaults = JSON.parse(row.defaults) as Record<string, string>;
  return {
    id: row.id,
    object: 'template',
    name: row.name,
    format: row.format as TemplateInfo['format'],
    variables: JSON.parse(row.variables) as string[],
    optional_variables: Object.entries(defaults).map(([name, value]) => ({ name, default: value })),
    size: row.size,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export class TemplateStore {
  /** Compiled templates by id, each with the version (`updated_at`) it was compiled from. */
  private readonly compiled = new Map<string, { version: string; template: Promise<TemplateSummary> }>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** Compiles templates (on its render threads, off the HTTP thread). */
    private readonly renderer: Renderer,
  ) {
    this.version = new PreparedQuery(db, (d, arg) =>
      d.selectFrom('templates').select('updated_at').where('id', '=', arg('id')),
    );
  }

  /**
   * Checks the template by compiling it (on a render thread), then stores it with its assets in one
   * transaction. The compiled template is kept for its renders, unless another renderer compiled it.
   */
  async create(input: NewTemplate, renderer: Renderer = this.renderer): Promise<TemplateInfo> {
    if (input.name !== undefined && hasInvisible(input.name))
      throw new ValidationError('A template name may not hold control or format characters (such as U+202E).', [
        { field: 'name', message: 'must not hold control or format characters', code: 'invalid_character' },
      ]);
    if (input.name !== undefined && (input.name.trim() === '' || input.name.length > MAX_NAME)) {
      throw new ValidationError(`A template name has 1 to ${MAX_NAME} characters.`, [
        { field: 'name', message: `must be 1 to ${MAX_NAME} characters`, code: 'length' },
      ]);
    }
    const bytes = typeof input.source === 'string' ? new TextEncoder().encode(input.source) : input.source;
    const assets = new Map<string, Uint8Array>();
    const missing = new Set<string>();
    const resolve = input.assets;
    const template = await renderer.load(input.source, {
      name: input.name,
      assets: async (p) => {
        const found = resolve ? await resolve(p) : undefined;
        if (found) assets.set(p, found);
        else missing.add(p);
        return found;
      },
    });
    // an XML template refuses a missing image as it compiles; an HTML page would print a broken
    // one, so it is refused here, at upload, rather than found at the first generate
    if (template.kind === 'html' && missing.size) {
      const names = [...missing];
      throw new TemplateError(
        `The template loads ${names.map((n) => JSON.stringify(n)).join(', ')}, which ${names.length === 1 ? 'was' : 'were'} not uploaded with it. Upload ${names.length === 1 ? 'it' : 'them'} beside the template (the assets of the upload), or put it into the page as a data: URI.`,
        undefined,
        {
          details: names.map((n) => ({
            field: `assets.${n}`,
            message: 'is loaded by the template but was not uploaded',
            code: 'not_found',
          })),
        },
      );
    }
    // an HTML or Word template is refused where it could not be printed
    if (template.kind === 'html') await requireChromium();
    if (template.kind === 'docx') requireOffice();
    // and, with TEMPLATE_SANDBOX=required, only where the sandbox works
    if (template.kind === 'html' || template.kind === 'docx') sandboxInUse();
    const name = input.name?.trim() || template.name;
    const now = iso(this.clock.now());
    const row: TemplateRow = {
      id: input.id ?? newId('tmpl', this.clock.now()),
      name,
      format: template.kind,
      source: Buffer.from(bytes),
      variables: JSON.stringify(template.variables),
      defaults: JSON.stringify(template.defaults),
      size: bytes.length,
      created_at: now,
      updated_at: now,
    };
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('templates').values(row).execute();
      for (const [p, b] of assets)
        await trx
          .insertInto('template_assets')
          .values({ template_id: row.id, path: p, bytes: Buffer.from(b) })
          .execute();
    });
    // the render threads have it compiled already: renders use that, not a second copy
    if (renderer === this.renderer)
      this.compiled.set(row.id, { version: row.updated_at, template: Promise.resolve(template) });
    return info(row);
  }

  /**
   * Newest first, by when each was made: the bundled examples have fixed ids (`tmpl_example_…`)
   * that do not sort by time as other ids do, so this list pages by (created_at, id).
   */
  async list(page: PageQuery): Promise<Page<TemplateInfo>> {
    let q = this.db
      .selectFrom('templates')
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit + 1);
    if (page.startingAfter) {
      const after = await this.db
        .selectFrom('templates')
        .select(['id', 'created_at'])
        .where('id', '=', page.startingAfter)
        .executeTakeFirst();
      if (!after)
        throw new ValidationError('The paging parameters are not valid.', [
          {
            field: 'starting_after',
            message: 'no template has this id (was it deleted?); start again from the first page',
            code: 'not_found',
          },
        ]);
      q = q.where((eb) =>
        eb.or([
          eb('created_at', '<', after.created_at),
          eb.and([eb('created_at', '=', after.created_at), eb('id', '<', after.id)]),
        ]),
      );
    }
    return toPage(await q.execute(), page.limit, info);
  }

  async get(id: string): Promise<TemplateInfo> {
    const row = await this.db.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('template', id);
    return info(row);
  }

  /**
   * The template, compiled where the renderer renders, ready to render. Every call asks the
   * database whether it still exists and which version it is (one indexed read): a template
   * deleted or replaced by another process or machine is seen at its next use, never served from
   * this process's copy.
   */
  async load(id: string): Promise<TemplateSummary> {
    const current = await this.version.first(this.db, { id });
    if (!current) {
      this.compiled.delete(id);
      throw new NotFoundError('template', id);
    }
    let cached = this.compiled.get(id);
    if (cached?.version !== current.updated_at) {
      const template = this.compile(id);
      cached = { version: current.updated_at, template };
      this.compiled.set(id, cached);
      const mine = cached;
      template.catch(() => {
        if (this.compiled.get(id) === mine) this.compiled.delete(id);
      });
    }
    return cached.template;
  }

  /** A template's version, compiled once (see PreparedQuery): every generate and postcard reads it. */
  private readonly version: PreparedQuery<{ id: string }, { updated_at: string }>;

  private async compile(id: string): Promise<TemplateSummary> {
    const row = await this.db.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('template', id);
    const assets = await this.db
      .selectFrom('template_assets')
      .select(['path', 'bytes'])
      .where('template_id', '=', id)
      .execute();
    const byPath = new Map(assets.map((a) => [a.path, new Uint8Array(a.bytes)]));
    const source = new Uint8Array(row.source);
    const binary = row.format === 'pdf' || row.format === 'docx';
    return this.renderer.load(binary ? source : Buffer.from(source).toString('utf8'), {
      assets: async (p) => byPath.get(p),
      name: row.name,
    });
  }

  async remove(id: string): Promise<void> {
    const deleted = await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('template_assets').where('template_id', '=', id).execute();
      const r = await trx.deleteFrom('templates').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows);
    });
    this.compiled.delete(id);
    if (!deleted) throw new NotFoundError('template', id);
  }

  /**
   * Loads the bundled examples (letter, invoice, postcard, and the letter and invoice as HTML
   * where Chromium is and as Word documents where LibreOffice is) the first time a database is used, with stable ids. Deleting one later is
   * respected: it is not loaded again.
   */
  async loadExamples(): Promise<string[]> {
    const done = await this.db
      .selectFrom('settings')
      .select('value')
      .where('key', '=', 'examples_loaded')
      .executeTakeFirst();
    if (done) return [];
    const loaded: string[] = [];
    // compiled on a thread of their own, which goes when they are stored: the HTML and Word examples
    // would otherwise leave Liquid and docxtemplater (about 23 MB) in every render thread that
    // compiled one, on a server that may never render either
    const once = new RenderPool(1);
    try {
      for (const [name, id] of Object.entries(EXAMPLE_IDS)) {
        const file = exampleFile(name as keyof typeof EXAMPLE_IDS);
        try {
          const source = new Uint8Array(await fs.readFile(file));
          await this.create({ id, source, assets: folderAssets(path.dirname(file)) }, once);
          loaded.push(id);
        } catch (err) {
          // another process sharing the database got there first; an HTML or Word example waits for Chromium or LibreOffice
          if (isUniqueViolation(err) || (err as { code?: string }).code === 'format_unavailable') continue;
          throw err;
        }
      }
    } finally {
      await once.close();
    }
    await this.db
      .insertInto('settings')
      .values({ key: 'examples_loaded', value: iso(this.clock.now()) })
      .onConflict((c) => c.column('key').doNothing())
      .execute();
    return loaded;
  }
}
