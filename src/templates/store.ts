/**
 * Stored templates: the source (XML text or a fillable PDF) and its assets live in the database,
 * so every process that shares the database renders the same template. Compiled templates are
 * kept in memory, by id, the first time they are used.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import type { Clock } from '../clock';
import { iso } from '../clock';
import { isUniqueViolation, PreparedQuery, type Db } from '../db';
import type { TemplateRow, TemplateVersionRow } from '../db/schema';
import { ConflictError, NotFoundError, TemplateError, ValidationError } from '../errors';
import { hasInvisible, isObject } from '../guards';
import { newId } from '../ids';
import { toPage, type Page, type PageQuery } from '../pagination';
import { packageRoot } from '../paths';
import { folderAssets, type AssetResolver, type TemplateSummary } from './index';
import { RenderPool, type Renderer } from './pool';
import { requireChromium } from './chromium';
import { requireOffice } from './docx';
import { sandboxInUse } from './sandbox';
import { normalizeValues, placeholder } from './values';
import { shownWarning, type PrintCheckWarning } from './print';
import type { PresetName } from './presets';

export interface TemplateInfo {
  id: string;
  object: 'template';
  name: string;
  /** The version a render uses when it names none (`template_version`). */
  version: number;
  /** `xml` for layout templates, `html` for HTML with Liquid, `docx` for Word documents, `pdf` for fillable PDF forms. */
  format: 'xml' | 'html' | 'docx' | 'pdf';
  /** The merge fields, in order of first use. Each needs a value in `merge_parameters`, but the optional ones. */
  variables: string[];
  /** The variables that may be left out (`{{name | default: "…"}}`), each with the text it takes then. */
  optional_variables: { name: string; default: string }[];
  /** The values previews and the editor fill it with, saved with the version; null: none. */
  sample_values: Record<string, string> | null;
  size: number;
  /** The postcard size the template names (`4x6`, `6x9`, `6x11`, `A6`, `A5`); null: not a postcard template. */
  postcard: PresetName | null;
  /** What printing it once with its sample values warned of (a postcard template): the side as `field`, where as `box`. */
  print_warnings: PrintCheckWarning[];
  created_at: string;
  updated_at: string;
}

/** One saved version of a template: what it was at that save, never changed afterwards. */
export interface TemplateVersionInfo extends Pick<
  TemplateInfo,
  'format' | 'variables' | 'optional_variables' | 'sample_values' | 'size' | 'postcard' | 'print_warnings'
> {
  /** `<template id>@<version>`: a list of versions pages by it (`starting_after`). */
  id: string;
  object: 'template_version';
  template_id: string;
  version: number;
  /** Whether renders that name no version use this one. */
  current: boolean;
  created_at: string;
}

/** The highest version number (the database's integer). */
export const MAX_VERSION = 2_147_483_647;

/** Whether a value is a version number a template could have. */
export const isVersion = (v: unknown): v is number =>
  Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_VERSION;

export interface NewTemplate {
  /** XML or HTML text, or the bytes of such a file, a Word .docx or a fillable PDF. */
  source: string | Uint8Array;
  /** Defaults to the name the template gives itself (`<document name>`) or the file name. */
  name?: string;
  /** Finds images and fonts the XML names by relative path, e.g. `logo.png`; the ones used are stored with it. */
  assets?: AssetResolver;
  /** The values its previews are filled with (checked as merge parameters are). */
  sample?: unknown;
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

type Joined = TemplateRow & Omit<TemplateVersionRow, 'template_id' | 'created_at'>;

function optional(defaults: string): TemplateInfo['optional_variables'] {
  return Object.entries(JSON.parse(defaults) as Record<string, string>).map(([name, value]) => ({
    name,
    default: value,
  }));
}

const sampleOf = (sample: string | null) => (sample === null ? null : (JSON.parse(sample) as Record<string, string>));

/** What a version is, as a template (its current version's) and each version answer it. */
function content(row: Omit<TemplateVersionRow, 'template_id' | 'version' | 'created_at' | 'source'>) {
  return {
    format: row.format as TemplateInfo['format'],
    variables: JSON.parse(row.variables) as string[],
    optional_variables: optional(row.defaults),
    sample_values: sampleOf(row.sample),
    size: row.size,
    postcard: row.postcard as PresetName | null,
    print_warnings: row.print_warnings ? (JSON.parse(row.print_warnings) as PrintCheckWarning[]) : [],
  };
}

function info(row: Joined): TemplateInfo {
  return {
    id: row.id,
    object: 'template',
    name: row.name,
    version: row.current_version,
    ...content(row),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function versionInfo(row: TemplateVersionRow, current: number): TemplateVersionInfo {
  return {
    id: `${row.template_id}@${row.version}`,
    object: 'template_version',
    template_id: row.template_id,
    version: row.version,
    current: row.version === current,
    ...content(row),
    created_at: row.created_at,
  };
}

/**
 * The bytes of compiled templates' files (source, images, fonts) a process keeps, whichever
 * templates and versions they are: a compiled template holds its files, to hand them to a render
 * thread that has not compiled it, so a count of templates would let memory grow with the size of
 * each (a copy of a gallery template carries ~1 MB of fonts). The least recently used go first;
 * the one in use is always kept. 64 MB holds hundreds of ordinary templates.
 */
export const COMPILED_KEPT_BYTES = 64 * 1024 * 1024;

/** The bytes of a version's files: its source and the assets stored with it. */
const filesBytes = (row: TemplateVersionRow, assets: Map<string, Uint8Array>) =>
  [...assets.values()].reduce((n, b) => n + b.length, row.source.length);

export class TemplateStore {
  /** Compiled templates by `id@version`, least recently used first, with the bytes of their files. */
  private readonly compiled = new Map<string, { template: Promise<TemplateSummary>; bytes: number }>();
  private compiledBytes = 0;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** Compiles templates (on its render threads, off the HTTP thread). */
    private readonly renderer: Renderer,
    /** The bytes of compiled templates' files kept (see COMPILED_KEPT_BYTES). */
    private readonly keptBytes = COMPILED_KEPT_BYTES,
  ) {
    this.currentVersion = new PreparedQuery(db, (d, arg) =>
      d.selectFrom('templates').select('current_version as version').where('id', '=', arg('id')),
    );
    this.namedVersion = new PreparedQuery(db, (d, arg) =>
      d
        .selectFrom('template_versions')
        .select('version')
        .where('template_id', '=', arg('id'))
        .where('version', '=', arg('version')),
    );
  }

  /**
   * Compiles a version (on a render thread), keeping the files it names and refusing what could not
   * be printed here: what a new template and a new version both do before anything is written.
   */
  private async check(input: NewTemplate, renderer: Renderer) {
    if (input.name !== undefined && hasInvisible(input.name))
      throw new ValidationError('A template name may not hold control or format characters (such as U+202E).', [
        { field: 'name', message: 'must not hold control or format characters', code: 'invalid_character' },
      ]);
    if (input.name !== undefined && (input.name.trim() === '' || input.name.length > MAX_NAME)) {
      throw new ValidationError(`A template name has 1 to ${MAX_NAME} characters.`, [
        { field: 'name', message: `must be 1 to ${MAX_NAME} characters`, code: 'length' },
      ]);
    }
    const sample = input.sample === undefined ? null : normalizeValues(input.sample, 'sample_values');
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
    // a postcard template is printed once with its sample values (a mark where none is given) and
    // refused now, as a printer would refuse it, rather than at its first postcard
    let warnings: PrintCheckWarning[] | null = null;
    if (template.postcard) {
      const values = Object.fromEntries(template.variables.map((v) => [v, sample?.[v] ?? placeholder(v)]));
      const printed = await renderer.printReady(await renderer.render(template, values), template.postcard);
      warnings = printed.warnings.map(shownWarning);
    }
    const version = (templateId: string, n: number, now: string): TemplateVersionRow => ({
      template_id: templateId,
      version: n,
      format: template.kind,
      source: Buffer.from(bytes),
      variables: JSON.stringify(template.variables),
      defaults: JSON.stringify(template.defaults),
      sample: sample && JSON.stringify(sample),
      size: bytes.length,
      postcard: template.postcard ?? null,
      print_warnings: warnings && JSON.stringify(warnings),
      created_at: now,
    });
    return { template, assets, version };
  }

  /**
   * Writes a version and its files. A file an earlier version of the template holds byte for byte
   * (the logo and fonts a text change leaves as they were) is not stored again: its row names the
   * version that holds it, so a template saved a hundred times holds its fonts once. A template's
   * rows only ever point within it, and its versions are deleted all together, so none dangles.
   */
  private async insertVersion(trx: Db, row: TemplateVersionRow, assets: Map<string, Uint8Array>): Promise<void> {
    await trx.insertInto('template_versions').values(row).execute();
    for (const [p, b] of assets) {
      const bytes = Buffer.from(b);
      const held = await trx
        .selectFrom('template_version_assets')
        .select('version')
        .where('template_id', '=', row.template_id)
        .where('path', '=', p)
        .where('stored_in', 'is', null)
        .where('bytes', '=', bytes)
        .executeTakeFirst();
      await trx
        .insertInto('template_version_assets')
        .values({
          template_id: row.template_id,
          version: row.version,
          path: p,
          bytes: held ? Buffer.alloc(0) : bytes,
          stored_in: held?.version ?? null,
        })
        .execute();
    }
  }

  /** A version's files, each with its bytes wherever they are held (insertVersion). */
  private files(id: string, version: number) {
    return this.db
      .selectFrom('template_version_assets as a')
      .leftJoin('template_version_assets as h', (j) =>
        j
          .onRef('h.template_id', '=', 'a.template_id')
          .onRef('h.version', '=', 'a.stored_in')
          .onRef('h.path', '=', 'a.path'),
      )
      .select(['a.path', sql<Buffer>`coalesce(h.bytes, a.bytes)`.as('bytes')])
      .where('a.template_id', '=', id)
      .where('a.version', '=', version);
  }

  /** Keeps a compiled version for its renders (the render threads have it compiled already), as most recently used. */
  private keep(
    id: string,
    version: number,
    template: Promise<TemplateSummary>,
    bytes: number,
  ): Promise<TemplateSummary> {
    const key = `${id}@${version}`;
    this.forget(key);
    this.compiled.set(key, { template, bytes: 0 });
    this.account(key, template, bytes);
    template.catch(() => {
      if (this.compiled.get(key)?.template === template) this.forget(key);
    });
    return template;
  }

  /** Counts a kept version's bytes (known once its files are read), letting the least recently used go past the bound. */
  private account(key: string, template: Promise<TemplateSummary>, bytes: number): void {
    const kept = this.compiled.get(key);
    if (kept?.template !== template) return;
    kept.bytes += bytes;
    this.compiledBytes += bytes;
    for (const [old, other] of this.compiled) {
      if (this.compiledBytes <= this.keptBytes || old === key) break;
      this.forget(old, other);
    }
  }

  /** What this process keeps compiled: versions, and the bytes of their files. */
  get keptCompiled(): { versions: number; bytes: number } {
    return { versions: this.compiled.size, bytes: this.compiledBytes };
  }

  /** A kept compiled version, marked as most recently used. */
  private kept(id: string, version: number): Promise<TemplateSummary> | undefined {
    const key = `${id}@${version}`;
    const found = this.compiled.get(key);
    if (!found) return undefined;
    this.compiled.delete(key);
    this.compiled.set(key, found);
    return found.template;
  }

  private forget(key: string, kept = this.compiled.get(key)): void {
    if (!kept) return;
    this.compiled.delete(key);
    this.compiledBytes -= kept.bytes;
  }

  /** Lets go of every compiled version of a template (deleted, or gone from the database). */
  private forgetAll(id: string): void {
    for (const key of [...this.compiled.keys()]) if (key.startsWith(`${id}@`)) this.forget(key);
  }

  /**
   * Checks the template by compiling it (on a render thread), then stores it as its version 1 with
   * its assets in one transaction. The compiled template is kept for its renders, unless another
   * renderer compiled it.
   */
  async create(input: NewTemplate, renderer: Renderer = this.renderer): Promise<TemplateInfo> {
    const { template, assets, version } = await this.check(input, renderer);
    const now = iso(this.clock.now());
    const id = input.id ?? newId('tmpl', this.clock.now());
    const row: TemplateRow = {
      id,
      name: input.name?.trim() || template.name,
      current_version: 1,
      created_at: now,
      updated_at: now,
    };
    const first = version(id, 1, now);
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('templates').values(row).execute();
      await this.insertVersion(trx, first, assets);
    });
    if (renderer === this.renderer) void this.keep(id, 1, Promise.resolve(template), filesBytes(first, assets));
    return info({ ...first, ...row });
  }

  /**
   * Saves a new version of a template and makes it the current one. The files the new source names
   * and the upload does not carry are taken from the current version; its name, when given, renames
   * the template. Two saves at once each get their own number (the second waits for the first).
   */
  /**
   * Saves the next version and makes it current. With `baseVersion` (the version an editor started
   * from), a template whose current version is another by then is `409 version_conflict`, and
   * nothing is saved: two editors never silently replace each other's work.
   */
  async addVersion(id: string, input: Omit<NewTemplate, 'id'>, baseVersion?: number): Promise<TemplateVersionInfo> {
    // the files and sample values it does not send are the current version's
    const current = await this.version(id);
    const given = input.assets;
    const { template, assets, version } = await this.check(
      {
        ...input,
        sample: input.sample ?? current.sample_values ?? undefined,
        assets: async (p) => (given ? await given(p) : undefined) ?? (await current.asset(p)),
      },
      this.renderer,
    );
    const now = iso(this.clock.now());
    const row = await this.db.transaction().execute(async (trx) => {
      // the template's row is written first: a second save waits here, then numbers after this one
      const renamed = input.name?.trim();
      const updated = await trx
        .updateTable('templates')
        .set({ updated_at: now, ...(renamed ? { name: renamed } : {}) })
        .where('id', '=', id)
        .executeTakeFirst();
      if (!Number(updated.numUpdatedRows)) throw new NotFoundError('template', id);
      if (baseVersion !== undefined) {
        const { current_version: now } = await trx
          .selectFrom('templates')
          .select('current_version')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        if (now !== baseVersion)
          throw new ConflictError(
            'version_conflict',
            `Version ${now} is the current one now, not version ${baseVersion} that this change started from: see what it changed, then save again (with base_version ${now}) to put yours after it.`,
          );
      }
      const last = await trx
        .selectFrom('template_versions')
        .select((eb) => eb.fn.max('version').as('n'))
        .where('template_id', '=', id)
        .executeTakeFirstOrThrow();
      const made = version(id, Number(last.n ?? 0) + 1, now);
      await this.insertVersion(trx, made, assets);
      await trx.updateTable('templates').set({ current_version: made.version }).where('id', '=', id).execute();
      return made;
    });
    void this.keep(id, row.version, Promise.resolve(template), filesBytes(row, assets));
    return versionInfo(row, row.version);
  }

  private async asset(id: string, version: number, p: string): Promise<Uint8Array | undefined> {
    const row = await this.files(id, version).where('a.path', '=', p).executeTakeFirst();
    return row && new Uint8Array(row.bytes);
  }

  /** Makes an earlier (or later) version the one renders use when they name none. */
  async makeCurrent(id: string, version: number): Promise<TemplateInfo> {
    const now = iso(this.clock.now());
    await this.db.transaction().execute(async (trx) => {
      const found = await trx
        .selectFrom('template_versions')
        .select('version')
        .where('template_id', '=', id)
        .where('version', '=', version)
        .executeTakeFirst();
      if (!found) {
        await this.mustExist(trx, id);
        throw new NotFoundError('template version', `${id}@${version}`);
      }
      await trx
        .updateTable('templates')
        .set({ current_version: version, updated_at: now })
        .where('id', '=', id)
        .execute();
    });
    return this.get(id);
  }

  /**
   * A generate body with the version of each template it names and leaves unversioned fixed to the
   * current one (its `template_id` and each `append` part's): the engine may render it later or
   * again (a retried Temporal activity), and renders what was current when it was asked for. What
   * does not name a template as it should is left for generate to refuse.
   */
  async pin(body: unknown): Promise<unknown> {
    if (!isObject(body)) return body;
    const fix = async (part: unknown): Promise<unknown> => {
      if (!isObject(part) || typeof part.template_id !== 'string' || part.template_version !== undefined) return part;
      const found = await this.currentVersion.first(this.db, { id: part.template_id });
      return found ? { ...part, template_version: found.version } : part;
    };
    const pinned = (await fix(body)) as Record<string, unknown>;
    return Array.isArray(body.append) ? { ...pinned, append: await Promise.all(body.append.map(fix)) } : pinned;
  }

  private async mustExist(db: Db, id: string): Promise<TemplateRow> {
    const row = await db.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('template', id);
    return row;
  }

  /** A template's versions, newest first. */
  async versions(id: string, page: PageQuery): Promise<Page<TemplateVersionInfo>> {
    const template = await this.mustExist(this.db, id);
    let q = this.db
      .selectFrom('template_versions')
      .selectAll()
      .where('template_id', '=', id)
      .orderBy('version', 'desc')
      .limit(page.limit + 1);
    if (page.startingAfter) {
      const after = /^(.+)@([1-9]\d{0,8})$/.exec(page.startingAfter);
      if (!after || after[1] !== id)
        throw new ValidationError('The paging parameters are not valid.', [
          {
            field: 'starting_after',
            message: `must be the id of a version of this template, e.g. ${id}@2`,
            code: 'invalid',
          },
        ]);
      q = q.where('version', '<', Number(after[2]));
    }
    const rows = (await q.execute()).map((r) => ({ ...r, id: `${r.template_id}@${r.version}` }));
    return toPage(rows, page.limit, (r) => versionInfo(r, template.current_version));
  }

  /** One version (the current one when none is named), its source file, and the files it names. */
  async version(
    id: string,
    version?: number,
  ): Promise<TemplateVersionInfo & { source: Uint8Array; asset: (path: string) => Promise<Uint8Array | undefined> }> {
    const template = await this.mustExist(this.db, id);
    const n = version ?? template.current_version;
    const row = await this.db
      .selectFrom('template_versions')
      .selectAll()
      .where('template_id', '=', id)
      .where('version', '=', n)
      .executeTakeFirst();
    if (!row) throw new NotFoundError('template version', `${id}@${n}`);
    return {
      ...versionInfo(row, template.current_version),
      source: new Uint8Array(row.source),
      asset: (p) => this.asset(id, n, p),
    };
  }

  private joined() {
    return this.db
      .selectFrom('templates')
      .innerJoin('template_versions as v', (j) =>
        j.onRef('v.template_id', '=', 'templates.id').onRef('v.version', '=', 'templates.current_version'),
      )
      .select([
        'templates.id',
        'templates.name',
        'templates.current_version',
        'templates.created_at',
        'templates.updated_at',
        'v.version',
        'v.format',
        'v.source',
        'v.variables',
        'v.defaults',
        'v.sample',
        'v.size',
        'v.postcard',
        'v.print_warnings',
      ]);
  }

  /**
   * Newest first, by when each was made: the bundled examples have fixed ids (`tmpl_example_…`)
   * that do not sort by time as other ids do, so this list pages by (created_at, id).
   */
  async list(page: PageQuery): Promise<Page<TemplateInfo>> {
    let q = this.joined()
      .orderBy('templates.created_at', 'desc')
      .orderBy('templates.id', 'desc')
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
          eb('templates.created_at', '<', after.created_at),
          eb.and([eb('templates.created_at', '=', after.created_at), eb('templates.id', '<', after.id)]),
        ]),
      );
    }
    return toPage(await q.execute(), page.limit, info);
  }

  async get(id: string): Promise<TemplateInfo> {
    const row = await this.joined().where('templates.id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('template', id);
    return info(row);
  }

  /**
   * The template, compiled where the renderer renders, ready to render, and which version it is:
   * the one named, else the current one. Every call asks the database whether it (still) exists,
   * and which version is current (one indexed read): a template deleted or changed by another
   * process or machine is seen at its next use, never served from this process's copy. A version
   * never changes, so a compiled one is kept.
   */
  async resolve(id: string, version?: number): Promise<{ template: TemplateSummary; version: number }> {
    const found =
      version === undefined
        ? await this.currentVersion.first(this.db, { id })
        : await this.namedVersion.first(this.db, { id, version });
    if (!found) {
      if (version === undefined) this.forgetAll(id);
      else await this.mustExist(this.db, id);
      throw version === undefined
        ? new NotFoundError('template', id)
        : new NotFoundError('template version', `${id}@${version}`);
    }
    return {
      template: await (this.kept(id, found.version) ?? this.compileAndKeep(id, found.version)),
      version: found.version,
    };
  }

  /** The template (see resolve), compiled and ready to render. */
  async load(id: string, version?: number): Promise<TemplateSummary> {
    return (await this.resolve(id, version)).template;
  }

  /** A template's current version, compiled once (see PreparedQuery): every generate and postcard reads it. */
  private readonly currentVersion: PreparedQuery<{ id: string }, { version: number }>;
  /** Whether a named version exists: a render that names one reads it. */
  private readonly namedVersion: PreparedQuery<{ id: string; version: number }, { version: number }>;

  /** Compiles a version and keeps it at once, so that renders asking meanwhile share the one compile. */
  private compileAndKeep(id: string, version: number): Promise<TemplateSummary> {
    const template: Promise<TemplateSummary> = this.compile(id, version, (bytes) =>
      this.account(`${id}@${version}`, template, bytes),
    );
    return this.keep(id, version, template, 0);
  }

  private async compile(id: string, version: number, size: (bytes: number) => void): Promise<TemplateSummary> {
    const row = await this.db
      .selectFrom('template_versions')
      .innerJoin('templates', 'templates.id', 'template_versions.template_id')
      .select(['templates.name', 'template_versions.format', 'template_versions.source'])
      .where('template_versions.template_id', '=', id)
      .where('template_versions.version', '=', version)
      .executeTakeFirst();
    if (!row) throw new NotFoundError('template', id);
    const assets = await this.files(id, version).execute();
    const byPath = new Map(assets.map((a) => [a.path, new Uint8Array(a.bytes)]));
    const source = new Uint8Array(row.source);
    size(assets.reduce((n, a) => n + a.bytes.length, source.length));
    const binary = row.format === 'pdf' || row.format === 'docx';
    return this.renderer.load(binary ? source : Buffer.from(source).toString('utf8'), {
      assets: async (p) => byPath.get(p),
      name: row.name,
    });
  }

  async remove(id: string): Promise<void> {
    const deleted = await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('template_version_assets').where('template_id', '=', id).execute();
      await trx.deleteFrom('template_versions').where('template_id', '=', id).execute();
      const r = await trx.deleteFrom('templates').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows);
    });
    this.forgetAll(id);
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
          await this.create(
            {
              id,
              source,
              assets: folderAssets(path.dirname(file)),
              sample: exampleSample(name as keyof typeof EXAMPLE_IDS),
            },
            once,
          );
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
